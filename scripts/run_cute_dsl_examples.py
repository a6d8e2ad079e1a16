"""Run the CuTe DSL's public examples on cute_py, with only their imports changed.

Usage::

    python scripts/run_cute_dsl_examples.py PATH/TO/cutlass [--only NAME,...] [--notebooks] [--compile-only]
                                            [--json FILE] [--timeout S] [--bench]

``PATH/TO/cutlass`` is a checkout of NVIDIA/cutlass (nothing of it is copied into this repository). Each program
under ``examples/python/CuTeDSL/cute`` is copied to a temporary folder with its ``cutlass`` imports rewritten by
the porting guide's table (``docs/porting-from-cute-dsl.md``) and run as a script with the arguments below; its
own check against torch decides whether it passes. Notebooks (``--notebooks``) run cell by cell in one namespace,
with the same rewrite; shell (``!``) and magic (``%``) lines are left out.

``--compile-only`` runs without a GPU: torch keeps its tensors on the host, and the first launch of a compiled
function stops the program once its arguments were accepted (the result says ``compiled``).

``--bench`` also times ``hopper/dense_gemm`` at 8192^3 fp16 (k-major A and B, fp32 accumulation) against
``torch.matmul`` (cuBLAS) in the same process, with CUDA events around 30 calls of each, alternating the order
three times (best of three), after checking its result against cuBLAS's.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

EXAMPLES = "examples/python/CuTeDSL/cute"

# name -> (path under EXAMPLES, arguments of the checked run)
PROGRAMS = {
    "ampere/elementwise_add": ("ampere/kernel/elementwise/elementwise_add.py", []),
    "ampere/elementwise_apply": ("ampere/kernel/elementwise/elementwise_apply.py", []),
    "ampere/sgemm": ("ampere/kernel/dense_gemm/sgemm.py", []),
    "ampere/tensorop_gemm": ("ampere/kernel/dense_gemm/tensorop_gemm.py", []),
    "ampere/flash_attention_v2": ("ampere/kernel/attention/flash_attention_v2.py",
                                  ["--batch_size", "2", "--seqlen_q", "1024", "--seqlen_k", "1024"]),
    "hopper/dense_gemm": ("hopper/kernel/dense_gemm/dense_gemm.py", []),
    "hopper/dense_gemm_persistent": ("hopper/kernel/dense_gemm/dense_gemm_persistent.py", []),
}
NOTEBOOKS = ["cute_layout_algebra", "tensor", "tensorssa", "print", "composed_layout"]

_FROM = re.compile(r"^(\s*)from\s+cutlass((?:\.\w+)*)\s+import\s+(.*)$")
_IMPORT = re.compile(r"^(\s*)import\s+cutlass((?:\.\w+)*)(\s+as\s+(\w+))?\s*(#.*)?$")


def _module(dotted: str) -> str:
    """``cutlass`` + ``.cute.testing`` -> ``cute_py.testing``: the ``cute`` step of ``cutlass.cute`` has no
    counterpart (both are ``cute_py``)."""
    parts = [p for p in dotted.split(".") if p]
    if parts[:1] == ["cute"]:
        parts = parts[1:]
    return ".".join(["cute_py"] + parts)


def port_imports(source: str) -> str:
    """Rewrite the ``cutlass`` imports of a program by the porting guide's table; nothing else changes."""
    out = []
    for line in source.split("\n"):
        m = _FROM.match(line)
        if m:
            line = f"{m.group(1)}from {_module(m.group(2))} import {m.group(3)}"
        else:
            m = _IMPORT.match(line)
            if m:
                indent, dotted, alias = m.group(1), m.group(2), m.group(4)
                if alias is None:  # `import cutlass` / `import cutlass.cute`: the name bound is `cutlass`
                    line = f"{indent}import cute_py as cutlass"
                else:
                    line = f"{indent}import {_module(dotted)} as {alias}"
        out.append(line)
    return "\n".join(out)


