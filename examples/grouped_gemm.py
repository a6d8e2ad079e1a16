"""A grouped GEMM for mixtures of experts: ``C_i = A_i @ B_i^T`` for every expert ``i`` in one launch, the group
sizes read on the device (no host synchronisation: a launch can be captured in a CUDA graph and replayed with new
sizes).

::

    from examples.grouped_gemm import grouped_gemm, grouped_gemm_masked
    grouped_gemm(a, b, c, offs)              # a: (total_M, K), b: (E, N, K), c: (total_M, N), offs: (E,) int32
    grouped_gemm_masked(a, b, c, masked_m)   # a: (E, max_M, K), b: (E, N, K), c: (E, max_M, N), masked_m: (E,) int32

- **Contiguous groups** (:func:`grouped_gemm`): the tokens of expert ``i`` are rows ``offs[i - 1]`` up to
  ``offs[i]`` of A and C (``offs[-1]`` read as 0), ``offs`` the cumulative ends as ``torch._grouped_mm`` takes
  them. ``offs`` must not decrease and its values must lie in ``[0, total_M]``; rows past ``offs[E - 1]`` are
  neither read into a product nor written. The host cannot read ``offs`` without a synchronisation, so the
  kernel clamps instead of checking: each end is clamped into ``[0, total_M]`` and each start to at most its end,
  so offsets that break the rule give wrong (empty or shortened) groups but never a write outside C.
- **Masked groups** (:func:`grouped_gemm_masked`): expert ``i`` owns rows ``0 .. masked_m[i] - 1`` of
  ``A[i]`` and ``C[i]`` (DeepGEMM's masked layout); ``masked_m[i]`` is clamped into ``[0, max_M]``. Rows of
  ``C[i]`` from ``masked_m[i]`` on are not written.

A and B are both BFloat16 or both Float16, K-major (rows of 16-byte multiples: K a multiple of 8, or padded rows);
C is BFloat16 or Float16, N contiguous; products accumulate in fp32 and are rounded once. Any N, K >= 1.

The kernel is :mod:`examples.gemm`'s (kernel 13's) pipeline: ``128 x tile_n`` CTA tiles, k-tiles of 64, a
producer warpgroup whose elected thread issues the TMA loads of A and B into a ``stages``-deep ring joined to two
consumer warpgroups of WGMMAs by a ``PipelineTmaAsync``. The grid is persistent, one CTA per SM (fewer for small
problems: the host's bound on the tiles), and the CTAs walk the tiles of all groups, which they locate from the
sizes themselves (:func:`examples.grouped_gemm_tiles.find_tile`): group after group, N fastest inside an M tile.
An M tile of a group starts at the group's first row: its loads of A are TMA boxes at that row (a box reaching
past the group reads the next group's rows, or TMA's zeros past A's end: they feed only accumulator rows that are
never stored); B's boxes come from expert ``i``'s matrix of a 3-D ``(N, K, E)`` TMA view, zero past N and K.
The epilogue goes through shared memory (``stmatrix``): a 64-row subtile lying wholly inside its group is
TMA-stored (clipping at N), the last, partial rows of a group are copied to C in 16-byte chunks by the threads,
predicated on the group's row count (one element at a time where C's rows are not whole 16-byte chunks).
"""

import cute_py as cute
from cute_py import arch, pipeline
from cute_py.nvgpu import cpasync
from cute_py.nvgpu import warpgroup as wg
from cute_py.utils import LayoutEnum
from cute_py.utils import hopper_helpers as hh

from .gemm_args import MMA_THREADS, MMA_WARPGROUPS
from .gemm_epilogue import EPI_BUFFERS, epi_tile
from .gemm_mainloop import mma_k_tiles
from .grouped_gemm_args import GROUPED_STAGES, check_grouped, tma_storable
from .grouped_gemm_tiles import find_tile, store_group_tile
from .tma_tiled import sm_count

__all__ = ["grouped_gemm", "grouped_gemm_masked", "grouped_gemm_kernel", "GROUPED_TILE_M", "GROUPED_THREADS"]

GROUPED_TILE_M = 128
BK = 64                                 # 128 bytes of 16-bit K per k-tile
GROUPED_THREADS = MMA_THREADS + 128     # + the producer warpgroup
PRODUCER_WARP = MMA_THREADS // 32


@cute.jit
def _group_view(t, g, first, masked):
    """Group ``g``'s 2-D view of a (rows, cols) tensor (contiguous: rows from ``first`` on) or of a
    (rows, cols, E) one (masked: expert ``g``'s matrix)."""
    if masked:
        return t[None, None, g]
    return cute.domain_offset((first, 0), t)


