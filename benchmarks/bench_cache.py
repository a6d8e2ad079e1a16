"""The compile cache of ``cute.compile(tma_copy, ...)`` (kernel 1) for several tile configurations (fp32 and
16-bit elements, 8 KB to 32 KB boxes, with and without the 128B swizzle), each case in fresh processes:

- cold: an empty disk cache (the host and kernel traces, with their dependency recording, MLIR, PTX, cubin);
- warm: a new process finding the entry: the host trace, the lookup, the checks of every file of the entry and
  of its dependency manifest; no kernel trace (target: <= 10 ms for every configuration);
- warm parts: where a warm load spends its time (the first configuration).

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

# (dtype, shape, tile, swizzle)
CONFIGS = [("Float32", (256, 512), (128, 64), "none"), ("Float16", (4096, 4096), (64, 64), "none"),
           ("Float16", (4096, 4096), (64, 64), "128B"), ("BFloat16", (8192, 8192), (128, 64), "128B"),
           ("Float32", (1000, 1000), (32, 64), "none")]

_COMPILE = r"""
import json, os, time
import cute_py as cute
from examples import tma_copy
dt, shape, tile, sw = json.loads(os.environ["CUTE_PY_BENCH_CONFIG"])
a = cute.compiler.DeviceArraySpec(dt, tuple(shape))
t = time.perf_counter()
cute.compile(tma_copy, a, a, tuple(tile), sw)
print(json.dumps({"ms": 1e3 * (time.perf_counter() - t), **cute.compiler.stats}))
"""

_PARTS = r"""
import importlib, json, time
import cute_py as cute
from examples import tma_copy
from cute_py.compiler.cache import store as cache
from cute_py.compiler.cache import deps
K = importlib.import_module("cute_py.compiler.host.kernel")
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


def _run(code, cache_dir, config=CONFIGS[0]):
    env = dict(os.environ, CUTE_PY_CACHE_DIR=cache_dir, CUTE_PY_BENCH_CONFIG=json.dumps(config),
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    print(f"# {platform.node()} {platform.machine()} Python {platform.python_version()} "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {args.runs} processes each")
    cold, warm, parts = {c: [] for c in CONFIGS}, {c: [] for c in CONFIGS}, {}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as d:
            for c in CONFIGS:
                first = _run(_COMPILE, d, c)
                assert first["compiles"] == 1
                cold[c].append(first["ms"])
                again = _run(_COMPILE, d, c)
                assert again["disk_hits"] == 1, again
                warm[c].append(again["ms"])
            for k, v in _run(_PARTS, d).items():
                parts.setdefault(k, []).append(v)
    print(f"{'case':58} {'median ms':>10} {'min ms':>8}")
    rows = []
    for c in CONFIGS:
        what = f"{c[0]} {c[1][0]}x{c[1][1]} tile {c[2][0]}x{c[2][1]} {c[3]}"
        rows += [(f"cold compile, {what}", cold[c]), (f"warm disk cache, {what}", warm[c])]
    rows += [(f"  {k}", v) for k, v in parts.items()]
    for name, times in rows:
        print(f"{name:58} {statistics.median(times):10.2f} {min(times):8.2f}")
    worst = max(statistics.median(v) for v in warm.values())
    print(f"worst warm median {worst:.2f} ms: target <= 10 ms {'met' if worst <= 10 else 'NOT met'}")

if __name__ == "__main__":
    main()
