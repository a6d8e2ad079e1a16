"""Every script of ``benchmarks/`` imports without a GPU: a name one of them takes from another (a timing helper,
an option parser) that moved or went away fails here, not on the next GPU run. Only torch and Triton, which the
GPU scripts import at their top, may be missing."""

import os
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
SCRIPT = """
import importlib, sys
sys.argv = ["x"]
sys.path.insert(0, {bench!r})
for name in {names!r}:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name not in ("torch", "triton"):
            raise
    print("imported", name)
"""


def test_every_benchmark_script_imports():
    names = sorted(f[:-3] for f in os.listdir(BENCH) if f.endswith(".py"))
    assert "_rounds" in names and "bench_gemm" in names
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(bench=BENCH, names=names)], capture_output=True,
                         text=True, timeout=300, cwd=BENCH)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("imported") == len(names)
