"""Kernel 3: a cp.async tiled copy, gmem -> smem -> gmem, zero-filling partial edge tiles.

::

    from examples import cp_async_copy
    cp_async_copy(src, dst, tile=(64, 128), threads=128)

Each CTA copies one ``tile`` of ``dst``'s tiling. A tiled copy of ``CopyG2SOp`` (16, 8 or 4
bytes per thread and instruction: the widest that divides a row) moves the tile of ``src``
into shared memory; in a tile that reaches past ``src``, every vector whose first element lies
outside it is *zero-filled* (``src_size = 0``), so a partial edge tile arrives padded with zeros
(tiles wholly inside copy without predicates: a run-time branch picks the form). After
``cp.async.wait_group 0`` and a block barrier, a tiled copy of plain vector loads/stores writes
the tile to ``dst``, skipping vectors outside ``dst``. With ``dst`` of ``src``'s shape this is
a copy; with a larger ``dst`` the region past ``src`` receives the zero fill (which shows it).
"""

import cute_py as cute
from cute_py import arch
from cute_py.atom import CopyUniversalOp, make_copy_atom, make_tiled_copy_tv
from cute_py.nvgpu import cpasync

__all__ = ["cp_async_copy", "cp_async_copy_kernel", "cp_async_tiled_copies"]


@cute.kernel
def cp_async_copy_kernel(g2s, s2g, src, dst, tile):
    tidx, _, _ = arch.thread_idx()
    bx, by, _ = arch.block_idx()
    smem = arch.SmemAllocator()
    s_tile = smem.allocate_tensor(src.element_type, cute.Layout(tile, (tile[1], 1)))
    # gmem -> smem: cp.async, zero-filling what lies outside src
    load = g2s.get_slice(tidx)
    t_src = load.partition_S(cute.local_tile(src, tile, (by, bx)))
    t_smem = load.partition_D(s_tile)
    t_crd = load.partition_S(cute.local_tile(cute.make_identity_tensor(src.shape), tile, (by, bx)))
    extent = tuple(cute.ceil_div(d, t) * t for d, t in zip(dst.shape, tile))  # what the grid's tiles cover
    _predicated(g2s, t_src, t_smem, t_crd, src.shape, extent, tile, by, bx)   # (tile row, tile column)
    arch.cp_async_commit_group()
    arch.cp_async_wait_group(0)
    arch.sync_threads()
    # smem -> gmem: vector loads and stores, skipping what lies outside dst
    store = s2g.get_slice(tidx)
    t_smem = store.partition_S(s_tile)
    t_dst = store.partition_D(cute.local_tile(dst, tile, (by, bx)))
    t_crd = store.partition_D(cute.local_tile(cute.make_identity_tensor(dst.shape), tile, (by, bx)))
    _predicated(s2g, t_smem, t_dst, t_crd, dst.shape, extent, tile, by, bx)   # (tile row, tile column)


@cute.jit
def _predicated(tiled_copy, src, dst, crd, shape, extent, tile, row, col):
    """Copy with predicates only where the tile may reach past ``shape``: not at all when the grid's tiles
    (covering ``extent``) all lie inside it, otherwise behind a run-time test of whether this CTA's tile lies
    wholly inside (the usual case)."""
    if all(e <= n for e, n in zip(extent, shape)):
        cute.copy(tiled_copy, src, dst)
        return
    if (row + 1) * tile[0] <= shape[0] and (col + 1) * tile[1] <= shape[1]:
        cute.copy(tiled_copy, src, dst)
    else:
        cute.copy(tiled_copy, src, dst, pred=cute.predicate(crd, shape))


def cp_async_tiled_copies(dtype, tile, threads, row_elems):
    """The (cp.async, plain) tiled copies of kernel 3 for ``tile`` and ``threads``: each thread moves
    vectors of the widest of 16/8/4 bytes that divides ``row_elems`` elements (a row of the tensors)."""
    dtype = cute.dtypes.dtype_of(dtype)
    eb = dtype.width // 8
    for vbytes in (16, 8, 4):
        if (row_elems * eb) % vbytes == 0 and tile[1] * eb % vbytes == 0 and vbytes >= eb:
            break
    else:
        raise cute.CuteValueError(f"cp.async moves 4, 8 or 16 bytes: rows of {row_elems} {dtype.name} elements "
                                  f"({row_elems * eb} bytes) are not a multiple of 4 bytes")
    v = vbytes // eb
    per_row = tile[1] // v
    if threads % per_row and per_row % threads:
        raise cute.CuteValueError(f"{threads} threads cannot cover rows of {per_row} vectors of the tile {tile}")
    if per_row > threads:
        raise cute.CuteValueError(f"the tile {tile} has rows of {per_row} {vbytes}-byte vectors, more than the "
                                  f"{threads} threads: use a narrower tile or more threads")
    rows = threads // per_row
    if tile[0] % rows:
        raise cute.CuteValueError(f"the tile's {tile[0]} rows are not a multiple of the {rows} rows {threads} threads "
                                  f"cover at once")
    thr = cute.Layout((rows, per_row), (per_row, 1))
    val = cute.Layout((1, v))
    mode = cpasync.LoadCacheMode.GLOBAL if vbytes == 16 else cpasync.LoadCacheMode.ALWAYS
    g2s = make_tiled_copy_tv(make_copy_atom(cpasync.CopyG2SOp(mode), dtype, vbytes * 8), thr, val)
    s2g = make_tiled_copy_tv(make_copy_atom(CopyUniversalOp(), dtype, vbytes * 8), thr, val)
    return g2s, s2g


@cute.jit
def cp_async_copy(src, dst, tile=(64, 128), threads=128):
    """Copy the 2-D row-major ``src`` into ``dst`` (same dtype, row-major, any shape) tile by tile through
    shared memory with cp.async; where ``dst`` reaches past ``src`` it receives zeros."""
    if src.element_type != dst.element_type:
        raise cute.CuteValueError(f"src and dst differ in dtype: {src.element_type.name} vs {dst.element_type.name}")
    g2s, s2g = cp_async_tiled_copies(src.element_type, tile, threads, src.shape[1])
    if dst.shape[1] % (g2s.atom.num_bits // src.element_type.width):
        raise cute.CuteValueError(f"dst rows of {dst.shape[1]} elements are not a whole number of the "
                                  f"{g2s.atom.num_bits // 8}-byte vectors src needs")
    grid = (cute.ceil_div(dst.shape[1], tile[1]), cute.ceil_div(dst.shape[0], tile[0]))   # rows of tiles, in order
    cp_async_copy_kernel(g2s, s2g, src, dst, tile).launch(grid=grid, block=threads)
