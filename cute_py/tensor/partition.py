"""Views of a tensor: ``domain_offset`` (a view at any coordinate, before or past the tensor: its elements are
checked when read or written) and the partitions (``inner_partition``, ``outer_partition``, ``local_tile``,
``local_partition``), whose static tile and thread must lie inside (a divide pads a partial last tile)."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.coords import crd2idx_colex, idx2crd_unchecked
from ..core.normalise import as_int_tuple
from ..core.notation import fmt, short_repr
from ..core.products import product_each_unchecked, product_unchecked
from ..core.layout import Layout
from ..core.modes import dice
from ..core.tiling import zipped_divide
from ..core.typing import Coord, Int, Tiler
from ..errors import CuteIndexError, CuteTypeError, CuteValueError
from .engines import ArrayEngine, CoordEngine, add_natural, natural_coord, outside
from .offsets import element_offset
from .tensor import Tensor

__all__ = ["domain_offset", "inner_partition", "outer_partition", "local_tile", "local_partition"]


def domain_offset(coord: Coord, tensor: Tensor) -> Tensor:
    """The tensor whose coordinate 0 is ``coord`` of ``tensor`` (its engine advanced by ``tensor.layout(coord)``).

    ``coord`` may lie outside the shape (a view starting before or past the tensor, as the residue-first
    k-tile of a GEMM): making the view reads nothing. A component outside its mode must address a flat mode
    (an int coordinate of an int extent), where the offset is linear in it; an int outside a mode of several
    modes splits by modulo, not linearly, and raises :class:`CuteIndexError`. Over a host array each element
    read or written is checked: ``domain_offset(c, t)[x]`` is ``t[c + x]`` (natural coordinates added mode
    by mode) when ``c + x`` is inside ``t``'s shape, else a :class:`CuteIndexError`. In a kernel the
    elements outside are the kernel's to mask (predicated copies).

    @post domain_offset(c, t)[x] == t[c + x] for every c + x inside t's shape (host arrays; else CuteIndexError)
    """
    if type(tensor) is not Tensor:
        raise CuteTypeError(f"domain_offset needs a Tensor, got {short_repr(tensor)}")
    coord = as_int_tuple(coord, "domain_offset coordinate")
    if not isinstance(tensor.engine, CoordEngine):
        _check_shift(coord, tensor.shape, coord, tensor)
    layout = tensor.layout
    if hasattr(layout, "__cute_map_outer__") and type(layout) is not Layout:
        from ..core.composed import ComposedLayout

        return Tensor(tensor.engine, ComposedLayout(layout.inner, layout.offset + layout.outer(coord), layout.outer))
    engine = tensor.engine + element_offset(tensor, coord)
    if isinstance(engine, ArrayEngine):
        shift, shape = natural_coord(coord, layout.shape), layout.shape
        dom = tensor.engine.domain
        if dom is not None and dom[0] is layout:
            shift, shape = add_natural(dom[1], shift), dom[2]
        engine.domain = (layout, shift, shape)
    return Tensor(engine, layout)


def _check_shift(c, s, coord, what):
    # a component outside its mode must be an int on an int extent (see domain_offset)
    if type(c) is tuple:
        if type(s) is tuple and len(c) == len(s):
            for ci, si in zip(c, s):
                _check_shift(ci, si, coord, what)
        return
    if type(s) is tuple and outside(c, s):
        raise CuteIndexError(
            f"domain_offset: the coordinate {fmt(coord)} has the component {c} outside the mode {fmt(s)} of the shape "
            f"{fmt(what.shape)} of {short_repr(what, 120)}; a shift outside a mode of several modes is not linear "
            f"(give one coordinate per mode)")


def _repeat_none(r):
    return None if r == 1 else (None,) * r


def inner_partition(tensor: Tensor, tiler: Tiler, coord: Coord) -> Tensor:
    """Tile ``tensor`` by ``tiler`` and keep the tile at ``coord`` of the rest modes."""
    _need_tensor(tensor, "inner_partition")
    coord = as_int_tuple(coord, "tile coordinate", allow_none=True)
    _need_modes(tiler, "inner_partition")
    tiled = zipped_divide(tensor, tiler)
    return tiled[(_repeat_none(len(tiled.layout[0])), _fit_coord(coord, tiled.layout, 1))]


def outer_partition(tensor: Tensor, tiler: Tiler, coord: Coord) -> Tensor:
    """Tile ``tensor`` by ``tiler`` and keep, for every tile, the element at ``coord`` of the tile."""
    _need_tensor(tensor, "outer_partition")
    coord = as_int_tuple(coord, "coordinate in the tile", allow_none=True)
    _need_modes(tiler, "outer_partition")
    tiled = zipped_divide(tensor, tiler)
    return tiled[(_fit_coord(coord, tiled.layout, 0), _repeat_none(len(tiled.layout[1])))]


def _fit_coord(coord, tiled, mode):
    """``coord`` for mode ``mode`` of a zipped-divided layout: a tuple padded with ``None`` to the mode's rank (a
    lone coordinate where the mode is one integer extent)."""
    if type(coord) is not tuple:
        return coord
    r = len(tiled[mode])
    coord = coord + (None,) * (r - len(coord))
    if r == 1 and len(coord) == 1 and type(tiled.shape[mode]) is not tuple:
        coord = coord[0]
    return coord


def local_tile(tensor: Tensor, tiler: Tiler, coord: Coord, proj: Sequence[int | None] | None = None) -> Tensor:
    """The ``coord``-th tile of ``tensor`` under ``tiler`` (CuTe's ``local_tile``).

    ``coord`` indexes the rest modes of ``zipped_divide(tensor, tiler)``; a tuple shorter than
    them is padded with ``None`` (those rest modes are kept), as CuTe pads it.
    ``proj`` (a tuple of 1/``None`` per tiler mode) drops the tiler and coordinate modes marked ``None``,
    e.g. ``local_tile(A, (bm, bn, bk), (m, n, None), proj=(1, None, 1))`` tiles A by (bm, bk).
    Coordinate modes past the ``proj`` are kept, as the CuTe DSL keeps them (CuTe C++ needs equal
    ranks): ``local_tile(mA_mkl, (bm, bn, bk), (m, n, None, l), proj=(1, None, 1))`` is the tile
    ``(bm, bk, k)`` of batch ``l``, the same as ``local_tile(mA_mkl, (bm, bk), (m, None, l))``.
    """
    if proj is not None:
        keep = _proj_coord(proj)
        tiler = dice(keep, tiler)
        coord = as_int_tuple(coord, "tile coordinate", allow_none=True)
        if type(coord) is tuple and len(coord) > len(keep):
            coord = dice(keep, coord[:len(keep)]) + coord[len(keep):]
        else:
            coord = dice(keep, coord)
    return inner_partition(tensor, tiler, coord)


def _need_modes(tiler, op):
    if isinstance(tiler, (tuple, list)) and len(tiler) == 0:
        raise CuteValueError(f"{op}: the tiler has no modes")


def _need_tensor(x, op):
    if type(x) is not Tensor:
        raise CuteTypeError(f"{op} needs a Tensor, got {short_repr(x)}")


def _proj_coord(proj):
    # CuTe's Step<_1, X, _1>: X (None) drops the mode
    if not isinstance(proj, (tuple, list)):
        raise CuteTypeError(f"proj is a tuple of 1 or None per mode, got {short_repr(proj)}")
    return tuple(None if p is None else 0 for p in proj)


def local_partition(tensor: Tensor, thr_layout: Layout, index: Int,
                    proj: Sequence[int | None] | None = None) -> Tensor:
    """The elements of ``tensor`` owned by thread ``index`` when ``thr_layout`` tiles it (CuTe's ``local_partition``).

    A static ``index`` must be a thread of ``thr_layout``: ``0 <= index < size(thr_layout)``.
    """
    _need_tensor(tensor, "local_partition")
    if type(thr_layout) is not Layout:
        raise CuteTypeError(f"local_partition needs a thread Layout, got {short_repr(thr_layout)}")
    if proj is not None:
        keep = _proj_coord(proj)
        thr_layout = dice(keep, thr_layout)
    index = as_int_tuple(index, "thread index")
    n = product_unchecked(thr_layout.shape)
    if type(index) is int and type(n) is int and not 0 <= index < n:
        raise CuteIndexError(f"the thread index {index} is outside the {n} threads of {thr_layout}")
    shape = product_each_unchecked(thr_layout.shape)
    coord = _flat_coord(thr_layout, index)
    return outer_partition(tensor, shape if len(shape) > 1 else shape[0], coord)


def _flat_coord(layout, index):
    # the (flat, rank-matching) coordinate of ``index`` in a compact thread layout
    hier = idx2crd_unchecked(index, layout.shape, layout.stride)
    if type(hier) is not tuple:
        return hier
    out = []
    for c, s in zip(hier, layout.shape):
        out.append(c if type(c) is not tuple else crd2idx_colex(c, s))
    return tuple(out)
