"""cute_py copy kernels on a GPU, side by side with torch ``copy_`` and Triton: bandwidth, compile latency, launch overhead.

    python benchmarks/bench_copy.py [--sections compile,bandwidth,triton,cpasync,launch] [--quick] [--reps 50] [--out FILE]

Sections (all by default; each one, and each configuration in it, fails soft: the error is printed in its row):

- compile: compile latency of ``tma_copy`` (trace -> PTX -> cubin): cold in this process (first compile, MLIR
  bindings imported inside the timing), a second compile (another specialisation, warm imports, disk cache
  off), a new process with a warm disk cache; and ``cute.compile`` of the NVIDIA CuTe DSL when it is installed;
- bandwidth: one 1 GiB fp32 random source for every row of this section and the next two; median of ``--reps``
  timed reps (CUDA events, one launch between two events, after warm-up), every output verified bit-exactly;
  bytes moved = 2 x 1 GiB (read + write). torch ``copy_`` (the ceiling), kernel 1 (``tma_copy``, one tile per
  CTA) and kernel 2 (``tma_copy_pipelined``: persistent, pipelined);
- triton: Triton tiled copies through TMA descriptors (``triton_copy.py``), on the same source;
- cpasync: kernel 3 (``cp_async_copy``, cp.async through shared memory), on the same source, plus a small
  tensor with partial edge tiles;
- launch: host time per launch of a one-CTA copy through the compiled object and the jit function, vs raw
  ``cuLaunchKernel`` of the same cubin through cuda-python, and Triton's copy kernel launched on one block.

Each bandwidth row also gives ``b2b``: the median over batches of 10 back-to-back launches between two events
(the host's launch latency, included once per rep in the main figure, is then mostly hidden). A summary
compares the best of each family after the bandwidth rows. ``--quick`` runs only the configurations that were
best in earlier runs (RESULTS.md).
"""

import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(1, HERE)

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


# -- compile latency ------------------------------------------------------------------------------


