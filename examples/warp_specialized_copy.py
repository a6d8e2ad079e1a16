"""Kernel 11: a warp-specialised, multicast, pipelined scaling copy with ``cute_py.pipeline``.

::

    from examples import warp_specialized_copy
    warp_specialized_copy(src, dst)       # dst: (cluster * M, N); dst[r*M + i, j] = scales[r] * src[i, j]
    warp_specialized_copy(src, dst, scales=(0.5, -2.0), tile=(64, 64), stages=3, cluster=2, swizzle="128B")

Clusters of ``cluster x 1 x 1`` CTAs walk the tiles of the 2-D row-major ``src`` (cluster ``c`` of ``G`` takes
tiles ``c, c + G, c + 2G, ...``). Every CTA of a cluster receives each of the cluster's tiles: CTA ``r`` loads
slice ``r`` of the tile with a TMA multicast into the same stage of every CTA of the cluster. Each CTA has one
producer warp and ``CONSUMER_WARPS`` consumer warps, joined by a ``stages``-deep ``PipelineTmaAsync``:

- the producer warp acquires a stage (waiting until the consumers of *every* CTA it multicasts into released
  it), arms the stage's ``full`` mbarrier with the whole tile's bytes and issues its slice;
- the consumer warps wait for the stage, read the tile into registers, release the stage (each consumer warp
  arrives on the ``empty`` barrier of every CTA of the cluster), scale it by ``scales[r]`` (in Float32, one
  rounding to the output type) into one of ``out_stages`` output buffers, and one consumer warp TMA-stores the
  buffer to CTA ``r``'s copy in ``dst`` through a ``PipelineTmaStore`` (which keeps the buffer until its store
  has read it). A named barrier joins the consumer warps around each store.

The pipeline's states are carried through the run-time tile loops, so stage indices and phases are run-time
values, and the phases wrap whenever a CTA has more tiles than stages.
"""

import cute_py as cute
from cute_py import arch, pipeline
from cute_py.nvgpu import cpasync

from .tma_tiled import sm_count, smem_tile_layout

__all__ = ["warp_specialized_copy", "warp_specialized_copy_kernel", "CONSUMER_WARPS", "THREADS"]

PRODUCER_WARP = 0
CONSUMER_WARPS = 4
CONSUMER_THREADS = 32 * CONSUMER_WARPS
THREADS = 32 + CONSUMER_THREADS
STORE_WARP = 1            # the consumer warp that issues the TMA stores
EPILOGUE_BARRIER = 1      # the named barrier of the consumer warps
SMEM_LIMIT = 227 * 1024


