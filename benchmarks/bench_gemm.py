"""cute_py's Hopper GEMM (``examples.gemm``, kernel 13) against ``torch.matmul`` (cuBLAS) and Triton's matmul
(``triton_matmul.py``, autotuned), shape for shape, in one run: TFLOP/s and ratios, outputs checked first.

Run: python benchmarks/bench_gemm.py [--shapes 4096,4096,4096 ...] [--sweep] [--reps 20] [--c fp32|bf16]
     [--config split_k=2,tile_n=128 epilogue=vector,group_m=None ...] [--activation gelu|silu|relu|gelu_tanh]
     [--fp8 [tensor|fast|block]]

Each shape ``M,N,K`` computes ``C = A @ B^T`` with A (M, K) and B (N, K) bf16 and C in ``--c`` (bf16 by default, as
cuBLAS and Triton write it); timed by ``_rounds.interleaved``: ``--rounds`` rounds that time every column once, in
an order rotated by one column every second round and reversed in every odd one (the card is power-capped: under
sustained load its clock drops, and a column always timed first, after the idle time of a shape's checks, would run
on a cooler card), each timing ``--reps`` back-to-back launches or as many as last ``--min-ms``. TFLOP/s are each
column's median over its rounds; the ratios are the best configuration's over cuBLAS's and Triton's, the median of
the rounds' ratios (``_rounds.paired``: two timings of one round ran on one clock).
``--sweep`` adds every M, N, K in {512, 4096, 16384} with at least one above 512, plus skinny shapes. Each
``--config`` is a set of ``examples.gemm`` keyword arguments measured as its own column (default: the default
configuration); ``None``, ``True`` and ``False`` are read as Python's, and ``workspace=1`` passes a zeroed workspace
of ``workspace_elements(M, N)`` (a split of K through global memory where it fills more SMs than clusters would;
``workspace=16`` one sized for splits up to 16). ``--activation`` times the fused epilogue instead: ``C =
activation(A @ B^T + bias)`` (a bf16 bias of N) in one kernel, against torch's ``activation(addmm(bias, A, B^T))``
(cuBLAS's bias epilogue, then torch's activation kernel) in the cuBLAS column, and without Triton. ``--fp8`` makes A
and B Float8E4M3FN with per-tensor scales, against ``torch._scaled_mm`` (cuBLASLt) in the cuBLAS column, without
Triton, both promoting each k-tile's products into fp32 (their defaults); ``--fp8 fast`` leaves the sums to the
tensor cores on both sides (``fast_accum=True``, ``use_fast_accum=True``); ``--fp8 block`` scales them by blocks as
DeepSeek-V3 does (1x128 of A, 128x128 of B; checked against the blockwise sum in float64), the cuBLAS column still
``torch._scaled_mm``'s per-tensor product, and DeepGEMM's published H800 figures printed beside its shapes.
"""

DEEPGEMM = {"4096,7168,16384": 1520, "64,2112,7168": 206}     # DeepGEMM's README, H800, TFLOP/s

import argparse
import datetime
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _rounds import interleaved, paired  # noqa: E402
from bench_elementwise import timed_compile  # noqa: E402
from bench_memory_bound import _clock  # noqa: E402

DEFAULT_SHAPES = ["4096,4096,4096", "8192,8192,8192", "8192,8192,1024", "1024,8192,8192", "512,16384,4096",
                  "16384,512,4096"]
SKINNY = ["512,16384,16384", "16384,512,16384", "16384,16384,512", "512,512,16384", "512,8192,8192",
          "8192,512,8192", "16384,16384,16384"]


def sweep_shapes():
    sizes = (512, 4096, 16384)
    out = [f"{m},{n},{k}" for m in sizes for n in sizes for k in sizes if max(m, n, k) >= 4096]
    return out + [s for s in SKINNY if s not in out]


def _config(text):
    kw = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        kw[key] = {"True": True, "False": False, "None": None}.get(value, int(value) if value.lstrip("-").isdigit() else value)
    return kw


def _tensors(text, cdt, fp8=False):
    import torch

    m, n, k = (int(x) for x in text.split(","))
    ab = torch.float8_e4m3fn if fp8 else torch.bfloat16
    a = torch.randn((m, k), device="cuda").to(ab)
    b = torch.randn((n, k), device="cuda").to(ab)
    return a, b, torch.empty((m, n), device="cuda", dtype=cdt)


