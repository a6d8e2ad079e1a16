"""Kernel 13: a pipelined Hopper GEMM, ``C = A @ B^T`` with TMA loads and warpgroup MMAs.

::

    from examples import gemm
    gemm(a, b, c)            # a: (M, K), b: (N, K) bf16 or fp16, row-major; c: (M, N) fp32, bf16 or fp16
    gemm(a, b, c, stages=3, tile_n=128, epilogue="scalar", cluster_m=1, persistent=False, split_k=1)
    gemm(a, b, c, split_k=4)    # four CTAs per tile, each a quarter of K, the products summed across a cluster
    gemm(a, b, c, workspace=torch.zeros(workspace_elements(M, N), device="cuda"))   # splits through global memory
    gemm(a8, b8, c, scale_a=sa, scale_b=sb)   # 8-bit floats (E4M3/E5M2): c = sa * sb * a8 @ b8^T
    gemm(a, b, c, bias=bias, activation="gelu")  # c = gelu(a @ b^T + bias), fused into the epilogue

Each CTA computes ``128 x tile_n`` tiles of C (one, or, when persistent, every ``clusters``-th cluster tile from
its cluster's index on), walking K in k-tiles of 128 bytes (64 16-bit or 128 8-bit elements). It has three
warpgroups:

- warpgroups 0 and 1 (threads 0-255) are the consumers: a tiled warpgroup MMA of ``m64n{tile_n}k16``
  instructions with atom layout ``(2, 1, 1)`` (each warpgroup owns 64 rows), fp32 accumulators in registers;
- warpgroup 2 (threads 256-383) is the producer: one elected thread of its first warp issues the TMA loads
  of the A (``128 x 64``) and B (``tile_n x 64``) tiles of each k-tile into a ``stages``-deep ring of
  128B-swizzled K-major shared-memory buffers (``hopper_helpers.make_smem_layout_a/b``), joined to the consumers
  by a ``PipelineTmaAsync``: the ``full`` barrier of a stage counts the bytes of both tiles, the ``empty`` barrier
  one arrival per consumer warp.

The consumers wait for a stage, issue its four k-blocks of WGMMAs (descriptors from
``tiled_mma.make_fragment_A/B``), commit them as one group, and keep one group in flight
(``wait_group(1)``): the stage of the *previous* k-tile is released only once its group has completed. After
the last k-tile they wait for every group and write their accumulators to C, converted to C's type (see
``epilogue``).

Options (keyword arguments of :func:`gemm`; the defaults are the fastest configuration on an H100 over the
benchmark's shapes, benchmarks/RESULTS.md):

- ``epilogue`` (``"tma"``; ``"vector"``; or ``"scalar"``): ``"tma"`` goes through shared memory. Each consumer
  warpgroup writes its ``64 x tile_n`` accumulators in subtiles of 64 rows of 128 bytes (``64 x 64`` 16-bit or
  ``64 x 32`` fp32 elements, 128B-swizzled as ``hopper_helpers.make_smem_layout_epi`` lays them out), two
  buffers per warpgroup: ``stmatrix.x4`` for a 16-bit C, two adjacent columns per ``st.shared`` for fp32; then
  a proxy fence, the warpgroup's named barrier, and one thread's TMA store of the subtile, which clips at C's
  edges, while the warpgroup fills the other buffer. It needs a C that TMA can store to: unit column stride, a
  static row stride and N of whole 16-byte granules, a 16-byte aligned pointer (a TMA store writes whole
  granules); any other C is stored from registers as ``"vector"`` does. ``"vector"``: accumulators ``2j`` and
  ``2j + 1`` of a thread are two adjacent columns of one row, stored with one instruction
  (``st.global.v2.b32`` for fp32, 32 bits for a 16-bit pair) where the pair lies inside C, and the last column
  of an odd N alone; it needs the pairs aligned (C's column stride 1, an even static row stride and a pointer
  aligned to two elements), and stores any other C as ``"scalar"`` does, one element at a time, predicated on
  lying inside ``(M, N)``. The stored values are the same in every epilogue.
- ``split_k`` (``None``; or 1, 2, 4, 8): CTAs per tile along K. ``split_k`` CTAs, a cluster, compute one tile
  over consecutive ranges of its k-tiles (CTA ``r``: k-tiles ``r * k_tiles // split_k`` up to
  ``(r + 1) * k_tiles // split_k``); then, once every CTA of the cluster has read its stages (a cluster
  barrier), each sends its products of the other CTAs' column slices (``st.async``, into a buffer over their
  stages, completing bytes on their barrier) and sums the ``split_k`` products of its own slice in rank order
  -- the same sum in the same order for every element and run -- and stores its slice (TMA where the slice is
  a whole number of subtiles, else from registers). It needs a static K of at least ``split_k`` k-tiles and
  the ``128 x tile_n`` fp32 products to fit over the stages; it takes the cluster and one tile per CTA, so not
  with ``cluster_m=2`` or ``persistent``. ``None``, with neither of those asked for, splits K where C has few
  tiles: the largest of 2, 4, 8 whose CTAs fit one wave of the SMs, whose clusters fit the clusters a wave holds
  (``gemm_plan.cluster_capacity``), and that leave each split 8 k-tiles or more (512x512x16384: 16 tiles of
  128 x 128, split 4), else 1.
- ``workspace`` (``None``; or a zeroed Float32 tensor of ``gemm_split.workspace_elements(M, N)`` elements): a
  split of K summed through global memory instead of a cluster (``examples.gemm_split``): each CTA writes its
  products to its slot, counts itself in, waits (bounded) for the tile's other CTAs and sums its slice of the
  slots in slot order (the same bits on every run), as a cluster's split does; the counters are left zero. Not
  bounded by the clusters a wave holds (only by the SMs: ``tiles x split_k`` CTAs run at once), the default
  then splits where that keeps more of a wave busy than clusters would, by any of 2 to 8 with 16 or more k-tiles
  a split (``gemm_plan.through_workspace``: 512x512x16384 split 8, 128 CTAs; 640x640x16384 split 5, 125 CTAs),
  in 2x1 clusters where those were measured faster (``gemm_plan.split_pairs``: the two CTAs of a cluster take
  the same split of vertically adjacent tiles and share B's loads); and an explicit ``split_k`` goes through it:
  there any split of 1 to 16, whose first 1, 2, 4 or 8 CTAs of a tile (``gemm_split.summing_slices``) sum slices
  of the tile while the others only write their products (768x768: 36 tiles of 128 x 128 split by 3, 108 CTAs;
  ``workspace_elements(M, N, split_k)`` past 8), with ``cluster_m`` 1 (the default there) or 2. One workspace
  serves one GEMM at a time, of any shape that fits in it.
- ``persistent`` (``None``: ``True`` unless K is split; ``True``; ``False``; or a number of CTAs): ``False``
  launches a cluster per cluster tile; otherwise ``persistent`` CTAs (``True``: the SMs of device 0, 132 where
  no device can be asked; fewer when C has fewer tiles) walk the tiles, the pipeline's states carrying on from
  tile to tile, so the producer loads the next tile while the consumers store the last. Each tile starts its
  accumulators anew (``ACCUMULATE`` false for its first k-block).
- ``cluster_m`` (``None``: 2 unless K is split, or 1 for 8-bit inputs promoted with per-tensor scales where M or
  N is below 4096, ``gemm_plan.cluster_m_one``; ``2``; or ``1``): CTAs per cluster along M. The two CTAs of a
  2x1 cluster compute vertically adjacent tiles that share their B tile: each loads half of it and multicasts
  it to both (``CopyBulkTensorTileG2SMulticastOp``, mask ``0b11``); a stage's ``empty`` barrier then counts the
  consumer warps of both CTAs (each consumer warp's lanes 0 and 1 arrive on CTA 0's and CTA 1's), so neither
  producer refills a stage its peer still reads. When M has an odd number of tiles the second CTA's last tile
  lies past M: it computes it (its loads keep the pipeline's byte counts) and stores nothing.
- ``group_m`` (``8``; a positive int below 2**31; or ``None``): the order of the tiles. Cluster tiles go in groups of
  ``group_m`` rows of cluster tiles, M fastest within a group, then N, one group after another (``None``: one
  group, the whole of M). The CTAs at work at one time then read few A and B tiles, which stay in L2.
- ``tile_n`` (``None``: 256, or 128 for the wide shapes of few tiles that ``auto_tile_n`` names, where nothing else
  was asked for; 128 for 8-bit inputs promoted into fp32; ``256``, ``192`` or ``128``): the CTA tile's N. ``256``
  issues ``m64n256k16`` WGMMAs (64 x 256 per consumer warpgroup, 128 fp32 accumulators per thread) and halves the
  loads of A per FLOP; a stage holds 48 KiB, so at most 4 stages fit the 227 KiB of shared memory with the ``"tma"``
  epilogue's 32 KiB of buffers (``192``: 40 KiB a stage, up to 4, for an N that 192 columns divide better; ``128``:
  32 KiB a stage, up to 6). On an H200, in rounds alternating with 128 x 128 tiles, promoted FP8 in 128 x 192 tiles
  was within 2% of them on eight shapes of many tiles (a tie on average, ``benchmarks/RESULTS.md``), so no default
  takes it.
- ``stages`` (``None``: 4 with ``tile_n=256`` or ``192``, 6 with ``128``; or 2..6 as shared memory allows): the
  load pipeline's depth.
- ``reg_realloc`` (``None``: on with 8-bit inputs promoted, except with ``pingpong`` in 128 x 128 tiles; else off):
  the producer warpgroup lowers its register budget to ``PRODUCER_REGS`` (40) and the consumers raise theirs to
  ``CONSUMER_REGS`` (232) with ``setmaxnreg`` (40 + 2 x 232 = 3 x 168, the registers a 384-thread CTA starts with).
  Its PTX is assembled by a whole-program ptxas (a CUDA toolkit's, or pip ``nvidia-cuda-nvcc``), which keeps the
  reallocation in the cubin; nvJitLink would drop it (ptxas info C7504), and without a ptxas it does, with an
  ``AssemblerWarning``. The plain kernel needs no more than the 168 registers a thread starts with (no spills at any
  ``tile_n``). On an H100 the reallocation made 4096^3 and 8192^3 no faster and shapes of one tile per CTA about 20%
  slower (``benchmarks/RESULTS.md``), so it is off by default, except with 8-bit inputs promoted, whose paired
  k-tiles need the registers of a second partial, and whose 128 x 192 tiles those of 96 partials a thread (without
  the reallocation they would spill; 128 x 192 promoted tiles refuse ``reg_realloc=False``).

- 8-bit floats: A and B Float8E4M3FN or Float8E5M2 (either with either) run the same kernel with ``m64nNk32`` WGMMAs
  (``MmaF8Op``): a k-tile is 128 bytes of K either way (128 elements here, so rows of a multiple of 16 elements), the
  stages and the epilogue as for 16-bit inputs. The tensor cores add 8-bit products with about 14 bits of mantissa,
  not fp32's 24, so by default each k-tile's products go into fresh partials that are added to the fp32 accumulators
  (the promotion below, without scales; 128 x 128 tiles, or ``tile_n=192``), as ``torch._scaled_mm`` does by default;
  ``fast_accum=True`` leaves all of K to the tensor cores in the 128 x 256 tiles of 16-bit inputs (its
  ``use_fast_accum=True``: the same bits on an H200; at K = 16384 of unit normal inputs a mean error of 0.27 against
  0.013). ``scale_a`` and ``scale_b`` (Float32 tensors of one element, read on the device) scale the product as
  ``torch._scaled_mm``'s per-tensor scales do; 2-D ones are DeepSeek-V3's block scales, ``scale_a``
  ``(M, ceil(K / 128))`` (1x128 blocks of A's rows) and ``scale_b`` ``(ceil(N / 128), ceil(K / 128))`` (128x128 blocks
  of B), with 128 x 128 tiles: each k-tile's WGMMAs go into fresh accumulators, added to the tile's in fp32 times the
  two scales once they are done (``gemm_block_scaled``), so the tensor cores never accumulate across a scale block.
  With the consumers' registers raised (``reg_realloc``, the default with block scales) the k-tiles of 128 x 128 tiles
  go in pairs, one's promotion running while the next one's MMAs do (128 x 192 tiles have no registers for a second
  partial: one k-tile at a time); with ``pingpong=True`` the two consumer warpgroups take turns issuing a k-tile's
  MMAs instead.
- ``bias``, ``alpha``, ``activation`` (``None``, ``1.0``, ``None``): the fused epilogue. Before the stores
  convert them to C's type, each accumulator becomes ``activation(alpha * acc + bias[col])`` in fp32
  (``gemm_epilogue.fuse_epilogue``: four values at a time between register fences, the bias read at the thread's
  first column plus the C layout's constant offsets, nothing read for a column past N); with a split K, after
  the sum, on each CTA's slice. ``activation`` is ``"relu"``, ``"silu"``, ``"gelu"`` or ``"gelu_tanh"``, as
  torch's functions define them; ``alpha`` is part of the compiled kernel (keyed by value). With the defaults the
  kernel is the plain GEMM's.

The original configuration is ``tile_n=128, stages=4, reg_realloc=False, epilogue="scalar", cluster_m=1,
persistent=False, split_k=1``.

Edge tiles: TMA loads of a tile that reaches past ``M``, ``N`` or ``K`` fill the missing elements with zeros, so
they add nothing to the products; the TMA stores clip at C's edges (and a subtile wholly past N is not stored),
the register epilogues' predicates keep their stores inside C. A and B rows must start on 16-byte boundaries
(TMA's rule for a row stride): ``K`` a multiple of 8, or a padded row stride.
"""

