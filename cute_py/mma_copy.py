"""The tiled copies of a tiled MMA's operands (CuTe's ``make_tiled_copy_A/B/C`` and ``make_tiled_copy_C_atom``):
copies whose threads and values are those of an operand of a :class:`~cute_py.mma.TiledMma`, to move its
fragments between registers and memory (``ldmatrix``, ``stmatrix``, plain copies) in the MMA's own order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .core.algebra import composition
from .core.layout import Layout
from .errors import CuteValueError
from .core.products import product
from .mma import TiledMma

if TYPE_CHECKING:
    from .atom import CopyAtom, TiledCopy

__all__ = ["make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "make_tiled_copy_C_atom"]


def _values(tv: Layout) -> int:
    """The number of values per thread of a (thread, value) layout."""
    return product(tv.shape[1]) if type(tv.shape) is tuple else 1


def _tiled_copy_for(copy_atom, layout_tv, tiler):
    from .atom import TiledCopy

    return TiledCopy(copy_atom, layout_tv, tiler)


def make_tiled_copy_A(copy_atom: CopyAtom, tiled_mma: TiledMma) -> TiledCopy:
    """A tiled copy whose threads and values are those of ``tiled_mma``'s A operand (tile ``(M, K)``)."""
    return _tiled_copy_for(copy_atom, tiled_mma.tv_layout_A_tiled, (tiled_mma.tile_size(0), tiled_mma.tile_size(2)))


def make_tiled_copy_B(copy_atom: CopyAtom, tiled_mma: TiledMma) -> TiledCopy:
    """A tiled copy whose threads and values are those of ``tiled_mma``'s B operand (tile ``(N, K)``)."""
    return _tiled_copy_for(copy_atom, tiled_mma.tv_layout_B_tiled, (tiled_mma.tile_size(1), tiled_mma.tile_size(2)))


def make_tiled_copy_C(copy_atom: CopyAtom, tiled_mma: TiledMma) -> TiledCopy:
    """A tiled copy whose threads and values are those of ``tiled_mma``'s accumulators (tile ``(M, N)``)."""
    return _tiled_copy_for(copy_atom, tiled_mma.tv_layout_C_tiled, (tiled_mma.tile_size(0), tiled_mma.tile_size(1)))


def make_tiled_copy_C_atom(copy_atom: CopyAtom, tiled_mma: TiledMma) -> TiledCopy:
    """The smallest tiled copy whose threads hold the accumulator values of ``tiled_mma`` that one ``copy_atom``
    moves (CuTe's ``make_tiled_copy_C_atom``, for epilogues that store sub-tiles): the C layout's values cut to
    the atom's, and a by-mode tiler that picks the (M, N) coordinates they reach.

    @pre the atom moves at most as many values per thread as the accumulators hold (``CuteValueError``)
    """
    from .core.coalescing import filter as filter_
    from .core.inverse import left_inverse

    layout_c = tiled_mma.tv_layout_C_tiled
    copy_v = _values(copy_atom.layout_src_tv)
    if copy_v > _values(layout_c):
        raise CuteValueError(f"make_tiled_copy_C_atom: the atom moves {copy_v} values per thread, more than the "
                             f"{_values(layout_c)} accumulators of {layout_c}")
    layout_tv = composition(layout_c, Layout((product(layout_c.shape[0]), copy_v)))
    mma_tiler = (tiled_mma.tile_size(0), tiled_mma.tile_size(1))
    tiler = tuple(filter_(composition(Layout(mma_tiler, (1, 0) if i == 0 else (0, 1)), layout_tv)) for i in range(2))
    tile2mma = composition(Layout(mma_tiler), tiler)
    return _tiled_copy_for(copy_atom, composition(left_inverse(tile2mma), layout_tv), tiler)