_SHIM = '''
"""Compile-only mode: torch keeps tensors on the host; the first launch stops the program."""
import os, sys

if os.environ.get("CUTE_DSL_EXAMPLES_COMPILE_ONLY"):
    class CompiledOnly(BaseException):
        pass

    def _hook(tp, value, tb, _old=sys.excepthook):
        if tp is CompiledOnly:
            print("COMPILED-ONLY: a compiled function accepted its arguments; stopping before the launch")
            sys.stdout.flush()
            os._exit(0)
        _old(tp, value, tb)

    sys.excepthook = _hook
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and not os.environ.get("CUTE_DSL_EXAMPLES_NOTEBOOK"):  # notebooks keep host tensors
        class _Stream:
            cuda_stream = 0
        torch.cuda.is_available = lambda: True
        torch.cuda.current_stream = lambda *a, **k: _Stream()
        torch.cuda.default_stream = lambda *a, **k: _Stream()
        torch.cuda.Stream = lambda *a, **k: _Stream()
        torch.cuda.synchronize = lambda *a, **k: None
        torch.Tensor.cuda = lambda self, *a, **k: self
        _to = torch.Tensor.to
        def _to_host(self, *a, **k):
            a = tuple("cpu" if (isinstance(x, str) and x.startswith("cuda")) else x for x in a)
            if isinstance(k.get("device"), str) and k["device"].startswith("cuda"):
                k["device"] = "cpu"
            return _to(self, *a, **k)
        torch.Tensor.to = _to_host
        for _name in ("empty", "zeros", "ones", "randn", "rand", "randint", "full", "arange", "tensor",
                      "empty_strided", "zeros_like", "ones_like", "empty_like", "randn_like", "full_like"):
            _f = getattr(torch, _name)
            def _wrap(*a, _f=_f, **k):
                d = k.get("device")
                if d is not None and str(d).startswith("cuda"):
                    k["device"] = "cpu"
                return _f(*a, **k)
            setattr(torch, _name, _wrap)
        torch.Tensor.is_cuda = property(lambda self: True)
    # torch's host tensors stand in for device arrays (numpy's stay host arrays): from_dlpack over one is a
    # global-memory tensor
    from cute_py.tensor import dlpack as _dlpack
    _info = _dlpack.dlpack_info

    def _as_device(x, *a, **k):
        if os.environ.get("CUTE_DSL_EXAMPLES_NOTEBOOK"):
            return _info(x, *a, **k)
        got = _info(x, *a, **k) if not type(x).__module__.startswith("torch") else _info(x, None)
        if type(x).__module__.startswith("torch") and got[4] == _dlpack.CPU:
            got = _dlpack.DLPackInfo(tuple(got[:4]) + (_dlpack.CUDA,))
        return got

    _dlpack.dlpack_info = _as_device
    # no driver to ask: an H100 SXM's limits (132 multiprocessors, 50 MB of L2)
    from cute_py.utils import hardware_info as _hw

    class _H100:
        def __init__(self, device_id=0):
            self.device_id = device_id

        def get_device_multiprocessor_count(self):
            return 132

        def get_l2_cache_size_in_bytes(self):
            return 50 * 1024 * 1024

        def get_max_active_clusters(self, cluster_size, stream=None):
            return 132 // cluster_size

    _hw.HardwareInfo = _H100
    from cute_py.compiler.runtime import compiled as _compiled

    def _stop(self, *a, **k):
        raise CompiledOnly()

    _compiled.Compiled._call = _stop
'''


def _env(compile_only: bool, shim_dir: Path) -> dict:
    env = dict(os.environ)
    repo = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([str(shim_dir), repo] + [p for p in [env.get("PYTHONPATH")] if p])
    if compile_only:
        env["CUTE_DSL_EXAMPLES_COMPILE_ONLY"] = "1"
    return env


