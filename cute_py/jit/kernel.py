"""``@kernel``, ``@jit`` and ``compile``: tracing host and device functions, compiling, caching, launching.

A ``@jit`` host function runs in Python once per specialisation (argument dtypes, shapes,
strides and alignments, the kinds of run-time scalars, the static values): device arrays
are tensors over tagged addresses (``args``), and each ``kernel(...).launch(...)`` it makes
is recorded. Each launched ``@kernel`` is then traced into one ``llvm.func`` of a
``gpu.module`` (its TMA atoms, gmem tensors and run-time scalars become parameters; every
other argument is static), compiled to PTX and a cubin, and cached (``cache``). The result,
a :class:`Compiled`, replays the recorded launches with the real addresses of new
arguments of the same specialisation: TMA descriptors are encoded for them on the host.
"""

import functools
import hashlib
import inspect
import marshal
import os
import sys
import time

from ..errors import CuteError
from ..nvgpu import device_ops
from ..nvgpu.cpasync import TmaCopyAtom
from ..pointer import AddressSpace, Pointer
from ..tensor import Tensor
from ..valued import ValuedInt
from . import builder as _builder
from . import cache as _cache
from .args import SCALAR_TYPES, TAG_SHIFT, array_spec, host_tensor, is_device_array, untag
from .compiled import Compiled, SpecMismatch as _SpecMismatch
from .errors import ArgumentError, CompileError, JitError, TraceError, _is_library, locate
from .values import RuntimeScalar, TracedFloat, TracedInt

__all__ = ["kernel", "jit", "compile", "Compiled", "KernelFunction", "JitFunction"]

_hosts = []


def _log(msg):
    if os.environ.get("CUTE_PY_JIT_LOG"):
        print(f"cute_py.jit: {msg}", file=sys.stderr, flush=True)


# -- device functions ---------------------------------------------------------------------------


