"""The kernel half of ``python -m cute_py demo`` (parts 3 and 4 on a GPU): compile the demo's kernel
(:mod:`cute_py.demo.kernel`) for its configuration, show its PTX, and run it on a CUDA device through torch
or cupy.  It imports the compiler, the MLIR bindings, CUDA and the array libraries (all lazily);
:mod:`cute_py.demo` calls it only when the compiler can run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .tour import DTYPE, GPU_SHAPE, REPS, SWIZZLE, TILE

if TYPE_CHECKING:
    from ..compiler import Compiled

__all__ = ["jit_unavailable", "compile_demo_kernel", "ptx_excerpt", "kernel_tour", "find_gpu", "run_on_gpu"]


def jit_unavailable() -> str | None:
    """``None`` when the JIT can compile (the MLIR bindings and nvJitLink import), otherwise why not."""
    try:
        from mlir_dialects import bindings  # noqa: F401  (loads the MLIR bindings)
    except ImportError as e:
        return str(e).splitlines()[0] if str(e) else f"no MLIR Python bindings ({type(e).__name__})"
    try:
        from cuda.bindings import nvjitlink  # noqa: F401
    except ImportError as e:
        return f"no nvJitLink from cuda-bindings ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
    return None


def compile_demo_kernel(src: Any = None, dst: Any = None) -> tuple[Compiled, float, str]:
    """``(compiled, seconds, how)``: kernel 1 (``tma_copy``) for the demo's dtype, tile and swizzle.

    ``src`` and ``dst`` default to ``DeviceArraySpec`` of ``GPU_SHAPE`` (compiling needs no GPU);
    ``how`` is ``"compiled"``, or where the kernel came from when a cache had it.
    """
    from .. import compiler
    from .kernel import tma_copy

    if src is None:
        src = dst = compiler.DeviceArraySpec(DTYPE, GPU_SHAPE)
    before = dict(compiler.stats)
    t0 = time.perf_counter()
    compiled = compiler.compile(tma_copy, src, dst, TILE, SWIZZLE)
    seconds = time.perf_counter() - t0
    if compiler.stats["compiles"] > before["compiles"]:
        how = "compiled"
    elif compiler.stats["disk_hits"] > before["disk_hits"]:
        how = "loaded from the disk cache"
    else:
        how = "found in the in-memory cache"
    return compiled, seconds, how


_PTX_KEYS = ("elect.sync", "mbarrier.", "cp.async.bulk")


def ptx_excerpt(ptx: str) -> list[str]:
    """The lines of ``ptx`` that elect a thread, use an mbarrier or issue a TMA / bulk-group instruction."""
    lines = []
    for line in ptx.splitlines():
        text = " ".join(line.split())
        if any(k in text for k in _PTX_KEYS) and not text.startswith("//"):
            lines.append(text)
    return lines


def kernel_tour(out: Callable[[str], object] = print, bindings_seconds: float | None = None) -> Compiled:
    """Part 3: compile kernel 1 for the demo's configuration; print how long it took and its TMA/mbarrier PTX.
    ``bindings_seconds``, when given, is how long loading the MLIR bindings took (reported apart).
    Returns the :class:`~cute_py.compiler.Compiled`."""
    compiled, seconds, how = compile_demo_kernel()
    ln = compiled.launches[0]
    out(f"cute.compile(tma_copy, spec, spec, {TILE}, {SWIZZLE!r})   with spec = "
        f"cute.compiler.DeviceArraySpec({DTYPE!r}, {GPU_SHAPE})")
    loaded = "" if bindings_seconds is None else f" (after loading the MLIR bindings: {1e3 * bindings_seconds:.0f} ms)"
    out(f"  {how} in {1e3 * seconds:.0f} ms{loaded}: Python -> cute_nvgpu MLIR -> PTX -> sm_90a cubin "
        f"({len(compiled.cubin)} bytes), no GPU needed")
    out(f"  {ln.name}: grid {ln.grid}, block {ln.block}, {compiled.smem[ln.name]} bytes of shared memory "
        f"(the tile + an 8-byte mbarrier)")
    out("PTX excerpt (one elected thread: mbarrier, TMA load, wait, TMA store):")
    for line in ptx_excerpt(compiled.ptx):
        out(f"    {line}")
    out("  (the whole module: python -m cute_py demo --emit ptx, or --emit mlir)")
    return compiled


# -- part 4: running the copy ---------------------------------------------------------------------


def find_gpu() -> tuple[str, ModuleType, tuple[str, int, int]] | tuple[None, None, str]:
    """``(backend, module, description)`` of a usable CUDA device (``backend`` is ``"torch"`` or
    ``"cupy"``), or ``(None, None, why not)``. Any failure to import or query counts as no GPU."""
    reasons = []
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return "torch", torch, (torch.cuda.get_device_name(), major, minor)
        reasons.append("torch sees no CUDA device")
    except Exception as e:  # not installed, broken install, no driver...
        reasons.append(f"torch: {type(e).__name__}")
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            cc = str(cupy.cuda.Device(0).compute_capability)
            name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
            name = name.decode() if isinstance(name, bytes) else str(name)
            return "cupy", cupy, (name, int(cc[:-1]), int(cc[-1]))
        reasons.append("cupy sees no CUDA device")
    except Exception as e:
        reasons.append(f"cupy: {type(e).__name__}")
    return None, None, "; ".join(reasons)


def _median_ms(fn, make_event, elapsed_ms, reps=REPS, warmup=3):
    """The median time of ``fn()`` in ms over ``reps`` runs, timed with CUDA events on the default stream."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = make_event(), make_event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(elapsed_ms(start, end))
    times.sort()
    n = len(times)
    return times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])


