"""A one-CTA product through the tiled warpgroup MMA (shared by its PTX test and its GPU test)."""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import warpgroup as wg
from cute_py.utils import LayoutEnum
from cute_py.utils import hopper_helpers as hh


def tiled_product_program(op, atom_m, k_tiles, gemm_all_k=False):
    """A kernel: (64*atom_m, K*k_tiles) A and (N, K*k_tiles) B row-major in gmem (K the instruction's: 16, or 32
    for 8-bit floats), copied plainly into 128B swizzled K-major smem, multiplied through the tiled MMA; ``out``
    the (M, N) row-major fp32 product."""
    m, n = 64 * atom_m, op.shape_mnk[1]
    kk = op.shape_mnk[2] * k_tiles
    tiled = cute.make_tiled_mma(op, (atom_m, 1, 1))
    la = hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (m, n, kk), op.a_dtype, 1)
    lb = hh.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (m, n, kk), op.b_dtype, 1)
    threads = 128 * atom_m

    @cute.kernel
    def kernel(a, b, out):
        smem = arch.SmemAllocator()
        sA = smem.allocate_tensor(op.a_dtype, la, byte_alignment=1024)[None, None, 0]
        sB = smem.allocate_tensor(op.b_dtype, lb, byte_alignment=1024)[None, None, 0]
        tid = arch.thread_idx()[0]
        for i in cute.range_constexpr(m * kk // threads):
            e = tid + threads * i
            sA[e // kk, e % kk] = a[e]
        for i in cute.range_constexpr(n * kk // threads):
            e = tid + threads * i
            sB[e // kk, e % kk] = b[e]
        arch.fence_view_async_shared()
        arch.sync_threads()
        thr = tiled.get_slice(tid)
        tCrA = tiled.make_fragment_A(thr.partition_A(sA))
        tCrB = tiled.make_fragment_B(thr.partition_B(sB))
        gC = cute.make_tensor(out.iterator, cute.make_layout((m, n), stride=(n, 1)))
        tCgC = thr.partition_C(gC)
        acc = tiled.make_fragment_C(tCgC)
        tiled.set(wg.Field.ACCUMULATE, False)
        wg.fence()
        if gemm_all_k:
            cute.gemm(tiled, acc, tCrA, tCrB, acc)
        else:
            for k in cute.range_constexpr(cute.size(tCrA, mode=[2])):
                cute.gemm(tiled, acc, tCrA[None, None, k], tCrB[None, None, k], acc)
                tiled.set(wg.Field.ACCUMULATE, True)
        wg.commit_group()
        wg.wait_group(0)
        for i in cute.range_constexpr(cute.size(acc)):
            tCgC[i] = acc[i]

    @cute.jit
    def host(a, b, out):
        kernel(a, b, out).launch(grid=1, block=threads)

    spec = cute.compiler.DeviceArraySpec
    return host, (spec(op.a_dtype.name, (m * kk,)), spec(op.b_dtype.name, (n * kk,)), spec("Float32", (m * n,)))