def run_program(root: Path, name: str, work: Path, env: dict, timeout: int, extra: list[str]) -> dict:
    rel, args = PROGRAMS[name]
    src = (root / EXAMPLES / rel).read_text()
    dst = work / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(port_imports(src))
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, str(dst), *args, *extra], env=env, capture_output=True, text=True,
                           timeout=timeout, cwd=str(dst.parent))
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = "timeout", (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else str(e)
    status = ("compiled" if "COMPILED-ONLY" in out else
              "passed" if rc == 0 else "failed")
    return {"program": name, "status": status, "rc": rc, "seconds": round(time.time() - t0, 1),
            "tail": out[-3000:]}


_NB_RUNNER = '''
import json, sys, traceback, io, contextlib
sys.path.insert(0, {scripts!r})
from run_cute_dsl_examples import port_imports
cells = json.load(open({path!r}))["cells"]
ns = {{"__name__": "__main__"}}
results = []
for i, cell in enumerate(cells):
    if cell["cell_type"] != "code":
        continue
    src = "".join(cell["source"])
    src = "\\n".join(l for l in src.split("\\n") if not l.lstrip().startswith(("!", "%")))
    if not src.strip():
        continue
    try:
        code = compile(port_imports(src), f"<cell {{i}}>", "exec")
        exec(code, ns)
        results.append({{"cell": i, "ok": True}})
    except BaseException as e:
        if type(e).__name__ == "CompiledOnly":
            results.append({{"cell": i, "ok": True, "compiled_only": True}})
            continue
        results.append({{"cell": i, "ok": False, "error": "".join(traceback.format_exception(e))[-1500:]}})
    sys.stdout.flush()
print("NOTEBOOK-RESULTS " + json.dumps(results))
'''


def run_notebook(root: Path, name: str, work: Path, env: dict, timeout: int) -> dict:
    path = root / EXAMPLES / "notebooks" / f"{name}.ipynb"
    runner = work / f"nb_{name}.py"
    runner.write_text(_NB_RUNNER.format(scripts=str(Path(__file__).resolve().parent), path=str(path)))
    env = dict(env, CUTE_DSL_EXAMPLES_NOTEBOOK="1")
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, str(runner)], env=env, capture_output=True, text=True,
                           timeout=timeout, cwd=str(work))
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        out = str(e)
    m = re.search(r"NOTEBOOK-RESULTS (.*)", out)
    cells = json.loads(m.group(1)) if m else []
    bad = [c for c in cells if not c["ok"]]
    return {"program": f"notebooks/{name}", "status": "passed" if m and not bad else "failed",
            "cells": len(cells), "cells_ok": len(cells) - len(bad), "seconds": round(time.time() - t0, 1),
            "failures": bad, "tail": "" if m else out[-3000:]}


_BENCH = """
import sys, torch, cuda.bindings.driver as cuda
sys.argv = ["dense_gemm.py"]
sys.path.insert(0, {folder!r})
import dense_gemm as ex
from cute_py.runtime import from_dlpack
m = n = k = 8192
tile, cluster = {tile!r}, {cluster!r}
a = torch.randn(1, m, k, device="cuda", dtype=torch.float16).permute(1, 2, 0)  # (m, k, l), k-major
b = torch.randn(1, n, k, device="cuda", dtype=torch.float16).permute(1, 2, 0)
c = torch.empty(1, m, n, device="cuda", dtype=torch.float16).permute(1, 2, 0)
mA, mB, mC = (from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=1) for t in (a, b, c))
stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
gemm = ex.HopperWgmmaGemmKernel(ex.cutlass.Float32, tile, cluster)
compiled = ex.cute.compile(gemm, mA, mB, mC, stream)
compiled(mA, mB, mC, stream)
torch.cuda.synchronize()
ref = torch.matmul(a[:, :, 0], b[:, :, 0].t())
err = (c[:, :, 0].float() - ref.float()).abs().max().item()
print("CHECK max abs error", err, "scale", ref.float().abs().max().item())
x, y = a[:, :, 0], b[:, :, 0].t()

def time(fn, reps=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(reps):
        fn()
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1) * 1000 / reps

runs = {{"cute_py": lambda: compiled(mA, mB, mC, stream), "cublas": lambda: torch.matmul(x, y)}}
best = {{}}
for order in (("cute_py", "cublas"), ("cublas", "cute_py"), ("cute_py", "cublas")):
    for who in order:
        us = time(runs[who])
        best[who] = min(us, best.get(who, us))
import datetime
print("DEVICE", torch.cuda.get_device_name(), datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
print("BENCH", best, "check", err)
"""


