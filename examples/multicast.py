"""Kernel 4: a TMA multicast load across a cluster; every CTA of the cluster receives the whole tile.

::

    from examples import tma_multicast_copy
    tma_multicast_copy(src, dst, tile=(128, 64), cluster=2)      # dst: (cluster * M, N)

The grid has ``cluster`` CTAs per tile, launched as clusters of ``cluster x 1 x 1``. The TMA
atom splits the tile's box across the cluster (``num_multicast``): CTA ``r`` of a cluster loads
slice ``r`` of the tile and multicasts it (mask ``(1 << cluster) - 1``) into the same
shared-memory offset of every CTA of the cluster, completing bytes on each receiver's
mbarrier. Every CTA expects the whole tile's bytes, waits, and TMA-stores its copy to its own
rows of ``dst``: ``dst[r * M + i, j] == src[i, j]`` shows that each CTA received everything.
A cluster barrier before the loads makes sure every CTA's mbarrier is initialised before a
peer's multicast lands on it, and one at the end keeps every CTA's shared memory alive
until the cluster is done.
"""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync

from .tma_tiled import smem_tile_layout

__all__ = ["tma_multicast_copy", "tma_multicast_copy_kernel"]


@cute.kernel
def tma_multicast_copy_kernel(load_atom, load_tensor, store_atom, store_tensor, smem_layout, tile, cluster, tiles_m):
    bx, by, _ = arch.block_idx()
    rank = arch.block_rank_in_cluster()
    tile_m = bx // cluster
    dtype = load_atom.dtype
    smem = arch.SmemAllocator()
    s_tile = cute.group_modes(smem.allocate_tensor(dtype, smem_layout), 0, 2)
    bar = smem.allocate_mbarrier()
    with arch.elect_one():
        arch.mbarrier_init(bar, 1)
        arch.mbarrier_init_fence()
    arch.cluster_sync()  # every CTA's mbarrier is initialised before any multicast lands on it
    tAsA, tAgA = cpasync.tma_partition(load_atom, rank, cute.Layout(cluster), s_tile,
                                       cute.group_modes(cute.local_tile(load_tensor, tile, (tile_m, by)), 0, 2))
    out = cute.group_modes(cute.local_tile(store_tensor, tile, (rank * tiles_m + tile_m, by)), 0, 2)
    tBsB, tBgB = cpasync.tma_partition(store_atom, 0, cute.Layout(1), s_tile, out)
    with arch.elect_one():
        # expects the whole tile (every slice of the cluster), issues this CTA's slice to all of it
        cute.tma_copy(tAgA, tAsA, barrier=bar, mcast_mask=(1 << cluster) - 1)
        arch.mbarrier_wait(bar, 0)
        cute.copy(store_atom, tBsB, tBgB)
        arch.tma_store_arrive()
        arch.tma_store_wait(0, read=True)
    arch.cluster_sync()  # no CTA leaves while a peer may still write into its shared memory


@cute.jit
def tma_multicast_copy(src, dst, tile=(128, 64), cluster=2, swizzle="none"):
    """Load every ``tile`` of the 2-D row-major ``src`` once per cluster of ``cluster`` CTAs with a TMA
    multicast, and store each CTA's received copy to ``dst`` (``cluster`` stacked copies of ``src``)."""
    if cluster not in (1, 2, 4, 8, 16):
        raise cute.CuteValueError(f"cluster must be 1, 2, 4, 8 or 16 CTAs, got {cluster!r}")
    m, n = src.shape
    if tuple(dst.shape) != (cluster * m, n):
        raise cute.CuteValueError(f"dst must have shape {(cluster * m, n)} ({cluster} copies of src), got {dst.shape}")
    if m % tile[0]:
        raise cute.CuteValueError(f"src's {m} rows must be a multiple of the tile's {tile[0]} (the copies are "
                                  f"stacked by tile rows)")
    smem_layout = smem_tile_layout(src.element_type, tile, swizzle)
    load_atom, load_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), src,
                                                         smem_layout, tile, num_multicast=cluster)
    store_atom, store_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dst, smem_layout, tile)
    tiles_m = m // tile[0]
    grid = (tiles_m * cluster, cute.ceil_div(n, tile[1]))
    tma_multicast_copy_kernel(load_atom, load_tensor, store_atom, store_tensor, smem_layout, tile, cluster,
                              tiles_m).launch(grid=grid, block=32, cluster=(cluster, 1, 1),
                                              non_portable_cluster=cluster > 8)
