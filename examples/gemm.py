"""Kernel 13: a pipelined Hopper GEMM, ``C = A @ B^T`` with TMA loads and warpgroup MMAs.

::

    from examples import gemm
    gemm(a, b, c)            # a: (M, K), b: (N, K) bf16 or fp16, row-major; c: (M, N) fp32, bf16 or fp16
    gemm(a, b, c, stages=3)

Each CTA computes one ``128 x 128`` tile of C, walking K in ``64``-wide k-tiles. It has three warpgroups:

- warpgroups 0 and 1 (threads 0-255) are the consumers: a tiled warpgroup MMA of ``m64n128k16`` instructions
  with atom layout ``(2, 1, 1)`` (each warpgroup owns 64 rows), fp32 accumulators in registers;
- warpgroup 2 (threads 256-383) is the producer: one elected thread of its first warp issues the TMA loads
  of the A (``128 x 64``) and B (``128 x 64``) tiles of each k-tile into a ``stages``-deep ring of 128B-swizzled
  K-major shared-memory buffers (``hopper_helpers.make_smem_layout_a/b``), joined to the consumers by a
  ``PipelineTmaAsync``: the ``full`` barrier of a stage counts the bytes of both tiles, the ``empty`` barrier one
  arrival per consumer warp.

The consumers wait for a stage, issue its four k-blocks of WGMMAs (descriptors from
``tiled_mma.make_fragment_A/B``), commit them as one group, and keep one group in flight
(``wait_group(1)``): the stage of the *previous* k-tile is released only once its group has completed. After
the last k-tile they wait for every group and write their accumulators to C, converted to C's type, each
element predicated on lying inside ``(M, N)``.

Edge tiles: TMA loads of a tile that reaches past ``M``, ``N`` or ``K`` fill the missing elements with zeros, so
they add nothing to the products; the epilogue's predicates keep the stores inside C. A and B rows must start on
16-byte boundaries (TMA's rule for a row stride): ``K`` a multiple of 8, or a padded row stride.
"""

import cute_py as cute
from cute_py import arch, pipeline
from cute_py.nvgpu import cpasync
from cute_py.nvgpu import warpgroup as wg
from cute_py.utils import LayoutEnum
from cute_py.utils import hopper_helpers as hh

__all__ = ["gemm", "gemm_kernel", "GEMM_TILE", "GEMM_THREADS"]

GEMM_TILE = (128, 128, 64)
MMA_WARPGROUPS = 2
MMA_THREADS = 128 * MMA_WARPGROUPS
GEMM_THREADS = MMA_THREADS + 128       # + the producer warpgroup
PRODUCER_WARP = MMA_THREADS // 32      # the first warp of the producer warpgroup issues the loads
SMEM_LIMIT = 227 * 1024


@cute.kernel
def gemm_kernel(tiled_mma, load_a, tma_a, load_b, tma_b, c, a_layout, b_layout, stages):
    bm, bn, bk = GEMM_TILE
    tidx, _, _ = arch.thread_idx()
    bidx, bidy, _ = arch.block_idx()
    warp = arch.make_warp_uniform(arch.warp_idx())
    if warp == PRODUCER_WARP:
        cpasync.prefetch_descriptor(load_a)
        cpasync.prefetch_descriptor(load_b)
    smem = arch.SmemAllocator()
    sA = smem.allocate_tensor(load_a.dtype, a_layout, 1024)    # (bm, bk, stages)
    sB = smem.allocate_tensor(load_b.dtype, b_layout, 1024)    # (bn, bk, stages)
    barriers = smem.allocate_mbarrier(2 * stages)
    tile_bytes = (bm + bn) * bk * load_a.dtype.width // 8
    loads = pipeline.PipelineTmaAsync.create(
        num_stages=stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, MMA_THREADS // 32),
        tx_count=tile_bytes,
        barrier_storage=barriers)

    gA = cute.local_tile(tma_a, GEMM_TILE, (bidx, bidy, None), proj=(1, None, 1))    # (bm, bk, k-tiles)
    gB = cute.local_tile(tma_b, GEMM_TILE, (bidx, bidy, None), proj=(None, 1, 1))    # (bn, bk, k-tiles)
    k_tiles = cute.size(gA, mode=[2])

    if warp == PRODUCER_WARP:
        tAsA, tAgA = cpasync.tma_partition(load_a, 0, cute.Layout(1), cute.group_modes(sA, 0, 2),
                                           cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cpasync.tma_partition(load_b, 0, cute.Layout(1), cute.group_modes(sB, 0, 2),
                                           cute.group_modes(gB, 0, 2))
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
        for k in range(k_tiles):
            loads.producer_acquire(state)
            cute.copy(load_a, tAgA[None, state.count], tAsA[None, state.index],
                      tma_bar_ptr=loads.producer_get_barrier(state))
            cute.copy(load_b, tBgB[None, state.count], tBsB[None, state.index],
                      tma_bar_ptr=loads.producer_get_barrier(state))
            loads.producer_commit(state)
            state.advance()
        loads.producer_tail(state)
    elif tidx < MMA_THREADS:
        thr = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr.partition_A(sA))     # (1, 1, 4, stages) descriptors
        tCrB = tiled_mma.make_fragment_B(thr.partition_B(sB))
        gC = cute.local_tile(c, (bm, bn), (bidx, bidy))
        cC = cute.local_tile(cute.make_identity_tensor(c.shape), (bm, bn), (bidx, bidy))
        tCgC = thr.partition_C(gC)
        tCcC = thr.partition_C(cC)
        acc = tiled_mma.make_fragment_C(tCgC)
        k_blocks = cute.size(tCrA, mode=[2])
        tiled_mma.set(wg.Field.ACCUMULATE, False)
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        # k-tile 0 (there is one: K >= 1): its first k-block writes the accumulators (scale-d 0)
        loads.consumer_wait(read)
        wg.fence()
        for kb in cute.range_constexpr(k_blocks):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index], acc)
            tiled_mma.set(wg.Field.ACCUMULATE, True)
        wg.commit_group()
        read.advance()
        for k in range(1, k_tiles):
            loads.consumer_wait(read)
            wg.fence()
            for kb in cute.range_constexpr(k_blocks):
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index], acc)
            wg.commit_group()
            wg.wait_group(1)             # the previous k-tile's group is done: its stage may be refilled
            loads.consumer_release(release)
            release.advance()
            read.advance()
        wg.wait_group(0)
        loads.consumer_release(release)
        m, n = c.shape
        for i in cute.range_constexpr(cute.size(acc)):
            row, col = tCcC[i]
            if row < m and col < n:
                tCgC[i] = acc[i].to(c.element_type)


