"""cute_py's Hopper GEMM (``examples.gemm``, kernel 13) against ``torch.matmul`` (cuBLAS), shape for shape, in one
run: TFLOP/s and ratios, outputs checked first.

Run: python benchmarks/bench_gemm.py [--shapes 4096,4096,4096 8192,8192,8192 ...] [--reps 20]

Each shape ``M,N,K`` computes ``C = A @ B^T`` with A (M, K) and B (N, K) bf16 and C fp32 (cute_py) / bf16
(torch); timed with CUDA events over ``--reps`` back-to-back launches after warm-up (median of 5 samples).
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
    ap.add_argument("--shapes", nargs="*", default=DEFAULT_SHAPES)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    import torch

    from examples import gemm

    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name} ({props.multi_processor_count} SMs), torch {torch.__version__}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, bf16 inputs, fp32 accumulation")
    print(f"{'M,N,K':>20} {'cute_py TFLOP/s':>16} {'cuBLAS TFLOP/s':>15} {'ratio':>7}  check")
    for text in args.shapes:
        m, n, k = (int(x) for x in text.split(","))
        a = torch.randn((m, k), device="cuda").to(torch.bfloat16)
        b = torch.randn((n, k), device="cuda").to(torch.bfloat16)
        c = torch.empty((m, n), device="cuda", dtype=torch.float32)
        gemm(a, b, c)
        torch.cuda.synchronize()
        ref = a.float() @ b.float().T
        ok = torch.allclose(c, ref, rtol=1e-2, atol=1e-2 * k ** 0.5)
        flops = 2 * m * n * k
        t_cute = _time(lambda: gemm(a, b, c), args.reps)
        t_blas = _time(lambda: torch.matmul(a, b.T), args.reps)
        print(f"{text:>20} {flops / t_cute / 1e12:16.1f} {flops / t_blas / 1e12:15.1f} {t_blas / t_cute:7.3f}  "
              f"{'ok' if ok else 'MISMATCH'}")


if __name__ == "__main__":
    main()