@cute.kernel
def grouped_gemm_kernel(tiled_mma, load_a, tma_a, load_b, tma_b, store_c, tma_c, c, sizes, a_layout, b_layout,
                        c_layout, epi_mma, tile, stages, masked):
    bm, bn, bk = tile
    tidx, _, _ = arch.thread_idx()
    bidx, _, _ = arch.block_idx()
    gridx, _, _ = arch.grid_dim()
    warp = arch.make_warp_uniform(arch.warp_idx())
    lane = arch.lane_idx()
    if warp == PRODUCER_WARP:
        cpasync.prefetch_descriptor(load_a)
        cpasync.prefetch_descriptor(load_b)
    smem = arch.SmemAllocator()
    sA = smem.allocate_tensor(load_a.dtype, a_layout, 1024)    # (bm, bk, stages)
    sB = smem.allocate_tensor(load_b.dtype, b_layout, 1024)    # (bn, bk, stages)
    barriers = smem.allocate_mbarrier(2 * stages)
    sC = smem.allocate_tensor(c.element_type, c_layout, 1024)  # (64, 64, 4)
    loads = pipeline.PipelineTmaAsync.create(
        num_stages=stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, MMA_THREADS // 32),
        tx_count=(bm + bn) * bk * load_a.dtype.width // 8,
        barrier_storage=barriers,
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)))
    total_rows, n = c.shape[0], c.shape[1]
    k_tiles = (tma_a.shape[1] + bk - 1) // bk
    tiles_n = (n + bn - 1) // bn
    groups = cute.size(sizes)
    if warp >= PRODUCER_WARP:
        if warp == PRODUCER_WARP:
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            t = bidx
            g, before, g0, base, first, rows = find_tile(t, 0, 0, sizes, masked, total_rows, groups, bm, tiles_n,
                                                         lane)
            while g < groups:
                tm = (t - before) // tiles_n
                tn = t - before - tm * tiles_n
                gA = cute.local_tile(_group_view(tma_a, g, first, masked), tile, (tm, tn, None), proj=(1, None, 1))
                gB = cute.local_tile(tma_b[None, None, g], tile, (tm, tn, None), proj=(None, 1, 1))
                tAsA, tAgA = cpasync.tma_partition(load_a, 0, cute.Layout(1), cute.group_modes(sA, 0, 2),
                                                   cute.group_modes(gA, 0, 2))
                tBsB, tBgB = cpasync.tma_partition(load_b, 0, cute.Layout(1), cute.group_modes(sB, 0, 2),
                                                   cute.group_modes(gB, 0, 2))
                for k in range(k_tiles):
                    loads.producer_acquire(state)
                    cute.copy(load_a, tAgA[None, k], tAsA[None, state.index],
                              tma_bar_ptr=loads.producer_get_barrier(state))
                    cute.copy(load_b, tBgB[None, k], tBsB[None, state.index],
                              tma_bar_ptr=loads.producer_get_barrier(state))
                    loads.producer_commit(state)
                    state.advance()
                t = t + gridx
                g, before, g0, base, first, rows = find_tile(t, g0, base, sizes, masked, total_rows, groups, bm,
                                                             tiles_n, lane)
            loads.producer_tail(state)
    else:
        thr = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr.partition_A(sA))     # (1, 1, 4, stages) descriptors
        tCrB = tiled_mma.make_fragment_B(thr.partition_B(sB))
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        c0 = c[None, None, 0] if masked else c
        acc = tiled_mma.make_fragment_C(thr.partition_C(cute.local_tile(c0, (bm, bn), (0, 0))))
        t = bidx
        g, before, g0, base, first, rows = find_tile(t, 0, 0, sizes, masked, total_rows, groups, bm, tiles_n,
                                                     lane)
        while g < groups:
            tm = (t - before) // tiles_n
            tn = t - before - tm * tiles_n
            mma_k_tiles(tiled_mma, acc, tCrA, tCrB, loads, read, release, 0, k_tiles)
            box_c = _group_view(tma_c, g, first, masked) if store_c is not None else None
            store_group_tile(acc, store_c, box_c, _group_view(c, g, first, masked), sC, epi_mma, tidx, tm, tn, bm,
                             bn, rows, n, store_c is not None)
            t = t + gridx
            g, before, g0, base, first, rows = find_tile(t, g0, base, sizes, masked, total_rows, groups, bm,
                                                         tiles_n, lane)
        if tidx % 128 == 0:
            arch.tma_store_wait(0, read=True)     # the last stores have read shared memory before the CTA exits


def _experts_last(t):
    """A (E, rows, cols) tensor viewed as (rows, cols, E)."""
    return cute.make_tensor(t.iterator, cute.select(t.layout, mode=[1, 2, 0]))


