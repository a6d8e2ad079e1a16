"""``@kernel``, ``@jit`` and ``compile``: tracing host and device functions, compiling, caching, launching.

A ``@jit`` host function runs in Python once per specialisation (argument dtypes, shapes,
strides and alignments, the kinds of run-time scalars, the static values): device arrays
are tensors over tagged addresses (``args``), and each ``kernel(...).launch(...)`` it makes
is recorded, its configuration checked against the hardware's limits (``limits``). Each
launched ``@kernel`` is then traced into one ``llvm.func`` of a ``gpu.module`` (its TMA atoms,
gmem tensors and run-time scalars become parameters; every other argument is static),
compiled to PTX and a cubin, and cached. The result, a :class:`Compiled`, replays the
recorded launches with the real addresses of new arguments of the same specialisation: TMA
descriptors are encoded for them on the host.

**The disk cache** (``cache``) is keyed by the library's fingerprint, the jit function (its code,
closure and defaults, ``deps.value_key``), the specialisation, and each recorded launch (the
kernel's code and closure, its static arguments, grid, block, cluster and shared memory): what
the host trace produced. The kernel traces are not run to look an entry up: instead each entry
stores the manifest of the code both traces ran and the module values it read (``deps``), and is
used only while that manifest still holds; otherwise the kernels are compiled again.

A Python ``list`` of numbers is not accepted as an argument (of a jit function or a kernel): it
is not device memory, and a kernel that writes to it changes only the list while it is traced
(the launched kernel does nothing); pass device arrays for data, tuples for constants.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

from ...errors import CuteError
from ... import device
from ...nvgpu.cpasync import TmaCopyAtom
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.tensor import Tensor
from ...core.valued import ValuedInt
from . import builder as _builder
from . import rewrite as _rewrite
from ..runtime import cache as _cache
from ..runtime import deps as _deps
from ..runtime import limits as _limits
from .args import SCALAR_TYPES, TAG_SHIFT, array_spec, host_tensor, is_device_array, untag
from ..runtime.compiled import Compiled
from ...errors import ArgumentError, CompileError, JitError, LocatedError, SpecMismatch, TraceError, is_user_file, user_location
from ...tensor.dtypes import Scalar
from .values import TracedFloat, TracedInt

__all__ = ["kernel", "jit", "compile", "Compiled", "KernelFunction", "JitFunction"]

_hosts = []


def _log(msg):
    if os.environ.get("CUTE_PY_JIT_LOG"):
        print(f"cute_py.jit: {msg}", file=sys.stderr, flush=True)


# -- device functions ---------------------------------------------------------------------------


class KernelFunction:
    """A ``@cute_py.kernel`` device function; ``k(*args).launch(grid=, block=, cluster=, smem=,
    non_portable_cluster=)`` inside a jit function. A kernel returns nothing (``TraceError`` otherwise)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __repr__(self):
        return f"<cute_py.kernel {self.fn.__module__}.{self.fn.__qualname__}>"

    def __call__(self, *args: Any, **kwargs: Any) -> KernelCall:
        if _builder.active() is not None:
            raise TraceError(f"the kernel {self.fn.__name__} cannot be called from inside a kernel")
        if not _hosts:
            raise JitError(f"launch the kernel {self.fn.__name__} from a @cute_py.jit function (or cute_py.compile): "
                           f"{self.fn.__name__}(...).launch(grid=..., block=...)")
        return KernelCall(self, args, kwargs)


class KernelCall:
    """A kernel with its arguments, waiting for ``.launch``."""

    def __init__(self, kernel_fn, args, kwargs):
        self.kernel, self.args, self.kwargs = kernel_fn, args, kwargs

    def launch(self, *, grid, block, cluster=(1, 1, 1), smem=None, non_portable_cluster=False):
        """Record a launch of ``grid`` blocks of ``block`` threads (1-3 static ints each), in clusters of
        ``cluster`` blocks, with ``smem`` bytes of dynamic shared memory (default: what the kernel allocates).

        The configuration must fit sm_90 (see :mod:`cute_py.compiler.runtime.limits`); ``non_portable_cluster=True``
        allows clusters of 9 to 16 CTAs. ``ArgumentError`` at this line otherwise.
        """
        host = _hosts[-1]
        dims = [_dim3(v, what) for v, what in ((grid, "grid"), (block, "block"), (cluster, "cluster"))]
        if smem is not None and (type(smem) is not int or smem < 0):
            raise ArgumentError(f"smem must be a non-negative int number of bytes, got {smem!r}")
        if type(non_portable_cluster) is not bool:
            raise ArgumentError(f"non_portable_cluster must be True or False, got {non_portable_cluster!r}")
        _limits.check_launch(*dims, smem, non_portable_cluster)
        _limits.check_multicast(_tma_atoms(self.args, self.kwargs), dims[2])
        host.launches.append(_Launch(self, *dims, smem, len(host.launches), non_portable_cluster, user_location()))


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
        if type(x) is not int or x < 1:
            raise ArgumentError(f"{what} dimensions must be static positive ints, got {v!r}")
        out.append(x)
    if not 1 <= len(out) <= 3:
        raise ArgumentError(f"{what} has 1 to 3 dimensions, got {v!r}")
    return tuple(out) + (1,) * (3 - len(out))


