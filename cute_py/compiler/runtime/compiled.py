"""``Compiled``: the kernels of one specialisation of a jit function, loaded lazily and launched.

Calling a :class:`Compiled` reads the device addresses of its array arguments (``call_args``: torch tensors like
the last ones seen are read directly), encodes the TMA descriptors for them on the host (cached by address),
fills each kernel's parameter block (``parameters``; skipped when the addresses and scalars are those of the
previous call) and launches every recorded kernel. The launch itself is prepared when the module is loaded
(function handle, dimensions, parameter-array address): a call whose arguments did not change costs the argument
checks and one ``cuLaunchKernel``.

Which path takes a call is one state machine (:class:`CallState`), in ``Compiled``'s "call paths" section:

    FIRST ──a call passes its checks: the module is loaded──▶ CHECKED
    CHECKED ──after a checked call, the fast path can be made──▶ FAST      (launch_paths, native launcher)
            ──after a checked call, it never can───────────────▶ CHECKED_ONLY
    FAST ──the checked path meets a torch tensor unlike the one recorded at its position──▶ CHECKED

Every call goes to the entry of the state (``_entry``): the checked path (``_call``) in FIRST, CHECKED and
CHECKED_ONLY; in FAST the generated path, or the native launcher in front of it, which pass every call they do not
take to the checked path, untouched. The fast path is made at the second call with static torch tensors like the
first, or at the first call whose run-time-shaped tensors are all torch tensors; it never applies to run-time
scalars, stream arguments, cooperative launches, or a call form with Constexpr parameters or containers
(``set_call_form``); kernels launched in clusters take the generated path but not the native launcher. Every
transition happens under the object's lock.

Every argument of a call is checked and converted before anything changes: the tensors (dtype, shape, strides,
alignment, a device address in ``(0, 2**64)``), the run-time scalars (``scalars``: kind and range at every call),
the streams (``annotations.stream_handle``). Only then, under the object's lock (``native.new_lock``), are
the parameter arrays refilled (every value computed and checked first: ``_prepare``, then written: ``_commit``),
the records of what they hold updated and the kernels launched; the lock is held until the driver has taken the
parameters, so calls from several threads each launch their own arguments, and a call that raises leaves no
stale parameters: the next call launches exactly what a fresh object would. The generated paths and the native
launcher take the same lock.

A launch recorded with ``stream=`` a stream argument of the jit function runs on the stream passed at that
position of each call (a driver ``CUstream``, a torch or cupy stream, ``__cuda_stream__`` or an int handle); the
others on the call's ``stream=`` (default: the legacy default stream). A compile of a jit function that launched
no kernel has no kernels: calling it checks the argument count and does nothing.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Iterable
from typing import Any

from ..specs.annotations import stream_handle
from ..specs.args import is_static_spec
from ..specs.dyn_specs import Binder, kernel_values
from .call_args import CallArguments
from .launch_paths import FastPath, make_dynamic_fast_call, make_fast_call
from .native import new_lock
from .parameters import ParameterArrays
from .scalars import converter
from ...core.symbolic import SymInt
from ...errors import ArgumentError, GuardMismatch, LaunchError, SpecMismatch
from ...tensor.dtypes import Scalar

__all__ = ["Compiled", "CallState", "SpecMismatch"]

_INVALID_CONTEXT = 201  # CUDA_ERROR_INVALID_CONTEXT: no (or another) context is current in the calling thread


class CallState(enum.Enum):
    """Which path takes the calls of a :class:`Compiled` (the module's docstring draws the transitions)."""

    FIRST = "first call"  # nothing loaded: the first call that passes its checks loads the module
    CHECKED = "checked"  # the checked path takes every call and records the torch tensors it sees
    FAST = "fast"  # the generated path (with the native launcher in front of it, where there is one)
    CHECKED_ONLY = "checked only"  # no fast path applies to this compile: the checked path, for good


class _CallSignature:
    """What ``inspect.signature`` reads for a ``Compiled`` (whose ``__call__`` is a property): ``(*args,
    stream=None)``; nothing for the class itself, whose constructor's signature is read as usual."""

    def __get__(self, obj, cls=None):
        if obj is None:
            return None
        import inspect

        p = inspect.Parameter
        return inspect.Signature([p("args", p.VAR_POSITIONAL), p("stream", p.KEYWORD_ONLY, default=None)])


class Compiled(CallArguments, ParameterArrays):
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
                 stage_times: dict[str, float] | None = None, *, build: Callable[..., Any],
                 name: str | None = None, arg_names: list[str] | None = None,
                 cooperative: Iterable[str] = (), arch: str = "sm_90a",
                 assumed: dict[str, int] | None = None, guards: Iterable[tuple] = (),
                 lowered: str | None = None) -> None:
        # ``assumed``: {run-time extent: divisor} that the kernels' ``cute.assume`` promised (checked per call)
        # ``build(launches, lowered=...)`` runs the stages again (a compile loaded from the disk cache keeps
        # only PTX and cubin; the texts are traced again on request)
        self.jit_function, self.launches, self.smem, self.sources = jf, launches, dict(smem), sources
        self.function_name = name or jf.fn.__name__
        self.cooperative = frozenset(cooperative)  # the kernels that sync their grid: launched cooperatively
        self.arch = arch  # the target the cubin was assembled for
        self._build = build
        self.cubin, self._ptx, self._mlir, self.key = cubin, ptx, mlir_text, key
        self._lowered = lowered  # the lowered module's text (None: made again on request)
        # stage name -> seconds of the compile that made this object (empty when it came from the disk cache)
        self.stage_times = dict(stage_times or {})
        # the host code's decisions on run-time extents (core.symbolic.Decision): a call deciding one otherwise is
        # handed to the compile for its outcome (``_respecialise``, set by the jit function), or refused
        self.guards = tuple(guards)
        self._respecialise = None
        self.call_form = None  # how calls map onto the arguments (containers, Constexpr left out): set_call_form
        self.host_prints = []  # the host code's printf calls, printed at each call with its values
        # True when the cubin came from the disk cache (no stage ran; CUTE_PY_JIT_LOG=1 logs it too)
        self.from_cache = False
        # -- the arguments: static tensors, tensors with run-time extents or strides (bound at each call, see
        # dyn_specs: every run-time value the kernels get is checked at each binding), scalars, streams
        self._tensor_args = tuple((i, spec) for i, (kind, spec) in enumerate(sources)
                                  if kind == "tensor" and is_static_spec(spec))
        dynamic = {i: spec for i, (kind, spec) in enumerate(sources) if kind == "tensor" and not is_static_spec(spec)}
        self._dynamic_args = tuple(sorted(dynamic.items()))
        self._binder = Binder(dynamic, list(arg_names or []), kernel_values(
            [a for ln in launches for a in list(ln.call.args) + list(ln.call.kwargs.values())]
            + [SymInt.leaf(leaf, 64, d) for leaf, d in sorted((assumed or {}).items())]),
            self.guards) if dynamic or self.guards else None
        self._scalar_args = tuple(i for i, (kind, _) in enumerate(sources) if kind == "scalar")
        # the integer ones: leaves argN of the host code's run-time values (grids, guards, kernel parameters)
        self._int_scalars = tuple(i for i, (kind, k) in enumerate(sources) if kind == "scalar" and k in
                                  ("Int32", "Int64"))
        self._scalar_checks = tuple(converter(kind, i) for i, (k, kind) in enumerate(sources) if k == "scalar")
        # the fewest arguments a call may pass: up to the last run-time one (trailing statics are compiled in)
        self._min_args = 1 + max((i for i, (kind, _) in enumerate(sources) if kind != "static"), default=-1)
        # a stream parameter that is the last run-time argument may come as the call's stream= instead
        self._stream_at = self._min_args - 1 if self._min_args and sources[self._min_args - 1][0] == "stream" \
            else None
        self._streams = tuple(getattr(ln, "stream", None) for ln in launches)  # per launch: stream argument or None
        # -- what the checked path has seen of the arguments (call_args)
        self._torch_specs = {}  # argument index -> (torch type, dtype, shape, strides, alignment) seen to match
        self._fast = None  # those of every tensor argument, in argument order, once all were seen
        self._torch_dtypes = {}  # torch dtype -> cute_py element type name, for arguments with run-time extents
        self._dynamic_torch = {}  # argument -> (torch type, dtype) seen at a position with run-time extents
        self._fast_dynamic = True  # None once a call passed something else than torch tensors there
        # -- the module and the parameters (set when it is loaded, ``_load``)
        self._funcs = self._blocks = self._ctx = self._default_stream = None
        self._plan = None  # per launch: (CUfunction, grid x3, block x3, smem, parameter array address, cluster)
        self._launch_kernel = self._ok = None
        self._desc_cache = {}
        # -- the records of what the parameter arrays hold: each changes with them, under the lock
        self._last = None  # the key (pointers and scalars) the parameter blocks are filled for
        self._last_bound = None  # ({argument: (shape, strides)}, leaf values) of the last binding
        self._fast_last = None  # the generated dynamic call's key of the last call it passed to the checked path
        self._exact = None  # (torch guard of its tensors' extents and strides, addresses) of that call, once repeated
        # held while the parameter arrays, the plan, the records and the state change, and until the launches that
        # read them are enqueued (the driver copies the parameters then): calls from several threads
        self._lock = new_lock()
        # -- the call paths (see the state machine below)
        self._state = CallState.FIRST
        self._entry = self._checked_call  # what a call goes to
        self._fast_call = None  # the generated function of the fast path, in FAST
        self._native = None  # the native launcher in front of it, if any
        self._fast_allowed = True  # False for a call form the generated paths do not take (set_call_form)

    @property
    def ptx(self) -> str:
        if self._ptx is None:
            self._rebuild("ptx")
        return self._ptx

    @property
    def mlir(self) -> str:
        """The traced module (``mlir`` stage), with cute_nvgpu ops."""
        if self._mlir is None:
            self._rebuild("lowered")
        return self._mlir

    @property
    def lowered(self) -> str:
        """The module after lowering every cute_nvgpu op to NVVM/LLVM (``lowered`` stage)."""
        if self._lowered is None:
            self._rebuild("lowered")
        return self._lowered

    def _rebuild(self, upto):
        # a compile loaded from the disk cache keeps only PTX and cubin: the stages run again up to ``upto`` (the
        # traced and lowered texts come together, from one trace and one lowering)
        r = self._build(self.launches, upto=upto, lowered=True)
        self._mlir, self._lowered = r.mlir, r.lowered
        if r.ptx is not None:
            self._ptx = r.ptx

    @property
    def kernel_names(self) -> list[str]:
        return [ln.name for ln in self.launches]

    def set_call_form(self, form: Any) -> None:
        """Take calls in ``form`` (a ``host.call_form.CallForm``): lists of arrays spread, Constexpr
        parameters left out (such compiles always take the general path: no generated one), trailing run-time
        parameters left out for their defaults (a generated path sends such a call to the general one). A
        generated path of a form with containers takes the spread arguments, behind an entry that spreads them."""
        self.call_form = form
        if form.constexpr_at:
            self._fast_allowed = False
            self._forget_fast_path()

    # -- the call paths: one state machine ------------------------------------------------------------------------

    # ``c(*args, stream=None)`` calls the entry of the current state, ``_entry``: the getter is a C function, so
    # that no Python frame stands between the call and that entry (the native launcher is C throughout)
    __call__ = property(operator.attrgetter("_entry"), doc="c(*args, stream=None): launch every recorded kernel "
                                                           "for these arguments (see ``Compiled``)")
    __signature__ = _CallSignature()

    def _checked_call(self, *args: Any, stream: int | Any = None) -> None:
        """The entry of the states FIRST, CHECKED and CHECKED_ONLY: the checked path."""
        self._call(args, stream)

    def _loaded(self):
        """FIRST -> CHECKED, the module just loaded (the caller holds the lock)."""
        self._state = CallState.CHECKED

    def _after_checked_call(self, args):
        """CHECKED -> FAST or CHECKED_ONLY, after a checked call of ``args`` launched (the caller holds the lock):
        the fast path is made once the checked path has seen every tensor argument as a torch tensor (static
        shapes: at the second call like the first, when ``_fast_pointers`` found them all; run-time shapes: at the
        first call of torch tensors only), unless it does not apply to this compile (then never again)."""
        if self._state is not CallState.CHECKED:
            return
        if not self._fast_allowed:
            path = None
        elif self._binder is not None:
            if self._fast_dynamic is None or len(self._torch_specs) != len(self._tensor_args):
                return
            path = None if self._spreads() else make_dynamic_fast_call(self, args, Compiled._call)
        elif self._fast is not None:
            path = make_fast_call(self, self._fast, args, Compiled._call_spread if self._spreads() else Compiled._call)
        else:
            return
        if path is None:
            self._state = CallState.CHECKED_ONLY
        else:
            self._install(path)

    def _install(self, path: FastPath):
        """CHECKED -> FAST: calls go to ``path``'s entry (the caller holds the lock)."""
        self._fast_call, self._native, self._entry = path.call, path.native, path.entry
        self._state = CallState.FAST

    def _forget_fast_path(self):
        """FAST -> CHECKED: the fast path is dropped (its native launcher disarmed first: its plan may be in flight),
        to be made again for what the checked path sees next; another state keeps its own. Takes the lock (the
        caller must not hold it)."""
        with self._lock:
            if self._native is not None:
                self._native.disarm()
            self._fast = self._fast_call = self._native = None
            self._entry = self._checked_call
            if self._state is CallState.FAST:
                self._state = CallState.CHECKED

    # -- the checked path -------------------------------------------------------------------------------------------

    def _spreads(self):
        return self.call_form is not None and self.call_form.spreads

    def _call_spread(self, args, stream):
        """The general path of a generated path that took spread arguments (containers of arrays already spread)."""
        return self._call(args, stream, spread=True)

    def _call(self, args, stream, fast_key=None, spread=False):
        # every argument is checked and converted first; the state (parameter arrays, plan, records, the native
        # launcher) changes only after that, under the lock, so that a call that raises leaves no trace
        given, given_stream = args, stream
        if self.call_form is not None and not spread:
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
                return self._respecialise(args)._call(given, given_stream, spread=spread)
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
                    return self._respecialise(args)._call(given, given_stream, spread=spread)
        if self._scalar_args:
            key = (key, tuple([check(args[i]) for i, check in zip(self._scalar_args, self._scalar_checks)]))
        if self._state is CallState.FIRST:  # the module, once the arguments passed (a wrong one is told without a GPU)
            for at in self._streams:
                if at is not None:
                    stream_handle(args[at])  # a stream argument that is none is told before the GPU is asked
            with self._lock:
                if self._state is CallState.FIRST:
                    self._load()
                    self._loaded()
        if stream is None:
            stream = self._default_stream
        streams = tuple(stream if at is None else stream_handle(args[at]) for at in self._streams)
        with self._lock:
            # the checked path binds and fills for this call: what the generated calls remember is stale now
            self._fast_last = self._exact = None
            if self._native is not None:
                self._native.disarm()
            if key != self._last:  # new addresses or scalars: re-encode the descriptors and refill the parameters
                self._commit(*self._prepare(key))
                self._last = key
            if fast_key is not None:
                self._fast_last = fast_key
            self._launch_all(streams)
            self._after_checked_call(args)

    def _launch_all(self, streams):
        """Launch every kernel of the plan on its stream (the caller holds the lock)."""
        launch_kernel, ok = self._launch_kernel, self._ok
        for (func, gx, gy, gz, bx, by, bz, smem, params, ex), s in zip(self._plan, streams):
            if ex is None:
                err, = launch_kernel(func, gx, gy, gz, bx, by, bz, smem, s, params, 0)
                if err is not ok and err != ok:
                    self._launch_error(err, (gx, gy, gz), (bx, by, bz), (1, 1, 1), smem,
                                       lambda: launch_kernel(func, gx, gy, gz, bx, by, bz, smem, s, params, 0))
                continue
            from . import launch as _launch

            try:
                _launch.launch(func, (gx, gy, gz), (bx, by, bz), ex[0], smem, s, _Params(params), cooperative=ex[1])
            except LaunchError:
                if not self._make_context_current():
                    raise
                _launch.launch(func, (gx, gy, gz), (bx, by, bz), ex[0], smem, s, _Params(params), cooperative=ex[1])

    def _print_host(self, args):
        """Print the host code's printf calls for this call's run-time extents and scalars."""
        import sys

        from ..specs.host_scalars import host_print

        env = self._binder.env(self._bind(args)[1]) if self._binder is not None else {}
        env.update(self._scalar_env(args))
        scalars = {i: (args[i].value if isinstance(args[i], Scalar) else args[i])
                   for i in self._scalar_args if i < len(args)}
        sys.stdout.write("".join(host_print(e, env, scalars) for e in self.host_prints))
        sys.stdout.flush()

    # -- the module, its context, launch errors ---------------------------------------------------------------------

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
        self._launch_kernel_ex = d.cuLaunchKernelEx
        self._ctx = d.cuCtxGetCurrent()[1]  # the context the module is loaded in: made current in a thread with none
        # the legacy default stream as the driver binding's own handle type: an int would be converted on each call
        self._default_stream = d.CUstream(0)
        # the last entry: None for a plain cuLaunchKernel, else (cluster, cooperative) for cuLaunchKernelEx
        self._plan = tuple((self._funcs[ln.name], *ln.grid, *ln.block, self.smem[ln.name], block.address,
                            None if ln.cluster == (1, 1, 1) and ln.name not in self.cooperative
                            else (ln.cluster, ln.name in self.cooperative))
                           for ln, block in zip(self.launches, self._blocks))

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

    def export(self, directory: str, prefix: str) -> list[str]:
        """Write the cubin, a C header and a C source that load and launch these kernels with no Python
        (``runtime.export``); the paths written."""
        from .export import export

        return export(self, directory, prefix)

    def __repr__(self):
        kernels = ', '.join(f'{n} smem={s}' for n, s in self.smem.items()) or "no kernels"
        return f"Compiled({self.function_name}: {kernels})"


class _Params:
    """The ``address`` of a parameter array, as ``launch.launch`` takes it."""

    __slots__ = ("address",)

    def __init__(self, address):
        self.address = address