def _launch(who, a, b, c, sizes, masked, tile_n, stages, ctas):
    if stages is None:
        stages = GROUPED_STAGES.get(tile_n, 4)
    e, n, k, rows = check_grouped(who, a, b, c, sizes, masked, tile_n, stages)
    if ctas is not None and (type(ctas) is not int or ctas < 1):
        raise cute.CuteValueError(f"{who}: ctas is None (one per SM) or a positive int, got {ctas!r}")
    ab = a.element_type
    tile = (GROUPED_TILE_M, tile_n, BK)
    bm, bn, bk = tile
    tiled_mma = hh.make_trivial_tiled_mma(ab, ab, wg.OperandMajorMode.K, wg.OperandMajorMode.K, cute.Float32,
                                          (MMA_WARPGROUPS, 1, 1), (64, bn))
    a_layout = hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, tile, ab, stages)
    b_layout = hh.make_smem_layout_b(LayoutEnum.ROW_MAJOR, tile, ab, stages)
    av, cv = (_experts_last(a), _experts_last(c)) if masked else (a, c)
    g2s = cpasync.CopyBulkTensorTileG2SOp()
    load_a, tma_a = cpasync.make_tiled_tma_atom(g2s, av, cute.slice_(a_layout, (None, None, 0)), (bm, bk))
    load_b, tma_b = cpasync.make_tiled_tma_atom(g2s, _experts_last(b), cute.slice_(b_layout, (None, None, 0)),
                                                (bn, bk))
    tile_epi = epi_tile(c.element_type)
    c_layout = hh.make_smem_layout_epi(c.element_type, LayoutEnum.ROW_MAJOR, tile_epi, MMA_WARPGROUPS * EPI_BUFFERS)
    store_c = tma_c = None
    if tma_storable(c):
        store_c, tma_c = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), cv,
                                                     cute.slice_(c_layout, (None, None, 0)), tile_epi)
    epi_mma = hh.make_trivial_tiled_mma(ab, ab, wg.OperandMajorMode.K, wg.OperandMajorMode.K, cute.Float32,
                                        (1, 1, 1), tile_epi)
    # at most one partial M tile per group besides the whole ones of the rows
    m_tiles = e * cute.ceil_div(rows, bm) if masked else cute.ceil_div(rows, bm) + e
    tiles = m_tiles * cute.ceil_div(n, bn)
    grid = min(sm_count() if ctas is None else ctas, tiles)
    grouped_gemm_kernel(tiled_mma, load_a, tma_a, load_b, tma_b, store_c, tma_c, cv, sizes, a_layout, b_layout,
                        c_layout, epi_mma, tile, stages, masked).launch(grid=(grid, 1, 1), block=GROUPED_THREADS)


@cute.jit
def grouped_gemm(a, b, c, offs, tile_n=256, stages=None, ctas=None):
    """``C[r] = A[r] @ B[i]^T`` for every row ``r`` of every expert ``i``, its rows ``offs[i - 1] <= r <
    offs[i]`` (``offs[-1]`` read as 0), accumulated in fp32 and rounded once to C's type.

    ``a``: (total_M, K); ``b``: (E, N, K); ``c``: (total_M, N); ``offs``: (E,) Int32 on the device, cumulative
    ends, non-decreasing, each ``<= total_M`` (read on the device only, clamped there: see the module). Rows of C
    past ``offs[E - 1]`` are not written. ``tile_n``: the CTA tile's N (128 or 256); ``stages``: the load
    pipeline's depth (default: as many as shared memory holds); ``ctas``: the persistent CTAs (default: one per
    SM, at most one per tile the shapes allow). The launch never reads ``offs`` on the host: it can be captured
    in a CUDA graph and replayed after new offsets are copied into ``offs``."""
    _launch("grouped_gemm", a, b, c, offs, False, tile_n, stages, ctas)


@cute.jit
def grouped_gemm_masked(a, b, c, masked_m, tile_n=256, stages=None, ctas=None):
    """``C[i, r] = A[i, r] @ B[i]^T`` for every expert ``i`` and row ``r < masked_m[i]``, accumulated in fp32 and
    rounded once to C's type; rows of ``C[i]`` from ``masked_m[i]`` on are not written.

    ``a``: (E, max_M, K); ``b``: (E, N, K); ``c``: (E, max_M, N); ``masked_m``: (E,) Int32 on the device, each in
    ``[0, max_M]`` (read on the device only, clamped there). Options as :func:`grouped_gemm`'s."""
    _launch("grouped_gemm_masked", a, b, c, masked_m, True, tile_n, stages, ctas)
