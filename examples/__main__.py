"""``python -m examples``: run kernels 1-13 on small torch tensors and check each against torch (needs a Hopper
GPU and torch)."""

import sys

import torch

from . import (conv_output_size, cp_async_copy, dsmem_exchange, elementwise_add, fused_silu_add, im2col, row_sum, softmax, tma_copy,
               tma_copy_pipelined, tma_grouped_copy, tma_multicast_copy, tma_reduce_add, tma_transpose,
               warp_specialized_copy, gemm)


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
    # 8: rows rotated by one inside clusters of 4 CTAs, through st.async into the next CTA's shared memory
    src = _rand((8, 256), torch.float32, 10)
    dst = torch.zeros_like(src)
    dsmem_exchange(src, dst, 4, 4)
    torch.cuda.synchronize()
    ok &= _check("dsmem_exchange cluster 4", torch.equal(dst, src.view(2, 4, 256).roll(1, 1).view(8, 256)))
    # 9: elementwise kernels on a length that is not a multiple of a vector
    a, b = _rand((4099,), torch.bfloat16, 11), _rand((4099,), torch.bfloat16, 12)
    c = torch.zeros_like(a)
    elementwise_add(a, b, c)
    torch.cuda.synchronize()
    ok &= _check("elementwise_add bf16 4099", torch.equal(c, a + b))
    x, y = _rand((4099,), torch.bfloat16, 13), _rand((4099,), torch.bfloat16, 14)
    out = torch.zeros_like(x)
    fused_silu_add(x, y, out, 0.5)
    torch.cuda.synchronize()
    want = torch.nn.functional.silu(x.double()) * 0.5 + y.double()
    ok &= _check("fused_silu_add bf16 4099", float((out.double() - want).abs().max()) < 0.07)
    # 10: row kernels
    x = _rand((37, 1000), torch.float32, 15) * 4
    y = torch.zeros_like(x)
    softmax(x, y)
    torch.cuda.synchronize()
    ok &= _check("softmax (37, 1000)", torch.allclose(y, torch.softmax(x, 1), rtol=1e-5, atol=1e-7))
    s = torch.zeros((37,), device="cuda")
    row_sum(x, s)
    torch.cuda.synchronize()
    ok &= _check("row_sum (37, 1000)", torch.allclose(s, x.sum(1), rtol=1e-5, atol=1e-3))
    # 11: warp-specialised multicast copy through cute_py.pipeline, each CTA rank scaling by its own factor
    src = _rand((256, 1000), torch.float32, 16)
    dst = torch.zeros((512, 1000), device="cuda")
    warp_specialized_copy(src, dst, (1.0, -2.0), (64, 64), 3, 2, 2, "none", 2)
    torch.cuda.synchronize()
    ok &= _check("warp_specialized_copy cluster 2", torch.equal(dst, torch.cat([src, src * -2.0])))
    # 12: a conv2d's im2col matrix by im2col TMA, against unfold (columns (c, kh, kw) permuted to (kh, kw, c))
    img = _rand((2, 9, 11, 64), torch.float16, 17)
    oh, ow = conv_output_size(9, 3, 1, 2, 1), conv_output_size(11, 3, 1, 2, 1)
    out = torch.zeros((2 * oh * ow, 9 * 64), dtype=torch.float16, device="cuda")
    im2col(img, out, 3, 1, 2, 1)
    torch.cuda.synchronize()
    ref = torch.nn.functional.unfold(img.permute(0, 3, 1, 2), 3, dilation=2, padding=1, stride=1)
    ref = ref.view(2, 64, 3, 3, oh * ow).permute(0, 4, 2, 3, 1).reshape(2 * oh * ow, 9 * 64)
    ok &= _check("im2col 3x3 dilation 2 pad 1", torch.equal(out, ref))
    # 13: the pipelined GEMM, a partial edge tile in M, N and K, against torch in fp32
    a, b = _rand((200, 104), torch.bfloat16, 13)[:, :100], _rand((136, 104), torch.bfloat16, 14)[:, :100]
    c = torch.full((200, 136), float("nan"), device="cuda")
    gemm(a, b, c)
    torch.cuda.synchronize()
    ok &= _check("gemm 200x136x100 bf16 -> fp32", torch.allclose(c, a.float() @ b.float().t(), rtol=1e-2, atol=1e-2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
