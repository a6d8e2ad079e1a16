"""Kernel 6: a transpose through 128B-swizzled shared memory (TMA in, TMA out with another layout).

::

    from examples import tma_transpose
    tma_transpose(src, dst, tile=(64, 64))         # dst (N, M) = src (M, N) transposed

CTA ``(i, j)`` TMA-loads tile ``(i, j)`` of ``src`` into a row-major (K-major) 128B-swizzled
shared tile ``sA`` (``tile[0] x tile[1]``). Its threads then write ``sB[c, r] = sA[r, c]`` into a
second 128B-swizzled tile ``sB`` (``tile[1] x tile[0]``, row-major): consecutive threads read
consecutive elements of a row of ``sA`` and write down a column of ``sB``, which the swizzle
spreads over the banks. A ``fence.proxy.async`` makes those generic-proxy writes visible to the
TMA, and one thread TMA-stores ``sB`` as tile ``(j, i)`` of ``dst``.
"""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync

from .tma_tiled import smem_tile_layout

__all__ = ["tma_transpose", "tma_transpose_kernel"]


@cute.kernel
def tma_transpose_kernel(load_atom, load_tensor, store_atom, store_tensor, sa_layout, sb_layout, tile, threads):
    tidx, _, _ = arch.thread_idx()
    bx, by, _ = arch.block_idx()
    rows, cols = tile
    dtype = load_atom.dtype
    smem = arch.SmemAllocator()
    sA = smem.allocate_tensor(dtype, sa_layout)
    sB = smem.allocate_tensor(dtype, sb_layout)
    bar = smem.allocate_mbarrier()
    tAsA, tAgA = cpasync.tma_partition(load_atom, 0, cute.Layout(1), cute.group_modes(sA, 0, 2),
                                       cute.group_modes(cute.local_tile(load_tensor, tile, (bx, by)), 0, 2))
    tBsB, tBgB = cpasync.tma_partition(store_atom, 0, cute.Layout(1), cute.group_modes(sB, 0, 2),
                                       cute.group_modes(cute.local_tile(store_tensor, (cols, rows), (by, bx)), 0, 2))
    with arch.elect_one():
        if tidx < 32:
            arch.mbarrier_init(bar, 1)
            arch.mbarrier_init_fence()
            cute.tma_copy(tAgA, tAsA, barrier=bar)
    arch.sync_threads()  # the mbarrier is initialised before anyone waits on it
    arch.mbarrier_wait(bar, 0)
    for k in cute.range(rows * cols // threads, unroll_full=True):
        f = tidx + k * threads
        r, c = f // cols, f % cols
        sB[c, r] = sA[r, c]
    arch.fence_proxy("async.shared", space="cta")  # the generic-proxy writes of sB, before the TMA reads it
    arch.sync_threads()
    if tidx == 0:
        cute.tma_copy(tBsB, tBgB)
        arch.tma_store_arrive()
        arch.tma_store_wait(0, read=True)


@cute.jit
def tma_transpose(src, dst, tile=(64, 64), threads=128, swizzle="128B"):
    """``dst = src.T`` for 2-D row-major ``src`` (M, N) and ``dst`` (N, M), through two swizzled shared tiles."""
    m, n = src.shape
    if tuple(dst.shape) != (n, m) or src.element_type != dst.element_type:
        raise cute.CuteValueError(f"dst must be ({n}, {m}) of {src.element_type.name}, got {dst!r}")
    if (tile[0] * tile[1]) % threads:
        raise cute.CuteValueError(f"the tile {tile} is not a whole number of elements per thread for {threads} threads")
    sa_layout = smem_tile_layout(src.element_type, tile, swizzle)
    sb_layout = smem_tile_layout(src.element_type, (tile[1], tile[0]), swizzle)
    load_atom, load_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, sa_layout, tile)
    store_atom, store_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dst, sb_layout,
                                                           (tile[1], tile[0]))
    grid = (cute.ceil_div(m, tile[0]), cute.ceil_div(n, tile[1]))
    tma_transpose_kernel(load_atom, load_tensor, store_atom, store_tensor, sa_layout, sb_layout, tile,
                         threads).launch(grid=grid, block=threads)
