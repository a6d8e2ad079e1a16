"""The compile section of ``bench_copy.py``: cute_py's compile latency, and the CuTe DSL's when it is installed."""

import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback



from _copy_common import _err


# -- compile latency ------------------------------------------------------------------------------


def _new_process_compile(cache_dir):
    code = (
        "import time, os; t0 = time.perf_counter(); import cute_py as cute; from examples import tma_copy; "
        "a = cute.compiler.DeviceArraySpec('Float32', (4096, 4096)); t1 = time.perf_counter(); "
        "c = cute.compile(tma_copy, a, a, (128, 64), 'none'); t2 = time.perf_counter(); "
        "print(f'{(t2 - t1) * 1e3:.2f} {(t2 - t0) * 1e3:.2f} {cute.compiler.stats}')"
    )
    env = dict(os.environ, CUTE_PY_CACHE_DIR=cache_dir, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         timeout=300).stdout
    compile_ms, total_ms, stats = out.strip().splitlines()[-1].split(" ", 2)
    return float(compile_ms), float(total_ms), stats.strip()


def compile_latency(out):
    cache = tempfile.mkdtemp(prefix="cute_py_bench_cache_")
    os.environ["CUTE_PY_CACHE_DIR"] = cache
    t0 = time.perf_counter()
    import cute_py as cute
    from examples import tma_copy

    a = cute.compiler.DeviceArraySpec("Float32", (4096, 4096))
    t1 = time.perf_counter()
    cute.compile(tma_copy, a, a, (128, 64), "none")
    cold = (time.perf_counter() - t1) * 1e3
    os.environ["CUTE_PY_CACHE_DIR"] = ""
    b = cute.compiler.DeviceArraySpec("BFloat16", (4096, 4096))
    t2 = time.perf_counter()
    cute.compile(tma_copy, b, b, (128, 64), "128B")
    second = (time.perf_counter() - t2) * 1e3
    os.environ["CUTE_PY_CACHE_DIR"] = cache
    out(f"compile, cold in-process (incl. MLIR import)  {cold:9.1f} ms   (import cute_py {1e3 * (t1 - t0):.1f} ms)")
    out(f"compile, second (other specialisation)        {second:9.1f} ms")
    try:
        warm = [_new_process_compile(cache) for _ in range(5)]
        warm_ms = statistics.median(w[0] for w in warm)
        warm_total = statistics.median(w[1] for w in warm)
        out(f"compile, new process, warm disk cache         {warm_ms:9.2f} ms   (process incl. import: "
            f"{warm_total:.1f} ms; stats {warm[-1][2]})")
    except Exception as e:
        out(f"compile, new process, warm disk cache         failed: {_err(e)}")
    cute_dsl_compile(out)


def cute_dsl_compile(out):
    """``cute.compile`` of the NVIDIA CuTe DSL (package nvidia-cutlass-dsl) for a TMA copy like kernel 1's (one
    128x64 fp32 tile per CTA): the first compile in this process (cold) and another specialisation (warm).
    A failure is printed as such."""
    t0 = time.perf_counter()
    try:
        import cutlass
        import cutlass.cute as cd
        from cutlass.cute.nvgpu import cpasync as dcp
        from cutlass.cute.runtime import from_dlpack
    except Exception:
        out("CuTe DSL: not installed (reference figure from its docs: 96 ms cold)")
        return
    import_ms = (time.perf_counter() - t0) * 1e3
    version = getattr(cutlass, "__version__", "?")
    try:
        times = _cute_dsl_times(cutlass, cd, dcp, from_dlpack)
    except Exception as e:
        out(f"CuTe DSL {version}: installed, compile of the TMA copy failed ({_err(e)}); reference figure from its "
            f"docs: 96 ms cold")
        traceback.print_exc(file=sys.stderr)
        return
    out(f"CuTe DSL {version}: cute.compile, cold in-process {times[0]:9.1f} ms   (import {import_ms:.1f} ms; "
        f"docs' figure: 96 ms cold)")
    out(f"CuTe DSL {version}: cute.compile, second          {times[1]:9.1f} ms")


def _cute_dsl_times(cutlass, cd, dcp, from_dlpack):
    """Milliseconds of two ``cute.compile`` calls (two shapes) of a CuTe DSL TMA copy kernel."""
    import torch

    from _dsl_tma_copy import build

    dsl_copy = build(cutlass, cd, dcp, cutlass.Float32, (128, 64))
    times = []
    for shape in ((4096, 4096), (2048, 8192)):
        x = torch.empty(shape, device="cuda", dtype=torch.float32)
        y = torch.empty_like(x)
        t = time.perf_counter()
        cd.compile(dsl_copy, from_dlpack(x, assumed_align=16), from_dlpack(y, assumed_align=16))
        times.append((time.perf_counter() - t) * 1e3)
    return times
