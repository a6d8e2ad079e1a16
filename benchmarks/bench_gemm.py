"""cute_py's Hopper GEMM (``examples.gemm``, kernel 13) against ``torch.matmul`` (cuBLAS) and Triton's matmul
(``triton_matmul.py``, autotuned), shape for shape, in one run: TFLOP/s and ratios, outputs checked first.

Run: python benchmarks/bench_gemm.py [--shapes 4096,4096,4096 ...] [--sweep] [--reps 20] [--c fp32|bf16]
     [--config persistent=True,cluster_m=2 ...]

Each shape ``M,N,K`` computes ``C = A @ B^T`` with A (M, K) and B (N, K) bf16 and C in ``--c`` (bf16 by
default, as cuBLAS and Triton write it); timed with CUDA events over ``--reps`` back-to-back launches after
warm-up (median of 5 samples). ``--sweep`` adds every M, N, K in {512, 4096, 16384} with at least one
above 512, plus skinny shapes. Each ``--config`` is a set of ``examples.gemm`` keyword arguments
measured as its own column (default: the default configuration).
"""

import argparse
import datetime
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

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
        kw[key] = {"True": True, "False": False}.get(value, int(value) if value.lstrip("-").isdigit() else value)
    return kw


def _time(fn, reps):
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / reps * 1e-3)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="*", default=None)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--c", choices=("bf16", "fp32"), default="bf16")
    ap.add_argument("--config", nargs="*", default=[""])
    ap.add_argument("--no-triton", action="store_true")
    args = ap.parse_args()
    import torch

    from examples import gemm

    shapes = list(args.shapes if args.shapes is not None else DEFAULT_SHAPES)
    if args.sweep:
        shapes += [s for s in sweep_shapes() if s not in shapes]
    configs = [_config(c) for c in args.config]
    triton_mm = None
    if not args.no_triton:
        from triton_matmul import matmul_abt as triton_mm
    cdt = torch.bfloat16 if args.c == "bf16" else torch.float32
    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name} ({props.multi_processor_count} SMs), torch {torch.__version__}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, bf16 inputs, fp32 accumulation, "
          f"C {args.c} (cute_py, Triton; cuBLAS writes bf16)")
    names = [",".join(f"{k}={v}" for k, v in kw.items()) or "default" for kw in configs]
    head = f"{'M,N,K':>18} " + " ".join(f"{n[:22]:>22}" for n in names)
    head += f" {'cuBLAS':>8} {'Triton':>8}   best/cuBLAS best/Triton  check"
    print(head)
    print("# TFLOP/s; the ratios take the best cute_py configuration")
    for text in shapes:
        m, n, k = (int(x) for x in text.split(","))
        a = torch.randn((m, k), device="cuda").to(torch.bfloat16)
        b = torch.randn((n, k), device="cuda").to(torch.bfloat16)
        c = torch.empty((m, n), device="cuda", dtype=cdt)
        ref = a.float() @ b.float().T
        flops = 2 * m * n * k
        tol = dict(rtol=2e-2, atol=2e-2 * k ** 0.5)
        ok = True
        ours = []
        for kw in configs:
            c.fill_(float("nan"))
            gemm(a, b, c, **kw)
            torch.cuda.synchronize()
            ok &= bool(torch.allclose(c.float(), ref, **tol))
            ours.append(flops / _time(lambda: gemm(a, b, c, **kw), args.reps) / 1e12)
        t_blas = flops / _time(lambda: torch.matmul(a, b.T), args.reps) / 1e12
        t_tri = float("nan")
        if triton_mm is not None:
            ct = torch.empty((m, n), device="cuda", dtype=cdt)
            triton_mm(a, b, ct)
            torch.cuda.synchronize()
            ok &= bool(torch.allclose(ct.float(), ref, **tol))
            t_tri = flops / _time(lambda: triton_mm(a, b, ct), args.reps) / 1e12
        best = max(ours)
        print(f"{text:>18} " + " ".join(f"{x:22.1f}" for x in ours) + f" {t_blas:8.1f} {t_tri:8.1f}   "
              f"{best / t_blas:11.3f} {best / t_tri:11.3f}  {'ok' if ok else 'MISMATCH'}", flush=True)
        del a, b, c, ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