class KernelFunction:
    """A ``@cute_py.kernel`` device function; ``k(*args).launch(grid=, block=, cluster=, smem=)`` inside a jit function."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __repr__(self):
        return f"<cute_py.kernel {self.fn.__module__}.{self.fn.__qualname__}>"

    def __call__(self, *args, **kwargs):
        if _builder.active() is not None:
            raise TraceError(locate(f"the kernel {self.fn.__name__} cannot be called from inside a kernel"))
        if not _hosts:
            raise JitError(f"launch the kernel {self.fn.__name__} from a @cute_py.jit function (or cute_py.compile): "
                           f"{self.fn.__name__}(...).launch(grid=..., block=...)")
        return KernelCall(self, args, kwargs)


class KernelCall:
    """A kernel with its arguments, waiting for ``.launch``."""

    def __init__(self, kernel_fn, args, kwargs):
        self.kernel, self.args, self.kwargs = kernel_fn, args, kwargs

    def launch(self, *, grid, block, cluster=(1, 1, 1), smem=None):
        """Record a launch of ``grid`` blocks of ``block`` threads (1-3 static ints each), in clusters of
        ``cluster`` blocks, with ``smem`` bytes of dynamic shared memory (default: what the kernel allocates)."""
        host = _hosts[-1]
        dims = [_dim3(v, what) for v, what in ((grid, "grid"), (block, "block"), (cluster, "cluster"))]
        if smem is not None and (type(smem) is not int or smem < 0):
            raise ArgumentError(locate(f"smem must be a non-negative int number of bytes, got {smem!r}"))
        host.launches.append(_Launch(self, *dims, smem, len(host.launches)))


def _dim3(v, what):
    v = v if isinstance(v, (tuple, list)) else (v,)
    out = []
    for x in v:
        if isinstance(x, ValuedInt):
            x = x.value
        if type(x) is not int or x < 1:
            raise ArgumentError(locate(f"{what} dimensions must be static positive ints, got {v!r}"))
        out.append(x)
    if not 1 <= len(out) <= 3:
        raise ArgumentError(locate(f"{what} has 1 to 3 dimensions, got {v!r}"))
    return tuple(out) + (1,) * (3 - len(out))


class _Launch:
    def __init__(self, call, grid, block, cluster, smem, index):
        self.call, self.grid, self.block, self.cluster, self.smem = call, grid, block, cluster, smem
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
        return "static", a
    if isinstance(a, TmaCopyAtom):
        where = untag(a.descriptor.global_address)
        if where is None:
            raise ArgumentError(locate("a TMA atom passed to a kernel must be built from a tensor argument of the "
                                       "jit function"))
        params.append(("desc", (a.descriptor, where)))
        return "desc", len(params) - 1
    if isinstance(a, Tensor) and isinstance(a.engine, Pointer) and a.engine.memspace is AddressSpace.gmem:
        where = untag(a.engine.address)
        if where is None:
            raise ArgumentError(locate(f"a gmem tensor passed to a kernel must come from a device-array argument of "
                                       f"the jit function at a static offset, got {a!r}"))
        params.append(("ptr", where))
        return "ptr", len(params) - 1
    if isinstance(a, RuntimeScalar):
        params.append((a.kind, a))
        return a.kind, len(params) - 1
    if is_device_array(a):
        raise ArgumentError(locate("pass device arrays to the jit function; a kernel gets them as tensors"))
    return "static", a


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


def _scalar_annotation(p):
    ann = p.annotation
    name = getattr(ann, "name", None)
    return name if name in SCALAR_TYPES and (ann is SCALAR_TYPES[name] or type(ann).__name__ == "DType") else None


class JitFunction:
    """A ``@cute_py.jit`` host function: calling it compiles (once per specialisation) and launches."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)
        try:
            sig = inspect.signature(fn)
            self._scalars = [_scalar_annotation(p) for p in sig.parameters.values()]
        except (TypeError, ValueError):
            self._scalars = []
        try:
            src = inspect.getsourcefile(fn)
            with open(src, "rb") as f:
                self._source = hashlib.sha256(f.read()).hexdigest()
        except (OSError, TypeError):  # no source file (a REPL, exec): the compiled code itself
            code = getattr(fn, "__code__", None)
            self._source = hashlib.sha256(marshal.dumps(code)).hexdigest() if code is not None else repr(fn)
        self._compiled = {}
        self._last = None  # (Compiled, [(index, static value)], number of arguments) of the last call

    def __repr__(self):
        return f"<cute_py.jit {self.fn.__module__}.{self.fn.__qualname__}>"

    def _convert(self, args):
        """(host args, spec key, jit arg sources) of the call arguments."""
        host, key, sources = [], [], []
        for i, a in enumerate(args):
            kind = self._scalars[i] if i < len(self._scalars) else None
            if kind is not None and not isinstance(a, RuntimeScalar):
                a = SCALAR_TYPES[kind](a)
            if isinstance(a, RuntimeScalar):
                host.append(_IndexedScalar(a.value, a.kind, i))
                key.append(("S", a.kind))
                sources.append(("scalar", a.kind))
            elif is_device_array(a):
                spec, _ = array_spec(a)
                host.append(host_tensor(spec, i))
                key.append(("T",) + tuple(spec))
                sources.append(("tensor", spec))
            else:
                host.append(a)
                key.append(("C", _static_key(a)))
                sources.append(("static", None))
        return host, tuple(key), sources

    def compile(self, *args):
        """The :class:`Compiled` kernel(s) of this function for arguments like ``args``."""
        host, key, sources = self._convert(args)
        c = self._compiled.get(key)
        if c is not None:
            _cache.stats["memory_hits"] += 1
            return c
        c = _compile(self, host, key, sources)
        self._compiled[key] = c
        return c

    def __call__(self, *args, stream=0):
        if _hosts or _builder.active() is not None:
            raise TraceError(locate(f"the jit function {self.fn.__name__} cannot be called while tracing"))
        last = self._last
        if last is not None and _same_statics(args, last):
            try:
                return last[0](*args, stream=stream)  # the specialisation of the previous call (checked there)
            except _SpecMismatch:
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


class _IndexedScalar(RuntimeScalar):
    __slots__ = ("index",)

    def __init__(self, value, kind, index):
        super().__init__(value, kind)
        self.index = index


def _located(e):
    """A copy of the CuteError ``e`` whose message starts with the user's file:line (from its traceback)."""
    msg = str(e)
    tb, where = e.__traceback__, None
    while tb is not None:
        if not _is_library(tb.tb_frame.f_code.co_filename):
            where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    if where is None or msg.startswith(where.split(":")[0]):
        return None
    try:
        new = type(e)(f"{where}: {msg}")
    except Exception:
        return None
    return new


def _closure_key(fn):
    """The static keys of the values a function closes over (a function's key holds its address: no disk cache)."""
    cells = getattr(fn, "__closure__", None) or ()
    out = []
    for c in cells:
        try:
            out.append(_static_key(c.cell_contents))
        except ValueError:  # an empty cell
            out.append("<empty>")
    return out


def _launch_key(ln):
    """Everything of a recorded launch that changes the generated code."""
    fn = ln.call.kernel.fn
    args = [(pos, kind, _static_key(ln.call.args[pos] if type(pos) is int else ln.call.kwargs[pos]))
            for pos, (kind, _) in ln.kernel_args]
    return (fn.__module__, fn.__qualname__, _closure_key(fn), ln.name, args, ln.grid, ln.block, ln.cluster, ln.smem)


