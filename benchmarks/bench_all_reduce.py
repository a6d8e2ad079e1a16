"""The symmetric-memory all-reduce (examples/symmetric.py) against NCCL's (``torch.distributed.all_reduce``), side
by side in one run, one process per GPU::

    torchrun --nproc-per-node=4 benchmarks/bench_all_reduce.py [--dtype bf16] [--max-mib 256]

Each call is timed inside a CUDA graph of ``--calls`` back-to-back calls (as a serving engine replays them; no
host time), or with ``--eager`` as ``--calls`` calls issued from Python (host time included), median over
``--reps`` repetitions; rank 0 prints the latency per call, the ratio NCCL / ours (> 1:
ours faster) and the bus bandwidth ``2 (W - 1) / W * bytes / time`` of both. Outputs are checked against NCCL's
first (bit-identical for integers; the ordered fp32 sum for floats is compared within one bf16 ulp)."""

import argparse
import datetime
import os
import subprocess
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from examples.symmetric import SymmetricAllReduce  # noqa: E402
from _dist_timing import eager_us, graph_us  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp16": torch.float16}


def clocks():
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=10).stdout.split()
        return "/".join(q)
    except Exception:
        return "?"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", default="bf16", choices=DTYPES)
    p.add_argument("--max-mib", type=int, default=256)
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--eager", action="store_true", help="calls from Python, host time included (no graphs)")
    args = p.parse_args()
    timed_fn = eager_us if args.eager else graph_us
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dtype = DTYPES[args.dtype]
    item = torch.empty((), dtype=dtype).element_size()
    sizes = [1 << k for k in range(12, 31) if (1 << k) <= args.max_mib << 20]
    ar = SymmetricAllReduce(max(sizes) // item, dtype, one_shot_bytes=min(max(sizes), 16 << 20))
    if rank == 0:
        print(f"# {torch.cuda.get_device_name()} x{world}, torch {torch.__version__}, NCCL "
              f"{'.'.join(map(str, torch.cuda.nccl.version()))}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} "
              f"UTC, {args.dtype}, {'eager calls' if args.eager else 'CUDA graphs'} of {args.calls} calls, median of "
              f"{args.reps}; SM clocks {clocks()} MHz")
        print(f"{'bytes':>10} {'NCCL us':>9} {'1-shot us':>9} {'2-shot us':>9} {'best/NCCL':>9} "
              f"{'NCCL GB/s':>9} {'ours GB/s':>9}  check")
    for size in sizes:
        n = size // item
        g = torch.Generator(device="cuda").manual_seed(rank)
        x = torch.randn(n, generator=g, device="cuda").to(dtype)
        want = x.clone()
        dist.all_reduce(want)
        one = size <= 16 << 20
        err = 0.0
        for algorithm in ("one_shot", "two_shot") if one else ("two_shot",):
            got = ar(x, algorithm=algorithm)
            err = max(err, float((got.float() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-30)))
        check = "ok" if err <= 2 ** -7 else f"ERR {err:.2e}"
        y = torch.empty_like(x)
        nccl_buf = x.clone()
        t_nccl = timed_fn(lambda: dist.all_reduce(nccl_buf), args.calls, args.reps)
        t_one = timed_fn(lambda: ar(x, y, algorithm="one_shot", check=False), args.calls, args.reps) \
            if one else float("nan")
        t_two = timed_fn(lambda: ar(x, y, algorithm="two_shot", check=False), args.calls, args.reps)
        ar.check()
        best = min(t for t in (t_one, t_two) if t == t)
        bus = 2 * (world - 1) / world * size / 1e3
        if rank == 0:
            print(f"{size:>10} {t_nccl:9.1f} {t_one:9.1f} {t_two:9.1f} {t_nccl / best:9.2f} "
                  f"{bus / t_nccl:9.1f} {bus / best:9.1f}  {check}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
