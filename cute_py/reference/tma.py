"""CPU (numpy) execution of the TMA unit, with the hardware's semantics.

Memory is modelled as numpy arrays: global memory as a flat array of elements, each CTA's shared memory as a
flat ``uint8`` array.  The functions here do what the instructions do:

- :func:`tma_load`: read the descriptor's box at TMA coordinates (out-of-bounds
  elements read as zero) into shared memory, box element ``k`` at byte
  ``swizzle(smem_byte + k * element_bytes)`` (the swizzle acts on the byte address);
  with a multicast mask, into every CTA of the mask; completes ``box bytes`` of
  transaction on each receiving CTA's mbarrier;
- :func:`tma_load_im2col`: the im2col-mode load (pixels of a bounding-box traversal, channels per pixel,
  zeros outside the tensor; see :func:`im2col_box_elements`);
- :func:`tma_store` / :func:`tma_reduce`: the reverse, writing (or reducing with
  add, min, max, inc, dec, and, or, xor) only in-bounds elements.

:func:`run_tma_copy` runs a whole tiled copy gmem -> smem -> gmem on the CPU from the
objects a user builds (atoms, TMA tensors, ``tma_partition``), every CTA and stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core.coords import idx2crd
from ..core.int_tuple import product, product_each
from ..core.layout import Layout
from ..core.modes import group_modes
from ..core.swizzle import Swizzle
from ..core.typing import Shape
from ..errors import CuteTypeError, CuteValueError
from ..nvgpu.tma.atom import tma_partition
from ..nvgpu.tma.desc import TmaSwizzle
from ..nvgpu.tma.ops import (CopyBulkTensorIm2colG2SOp, CopyBulkTensorTileG2SMulticastOp, CopyBulkTensorTileG2SOp,
                             CopyBulkTensorTileS2GOp, CopyReduceBulkTensorTileS2GOp, ReductionOp)
from ..tensor.partition import local_tile
from ..tensor.tensor import Tensor, make_identity_tensor
from .common import byte_view, in_bounds, smem_tile, smem_tile_bytes, tile_coords, tile_grid
from .sync import MBarrier

if TYPE_CHECKING:
    from ..core.composed import ComposedLayout
    from ..nvgpu.tma.atom import TmaCopyAtom
    from ..nvgpu.tma.desc import TmaDescriptor
    from ..nvgpu.tma.im2col import Im2colDescriptor

__all__ = [
    "tma_load",
    "tma_load_im2col",
    "im2col_box_elements",
    "tma_store",
    "tma_reduce",
    "box_gmem_bytes",
    "tma_instructions",
    "run_tma_copy",
    "ENTRIES",
]

_BYTE_SWIZZLE = {TmaSwizzle.NONE: None, TmaSwizzle.B32: Swizzle(1, 4, 3),
                 TmaSwizzle.B64: Swizzle(2, 4, 3), TmaSwizzle.B128: Swizzle(3, 4, 3)}


def _box_walk(desc, crd):
    """``(index, inside, tail)`` for each element of the box (dim 0 fastest): its gmem element index (unclipped),
    whether it is inside the tensor, and whether it is outside only past the end of dim 0 but in the last
    16-byte granule of its row, which TMA stores write whole."""
    if not isinstance(crd, (tuple, list)) or not all(type(c) is int or isinstance(c, np.integer) for c in crd):
        raise CuteTypeError(f"TMA coordinates are a tuple of ints, got {crd!r}")
    crd = tuple(int(c) for c in crd)
    if not all(-(1 << 31) <= c < 1 << 31 for c in crd):
        raise CuteValueError(f"TMA coordinates are 32-bit signed ints, got {crd}")
    if len(crd) != desc.rank:
        raise CuteValueError(f"the descriptor has rank {desc.rank}, got {len(crd)} coordinates")
    eb = desc.dtype.width // 8
    elem_strides = [1] + [s // eb for s in desc.global_strides]
    grids = np.meshgrid(*[np.arange(b, dtype=np.int64) + c for b, c in zip(desc.box_dims, crd)], indexing="ij")
    # meshgrid with "ij" puts dim 0 first; flatten in Fortran order so that dim 0 is fastest
    coords = [g.reshape(-1, order="F") for g in grids]
    index = sum(c * s for c, s in zip(coords, elem_strides))
    inside_each = [(c >= 0) & (c < d) for c, d in zip(coords, desc.global_dims)]
    inside = np.logical_and.reduce(inside_each)
    rest_inside = np.logical_and.reduce(inside_each[1:]) if desc.rank > 1 else np.ones_like(inside)
    last_granule = (desc.global_dims[0] - 1) * eb // 16
    tail = rest_inside & (coords[0] >= desc.global_dims[0]) & (coords[0] * eb // 16 == last_granule)
    return index, inside, tail


def _box_elements(desc, crd):
    """For each element of the box (dim 0 fastest): its gmem element index, or -1 if out of bounds."""
    index, inside, _ = _box_walk(desc, crd)
    return np.where(inside, index, -1)


def box_gmem_bytes(desc: TmaDescriptor, crd: Sequence[int], write: bool = False) -> np.ndarray:
    """The sorted gmem byte offsets (from the descriptor's address) one TMA instruction at ``crd`` reads
    (``write=False``: a load, its in-bounds elements) or writes (a store or reduction: also the rest of
    each row's last 16-byte granule, see :func:`tma_store`)."""
    index, inside, tail = _box_walk(desc, crd)
    touched = inside | tail if write else inside
    eb = desc.dtype.width // 8
    return np.unique((index[touched][:, None] * eb + np.arange(eb)[None, :]).reshape(-1))


def _smem_bytes(desc, smem_byte, n_elems):
    eb = desc.dtype.width // 8
    base = smem_byte + np.arange(n_elems, dtype=np.int64) * eb
    sw = _BYTE_SWIZZLE[desc.swizzle]
    if sw is not None:
        base = base ^ ((base & sw.yyy_msk) >> sw.shift)
    return (base[:, None] + np.arange(eb)[None, :]).reshape(-1)


def _check_smem(desc, smem_byte):
    if type(smem_byte) is not int and not isinstance(smem_byte, np.integer):
        raise CuteTypeError(f"a TMA smem address is an int byte offset, got {smem_byte!r}")
    if not 0 <= smem_byte < 1 << 32:
        raise CuteValueError(f"a TMA smem address is a 32-bit byte offset, got {smem_byte}")
    if smem_byte % 128:
        raise CuteValueError(f"a TMA smem address must be 128-byte aligned, got byte {smem_byte}")


def tma_load(desc: TmaDescriptor, gmem: np.ndarray, crd: Sequence[int], smem: np.ndarray | None, smem_byte: int,
             mbar: MBarrier | list[MBarrier | None] | None = None, mcast: list[np.ndarray] | None = None) -> None:
    """TMA load of the box at ``crd`` into ``smem`` (one CTA's bytes, or ``mcast``: a list of CTAs' smem
    arrays, each receiving the box; their mbarriers in ``mbar`` as a matching list)."""
    _check_smem(desc, smem_byte)
    elems = _box_elements(desc, crd)
    g = gmem.reshape(-1).view(desc.dtype.storage_dtype)
    values = np.zeros(elems.size, dtype=g.dtype)
    ok = elems >= 0
    values[ok] = g[elems[ok]]
    dst_idx = _smem_bytes(desc, smem_byte, elems.size)
    targets = mcast if mcast is not None else [smem]
    bars = mbar if isinstance(mbar, list) else [mbar] * len(targets)
    for s, bar in zip(targets, bars):
        sb = byte_view(s)
        if dst_idx.max(initial=-1) >= sb.size:
            raise CuteValueError(f"the TMA box ends beyond shared memory ({dst_idx.max() + 1} > {sb.size} bytes)")
        sb[dst_idx] = values.view(np.uint8)
        if bar is not None:
            bar.complete_tx(values.nbytes)


def im2col_box_elements(desc: Im2colDescriptor, crd: Sequence[int], offsets: Sequence[int]) -> np.ndarray:
    """The gmem element index (or -1: out of bounds, read as zero) of each element an im2col TMA load at ``crd``
    with im2col ``offsets`` moves, in shared-memory order (pixel-major, ``channels_per_pixel`` per pixel).

    The pixels are those the traversal visits from ``crd``'s pixel: along spatial dim ``i`` (innermost first)
    in steps of ``element_strides[i + 1]`` while inside the bounding box ``[lower_corner[i], dims[i + 1] - 1 +
    upper_corner[i]]``, then back to ``lower_corner[i]`` with the next dim advanced (past the outermost spatial
    dim: the next image). Each reads at its position plus ``offsets``."""
    r = desc.rank
    if not isinstance(crd, (tuple, list)) or len(crd) != r:
        raise CuteValueError(f"an im2col load of a rank-{r} descriptor takes {r} coordinates, got {crd!r}")
    if not isinstance(offsets, (tuple, list)) or len(offsets) != r - 2:
        raise CuteValueError(f"an im2col load of a rank-{r} descriptor takes {r - 2} offsets, got {offsets!r}")
    for v in tuple(crd) + tuple(offsets):
        if type(v) is not int and not isinstance(v, np.integer):
            raise CuteTypeError(f"im2col coordinates and offsets are ints, got {v!r}")
    if not all(-(1 << 31) <= int(v) < 1 << 31 for v in crd):
        raise CuteValueError(f"TMA coordinates are 32-bit signed ints, got {tuple(crd)}")
    if not all(0 <= int(o) < 1 << 16 for o in offsets):
        raise CuteValueError(f"im2col offsets are 16-bit unsigned ints, got {tuple(offsets)}")
    dims, eb = desc.global_dims, desc.dtype.width // 8
    elem_strides = [1] + [s // eb for s in desc.global_strides]
    spatial = r - 2
    pos = [int(v) for v in crd[1:-1]]
    n = int(crd[-1])
    hi = [dims[i + 1] - 1 + desc.upper_corner[i] for i in range(spatial)]
    chans = int(crd[0]) + np.arange(desc.channels_per_pixel, dtype=np.int64)
    c_ok = (chans >= 0) & (chans < dims[0])
    rows = []
    for _ in range(desc.pixels_per_column):
        at = [pos[i] + int(offsets[i]) for i in range(spatial)] + [n]
        inside = all(0 <= at[i] < dims[i + 1] for i in range(spatial + 1))
        base = sum(a * s for a, s in zip(at, elem_strides[1:]))
        rows.append(np.where(c_ok & inside, base + chans, -1))
        for i in range(spatial):  # the traversal's next pixel
            pos[i] += desc.element_strides[i + 1]
            if pos[i] <= hi[i]:
                break
            pos[i] = desc.lower_corner[i]
        else:
            n += 1
    return np.concatenate(rows)


def tma_load_im2col(desc: Im2colDescriptor, gmem: np.ndarray, crd: Sequence[int], offsets: Sequence[int],
                    smem: np.ndarray, smem_byte: int, mbar: MBarrier | None = None) -> None:
    """Im2col TMA load (see :func:`im2col_box_elements`) into ``smem`` at ``smem_byte`` (box element ``k`` at
    byte ``swizzle(smem_byte + k * element_bytes)``); completes the box's bytes on ``mbar``."""
    _check_smem(desc, smem_byte)
    elems = im2col_box_elements(desc, crd, offsets)
    g = gmem.reshape(-1).view(desc.dtype.storage_dtype)
    values = np.zeros(elems.size, dtype=g.dtype)
    ok = elems >= 0
    values[ok] = g[elems[ok]]
    dst_idx = _smem_bytes(desc, smem_byte, elems.size)
    sb = byte_view(smem)
    if dst_idx.max(initial=-1) >= sb.size:
        raise CuteValueError(f"the TMA box ends beyond shared memory ({dst_idx.max() + 1} > {sb.size} bytes)")
    sb[dst_idx] = values.view(np.uint8)
    if mbar is not None:
        mbar.complete_tx(values.nbytes)


def _gather_smem(desc, smem, smem_byte, n, dtype):
    idx = _smem_bytes(desc, smem_byte, n)
    sb = byte_view(smem)
    if idx.size and idx.max() >= sb.size:
        raise CuteValueError(f"the TMA box ends beyond shared memory ({idx.max() + 1} > {sb.size} bytes)")
    return sb[idx].copy().view(dtype)


def tma_store(desc: TmaDescriptor, smem: np.ndarray, smem_byte: int, crd: Sequence[int], gmem: np.ndarray) -> None:
    """TMA store of the box from ``smem`` to gmem at ``crd``.

    Out-of-bounds elements are not written -- except that the hardware writes whole 16-byte
    granules: where a row of the tensor does not end on a 16-byte boundary, the elements after its
    end in its last granule (padding, or the next row) receive the box's values for them (seen on
    an H100). ``make_tiled_tma_atom`` rejects store atoms whose rows end inside a granule.
    """
    _check_smem(desc, smem_byte)
    index, inside, tail = _box_walk(desc, crd)
    g = gmem.reshape(-1).view(desc.dtype.storage_dtype)
    vals = _gather_smem(desc, smem, smem_byte, index.size, g.dtype)
    g[index[inside]] = vals[inside]
    spill = _tail(g, index, tail)
    g[index[spill]] = vals[spill]


def _tail(g, index, tail):
    # the granule tail the hardware writes (past the end of the buffer it would fault: the model stops there)
    return tail & (index < g.size)


def _reduce(kind, old, new, dtype):
    if kind is ReductionOp.ADD:
        return old + new
    if kind is ReductionOp.MIN:
        return np.minimum(old, new)
    if kind is ReductionOp.MAX:
        return np.maximum(old, new)
    if dtype.is_float:
        raise CuteValueError(f"TMA reduction {kind.name} is defined for integers only, not {dtype.name}")
    if kind is ReductionOp.INC:
        return np.where(old >= new, 0, old + 1).astype(old.dtype)
    if kind is ReductionOp.DEC:
        return np.where((old == 0) | (old > new), new, old - 1).astype(old.dtype)
    if kind is ReductionOp.AND:
        return old & new
    if kind is ReductionOp.OR:
        return old | new
    return old ^ new


def tma_reduce(desc: TmaDescriptor, smem: np.ndarray, smem_byte: int, crd: Sequence[int], gmem: np.ndarray,
               kind: ReductionOp = ReductionOp.ADD) -> None:
    """TMA reduction: ``gmem[box] = op(gmem[box], smem box)`` for in-bounds elements (and, like
    :func:`tma_store`, for the rest of the last 16-byte granule of each row)."""
    _check_smem(desc, smem_byte)
    dtype = desc.dtype
    if dtype.numpy_dtype is None:
        raise CuteValueError(f"the CPU reference reduces element types numpy holds, not {dtype.name}")
    index, inside, tail = _box_walk(desc, crd)
    g = gmem.reshape(-1).view(dtype.numpy_dtype)
    vals = _gather_smem(desc, smem, smem_byte, index.size, dtype.numpy_dtype)
    g[index[inside]] = _reduce(kind, g[index[inside]], vals[inside], dtype)
    spill = _tail(g, index, tail)
    g[index[spill]] = _reduce(kind, g[index[spill]], vals[spill], dtype)


# one instruction of each copy op of the unit: the function that executes it (the kernel compiler's emission
# table and the dialect's lowering rules are the other two tables keyed the same way)
ENTRIES = {
    CopyBulkTensorTileG2SOp: tma_load,
    CopyBulkTensorTileG2SMulticastOp: tma_load,  # with its ``mcast`` argument
    CopyBulkTensorIm2colG2SOp: tma_load_im2col,
    CopyBulkTensorTileS2GOp: tma_store,
    CopyReduceBulkTensorTileS2GOp: tma_reduce,  # with the op's ``reduction_kind``
}


# -- whole tiled copies --------------------------------------------------------------------------


def _iters(layout):
    # (number of TMA instructions per tile, number of rest-mode positions) of a tma_partition result
    mode0 = layout.shape[0]
    return product(mode0[1]), product(layout.shape) // product(mode0)


def tma_instructions(atom: TmaCopyAtom, smem_part: Tensor, gmem_part: Tensor) -> list[tuple[tuple[int, ...], int]]:
    """The TMA instructions of a ``tma_partition`` result: ``[(TMA coordinates, smem byte offset)]``, one per
    instruction of the tile (mode 0's ``TMA_Iter``) and per position of the rest modes; the smem offset is
    the unswizzled byte where the box starts (the hardware swizzles the address itself)."""
    iters, rest = _iters(gmem_part.layout)
    return [(_tma_coord(gmem_part, k, j), _smem_start(smem_part, k, j) * atom.dtype.width // 8)
            for k in range(iters) for j in range(rest)]


def _issue_loads(atom, tAsA, tAgA, gmem, smems, mbars):
    for crd, byte in tma_instructions(atom, tAsA, tAgA):
        tma_load(atom.descriptor, gmem, crd, None, byte, mbar=mbars, mcast=smems)


def _first(t, k, j):
    # the offset of element (0, k) of mode 0 ((TMA, TMA_Iter)) at index j of the rest modes
    layout = t.layout
    shape = layout.shape
    rest = shape[1:] if type(shape) is tuple else ()
    coord = ((0, k),) + _rest_coord(rest, j)
    return layout(coord if type(shape) is tuple else coord[0])


def _rest_coord(rest, j):
    if not rest:
        return ()
    c = idx2crd(j, rest)
    return c if type(c) is tuple else (c,)


def _tma_coord(t, k, j):
    off = _first(t, k, j)
    return tuple(t.engine.read(off)) if isinstance(t.engine.read(off), tuple) else (t.engine.read(off),)


def _smem_start(t, k, j):
    # the unswizzled element offset where this instruction's box starts (TMA swizzles the address itself)
    layout = t.layout
    outer = getattr(layout, "outer", layout)
    off = getattr(layout, "offset", 0)
    shim = Tensor(t.engine, outer)
    return t.engine.offset + off + _first(shim, k, j)


def run_tma_copy(src: np.ndarray, dst: np.ndarray, load_atom: TmaCopyAtom, load_tensor: Tensor,
                 store_atom: TmaCopyAtom, store_tensor: Tensor, smem_layout: Layout | ComposedLayout, cta_tiler: Shape,
                 num_multicast: int = 1, gmem_layout: Layout | None = None) -> int:
    """Copy ``src`` to ``dst`` (flat numpy gmem buffers) tile by tile through shared memory with TMA.

    For every CTA tile of ``cta_tiler``: the CTAs of a multicast group (``num_multicast`` of them)
    each load their share of the box into all of the group's shared memories (checking each
    receives the whole tile), then one CTA stores the tile with ``store_atom`` (a reduction atom,
    ``CopyReduceBulkTensorTileS2GOp``, reduces it into ``dst``).  With
    ``gmem_layout`` (the gmem tensor's layout), every loaded tile is also checked through the
    smem layout: ``smem_tensor[c] == src[gmem_layout(tile origin + c)]`` (0 out of bounds).
    Returns the number of tiles.
    """
    dtype = load_atom.dtype
    rank = len(cta_tiler) if isinstance(cta_tiler, tuple) else 1
    grid = tile_grid(load_tensor.shape, cta_tiler)
    nbytes = smem_tile_bytes(smem_layout, dtype)
    box_bytes = product(load_atom.descriptor.box_dims) * load_atom.descriptor.dtype.width // 8
    tiles = 0
    for coord in tile_coords(grid):
        gA = local_tile(load_tensor, cta_tiler, coord)
        bufs, tensors = zip(*(smem_tile(smem_layout, dtype, nbytes) for _ in range(num_multicast)))
        bars = [MBarrier(1) for _ in range(num_multicast)]
        tile_bytes = product(product_each(load_atom.smem_layout.shape)) * dtype.width // 8
        for b in bars:
            b.arrive_and_expect_tx(tile_bytes)
        for cta in range(num_multicast):
            tAsA, tAgA = tma_partition(load_atom, cta, Layout(num_multicast), group_modes(tensors[cta], 0, rank),
                                       group_modes(gA, 0, rank))
            _issue_loads(load_atom, tAsA, tAgA, src, list(bufs), bars)
        for b in bars:
            if not b.try_wait(0):
                raise CuteValueError(f"tile {coord}: the mbarrier did not complete ({b.tx} bytes outstanding of "
                                     f"{tile_bytes}; boxes of {box_bytes} bytes)")
        for cta in range(1, num_multicast):
            if not np.array_equal(bufs[cta], bufs[0]):
                raise CuteValueError(f"tile {coord}: multicast CTA {cta} did not receive the same tile as CTA 0")
        if gmem_layout is not None:
            _verify_tile(tensors[0], src, gmem_layout, cta_tiler, coord)
        gB = local_tile(store_tensor, cta_tiler, coord)
        tBsB, tBgB = tma_partition(store_atom, 0, Layout(1), group_modes(tensors[0], 0, rank), group_modes(gB, 0, rank))
        store = ENTRIES[type(store_atom.op)]  # tma_store, or tma_reduce (reducing into dst with the op's kind)
        kind = (store_atom.op.reduction_kind,) if isinstance(store_atom.op, CopyReduceBulkTensorTileS2GOp) else ()
        for crd, smem_byte in tma_instructions(store_atom, tBsB, tBgB):
            store(store_atom.descriptor, bufs[0], smem_byte, crd, dst, *kind)
        tiles += 1
    return tiles


def _verify_tile(s_tile, src, gmem_layout, cta_tiler, coord):
    ident = local_tile(make_identity_tensor(gmem_layout.shape), cta_tiler, coord)
    flat = src.reshape(-1).view(s_tile.engine.array.dtype)
    shape = gmem_layout.shape if isinstance(gmem_layout.shape, tuple) else (gmem_layout.shape,)
    for i in range(product(ident.shape)):
        c = ident[i]
        want = flat[gmem_layout(c)] if in_bounds(c, shape) else 0
        got = s_tile[i]
        if got != want:
            raise CuteValueError(f"tile {coord}: smem holds {got} at tile element {i} (gmem {c}), expected {want}")
