"""Import + first compile in a fresh process: cute_py against the NVIDIA CuTe DSL, side by side.

The kernel is kernel 1 (one TMA tile per CTA, gmem -> smem -> gmem) for a 4096x4096 fp16 tensor in 64x64 tiles:
``cute_py.demo.kernel.tma_copy`` and the same kernel written with the DSL (``_dsl_tma_copy.py``). Each sample is a
new process that imports the package, builds the argument descriptions (``DeviceArraySpec`` / the DSL's fake
tensors: no GPU needed) and compiles to a cubin for sm_90a into an empty disk cache; it reports the milliseconds
from before its first import to after the compile. cute_py and the DSL processes alternate (the order flips each
round), so both see the same machine state. One unmeasured round first writes each package's bytecode caches.
Target: cute_py's median at most 0.6x the DSL's.

Run: python benchmarks/bench_first_compile.py [--runs N] [--dsl-python PYTHON]

The DSL is needed for the comparison only: ``pip install nvidia-cutlass-dsl==4.8.1`` (into this environment, or
one named with ``--dsl-python``; give that one numpy too, as the ``jit`` extra gives this one, or the DSL's import is
measured without the numpy import that both packages' MLIR bindings make).
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
HERE = pathlib.Path(__file__).resolve().parent
TARGET = 0.6

_CUTE_PY = r"""
import json, sys, time
t0 = time.perf_counter()
import cute_py as cute
from cute_py.demo.kernel import tma_copy
t1 = time.perf_counter()
a = cute.compiler.DeviceArraySpec("Float16", (4096, 4096))
compiled = cute.compile(tma_copy, a, a, (64, 64), "none")
t2 = time.perf_counter()
assert compiled.cubin[:4] == b"\x7fELF" and cute.compiler.stats["compiles"] == 1, cute.compiler.stats
print(json.dumps({"import": 1e3 * (t1 - t0), "compile": 1e3 * (t2 - t1), "total": 1e3 * (t2 - t0),
                  "version": "0.1.0", "numpy": "numpy" in sys.modules}))
"""

_DSL = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import make_fake_compact_tensor
t1 = time.perf_counter()
from _dsl_tma_copy import build
copy = build(cutlass, cute, cpasync, cutlass.Float16, (64, 64))
a = make_fake_compact_tensor(cutlass.Float16, (4096, 4096), stride_order=(1, 0), assumed_align=16)
b = make_fake_compact_tensor(cutlass.Float16, (4096, 4096), stride_order=(1, 0), assumed_align=16)
compiled = cute.compile(copy, a, b)
t2 = time.perf_counter()
print(json.dumps({"import": 1e3 * (t1 - t0), "compile": 1e3 * (t2 - t1), "total": 1e3 * (t2 - t0),
                  "version": getattr(cutlass, "__version__", "?"), "numpy": "numpy" in sys.modules}))
"""


def _env(cache):
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # both packages run from their bytecode caches, as installed ones do
    path = os.pathsep.join(p for p in (str(ROOT), str(HERE), os.environ.get("PYTHONPATH")) if p)
    env.update(PYTHONPATH=path, CUTE_PY_CACHE_DIR=cache, CUTE_DSL_CACHE_DIR=cache, CUTE_DSL_ARCH="sm_90a")
    return env


def _sample(python, code):
    """One fresh process into an empty cache: its JSON line."""
    with tempfile.TemporaryDirectory(prefix="first_compile_") as cache:
        out = subprocess.run([python, "-c", code], env=_env(cache), capture_output=True, text=True, timeout=600,
                             cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"rc {out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _summary(samples, key):
    values = [s[key] for s in samples]
    return statistics.median(values), min(values)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9, help="processes of each package (default 9)")
    ap.add_argument("--dsl-python", default=sys.executable, help="the interpreter with nvidia-cutlass-dsl")
    args = ap.parse_args()
    print(f"# {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {args.runs} interleaved processes each")
    cases = {"cute_py": (sys.executable, _CUTE_PY), "CuTe DSL": (args.dsl_python, _DSL)}
    samples = {name: [] for name in cases}
    failed = {}
    for name, (python, code) in cases.items():  # the unmeasured round: bytecode caches
        try:
            _sample(python, code)
        except Exception as e:  # noqa: BLE001 - reported below
            failed[name] = str(e)
    for r in range(args.runs):
        for name in (list(cases) if r % 2 == 0 else list(reversed(cases))):
            if name not in failed:
                samples[name].append(_sample(*cases[name]))
    print(f"{'':10} {'import ms':>16} {'compile ms':>16} {'total ms':>16}   (median / min)")
    for name, rows in samples.items():
        if name in failed:
            print(f"{name:10} not measured: {failed[name]}")
            continue
        cols = "".join(f"{m:9.1f} /{lo:6.1f}" for m, lo in (_summary(rows, k) for k in ("import", "compile", "total")))
        print(f"{name:10} {cols}   version {rows[0]['version']}, numpy imported: {rows[0]['numpy']}")
    if not failed:
        ratio = _summary(samples["cute_py"], "total")[0] / _summary(samples["CuTe DSL"], "total")[0]
        verdict = "met" if ratio <= TARGET else "not met"
        print(f"cute_py / CuTe DSL, import + first compile (medians): {ratio:.2f}x   target <= {TARGET}x: {verdict}")


if __name__ == "__main__":
    main()
