"""``Compiled``: the kernels of one specialisation of a jit function, loaded lazily and launched.

Calling a :class:`Compiled` reads the device addresses of its array arguments (a fast path
for torch tensors checks dtype, shape, strides and alignment against the specialisation),
encodes the TMA descriptors for them on the host (cached by address), fills each kernel's
parameter block (skipped when the addresses and scalars are those of the previous call)
and launches every recorded kernel. The launch itself is prepared when the module is
loaded (function handle, dimensions, parameter-array address): a call whose arguments
did not change costs the argument checks and one ``cuLaunchKernel``.

Every argument of a call is checked and converted before anything changes: the tensors (dtype, shape, strides,
alignment, a device address in ``(0, 2**64)``), the run-time scalars (``scalars``: kind and range at every call),
the streams (``annotations.stream_handle``). Only then, under the object's lock (``native.new_lock``), are
the parameter arrays refilled (every value computed and checked first: ``_prepare``, then written: ``_commit``),
the records of what they hold updated and the kernels launched; the lock is held until the driver has taken the
parameters, so calls from several threads each launch their own arguments, and a call that raises leaves no
trace. The generated paths (``launch_paths``) and the native launcher take the same lock.

A launch recorded with ``stream=`` a stream argument of the jit function runs on the stream passed at that
position of each call (a driver ``CUstream``, a torch or cupy stream, ``__cuda_stream__`` or an int handle); the others on the call's
``stream=`` (default: the legacy default stream). A compile of a jit function that launched no kernel has no
kernels: calling it checks the argument count and does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..frontend.annotations import stream_handle
from ..frontend.args import array_spec, concrete_spec, device_address, is_static_spec
from ..frontend.dyn_specs import Binder, kernel_values
from .launch_paths import make_dynamic_fast_call, make_fast_call
from .native import new_lock
from .scalars import converter
from .param_values import checked_address, constant_value, grid_for, slot_value
from ...core.symbolic import SymInt
from ...errors import ArgumentError, GuardMismatch, LaunchError, SpecMismatch, TmaEncodeError
from ...tensor.dtypes import Scalar

if TYPE_CHECKING:
    from ..stages import StageResults

__all__ = ["Compiled", "SpecMismatch"]

_INVALID_CONTEXT = 201  # CUDA_ERROR_INVALID_CONTEXT: no (or another) context is current in the calling thread


class Compiled:
    """Compiled kernels of one specialisation of a jit function: ``.mlir``, ``.lowered``, ``.ptx``, ``.cubin``
    (the products of the named stages, ``cute_py.compiler.stages``), ``.stage_times`` and ``__call__``.

    Calling it with arguments of the same specialisation launches every recorded kernel on
    ``stream`` (default: the legacy default stream) or on its stream argument; trailing static arguments may be
    left out (they are compiled in), run-time ones (arrays, ``Int32``, streams...) are read at each call. A stream
    parameter left out may be given as ``stream=``. ``function_name`` is the jit function's name with its name
    prefix.
    """

    def __init__(self, jf: Any, launches: list[Any], smem: dict[str, int], sources: list[tuple[str, Any]],
                 cubin: bytes, ptx: str | None, mlir_text: str | None, key: str | None,
                 stage_times: dict[str, float] | None = None, *, build: Callable[..., StageResults],
                 name: str | None = None, arg_names: list[str] | None = None,
                 cooperative: Iterable[str] = (), arch: str = "sm_90a",
                 assumed: dict[str, int] | None = None, guards: Iterable[tuple] = ()) -> None:
        # ``assumed``: {run-time extent: divisor} that the kernels' ``cute.assume`` promised (checked per call)
        # ``build(launches, lowered=...)`` runs the stages again (a compile loaded from the disk cache keeps
        # only PTX and cubin; the texts are traced again on request)
        self.jit_function, self.launches, self.smem, self.sources = jf, launches, dict(smem), sources
        self.function_name = name or jf.fn.__name__
        self.cooperative = frozenset(cooperative)  # the kernels that sync their grid: launched cooperatively
        self.arch = arch  # the target the cubin was assembled for
        self._build = build
        self.cubin, self._ptx, self._mlir, self.key = cubin, ptx, mlir_text, key
        self._lowered = None
        # stage name -> seconds of the compile that made this object (empty when it came from the disk cache)
        self.stage_times = dict(stage_times or {})
        self._funcs = None
        self._blocks = None
        self._desc_cache = {}
        self._last = None  # the pointers and scalars the parameter blocks hold
        self._torch_specs = {}  # argument index -> (torch type, dtype, shape, strides, alignment) seen to match
        self._fast = None  # those of every tensor argument, in argument order, once all were seen
        self._tensor_args = tuple((i, spec) for i, (kind, spec) in enumerate(sources)
                                  if kind == "tensor" and is_static_spec(spec))
        # tensor arguments with run-time extents or strides: bound at each call (see dyn_specs)
        dynamic = {i: spec for i, (kind, spec) in enumerate(sources) if kind == "tensor" and not is_static_spec(spec)}
        names = list(arg_names or [])
        # every run-time value the kernels get is checked at each binding: width and assumed divisors
        # the host code's decisions on run-time extents (core.symbolic.Decision): a call deciding one otherwise is
        # handed to the compile for its outcome (``_respecialise``, set by the jit function), or refused
        self.guards = tuple(guards)
        self._respecialise = None
        self.call_form = None  # how calls map onto the arguments (containers, Constexpr left out): set_call_form
        self.host_prints = []  # the host code's printf calls, printed at each call with its values
        # True when the cubin came from the disk cache (no stage ran; CUTE_PY_JIT_LOG=1 logs it too)
        self.from_cache = False
        self._binder = Binder(dynamic, names, kernel_values(
            [a for ln in launches for a in list(ln.call.args) + list(ln.call.kwargs.values())]
            + [SymInt.leaf(leaf, 64, d) for leaf, d in sorted((assumed or {}).items())]),
            self.guards) if dynamic or self.guards else None
        self._dynamic_args = tuple(sorted(dynamic.items()))
        self._last_bound = None  # ({argument: (shape, strides)}, leaf values) of the last binding
        self._torch_dtypes = {}  # torch dtype -> cute_py element type name, for arguments with run-time extents
        self._dynamic_torch = {}  # argument -> (torch type, dtype) seen at a position with run-time extents
        self._fast_dynamic = True  # None once a call passed something else than torch tensors there
        self._fast_last = None  # the generated dynamic call's key of the last call it passed to the general path
        self._exact = None  # (torch guard of its tensors' extents and strides, addresses) of that call, once repeated
        self._scalar_args = tuple(i for i, (kind, _) in enumerate(sources) if kind == "scalar")
        # the integer ones: leaves argN of the host code's run-time values (grids, guards, kernel parameters)
        self._int_scalars = tuple(i for i, (kind, k) in enumerate(sources) if kind == "scalar" and k in
                                  ("Int32", "Int64"))
        self._scalar_checks = tuple(converter(kind, i) for i, (k, kind) in enumerate(sources) if k == "scalar")
        # held while the parameter arrays, the plan and what records them change, and until the launches that
        # read them are enqueued (the driver copies the parameters then): calls from several threads
        self._lock = new_lock()
        # the fewest arguments a call may pass: up to the last run-time one (trailing statics are compiled in)
        self._min_args = 1 + max((i for i, (kind, _) in enumerate(sources) if kind != "static"), default=-1)
        # a stream parameter that is the last run-time argument may come as the call's stream= instead
        self._stream_at = self._min_args - 1 if self._min_args and sources[self._min_args - 1][0] == "stream" \
            else None
        self._streams = tuple(getattr(ln, "stream", None) for ln in launches)  # per launch: stream argument or None
        self._plan = None  # per launch: (CUfunction, grid x3, block x3, smem, parameter array address, cluster)
        self._launch_kernel = self._ok = None
        self._fast_call = None  # generated once every tensor argument was seen (False: not applicable)
        self._native = None  # the native launcher its generated path made, if any (see launch_paths)

    @property
    def ptx(self) -> str:
        if self._ptx is None:
            self._rebuild()
        return self._ptx

    @property
    def mlir(self) -> str:
        """The traced module (``mlir`` stage), with cute_nvgpu ops."""
        if self._mlir is None:
            self._rebuild()
        return self._mlir

    @property
    def lowered(self) -> str:
        """The module after lowering every cute_nvgpu op to NVVM/LLVM (``lowered`` stage)."""
        if self._lowered is None:
            self._rebuild(lowered=True)
        return self._lowered

    def _rebuild(self, lowered=False):
        # a compile loaded from the disk cache keeps only PTX and cubin: trace again for the texts
        r = self._build(self.launches, lowered=lowered)
        self._mlir, self._ptx = r.mlir, r.ptx
        if lowered:
            self._lowered = r.lowered

    @property
    def kernel_names(self) -> list[str]:
        return [ln.name for ln in self.launches]

    def _load(self):
        from . import launch as _launch


        non_portable = {ln.name for ln in self.launches if ln.non_portable_cluster}
        try:
            _, self._funcs = _launch.load_module(self.cubin, self.smem, non_portable)
        except LaunchError:  # a cubin for another target: say so rather than the driver's code
            _launch.check_target(self.arch, self.function_name)
            raise
        self._blocks = [_launch.ParamBlock([k for k, _ in ln.params]) for ln in self.launches]
        d = _launch.driver()
        self._launch_kernel, self._ok = d.cuLaunchKernel, d.CUresult.CUDA_SUCCESS
        self._ctx = d.cuCtxGetCurrent()[1]  # the context the module is loaded in: made current in a thread with none
        # the legacy default stream as the driver binding's own handle type: an int would be converted on each call
        self._default_stream = d.CUstream(0)
        # the last entry: None for a plain cuLaunchKernel, else (cluster, cooperative) for cuLaunchKernelEx
        self._plan = tuple((self._funcs[ln.name], *ln.grid, *ln.block, self.smem[ln.name], block.address,
                            None if ln.cluster == (1, 1, 1) and ln.name not in self.cooperative
                            else (ln.cluster, ln.name in self.cooperative))
                           for ln, block in zip(self.launches, self._blocks))

    def _descriptor(self, desc, address, env=None):
        bound = desc.bind(env) if env is not None and desc.is_dynamic else desc
        k = (id(desc), address, bound.global_dims, bound.global_strides)
        b = self._desc_cache.get(k)
        if b is None:
            if len(self._desc_cache) > 256:
                self._desc_cache.clear()
            try:
                b = bound.encode(address)
            except TmaEncodeError:  # the driver encodes in the current context: a thread with none gets the module's
                if not self._make_context_current():
                    raise
                b = bound.encode(address)
            self._desc_cache[k] = b
        return b

    def __call__(self, *args: Any, stream: int | Any = None) -> None:
        self._call(args, stream)

    def set_call_form(self, form: Any) -> None:
        """Take calls in ``form`` (a ``frontend.call_form.CallForm``): lists of arrays spread, Constexpr
        parameters left out (such compiles always take the general path: no generated one), trailing run-time
        parameters left out for their defaults (a generated path sends such a call to the general one)."""
        self.call_form = form
        if form.constexpr_at or any(t is not None for t in form.tree):
            self._fast_call = False

    def _call(self, args, stream, fast_key=None):
        # every argument is checked and converted first; the state (parameter arrays, plan, records, the native
        # launcher) changes only after that, under the lock, so that a call that raises leaves no trace
        given, given_stream = args, stream
        if self.call_form is not None:
            args = self.call_form.flat(args)
        n = len(args)
        if stream is not None and n == self._stream_at:  # the stream parameter given as stream=
            args, stream, n = args + (stream,), None, n + 1
        if not self._min_args <= n <= len(self.sources):
            raise ArgumentError(f"{self.jit_function.fn.__name__} was compiled for {len(self.sources)} arguments (the "
                                f"trailing static ones may be left out), got {n}")
        stream = None if stream is None else stream_handle(stream)
        if self.host_prints or (not self.launches and self.guards):
            try:
                self._print_host(args)
            except GuardMismatch:  # the host code decides otherwise for this call: the compile of its outcome
                if self._respecialise is None:
                    raise
                return self._respecialise(args)._call(given, given_stream)
        if not self.launches:
            return
        key = self._fast_pointers(args) if self._binder is None else None
        if key is None:
            pointer = self._pointer
            key = tuple([pointer(i, spec, args[i]) for i, spec in self._tensor_args])
            if self._binder is not None:
                try:
                    key = (key,) + self._bind(args)
                except GuardMismatch:
                    if self._respecialise is None:
                        raise
                    return self._respecialise(args)._call(given, given_stream)
        if self._scalar_args:
            key = (key, tuple([check(args[i]) for i, check in zip(self._scalar_args, self._scalar_checks)]))
        if self._plan is None:  # the module, once the arguments passed (a wrong argument is told without a GPU)
            for at in self._streams:
                if at is not None:
                    stream_handle(args[at])  # a stream argument that is none is told before the GPU is asked
            with self._lock:
                if self._plan is None:
                    self._load()
        if stream is None:
            stream = self._default_stream
        streams = tuple(stream if at is None else stream_handle(args[at]) for at in self._streams)
        launch_kernel, ok = self._launch_kernel, self._ok
        with self._lock:
            # the general path binds and fills for this call: what the generated calls remember is stale now
            self._fast_last = self._exact = None
            if self._native is not None:
                self._native.disarm()
            if key != self._last:  # new addresses or scalars: re-encode the descriptors and refill the parameters
                self._commit(*self._prepare(key))
                self._last = key
            if fast_key is not None:
                self._fast_last = fast_key
            for (func, gx, gy, gz, bx, by, bz, smem, params, ex), s in zip(self._plan, streams):
                if ex is None:
                    err, = launch_kernel(func, gx, gy, gz, bx, by, bz, smem, s, params, 0)
                    if err is not ok and err != ok:
                        self._launch_error(err, (gx, gy, gz), (bx, by, bz), (1, 1, 1), smem,
                                           lambda: launch_kernel(func, gx, gy, gz, bx, by, bz, smem, s, params, 0))
                else:
                    from . import launch as _launch

                    try:
                        _launch.launch(func, (gx, gy, gz), (bx, by, bz), ex[0], smem, s, _Params(params),
                                       cooperative=ex[1])
                    except LaunchError:
                        if not self._make_context_current():
                            raise
                        _launch.launch(func, (gx, gy, gz), (bx, by, bz), ex[0], smem, s, _Params(params),
                                       cooperative=ex[1])
        if self._fast_call is None and self._binder is not None and self._fast_dynamic is not None and \
                len(self._torch_specs) == len(self._tensor_args):
            self._fast_call = make_dynamic_fast_call(self, args, Compiled._call) or False
            if self._fast_call:
                self.__class__ = type("Compiled", (Compiled,), {"__call__": self._fast_call, "__slots__": ()})
        elif self._fast_call is None and self._fast is not None:
            self._fast_call = make_fast_call(self, self._fast, args, Compiled._call) or False
            if self._fast_call:  # this object's calls now go straight to it (see _make_fast_call)
                self.__class__ = type("Compiled", (Compiled,), {"__call__": self._fast_call, "__slots__": ()})

    def _print_host(self, args):
        """Print the host code's printf calls for this call's run-time extents and scalars."""
        import sys

        from ..builtins.printing import host_print

        env = self._binder.env(self._bind(args)[1]) if self._binder is not None else {}
        env.update(self._scalar_env(args))
        scalars = {i: (args[i].value if isinstance(args[i], Scalar) else args[i])
                   for i in self._scalar_args if i < len(args)}
        sys.stdout.write("".join(host_print(e, env, scalars) for e in self.host_prints))
        sys.stdout.flush()

    def _launch_error(self, err, grid, block, cluster, smem, retry=None):
        """Raise the ``LaunchError`` of a failed launch; but a launch from a thread in which no CUDA context is
        current (one that has made no CUDA call yet) is ``retry``-ed once the module's context is made current."""
        from . import launch as _launch

        if retry is not None and int(err) == _INVALID_CONTEXT and self._make_context_current():
            err, = retry()
            if err is self._ok or err == self._ok:
                return
        _launch.check((err,), f"launching grid={grid} block={block} cluster={cluster} smem={smem}")

    def _make_context_current(self):
        """Make the context the module was loaded in current in this thread if none is; whether it did."""
        from . import launch as _launch

        d = _launch.driver()
        err, current = d.cuCtxGetCurrent()
        if err != self._ok or self._ctx is None or (current is not None and int(current) != 0):
            return False
        err, = d.cuCtxSetCurrent(self._ctx)
        return err == self._ok

    def _fast_pointers(self, args):
        """The addresses of the tensor arguments when each is a torch tensor like the one last seen at its
        position (same type, dtype, shape, strides, on a CUDA device, aligned); otherwise ``None``."""
        fast = self._fast
        if fast is None:
            specs = self._torch_specs
            if len(specs) != len(self._tensor_args):
                return None
            fast = self._fast = tuple((i,) + specs[i] for i, _ in self._tensor_args)
        ptrs = []
        for i, cls, dtype, shape, strides, align, dense in fast:
            a = args[i]
            # a row-major spec: is_contiguous() and the shape imply the strides (one call instead of a tuple)
            if type(a) is not cls or a.dtype is not dtype or a.shape != shape or not a.is_cuda or \
                    not (a.is_contiguous() if dense else a.stride() == strides):
                return None
            ptr = a.data_ptr()
            if ptr % align or not ptr:
                return None
            ptrs.append(ptr)
        return tuple(ptrs)

    def _pointer(self, i, spec, a):
        """The device address of tensor argument ``i``, after checking it has the compiled dtype/shape/strides."""
        fast = self._torch_specs.get(i)
        if fast is not None and type(a) is fast[0]:
            _, dtype, shape, strides, align, _ = fast
            if a.dtype is dtype and a.shape == shape and a.stride() == strides and a.is_cuda:
                ptr = a.data_ptr()
                if ptr % align == 0 and ptr:
                    return ptr
        got, ptr = array_spec(a)
        ptr = device_address(ptr, f"argument {i}")
        if got[:3] != spec[:3] or ptr % spec[3]:
            raise SpecMismatch(f"argument {i}: compiled for {spec} (dtype, shape, strides, alignment), got "
                                f"{got}; compile again for it (calling the jit function does)")
        if type(a).__module__.startswith("torch"):
            self._torch_specs[i] = (type(a), a.dtype, a.shape, a.stride(), spec[3], _row_major(a.shape, a.stride()))
            if self._native is not None:  # its plan may be in flight: disarmed, then dropped with the path
                self._native.disarm()
            self._fast = self._fast_call = self._native = None
            self.__class__ = Compiled
        return ptr

    def _bind(self, args):
        """``(pointers, leaf values)`` of the tensor arguments with run-time extents (see ``dyn_specs``); the
        extents and strides of a call equal to the previous call's reuse its values."""
        ptrs, actual = [], {}
        torch_dtypes = self._torch_dtypes
        for i, spec in self._dynamic_args:
            a = args[i]
            name = torch_dtypes.get(getattr(a, "dtype", None)) if type(a).__module__ == "torch" else None
            if name is not None and a.is_cuda:  # a torch tensor whose dtype was seen: read it directly
                got, ptr = (name, a.shape, a.stride()), a.data_ptr()
                self._dynamic_torch.setdefault(i, (type(a), a.dtype))
            else:
                got, ptr = concrete_spec(a)
                if type(a).__module__ == "torch":
                    torch_dtypes[a.dtype] = got[0]
                    self._dynamic_torch[i] = (type(a), a.dtype)
                else:
                    self._fast_dynamic = None  # not every call is torch tensors: no generated call
            ptr = device_address(ptr, f"argument {i}")
            if got[0] != spec[0] or ptr % spec[3]:
                raise SpecMismatch(f"argument {i}: compiled for {spec[0]} elements aligned to {spec[3]} bytes, got "
                                   f"{got[0]} at {ptr:#x}")
            ptrs.append(ptr)
            actual[i] = (tuple(got[1]), tuple(got[2]))
        scalars = self._scalar_env(args) if self._int_scalars else None
        last = self._last_bound
        if last is not None and last[0] == (actual, scalars):
            return tuple(ptrs), last[1]
        values = self._binder.bind(actual, scalars)
        self._last_bound = ((actual, scalars), values)
        return tuple(ptrs), values

    def _scalar_env(self, args):
        """The integer scalar arguments as the host code's run-time values name them (``argN``)."""
        checks = dict(zip(self._scalar_args, self._scalar_checks))
        return {f"arg{i}": checks[i](args[i]) for i in self._int_scalars if i < len(args)}

    def _fill(self, key, args):
        """Refill the parameter arrays (and the run-time grids) for ``key``; the caller holds the lock. Nothing
        changes when it raises (every value is computed and checked before the first write)."""
        prepared = self._prepare(key)
        if self._native is not None:  # it replays the parameters as they are: not while they change
            self._native.disarm()
        self._commit(*prepared)

    def _prepare(self, key):
        """``(plan, writes)`` for ``key``: the plan with the run-time grids of these extents, and per parameter
        ``(block, index, value)``, every value checked against its slot. Changes nothing."""
        scalars = {}
        if self._scalar_args:
            key, values = key
            scalars = dict(zip(self._scalar_args, values))
        env, plan = None, self._plan
        if self._binder is not None:
            static, dyn_ptrs, values = key
            ptrs = dict(zip([i for i, _ in self._tensor_args], static))
            ptrs.update(zip([i for i, _ in self._dynamic_args], dyn_ptrs))
            env = self._binder.env(values)
        else:
            ptrs = dict(zip([i for i, _ in self._tensor_args], key))
        if self._int_scalars:
            env = dict(env or {})
            env.update({f"arg{i}": scalars[i] for i in self._int_scalars if i in scalars})
        if env is not None:
            plan = tuple(grid_for(p, ln, env) if ln.dynamic_grid else p for p, ln in zip(plan, self.launches))
        writes = []
        for ln, block in zip(self.launches, self._blocks):
            for j, (kind, src) in enumerate(ln.params):
                if kind == "ptr":
                    v = checked_address(ptrs[src[0]] + src[1], ln.name, j)
                elif kind == "desc":
                    desc, (idx, off) = src
                    v = self._descriptor(desc, checked_address(ptrs[idx] + off, ln.name, j), env)
                elif isinstance(src, SymInt):
                    v = slot_value(kind, env[src.name], ln.name, j, src.name)
                elif hasattr(src, "evaluate") and isinstance(src, Scalar):  # a run-time scalar of the host code
                    idx = getattr(src, "index", None)
                    v = src.evaluate(scalars)
                else:
                    idx = getattr(src, "index", None)
                    v = scalars[idx] if idx in scalars else constant_value(src)
                    v = slot_value(kind, v, ln.name, j, f"argument {idx}" if idx is not None else "a constant")
                writes.append((block, j, v))
        return plan, writes

    def _commit(self, plan, writes):
        for block, j, v in writes:
            block.set(j, v)
        self._plan = plan

    def __repr__(self):
        kernels = ', '.join(f'{n} smem={s}' for n, s in self.smem.items()) or "no kernels"
        return f"Compiled({self.function_name}: {kernels})"


def _row_major(shape, strides):
    """Whether ``strides`` are the row-major strides of ``shape`` in every mode of extent > 1 (what torch's
    ``is_contiguous()`` checks)."""
    acc = 1
    for n, st in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if n != 1 and st != acc:
            return False
        acc *= n
    return True


class _Params:
    """The ``address`` of a parameter array, as ``launch.launch`` takes it."""

    __slots__ = ("address",)

    def __init__(self, address):
        self.address = address