def _new_process_compile(cache_dir):
    code = (
        "import time, os; t0 = time.perf_counter(); import cute_py as cute; from cute_py.jit.examples import tma_copy; "
        "a = cute.jit.DeviceArraySpec('Float32', (4096, 4096)); t1 = time.perf_counter(); "
        "c = cute.compile(tma_copy, a, a, (128, 64), 'none'); t2 = time.perf_counter(); "
        "print(f'{(t2 - t1) * 1e3:.2f} {(t2 - t0) * 1e3:.2f} {cute.jit.stats}')"
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
    from cute_py.jit.examples import tma_copy

    a = cute.jit.DeviceArraySpec("Float32", (4096, 4096))
    t1 = time.perf_counter()
    cute.compile(tma_copy, a, a, (128, 64), "none")
    cold = (time.perf_counter() - t1) * 1e3
    os.environ["CUTE_PY_CACHE_DIR"] = ""
    b = cute.jit.DeviceArraySpec("BFloat16", (4096, 4096))
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
    Not run on a machine with the DSL yet: a failure is printed as such."""
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

    tile = (128, 64)
    nbytes = tile[0] * tile[1] * 4

    @cd.kernel
    def dsl_copy_kernel(load_atom: cd.CopyAtom, load_t: cd.Tensor, store_atom: cd.CopyAtom, store_t: cd.Tensor,
                        smem_layout: cutlass.Constexpr):
        bx, by, _ = cd.arch.block_idx()
        smem = cutlass.utils.SmemAllocator()
        s_tile = smem.allocate_tensor(cutlass.Float32, smem_layout, 128)
        bar = smem.allocate_array(cutlass.Int64, 1)
        s_grouped = cd.group_modes(s_tile, 0, 2)
        tAsA, tAgA = dcp.tma_partition(load_atom, 0, cd.make_layout(1), s_grouped,
                                       cd.group_modes(cd.local_tile(load_t, tile, (bx, by)), 0, 2))
        tBsB, tBgB = dcp.tma_partition(store_atom, 0, cd.make_layout(1), s_grouped,
                                       cd.group_modes(cd.local_tile(store_t, tile, (bx, by)), 0, 2))
        with cd.arch.elect_one():
            cd.arch.mbarrier_init(bar, 1)
            cd.arch.mbarrier_init_fence()
            cd.arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
            cd.copy(load_atom, tAgA, tAsA, tma_bar_ptr=bar)
            cd.arch.mbarrier_wait(bar, 0)
            cd.copy(store_atom, tBsB, tBgB)
            cd.arch.cp_async_bulk_commit_group()
            cd.arch.cp_async_bulk_wait_group(0, read=True)

    @cd.jit
    def dsl_copy(src: cd.Tensor, dst: cd.Tensor):
        smem_layout = cd.make_layout(tile, stride=(tile[1], 1))
        la, lt = dcp.make_tiled_tma_atom(dcp.CopyBulkTensorTileG2SOp(), src, smem_layout, tile)
        sa, st = dcp.make_tiled_tma_atom(dcp.CopyBulkTensorTileS2GOp(), dst, smem_layout, tile)
        grid = (cd.ceil_div(src.shape[0], tile[0]), cd.ceil_div(src.shape[1], tile[1]), 1)
        dsl_copy_kernel(la, lt, sa, st, smem_layout).launch(grid=grid, block=(32, 1, 1), smem=nbytes + 1024)

    times = []
    for shape in ((4096, 4096), (2048, 8192)):
        x = torch.empty(shape, device="cuda", dtype=torch.float32)
        y = torch.empty_like(x)
        t = time.perf_counter()
        cd.compile(dsl_copy, from_dlpack(x, assumed_align=16), from_dlpack(y, assumed_align=16))
        times.append((time.perf_counter() - t) * 1e3)
    return times


# -- bandwidth: shared state and timing -----------------------------------------------------------


class Bench:
    """The 1 GiB source, the timing helpers, the ceiling and every bandwidth result of the run."""

    def __init__(self, out, reps, quick):
        import torch

        self.torch, self.out, self.reps, self.quick = torch, out, reps, quick
        os.environ["CUTE_PY_CACHE_DIR"] = tempfile.mkdtemp(prefix="cute_py_bench_cache_")
        self.rows = NBYTES // 4 // COLS
        self.src = torch.rand((self.rows, COLS), device="cuda", dtype=torch.float32)
        self.results = []  # dicts: family, label, bw, b2b, ok, canonical
        self.ceiling = self.ceiling_b2b = None

    def timed(self, fn):
        """Median seconds of one launch between two CUDA events (``reps`` reps after 5 warm-up calls)."""
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

    def timed_b2b(self, fn, batch=B2B_BATCH):
        """Median seconds per launch over batches of ``batch`` back-to-back launches between two events."""
        torch = self.torch
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(max(5, self.reps // batch)):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(batch):
                fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1e-3 / batch)
        return statistics.median(times)

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
        t2 = self.timed_b2b(fn)
        bw, b2b = 2 * NBYTES / t / 1e9, 2 * NBYTES / t2 / 1e9
        canonical = s.shape[1] * s.element_size() == COLS * 4
        self.results.append(dict(family=family, label=label, bw=bw, b2b=b2b, ok=ok, canonical=canonical))
        self.out(f"{label} {bw:9.1f} GB/s   {bw / self.ceiling:.3f} of ceiling   b2b {b2b:7.1f} "
                 f"({b2b / self.ceiling_b2b:.3f})   verified={ok}{extra}")
        return bw if ok else None

    def measure_ceiling(self, again=False):
        torch = self.torch
        dst = torch.empty_like(self.src)
        t = self.timed(lambda: dst.copy_(self.src))
        ok = torch.equal(dst, self.src)
        t2 = self.timed_b2b(lambda: dst.copy_(self.src))
        bw, b2b = 2 * NBYTES / t / 1e9, 2 * NBYTES / t2 / 1e9
        if not again:
            self.ceiling, self.ceiling_b2b = bw, b2b
            self.out(f"torch copy_ (ceiling), fp32 1 GiB            {bw:9.1f} GB/s   {t * 1e3:.3f} ms   "
                     f"b2b {b2b:7.1f}   verified={ok}")
        else:
            self.out(f"torch copy_ again (drift check)              {bw:9.1f} GB/s   {bw / self.ceiling:.3f} of the "
                     f"first   b2b {b2b:7.1f}   verified={ok}")


# -- bandwidth: cute_py kernels 1 and 2 -----------------------------------------------------------

# kernel 1: (dtype, tile, swizzle[, columns of the 2-D view])
KERNEL1 = [("Float32", (128, 64), "none"), ("Float32", (128, 128), "none"), ("Float32", (256, 64), "none"),
           ("Float32", (64, 64), "none"), ("Float32", (128, 32), "128B"), ("Float32", (256, 32), "128B"),
           ("BFloat16", (128, 64), "128B"), ("BFloat16", (256, 64), "128B"), ("BFloat16", (128, 128), "none"),
           ("Float32", (64, 256), "none", 256), ("Float32", (256, 32), "128B", 32)]
KERNEL1_QUICK = [("Float32", (128, 64), "none"), ("Float32", (64, 256), "none", 256),
                 ("Float32", (256, 32), "128B", 32)]

# kernel 2: (dtype, tile, swizzle, stages, lag, CTAs per SM or None for the default[, columns of the 2-D view,
# L2 hint]); the view is the same contiguous 1 GiB seen as (bytes / row, columns): with as many columns as the tile,
# each tile is one contiguous range of gmem
PIPELINED = [
    ("Float32", (64, 128), "none", 4, 1, None), ("Float32", (64, 128), "none", 4, 2, None),
    ("Float32", (64, 128), "none", 3, 1, 2), ("Float32", (64, 128), "none", 6, 2, 1),
    ("Float32", (32, 256), "none", 4, 1, None), ("Float32", (32, 256), "none", 6, 2, 1),
    ("Float32", (32, 256), "none", 3, 1, 2), ("Float32", (16, 256), "none", 4, 1, 2),
    ("Float32", (16, 256), "none", 4, 2, 3), ("Float32", (64, 256), "none", 3, 1, 1),
    ("Float32", (128, 64), "none", 4, 1, None), ("Float32", (128, 128), "none", 3, 1, 1),
    ("Float32", (64, 64), "none", 2, 1, 4), ("Float32", (64, 64), "none", 4, 2, 2),
    ("Float32", (128, 32), "128B", 4, 1, None), ("Float32", (128, 32), "128B", 6, 2, 2),
    ("Float32", (64, 128), "128B", 4, 1, None), ("Float32", (256, 32), "128B", 3, 1, 2),
    ("BFloat16", (128, 64), "128B", 4, 1, None), ("BFloat16", (64, 256), "128B", 4, 1, None),
    ("BFloat16", (64, 256), "none", 4, 1, None), ("BFloat16", (32, 256), "none", 4, 1, 2),
    ("Float32", (64, 256), "none", 3, 1, 1, 8192, "evict_first"), ("Float32", (32, 256), "none", 6, 2, 1, 8192,
                                                                    "evict_first"),
    ("Float32", (64, 256), "none", 3, 1, 1, 256), ("Float32", (32, 256), "none", 6, 2, 1, 256),
    ("Float32", (32, 256), "none", 4, 1, 2, 256), ("Float32", (48, 256), "none", 4, 1, 1, 256),
    ("Float32", (64, 256), "none", 3, 1, 1, 256, "evict_first"), ("Float32", (32, 256), "none", 6, 2, 1, 256,
                                                                   "evict_first"),
    ("Float32", (256, 32), "128B", 4, 1, 1, 32), ("Float32", (256, 32), "128B", 6, 2, 1, 32),
    ("Float32", (128, 32), "128B", 6, 2, 2, 32), ("BFloat16", (256, 64), "128B", 4, 1, 1, 64),
    ("Float32", (256, 32), "128B", 6, 2, 1, 32, "evict_first"),
]
PIPELINED_QUICK = [
    ("Float32", (64, 256), "none", 3, 1, 1, 8192, "evict_first"), ("Float32", (64, 256), "none", 3, 1, 1),
    ("Float32", (32, 256), "none", 4, 1, None), ("Float32", (256, 32), "128B", 4, 1, 1, 32),
]


def _tdt(name):
    import torch

    return {"Float32": torch.float32, "BFloat16": torch.bfloat16}[name]


def _smem(compiled):
    smem = getattr(compiled, "smem", None) or {}
    return next(iter(smem.values()), 0)


def bandwidth(bench):
    import cute_py as cute
    from cute_py.jit.examples import tma_copy

    torch, out = bench.torch, bench.out
    for name, tile, sw, *cols in (KERNEL1_QUICK if bench.quick else KERNEL1):
        try:
            s = bench.view(_tdt(name), cols[0] if cols else None)
            d = torch.empty_like(s)
            compiled = cute.compile(tma_copy, s, d, tile, sw)
            label = f"TMA copy {name:8s} tile {tile[0]:3d}x{tile[1]:<3d} {sw:4s} smem {_smem(compiled):6d}   "
            bench.measure("cute_py TMA", label, lambda: compiled(s, d), s, d,
                          f"  view {tuple(s.shape)}" if cols else "")
        except Exception as e:
            out(f"TMA copy {name} tile {tile} {sw}: failed ({_err(e)})")
    pipelined(bench)


def pipelined(bench):
    import cute_py as cute
    from cute_py.jit.examples import tma_copy_pipelined

    torch, out = bench.torch, bench.out
    best = {}
    for name, tile, sw, stages, lag, per_sm, *more in (PIPELINED_QUICK if bench.quick else PIPELINED):
        cols, hint = (more + [None, None])[:2]
        try:
            s = bench.view(_tdt(name), cols)
            d = torch.empty_like(s)
            try:
                compiled = cute.compile(tma_copy_pipelined, s, d, tile, sw, stages, lag, per_sm, None, hint)
            except Exception as e:  # a configuration the hardware rules reject: report it and go on
                out(f"TMA pipelined {name} tile {tile} {sw} stages {stages}: not compiled ({_err(e)})")
                continue
            grid = compiled.launches[0].grid[0]
            extra = (f"  view {tuple(s.shape)}" if cols is not None else "") + (f"  L2 {hint}" if hint else "")
            label = (f"TMA pipelined {name:8s} tile {tile[0]:3d}x{tile[1]:<3d} {sw:4s} st {stages} lag {lag} "
                     f"grid {grid:4d} smem {_smem(compiled):6d}")
            bw = bench.measure("cute_py TMA", label, lambda: compiled(s, d), s, d, extra)
        except Exception as e:
            out(f"TMA pipelined {name} tile {tile} {sw} stages {stages} lag {lag}: failed ({_err(e)})")
            continue
        if bw and bw > best.get(sw, (0,))[0]:
            best[sw] = (bw, name, tile, stages, lag, grid, extra)
    for sw, (bw, name, tile, stages, lag, grid, extra) in sorted(best.items()):
        out(f"best kernel 2, swizzle {sw:4s}: {bw:.1f} GB/s = {bw / bench.ceiling:.3f} of ceiling ({name} tile "
            f"{tile[0]}x{tile[1]}, {stages} stages, lag {lag}, {grid} CTAs{extra})")


# -- bandwidth: Triton ----------------------------------------------------------------------------

# (dtype, (BM, BN), persistent, num_stages, programs per SM, num_warps[, columns of the 2-D view])
TRITON = [
    ("Float32", (64, 128), False, 1, 1, 4), ("Float32", (128, 128), False, 1, 1, 4),
    ("Float32", (128, 64), False, 1, 1, 4), ("Float32", (64, 64), False, 1, 1, 4),
    ("Float32", (32, 256), False, 1, 1, 4), ("Float32", (128, 128), False, 1, 1, 8),
    ("BFloat16", (128, 128), False, 1, 1, 4), ("BFloat16", (64, 256), False, 1, 1, 4),
    ("BFloat16", (128, 64), False, 1, 1, 4),
    ("Float32", (64, 256), False, 1, 1, 4, 256), ("Float32", (256, 32), False, 1, 1, 4, 32),
    ("BFloat16", (256, 64), False, 1, 1, 4, 64),
    ("Float32", (64, 128), True, 3, 1, 4), ("Float32", (64, 128), True, 2, 2, 4),
    ("Float32", (64, 128), True, 3, 2, 4), ("Float32", (64, 128), True, 3, 3, 4),
    ("Float32", (128, 64), True, 3, 2, 4), ("Float32", (32, 256), True, 3, 2, 4),
    ("Float32", (32, 256), True, 3, 3, 4), ("Float32", (32, 256), True, 2, 4, 4),
    ("BFloat16", (64, 256), True, 3, 2, 4), ("Float32", (64, 256), True, 3, 2, 4, 256),
]
TRITON_QUICK = [
    ("Float32", (64, 128), False, 1, 1, 4), ("Float32", (32, 256), False, 1, 1, 4),
    ("Float32", (128, 128), False, 1, 1, 4), ("BFloat16", (64, 256), False, 1, 1, 4),
    ("Float32", (256, 32), False, 1, 1, 4, 32), ("Float32", (32, 256), True, 3, 2, 4),
]
# in-kernel descriptors: a subset (each program also creates its two descriptors)
TRITON_DEVICE = [
    ("Float32", (64, 128), False, 1, 1, 4), ("Float32", (128, 128), False, 1, 1, 4),
    ("Float32", (32, 256), False, 1, 1, 4), ("BFloat16", (128, 128), False, 1, 1, 4),
    ("Float32", (64, 128), True, 3, 2, 4), ("Float32", (32, 256), True, 3, 3, 4),
]
TRITON_DEVICE_QUICK = [("Float32", (128, 128), False, 1, 1, 4), ("Float32", (32, 256), True, 3, 2, 4)]


def triton_bandwidth(bench):
    torch, out = bench.torch, bench.out
    try:
        import triton_copy as TC
    except Exception as e:
        out(f"Triton TMA copy: unavailable ({_err(e)})")
        return
    apis, why = TC.probe()
    if not apis:
        out(f"Triton TMA copy: unavailable ({why})")
        return
    out(f"Triton {TC.triton_version()}: descriptor APIs {', '.join(apis)}")
    best = {}
    for api in apis:
        if api == "device":
            configs = TRITON_DEVICE_QUICK if bench.quick else TRITON_DEVICE
        else:
            configs = TRITON_QUICK if bench.quick else TRITON
        for name, block, persistent, stages, per_sm, warps, *cols in configs:
            what = f"Triton {api} {name} block {block} {'persistent st ' + str(stages) if persistent else 'tiles'}"
            try:
                s = bench.view(_tdt(name), cols[0] if cols else None)
                d = torch.empty_like(s)
                c = TC.TritonCopy(api, s, d, block, persistent=persistent, num_warps=warps, num_stages=stages,
                                  programs_per_sm=per_sm)
                t0 = time.perf_counter()
                c()  # the first call compiles (or loads from Triton's cache)
                torch.cuda.synchronize()
                first = (time.perf_counter() - t0) * 1e3
                extra = (f"  view {tuple(s.shape)}" if cols else "") + f"  first call {first:.0f} ms"
                desc = c.describe()
                bw = bench.measure("Triton TMA", f"Triton {desc:52s}", c, s, d, extra)
            except Exception as e:
                out(f"{what}: failed ({_err(e)})")
                continue
            if bw and bw > best.get(api, (0,))[0]:
                best[api] = (bw, desc + (f"  view {tuple(s.shape)}" if cols else ""))
    for api, (bw, desc) in best.items():
        out(f"best Triton, {api} descriptors: {bw:.1f} GB/s = {bw / bench.ceiling:.3f} of ceiling ({desc.strip()})")


# -- bandwidth: cute_py kernel 3 (cp.async) --------------------------------------------------------

# (dtype, tile, threads)
CP_ASYNC = [("Float32", (64, 128), 128), ("Float32", (128, 128), 256), ("Float32", (32, 256), 128),
            ("Float32", (64, 256), 256), ("Float32", (128, 64), 128), ("BFloat16", (64, 256), 128)]
CP_ASYNC_QUICK = CP_ASYNC[:3]


def cp_async_bandwidth(bench):
    torch, out = bench.torch, bench.out
    try:
        import cute_py as cute
        from cute_py.jit import examples
    except Exception as e:
        out(f"cp.async copy: unavailable ({_err(e)})")
        return
    fn = getattr(examples, "cp_async_copy", None)
    if fn is None:
        out("cp.async copy: unavailable (cute_py.jit.examples has no cp_async_copy)")
        return
    for name, tile, threads in (CP_ASYNC_QUICK if bench.quick else CP_ASYNC):
        what = f"cp.async copy {name:8s} tile {tile[0]:3d}x{tile[1]:<3d} threads {threads:3d}"
        try:
            s = bench.view(_tdt(name))
            d = torch.empty_like(s)
            t0 = time.perf_counter()
            compiled = cute.compile(fn, s, d, tile, threads)
            compile_ms = (time.perf_counter() - t0) * 1e3
            try:
                grid = compiled.launches[0].grid
                grid = grid[0] * grid[1] * grid[2]
            except Exception:
                grid = "?"
            edge = _cp_async_edge(fn, _tdt(name), tile, threads)
            bench.measure("cute_py cp.async", f"{what} grid {grid} smem {_smem(compiled):6d}", lambda: compiled(s, d),
                          s, d, f"  edge tiles {edge}  compile {compile_ms:.0f} ms")
        except Exception as e:
            out(f"{what}: failed ({_err(e)})")


def _cp_async_edge(fn, tdt, tile, threads):
    """Copy a tensor whose shape is no multiple of the tile (partial edge tiles) through the jit function."""
    import torch

    try:
        src = torch.randn((1000, 1000) if tdt == torch.float32 else (777, 1000), device="cuda").to(tdt)
        dst = torch.full_like(src, -7.0)
        fn(src, dst, tile, threads)
        torch.cuda.synchronize()
        return "ok" if torch.equal(dst.view(torch.uint8), src.view(torch.uint8)) else "MISMATCH"
    except Exception as e:
        return f"failed ({_err(e)})"


# -- bandwidth summary ----------------------------------------------------------------------------


def _best(results, family, canonical=None, key="bw"):
    rows = [r for r in results if r["family"] == family and r["ok"] and (canonical is None or r["canonical"] == canonical)]
    return max(rows, key=lambda r: r[key]) if rows else None


def summary(bench):
    out, c, cb = bench.out, bench.ceiling, bench.ceiling_b2b
    res = bench.results
    out(f"summary (GB/s; ceiling torch copy_ {c:.1f}, b2b {cb:.1f}; 'rows of 32 KB' = the ({bench.rows}, {COLS}) "
        f"fp32 layout, same bytes in bf16)")
    for fam in ("cute_py TMA", "Triton TMA", "cute_py cp.async"):
        for canonical, where in ((None, "any layout   "), (True, "rows of 32 KB")):
            r = _best(res, fam, canonical)
            if r is None:
                continue
            rb = _best(res, fam, canonical, key="b2b")
            out(f"  best {fam:16s} {where}  {r['bw']:7.1f} = {r['bw'] / c:.3f} of ceiling   [{r['label'].strip()}]   "
                f"b2b best {rb['b2b']:7.1f} = {rb['b2b'] / cb:.3f}")
    k, t, a = _best(res, "cute_py TMA"), _best(res, "Triton TMA"), _best(res, "cute_py cp.async")
    if k:
        out(f"  cute_py TMA best / ceiling:       {k['bw'] / c:.3f}   target >= {TARGETS['vs_ceiling']}: "
            f"{_verdict(k['bw'] / c, TARGETS['vs_ceiling'])}")
    if k and t:
        kb, tb = _best(res, "cute_py TMA", key="b2b"), _best(res, "Triton TMA", key="b2b")
        out(f"  cute_py TMA best / Triton best:   {k['bw'] / t['bw']:.3f}   target >= {TARGETS['vs_triton']}: "
            f"{_verdict(k['bw'] / t['bw'], TARGETS['vs_triton'])}   (b2b: {kb['b2b'] / tb['b2b']:.3f})")
        k32, t32 = _best(res, "cute_py TMA", True), _best(res, "Triton TMA", True)
        if k32 and t32:
            out(f"  same, rows of 32 KB only:         {k32['bw'] / t32['bw']:.3f}")
    if a:
        out(f"  cute_py cp.async best / ceiling:  {a['bw'] / c:.3f}   target >= {TARGETS['cp_async']}: "
            f"{_verdict(a['bw'] / c, TARGETS['cp_async'])}")


# -- launch overhead ------------------------------------------------------------------------------


def _per_launch(fn, n=2000):
    """Median host microseconds per call over 5 samples of ``n`` calls (no synchronisation inside a sample)."""
    import torch

    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t) / n * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples)


def launch_overhead(out):
    import ctypes

    import torch

    import cute_py as cute
    from cute_py.jit import launch as L
    from cute_py.jit.examples import tma_copy

    src = torch.rand((128, 64), device="cuda")
    dst = torch.empty_like(src)
    t_raw = None
    try:
        compiled = cute.compile(tma_copy, src, dst, (128, 64), "none")
        compiled(src, dst)
        torch.cuda.synchronize()
        d = L.driver()
        func = compiled._funcs["tma_copy_kernel_0"]
        block = compiled._blocks[0]
        smem = compiled.smem["tma_copy_kernel_0"]
        raw_params = ctypes.addressof(block.array)

        def raw():
            d.cuLaunchKernel(func, 1, 1, 1, 32, 1, 1, smem, 0, raw_params, 0)

        t_raw = _per_launch(raw)
        out(f"launch, raw cuLaunchKernel (cuda-python)      {t_raw:9.2f} us")
    except Exception as e:
        out(f"launch, raw cuLaunchKernel (cuda-python)      failed ({_err(e)})")
        compiled = None

    def ratio(t):
        return f"   {t / t_raw:.2f}x raw" if t_raw else ""

    try:
        if compiled is None:
            raise RuntimeError("no compiled kernel")
        t_compiled = _per_launch(lambda: compiled(src, dst))
        out(f"launch, Compiled(src, dst)                    {t_compiled:9.2f} us{ratio(t_compiled)}"
            + (f"   target <= {TARGETS['launch']}x: {_verdict(t_compiled / t_raw, TARGETS['launch'], False)}"
               if t_raw else ""))
        t_jit = _per_launch(lambda: tma_copy(src, dst, (128, 64), "none"))
        ok = torch.equal(dst, src)
        out(f"launch, jit function tma_copy(src, dst, ...)  {t_jit:9.2f} us{ratio(t_jit)}   verified={ok}")
        # the host-side work of a call alone: the driver call replaced by a no-op returning success
        real, ok_code = compiled._launch_kernel, compiled._ok
        compiled._launch_kernel = lambda *a: (ok_code,)
        try:
            t_host = _per_launch(lambda: compiled(src, dst))
        finally:
            compiled._launch_kernel = real
        out(f"launch, Compiled host work only (no driver)   {t_host:9.2f} us")
    except Exception as e:
        out(f"launch, cute_py Compiled / jit function       failed ({_err(e)})")
    triton_launch(out, ratio)


def triton_launch(out, ratio):
    """Triton's copy kernel on a 128x64 fp32 tensor, one 128x64 block (one program), each descriptor API."""
    import torch

    try:
        import triton_copy as TC
    except Exception as e:
        out(f"launch, Triton copy kernel                    unavailable ({_err(e)})")
        return
    apis, why = TC.probe()
    if not apis:
        out(f"launch, Triton copy kernel                    unavailable ({why})")
        return
    for api in apis:
        try:
            src = torch.rand((128, 64), device="cuda")
            dst = torch.zeros_like(src)
            c = TC.TritonCopy(api, src, dst, (128, 64))
            c()
            torch.cuda.synchronize()
            t = _per_launch(c)
            ok = torch.equal(dst, src)
            out(f"launch, Triton copy ({api + ' descriptors)':24s} {t:9.2f} us{ratio(t)}   verified={ok}")
        except Exception as e:
            out(f"launch, Triton copy ({api} descriptors)        failed ({_err(e)})")


# -- driver ---------------------------------------------------------------------------------------


def _run(out, name, fn, *args):
    t0 = time.perf_counter()
    try:
        fn(*args)
    except Exception as e:
        out(f"{name}: FAILED ({_err(e)})")
        traceback.print_exc(file=sys.stderr)
    return time.perf_counter() - t0


def parse_sections(text):
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in SECTIONS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown section(s) {', '.join(bad)}; choose among {', '.join(SECTIONS)}")
    return [s for s in SECTIONS if s in names]  # always in the table's order


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[3:]))
    p.add_argument("--sections", type=parse_sections, default=list(SECTIONS),
                   help=f"comma-separated list among {','.join(SECTIONS)} (default: all)")
    p.add_argument("--quick", action="store_true", help="only the best-known configurations of each kernel")
    p.add_argument("--reps", type=int, default=50, help="timed reps per bandwidth row (median; default 50)")
    p.add_argument("--out", metavar="FILE", help="also write the table to FILE")
    args = p.parse_args(argv)
    if args.reps < 1:
        p.error("--reps must be >= 1")
    out = Out(args.out)
    spent = {}
    try:
        header(out, args, args.sections)
        if "compile" in args.sections:
            spent["compile"] = _run(out, "compile", compile_latency, out)
        bw_sections = [s for s in ("bandwidth", "triton", "cpasync") if s in args.sections]
        if bw_sections:
            t0 = time.perf_counter()
            bench = None
            try:
                bench = Bench(out, args.reps, args.quick)
                bench.measure_ceiling()
            except Exception as e:
                out(f"bandwidth setup (1 GiB source, torch copy_ ceiling): FAILED ({_err(e)})")
                traceback.print_exc(file=sys.stderr)
            if bench is not None and bench.ceiling:
                for name, fn in (("bandwidth", bandwidth), ("triton", triton_bandwidth),
                                 ("cpasync", cp_async_bandwidth)):
                    if name in bw_sections:
                        spent[name] = _run(out, name, fn, bench)
                _run(out, "ceiling re-measure", bench.measure_ceiling, True)
                _run(out, "summary", summary, bench)
            del bench
            _free_gpu_memory()
            spent["bandwidth setup/summary"] = time.perf_counter() - t0 - sum(spent.get(s, 0.0) for s in bw_sections)
        if "launch" in args.sections:
            spent["launch"] = _run(out, "launch", launch_overhead, out)
        out("section wall times: " + ", ".join(f"{k} {v:.1f} s" for k, v in spent.items()))
    finally:
        out.close()


def _free_gpu_memory():
    try:
        import gc

        import torch

        gc.collect()
        torch.cuda.empty_cache()
    except Exception:
        pass


if __name__ == "__main__":
    main()