class _Launch:
    def __init__(self, call, grid, block, cluster, smem, index, non_portable_cluster=False, where=("<unknown>", 0)):
        self.call, self.grid, self.block, self.cluster, self.smem = call, grid, block, cluster, smem
        self.non_portable_cluster = non_portable_cluster and cluster[0] * cluster[1] * cluster[2] > 8
        self.where = where  # (file, line) of the launch in the user's code
        self.name = f"{call.kernel.fn.__name__}_{index}"
        self.params = []  # (kind, source) per kernel parameter
        self.kernel_args = []  # (position or name, classification)
        for pos, a in list(enumerate(call.args)) + sorted(call.kwargs.items()):
            self.kernel_args.append((pos, _classify(a, self.params)))


def _classify(a, params):
    """('static', a), (param kind, param index) or ('tuple', [classifications]) for a tuple/list holding
    run-time arguments; appends the parameters' sources to ``params``."""
    if type(a) in (tuple, list):
        mark = len(params)
        subs = [_classify(x, params) for x in a]
        if len(params) > mark:
            return "tuple", (type(a), subs)
        if _number_list(a):
            raise ArgumentError(_list_message(f"a kernel argument is the Python list {_short(a)}"))
        return "static", a
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


def _short(x, n=60):
    text = repr(x)
    return text if len(text) <= n else text[:n] + "...]"


def _list_message(what):
    return (f"{what}: a list is not device memory (a kernel writing to it would change the list only while it "
            f"is traced, and the launched kernel would do nothing); pass a device array (torch, cupy, DLPack) "
            f"for data a kernel reads or writes, or a tuple for compile-time constants")


def _holds_numbers(x):
    return type(x) in (int, float, bool, complex) or (type(x) in (tuple, list) and any(_holds_numbers(e) for e in x))


def _number_list(x):
    """Whether ``x`` is (or a tuple holds) a list of numbers: data a device array should hold."""
    if type(x) is list:
        return _holds_numbers(x)
    return type(x) is tuple and any(_number_list(e) for e in x)


_PARAM_TYPES = {"desc": _builder.DESC_PARAM, "ptr": "!llvm.ptr<1>", "Int32": "i32", "Int64": "i64", "Float32": "f32"}


# -- host functions -----------------------------------------------------------------------------


class _HostTrace:
    def __init__(self):
        self.launches = []

    def __enter__(self):
        _hosts.append(self)
        return self

    def __exit__(self, *exc):
        _hosts.pop()
        return False


def _static_key(x):
    if x is None or type(x) in (int, float, bool, str):
        return repr(x)
    if type(x) in (tuple, list):
        return type(x).__name__ + "(" + ",".join(_static_key(e) for e in x) + ")"
    r = f"{type(x).__module__}.{type(x).__qualname__}:{x}"
    return r


def _scalar_annotation(ann):
    name = getattr(ann, "name", None)
    return name if name in SCALAR_TYPES and (ann is SCALAR_TYPES[name] or type(ann).__name__ == "DType") else None


