"""One rank of the all-reduce checks (``torchrun --nproc-per-node=W tests/gpu/_all_reduce_worker.py``); prints
``RANK r OK`` at the end, or raises. Every expected value comes from NCCL (``torch.distributed``), not from the
kernel under test."""

import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import cute_py as cute  # noqa: E402
from examples.symmetric import SymmetricAllReduce  # noqa: E402

GUARD = 64
SIZES = [1, 7, 8, 1000, 4096, 65537, (1 << 20) + 24, 3 << 20]


def gathered(x):
    """Every rank's ``x`` (through NCCL), in rank order."""
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x)
    return parts


def poisoned_out(n, dtype):
    """A length-n view in the middle of a buffer of sentinels; the guards must stay sentinels."""
    full = torch.empty(n + 2 * GUARD, dtype=dtype, device="cuda")
    if dtype.is_floating_point:
        full.fill_(float("nan"))
    else:
        full.fill_(-0x5A5A5A5B)
    return full, full[GUARD:GUARD + n]


def check_guards(full, n, what):
    sentinel = full[:1].clone()
    for part in (full[:GUARD], full[GUARD + n:]):
        same = torch.isnan(part).all() if full.dtype.is_floating_point else (part == sentinel).all()
        assert bool(same), f"{what}: a guard element outside the output changed"


def reference(x):
    """The sum over ranks in rank order, in fp32 (int32 wrapping for integers), rounded once: what every rank
    must get, bit for bit."""
    parts = gathered(x)
    if x.dtype == torch.int32:
        return _wrap_sum(parts)
    total = parts[0].float()
    for p in parts[1:]:
        total = total + p.float()
    return total.to(x.dtype)


def _wrap_sum(parts):
    total = sum(p.to(torch.int64) for p in parts)
    total = torch.remainder(total, 1 << 32)
    return torch.where(total >= 1 << 31, total - (1 << 32), total).to(torch.int32)


def exact_sums(ar_by_dtype, rank):
    g = torch.Generator(device="cuda").manual_seed(1234 + rank)
    for dtype, ar in ar_by_dtype.items():
        for n in SIZES:
            for algorithm in ("one_shot", "two_shot"):
                if dtype == torch.int32:
                    x = torch.randint(-2 ** 31, 2 ** 31 - 1, (n,), generator=g, device="cuda", dtype=torch.int32)
                else:
                    x = (torch.randn(n, generator=g, device="cuda") * 100).to(dtype)
                    x[::97] = float("inf") if rank == 0 else 1.0      # infinities propagate
                ar.buffer.fill_(float("nan") if dtype.is_floating_point else 0x7B7B7B7B)   # stale data shows
                full, out = poisoned_out(n, dtype)
                ar(x, out, algorithm=algorithm)
                want = reference(x)
                what = f"{dtype} n={n} {algorithm}"
                bits = torch.int16 if x.element_size() == 2 else torch.int32
                same = torch.equal(out.view(bits), want.view(bits))
                diff = (out.float() - want.float()).abs().max()
                assert same, f"{what}: not the bits of the ordered fp32 sum (largest difference {diff})"
                check_guards(full, n, what)
                outs = gathered(out.contiguous())
                assert all(torch.equal(o, outs[0]) for o in outs), f"{what}: ranks disagree"


def back_to_back(rank):
    """Calls queued without a host wait between them, ranks jittered by GPU sleeps: each result is its own
    inputs' sum (no call reads a buffer a peer's next call already overwrote)."""
    ar = SymmetricAllReduce(1 << 18, torch.float32)
    g = torch.Generator(device="cuda").manual_seed(99 + rank)
    for n, algorithm in [(4096, "one_shot"), (1 << 18, "one_shot"), (1 << 18, "two_shot"), (4096, "auto")]:
        xs = [torch.randn(n, generator=g, device="cuda") for _ in range(24)]
        outs = []
        for i, x in enumerate(xs):
            if (i + rank) % 3 == 0:
                torch.cuda._sleep(20000 * (1 + rank))
            outs.append(ar(x, algorithm=algorithm, check=False))
        ar.check()
        for i, (x, out) in enumerate(zip(xs, outs)):
            assert torch.equal(out, reference(x)), f"back-to-back call {i} ({n}, {algorithm}) is wrong"


