"""The all-gather fused with a GEMM (examples/all_gather_gemm.py) against NCCL's all-gather then ``torch.mm``, side
by side in one run, one process per GPU::

    torchrun --nproc-per-node=4 benchmarks/bench_all_gather_gemm.py [--m 8192 --n 8192 --k 8192]

A (M x K) is sharded by rows over the ranks and B (N x K) by rows too: each rank computes
``all_gather(A) @ B_rank^T``, an ``M x N / W`` block of the ``M x N x K`` product. Both are timed with CUDA
events around ``--calls`` back-to-back calls, median of ``--reps``, the slowest rank's time; rank 0 prints the
time per call, the ratio (NCCL + torch.mm) / ours (> 1: ours faster) and each rank's TFLOP/s. Outputs are checked
against the baseline's first."""

import argparse
import datetime
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from examples.all_gather_gemm import AllGatherGemm  # noqa: E402
from _dist_timing import eager_us  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=8192)
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--k", type=int, default=8192)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    m, n, k = args.m, args.n // world, args.k
    g = torch.Generator(device="cuda").manual_seed(rank)
    a = torch.randn(m // world, k, generator=g, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, generator=g, device="cuda").to(torch.bfloat16)
    full = torch.empty(m, k, dtype=torch.bfloat16, device="cuda")
    out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")

    def baseline():
        dist.all_gather_into_tensor(full, a)
        torch.mm(full, b.t(), out=out)

    ag = AllGatherGemm(m // world, k, torch.bfloat16)
    c = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    baseline()
    ag(a, b, c)
    err = float((c.float() - out.float()).abs().max() / out.float().abs().max())
    t_base = eager_us(baseline, args.calls, args.reps) / 1000
    t_ours = eager_us(lambda: ag(a, b, c, check=False), args.calls, args.reps) / 1000
    ag.check()
    t_mm = eager_us(lambda: torch.mm(full, b.t(), out=out), args.calls, args.reps) / 1000
    flops = 2 * m * n * k / 1e9
    if rank == 0:
        print(f"# {torch.cuda.get_device_name()} x{world}, torch {torch.__version__}, "
              f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, bf16, M={m} N={args.n} K={k} "
              f"(each rank {m}x{n}x{k}), {args.calls} calls, median of {args.reps}")
        print(f"NCCL all-gather + torch.mm {t_base:8.3f} ms  ({flops / t_base:6.1f} TFLOP/s per GPU)")
        print(f"torch.mm alone             {t_mm:8.3f} ms  ({flops / t_mm:6.1f} TFLOP/s per GPU)")
        print(f"cute_py AllGatherGemm      {t_ours:8.3f} ms  ({flops / t_ours:6.1f} TFLOP/s per GPU)  "
              f"ratio {t_base / t_ours:.3f}x  {'ok' if err < 2e-2 else f'ERR {err:.2e}'}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
