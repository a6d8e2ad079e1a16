"""Shared by ``bench_copy.py`` and its sections: output, the header line, targets, and the bandwidth timing."""

import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(1, HERE)

from _rounds import event_time  # noqa: E402

SECTIONS = ("compile", "bandwidth", "triton", "cpasync", "launch")
NBYTES = 1 << 30
COLS = 8192  # the fp32 source is (NBYTES / 4 / COLS, COLS): rows of 32 KB
B2B_BATCH = 10
TARGETS = {"vs_ceiling": 0.98, "vs_triton": 1.02, "cp_async": 0.95, "launch": 1.3}


class Out:
    """The table: every line goes to stdout at once and, with ``--out``, to the file (flushed per line)."""

    def __init__(self, path=None):
        self.f = open(path, "w") if path else None

    def __call__(self, line=""):
        print(line, flush=True)
        if self.f:
            self.f.write(line + "\n")
            self.f.flush()

    def close(self):
        if self.f:
            self.f.close()


def _err(e):
    """One line for an exception."""
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0][:300] if msg else ''}"


def _verdict(value, target, higher=True):
    ok = value >= target if higher else value <= target
    return "met" if ok else "not met"


# -- header ---------------------------------------------------------------------------------------


def _driver_versions():
    parts = []
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=20)
        v = r.stdout.strip().splitlines()
        if r.returncode == 0 and v:
            parts.append(v[0].strip())
    except Exception:  # no nvidia-smi: the CUDA version of the driver API below still says something
        pass
    try:
        from cuda.bindings import driver as d

        d.cuInit(0)
        err, v = d.cuDriverGetVersion()
        if err == d.CUresult.CUDA_SUCCESS:
            parts.append(f"CUDA {v // 1000}.{v % 1000 // 10}")
    except Exception as e:
        parts.append(f"cuDriverGetVersion unavailable ({_err(e)})")
    return " ".join(parts) if parts else "unknown"


def header(out, args, sections):
    try:
        import torch

        dev = torch.cuda.get_device_name(0)
        props = torch.cuda.get_device_properties(0)
        dev += f" (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs)"
        torch_v = f"{torch.__version__} (CUDA {torch.version.cuda})"
    except Exception as e:
        dev, torch_v = f"unknown ({_err(e)})", "not importable"
    # read without importing: the compile section times the first import of cute_py, and Triton is imported
    # only by the sections that use it
    try:
        from importlib.metadata import version

        triton_v = version("triton")
    except Exception:
        triton_v = "not installed"
    try:
        with open(os.path.join(ROOT, "cute_py", "__init__.py")) as f:
            cute_v = re.search(r"^__version__ = ['\"]([^'\"]+)", f.read(), re.M).group(1)
    except Exception:
        cute_v = "?"
    now = datetime.datetime.now(datetime.timezone.utc)
    out(f"cute_py bench_copy  device: {dev}  driver: {_driver_versions()}  torch {torch_v}  triton {triton_v}  "
        f"cute_py {cute_v}  Python {platform.python_version()}  date: {now:%Y-%m-%d %H:%M UTC}  reps: {args.reps} "
        f"(median)  mode: {'quick' if args.quick else 'full'}  sections: {','.join(sections)}")


# -- bandwidth: shared state and timing -----------------------------------------------------------


class Bench:
    """The 1 GiB source, the timing helpers, the ceiling and every bandwidth result of the run."""

    def __init__(self, out, reps, quick):
        import torch

        self.torch, self.out, self.reps, self.quick = torch, out, reps, quick
        os.environ["CUTE_PY_CACHE_DIR"] = tempfile.mkdtemp(prefix="cute_py_bench_cache_")
        self.rows = NBYTES // 4 // COLS
        self.src = torch.rand((self.rows, COLS), device="cuda", dtype=torch.float32)
        self.results = []  # dicts: family, label, bw (back-to-back), sync (one launch per event pair), ok, canonical
        self.ceiling = self.ceiling_sync = None

    def timed_sync(self, fn):
        """Median seconds of one launch between two CUDA events, synchronised after each (``reps`` reps after 5
        warm-up calls): the host's launch latency is in every rep."""
        torch = self.torch
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(self.reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1e-3)
        return statistics.median(times)

    def timed(self, fn, batch=B2B_BATCH):
        """Median seconds per launch over ``reps`` batches of ``batch`` back-to-back launches between two events
        (after a warm-up batch): each launch is queued while the previous one runs, as hand-written CUDA
        benchmarks time their kernels."""
        torch = self.torch
        for _ in range(batch):
            fn()
        torch.cuda.synchronize()
        return statistics.median(event_time(torch, fn, batch) for _ in range(max(5, self.reps)))

    def view(self, tdt, cols=None):
        """The source seen as ``tdt`` (same bytes), rows of 32 KB, or ``cols`` columns of ``tdt`` when given."""
        torch = self.torch
        s = self.src if tdt == torch.float32 else self.src.view(torch.uint8).view(tdt).view(self.rows, -1)
        return s.view(-1, cols) if cols else s

    def measure(self, family, label, fn, s, d, extra=""):
        """Time ``fn`` (which copies ``s`` into ``d``), verify ``d``, print the row and record it."""
        torch = self.torch
        d.zero_()
        t = self.timed(fn)
        ok = torch.equal(d.view(torch.uint8), s.view(torch.uint8))
        t2 = self.timed_sync(fn)
        bw, sync = 2 * NBYTES / t / 1e9, 2 * NBYTES / t2 / 1e9
        canonical = s.shape[1] * s.element_size() == COLS * 4
        self.results.append(dict(family=family, label=label, bw=bw, sync=sync, ok=ok, canonical=canonical))
        self.out(f"{label} {bw:9.1f} GB/s   {bw / self.ceiling:.3f} of ceiling   sync {sync:7.1f} "
                 f"({sync / self.ceiling_sync:.3f})   verified={ok}{extra}")
        return bw if ok else None

    def measure_ceiling(self, again=False):
        torch = self.torch
        dst = torch.empty_like(self.src)
        t = self.timed(lambda: dst.copy_(self.src))
        ok = torch.equal(dst, self.src)
        t2 = self.timed_sync(lambda: dst.copy_(self.src))
        bw, sync = 2 * NBYTES / t / 1e9, 2 * NBYTES / t2 / 1e9
        if not again:
            self.ceiling, self.ceiling_sync = bw, sync
            self.out(f"torch copy_ (ceiling), fp32 1 GiB            {bw:9.1f} GB/s   {t * 1e3:.3f} ms   "
                     f"sync {sync:7.1f}   verified={ok}")
        else:
            self.out(f"torch copy_ again (drift check)              {bw:9.1f} GB/s   {bw / self.ceiling:.3f} of the "
                     f"first   sync {sync:7.1f}   verified={ok}")
