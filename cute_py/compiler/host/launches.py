"""``@kernel`` functions and their launches, as a jit function's host trace records them.

``k(*args).launch(grid=, block=, cluster=, smem=, non_portable_cluster=, stream=)`` inside a jit function (or
``self.k(...)`` for a kernel method) records a :class:`Launch`: the kernel, its arguments classified into
parameters (TMA descriptors, gmem tensors, run-time scalars) and static values, the launch configuration
(checked against sm_90's limits), the stream argument it runs on and its name (``<prefix>_<kernel>_<index>``
with :meth:`KernelFunction.set_name_prefix`).

A Python ``list`` of numbers is not accepted as a kernel argument: it is not device memory, and a kernel
that writes to it changes only the list while it is traced (the launched kernel does nothing); pass
device arrays for data, tuples for constants.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from ...core.symbolic import SymInt, sym_leaves
from ...core.valued import ValuedInt
from ...errors import ArgumentError, JitError, TraceError, user_location
from ...nvgpu.tma.atom import TmaCopyAtom
from ...tensor.dtypes import Scalar
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.tensor import Tensor
from ..specs import limits as _limits
from ..lang import builder as _builder
from ..specs.annotations import ParamInfo, StreamArg
from ..specs.args import SCALAR_TYPES, is_device_array, untag
from ..trace import short_repr
from ..specs.methods import BoundKernel, launch_snapshot

__all__ = ["KernelFunction", "KernelCall", "Launch", "HostTrace", "host_trace_active", "naming_epoch",
           "check_name_prefix", "number_list", "list_message", "unwrap_method"]

_hosts = []
_NAMING = [0]  # bumped whenever a name prefix changes (compiled names depend on the prefixes)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def host_trace_active() -> HostTrace | None:
    """The host trace being recorded now, or ``None``."""
    return _hosts[-1] if _hosts else None


def naming_epoch() -> int:
    """A counter that changes whenever a kernel's name prefix does (part of the in-memory compile keys)."""
    return _NAMING[0]


class HostTrace:
    """A jit function's host function running: the launches it records (``with HostTrace() as ht``)."""

    def __init__(self) -> None:
        self.launches = []
        self.prints = []  # host printf calls: (format pieces, arguments), printed at each call (host_scalars.host_print)

    def __enter__(self) -> HostTrace:
        from ..builtins.printing import HOST_SINKS

        _hosts.append(self)
        HOST_SINKS.append(self.prints)
        return self

    def __exit__(self, *exc: object) -> bool:
        from ..builtins.printing import HOST_SINKS

        _hosts.pop()
        HOST_SINKS.pop()
        return False


def unwrap_method(fn: Any) -> tuple[Callable[..., Any], str | None]:
    """``(function, binding)`` of a decorated object: a ``staticmethod``/``classmethod`` gives its function and
    ``"static"``/``"class"``; anything else itself and ``None``."""
    if isinstance(fn, staticmethod):
        return fn.__func__, "static"
    if isinstance(fn, classmethod):
        return fn.__func__, "class"
    return fn, None


def check_name_prefix(name: str, remove_cutlass_symbol: bool, keep_mangled_name: bool) -> None:
    """``ArgumentError`` unless ``name`` can start a PTX entry name (empty, or a letter or ``_`` then letters,
    digits and ``_``) and the flags are bools; an empty name needs ``keep_mangled_name``."""
    if not isinstance(name, str):
        raise ArgumentError(f"set_name_prefix takes a string, got {type(name).__name__}")
    for flag, value in (("remove_cutlass_symbol", remove_cutlass_symbol), ("keep_mangled_name", keep_mangled_name)):
        if type(value) is not bool:
            raise ArgumentError(f"set_name_prefix: {flag} must be True or False, got {value!r}")
    if name and not _IDENTIFIER.fullmatch(name):
        raise ArgumentError(f"set_name_prefix: {name!r} is not a valid start of a PTX symbol (a letter or _, then "
                            f"letters, digits and _)")
    if not name and not keep_mangled_name:
        raise ArgumentError("set_name_prefix needs a non-empty name when keep_mangled_name is False")


