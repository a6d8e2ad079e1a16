"""``python -m examples``: run kernels 1-7 on small torch tensors and check each against numpy
(needs a Hopper GPU and torch)."""

import sys

import torch

from . import (cp_async_copy, tma_copy, tma_copy_pipelined, tma_grouped_copy, tma_multicast_copy, tma_reduce_add,
               tma_transpose)


def _rand(shape, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, device="cuda", generator=g).to(dtype)


def _check(name, ok):
    print(f"{name}: {'ok' if ok else 'MISMATCH'}", flush=True)
    return ok


def main():
    ok = True
    for fn, dtype, shape, extra in [
            (tma_copy, torch.float32, (256, 512), ((128, 64), "none")),
            (tma_copy, torch.bfloat16, (256, 512), ((128, 64), "128B")),
            (tma_copy_pipelined, torch.float32, (1000, 1000), ((64, 64), "none", 3, 2, None, 7)),
            (tma_copy_pipelined, torch.bfloat16, (1024, 1536), ((128, 64), "128B", 2, 1, None, 5))]:
        src = _rand(shape, dtype, 1)
        dst = torch.zeros_like(src)
        fn(src, dst, *extra)
        torch.cuda.synchronize()
        ok &= _check(f"{fn.__name__} {dtype} {shape} {extra}", torch.equal(src, dst))
    # 3: cp.async with zero fill (dst larger than src)
    src = _rand((300, 200), torch.float32, 2)
    dst = torch.full((320, 256), 5.0, device="cuda")
    cp_async_copy(src, dst, (64, 128), 128)
    torch.cuda.synchronize()
    want = torch.zeros_like(dst)
    want[:300, :200] = src
    ok &= _check("cp_async_copy (300, 200) -> (320, 256) zero-filled", torch.equal(dst, want))
    # 4: multicast to a cluster of 2 and of 4
    for cluster in (2, 4):
        src = _rand((256, 512), torch.bfloat16, 3)
        dst = torch.zeros((cluster * 256, 512), device="cuda", dtype=torch.bfloat16)
        tma_multicast_copy(src, dst, (128, 64), cluster, "128B")
        torch.cuda.synchronize()
        ok &= _check(f"tma_multicast_copy cluster {cluster}", torch.equal(dst, src.repeat(cluster, 1)))
    # 5: reduce-add
    src, dst = _rand((300, 200), torch.float32, 4), _rand((300, 200), torch.float32, 5)
    want = dst + src
    tma_reduce_add(src, dst, (64, 64))
    torch.cuda.synchronize()
    ok &= _check("tma_reduce_add (300, 200)", torch.equal(dst, want))
    # 6: transpose
    src = _rand((256, 512), torch.bfloat16, 6)
    dst = torch.zeros((512, 256), device="cuda", dtype=torch.bfloat16)
    tma_transpose(src, dst, (64, 64), 128)
    torch.cuda.synchronize()
    ok &= _check("tma_transpose (256, 512) bf16 128B", torch.equal(dst, src.t()))
    # 7: grouped copy with device-side descriptor updates
    shapes = [(256, 512), (100, 200), (64, 64)]
    srcs = [_rand(s, torch.float32, 7 + i) for i, s in enumerate(shapes)]
    dsts = [torch.zeros_like(s) for s in srcs]
    ws = torch.zeros(256 * len(shapes), device="cuda", dtype=torch.uint8)
    tma_grouped_copy(ws, (64, 64), *[x for p in zip(srcs, dsts) for x in p])
    torch.cuda.synchronize()
    ok &= _check(f"tma_grouped_copy {shapes}", all(torch.equal(s, d) for s, d in zip(srcs, dsts)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