def bench_dense_gemm(root: Path, work: Path, env: dict, timeout: int, tile=(128, 256), cluster=(1, 1)) -> dict:
    rel = PROGRAMS["hopper/dense_gemm"][0]
    folder = work / Path(rel).parent
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dense_gemm.py").write_text(port_imports((root / EXAMPLES / rel).read_text()))
    script = work / "bench_dense_gemm.py"
    script.write_text(_BENCH.format(folder=str(folder), tile=tuple(tile), cluster=tuple(cluster)))
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=timeout)
    out = p.stdout + p.stderr
    m = re.search(r"BENCH (\{.*\}) check (\S+)", out)
    if not m:
        return {"program": "bench hopper/dense_gemm 8192^3 fp16", "status": "failed", "tail": out[-3000:]}
    best = json.loads(m.group(1).replace("'", '"'))
    dev = re.search(r"DEVICE (.*)", out)
    flops = 2 * 8192 ** 3
    tf = {w: flops / (us * 1e-6) / 1e12 for w, us in best.items()}
    return {"program": f"bench hopper/dense_gemm 8192^3 fp16 tile {tuple(tile)} cluster {tuple(cluster)}",
            "status": "measured", "device": dev.group(1) if dev else "?",
            "us": {w: round(v, 1) for w, v in best.items()},
            "tflops": {w: round(v, 1) for w, v in tf.items()}, "max_abs_error": float(m.group(2)),
            "ratio_vs_cublas": round(tf["cute_py"] / tf["cublas"], 3)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cutlass", type=Path, help="a checkout of NVIDIA/cutlass")
    ap.add_argument("--only", default="", help="comma-separated program or notebook names")
    ap.add_argument("--notebooks", action="store_true", help="run the notebooks too")
    ap.add_argument("--programs", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--compile-only", action="store_true", help="no GPU: stop at the first launch")
    ap.add_argument("--bench", action="store_true", help="time hopper/dense_gemm at 8192^3 against cuBLAS")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--json", type=Path, help="write the results here")
    a = ap.parse_args(argv)
    root = a.cutlass.resolve()
    if not (root / EXAMPLES).is_dir():
        ap.error(f"{root / EXAMPLES} is not a folder: give the root of a cutlass checkout")
    only = {s for s in a.only.split(",") if s}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "shim").mkdir()
        (work / "shim" / "sitecustomize.py").write_text(textwrap.dedent(_SHIM))
        env = _env(a.compile_only, work / "shim")
        if a.programs:
            for name in PROGRAMS:
                if not only or name in only:
                    r = run_program(root, name, work, env, a.timeout, [])
                    results.append(r)
                    print(f"{r['status']:>9}  {name}  ({r['seconds']} s)", flush=True)
                    if r["status"] == "failed":
                        print(textwrap.indent(r["tail"][-1500:], "    | "))
        if a.notebooks:
            for name in NOTEBOOKS:
                if not only or f"notebooks/{name}" in only or name in only:
                    r = run_notebook(root, name, work, env, a.timeout)
                    results.append(r)
                    print(f"{r['status']:>9}  notebooks/{name}  {r['cells_ok']}/{r['cells']} cells "
                          f"({r['seconds']} s)", flush=True)
                    for c in r["failures"]:
                        print(f"    cell {c['cell']}:")
                        print(textwrap.indent(c["error"][-800:], "    | "))
                    if r["tail"]:
                        print(textwrap.indent(r["tail"][-1500:], "    | "))
        if a.bench:
            r = bench_dense_gemm(root, work, env, a.timeout)
            results.append(r)
            print(json.dumps(r, indent=1))
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r["status"] in ("passed", "compiled", "measured") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
