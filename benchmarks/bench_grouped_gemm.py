"""The grouped GEMM of mixtures of experts (``examples.grouped_gemm``) against ``torch._grouped_mm`` (where the
installed torch has it) and a Python loop of ``torch.mm`` per expert, case by case in one run: TFLOP/s and
ratios, every output checked against torch's fp32 product first.

Run: python benchmarks/bench_grouped_gemm.py [--reps 20] [--config tile_n=128 ...] [--cases 8x4096 128x128 ...]

Each case ``ExM`` is E experts of M rows each (``ExM~`` : sizes drawn at random around M, the same total, some
groups empty), N = 768, K = 2048 (``--n``, ``--k``), bf16 A (sum M, K) and B (E, N, K), bf16 C; ``offs`` int32
cumulative ends on the device. cute_py's columns are the contiguous variant in each ``--config`` (keyword
arguments of ``grouped_gemm``), then the masked variant (A (E, max_M, K)) with the default options.
Timed by ``_rounds.interleaved``: ``--rounds`` rounds that time every column once, in rotated and reversed orders,
each over at least ``--reps`` back-to-back calls and 5 ms between two CUDA events; TFLOP/s are each column's median
over its rounds, the ratios the best cute_py column's, the median of the rounds' ratios (``_rounds.paired``). The
header gives the device, the date and the SM clock (nvidia-smi) before and after.
"""

import argparse
import datetime
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _rounds import faster, interleaved  # noqa: E402  (the GEMM's timing)
from bench_gemm import _config  # noqa: E402  (the GEMM's option columns)

DEFAULT_CASES = ["8x4096", "128x128", "128x128~", "32x512~"]


def _clock():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu",
                              "--format=csv,noheader", "-i", "0"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "?"
    except Exception as e:      # no nvidia-smi
        return f"? ({type(e).__name__})"


def _sizes(case, seed):
    import torch

    e, m = case.rstrip("~").split("x")
    e, m = int(e), int(m)
    if not case.endswith("~"):
        return [m] * e
    g = torch.Generator().manual_seed(seed)
    w = torch.rand(e, generator=g) * (torch.rand(e, generator=g) > 0.1)      # about a tenth of the groups empty
    sizes = (w / w.sum() * e * m).floor().long()
    sizes[0] += e * m - int(sizes.sum())
    return sizes.tolist()


def _one_case(case, n, k, configs, reps, rounds):
    import torch

    from examples.grouped_gemm import grouped_gemm, grouped_gemm_masked

    sizes = _sizes(case, seed=len(case))
    e, total = len(sizes), sum(sizes)
    a = torch.randn(total, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(e, n, k, device="cuda").to(torch.bfloat16)
    c = torch.empty(total, n, device="cuda", dtype=torch.bfloat16)
    offs = torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(torch.int32).cuda()
    bounds = [0] + torch.tensor(sizes).cumsum(0).tolist()
    ref = torch.empty(total, n, device="cuda")
    for i in range(e):
        ref[bounds[i]:bounds[i + 1]] = a[bounds[i]:bounds[i + 1]].float() @ b[i].float().t()
    tol = dict(rtol=2e-2, atol=2e-2 * k ** 0.5)
    flops = 2 * total * n * k
    ok = True
    runs = []
    for kw in configs:
        c.fill_(float("nan"))
        grouped_gemm(a, b, c, offs, **kw)
        torch.cuda.synchronize()
        ok &= bool(torch.allclose(c.float(), ref, **tol))
        runs.append(("cute_py " + (",".join(f"{x}={y}" for x, y in kw.items()) or "default"),
                     lambda kw=kw: grouped_gemm(a, b, c, offs, **kw)))
    max_m = max(sizes)
    am = torch.zeros(e, max_m, k, device="cuda", dtype=torch.bfloat16)
    for i in range(e):
        am[i, :sizes[i]] = a[bounds[i]:bounds[i + 1]]
    cm = torch.full((e, max_m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    mm = torch.tensor(sizes, dtype=torch.int32).cuda()
    grouped_gemm_masked(am, b, cm, mm)
    torch.cuda.synchronize()
    for i in range(e):
        ok &= bool(torch.allclose(cm[i, :sizes[i]].float(), ref[bounds[i]:bounds[i + 1]], **tol))
    runs.append(("cute_py masked", lambda: grouped_gemm_masked(am, b, cm, mm)))
    bt = b.transpose(-2, -1)             # (E, K, N), column-major per expert, as torch._grouped_mm takes B
    if hasattr(torch, "_grouped_mm"):
        out = torch._grouped_mm(a, bt, offs=offs)
        torch.cuda.synchronize()
        ok &= bool(torch.allclose(out.float(), ref, **tol))
        runs.append(("torch._grouped_mm", lambda: torch._grouped_mm(a, bt, offs=offs)))
    else:
        runs.append(("torch._grouped_mm", None))

    def loop():
        for i in range(e):
            torch.mm(a[bounds[i]:bounds[i + 1]], bt[i], out=c[bounds[i]:bounds[i + 1]])

    runs.append(("torch.mm loop", loop))
    live = [(name, fn) for name, fn in runs if fn is not None]
    samples = dict(zip([name for name, _ in live], interleaved([fn for _, fn in live], reps, rounds)))
    tflops = {name: flops / statistics.median(samples[name]) / 1e12 if name in samples else float("nan")
              for name, _ in runs}
    return [name for name, _ in runs], tflops, samples, ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=DEFAULT_CASES)
    ap.add_argument("--n", type=int, default=768)
    ap.add_argument("--k", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=6, help="rounds of every column, alternating their order")
    ap.add_argument("--config", nargs="*", default=["", "tile_n=128"])
    args = ap.parse_args()
    import torch

    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name} ({props.multi_processor_count} SMs), torch {torch.__version__}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, bf16 A/B/C, fp32 accumulation, "
          f"N={args.n}, K={args.k}; SM clock, max, power, temperature before: {_clock()}")
    configs = [_config(c) for c in args.config]
    header = None
    for case in args.cases:
        names, tflops, samples, ok = _one_case(case, args.n, args.k, configs, args.reps, args.rounds)
        if header is None:
            header = names
            print(f"{'case':>10} " + " ".join(f"{x[:24]:>24}" for x in names) + "   best/_grouped_mm  best/loop  check")
            print("# TFLOP/s (medians of the rounds); the ratios take the best cute_py column, round by round")
        best = max((x for x in tflops if x.startswith("cute_py")), key=tflops.__getitem__)
        vs_grouped, vs_loop = (faster(samples, best, other) for other in ("torch._grouped_mm", "torch.mm loop"))
        print(f"{case:>10} " + " ".join(f"{tflops[x]:24.1f}" for x in names)
              + f"   {vs_grouped:16.3f} {vs_loop:10.3f}  {'ok' if ok else 'MISMATCH'}", flush=True)
        torch.cuda.empty_cache()
    print(f"# SM clock, max, power, temperature after: {_clock()}")


if __name__ == "__main__":
    main()
