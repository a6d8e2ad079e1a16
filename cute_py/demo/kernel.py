"""The kernel the demo runs: a TMA tiled copy, gmem -> smem -> gmem, one tile per CTA (kernel 1 of the
examples, which import it from here so that an installed wheel runs the demo).

CTA ``(x, y)`` copies tile ``(y, x)`` (row ``y``, column ``x`` of tiles: the grid walks the tiles row by row):
one elected thread initialises an mbarrier, expects the tile's bytes, issues the TMA load(s) of ``tma_partition``, waits on phase 0, and TMA-stores the tile back out.
``swizzle`` is ``"none"`` or ``"128B"`` (the shared tile is then 128B-swizzled, 1024-byte aligned).
"""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync

from .tour import smem_tile_layout

__all__ = ["tma_copy", "tma_copy_kernel"]


@cute.kernel
def tma_copy_kernel(load_atom, load_tensor, store_atom, store_tensor, smem_layout, tile):
    bx, by, _ = arch.block_idx()          # x walks the tile columns of a row of tiles, y the rows
    dtype = load_atom.dtype
    smem = arch.SmemAllocator()
    s_tile = smem.allocate_tensor(dtype, smem_layout)
    bar = smem.allocate_mbarrier()
    s_grouped = cute.group_modes(s_tile, 0, 2)
    tAsA, tAgA = cpasync.tma_partition(load_atom, 0, cute.Layout(1), s_grouped,
                                       cute.group_modes(cute.local_tile(load_tensor, tile, (by, bx)), 0, 2))
    tBsB, tBgB = cpasync.tma_partition(store_atom, 0, cute.Layout(1), s_grouped,
                                       cute.group_modes(cute.local_tile(store_tensor, tile, (by, bx)), 0, 2))
    nbytes = cute.size(smem_layout) * dtype.width // 8
    with arch.elect_one():
        arch.mbarrier_init(bar, 1)
        arch.mbarrier_init_fence()
        arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
        cute.copy(load_atom, tAgA, tAsA, tma_bar_ptr=bar)
        arch.mbarrier_wait(bar, 0)
        cute.copy(store_atom, tBsB, tBgB)
        arch.tma_store_arrive()
        arch.tma_store_wait(0, read=True)  # the CTA may exit once the tile was read


@cute.jit
def tma_copy(src, dst, tile=(128, 64), swizzle="none", cluster=(1, 1, 1)):
    """Copy ``src`` into ``dst`` (same dtype and shape, 2-D, row-major) tile by tile through shared memory
    (launched in clusters of ``cluster`` CTAs when given: the copy does not need them, it shows they launch)."""
    smem_layout = smem_tile_layout(src.element_type, tile, swizzle)
    load_atom, load_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, smem_layout, tile)
    store_atom, store_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dst, smem_layout, tile)
    # row-major rasterisation: consecutive CTAs take neighbouring tiles of one row of tiles, so the tiles in flight
    # cover whole rows of the row-major tensors (walking a column of tiles instead costs 4-9% of the bandwidth)
    grid = (cute.ceil_div(src.shape[1], tile[1]), cute.ceil_div(src.shape[0], tile[0]))
    tma_copy_kernel(load_atom, load_tensor, store_atom, store_tensor, smem_layout, tile).launch(grid=grid, block=32,
                                                                                       cluster=cluster)
