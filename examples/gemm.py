"""Kernel 13: a pipelined Hopper GEMM, ``C = A @ B^T`` with TMA loads and warpgroup MMAs.

::

    from examples import gemm
    gemm(a, b, c)            # a: (M, K), b: (N, K) bf16 or fp16, row-major; c: (M, N) fp32, bf16 or fp16
    gemm(a, b, c, stages=3, tile_n=128, reg_realloc=True, epilogue="scalar")

Each CTA computes ``128 x tile_n`` tiles of C (one, or, when persistent, every ``clusters``-th cluster tile from
its cluster's index on), walking K in ``64``-wide k-tiles. It has three warpgroups:

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
the last k-tile they wait for every group and write their accumulators to C, converted to C's type, predicated
on lying inside ``(M, N)``.

Options (keyword arguments of :func:`gemm`; the defaults are the fastest configuration at 8192^3):

- ``cluster_m`` (``1``; or ``2``): CTAs per cluster along M. The two CTAs of a 2x1 cluster compute vertically
  adjacent tiles that share their B tile: each loads half of it and multicasts it to both
  (``CopyBulkTensorTileG2SMulticastOp``, mask ``0b11``); a stage's ``empty`` barrier then counts the consumer warps
  of both CTAs (each consumer warp's lanes 0 and 1 arrive on CTA 0's and CTA 1's), so neither producer refills a
  stage its peer still reads. When M has an odd number of tiles the second CTA's last tile lies past M: its A
  loads are all zero fill and its stores are predicated away.
- ``persistent`` (``False``; ``True``; or a number of CTAs): ``False`` launches a cluster per cluster tile;
  otherwise ``persistent`` CTAs (``True``: the SMs of device 0, 132 where no device can be asked; fewer when C
  has fewer tiles) walk the tiles, the pipeline's states carrying on from tile to tile, so the producer loads
  the next tile while the consumers store the last. Each tile starts its accumulators anew (``ACCUMULATE`` false for its first k-block).

- ``tile_n`` (``256``; or ``128``): the CTA tile's N. ``256`` issues ``m64n256k16`` WGMMAs (64 x 256 per
  consumer warpgroup, 128 fp32 accumulators per thread) and halves the loads of A per FLOP; a stage holds
  48 KiB, so at most 4 stages fit the 227 KiB of shared memory (``128``: 32 KiB a stage, up to 6).
- ``stages`` (``4``): the load pipeline's depth, 2..6 as shared memory allows.
- ``reg_realloc`` (``False``): the producer warpgroup lowers its register budget to ``PRODUCER_REGS`` (40) and
  the consumers raise theirs to ``CONSUMER_REGS`` (232) with ``setmaxnreg``. The kernel needs no more than the
  168 registers a thread of a 384-thread block has (no spills at either ``tile_n``), and nvJitLink, which
  assembles the JIT's PTX, drops ``setmaxnreg`` (ptxas info C7504: "ignored to maintain compatibility across
  compilation units"); so it is off by default, and the instructions it emits change no result where they act.
- ``epilogue`` (``"vector"``; or ``"scalar"``): accumulators ``2j`` and ``2j + 1`` of a thread are two adjacent
  columns of one row; ``"vector"`` stores both with one instruction (``st.global.v2.b32`` for fp32, 32 bits for a
  16-bit pair) where the pair lies inside C, and the last column of an odd N alone. It needs the pairs aligned:
  C's column stride 1, an even static row stride and a pointer aligned to two elements (known when the kernel is
  specialised); any other C is stored as ``"scalar"`` does, one element at a time. The stored values are the
  same either way.

The original configuration is ``tile_n=128, reg_realloc=False, epilogue="scalar"`` (``stages=4``).

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

from .tma_tiled import sm_count

__all__ = ["gemm", "gemm_kernel", "GEMM_TILE", "GEMM_THREADS", "TILE_NS", "EPILOGUES", "PRODUCER_REGS",
           "CONSUMER_REGS"]

GEMM_TILE = (128, 128, 64)             # the CTA tile of tile_n=128; tile_n=256 gives (128, 256, 64)
TILE_NS = (128, 256)                   # the CTA tile's N extents
EPILOGUES = ("scalar", "vector")
CLUSTER_MS = (1, 2)                    # CTAs per cluster along M (2: B multicast to both)
MMA_WARPGROUPS = 2
MMA_THREADS = 128 * MMA_WARPGROUPS
GEMM_THREADS = MMA_THREADS + 128       # + the producer warpgroup
PRODUCER_WARP = MMA_THREADS // 32      # the first warp of the producer warpgroup issues the loads
PRODUCER_REGS = 40                     # setmaxnreg: the producer warpgroup's registers per thread ...
CONSUMER_REGS = 232                    # ... and each consumer warpgroup's: 128 * 40 + 256 * 232 <= 65536
SMEM_LIMIT = 227 * 1024


@cute.kernel
def gemm_kernel(tiled_mma, load_a, tma_a, load_b, tma_b, c, a_layout, b_layout, tile, stages, reg_realloc,
                vector_c, cluster_m):
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
    tile_bytes = (bm + bn) * bk * load_a.dtype.width // 8       # A from this CTA, all of B (half from the peer)
    loads = pipeline.PipelineTmaAsync.create(
        num_stages=stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, cluster_m * MMA_THREADS // 32),
        tx_count=tile_bytes,
        barrier_storage=barriers,
        cta_layout_vmnk=cute.make_layout((1, cluster_m, 1, 1)))

    # the tiles: the cluster's CTAs take cluster_m adjacent tiles of one column of C; cluster j takes the
    # cluster tiles j, j + clusters, j + 2 clusters, ... (one each when the grid covers C)
    m, n = c.shape
    k_tiles = (tma_a.shape[1] + bk - 1) // bk
    cluster_tiles_m = ((m + bm - 1) // bm + cluster_m - 1) // cluster_m
    num_tiles = cluster_tiles_m * ((n + bn - 1) // bn)
    rank = bidx % cluster_m
    first = bidx // cluster_m
    clusters = gridx // cluster_m
    my_tiles = (num_tiles - first + clusters - 1) // clusters     # first < clusters: never negative
    b_mask = (1 << cluster_m) - 1 if cluster_m > 1 else None        # B to every CTA of the cluster
    if warp >= PRODUCER_WARP:
        # the producer warpgroup: all four warps give registers back, one thread issues the loads
        if reg_realloc:
            arch.warpgroup_reg_dealloc(PRODUCER_REGS)
        if warp == PRODUCER_WARP:
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            for i in range(my_tiles):
                t = first + i * clusters
                tm, tn = (t % cluster_tiles_m) * cluster_m + rank, t // cluster_tiles_m
                gA = cute.local_tile(tma_a, tile, (tm, tn, None), proj=(1, None, 1))    # (bm, bk, k-tiles)
                gB = cute.local_tile(tma_b, tile, (tm, tn, None), proj=(None, 1, 1))    # (bn, bk, k-tiles)
                tAsA, tAgA = cpasync.tma_partition(load_a, 0, cute.Layout(1), cute.group_modes(sA, 0, 2),
                                                   cute.group_modes(gA, 0, 2))
                # B: this CTA loads its 1/cluster_m of the tile and multicasts it to the cluster
                tBsB, tBgB = cpasync.tma_partition(load_b, rank, cute.Layout(cluster_m),
                                                   cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
                for k in range(k_tiles):
                    loads.producer_acquire(state)
                    cute.copy(load_a, tAgA[None, k], tAsA[None, state.index],
                              tma_bar_ptr=loads.producer_get_barrier(state))
                    cute.copy(load_b, tBgB[None, k], tBsB[None, state.index],
                              tma_bar_ptr=loads.producer_get_barrier(state), mcast_mask=b_mask)
                    loads.producer_commit(state)
                    state.advance()
            loads.producer_tail(state)
    else:
        if reg_realloc:
            arch.warpgroup_reg_alloc(CONSUMER_REGS)
        thr = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr.partition_A(sA))     # (1, 1, 4, stages) descriptors
        tCrB = tiled_mma.make_fragment_B(thr.partition_B(sB))
        k_blocks = cute.size(tCrA, mode=[2])
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        for i in range(my_tiles):
            t = first + i * clusters
            tm, tn = (t % cluster_tiles_m) * cluster_m + rank, t // cluster_tiles_m
            gC = cute.local_tile(c, (bm, bn), (tm, tn))
            cC = cute.local_tile(cute.make_identity_tensor(c.shape), (bm, bn), (tm, tn))
            tCgC = thr.partition_C(gC)
            tCcC = thr.partition_C(cC)
            acc = tiled_mma.make_fragment_C(tCgC)
            # k-tile 0 (there is one: K >= 1): its first k-block writes the accumulators (scale-d 0)
            tiled_mma.set(wg.Field.ACCUMULATE, False)
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
                    cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index],
                              acc)
                wg.commit_group()
                wg.wait_group(1)             # the previous k-tile's group is done: its stage may be refilled
                loads.consumer_release(release)
                release.advance()
                read.advance()
            wg.wait_group(0)
            loads.consumer_release(release)
            release.advance()
            _store_tile(acc, tCgC, tCcC, c, m, n, vector_c)


@cute.jit
def _store_tile(acc, tCgC, tCcC, c, m, n, vector_c):
    """Write a consumer thread's accumulators to its elements of C, converted to C's type, predicated on
    ``(row, col)`` lying inside ``(m, n)``."""
    if vector_c:
        # values 2j and 2j + 1 of a thread's accumulators are two adjacent columns of one row: one store
        # of both where the pair lies inside C, C's row stride and pointer making it aligned
        out = cute.make_fragment(acc.layout, c.element_type)
        for i in cute.range_constexpr(cute.size(acc)):
            out[i] = acc[i].to(c.element_type)
        inside = cute.make_fragment(cute.size(acc) // 2, cute.Boolean)
        for j in cute.range_constexpr(cute.size(acc) // 2):
            row, col = tCcC[2 * j]
            inside[j] = row < m and col + 1 < n
        pair = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), c.element_type,
                                   num_bits_per_copy=2 * c.element_type.width)
        cute.copy(pair, out, tCgC, pred=inside)
        if not (type(n) is int and n % 2 == 0):
            # an odd N: the pair at columns (N - 1, N) stores its first element alone
            for j in cute.range_constexpr(cute.size(acc) // 2):
                row, col = tCcC[2 * j]
                if row < m and col + 1 == n:
                    tCgC[2 * j] = out[2 * j]
    else:
        for i in cute.range_constexpr(cute.size(acc)):
            row, col = tCcC[i]
            if row < m and col < n:
                tCgC[i] = acc[i].to(c.element_type)


def _smem_bytes(tile, stages):
    """Shared memory of the kernel: the A and B stages (16-bit elements), their barriers, alignment slack."""
    bm, bn, bk = tile
    return stages * (bm + bn) * bk * 2 + 16 * stages + 2048


def _check_args(a, b, c, stages, tile_n, reg_realloc, epilogue, cluster_m, persistent):
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
    if type(tile_n) is not int or tile_n not in TILE_NS:
        raise cute.CuteValueError(f"gemm: tile_n must be one of {TILE_NS}, got {tile_n!r}")
    if type(reg_realloc) is not bool:
        raise cute.CuteValueError(f"gemm: reg_realloc must be a bool, got {reg_realloc!r}")
    if epilogue not in EPILOGUES:
        raise cute.CuteValueError(f"gemm: epilogue must be one of {EPILOGUES}, got {epilogue!r}")
    if type(cluster_m) is not int or cluster_m not in CLUSTER_MS:
        raise cute.CuteValueError(f"gemm: cluster_m must be one of {CLUSTER_MS}, got {cluster_m!r}")
    if not (type(persistent) is bool or (type(persistent) is int and persistent >= cluster_m)):
        raise cute.CuteValueError(f"gemm: persistent is a bool or a number of CTAs >= cluster_m ({cluster_m}), got "
                                  f"{persistent!r}")
    tile = (GEMM_TILE[0], tile_n, GEMM_TILE[2])
    need = _smem_bytes(tile, stages)
    if need > SMEM_LIMIT:
        raise cute.CuteValueError(f"gemm: {stages} stages of {tile[0]}x{tile[1]}x{tile[2]} tiles need {need} bytes "
                                  f"of shared memory, more than {SMEM_LIMIT}")


def _pairs_aligned(c):
    """Whether every pair of adjacent columns ``(j, j + 1)`` with ``j`` even starts on a boundary of the pair's
    size in ``c``: unit column stride, a static even row stride and a pointer aligned to two elements."""
    row_stride, col_stride = c.layout.stride
    return (col_stride == 1 and type(row_stride) is int and row_stride % 2 == 0
            and c.iterator.alignment >= c.element_type.width // 4)


def _grid(m, n, bm, bn, cluster_m, persistent):
    """The launch's grid: a cluster per cluster tile, or, when persistent, as many clusters as fit the CTAs
    ``persistent`` gives (an int, or ``True``: the device's SMs), fewer where C has fewer cluster tiles."""
    tiles = cute.ceil_div(cute.ceil_div(m, bm), cluster_m) * cute.ceil_div(n, bn)
    if persistent is False:
        return tiles * cluster_m
    ctas = sm_count() if persistent is True else persistent
    clusters = ctas // cluster_m
    if type(tiles) is int:
        clusters = min(clusters, tiles)
    return clusters * cluster_m


@cute.jit
def gemm(a, b, c, stages=4, tile_n=256, reg_realloc=False, epilogue="vector", cluster_m=1, persistent=False):
    """``c[i, j] = sum_k a[i, k] * b[j, k]`` (``C = A @ B^T``), accumulated in fp32 and rounded once to C's type.

    ``a``: (M, K) and ``b``: (N, K), both BFloat16 or both Float16, row-major with 16-byte aligned rows;
    ``c``: (M, N) Float32, BFloat16 or Float16 (any strides); any M, N, K >= 1. ``stages``: the load pipeline's
    depth (2..6, as shared memory allows: at most 4 with ``tile_n=256``); ``tile_n``: the CTA tile's N (128 or
    256); ``reg_realloc``: move registers from the producer warpgroup to the consumers (``setmaxnreg``);
    ``epilogue``: ``"vector"`` (two adjacent columns per store where C's layout aligns them, else as
    ``"scalar"``) or ``"scalar"`` (one element per store); ``cluster_m``: CTAs per cluster along M (1 or 2; 2
    multicasts B); ``persistent``: ``False`` (a CTA per tile), ``True`` (a CTA per SM, each walking tiles) or a
    number of CTAs. See the module for the kernel."""
    _check_args(a, b, c, stages, tile_n, reg_realloc, epilogue, cluster_m, persistent)
    tile = (GEMM_TILE[0], tile_n, GEMM_TILE[2])
    bm, bn, bk = tile
    ab = a.element_type
    tiled_mma = hh.make_trivial_tiled_mma(ab, ab, wg.OperandMajorMode.K, wg.OperandMajorMode.K, cute.Float32,
                                          (MMA_WARPGROUPS, 1, 1), (64, bn))
    a_layout = hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, tile, ab, stages)
    b_layout = hh.make_smem_layout_b(LayoutEnum.ROW_MAJOR, tile, ab, stages)
    load_a, tma_a = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                                cute.slice_(a_layout, (None, None, 0)), (bm, bk))
    b_op = cpasync.CopyBulkTensorTileG2SMulticastOp() if cluster_m > 1 else cpasync.CopyBulkTensorTileG2SOp()
    load_b, tma_b = cpasync.make_tiled_tma_atom(b_op, b, cute.slice_(b_layout, (None, None, 0)), (bn, bk),
                                                num_multicast=cluster_m)
    vector_c = epilogue == "vector" and _pairs_aligned(c)
    grid = (_grid(a.shape[0], b.shape[0], bm, bn, cluster_m, persistent), 1, 1)
    gemm_kernel(tiled_mma, load_a, tma_a, load_b, tma_b, c, a_layout, b_layout, tile, stages, reg_realloc,
                vector_c, cluster_m).launch(grid=grid, block=GEMM_THREADS, cluster=(cluster_m, 1, 1))