class KernelFunction:
    """A ``@cute_py.kernel`` device function; ``k(*args).launch(grid=, block=, cluster=, smem=,
    non_portable_cluster=, stream=)`` inside a jit function. A kernel returns nothing (``TraceError`` otherwise).

    On a method, ``self.k(*args)`` passes the instance as ``self`` (see ``methods``). Parameters annotated
    ``Int32``/``Int64``/``Float32`` take a Python number as a run-time parameter; ``Constexpr`` ones are
    compile-time values (see ``annotations``).
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        fn, self.binding = unwrap_method(fn)
        self.fn = fn
        functools.update_wrapper(self, fn)
        self.name_prefix, self.keep_mangled_name = "", True
        self.params = ParamInfo(fn)

    def __repr__(self):
        return f"<cute_py.kernel {self.fn.__module__}.{self.fn.__qualname__}>"

    def __get__(self, obj: Any, objtype: type | None = None) -> KernelFunction | BoundKernel:
        if self.binding == "static" or (obj is None and self.binding is None):
            return self
        if self.binding == "class":
            return BoundKernel(self, objtype if objtype is not None else type(obj))
        return BoundKernel(self, obj)

    def set_name_prefix(self, name: str, *, remove_cutlass_symbol: bool = False, keep_mangled_name: bool = True
                        ) -> None:
        """Name this kernel's PTX entries ``<name>_<kernel>_<index>`` (``<name>_<index>`` with
        ``keep_mangled_name=False``; an empty name restores ``<kernel>_<index>``). cute_py's names have no
        ``cutlass`` part, so ``remove_cutlass_symbol`` changes nothing. Compiles made after it use the new name
        (the name is part of every cache key)."""
        check_name_prefix(name, remove_cutlass_symbol, keep_mangled_name)
        if (name, keep_mangled_name) != (self.name_prefix, self.keep_mangled_name):
            self.name_prefix, self.keep_mangled_name = name, keep_mangled_name
            _NAMING[0] += 1

    def entry_name(self, index: int) -> str:
        """The PTX entry name of this kernel's launch ``index`` of a compile."""
        parts = [self.name_prefix] if self.name_prefix else []
        parts.append(f"{self.fn.__name__}_{index}" if self.keep_mangled_name else str(index))
        return "_".join(parts)

    def __call__(self, *args: Any, **kwargs: Any) -> KernelCall:
        return self._call(args, kwargs, False)

    def call_bound(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> KernelCall:
        """``self.kernel(*args, **kwargs)`` for the instance (or class) ``obj``."""
        return self._call((obj,) + tuple(args), kwargs, True)

    def _call(self, args, kwargs, bound):
        if _builder.active() is not None:
            raise TraceError(f"the kernel {self.fn.__name__} cannot be called from inside a kernel")
        if not _hosts:
            raise JitError(f"launch the kernel {self.fn.__name__} from a @cute_py.jit function (or cute_py.compile): "
                           f"{self.fn.__name__}(...).launch(grid=..., block=...)")
        args = tuple(self.params.convert_kernel_arg(i, a) for i, a in enumerate(args))
        kwargs = {k: self.params.convert_kernel_arg(k, a) for k, a in kwargs.items()}
        return KernelCall(self, args, kwargs, bound)


class KernelCall:
    """A kernel with its arguments, waiting for ``.launch``; ``bound``: ``args[0]`` is the kernel's ``self``."""

    def __init__(self, kernel_fn: KernelFunction, args: tuple[Any, ...], kwargs: dict[str, Any],
                 bound: bool = False) -> None:
        self.kernel, self.args, self.kwargs, self.bound = kernel_fn, args, kwargs, bound

    def launch(self, *, grid: Any, block: Any, cluster: Any = (1, 1, 1), smem: int | None = None,
               non_portable_cluster: bool = False, stream: Any = None, min_blocks_per_mp: int | None = None) -> None:
        """Record a launch of ``grid`` blocks of ``block`` threads (1-3 static ints each), in clusters of
        ``cluster`` blocks, with ``smem`` bytes of dynamic shared memory (default: what the kernel allocates), on
        ``stream``: a stream argument of the jit function (``None``: the stream the compiled function is called
        on, its ``stream=``).

        The configuration must fit sm_90 (see :mod:`cute_py.compiler.specs.limits`); ``non_portable_cluster=True``
        allows clusters of 9 to 16 CTAs. ``min_blocks_per_mp``: the CTAs each multiprocessor should hold at once
        (PTX's ``.minnctapersm``: the back end keeps the registers per thread within what that many allow).
        ``ArgumentError`` at this line otherwise.
        """
        if min_blocks_per_mp is not None and (type(min_blocks_per_mp) is not int or not 1 <= min_blocks_per_mp <= 32):
            raise ArgumentError(f"min_blocks_per_mp must be an int in [1, 32], got {min_blocks_per_mp!r}")
        host = _hosts[-1]
        dims = [_dim3(v, what) for v, what in ((grid, "grid"), (block, "block"), (cluster, "cluster"))]
        if smem is not None and (type(smem) is not int or smem < 0):
            raise ArgumentError(f"smem must be a non-negative int number of bytes, got {smem!r}")
        if type(non_portable_cluster) is not bool:
            raise ArgumentError(f"non_portable_cluster must be True or False, got {non_portable_cluster!r}")
        if stream is not None and not isinstance(stream, StreamArg):
            raise ArgumentError(f"launch(stream=...) takes a stream argument of the jit function (or None: the stream "
                                f"the compiled function is called on), got {short_repr(stream)}; a stream made "
                                f"inside the jit function cannot be compiled in")
        _limits.check_launch(*dims, smem, non_portable_cluster)
        _limits.check_multicast(_tma_atoms(self.args, self.kwargs), dims[2])
        call = self
        if self.bound:  # the kernel sees self as it is now
            call = KernelCall(self.kernel, (launch_snapshot(self.args[0]),) + self.args[1:], self.kwargs, True)
        ln = Launch(call, *dims, smem, len(host.launches), non_portable_cluster, user_location(),
                    None if stream is None else stream.index)
        ln.min_blocks = min_blocks_per_mp
        host.launches.append(ln)


def _tma_atoms(args, kwargs):
    """``(where, atom)`` of every TMA atom among a kernel's arguments (inside tuples and lists too)."""
    out = []

    def walk(x, where):
        if isinstance(x, TmaCopyAtom):
            out.append((where, x))
        elif type(x) in (tuple, list):
            for j, e in enumerate(x):
                walk(e, f"{where}[{j}]")

    for pos, a in list(enumerate(args)) + sorted(kwargs.items()):
        walk(a, f"kernel argument {pos!r}")
    return out


def _dim3(v, what):
    v = v if isinstance(v, (tuple, list)) else (v,)
    out = []
    for x in v:
        if isinstance(x, ValuedInt):
            x = x.value
        if isinstance(x, SymInt) and what == "grid":  # a run-time extent: evaluated (and checked) at each call
            out.append(x)
            continue
        if type(x) is not int or x < 1:
            raise ArgumentError(f"{what} dimensions must be static positive ints"
                                f"{' or run-time extents of the arguments' if what == 'grid' else ''}, got {v!r}")
        out.append(x)
    if not 1 <= len(out) <= 3:
        raise ArgumentError(f"{what} has 1 to 3 dimensions, got {v!r}")
    return tuple(out) + (1,) * (3 - len(out))


class Launch:
    """One recorded launch: ``call`` (a :class:`KernelCall`), ``grid``/``block``/``cluster``, ``smem``, its entry
    ``name``, ``params`` (``(kind, source)`` per kernel parameter), ``kernel_args`` (classified arguments),
    ``stream`` (the index of the jit argument it runs on, or ``None``) and ``where`` (the user's line)."""

    def __init__(self, call: KernelCall, grid: tuple[int, int, int], block: tuple[int, int, int],
                 cluster: tuple[int, int, int], smem: int | None, index: int, non_portable_cluster: bool = False,
                 where: tuple[str, int] = ("<unknown>", 0), stream: int | None = None) -> None:
        self.call, self.grid, self.block, self.cluster, self.smem = call, grid, block, cluster, smem
        self.non_portable_cluster = non_portable_cluster and cluster[0] * cluster[1] * cluster[2] > 8
        self.where = where  # (file, line) of the launch in the user's code
        self.stream = stream
        self.min_blocks = None  # launch(min_blocks_per_mp=): the kernel's .minnctapersm
        self.name = call.kernel.entry_name(index)
        self.params = []  # (kind, source) per kernel parameter
        self.assumed = {}  # leaf name -> divisor the kernel's cute.assume promised (set when it is traced)
        self.kernel_args = []  # (position or name, classification)
        syms = {}  # run-time extent (leaf name) -> its parameter index
        for pos, a in list(enumerate(call.args)) + sorted(call.kwargs.items()):
            self.kernel_args.append((pos, _classify(a, self.params, call.kernel.params, pos, syms)))

    @property
    def dynamic_grid(self) -> bool:
        """Whether the grid depends on run-time extents of the arguments (evaluated at each call)."""
        return any(type(g) is not int for g in self.grid)


def _classify(a, params, info, pos, syms):
    """('static', a), (param kind, param index), ('tuple', [classifications]) for a tuple/list holding
    run-time arguments, or ('sym', (classification, {leaf: param index})) for a value holding run-time extents
    (symbols: each leaf becomes an Int32/Int64 parameter, shared by every argument of the launch naming it);
    appends the parameters' sources to ``params``."""
    if type(a) not in (tuple, list) and not isinstance(a, TmaCopyAtom):
        leaves = sym_leaves(a)
        if leaves:
            if type(pos) is int and info.kind(pos) == "constexpr":
                raise ArgumentError(f"kernel parameter {info.names[pos]} is annotated Constexpr (a compile-time "
                                    f"value), got {short_repr(a)}, which holds run-time extents of the arguments")
            inner = _classify_plain(a, params, info, pos)
            for leaf in leaves:
                if leaf.name not in syms:
                    params.append(("Int32" if leaf.width == 32 else "Int64", leaf))
                    syms[leaf.name] = len(params) - 1
            return "sym", (inner, {leaf.name: syms[leaf.name] for leaf in leaves})
    return _classify_plain(a, params, info, pos, syms)


def _classify_plain(a, params, info, pos, syms=None):
    if type(a) in (tuple, list):
        subs = [_classify(x, params, info, pos, syms) for x in a]
        if any(k != "static" for k, _ in subs):
            return "tuple", (type(a), subs)
        if number_list(a):
            raise ArgumentError(list_message(f"a kernel argument is the Python list {short_repr(a)}"))
        return "static", a
    constexpr = (info.kind(pos) if type(pos) is int else None) == "constexpr"
    if isinstance(a, StreamArg):
        raise ArgumentError("a stream is not a kernel argument: pass it to launch(stream=...)")
    if isinstance(a, TmaCopyAtom):
        where = untag(a.descriptor.global_address)
        if where is None:
            raise ArgumentError("a TMA atom passed to a kernel must be built from a tensor argument of the "
                                "jit function")
        params.append(("desc", (a.descriptor, where)))
        return "desc", len(params) - 1
    if isinstance(a, Tensor) and isinstance(a.engine, Pointer) and a.engine.memspace is AddressSpace.gmem:
        where = untag(a.engine.address)
        if where is None:
            raise ArgumentError(f"a gmem tensor passed to a kernel must come from a device-array argument of "
                                f"the jit function at a static offset, got {a!r}")
        if constexpr:
            raise ArgumentError(f"kernel parameter {info.names[pos]} is annotated Constexpr (a compile-time value), "
                                f"got a gmem tensor")
        params.append(("ptr", where))
        return "ptr", len(params) - 1
    if isinstance(a, Scalar):
        if a.kind not in SCALAR_TYPES:
            raise ArgumentError(f"a run-time scalar passed to a kernel is an Int32, Int64 or Float32, got {a!r}")
        params.append((a.kind, a))
        return a.kind, len(params) - 1
    if is_device_array(a):
        raise ArgumentError("pass device arrays to the jit function; a kernel gets them as tensors")
    return "static", a


def _holds_numbers(x):
    return type(x) in (int, float, bool, complex) or (type(x) in (tuple, list) and any(_holds_numbers(e) for e in x))


def number_list(x: object) -> bool:
    """Whether ``x`` is (or a tuple holds) a list of numbers: data a device array should hold."""
    if type(x) is list:
        return _holds_numbers(x)
    return type(x) is tuple and any(number_list(e) for e in x)


def list_message(what: str) -> str:
    """The error text for a Python list passed where device memory or a constant belongs."""
    return (f"{what}: a list is not device memory (a kernel writing to it would change the list only while it "
            f"is traced, and the launched kernel would do nothing); pass a device array (torch, cupy, DLPack) "
            f"for data a kernel reads or writes, or a tuple for compile-time constants")
