"""Kernel 5: a TMA reduce-add of one tensor into another (``dst += src``), tile by tile.

::

    from examples import tma_reduce_add
    tma_reduce_add(src, dst, tile=(128, 64))       # dst += src (fp32, int32, ...)

Each CTA TMA-loads its tile of ``src`` into shared memory (mbarrier-completed), then issues
``cp.reduce.async.bulk.tensor ... .add`` of the tile into the same tile of ``dst``: the TMA
unit reads ``dst``, adds and writes back, element by element; out-of-bounds parts of
partial tiles are skipped.
"""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync

from .tma_tiled import smem_tile_layout

__all__ = ["tma_reduce_add", "tma_reduce_kernel"]


@cute.kernel
def tma_reduce_kernel(load_atom, load_tensor, reduce_atom, reduce_tensor, smem_layout, tile):
    bx, by, _ = arch.block_idx()
    smem = arch.SmemAllocator()
    s_tile = cute.group_modes(smem.allocate_tensor(load_atom.dtype, smem_layout), 0, 2)
    bar = smem.allocate_mbarrier()
    tAsA, tAgA = cpasync.tma_partition(load_atom, 0, cute.Layout(1), s_tile,
                                       cute.group_modes(cute.local_tile(load_tensor, tile, (bx, by)), 0, 2))
    tBsB, tBgB = cpasync.tma_partition(reduce_atom, 0, cute.Layout(1), s_tile,
                                       cute.group_modes(cute.local_tile(reduce_tensor, tile, (bx, by)), 0, 2))
    with arch.elect_one():
        arch.mbarrier_init(bar, 1)
        arch.mbarrier_init_fence()
        cute.tma_copy(tAgA, tAsA, barrier=bar)
        arch.mbarrier_wait(bar, 0)
        cute.tma_copy(tBsB, tBgB)  # the reduce atom: dst tile += smem tile
        arch.tma_store_arrive()
        arch.tma_store_wait(0, read=True)


@cute.jit
def tma_reduce_add(src, dst, tile=(128, 64), reduction="add", swizzle="none"):
    """``dst = dst (op) src`` element-wise with TMA reductions (``reduction``: a ``cpasync.ReductionOp`` value:
    add, min, max, inc, dec, and, or, xor — what the element type supports)."""
    if tuple(src.shape) != tuple(dst.shape) or src.element_type != dst.element_type:
        raise cute.CuteValueError(f"src and dst must have the same shape and dtype, got {src!r} and {dst!r}")
    kind = cpasync.ReductionOp(reduction)
    smem_layout = smem_tile_layout(src.element_type, tile, swizzle)
    load_atom, load_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, smem_layout, tile)
    reduce_atom, reduce_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyReduceBulkTensorTileS2GOp(kind), dst,
                                                             smem_layout, tile)
    grid = (cute.ceil_div(src.shape[0], tile[0]), cute.ceil_div(src.shape[1], tile[1]))
    tma_reduce_kernel(load_atom, load_tensor, reduce_atom, reduce_tensor, smem_layout, tile).launch(grid=grid,
                                                                                                   block=32)