@cute.kernel
def warp_specialized_copy_kernel(load_atom, load_tensor, store_atom, store_tensor, a_layout, c_layout, tile, tiles,
                                 num_clusters, cluster, stages, out_stages, scales):
    tidx, _, _ = arch.thread_idx()
    warp = arch.make_warp_uniform(arch.warp_idx())
    rank = arch.block_idx_in_cluster()
    cid = arch.cluster_idx()[0]
    tiles_m, tiles_n = tiles
    smem = arch.SmemAllocator()
    sA = smem.allocate_tensor(load_atom.dtype, a_layout, 1024)    # (TM, TN, stages): the loaded tiles
    sC = smem.allocate_tensor(store_atom.dtype, c_layout, 1024)   # (TM, TN, out_stages): the scaled tiles
    barriers = smem.allocate_mbarrier(2 * stages)
    tile_bytes = tile[0] * tile[1] * load_atom.dtype.width // 8

    # full[s]: this CTA's producer arms it with the whole tile's bytes, the multicasts of every CTA bring them.
    # empty[s]: the consumer warps of every CTA arrive on it (each CTA's multicast fills all of their stages).
    loads = pipeline.PipelineTmaAsync.create(
        num_stages=stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, cluster * CONSUMER_WARPS),
        tx_count=tile_bytes,
        barrier_storage=barriers,
        cta_layout_vmnk=cute.Layout((1, cluster, 1, 1)),
        defer_sync=True)
    pipeline.pipeline_init_arrive(cluster_shape_mn=(cluster, 1), is_relaxed=True)
    num_tiles = tiles_m * tiles_n
    my_tiles = (num_tiles - cid + num_clusters - 1) // num_clusters   # tiles cid, cid + G, ... of this cluster
    pipeline.pipeline_init_wait(cluster_shape_mn=(cluster, 1))

    if warp == PRODUCER_WARP:
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
        for i in range(my_tiles):
            t = cid + i * num_clusters
            loads.producer_acquire(state)
            gA = cute.local_tile(load_tensor, tile, (t // tiles_n, t % tiles_n))
            tAsA, tAgA = cpasync.tma_partition(load_atom, rank, cute.Layout(cluster),
                                               cute.group_modes(sA[None, None, state.index], 0, 2),
                                               cute.group_modes(gA, 0, 2))
            cute.copy(load_atom, tAgA, tAsA, tma_bar_ptr=loads.producer_get_barrier(state),
                      mcast_mask=(1 << cluster) - 1 if cluster > 1 else None)
            loads.producer_commit(state)
            state.advance()
        loads.producer_tail(state)   # every consumer of the cluster released every stage
    else:
        ctid = tidx - 32
        scale = scales[0]
        for r in cute.range_constexpr(1, cluster):
            if rank == r:
                scale = scales[r]
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        stores = pipeline.PipelineTmaStore.create(
            num_stages=out_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, CONSUMER_THREADS))
        epilogue = pipeline.NamedBarrier(barrier_id=EPILOGUE_BARRIER, num_threads=CONSUMER_THREADS)
        per_thread = tile[0] * tile[1] // CONSUMER_THREADS
        for i in range(my_tiles):
            t = cid + i * num_clusters
            loads.consumer_wait(state)
            a = sA[None, None, state.index]
            vals = []
            for k in cute.range_constexpr(per_thread):
                f = ctid + k * CONSUMER_THREADS
                vals.append(a[f // tile[1], f % tile[1]])
            loads.consumer_release(state)
            state.advance()
            c = sC[None, None, i % out_stages]
            for k in cute.range_constexpr(per_thread):
                f = ctid + k * CONSUMER_THREADS
                c[f // tile[1], f % tile[1]] = (vals[k].to(cute.Float32) * scale).to(store_atom.dtype)
            arch.fence_proxy("async.shared", space="cta")   # the writes of c, before the TMA store reads it
            epilogue.arrive_and_wait()
            if warp == STORE_WARP:
                gC = cute.local_tile(store_tensor, tile, (rank * tiles_m + t // tiles_n, t % tiles_n))
                tCsC, tCgC = cpasync.tma_partition(store_atom, 0, cute.Layout(1), cute.group_modes(c, 0, 2),
                                                   cute.group_modes(gC, 0, 2))
                cute.copy(store_atom, tCsC, tCgC)
                stores.producer_commit()
                stores.producer_acquire()   # the buffer written next has been read by its store
            epilogue.arrive_and_wait()
        if warp == STORE_WARP:
            stores.producer_tail()
    # no CTA leaves while a peer may still multicast into it or arrive on its barriers
    arch.cluster_arrive()
    arch.cluster_wait()


def _check_args(src, dst, scales, tile, stages, cluster, out_stages, swizzle, max_clusters):
    if len(src.shape) != 2 or len(dst.shape) != 2:
        raise cute.CuteValueError(f"src and dst must be 2-D, got shapes {src.shape} and {dst.shape}")
    if src.element_type != dst.element_type:
        raise cute.CuteValueError(f"src and dst must have one element type, got {src.element_type.name} and "
                                  f"{dst.element_type.name}")
    if src.element_type.width not in (16, 32) or not src.element_type.is_float:
        raise cute.CuteValueError(f"the elements must be 16- or 32-bit floats, got {src.element_type.name}")
    if cluster not in (1, 2, 4) or type(cluster) is not int:
        raise cute.CuteValueError(f"cluster must be 1, 2 or 4 CTAs, got {cluster!r}")
    if (not isinstance(tile, tuple) or len(tile) != 2 or not all(type(x) is int and x > 0 for x in tile)):
        raise cute.CuteValueError(f"tile must be a (rows, cols) tuple of positive ints, got {tile!r}")
    m, n = src.shape
    if tuple(dst.shape) != (cluster * m, n):
        raise cute.CuteValueError(f"dst must have shape {(cluster * m, n)} ({cluster} copies of src), got "
                                  f"{tuple(dst.shape)}")
    if m % tile[0]:
        raise cute.CuteValueError(f"src's {m} rows must be a multiple of the tile's {tile[0]} (the copies are "
                                  f"stacked by tile rows)")
    if (tile[0] * tile[1]) % CONSUMER_THREADS:
        raise cute.CuteValueError(f"the tile {tile} must split evenly over the {CONSUMER_THREADS} consumer threads")
    if tile[0] % cluster:
        raise cute.CuteValueError(f"the tile's {tile[0]} rows must split into {cluster} multicast slices")
    for name, v, lo, hi in (("stages", stages, 2, 8), ("out_stages", out_stages, 1, 4)):
        if type(v) is not int or not lo <= v <= hi:
            raise cute.CuteValueError(f"{name} must be an int in {lo}..{hi}, got {v!r}")
    if (not isinstance(scales, tuple) or len(scales) != cluster
            or not all(type(s) in (int, float) for s in scales)):
        raise cute.CuteValueError(f"scales must be a tuple of {cluster} numbers (one per CTA of a cluster), "
                                  f"got {scales!r}")
    if swizzle not in ("none", "128B"):
        raise cute.CuteValueError(f"swizzle must be 'none' or '128B', got {swizzle!r}")
    if max_clusters is not None and (type(max_clusters) is not int or max_clusters < 1):
        raise cute.CuteValueError(f"max_clusters must be a positive int or None, got {max_clusters!r}")
    tile_bytes = tile[0] * tile[1] * src.element_type.width // 8
    need = (stages + out_stages) * -(-tile_bytes // 1024) * 1024 + 16 * stages + 1024
    if need > SMEM_LIMIT:
        raise cute.CuteValueError(f"{stages} load and {out_stages} store buffers of {tile_bytes} bytes need {need} "
                                  f"bytes of shared memory, more than the {SMEM_LIMIT} of a block")


@cute.jit
def warp_specialized_copy(src, dst, scales=None, tile=(64, 64), stages=4, cluster=2, out_stages=2, swizzle="none",
                          max_clusters=None):
    """``dst[r * M + i, j] = scales[r] * src[i, j]`` for each CTA rank ``r`` of a cluster (``src``: (M, N),
    ``dst``: (cluster * M, N), row-major, one 16- or 32-bit float type; ``scales`` defaults to
    ``(1, 2, ..., cluster)``), through the warp-specialised multicast pipeline of the module.

    ``tile``: (rows, cols) of a TMA tile (rows a multiple of ``cluster``; ``M`` a multiple of the rows);
    ``stages``: load pipeline depth (2..8); ``out_stages``: store buffers (1..4); ``max_clusters``: a cap on
    the clusters launched (default: as many as fit the SMs, at most one per tile)."""
    if scales is None:
        scales = tuple(float(r + 1) for r in range(cluster if type(cluster) is int else 1))
    _check_args(src, dst, scales, tile, stages, cluster, out_stages, swizzle, max_clusters)
    dtype = src.element_type
    one = smem_tile_layout(dtype, tile, swizzle)
    a_layout = cute.tile_to_shape(one, (tile[0], tile[1], stages))
    c_layout = cute.tile_to_shape(one, (tile[0], tile[1], out_stages))
    load_atom, load_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), src, one, tile,
                                                         num_multicast=cluster)
    store_atom, store_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dst, one, tile)
    tiles = (src.shape[0] // tile[0], cute.ceil_div(src.shape[1], tile[1]))
    num_clusters = max(1, min(tiles[0] * tiles[1], sm_count() // cluster))
    if max_clusters is not None:
        num_clusters = min(num_clusters, max_clusters)
    warp_specialized_copy_kernel(load_atom, load_tensor, store_atom, store_tensor, a_layout, c_layout, tile, tiles,
                                 num_clusters, cluster, stages, out_stages,
                                 tuple(float(s) for s in scales)).launch(grid=(num_clusters * cluster, 1, 1),
                                                                         block=THREADS, cluster=(cluster, 1, 1))
