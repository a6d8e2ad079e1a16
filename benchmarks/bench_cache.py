"""The compile cache of ``cute.compile(tma_copy, ...)`` (kernel 1), each case in fresh processes:

- cold: an empty disk cache (the host and kernel traces, with their dependency recording, MLIR, PTX, cubin);
- warm: a new process finding the entry: the host trace, the lookup, the checks of every file of the entry and
  of its dependency manifest; no kernel trace (target: <= 10 ms);
- warm parts: where a warm load spends its time.

Run: python benchmarks/bench_cache.py [--runs N]      (median and min over N processes; default 7)
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]

_COMPILE = r"""
import json, time
import cute_py as cute
from examples import tma_copy
a = cute.compiler.DeviceArraySpec("Float32", (256, 512))
t = time.perf_counter()
cute.compile(tma_copy, a, a, (128, 64), "none")
print(json.dumps({"ms": 1e3 * (time.perf_counter() - t), **cute.compiler.stats}))
"""

_PARTS = r"""
import importlib, json, time
import cute_py as cute
from examples import tma_copy
from cute_py.compiler.runtime import cache
from cute_py.compiler.runtime import deps
K = importlib.import_module("cute_py.compiler.frontend.kernel")
a = cute.compiler.DeviceArraySpec("Float32", (256, 512))
T = time.perf_counter
t = [T()]
host, key, sources = tma_copy._convert((a, a, (128, 64), "none")); t.append(T())
rec = deps.Recorder()
with K._HostTrace() as ht:
    with rec:
        tma_copy.fn(*host)
t.append(T())
cache.library_fingerprint(); t.append(T())
dkey = K._disk_key(tma_copy, host, key, ht.launches); t.append(T())
entry = cache.read_entry(dkey); t.append(T())
assert deps.check(entry[0]["deps"]) is None; t.append(T())
names = ["arguments", "host trace (recorded)", "library fingerprint", "key", "read + checksums", "manifest check"]
print(json.dumps({n: 1e3 * (b - a) for n, a, b in zip(names, t, t[1:])}))
"""


def _run(code, cache_dir):
    env = dict(os.environ, CUTE_PY_CACHE_DIR=cache_dir,
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    print(f"# {platform.node()} {platform.machine()} Python {platform.python_version()} "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {args.runs} processes each")
    cold, warm, parts = [], [], {}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as d:
            first = _run(_COMPILE, d)
            assert first["compiles"] == 1
            cold.append(first["ms"])
            again = _run(_COMPILE, d)
            assert again["disk_hits"] == 1, again
            warm.append(again["ms"])
            for k, v in _run(_PARTS, d).items():
                parts.setdefault(k, []).append(v)
    print(f"{'case':32} {'median ms':>10} {'min ms':>8}")
    for name, times in [("cold compile", cold), ("warm disk cache", warm)] + [(f"  {k}", v) for k, v in parts.items()]:
        print(f"{name:32} {statistics.median(times):10.2f} {min(times):8.2f}")


if __name__ == "__main__":
    main()
