"""``@kernel``, ``@jit`` and ``compile``: tracing host and device functions, compiling, caching, launching.

A ``@jit`` host function runs in Python once per specialisation (argument dtypes, shapes,
strides and alignments, the kinds of run-time scalars, the static values, the instance it is bound to,
the compile options): device arrays are tensors over tagged addresses (``args``), and each
``kernel(...).launch(...)`` it makes is recorded (``launches``), its configuration checked against the
hardware's limits. Each launched ``@kernel`` is then traced into one ``llvm.func`` of a ``gpu.module``,
compiled to PTX and a cubin (``device_trace``), and cached. The result, a :class:`Compiled`, replays the
recorded launches with the real addresses of new arguments of the same specialisation: TMA descriptors
are encoded for them on the host.

**Methods** (``methods``): ``@jit`` and ``@kernel`` on methods bind ``self``; the instance is part of the key
by value. **Annotations** (``annotations``): ``Int32``/``Int64``/``Float32`` make numbers run-time scalars,
``Constexpr`` marks compile-time values, ``CUstream`` stream arguments; keyword arguments bind by name.
**Options** (``options``): ``compile(fn, *args, options="--generate-line-info --opt-level 3")``.

A jit function that launches **no kernel** (host algebra, prints) just runs: called, it runs as plain Python
each time and returns what it returns (its first call records it once); ``compile`` of it gives a
:class:`Compiled` with no kernels, whose call does nothing. Nothing is compiled and MLIR is not loaded.

**The disk cache** (``cache``) is keyed by the library's fingerprint, the jit function (its code,
closure and defaults), its name prefix, the specialisation, the code-generation options and each recorded
launch (the kernel's code and closure, its entry name, its static arguments by value — ``self`` of a kernel
method among them —, grid, block, cluster, shared memory and stream): what the host trace produced. The
instance a jit method is bound to is not itself in the disk key: the host trace runs again on every
in-memory miss, and everything of the instance that reaches the code does so through the launches. Each
entry stores the manifest of the code both traces ran and the module values it read (``deps``), and is used
only while that manifest still holds. A compile whose static values have no key (``config_key``) is not
cached at all.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
import os
import sys
import time
import types
import warnings
from collections.abc import Callable
from typing import Any

from ...errors import ArgumentError, CuteError, SpecMismatch, is_missing_dependency, missing_extra
from ...tensor.dtypes import Scalar
from ..cache import store as _cache
from ..cache import deps as _deps
from ..runtime.compiled import Compiled
from ...core.symbolic import Decision, SymInt, deciding
from ..cache.config_key import Unkeyable, config_key
from .last_call import LastCall
from ..lang import builder as _builder
from ..flow import rewrite as _rewrite
from ..specs.annotations import ParamInfo, StreamArg, is_stream
from ..specs.args import SCALAR_TYPES, array_spec, host_tensor, is_device_array, is_static_spec
from ..specs.dyn_specs import canonicalise, decision_env, spec_key
from ..specs.host_scalars import RunTimeScalar
from .call_form import CallForm, regroup, spread
from .compile_keys import disk_key
from ..trace import build, endless_recursion, located, short_repr
from .launches import (HostTrace, KernelFunction, check_name_prefix, host_trace_active, list_message, naming_epoch,
                       number_list, unwrap_method)
from ..specs.methods import BoundJit, BoundKernel, self_key
from ..specs.options import CompileOptions, parse_options

__all__ = ["kernel", "jit", "compile", "Compiled", "KernelFunction", "JitFunction"]

_HostTrace = HostTrace
_UNBOUND = object()
_NOT_RUN = object()
_WARNED = set()


def _log(msg):
    if os.environ.get("CUTE_PY_JIT_LOG"):
        print(f"cute_py.jit: {msg}", file=sys.stderr, flush=True)


class JitFunction:
    """A ``@cute_py.jit`` host function: calling it compiles (once per specialisation) and launches.

    On a method it binds ``self`` (see ``methods``); ``set_name_prefix`` names the compiled function;
    keyword arguments bind by name; a ``stream=`` keyword that names no parameter is the stream of the
    launches that name none. Called while a kernel is traced it is traced inline (a device function); called
    while another jit function's host code runs, it runs inline as plain Python (as the DSL's nested jit
    calls do).
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        fn, self.binding = unwrap_method(fn)
        self.fn = fn
        functools.update_wrapper(self, fn)
        self.params = ParamInfo(fn)
        try:
            src = inspect.getsourcefile(fn)
            with open(src, "rb") as f:
                self._source = hashlib.sha256(f.read()).hexdigest()
        except (OSError, TypeError):  # no source file (a REPL, exec): the compiled code itself
            code = getattr(fn, "__code__", None)
            self._source = _deps.code_digest(code) if code is not None else repr(fn)
        # in-memory key -> Compiled, and ("disk", disk key) -> Compiled (for a host trace that made the same
        # launches again under another in-memory key: a jit method that changed its instance)
        self._compiled = {}
        self._last = None  # LastCall: the specialisation of the last call
        self.name_prefix, self.keep_mangled_name = "", True

    def __repr__(self):
        return f"<cute_py.jit {self.fn.__module__}.{self.fn.__qualname__}>"

    def __get__(self, obj: Any, objtype: type | None = None) -> JitFunction | BoundJit:
        if self.binding == "static" or (obj is None and self.binding is None):
            return self
        if self.binding == "class":
            return BoundJit(self, objtype if objtype is not None else type(obj))
        return BoundJit(self, obj)

    def set_name_prefix(self, name: str, *, remove_cutlass_symbol: bool = False, keep_mangled_name: bool = True
                        ) -> None:
        """Name the compiled function ``<name>_<function>`` (``<name>`` with ``keep_mangled_name=False``): the
        :class:`Compiled`'s ``function_name``, the files of ``--keep-ptx``; part of the cache keys. (cute_py
        has no host function in the PTX; kernels take their own prefixes, ``KernelFunction.set_name_prefix``.)"""
        check_name_prefix(name, remove_cutlass_symbol, keep_mangled_name)
        self.name_prefix, self.keep_mangled_name = name, keep_mangled_name

    @property
    def function_name(self) -> str:
        """The compiled function's name (with the name prefix)."""
        if not self.name_prefix:
            return self.fn.__name__
        return f"{self.name_prefix}_{self.fn.__name__}" if self.keep_mangled_name else self.name_prefix

    # -- arguments ----------------------------------------------------------------------------------
    def _convert(self, args, skip=0, origin=None):
        """(host args, spec key, jit arg sources) of the call arguments (``skip``: parameters bound already;
        ``origin``: the parameter of each argument when containers were spread, see ``call_form``); a static
        value with no key has ``None`` as its key (the compile is then cached nowhere)."""
        host, key, sources, dynamic = [], [], [], []
        for i, a in enumerate(args):
            at, member = origin[i] if origin is not None else (i, None)
            kind = self.params.kind(at + skip)
            if kind == "constexpr":
                if is_device_array(a) or is_stream(a):
                    raise ArgumentError(f"{self.fn.__name__}: parameter {self.params.names[i + skip]} is annotated "
                                        f"Constexpr (a compile-time value), got {type(a).__name__}")
                a = a.value if isinstance(a, Scalar) else a
            elif kind == "stream" or is_stream(a):
                host.append(StreamArg(i))
                key.append(("stream",))
                sources.append(("stream", None))
                continue
            elif kind in SCALAR_TYPES and not isinstance(a, Scalar):
                a = SCALAR_TYPES[kind](a)
            if isinstance(a, Scalar) and kind != "constexpr":
                # an integer is a run-time value of the host code as an extent is (usable in layouts, decided on
                # per call); a float an expression the launch evaluates (host_scalars)
                host.append(SymInt.leaf(f"arg{i}", a.dtype.width) if a.kind in ("Int32", "Int64") else
                            RunTimeScalar(a.value, a.kind, i))
                key.append(("S", a.kind))
                sources.append(("scalar", a.kind))
            elif is_device_array(a):
                spec, _ = array_spec(a)
                host.append(None)  # the tensor is made below, once every run-time extent has its name
                key.append(None)
                sources.append(("tensor", spec))
                if not is_static_spec(spec):
                    name = self.params.names[at + skip] if at + skip < len(self.params.names) else f"arg{at}"
                    dynamic.append((i, name if member is None else f"{name}[{member}]", spec))
            else:
                if number_list(a):
                    raise ArgumentError(list_message(f"argument {i} of {self.fn.__name__} is the Python list "
                                                     f"{short_repr(a)}" if type(a) is list else
                                                     f"argument {i} of {self.fn.__name__} holds a Python list "
                                                     f"({short_repr(a)})"))
                host.append(a)
                key.append(("C", _static_key(a, f"argument {i} of {self.fn.__qualname__}")))
                sources.append(("static", None))
        canonical = canonicalise(dynamic) if dynamic else {}
        for i, (kind, spec) in enumerate(sources):
            if kind == "tensor":
                spec = canonical.get(i, spec)
                sources[i] = ("tensor", spec)
                host[i] = host_tensor(spec, i)
                key[i] = ("T",) + spec_key(spec)
        return host, tuple(key), sources

    def _memory_key(self, obj, key, opts):
        if any(k[0] == "C" and k[1] is None for k in key):
            return None
        bound = None
        if obj is not _UNBOUND:
            bound = self_key(obj, self.fn.__qualname__)
            if bound is None:
                return None
        return bound, naming_epoch(), opts.key(), self.name_prefix, self.keep_mangled_name, key

    # -- compiling ----------------------------------------------------------------------------------
    def compile(self, *args: Any, options: str | CompileOptions | None = None, **kwargs: Any) -> Compiled:
        """The :class:`Compiled` kernel(s) of this function for arguments like ``args`` (``options``: a compile
        options string, see ``options``)."""
        return self._specialise(_UNBOUND, args, kwargs, options)[0]

    def compile_bound(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                      options: str | CompileOptions | None = None) -> Compiled:
        """:meth:`compile` with ``obj`` bound as the first parameter (``self``); the result takes the rest."""
        return self._specialise(obj, args, kwargs, options)[0]

    def _specialise(self, obj, args, kwargs, options):
        """``(Compiled, the host function's result or _NOT_RUN, positional arguments, memory key, host arguments)``."""
        opts = parse_options(options)
        skip = 0 if obj is _UNBOUND else 1
        args = self.params.positional(tuple(args), kwargs, skip)
        flat, tree, origin = spread(args)
        host, key, sources = self._convert(flat, skip, origin)
        first = {}
        for j, (i, _) in enumerate(origin):
            first.setdefault(i, j)
        params = self.params.params
        defaults = {i: params[i + skip].default for i in range(len(args))
                    if i + skip < len(params) and params[i + skip].default is not params[i + skip].empty
                    and sources[first[i]][0] != "static"}
        form = CallForm(tree, tuple(i for i in range(len(args)) if self.params.kind(i + skip) == "constexpr"),
                        len(args), self.fn.__name__, defaults)
        if not form.trivial:
            host = regroup(host, tree)
            key = key + (("form", tuple(t and (t[0].__name__, t[1]) for t in tree)),)
        mkey = self._memory_key(obj, key, opts)
        c = self._compiled.get(mkey) if mkey is not None else None
        env = None
        if c is not None and c.guards:  # specialised on host decisions: the variant this call's values decide
            env = decision_env(flat, sources, self.params.names[skip:])
            c = next((v for v in self._compiled.get(("variants", mkey), ()) if not Decision.failed(v.guards, env)),
                     None)
        if c is not None:
            _cache.stats["memory_hits"] += 1
            return c, _NOT_RUN, args, mkey, host
        if env is None:
            env = decision_env(flat, sources, self.params.names[skip:])
        c, result = _compile(self, obj, host, key, sources, opts, env)
        if not form.trivial:
            c.set_call_form(form)
        if c.guards:
            c._respecialise = functools.partial(self._variant, obj, flat, sources, options, tree)
        if mkey is not None:
            self._compiled[mkey] = c
            if c.guards:
                self._compiled.setdefault(("variants", mkey), []).append(c)
        return c, result, args, mkey, host

    def _variant(self, obj, compiled_args, sources, options, tree, call_args):
        """The compile for ``call_args`` (a call of the compile of ``compiled_args`` whose run-time extents decide a
        host decision otherwise; both flat, containers spread as ``tree`` says): the call's run-time arguments
        with the compile's static ones."""
        full = [call_args[i] if kind != "static" and i < len(call_args) else a
                for i, ((kind, _), a) in enumerate(zip(sources, compiled_args))]
        return self._specialise(obj, tuple(regroup(full, tree)), {}, options)[0]

    # -- calling ------------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._invoke(_UNBOUND, args, kwargs)

    def call_bound(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call the function with ``obj`` bound as its first parameter (``instance.method(*args)``)."""
        return self._invoke(obj, tuple(args), kwargs)

    def _invoke(self, obj, args, kwargs):
        full = args if obj is _UNBOUND else (obj,) + args
        if _builder.active() is not None:  # a device function called from a kernel: traced inline
            return _rewrite.transformed(self.fn, kernel=False)(*full, **kwargs)
        if host_trace_active() is not None:  # a host helper of the jit function being traced: it runs inline
            return self.fn(*full, **kwargs)
        stream = kwargs.pop("stream", None) if "stream" not in self.params.names else None
        if kwargs:  # keyword arguments at their positions: a call with them takes the fast path below too
            args = self.params.positional(tuple(args), kwargs, 0 if obj is _UNBOUND else 1)
            kwargs = {}
        last = self._last
        if last is not None and last.matches(obj, args):
            try:
                return last.compiled(*args, stream=stream)  # the specialisation of the previous call
            except SpecMismatch:
                pass
        c, result, args, mkey, host = self._specialise(obj, args, kwargs, None)
        if not c.launches:  # host code only: it runs each call, as plain Python
            self._last = None
            if result is _NOT_RUN:
                result = _run_host(self, obj, host)
            if result is _NOT_RUN:  # it launches kernels now: compile it again
                self._compiled.pop(mkey, None)
                c, result, args, mkey, _ = self._specialise(obj, args, {}, None)
                if not c.launches:
                    c(*args, stream=stream)  # its host prints, with this call's values
                    return result
            else:
                c(*args, stream=stream)  # its host prints, with this call's values
                return result
        self._last = LastCall(c, obj, mkey, args) if mkey is not None else None
        return c(*args, stream=stream)


def _static_key(a, what):
    try:
        return config_key(a, what)
    except Unkeyable as e:
        token = (what, str(e).split(" ")[0])
        if token not in _WARNED:
            _WARNED.add(token)
            warnings.warn(f"{what} has no key ({e}): compiled without a cache on every call", RuntimeWarning,
                          stacklevel=5)
        return None


def _run_host(jf, obj, host):
    """Run a jit function that launched no kernel as plain Python on ``host`` (its arguments as its host trace
    takes them); its result, or ``_NOT_RUN`` when it launched kernels this time (then it is compiled again)."""
    full = list(host) if obj is _UNBOUND else [obj] + list(host)
    with HostTrace() as ht:
        try:
            result = jf.fn(*full)
        except CuteError as e:
            new = located(e)
            if new is not None:
                raise new from e
            raise
    return _NOT_RUN if ht.launches else result


# -- keys -----------------------------------------------------------------------------------------


def _compile(jf, obj, host, key, sources, opts, env=None):
    """``(Compiled, the host function's result)``: trace the host function, then find its kernels in a cache or
    compile them. ``env``: the run-time extents' values of this call, on which the host code may decide (see
    ``core.symbolic.Decision``; the decisions become the compile's guards)."""
    t0 = time.perf_counter()
    recorder = _deps.Recorder()
    full = host if obj is _UNBOUND else [obj] + host
    decision = Decision(env or {})
    with HostTrace() as ht, deciding(decision):
        try:
            with recorder:
                result = jf.fn(*full)
        except CuteError as e:
            new = located(e)
            if new is not None:
                raise new from e
            raise
        except RecursionError as e:
            raise endless_recursion(e, f"the jit function {jf.fn.__name__}") from None
    name = jf.function_name
    guards = decision.guards
    if not ht.launches:
        c = Compiled(jf, [], {}, sources, b"", "", "", None, build=build, name=name,
                     arg_names=jf.params.names[0 if obj is _UNBOUND else 1:], guards=guards)
        c.host_prints = list(ht.prints)
        _log(f"{jf.fn.__name__} launched no kernel: nothing to compile")
        return c, result
    dkey = disk_key(jf, key, ht.launches, opts, guards, ht.prints, _log)
    builder = functools.partial(build, options=opts) if not opts.default_pipeline else build
    c = jf._compiled.get(("disk", dkey)) if dkey else None
    if c is not None:  # this process compiled these launches already (another key of the same code)
        _cache.stats["memory_hits"] += 1
        return c, result
    entry = _cache.read_entry(dkey) if dkey else None
    if entry is not None:
        meta, cubin, ptx = entry
        names = sorted(ln.name for ln in ht.launches)
        stale = "other kernels" if sorted(meta["kernels"]) != names else _deps.check(meta["deps"])
        if stale is None:
            _cache.stats["disk_hits"] += 1
            _log(f"loaded {jf.fn.__name__} from the disk cache in {1e3 * (time.perf_counter() - t0):.1f} ms")
            opts.write_kept(name, ptx, cubin)
            c = Compiled(jf, ht.launches, meta["kernels"], sources, cubin, ptx, None, dkey, build=builder, name=name,
                         arg_names=jf.params.names[0 if obj is _UNBOUND else 1:],
                         cooperative=meta.get("cooperative", ()), arch=opts.gpu_arch,
                         assumed=meta.get("assumed", {}), guards=guards)
            c.host_prints = list(ht.prints)
            c.from_cache = True
            return _remember(jf, dkey, c), result
        _cache.stats["disk_stale"] += 1
        _log(f"the disk-cache entry of {jf.fn.__name__} is stale ({stale}): compiling again")
    try:
        built = build(ht.launches, recorder, options=opts, lowered=True)
    except ImportError as e:  # the MLIR bindings (the jit extra) are not installed: say how to get them
        if not is_missing_dependency(e):
            raise
        raise missing_extra("compile", e) from None
    mlir_text, ptx, cubin, smem = built.mlir, built.ptx, built.cubin, built.smem
    _cache.stats["compiles"] += 1
    assumed = {}  # what the kernels' cute.assume promised of run-time extents: checked at each call
    for ln in ht.launches:
        for leaf, d in ln.assumed.items():
            assumed[leaf] = math.lcm(assumed.get(leaf, 1), d)
    if dkey:
        manifest = recorder.manifest(covered=[jf.fn] + [ln.call.kernel.fn for ln in ht.launches])
        if manifest is not None:
            _cache.write_entry(dkey, {"kernels": smem, "cooperative": built.cooperative, "deps": manifest,
                                      "assumed": assumed}, cubin, ptx)
        else:
            _log(f"{jf.fn.__name__} is not cached on disk: its traces ran code whose source cannot be checked")
    _log(f"compiled {jf.fn.__name__} in {1e3 * (time.perf_counter() - t0):.1f} ms")
    opts.write_kept(name, ptx, cubin)
    c = Compiled(jf, ht.launches, smem, sources, cubin, ptx, mlir_text, dkey, built.times, build=builder, name=name,
                 arg_names=jf.params.names[0 if obj is _UNBOUND else 1:], cooperative=built.cooperative,
                 arch=opts.gpu_arch, assumed=assumed, guards=guards, lowered=built.lowered)
    c.host_prints = list(ht.prints)
    return _remember(jf, dkey, c), result


def _remember(jf, dkey, c):
    if dkey:
        jf._compiled[("disk", dkey)] = c
    return c


# -- decorators ---------------------------------------------------------------------------------


def kernel(fn: Callable[..., Any] | None = None) -> KernelFunction | Callable[..., KernelFunction]:
    """Mark ``fn`` as a device function (traced when a jit function launches it); ``@kernel()`` too."""
    if fn is None:
        return kernel
    return KernelFunction(fn)


def jit(fn: Callable[..., Any] | None = None) -> JitFunction | Callable[..., JitFunction]:
    """Mark ``fn`` as a host function that builds atoms and launches kernels; calling it compiles and runs.
    ``@jit()`` too."""
    if fn is None:
        return jit
    return JitFunction(fn)


def compile_fn(fn: Any, *args: Any, options: str | CompileOptions | None = None, **kwargs: Any) -> Compiled:
    """Compile ``fn`` for ``args`` (and keyword arguments); returns a :class:`Compiled`.

    ``fn`` is a ``@jit`` function, a bound ``@jit`` method (``instance.method``), an instance whose class's
    ``__call__`` is ``@jit`` (``self`` is compiled in; the result takes the other arguments), or a plain host
    function or method. ``options``: the CuTe DSL's options string (``"--generate-line-info"``...; see
    ``options``)."""
    if isinstance(fn, (JitFunction, BoundJit)):
        return fn.compile(*args, options=options, **kwargs)
    if isinstance(fn, (KernelFunction, BoundKernel)):
        raise ArgumentError(f"compile takes the @cute_py.jit function that launches a kernel, got the kernel {fn!r}")
    if isinstance(fn, types.MethodType):
        f = fn.__func__
        jf = f if isinstance(f, JitFunction) else JitFunction(f)
        return jf.compile_bound(fn.__self__, args, kwargs, options)
    if isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, functools.partial)):
        return JitFunction(fn).compile(*args, options=options, **kwargs)
    call = inspect.getattr_static(type(fn), "__call__", None)
    if not isinstance(fn, type) and isinstance(call, (JitFunction, types.FunctionType)):  # a callable instance
        jf = call if isinstance(call, JitFunction) else JitFunction(call)
        return jf.compile_bound(fn, args, kwargs, options)
    raise ArgumentError(f"compile needs a @cute_py.jit function (or a method, or an instance whose __call__ is "
                        f"one), got {short_repr(fn)}")


class _CompileCallable:
    """``cute.compile``: ``compile(fn, *args, options=...)`` compiles ``fn`` for ``args`` (see :func:`compile_fn`);
    ``compile[GenerateLineInfo(True), OptLevel(2)](fn, *args)`` is the same with those options (the DSL's
    subscript form; see ``options``)."""

    __slots__ = ("_objects",)

    def __init__(self, objects: Any = ()) -> None:
        self._objects = objects

    def __getitem__(self, objects: Any) -> "_CompileCallable":
        from ..specs.options import merge_option_objects

        merge_option_objects(objects, None)  # a wrong option is told here, before any argument
        return _CompileCallable(objects)

    def __call__(self, fn: Any, *args: Any, options: str | CompileOptions | None = None, **kwargs: Any) -> Compiled:
        if self._objects != ():
            from ..specs.options import merge_option_objects

            options = merge_option_objects(self._objects, options)
        return compile_fn(fn, *args, options=options, **kwargs)

    def __repr__(self) -> str:
        return "cute_py.compile" + (f"[{self._objects!r}]" if self._objects != () else "")


compile = _CompileCallable()
