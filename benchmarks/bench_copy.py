"""cute_py copy kernels on a GPU, side by side with torch ``copy_`` and Triton: bandwidth, compile latency, launch overhead.

    python benchmarks/bench_copy.py [--sections compile,bandwidth,triton,cpasync,launch] [--quick] [--reps 50] [--out FILE]

Sections (all by default; each one, and each configuration in it, fails soft: the error is printed in its row):

- compile: compile latency of ``tma_copy`` (trace -> PTX -> cubin): cold in this process (first compile, MLIR
  bindings imported inside the timing), a second compile (another specialisation, warm imports, disk cache
  off), a new process with a warm disk cache; and ``cute.compile`` of the NVIDIA CuTe DSL when it is installed;
- bandwidth: one 1 GiB fp32 random source for every row of this section and the next two; the median over
  ``--reps`` batches of 10 back-to-back launches between two CUDA events (after a warm-up batch), as hand-written
  CUDA benchmarks time a kernel; every output verified bit-exactly;
  bytes moved = 2 x 1 GiB (read + write). torch ``copy_`` (the ceiling), kernel 1 (``tma_copy``, one tile per
  CTA) and kernel 2 (``tma_copy_pipelined``: persistent, pipelined);
- triton: Triton tiled copies through TMA descriptors (``triton_copy.py``), on the same source;
- cpasync: kernel 3 (``cp_async_copy``, cp.async through shared memory), on the same source, plus a small
  tensor with partial edge tiles;
- launch: host time per launch of a one-CTA copy through the compiled object (static and run-time shapes, each
  also with its launch path made as before the native launcher, and before torch's tensor guard: the Python
  checks alone) and the jit function, vs
  raw ``cuLaunchKernel`` of the same cubin through cuda-python, and Triton's copy kernel launched on one block.

Each bandwidth row also gives ``sync``: the median of ``--reps`` single launches between two events, synchronised
after each (the host's launch latency is then in every figure). A summary
compares the best of each family after the bandwidth rows. ``--quick`` runs only the configurations that were
best in earlier runs (RESULTS.md).
"""
import argparse
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(1, HERE)

from _copy_common import Bench, COLS, Out, SECTIONS, TARGETS, _err, _verdict, header  # noqa: E402
from _copy_compile import compile_latency  # noqa: E402,F401
from _copy_launch import launch_overhead  # noqa: E402,F401



# -- bandwidth: cute_py kernels 1 and 2 -----------------------------------------------------------

# kernel 1: (dtype, tile, swizzle[, columns of the 2-D view])
KERNEL1 = [("Float32", (128, 64), "none"), ("Float32", (128, 128), "none"), ("Float32", (256, 64), "none"),
           ("Float32", (64, 64), "none"), ("Float32", (128, 32), "128B"), ("Float32", (256, 32), "128B"),
           ("BFloat16", (128, 64), "128B"), ("BFloat16", (256, 64), "128B"), ("BFloat16", (128, 128), "none"),
           ("Float32", (64, 256), "none", 256), ("Float32", (256, 32), "128B", 32)]
KERNEL1_QUICK = [("Float32", (128, 64), "none"), ("Float32", (64, 64), "none"), ("BFloat16", (64, 64), "none"),
                 ("BFloat16", (128, 128), "none"), ("Float32", (64, 256), "none", 256),
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
    from examples import tma_copy

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
    from examples import tma_copy_pipelined

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
# (dtype, tile, threads, columns of the view or None for rows of 32 KB); a view of as many columns as the
# tile makes each tile one contiguous range
CP_ASYNC = [("Float32", (64, 128), 128, None), ("Float32", (128, 128), 256, None), ("Float32", (32, 256), 128, None),
            ("Float32", (64, 256), 256, None), ("Float32", (128, 64), 128, None), ("BFloat16", (64, 256), 128, None),
            ("Float32", (32, 256), 128, 256), ("Float32", (64, 256), 256, 256), ("Float32", (128, 128), 256, 128)]
CP_ASYNC_QUICK = CP_ASYNC[:3] + CP_ASYNC[6:8] + [("BFloat16", (128, 64), 128, None)]


def cp_async_bandwidth(bench):
    torch, out = bench.torch, bench.out
    try:
        import cute_py as cute
        import examples
    except Exception as e:
        out(f"cp.async copy: unavailable ({_err(e)})")
        return
    fn = getattr(examples, "cp_async_copy", None)
    if fn is None:
        out("cp.async copy: unavailable (examples has no cp_async_copy)")
        return
    for name, tile, threads, cols in (CP_ASYNC_QUICK if bench.quick else CP_ASYNC):
        what = f"cp.async copy {name:8s} tile {tile[0]:3d}x{tile[1]:<3d} threads {threads:3d}"
        try:
            s = bench.view(_tdt(name), cols)
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
            view = f"  view {tuple(s.shape)}" if cols else ""
            bench.measure("cute_py cp.async", f"{what} grid {grid} smem {_smem(compiled):6d}", lambda: compiled(s, d),
                          s, d, f"  edge tiles {edge}  compile {compile_ms:.0f} ms{view}")
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
    out, c, cb = bench.out, bench.ceiling, bench.ceiling_sync
    res = bench.results
    out(f"summary (GB/s, back-to-back; ceiling torch copy_ {c:.1f}, synchronised {cb:.1f}; 'rows of 32 KB' = the ({bench.rows}, {COLS}) "
        f"fp32 layout, same bytes in bf16)")
    for fam in ("cute_py TMA", "Triton TMA", "cute_py cp.async"):
        for canonical, where in ((None, "any layout   "), (True, "rows of 32 KB")):
            r = _best(res, fam, canonical)
            if r is None:
                continue
            rb = _best(res, fam, canonical, key="sync")
            out(f"  best {fam:16s} {where}  {r['bw']:7.1f} = {r['bw'] / c:.3f} of ceiling   [{r['label'].strip()}]   "
                f"sync best {rb['sync']:7.1f} = {rb['sync'] / cb:.3f}")
    k, t, a = _best(res, "cute_py TMA"), _best(res, "Triton TMA"), _best(res, "cute_py cp.async")
    if k:
        out(f"  cute_py TMA best / ceiling:       {k['bw'] / c:.3f}   target >= {TARGETS['vs_ceiling']}: "
            f"{_verdict(k['bw'] / c, TARGETS['vs_ceiling'])}")
    if k and t:
        kb, tb = _best(res, "cute_py TMA", key="sync"), _best(res, "Triton TMA", key="sync")
        out(f"  cute_py TMA best / Triton best:   {k['bw'] / t['bw']:.3f}   target >= {TARGETS['vs_triton']}: "
            f"{_verdict(k['bw'] / t['bw'], TARGETS['vs_triton'])}   (sync: {kb['sync'] / tb['sync']:.3f})")
        k32, t32 = _best(res, "cute_py TMA", True), _best(res, "Triton TMA", True)
        if k32 and t32:
            out(f"  same, rows of 32 KB only:         {k32['bw'] / t32['bw']:.3f}")
    if a:
        out(f"  cute_py cp.async best / ceiling:  {a['bw'] / c:.3f}   target >= {TARGETS['cp_async']}: "
            f"{_verdict(a['bw'] / c, TARGETS['cp_async'])}")


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