def _annotations(fn):
    """The annotation of each parameter of ``fn``, evaluated where it is a string (a module written with
    ``from __future__ import annotations``). A string that does not evaluate is ignored (it may name a
    type-checking-only import) unless it names a numeric type, whose meaning (a run-time scalar) would be lost:
    that is an ArgumentError at the definition."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # no signature (a builtin): no annotated scalars
        return []
    out = []
    for p in params:
        ann = p.annotation
        if isinstance(ann, str):
            try:
                ann = eval(ann, getattr(fn, "__globals__", {}))
            except Exception as e:
                if re.search(r"\b(" + "|".join(SCALAR_TYPES) + r")\b", ann):
                    code = fn.__code__
                    raise ArgumentError(f"the annotation {ann!r} of {p.name} does not evaluate "
                                        f"({type(e).__name__}: {e})", where=(code.co_filename, code.co_firstlineno)
                                        ) from None
                ann = None
        out.append(ann)
    return out


class JitFunction:
    """A ``@cute_py.jit`` host function: calling it compiles (once per specialisation) and launches."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)
        self._scalars = [_scalar_annotation(a) for a in _annotations(fn)]
        try:
            src = inspect.getsourcefile(fn)
            with open(src, "rb") as f:
                self._source = hashlib.sha256(f.read()).hexdigest()
        except (OSError, TypeError):  # no source file (a REPL, exec): the compiled code itself
            code = getattr(fn, "__code__", None)
            self._source = _deps.code_digest(code) if code is not None else repr(fn)
        self._compiled = {}
        self._last = None  # (Compiled, [(index, static value)], number of arguments) of the last call

    def __repr__(self):
        return f"<cute_py.jit {self.fn.__module__}.{self.fn.__qualname__}>"

    def _convert(self, args):
        """(host args, spec key, jit arg sources) of the call arguments."""
        host, key, sources = [], [], []
        for i, a in enumerate(args):
            kind = self._scalars[i] if i < len(self._scalars) else None
            if kind is not None and not isinstance(a, Scalar):
                a = SCALAR_TYPES[kind](a)
            if isinstance(a, Scalar):
                host.append(_IndexedScalar(a.value, a.kind, i))
                key.append(("S", a.kind))
                sources.append(("scalar", a.kind))
            elif is_device_array(a):
                spec, _ = array_spec(a)
                host.append(host_tensor(spec, i))
                key.append(("T",) + tuple(spec))
                sources.append(("tensor", spec))
            else:
                if _number_list(a):
                    raise ArgumentError(_list_message(f"argument {i} of {self.fn.__name__} is the Python "
                                                             f"list {_short(a)}" if type(a) is list else
                                                             f"argument {i} of {self.fn.__name__} holds a Python "
                                                             f"list ({_short(a)})"))
                host.append(a)
                key.append(("C", _static_key(a)))
                sources.append(("static", None))
        return host, tuple(key), sources

    def compile(self, *args: Any) -> Compiled:
        """The :class:`Compiled` kernel(s) of this function for arguments like ``args``."""
        host, key, sources = self._convert(args)
        c = self._compiled.get(key)
        if c is not None:
            _cache.stats["memory_hits"] += 1
            return c
        c = _compile(self, host, key, sources)
        self._compiled[key] = c
        return c

    def __call__(self, *args: Any, stream: int | Any = 0, **kwargs: Any) -> Any:
        if _builder.active() is not None:  # a device function called from a kernel: traced inline
            if stream != 0:
                kwargs["stream"] = stream
            return _rewrite.transformed(self.fn, kernel=False)(*args, **kwargs)
        if _hosts:
            raise TraceError(f"the jit function {self.fn.__name__} cannot be called while a host function is traced")
        if kwargs:
            raise ArgumentError(f"{self.fn.__name__}: a jit function launched from the host takes positional "
                                f"arguments, got {sorted(kwargs)}")
        last = self._last
        if last is not None and _same_statics(args, last):
            try:
                return last[0](*args, stream=stream)  # the specialisation of the previous call (checked there)
            except SpecMismatch:
                pass
        c = self.compile(*args)
        self._last = (c, [(i, a) for i, (kind, _) in enumerate(c.sources) if kind == "static" for a in (args[i],)],
                      len(args))
        return c(*args, stream=stream)


def _same_statics(args, last):
    _, statics, n = last
    if len(args) != n:
        return False
    try:
        return all(args[i] is v or (type(args[i]) is type(v) and bool(args[i] == v)) for i, v in statics)
    except Exception:  # a value whose == is not a plain truth value (an array, a traced value...)
        return False


class _IndexedScalar(Scalar):
    __slots__ = ("index",)

    def __init__(self, value, kind, index):
        super().__init__(kind, value)
        self.index = index


def _located(e):
    """A copy of the CuteError ``e`` whose message starts with the user's file:line (from its traceback)."""
    if isinstance(e, LocatedError):  # located when made
        return None
    msg = str(e)
    tb, where = e.__traceback__, None
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    if where is None or msg.startswith(where.split(":")[0]):
        return None
    try:
        new = type(e)(f"{where}: {msg}")
    except Exception:
        return None
    return new


