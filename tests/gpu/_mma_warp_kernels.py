"""Kernels of the warp-level MMA tests (tests/jit/test_mma_warp_ptx.py builds them, tests/gpu/test_mma_warp_gpu.py
runs them): a one-CTA GEMM through ldmatrix and mma.sync, and single ldmatrix / stmatrix instructions."""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import warp

TILE = 64  # the GEMM's M = N = K
ROWS = 32  # rows of 8 elements in the ldmatrix / stmatrix buffer


def smem_layout(mn_major):
    """The (64, 64) shared-memory tile: K-major (rows of K contiguous) or MN-major."""
    return cute.Layout((TILE, TILE), (1, TILE) if mn_major else (TILE, 1))


@cute.kernel
def gemm_kernel(gA, gB, gC, tiled_mma, a_mn_major, b_mn_major):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    dt = gA.element_type
    sA = smem.allocate_tensor(dt, smem_layout(a_mn_major))
    sB = smem.allocate_tensor(dt, smem_layout(b_mn_major))
    # gmem -> smem: the 4096 elements in memory order, 32 per thread (the smem tile has the gmem tile's order)
    rows = cute.Layout((128, 32), (32, 1))
    cute.copy(cute.make_tensor(gA.engine, rows)[tid, None], cute.make_tensor(sA.engine, rows)[tid, None])
    cute.copy(cute.make_tensor(gB.engine, rows)[tid, None], cute.make_tensor(sB.engine, rows)[tid, None])
    arch.sync_threads()
    thr_mma = tiled_mma.get_slice(tid)
    tCsA = thr_mma.partition_A(sA)
    tCsB = thr_mma.partition_B(sB)
    tCgC = thr_mma.partition_C(gC)
    tCrA = tiled_mma.make_fragment_A(tCsA)
    tCrB = tiled_mma.make_fragment_B(tCsB)
    tCrC = tiled_mma.make_fragment_C(tCgC)
    s2r_A = cute.make_tiled_copy_A(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(a_mn_major, 4), dt), tiled_mma)
    s2r_B = cute.make_tiled_copy_B(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(b_mn_major, 4), dt), tiled_mma)
    ta, tb = s2r_A.get_slice(tid), s2r_B.get_slice(tid)
    cute.copy(s2r_A, ta.partition_S(sA), ta.retile(tCrA))
    cute.copy(s2r_B, tb.partition_S(sB), tb.retile(tCrB))
    for k in cute.range_constexpr(cute.size(tCrA.layout.shape[2])):
        cute.gemm(tiled_mma, tCrC, tCrA[None, None, k], tCrB[None, None, k], tCrC)
    cute.copy(tCrC, tCgC)


@cute.jit
def gemm(gA, gB, gC, dtype_name="BFloat16", a_mn_major=False, b_mn_major=False):
    """C (64 x 64, Float32, row-major) = A B^T with A (M, K), B (N, K) given K-major (row-major) or MN-major."""
    op = warp.MmaF16BF16Op(getattr(cute, dtype_name), cute.Float32, (16, 8, 16))
    tiled_mma = cute.make_tiled_mma(op, (2, 2, 1), (32, 32, 16))
    gemm_kernel(gA, gB, gC, tiled_mma, a_mn_major, b_mn_major).launch(grid=1, block=128)


def row_of(lane):
    """The buffer row (8 elements) lane ``lane`` addresses: a permutation of the 32 rows."""
    return (lane * 5 + 3) % ROWS


@cute.kernel
def ldmatrix_kernel(src, out, num, trans):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(src.element_type, cute.Layout((ROWS, 8), (8, 1)))
    cute.copy(src[tid, None], s[tid, None])
    arch.sync_threads()
    frag = cute.make_fragment(cute.Layout(2 * num), src.element_type)
    atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(trans, num), src.element_type)
    cute.copy(atom, s[row_of(tid), None], frag)
    cute.copy(frag, out[tid, None])


@cute.jit
def ldmatrix_run(src, out, num=4, trans=False):
    """out[lane, :2 num] = the lane's registers after one ldmatrix of the (32, 8) rows ``src``."""
    ldmatrix_kernel(src, out, num, trans).launch(grid=1, block=32)


@cute.kernel
def stmatrix_kernel(values, poison, out, num, trans):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(out.element_type, cute.Layout((ROWS, 8), (8, 1)))
    cute.copy(poison[tid, None], s[tid, None])
    frag = cute.make_fragment(cute.Layout(2 * num), values.element_type)
    cute.copy(values[tid, None], frag)
    arch.sync_threads()
    atom = cute.make_copy_atom(warp.StMatrix8x8x16bOp(trans, num), values.element_type)
    cute.copy(atom, frag, s[row_of(tid), None])
    arch.sync_threads()
    cute.copy(s[tid, None], out[tid, None])


@cute.jit
def stmatrix_run(values, poison, out, num=4, trans=False):
    """out (32, 8) = the shared rows (first filled from ``poison``) after one stmatrix of ``values[lane, :2 num]``."""
    stmatrix_kernel(values, poison, out, num, trans).launch(grid=1, block=32)
