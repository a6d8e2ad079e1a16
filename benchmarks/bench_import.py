"""Import times, each in fresh processes: ``cute_py`` (target 0.1 s, no MLIR or CUDA), ``mlir_dialects._backend``
(the MLIR bindings through the light numba-cuda-mlir package), ``cute_py.compiler``, and the first nvJitLink call.

Run: python benchmarks/bench_import.py [--runs N]      (median and min over N processes; default 7)
"""

import argparse
import datetime
import os
import pathlib
import platform
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

CASES = {
    "import cute_py": "import cute_py",
    "import mlir_dialects._backend": "import mlir_dialects._backend",
    "import cute_py.compiler": "import cute_py.compiler",
    "first nvJitLink call": "from mlir_dialects import assembler; assembler.load_nvjitlink()",
}

_TIMED = "import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"


def _once(stmt):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run([sys.executable, "-c", _TIMED.format(stmt=stmt)], env=env, capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return float(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    print(f"# {platform.node()} {platform.machine()} Python {platform.python_version()} "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {args.runs} processes each")
    print(f"{'what':32} {'median ms':>10} {'min ms':>8}")
    for name, stmt in CASES.items():
        try:
            times = [_once(stmt) for _ in range(args.runs)]
        except subprocess.CalledProcessError as e:
            print(f"{name:32} failed: {e.stderr.strip().splitlines()[-1] if e.stderr else e}")
            continue
        print(f"{name:32} {1e3 * statistics.median(times):10.1f} {1e3 * min(times):8.1f}")


if __name__ == "__main__":
    main()