def _run_torch(torch, shape):
    src = torch.randn(shape, device="cuda").to(torch.bfloat16)
    dst = torch.zeros_like(src)
    compiled, _, _ = compile_demo_kernel(src, dst)
    compiled(src, dst)
    torch.cuda.synchronize()
    ok = torch.equal(src.view(torch.int16), dst.view(torch.int16))

    def event():
        return torch.cuda.Event(enable_timing=True)

    def elapsed(s, e):
        return s.elapsed_time(e)

    t_kernel = _median_ms(lambda: compiled(src, dst), event, elapsed)
    t_ref = _median_ms(lambda: dst.copy_(src), event, elapsed)
    return ok, t_kernel, t_ref, "torch copy_"


def _run_cupy(cupy, shape):
    from .. import compiler

    n = shape[0] * shape[1]
    src = cupy.random.randint(0, 1 << 16, size=n, dtype=cupy.int32).astype(cupy.uint16).reshape(shape)  # bf16 bits
    dst = cupy.zeros_like(src)
    # cupy has no bfloat16: the kernel sees the arrays as bf16 through their addresses
    s_spec = compiler.DeviceArraySpec(DTYPE, shape, address=src.data.ptr)
    d_spec = compiler.DeviceArraySpec(DTYPE, shape, address=dst.data.ptr)
    compiled, _, _ = compile_demo_kernel(s_spec, d_spec)
    compiled(s_spec, d_spec)
    cupy.cuda.runtime.deviceSynchronize()
    ok = bool((src == dst).all())
    t_kernel = _median_ms(lambda: compiled(s_spec, d_spec), cupy.cuda.Event, cupy.cuda.get_elapsed_time)
    t_ref = _median_ms(lambda: cupy.copyto(dst, src), cupy.cuda.Event, cupy.cuda.get_elapsed_time)
    return ok, t_kernel, t_ref, "cupy.copyto"


def run_on_gpu(backend: str, module: ModuleType, shape: tuple[int, int] = GPU_SHAPE,
               out: Callable[[str], object] = print) -> bool:
    """Run kernel 1 on a ``shape`` bf16 tensor through ``backend`` (torch or cupy); print its median time,
    bandwidth and check. Returns True when the output equals the input bit for bit."""
    nbytes = shape[0] * shape[1] * 2
    run_fn = _run_torch if backend == "torch" else _run_cupy
    ok, t_kernel, t_ref, ref_name = run_fn(module, shape)
    bw = 2 * nbytes / (t_kernel * 1e-3) / 1e9
    bw_ref = 2 * nbytes / (t_ref * 1e-3) / 1e9
    out(f"  copied {shape[0]}x{shape[1]} {DTYPE} ({nbytes / 2**20:.0f} MiB) with tma_copy, {TILE} tiles, "
        f"{SWIZZLE} swizzle: median {1e3 * t_kernel:.1f} us over {REPS} runs")
    out(f"  bandwidth {bw:.1f} GB/s (2 x bytes / time); {ref_name}: {bw_ref:.1f} GB/s ({bw / bw_ref:.2f}x)")
    out(f"  output == input bit-exactly: {ok}")
    return ok
