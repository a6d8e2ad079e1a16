"""One rank of the all-gather GEMM checks (``torchrun --nproc-per-node=W tests/gpu/_all_gather_gemm_worker.py``);
prints ``RANK r OK`` at the end, or raises. The expected products come from NCCL's all-gather and torch's matmul
in fp32, not from the kernel under test."""

import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import cute_py as cute  # noqa: E402
from examples.all_gather_gemm import AllGatherGemm  # noqa: E402


def expected(a_shard, b):
    parts = [torch.empty_like(a_shard) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, a_shard)
    return torch.cat(parts).float() @ b.float().t()


def check(got, a_shard, b, what):
    want = expected(a_shard, b)
    assert not torch.isnan(got).any(), f"{what}: NaN in the product (a shard read before it arrived?)"
    torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2 * want.abs().max().item() ** 0.5,
                               msg=lambda m: f"{what}: {m}")


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    g = torch.Generator(device="cuda").manual_seed(rank)
    for shard_rows, k, n in [(128, 64, 256), (256, 1000, 200), (1024, 2048, 768)]:
        ag = AllGatherGemm(shard_rows, k, torch.bfloat16, timeout_s=30.0)
        for step in range(3):
            # rows read before their shard arrived show as NaN (peers write here only after this call's barrier,
            # which comes after this fill in stream order)
            ag.a_full.fill_(float("nan"))
            a = torch.randn(shard_rows, k, generator=g, device="cuda").to(torch.bfloat16)
            b = torch.randn(n, k, generator=g, device="cuda").to(torch.bfloat16)
            if rank == 1 and step == 1:
                torch.cuda._sleep(200_000_000)   # ~0.1 s late on the GPU: the others' GEMMs wait for its shard
            if rank == 0 and step == 2:
                time.sleep(1.0)                  # 1 s late on the host
            c = ag(a, b)
            check(c, a, b, f"shard_rows={shard_rows} k={k} n={n} call {step}")
    # a CUDA graph: replays after new values are copied into the captured inputs
    ag = AllGatherGemm(256, 512, torch.bfloat16)
    a = torch.randn(256, 512, generator=g, device="cuda").to(torch.bfloat16)
    b = torch.randn(384, 512, generator=g, device="cuda").to(torch.bfloat16)
    c = torch.empty(256 * dist.get_world_size(), 384, dtype=torch.bfloat16, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        ag(a, b, c, check=False)
    torch.cuda.current_stream().wait_stream(side)
    ag.check()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ag(a, b, c, check=False)
    for seed in range(3):
        a.copy_(torch.randn(256, 512, generator=g, device="cuda").to(torch.bfloat16))
        c.fill_(float("nan"))
        graph.replay()
        ag.check()
        check(c, a, b, f"graph replay {seed}")
    # hostile arguments
    for bad in (torch.ones(255, 512, device="cuda", dtype=torch.bfloat16),
                torch.ones(256, 512, device="cuda", dtype=torch.float16)):
        try:
            ag(bad, b)
        except cute.CuteValueError as e:
            assert "a_shard must be" in str(e)
        else:
            raise AssertionError("accepted a wrong shard")
    print(f"RANK {rank} OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