def _compile_jobs(jobs):
    """Compile ``(shape, C type, gemm keyword arguments, activation, fp8)`` jobs into the disk cache (a worker
    process)."""
    import torch

    from examples import gemm

    for text, cname, kw, activation, fp8 in jobs:
        a, b, c = _tensors(text, getattr(torch, cname), fp8)
        if fp8 in ("tensor", "fast"):
            one = torch.ones(1, device="cuda")
            kw = dict(kw, scale_a=one, scale_b=one, **({"fast_accum": True} if fp8 == "fast" else {}))
        elif fp8 == "block":
            (m, k), n = a.shape, b.shape[0]
            kw = dict(kw, scale_a=torch.ones(m, -(-k // 128), device="cuda"),
                      scale_b=torch.ones(-(-n // 128), -(-k // 128), device="cuda"), tile_n=128)
        if activation is not None:
            kw = dict(kw, bias=torch.empty(c.shape[1], device="cuda", dtype=torch.bfloat16), activation=activation)
        kw = _with_workspace(kw, c.shape)
        timed_compile(f"{text} {fp8 or ''} {kw}", gemm, a, b, c, **kw)
        del a, b, c
        torch.cuda.empty_cache()


def _with_workspace(kw, shape):
    """``kw`` with ``workspace=1`` replaced by a zeroed workspace for a C of ``shape`` (``workspace=S``, S > 1: for
    splits up to ``S``)."""
    splits = kw.get("workspace")
    if not splits:
        return kw
    import torch

    from examples.gemm_split import workspace_elements

    return dict(kw, workspace=torch.zeros(workspace_elements(*shape, max(splits, 8)), device="cuda"))


def _precompile(shapes, configs, cname, workers, activation, fp8):
    """Fill the disk cache with every (shape, configuration) in ``workers`` processes (compiles are CPU work)."""
    import multiprocessing

    jobs = [(s, cname, kw, activation, fp8) for s in shapes for kw in configs]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers) as pool:
        pool.map(_compile_jobs, [jobs[i::workers] for i in range(workers)])


ACTIVATIONS = {"relu": "relu", "silu": "silu", "gelu": "gelu", "gelu_tanh": "gelu"}


def _one_shape(text, configs, cdt, reps, triton_mm, activation=None, fp8=None, rounds=6, min_ms=5.0):
    """(TFLOP/s of each configuration, cuBLAS's, Triton's, whether every output matched, and the best
    configuration's speed over cuBLAS's and Triton's in the same rounds: ``_rounds.paired``)."""
    import torch
    import torch.nn.functional as F

    from examples import gemm

    m, n, k = (int(x) for x in text.split(","))
    a, b, c = _tensors(text, cdt, fp8)
    ref = a.float() @ b.float().T
    flops = 2 * m * n * k
    # (the tensor cores' own accumulation of 8-bit products keeps about 14 bits: --fp8 fast errs by up to 0.06 sqrt(K))
    tol = dict(rtol=2e-2, atol=(1e-1 if fp8 == "fast" else 2e-2) * k ** 0.5)
    fused, torch_mm = {}, (lambda: torch.matmul(a, b.T))
    if fp8:
        one, fast = torch.ones(1, device="cuda"), fp8 == "fast"
        fused = dict(scale_a=one, scale_b=one, **({"fast_accum": True} if fast else {}))
        torch_mm = (lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=cdt, use_fast_accum=fast))
    if fp8 == "block":
        kt, nt = -(-k // 128), -(-n // 128)
        sa, sb = torch.rand(m, kt, device="cuda") + 0.5, torch.rand(nt, kt, device="cuda") + 0.5
        fused = dict(scale_a=sa, scale_b=sb, tile_n=128)
        ref = torch.zeros(m, n, dtype=torch.float64, device="cuda")
        for t in range(kt):
            part = a[:, 128 * t:128 * t + 128].double() @ b[:, 128 * t:128 * t + 128].double().t()
            ref += part * sa[:, t:t + 1].double() * sb[:, t].double().repeat_interleave(128)[:n][None, :]
        ref = ref.float()
    if activation is not None:
        bias = torch.randn(n, device="cuda").to(torch.bfloat16)
        act = getattr(F, ACTIVATIONS[activation])
        extra = dict(approximate="tanh") if activation == "gelu_tanh" else {}
        ref = act(ref + bias.float(), **extra)
        fused = dict(bias=bias, activation=activation)
        torch_mm = (lambda: act(torch.addmm(bias, a, b.T), **extra))
    ok = True
    fns = []
    for kw in configs:
        kw = _with_workspace(dict(kw, **fused), (m, n))
        c.fill_(float("nan"))
        gemm(a, b, c, **kw)
        torch.cuda.synchronize()
        ok &= bool(torch.allclose(c.float(), ref, **tol))
        fns.append(lambda kw=kw: gemm(a, b, c, **kw))
    fns.append(torch_mm)
    if triton_mm is not None:
        ct = torch.empty((m, n), device="cuda", dtype=cdt)
        triton_mm(a, b, ct)
        torch.cuda.synchronize()
        ok &= bool(torch.allclose(ct.float(), ref, **tol))
        fns.append(lambda: triton_mm(a, b, ct))
    samples = interleaved(fns, reps, rounds, min_ms)
    rates = [flops / statistics.median(t) / 1e12 for t in samples]
    best = max(range(len(configs)), key=rates.__getitem__)
    vs_blas = paired(samples, best, len(configs))
    vs_tri = paired(samples, best, len(configs) + 1) if triton_mm is not None else float("nan")
    tri = rates.pop() if triton_mm is not None else float("nan")
    blas = rates.pop()
    return rates, blas, tri, ok, (vs_blas, vs_tri)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="*", default=None)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=6, help="rounds of every column, alternating their order")
    ap.add_argument("--min-ms", type=float, default=5.0, help="a timing lasts at least this long (more launches)")
    ap.add_argument("--c", choices=("bf16", "fp32"), default="bf16")
    ap.add_argument("--config", nargs="*", default=[""])
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--fp8", nargs="?", const="tensor", choices=("tensor", "fast", "block"), default=None,
                    help="A and B Float8E4M3FN with per-tensor (or DeepSeek-V3's block) scales, against "
                         "torch._scaled_mm; fast: per-tensor, both accumulating in the tensor cores "
                         "(fast_accum, use_fast_accum)")
    ap.add_argument("--activation", choices=tuple(ACTIVATIONS), default=None,
                    help="time the fused epilogue (bias and this activation) against torch's addmm and activation")
    ap.add_argument("--precompile", type=int, default=0, metavar="N",
                    help="compile every shape and configuration first, in N processes")
    args = ap.parse_args()
    if args.fp8 and args.activation:
        ap.error("--fp8 and --activation are measured apart")
    import torch

    shapes = list(args.shapes if args.shapes is not None else DEFAULT_SHAPES)
    if args.sweep:
        shapes += [s for s in sweep_shapes() if s not in shapes]
    configs = [_config(c) for c in args.config]
    cname = "bfloat16" if args.c == "bf16" else "float32"
    if args.precompile:
        _precompile(shapes, configs, cname, args.precompile, args.activation, args.fp8)
    triton_mm = None
    if not args.no_triton and args.activation is None and not args.fp8:
        from triton_matmul import matmul_abt as triton_mm
    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name} ({props.multi_processor_count} SMs), torch {torch.__version__}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {args.rounds} interleaved rounds of "
          f">= {args.reps} launches and >= {args.min_ms} ms, bf16 inputs, fp32 accumulation, "
          f"C {args.c} (cute_py, Triton; cuBLAS writes bf16)"
          + (f", fused bias + {args.activation} (cuBLAS column: torch's addmm, then its {args.activation})"
             if args.activation else "")
          + (f", A and B Float8E4M3FN with {args.fp8} scales (cuBLAS column: torch._scaled_mm, per-tensor)"
             if args.fp8 else ""))
    names = [",".join(f"{k}={v}" for k, v in kw.items()) or "default" for kw in configs]
    print(f"{'M,N,K':>18} " + " ".join(f"{n[:26]:>26}" for n in names)
          + f" {'cuBLAS':>8} {'Triton':>8}   best/cuBLAS best/Triton  check")
    print(f"# TFLOP/s (medians of the rounds); the ratios: the best cute_py configuration's, the median of the rounds' "
          f"ratios; clock at start: {_clock()}")
    for text in shapes:
        ours, blas, tri, ok, (vs_blas, vs_tri) = _one_shape(text, configs, getattr(torch, cname), args.reps,
                                                             triton_mm, args.activation, args.fp8, args.rounds,
                                                             args.min_ms)
        published = f"  DeepGEMM (H800) {DEEPGEMM[text]}" if args.fp8 == "block" and text in DEEPGEMM else ""
        print(f"{text:>18} " + " ".join(f"{x:26.1f}" for x in ours) + f" {blas:8.1f} {tri:8.1f}   "
              f"{vs_blas:11.3f} {vs_tri:11.3f}  {'ok' if ok else 'MISMATCH'}{published}", flush=True)
        torch.cuda.empty_cache()
    print(f"# clock at end: {_clock()}")


if __name__ == "__main__":
    main()