def counts_that_wrap(rank):
    """A long-lived communicator whose call count passes 2^31 (and its barriers' 32-bit epochs wrap): set up as
    after 2^31 - 3 calls (the count, and this rank's pad holding the epoch of the call before), then back-to-back
    calls of both algorithms across the wrap, each its own inputs' sum."""
    ar = SymmetricAllReduce(4096, torch.float32)
    calls = (1 << 31) - 3
    ar.state[1] = calls
    ar.pads[rank][:, :, 0] = 0
    ar.pads[rank][:, :, 1] = 2 * calls - 1 - (1 << 32)        # the previous call's first epoch, as an int32
    torch.cuda.synchronize()
    dist.barrier()
    g = torch.Generator(device="cuda").manual_seed(7 + rank)
    xs = [torch.randn(1000 + i, generator=g, device="cuda") for i in range(8)]
    outs = [ar(x, algorithm=("one_shot", "two_shot")[i % 2], check=False) for i, x in enumerate(xs)]
    ar.check()
    assert int(ar.state[1]) == calls + 8 - (1 << 32), int(ar.state[1])
    for i, (x, out) in enumerate(zip(xs, outs)):
        assert torch.equal(out, reference(x)), f"call {i} across the count's wrap is wrong"


def late_rank(rank):
    ar = SymmetricAllReduce(4096, torch.float32, timeout_s=30.0)
    x = torch.full((4096,), float(rank + 1), device="cuda")
    if rank == 1:
        time.sleep(2.0)                       # arrives 2 s late: within the bound, so no error
    y = ar(x)
    w = dist.get_world_size()
    assert bool((y == w * (w + 1) / 2).all()), "a late rank's call gave a wrong sum"


def missing_rank(rank):
    ar = SymmetricAllReduce(4096, torch.float32, timeout_s=0.5)
    dist.barrier()
    if rank == 0:
        t0 = time.perf_counter()
        try:
            ar(torch.ones(4096, device="cuda"))
        except cute.CuteError as e:
            assert "did not arrive within 0.5 s" in str(e) and "rank 0:" in str(e), str(e)
            assert time.perf_counter() - t0 < 20, "the bounded wait took too long"
        else:
            raise AssertionError("rank 0 got a result although no other rank called")
        try:
            ar(torch.ones(4096, device="cuda"))
        except cute.CuteError as e:
            assert "spent" in str(e)
        else:
            raise AssertionError("a spent communicator ran again")
    dist.barrier()


def other_count(rank):
    ar = SymmetricAllReduce(8192, torch.float32, timeout_s=2.0)
    n = 4096 if rank == 0 else 8192
    try:
        ar(torch.ones(n, device="cuda"), algorithm="one_shot")
    except cute.CuteError as e:
        assert "rank" in str(e), str(e)
    else:
        raise AssertionError(f"rank {rank}: a call with another element count on another rank gave a result")
    dist.barrier()


def graph_replay(rank):
    ar = SymmetricAllReduce(1 << 16, torch.bfloat16)
    x = torch.randn(1 << 16, device="cuda").to(torch.bfloat16)
    out = torch.empty_like(x)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        ar(x, out, check=False)               # warm-up: compile and load
    torch.cuda.current_stream().wait_stream(stream)
    ar.check()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ar(x, out, check=False)
    for seed in range(1, 6):                  # (replays alternate the one-shot halves on the device)
        x.copy_(torch.randn(1 << 16, device="cuda", generator=torch.Generator(device="cuda").manual_seed(
            seed * 10 + rank)).to(torch.bfloat16))
        out.fill_(float("nan"))
        graph.replay()
        ar.check()
        assert torch.equal(out, reference(x)), f"graph replay {seed} is stale or wrong"


def hostile(rank):
    ar = SymmetricAllReduce(1024, torch.float32, one_shot_bytes=1024)
    for bad, algorithm, match in [(torch.ones(2048, device="cuda"), "auto", "elements"),
                                  (torch.ones(16, device="cuda", dtype=torch.float16), "auto", "contiguous"),
                                  (torch.ones(16, 2, device="cuda").t(), "auto", "contiguous"),
                                  (torch.ones(257, device="cuda"), "one_shot", "the one shot takes at most 256"),
                                  (torch.ones(16, device="cuda"), "three_shot", "algorithm must be one of")]:
        try:
            ar(bad, algorithm=algorithm)
        except cute.CuteValueError as e:
            assert match in str(e), str(e)
        else:
            raise AssertionError(f"accepted {bad.shape} {bad.dtype} {algorithm}")
    assert torch.equal(ar(torch.ones(257, device="cuda")), torch.full((257,), float(dist.get_world_size()),
                                                                       device="cuda"))   # auto: the two shot


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    torch.empty(1, device="cuda")
    dtypes = (torch.int32, torch.float32, torch.bfloat16, torch.float16)
    exact_sums({d: SymmetricAllReduce(max(SIZES), d, one_shot_bytes=max(SIZES) * 4) for d in dtypes}, rank)
    hostile(rank)
    graph_replay(rank)
    back_to_back(rank)
    counts_that_wrap(rank)
    late_rank(rank)
    other_count(rank)
    missing_rank(rank)
    print(f"RANK {rank} OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
