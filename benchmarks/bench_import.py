"""Import times, each in fresh processes: ``cute_py`` (target 0.1 s, no MLIR or CUDA), ``mlir_dialects._backend``
(the MLIR bindings through the light numba-cuda-mlir package), ``cute_py.compiler``, and the first nvJitLink call.

Run: python benchmarks/bench_import.py [--runs N] [--before DIR] [--only-cute-py]
(median and min over N processes; default 7).  ``--before DIR`` also times ``import cute_py`` from another checkout
(the folder holding its cute_py package), its processes alternating with this checkout's.
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


def _once(stmt, root=ROOT):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run([sys.executable, "-c", _TIMED.format(stmt=stmt)], env=env, capture_output=True, text=True,
                         check=True, cwd=root)
    return float(out.stdout.strip().splitlines()[-1])


def _row(name, times):
    print(f"{name:32} {1e3 * statistics.median(times):10.1f} {1e3 * min(times):8.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--before", metavar="DIR", help="also time `import cute_py` from the checkout in DIR")
    ap.add_argument("--only-cute-py", action="store_true", help="time `import cute_py` only")
    args = ap.parse_args()
    print(f"# {platform.node()} {platform.machine()} Python {platform.python_version()} "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {args.runs} processes each")
    print(f"{'what':32} {'median ms':>10} {'min ms':>8}")
    if args.before:
        stmt = CASES["import cute_py"]
        before, after = [], []
        for _ in range(args.runs):  # alternating, so that both see the same load
            before.append(_once(stmt, pathlib.Path(args.before).resolve()))
            after.append(_once(stmt))
        _row("import cute_py (before)", before)
        _row("import cute_py", after)
    for name, stmt in CASES.items():
        if (args.before and name == "import cute_py") or (args.only_cute_py and name != "import cute_py"):
            continue
        try:
            times = [_once(stmt) for _ in range(args.runs)]
        except subprocess.CalledProcessError as e:
            print(f"{name:32} failed: {e.stderr.strip().splitlines()[-1] if e.stderr else e}")
            continue
        _row(name, times)


if __name__ == "__main__":
    main()