import cute_py as cute
from cute_py import arch, pipeline
from cute_py.nvgpu import cpasync
from cute_py.nvgpu import warpgroup as wg
from cute_py.utils import LayoutEnum
from cute_py.utils import hopper_helpers as hh

from .gemm_args import (EPILOGUES, GEMM_TILE, MMA_THREADS, MMA_WARPGROUPS, STAGES, TILE_NS, block_scaled,
                        check_args, check_fused, check_promotion, k_tile)
from .gemm_epilogue import (ACTIVATIONS, EPI_BUFFERS, column_offsets, epi_tile, fuse_epilogue, reduce_splits,
                            split_recv_layout, store_tile, store_tile_tma)
from .gemm_gather import gathered_tile, wait_shard
from .gemm_block_scaled import block_scaled_tile
from .gemm_mainloop import mma_k_tiles
from .gemm_plan import (auto_tile_n, cluster_m_one, grid_ctas, pairs_aligned, resolve, through_workspace,
                        tma_storable)
from .gemm_split import check_workspace, fixup_splits, stored_slices

__all__ = ["gemm", "gemm_kernel", "GEMM_TILE", "GEMM_THREADS", "TILE_NS", "EPILOGUES", "ACTIVATIONS",
           "PRODUCER_REGS", "CONSUMER_REGS"]