def _check_args(a, b, c, stages):
    for name, t in (("a", a), ("b", b), ("c", c)):
        if len(t.shape) != 2:
            raise cute.CuteValueError(f"gemm: {name} must be 2-D, got the shape {tuple(t.shape)}")
    (m, k), (n, kb), (mc, nc) = a.shape, b.shape, c.shape
    if kb != k or (mc, nc) != (m, n):
        raise cute.CuteValueError(f"gemm computes C (M, N) = A (M, K) @ B (N, K)^T: got A {tuple(a.shape)}, "
                                  f"B {tuple(b.shape)}, C {tuple(c.shape)}")
    if min(m, n, k) < 1:
        raise cute.CuteValueError(f"gemm needs M, N, K >= 1, got {(m, n, k)}")
    if a.element_type not in (cute.BFloat16, cute.Float16) or b.element_type is not a.element_type:
        raise cute.CuteValueError(f"gemm: A and B are both BFloat16 or both Float16, got {a.element_type.name} and "
                                  f"{b.element_type.name}")
    if c.element_type not in (cute.Float32, cute.BFloat16, cute.Float16):
        raise cute.CuteValueError(f"gemm: C is Float32, BFloat16 or Float16, got {c.element_type.name}")
    for name, t in (("a", a), ("b", b)):
        if t.layout.stride[1] != 1:
            raise cute.CuteValueError(f"gemm: {name} must be row-major (K contiguous), got the strides "
                                      f"{t.layout.stride}")
    if type(stages) is not int or not 2 <= stages <= 6:
        raise cute.CuteValueError(f"gemm: stages must be an int in 2..6, got {stages!r}")
    bm, bn, bk = GEMM_TILE
    need = stages * (bm + bn) * bk * 2 + 16 * stages + 2048
    if need > SMEM_LIMIT:
        raise cute.CuteValueError(f"gemm: {stages} stages need {need} bytes of shared memory, more than {SMEM_LIMIT}")


@cute.jit
def gemm(a, b, c, stages=4):
    """``c[i, j] = sum_k a[i, k] * b[j, k]`` (``C = A @ B^T``), accumulated in fp32 and rounded once to C's type.

    ``a``: (M, K) and ``b``: (N, K), both BFloat16 or both Float16, row-major with 16-byte aligned rows;
    ``c``: (M, N) Float32, BFloat16 or Float16 (any strides); ``stages``: the load pipeline's depth (2..6).
    Any M, N, K >= 1. See the module for the kernel."""
    _check_args(a, b, c, stages)
    bm, bn, bk = GEMM_TILE
    ab = a.element_type
    tiled_mma = hh.make_trivial_tiled_mma(ab, ab, wg.OperandMajorMode.K, wg.OperandMajorMode.K, cute.Float32,
                                          (MMA_WARPGROUPS, 1, 1), (64, bn))
    a_layout = hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, GEMM_TILE, ab, stages)
    b_layout = hh.make_smem_layout_b(LayoutEnum.ROW_MAJOR, GEMM_TILE, ab, stages)
    load_a, tma_a = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                                cute.slice_(a_layout, (None, None, 0)), (bm, bk))
    load_b, tma_b = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), b,
                                                cute.slice_(b_layout, (None, None, 0)), (bn, bk))
    grid = (cute.ceil_div(a.shape[0], bm), cute.ceil_div(b.shape[0], bn), 1)
    gemm_kernel(tiled_mma, load_a, tma_a, load_b, tma_b, c, a_layout, b_layout, stages).launch(
        grid=grid, block=GEMM_THREADS)