def _disk_static_key(x):
    """The process-independent key of a static value (``deps.Unkeyable`` when it has none)."""
    return _deps.value_key(x, strict=True)


def _launch_key(ln):
    """Everything of a recorded launch that changes the generated code."""
    call = ln.call
    args = [(pos, kind, _disk_static_key(call.args[pos] if type(pos) is int else call.kwargs[pos]))
            for pos, (kind, _) in ln.kernel_args]
    return (_disk_static_key(call.kernel.fn), ln.name, args, ln.grid, ln.block, ln.cluster, ln.smem,
            ln.non_portable_cluster)


def _disk_key(jf, host, key, launches):
    """The disk-cache key of a compile: the library, the jit function, the specialisation and the recorded
    launches (``None`` when a static value has no process-independent key: the compile is not stored)."""
    try:
        spec = [(k[0], _disk_static_key(host[i])) if k[0] == "C" else k for i, k in enumerate(key)]
        text = repr((_cache.library_fingerprint(), jf._source, _disk_static_key(jf.fn), spec,
                     [_launch_key(ln) for ln in launches]))
    except _deps.Unkeyable as e:
        _log(f"{jf.fn.__name__} is not cached on disk: {e}")
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def _compile(jf, host, key, sources):
    t0 = time.perf_counter()
    recorder = _deps.Recorder()
    with _HostTrace() as ht:
        try:
            with recorder:
                jf.fn(*host)
        except CuteError as e:
            new = _located(e)
            if new is not None:
                raise new from e
            raise
    if not ht.launches:
        raise JitError(f"the jit function {jf.fn.__name__} launched no kernel")
    dkey = _disk_key(jf, host, key, ht.launches)
    entry = _cache.read_entry(dkey) if dkey else None
    if entry is not None:
        meta, cubin, ptx = entry
        names = sorted(ln.name for ln in ht.launches)
        stale = "other kernels" if sorted(meta["kernels"]) != names else _deps.check(meta["deps"])
        if stale is None:
            _cache.stats["disk_hits"] += 1
            _log(f"loaded {jf.fn.__name__} from the disk cache in {1e3 * (time.perf_counter() - t0):.1f} ms")
            return Compiled(jf, ht.launches, meta["kernels"], sources, cubin, ptx, None, dkey, build=_build)
        _cache.stats["disk_stale"] += 1
        _log(f"the disk-cache entry of {jf.fn.__name__} is stale ({stale}): compiling again")
    built = _build(ht.launches, recorder)
    mlir_text, ptx, cubin, smem = built.mlir, built.ptx, built.cubin, built.smem
    _cache.stats["compiles"] += 1
    if dkey:
        manifest = recorder.manifest(covered=[jf.fn] + [ln.call.kernel.fn for ln in ht.launches])
        if manifest is not None:
            _cache.write_entry(dkey, {"kernels": smem, "deps": manifest}, cubin, ptx)
        else:
            _log(f"{jf.fn.__name__} is not cached on disk: its traces ran code whose source cannot be checked")
    _log(f"compiled {jf.fn.__name__} in {1e3 * (time.perf_counter() - t0):.1f} ms")
    return Compiled(jf, ht.launches, smem, sources, cubin, ptx, mlir_text, dkey, built.times, build=_build)


def _build(launches, recorder=None, lowered=False):
    """Run the stages (``stages.STAGES``) for every launched kernel, traced into one module; a
    ``stages.StageResults``. ``recorder`` (a ``deps.Recorder``) records the code the kernel traces run;
    ``lowered`` also keeps the lowered module's text."""
    import mlir_dialects as md
    from mlir_dialects import bindings as mlir

    from .. import stages
    from ..emit import KernelContext

    ctx = md.make_context()

    def trace():
        smem = {}
        module = mlir.ir.Module.parse(
            "module attributes {gpu.container_module} {\n  gpu.module @cute_py_kernels {\n"
            f"    llvm.mlir.global external @{_builder.SMEM_SYMBOL}() {{addr_space = 3 : i32, alignment = "
            f"{_builder.SMEM_BASE_ALIGN} : i64}} : !llvm.array<0 x i8>\n  }}\n}}")
        gpu_block = module.body.operations[0].regions[0].blocks[0]
        for ln in launches:
            if recorder is None:
                smem[ln.name] = _trace_kernel(mlir, gpu_block, ln, KernelContext())
            else:
                with recorder:
                    smem[ln.name] = _trace_kernel(mlir, gpu_block, ln, KernelContext())
        return module, smem

    with ctx, mlir.ir.Location.unknown(ctx):
        try:
            r = stages.run(trace, upto="ptx", lowered=lowered)
        except md.DialectError as e:
            raise CompileError(f"compiling {', '.join(ln.name for ln in launches)} failed: {e}") from None
    t0 = time.perf_counter()
    try:
        r.cubin = md.to_cubin(r.ptx)
    except md.DialectError as e:
        raise CompileError(str(e)) from None
    r.times["cubin"] = time.perf_counter() - t0
    return r