def _disk_key(jf, key, launches):
    text = repr((_cache.library_fingerprint(), jf._source, jf.fn.__module__, jf.fn.__qualname__, _closure_key(jf.fn), key,
                 [_launch_key(ln) for ln in launches]))
    if " at 0x" in text:  # an object whose text is its address: not reproducible across processes
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def _compile(jf, host, key, sources):
    t0 = time.perf_counter()
    with _HostTrace() as ht:
        try:
            jf.fn(*host)
        except CuteError as e:
            new = _located(e)
            if new is not None:
                raise new from e
            raise
    if not ht.launches:
        raise JitError(f"the jit function {jf.fn.__name__} launched no kernel")
    dkey = _disk_key(jf, key, ht.launches)
    entry = _cache.read_entry(dkey) if dkey else None
    if entry is not None:
        meta, cubin = entry
        names = [ln.name for ln in ht.launches]
        if sorted(meta["kernels"]) == sorted(names) and meta.get("sources") == _kernel_sources(ht):
            _cache.stats["disk_hits"] += 1
            _log(f"loaded {jf.fn.__name__} from the disk cache in {1e3 * (time.perf_counter() - t0):.1f} ms")
            return Compiled(jf, ht.launches, meta["kernels"], sources, cubin, None, None, dkey)
        _cache.stats["disk_rejects"] += 1
    mlir_text, ptx, cubin, smem = _build(ht.launches)
    _cache.stats["compiles"] += 1
    if dkey:
        _cache.write_entry(dkey, {"kernels": smem, "sources": _kernel_sources(ht)}, cubin, ptx)
    _log(f"compiled {jf.fn.__name__} in {1e3 * (time.perf_counter() - t0):.1f} ms")
    return Compiled(jf, ht.launches, smem, sources, cubin, ptx, mlir_text, dkey)


def _kernel_sources(ht):
    out = {}
    for ln in ht.launches:
        fn = ln.call.kernel.fn
        try:
            with open(inspect.getsourcefile(fn), "rb") as f:
                out[fn.__qualname__] = hashlib.sha256(f.read()).hexdigest()
        except (OSError, TypeError):
            out[fn.__qualname__] = None
    return out


def _build(launches):
    """Trace every launched kernel into one module; (mlir text, ptx, cubin, {name: smem bytes})."""
    import mlir_dialects as md
    from mlir_dialects import _backend as mlir

    from .device_tracer import KernelTracer

    ctx = md.make_context()
    smem = {}
    with ctx, mlir.ir.Location.unknown(ctx):
        module = mlir.ir.Module.parse(
            "module attributes {gpu.container_module} {\n  gpu.module @cute_py_kernels {\n"
            f"    llvm.mlir.global external @{_builder.SMEM_SYMBOL}() {{addr_space = 3 : i32, alignment = "
            f"{_builder.SMEM_BASE_ALIGN} : i64}} : !llvm.array<0 x i8>\n  }}\n}}")
        gpu_block = module.body.operations[0].regions[0].blocks[0]
        for ln in launches:
            smem[ln.name] = _trace_kernel(mlir, gpu_block, ln, KernelTracer())
        mlir_text = str(module)
        try:
            ptx = md.to_ptx(module)
        except md.DialectError as e:
            raise CompileError(f"compiling {', '.join(smem)} failed: {e}") from None
    try:
        cubin = md.to_cubin(ptx)
    except md.DialectError as e:
        raise CompileError(str(e)) from None
    return mlir_text, ptx, cubin, smem


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
    args, kwargs = [], {}
    for pos, (kind, v) in ln.kernel_args:
        orig = ln.call.args[pos] if type(pos) is int else ln.call.kwargs[pos]
        val = _kernel_value(b, kind, v, orig)
        if type(pos) is int:
            args.append(val)
        else:
            kwargs[pos] = val
    from ..tensor import set_device_access
    from .memory import DeviceAccess

    old = device_ops.set_tracer(tracer)
    old_access = set_device_access(DeviceAccess)
    try:
        with b:
            try:
                ln.call.kernel.fn(*args, **kwargs)
                b.finish()
            except CuteError as e:
                new = _located(e)
                if new is not None:
                    raise new from e
                raise
    finally:
        device_ops.set_tracer(old)
        set_device_access(old_access)
    used = b.smem_region.total if b.smem_region is not None else 0
    if ln.smem is not None and ln.smem < used:
        raise ArgumentError(f"{ln.name}: launch(smem={ln.smem}) is less than the {used} bytes of shared memory the "
                            f"kernel allocates")
    return max(used, ln.smem or 0)


# -- decorators ---------------------------------------------------------------------------------


def kernel(fn):
    """Mark ``fn`` as a device function (traced when a jit function launches it)."""
    return KernelFunction(fn)


def jit(fn):
    """Mark ``fn`` as a host function that builds atoms and launches kernels; calling it compiles and runs."""
    return JitFunction(fn)


def compile(fn, *args):
    """Compile ``fn`` (a ``@jit`` function, or a plain host function) for ``args``; returns a :class:`Compiled`."""
    if not isinstance(fn, JitFunction):
        if not callable(fn):
            raise ArgumentError(f"compile needs a @cute_py.jit function, got {fn!r}")
        fn = JitFunction(fn)
    return fn.compile(*args)