GEMM_THREADS = MMA_THREADS + 128       # + the producer warpgroup
PRODUCER_WARP = MMA_THREADS // 32      # the first warp of the producer warpgroup issues the loads
PRODUCER_REGS = 40                     # setmaxnreg: the producer warpgroup's registers per thread ...
CONSUMER_REGS = 232                    # ... and each consumer warpgroup's: 128 * 40 + 256 * 232 <= 65536


@cute.kernel
def gemm_kernel(tiled_mma, load_a, tma_a, load_b, tma_b, c, a_layout, b_layout, tile, stages, reg_realloc,
                vector_c, cluster_m, store_c, tma_c, c_layout, epi_mma, group_m, split_k, slice_mma, bias, alpha,
                activation, fuse_cols, scales, block_scales, gather_flags=None, gather_state=None, gather=None,
                pingpong=False, workspace=None, counters=0, promote=False):
    bm, bn, bk = tile
    tidx, _, _ = arch.thread_idx()
    bidx, _, _ = arch.block_idx()
    gridx, _, _ = arch.grid_dim()
    warp = arch.make_warp_uniform(arch.warp_idx())
    if warp == PRODUCER_WARP:
        cpasync.prefetch_descriptor(load_a)
        cpasync.prefetch_descriptor(load_b)
    smem = arch.SmemAllocator()
    sA = smem.allocate_tensor(load_a.dtype, a_layout, 1024)    # (bm, bk, stages)
    sB = smem.allocate_tensor(load_b.dtype, b_layout, 1024)    # (bn, bk, stages)
    barriers = smem.allocate_mbarrier(2 * stages)
    sC = smem.allocate_tensor(store_c.dtype, c_layout, 1024) if store_c is not None else None   # (64, en, 4)
    fixup = workspace is not None                               # a split summed through global memory
    in_cluster = split_k if not fixup else 1                    # a tile's CTAs in one cluster
    red_bar = smem.allocate_mbarrier(1) if in_cluster > 1 else None
    tile_bytes = (bm + bn) * bk * load_a.dtype.width // 8       # A from this CTA, all of B (half from the peer)
    loads = pipeline.PipelineTmaAsync.create(
        num_stages=stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, cluster_m * MMA_THREADS // 32),
        tx_count=tile_bytes,
        barrier_storage=barriers,
        cta_layout_vmnk=cute.make_layout((1, cluster_m, 1, in_cluster)))
    slices = stored_slices(split_k, fixup)                      # the tile's CTAs that sum and store a slice
    bn_s = bn // slices                                         # the columns of a tile this CTA stores
    if in_cluster > 1:
        # the split reduction's receive buffer lies over the stages, its barrier expects the peers' slices
        recv = cute.make_tensor(cute.recast_ptr(sA.iterator, dtype=cute.Float32),
                                split_recv_layout(bm * bn_s // MMA_THREADS, split_k, MMA_THREADS))
        if tidx == 0:
            arch.mbarrier_init(red_bar, 1)
            arch.mbarrier_init_fence()
            arch.mbarrier_arrive_and_expect_tx(red_bar, (split_k - 1) * bm * bn_s * 4)

    # the tiles: the cluster's CTAs take cluster_m adjacent tiles of one column of C; cluster j takes the
    # cluster tiles j, j + clusters, j + 2 clusters, ... (one each when the grid covers C)
    m, n = c.shape
    k_tiles = (tma_a.shape[1] + bk - 1) // bk
    cluster_tiles_m = ((m + bm - 1) // bm + cluster_m - 1) // cluster_m
    tiles_n = (n + bn - 1) // bn
    num_tiles = cluster_tiles_m * tiles_n
    rank = bidx % cluster_m                 # along M, in a 2x1 cluster
    # the K split: in a cluster of split_k CTAs (then cluster_m is 1), or through the workspace, where a 2x1
    # cluster's two CTAs take the same split of two tiles
    split = bidx % split_k if cute.const_expr(cluster_m == 1) else bidx // cluster_m % split_k
    first = bidx // (cluster_m * split_k)
    clusters = gridx // (cluster_m * split_k)
    k_lo, k_hi = split * k_tiles // split_k, (split + 1) * k_tiles // split_k      # k_tiles >= split_k
    my_tiles = (num_tiles - first + clusters - 1) // clusters     # first < clusters: never negative
    group_m = cluster_tiles_m if group_m is None else group_m
    b_mask = (1 << cluster_m) - 1 if cluster_m > 1 else None        # B to every CTA of the cluster
    if warp >= PRODUCER_WARP:
        # the producer warpgroup: all four warps give registers back, one thread issues the loads
        if reg_realloc:
            arch.warpgroup_reg_dealloc(PRODUCER_REGS)
        if warp == PRODUCER_WARP:
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            deadline = arch.globaltimer() + gather[3] if gather is not None else None
            for i in range(my_tiles):
                tm, tn = _tile_of(first + i * clusters, cluster_tiles_m, tiles_n, group_m, cluster_m, rank)
                tm = gathered_tile(tm, gather, cluster_tiles_m * cluster_m)
                if gather is not None:
                    wait_shard(gather_flags, gather_state, gather, tm * bm, deadline)
                gA = cute.local_tile(tma_a, tile, (tm, tn, None), proj=(1, None, 1))    # (bm, bk, k-tiles)
                gB = cute.local_tile(tma_b, tile, (tm, tn, None), proj=(None, 1, 1))    # (bn, bk, k-tiles)
                tAsA, tAgA = cpasync.tma_partition(load_a, 0, cute.Layout(1), cute.group_modes(sA, 0, 2),
                                                   cute.group_modes(gA, 0, 2))
                # B: this CTA loads its 1/cluster_m of the tile and multicasts it to the cluster
                tBsB, tBgB = cpasync.tma_partition(load_b, rank, cute.Layout(cluster_m),
                                                   cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
                for k in range(k_lo, k_hi):
                    loads.producer_acquire(state)
                    cute.copy(load_a, tAgA[None, k], tAsA[None, state.index],
                              tma_bar_ptr=loads.producer_get_barrier(state))
                    cute.copy(load_b, tBgB[None, k], tBsB[None, state.index],
                              tma_bar_ptr=loads.producer_get_barrier(state), mcast_mask=b_mask)
                    loads.producer_commit(state)
                    state.advance()
            loads.producer_tail(state)
        if in_cluster > 1:
            arch.cluster_sync()          # the consumers' barrier before the reduction: every thread takes part
    else:
        if reg_realloc:
            arch.warpgroup_reg_alloc(CONSUMER_REGS)
        thr = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr.partition_A(sA))     # (1, 1, 4, stages) descriptors
        tCrB = tiled_mma.make_fragment_B(thr.partition_B(sB))
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        for i in range(my_tiles):
            tm, tn = _tile_of(first + i * clusters, cluster_tiles_m, tiles_n, group_m, cluster_m, rank)
            tm = gathered_tile(tm, gather, cluster_tiles_m * cluster_m)
            acc = tiled_mma.make_fragment_C(thr.partition_C(cute.local_tile(c, (bm, bn), (tm, tn))))
            if cute.const_expr(not promote):     # the tensor cores accumulate the whole of K
                mma_k_tiles(tiled_mma, acc, tCrA, tCrB, loads, read, release, k_lo, k_hi)
            else:                                # each k-tile promoted into fp32 (times its block scales)
                cC = thr.partition_C(cute.local_tile(cute.make_identity_tensor(c.shape), (bm, bn), (tm, tn)))
                block_scaled_tile(tiled_mma, acc, tCrA, tCrB, cC, block_scales, loads, read, release, k_lo, k_hi,
                                  tn, m, pingpong, reg_realloc and bn == 128)
            # this CTA stores the columns tn_s * bn_s .. of the tile: all of them, or with split_k > 1 its slice of
            # the sum of the cluster's partial products
            tn_s = tn * slices + split
            thr_s = slice_mma.get_slice(tidx)
            tCgC = thr_s.partition_C(cute.local_tile(c, (bm, bn_s), (tm, tn_s)))
            out = acc
            if split_k > 1:
                out = slice_mma.make_fragment_C(tCgC)
                if cute.const_expr(fixup):   # the slots of the tile's CTAs in global memory: each sums a slice
                    fixup_splits(acc, out, workspace, counters, first * cluster_m + rank, split, split_k, tidx)
                else:
                    arch.cluster_sync()      # every CTA of the cluster has read its stages: they take the slices
                    reduce_splits(acc, out, recv, red_bar, split, split_k, tidx)
            cC = cute.local_tile(cute.make_identity_tensor(c.shape), (bm, bn_s), (tm, tn_s))
            if bias is not None or alpha != 1.0 or activation is not None or scales is not None:
                fuse_epilogue(out, thr_s.partition_C(cC), fuse_cols, bias, alpha, activation, n, scales)
            # a tile past M (the second CTA of a cluster, for an odd number of M tiles), or a slice past N, is not
            # stored: its tile index lies outside the tiled C (whose tile modes of extent 1 have stride 0); through
            # a workspace, the CTAs past the summing slices store nothing
            n_stored = n if slices == split_k else cute.where(split < slices, n, 0)
            if tm * bm < m and tn_s * bn_s < n_stored:
                if store_c is not None:
                    store_tile_tma(out, store_c, tma_c, sC, epi_mma, tidx, tm, tn_s, bn_s, m, n)
                else:
                    store_tile(out, tCgC, thr_s.partition_C(cC), c, m, n, vector_c)
        if store_c is not None and tidx % 128 == 0:
            arch.tma_store_wait(0, read=True)     # the last stores have read shared memory before the CTA exits


@cute.jit
def _tile_of(t, cluster_tiles_m, tiles_n, group_m, cluster_m, rank):
    """The tile ``(tm, tn)`` of C that a cluster's CTA ``rank`` computes as the cluster's ``t``-th tile: the
    cluster tiles in groups of ``group_m`` rows of cluster tiles (the last group may be shorter), a group's
    tiles M fastest, then N; the groups one after another. A group of a few rows of tiles across all of N
    keeps the A and B tiles that concurrent CTAs read few (and in L2)."""
    group = t // (group_m * tiles_n)
    first = group * group_m
    rows = cute.min(group_m, cluster_tiles_m - first)
    within = t - group * (group_m * tiles_n)
    return (first + within % rows) * cluster_m + rank, within // rows


def _warpgroup_mma(ab, warpgroups, tiler_mn, b_type=None):
    """The tiled warpgroup MMA of K-major ``ab`` operands (B of ``b_type``, by default ``ab``) into fp32:
    ``warpgroups`` along M, each an instruction of ``tiler_mn``."""
    return hh.make_trivial_tiled_mma(ab, ab if b_type is None else b_type, wg.OperandMajorMode.K,
                                     wg.OperandMajorMode.K, cute.Float32, (warpgroups, 1, 1), tiler_mn)


@cute.jit
def gemm(a, b, c, stages=None, tile_n=None, reg_realloc=None, epilogue="tma", cluster_m=None, persistent=None,
         group_m=8, split_k=None, bias=None, alpha=1.0, activation=None, scale_a=None, scale_b=None, pingpong=False,
         workspace=None, fast_accum=False):
    """``c[i, j] = sum_k a[i, k] * b[j, k]`` (``C = A @ B^T``), accumulated in fp32 and rounded once to C's type;
    with ``bias``, ``alpha`` or ``activation``, ``c[i, j] = activation(alpha * sum_k a[i, k] b[j, k] + bias[j])``,
    all in fp32 before the one rounding (``activation``: ``"relu"``, ``"silu"``, ``"gelu"``, ``"gelu_tanh"``, as
    torch's; ``bias``: N values, Float32, BFloat16 or Float16; ``alpha``: a number, part of the compiled kernel).

    ``a``: (M, K) and ``b``: (N, K), both BFloat16, both Float16, or 8-bit floats (Float8E4M3FN,
    Float8E5M2; ``scale_a``, ``scale_b``: their per-tensor scales), row-major with 16-byte aligned rows;
    ``c``: (M, N) Float32, BFloat16 or Float16 (any strides); any M, N, K >= 1. ``stages``: the load pipeline's
    depth (2..6, as shared memory allows: at most 4 with ``tile_n=256`` or ``192``); ``tile_n``: the CTA tile's N
    (128, 192 or 256; 8-bit inputs promoted into fp32, 128 or 192); ``reg_realloc``: move registers from the
    producer warpgroup to the consumers (``setmaxnreg``; ``None``: with 8-bit inputs promoted, where it lets their
    k-tiles go in pairs or holds 128 x 192 tiles' partials, unless ``pingpong`` in 128 x 128 tiles);
    ``epilogue``: ``"tma"`` (through shared memory and TMA stores where TMA can store to C, else as
    ``"vector"``), ``"vector"`` (two adjacent columns per store where C's layout aligns them, else as
    ``"scalar"``) or ``"scalar"`` (one element per store); ``cluster_m``: CTAs per cluster along M (1 or 2; 2
    multicasts B); ``persistent``: ``False`` (a CTA per tile), ``True`` (a CTA per SM, each walking tiles) or a
    number of CTAs; ``group_m``: rows of cluster tiles per group of the tile order (``None``: all of M);
    ``split_k``: CTAs that share a tile's K range, summing their products across a cluster (1, 2, 4 or 8), or
    through the ``workspace`` when one is given (1 to 16).
    ``workspace``: a zeroed Float32 tensor (``gemm_split.workspace_elements``) through which a split of K is
    summed instead of in a cluster. ``None`` for ``tile_n``, ``stages``, ``cluster_m``, ``persistent`` and
    ``split_k`` chooses them: 128 x 256 tiles in 4 stages, split K for shapes of few tiles, else persistent 2x1
    clusters (one CTA a cluster for 8-bit inputs promoted with per-tensor scales where M or N is below 4096);
    128 x 128 tiles in 6 stages where ``auto_tile_n`` names them. ``fast_accum`` (8-bit inputs with
    per-tensor scales or none): ``False`` promotes each k-tile's products (128 of K) out of the tensor cores into
    the fp32 accumulators, in 128 x 128 tiles (or 128 x 192 ones), as ``torch._scaled_mm`` does by default; ``True``
    leaves all of K to the tensor cores' own accumulation, which keeps fewer bits than fp32 (``torch._scaled_mm``'s
    ``use_fast_accum=True``; the same bits on an H200): faster, with an error that grows with K. ``pingpong`` (8-bit
    inputs promoted only): the consumer warpgroups take turns issuing each k-tile's MMAs, one's promotion
    overlapping the other's MMAs. See the module for the kernel."""
    launch_gemm(a, b, c, stages, tile_n, reg_realloc, epilogue, cluster_m, persistent, group_m, split_k, bias,
                alpha, activation, scale_a, scale_b, pingpong=pingpong, workspace=workspace, fast_accum=fast_accum)


@cute.jit
def launch_gemm(a, b, c, stages, tile_n, reg_realloc, epilogue, cluster_m, persistent, group_m, split_k, bias, alpha,
                activation, scale_a, scale_b, gather_flags=None, gather_state=None, gather=None, pingpong=False,
                workspace=None, fast_accum=False):
    """:func:`gemm`'s launch (its arguments in order), and the hooks of ``gemm_gather``: ``gather``
    ``(shard_rows, rank, world, timeout_ns)`` with the Int32 tensors ``gather_flags`` (a flag per shard of A's
    rows) and ``gather_state`` (where a late shard is recorded); None for a plain GEMM."""
    if gather is not None:
        shard_rows, rank, world, timeout_ns = gather
        if shard_rows % GEMM_TILE[0] or a.shape[0] != world * shard_rows or not 0 <= rank < world:
            raise cute.CuteValueError(f"gemm: a gathered A is world ({world}) shards of shard_rows ({shard_rows}) "
                                      f"rows, a multiple of {GEMM_TILE[0]}, with 0 <= rank ({rank}) < world; A has "
                                      f"{a.shape[0]} rows")
        gather = (shard_rows, rank, world, timeout_ns, GEMM_TILE[0])
    block = block_scaled(a, b, scale_a, scale_b)
    promote = check_promotion(a, block, fast_accum)     # each k-tile's products promoted into fp32
    if block and tile_n not in (None, 128):
        raise cute.CuteValueError(f"gemm: block scales take tile_n=128 (a tile's columns are one 128-column block "
                                  f"of B's scales), got {tile_n!r}")
    if promote and tile_n not in (None, 128, 192):
        raise cute.CuteValueError(f"gemm: 8-bit inputs promoted into fp32 (fast_accum=False) take tile_n=128 or 192 "
                                  f"(a k-tile's partial products beside the accumulators: 128 x 256 tiles would "
                                  f"need 256 registers a thread for them), got {tile_n!r}")
    if type(pingpong) is not bool or (pingpong and not promote):
        raise cute.CuteValueError(f"gemm: pingpong is a bool, True only with 8-bit inputs promoted into fp32 (block "
                                  f"scales, or fast_accum=False: the warpgroups take turns around their "
                                  f"promotions), got {pingpong!r}" + ("" if promote else " without promotions"))
    if promote and tile_n is None:
        tile_n = 128
    auto = split_k is None and cluster_m is None and persistent is None
    if auto and promote and not block and workspace is None and cluster_m_one(a.shape[0], b.shape[0]):
        cluster_m = 1       # (measured: gemm_plan.cluster_m_one)
    if workspace is not None and auto and tile_n is None:  # a split through global memory, where it fills more SMs
        tile_n, split_k, cluster_m = through_workspace(a.shape[0], b.shape[0], a.shape[1], k_tile(a.element_type))
    via_workspace = workspace is not None and split_k is not None   # asked for, or chosen just above
    if tile_n is None:
        tile_n = auto_tile_n(a.shape[0], b.shape[0], a.shape[1], k_tile(a.element_type)) if auto else 256
    if reg_realloc is None:
        reg_realloc = promote and (not pingpong or tile_n != 128)
    if promote and tile_n == 192 and reg_realloc is not True:
        raise cute.CuteValueError(f"gemm: 8-bit inputs promoted into fp32 in 128 x 192 tiles take reg_realloc=True "
                                  f"(96 accumulators and 96 partials a thread spill at the 168 registers a thread "
                                  f"starts with), got {reg_realloc!r}")
    if stages is None:
        stages = STAGES.get(tile_n, 4)
    check_args(a, b, c, stages, tile_n, reg_realloc, epilogue, cluster_m, persistent, group_m, split_k,
               workspace is not None)
    alpha = check_fused(c, bias, alpha, activation, *((None, None) if block else (scale_a, scale_b)))
    scales = None if scale_a is None or block else (scale_a, scale_b)
    block_scales = (scale_a, scale_b) if block else None
    tile = (GEMM_TILE[0], tile_n, k_tile(a.element_type))
    bm, bn, bk = tile
    cluster_m, persistent, split_k = resolve(a.shape[0], b.shape[0], a.shape[1], tile, stages, cluster_m,
                                              persistent, split_k, via_workspace)
    fixup = via_workspace and split_k > 1
    counters = 0                    # the workspace's elements before the slots
    if workspace is not None:       # its type even where the plan does not use it
        counters = check_workspace(workspace, a.shape[0], b.shape[0], tile, split_k, fixup, cluster_m)
    bn_s = bn // stored_slices(split_k, fixup)                  # the columns of a tile a CTA stores
    ab = a.element_type
    tiled_mma = _warpgroup_mma(ab, MMA_WARPGROUPS, (64, bn), b.element_type)
    a_layout = hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, tile, ab, stages)
    b_layout = hh.make_smem_layout_b(LayoutEnum.ROW_MAJOR, tile, b.element_type, stages)
    load_a, tma_a = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                                cute.slice_(a_layout, (None, None, 0)), (bm, bk))
    b_op = cpasync.CopyBulkTensorTileG2SMulticastOp() if cluster_m > 1 else cpasync.CopyBulkTensorTileG2SOp()
    load_b, tma_b = cpasync.make_tiled_tma_atom(b_op, b, cute.slice_(b_layout, (None, None, 0)), (bn, bk),
                                                num_multicast=cluster_m)
    # the MMA of the columns a CTA stores: all of the tile's, or its slice of them with split_k > 1
    slice_mma = tiled_mma if split_k == 1 else _warpgroup_mma(ab, MMA_WARPGROUPS, (64, bn_s))
    store_c = tma_c = c_layout = epi_mma = None
    tile_epi = epi_tile(c.element_type)
    if epilogue == "tma" and tma_storable(c) and bn_s % tile_epi[1] == 0:
        c_layout = hh.make_smem_layout_epi(c.element_type, LayoutEnum.ROW_MAJOR, tile_epi,
                                           MMA_WARPGROUPS * EPI_BUFFERS)
        store_c, tma_c = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c,
                                                     cute.slice_(c_layout, (None, None, 0)), tile_epi)
        epi_mma = _warpgroup_mma(ab, 1, tile_epi)
    vector_c = epilogue in ("vector", "tma") and pairs_aligned(c)
    grid = (grid_ctas(a.shape[0], b.shape[0], bm, bn, cluster_m, persistent) * split_k, 1, 1)
    gemm_kernel(tiled_mma, load_a, tma_a, load_b, tma_b, c, a_layout, b_layout, tile, stages, reg_realloc,
                vector_c, cluster_m, store_c, tma_c, c_layout, epi_mma, group_m, split_k,
                slice_mma, bias, alpha, activation, column_offsets(slice_mma, (bm, bn_s)), scales,
                block_scales, gather_flags, gather_state, gather, pingpong, workspace if fixup else None,
                counters, promote).launch(grid=grid, block=GEMM_THREADS,
                                          cluster=(cluster_m * (1 if fixup else split_k), 1, 1))