def _kernel_value(b, kind, v, orig):
    """The value a kernel parameter (or static argument) ``orig`` takes inside the traced kernel."""
    if kind == "static":
        return v
    if kind == "tuple":
        seq_type, subs = v
        return seq_type(_kernel_value(b, k, sv, o) for (k, sv), o in zip(subs, orig))
    if kind == "desc":
        b.descriptors[id(orig)] = b.params[v]
        return orig
    if kind == "ptr":
        tag = orig.engine.address
        b.gmem_bases.append((tag, (1 << TAG_SHIFT) - (tag & ((1 << TAG_SHIFT) - 1)), b.params[v]))
        return orig
    if kind == "Float32":
        return TracedFloat(b.params[v])
    return TracedInt(b.params[v], 32 if kind == "Int32" else 64)


def _trace_kernel(mlir, gpu_block, ln, tracer):
    types = [_PARAM_TYPES[kind] for kind, _ in ln.params]
    b = _builder.KernelBuilder(mlir, gpu_block, ln.name, types)
    b.launch = ln
    fn = _rewrite.transformed(ln.call.kernel.fn, kernel=True)
    with device.tracing(tracer):
        with b:
            args, kwargs = [], {}
            for pos, (kind, v) in ln.kernel_args:
                orig = ln.call.args[pos] if type(pos) is int else ln.call.kwargs[pos]
                val = _kernel_value(b, kind, v, orig)
                if type(pos) is int:
                    args.append(val)
                else:
                    kwargs[pos] = val
            try:
                result = fn(*args, **kwargs)
                if result is not None:
                    f, line = _return_line(ln.call.kernel.fn)
                    raise TraceError(f"the kernel {fn.__name__} returned {_short(result)}: a kernel returns nothing "
                                     f"(its launch has no result); write results to a tensor argument",
                                     where=(f, line))
                b.finish()
            except CuteError as e:
                new = _located(e)
                if new is not None:
                    raise new from e
                raise
    used = b.smem_region.total if b.smem_region is not None else 0
    if ln.smem is not None and ln.smem < used:
        f, line = ln.where
        raise ArgumentError(f"launch(smem={ln.smem}) of {ln.name} is less than the {used} bytes of shared memory "
                            f"the kernel allocates", where=(f, line))
    return max(used, ln.smem or 0)


def _return_line(fn):
    """(file, line) of the first ``return <value>`` statement of ``fn`` (its ``def`` line when none is found)."""
    import ast
    import textwrap

    code = fn.__code__
    try:
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return code.co_filename, code.co_firstlineno
    todo = list(tree.body[0].body) if tree.body and hasattr(tree.body[0], "body") else []
    while todo:  # the kernel's own statements (nested functions and classes have returns of their own)
        node = todo.pop(0)
        if isinstance(node, ast.Return) and node.value is not None:
            return code.co_filename, first + node.lineno - 1
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return code.co_filename, code.co_firstlineno


# -- decorators ---------------------------------------------------------------------------------


def kernel(fn: Callable[..., Any]) -> KernelFunction:
    """Mark ``fn`` as a device function (traced when a jit function launches it)."""
    return KernelFunction(fn)


def jit(fn: Callable[..., Any]) -> JitFunction:
    """Mark ``fn`` as a host function that builds atoms and launches kernels; calling it compiles and runs."""
    return JitFunction(fn)


def compile(fn: JitFunction | Callable[..., Any], *args: Any) -> Compiled:
    """Compile ``fn`` (a ``@jit`` function, or a plain host function) for ``args``; returns a :class:`Compiled`."""
    if not isinstance(fn, JitFunction):
        if not callable(fn):
            raise ArgumentError(f"compile needs a @cute_py.jit function, got {fn!r}")
        fn = JitFunction(fn)
    return fn.compile(*args)
