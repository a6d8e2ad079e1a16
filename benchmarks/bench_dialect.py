"""Time to build, lower and emit PTX for a module holding a TMA load/store kernel (cute_nvgpu dialect).

cold: the first compile in a fresh process (bindings import, dialect load, build, lower, PTX),
measured in a subprocess, median of several processes. warm: later compiles in the same
process and context, median of many. nvJitLink assembly to a cubin is timed apart.

Run: python benchmarks/bench_dialect.py [--runs N]
"""

import argparse
import datetime
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COLD = r"""
import time
t0 = time.perf_counter()
import mlir_dialects._backend
t1 = time.perf_counter()
from mlir_dialects.sample import build_tma_copy_module, sample_context
from mlir_dialects.pipeline import to_ptx
ctx, loc = sample_context()
with ctx, loc:
    ptx = to_ptx(build_tma_copy_module(64, 32))
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def cold(runs):
    imports, compiles = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True, check=True, cwd=ROOT)
        a, b = map(float, out.stdout.split())
        imports.append(a)
        compiles.append(b)
    return statistics.median(imports), statistics.median(compiles)


def warm(runs):
    from mlir_dialects.pipeline import lower_copy, to_cubin, to_ptx
    from mlir_dialects.sample import build_tma_copy_module, sample_context

    ctx, loc = sample_context()
    build, lowered, total, cubin = [], [], [], []
    with ctx, loc:
        for _ in range(3):
            to_ptx(build_tma_copy_module(64, 32))
        for _ in range(runs):
            t0 = time.perf_counter()
            m = build_tma_copy_module(64, 32)
            t1 = time.perf_counter()
            lower_copy(m)
            t2 = time.perf_counter()
            ptx = to_ptx(m)
            t3 = time.perf_counter()
            to_cubin(ptx)
            t4 = time.perf_counter()
            build.append(t1 - t0)
            lowered.append(t2 - t1)
            total.append((t1 - t0) + (t3 - t2))
            cubin.append(t4 - t3)
    med = statistics.median
    return med(build), med(lowered), med(total), med(cubin)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--cold-runs", type=int, default=5)
    args = ap.parse_args()
    import mlir_dialects._backend as backend

    print(f"# cute_nvgpu: build + lower + PTX of a TMA load/store kernel — {datetime.date.today()}")
    print(f"# CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; Python {platform.python_version()};"
          f" bindings: {backend.BINDINGS}")
    imp, first = cold(args.cold_runs)
    b, lo, tot, cub = warm(args.runs)
    rows = [
        (f"cold: import the bindings (median of {args.cold_runs})", imp),
        ("cold: first build+lower+PTX in the process", first),
        ("warm: build the module", b),
        ("warm: verify + lower (a copy)", lo),
        (f"warm: build + to_ptx (median of {args.runs})", tot),
        ("warm: to_cubin (nvJitLink, sm_90a)", cub),
    ]
    print(f"| {'stage':<46} | {'ms':>8} |")
    print(f"|{'-' * 48}|{'-' * 10}|")
    for label, sec in rows:
        print(f"| {label:<46} | {sec * 1e3:8.2f} |")
    print(f"warm build+PTX target <= 50 ms: {'met' if tot <= 0.050 else 'MISSED'}")


if __name__ == "__main__":
    main()
