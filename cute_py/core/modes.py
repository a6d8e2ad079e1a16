"""The modes of layouts and IntTuples: ``select``, ``group_modes``, ``append``, ``prepend``, ``flatten``, and
slicing and dicing by coordinates with ``None`` (``slice_``, ``slice_and_offset``, ``dice``), as CuTe's
``layout.hpp``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import CuteValueError, RankError
from .congruence import as_tiler_tuple
from .coords import crd2idx_unchecked
from .int_tuple import flatten_unchecked as _flatten_tuple, get_unchecked
from .normalise import as_index, as_int_tuple, as_mode, depth_guarded, is_shaped, shape_of
from .notation import fmt, short_repr
from .layout import (UPPER_LAYER_OPERATIONS, Layout, check_layout, limit_depth, make_layout,
                     make_layout_unchecked, map_outer)
from .typing import Coord, XTuple

__all__ = ["select", "group_modes", "append", "prepend", "slice_", "slice_and_offset", "dice", "flatten", "shape"]


# -- modes ----------------------------------------------------------------------------------


@depth_guarded
def shape(input: Any, *, mode: int | Sequence[int] | None = None) -> Any:
    """The shape of an IntTuple, layout, composed layout, tensor or tiler, as the CuTe DSL's ``cute.shape``:
    an IntTuple is its own shape (``shape(x, mode=m)`` is then ``get(x, m)``), a layout or tensor gives its
    ``shape``, and a tiler (a tuple of layouts and IntTuples) the tuple of its elements' shapes.  ``mode`` (an
    int, or a sequence of ints for a nested mode) selects one mode of that shape.

    ``shape(make_layout((2, 3, 4))) == (2, 3, 4)``; ``shape((make_layout((2, 3, 4)), make_layout(1))) ==
    ((2, 3, 4), 1)``; ``shape(make_layout((2, 3, 4)), mode=0) == 2``.
    @post mode is None -> result == input.shape for a layout or tensor
    """
    if type(input) is tuple or type(input) is list:
        shp = tuple(_tile_shape(e) for e in input)
    else:
        shp = shape_of(input)
    if mode is None:
        return shp
    return get_unchecked(shp, as_mode(mode, "shape"))


def _tile_shape(x):
    # the shape of one element of a tiler: a nested tuple, a layout (or tensor), or an IntTuple leaf
    if type(x) is tuple or type(x) is list:
        return tuple(_tile_shape(e) for e in x)
    if is_shaped(x):
        return x.shape
    return shape_of(x)


def _as_int_tuple_arg(x, op):
    # an IntTuple argument of a mode operation (lists, integer-likes and None leaves allowed)
    return as_int_tuple(x, f"{op} argument", allow_none=True, allow_basis=True)


def select(layout: Any, mode: int | Sequence[int]) -> Any:
    """The layout (or IntTuple) of the chosen modes, in the given order."""
    if type(mode) is tuple or type(mode) is list:
        modes = tuple(as_index(i, "select: a mode index") for i in mode)
    else:
        modes = (as_index(mode, "select: the mode index"),)
    if type(layout) is Layout:
        return make_layout(*(layout[i] for i in modes))
    if map_outer(layout):
        return map_outer(layout)(lambda o: select(o, modes))
    layout = _as_int_tuple_arg(layout, "select")
    t = layout if type(layout) is tuple else (layout,)
    try:
        return tuple(t[i] for i in modes)
    except IndexError:
        raise RankError(f"select: a mode of {fmt(modes)} is out of range for {fmt(layout)}") from None


def group_modes(x: Any, begin: int, end: int | None = None) -> Any:
    """Group modes ``[begin, end)`` of a layout or IntTuple into one mode (negative bounds count from the end)."""
    begin = as_index(begin, "group_modes: begin")
    if end is not None:
        end = as_index(end, "group_modes: end")
    if type(x) is Layout:
        shape, stride = _group(x.shape, begin, end, x), _group(x.stride, begin, end, x)
        return limit_depth(make_layout_unchecked(shape, stride), "group_modes")
    if map_outer(x):
        return map_outer(x)(lambda o: group_modes(o, begin, end))
    x = _as_int_tuple_arg(x, "group_modes")
    return _group(x, begin, end, x)


def _group(x, begin, end, whole):
    t = x if type(x) is tuple else (x,)
    n = len(t)
    if end is None:
        end = n
    if begin < 0:
        begin += n
    if end < 0:
        end += n
    if not 0 <= begin <= end <= n:
        raise RankError(f"group_modes: [{begin}, {end}) is not a range of modes of {whole} (rank {n})")
    if begin == end:
        return x  # an empty range groups nothing (as CuTe's group<B,B>)
    return t[:begin] + (t[begin:end],) + t[end:]


def _wrap(x):
    return x if type(x) is tuple else (x,)


def append(x: Any, elem: Layout | XTuple | None = None, up_to_rank: int | None = None) -> Any:
    """Append ``elem`` as a new last mode; with ``up_to_rank``, pad with it to that rank.

    For layouts ``elem`` defaults to ``1:0``, for IntTuples to ``1``.
    """
    return _extend(x, elem, _rank_arg(up_to_rank), front=False)


def prepend(x: Any, elem: Layout | XTuple | None = None, up_to_rank: int | None = None) -> Any:
    """Prepend ``elem`` as a new first mode; with ``up_to_rank``, pad with it to that rank."""
    return _extend(x, elem, _rank_arg(up_to_rank), front=True)


def _rank_arg(n):
    if n is None:
        return None
    n = as_index(n, "append/prepend: up_to_rank")
    if not 0 <= n <= _MAX_RANK:
        raise CuteValueError(f"append/prepend: up_to_rank must be in [0, {_MAX_RANK}], got {n}")
    return n


_MAX_RANK = 1 << 12


def _extend(x, elem, up_to_rank, front):
    if map_outer(x):
        return map_outer(x)(lambda o: _extend(o, elem, up_to_rank, front))
    if type(x) is Layout:
        if elem is None:
            elem = make_layout_unchecked(1, 0)
        check_layout(elem, "append/prepend of a layout")
        return limit_depth(make_layout_unchecked(
            _extend_tuple(x.shape, elem.shape, up_to_rank, front),
            _extend_tuple(x.stride, elem.stride, up_to_rank, front),
        ), "append/prepend")
    x = _as_int_tuple_arg(x, "append/prepend")
    elem = 1 if elem is None else _as_int_tuple_arg(elem, "append/prepend element")
    return _extend_tuple(x, elem, up_to_rank, front)


def _extend_tuple(x, elem, up_to_rank, front):
    t = _wrap(x)
    if up_to_rank is None:
        n = 1
    else:
        if up_to_rank < len(t):
            raise RankError(f"cannot pad {fmt(x)} of rank {len(t)} to the smaller rank {up_to_rank}")
        n = up_to_rank - len(t)
        if n == 0:
            return x
    pad = (elem,) * n
    return pad + t if front else t + pad


def _slice_tuple(c, t, top):
    # CuTe's slice: keep the modes of t paired with None; nested kept modes are spliced in
    if type(c) is tuple:
        if type(t) is not tuple or len(c) != len(t):
            raise RankError(f"slice coordinate {fmt(c)} does not match the profile of {fmt(t)}")
        out = ()
        for ci, ti in zip(c, t):
            out += _slice_tuple(ci, ti, False)
        return out
    if c is None:
        return t if top else (t,)
    return ()


def _dice_tuple(c, t, top):
    # CuTe's dice: keep the modes of t paired with an integer
    if type(c) is tuple:
        if type(t) is not tuple or len(c) != len(t):
            raise RankError(f"dice coordinate {fmt(c)} does not match the profile of {fmt(t)}")
        out = ()
        for ci, ti in zip(c, t):
            out += _dice_tuple(ci, ti, False)
        return out
    if c is None:
        return ()
    return t if top else (t,)


def _zero_none(c):
    if type(c) is tuple:
        return tuple(_zero_none(e) for e in c)
    return 0 if c is None else c


def _coord_arg(coord, op):
    return as_int_tuple(coord, f"{op} coordinate", allow_none=True)


def slice_(src: Any, coord: Coord) -> Any:
    """The sub-layout of the modes of ``coord`` that are ``None``.

    ``slice_(Layout((4,8)), (None, 3)) == (4):(1)``; see :func:`slice_and_offset`
    for the offset of the fixed modes.
    """
    coord = _coord_arg(coord, "slice_")
    if type(src) is Layout:
        return make_layout_unchecked(_slice_tuple(coord, src.shape, True), _slice_tuple(coord, src.stride, True))
    if hasattr(src, "__cute_slice__"):
        return src.__cute_slice__(coord)
    return _slice_tuple(coord, as_tiler_tuple(src, "slice_ argument"), True)


def slice_and_offset(coord: Coord, layout: Any) -> tuple[Any, Any]:
    """``(slice_(layout, coord), layout(coord with None as 0))``.

    For a composed layout the offset is folded into the result as CuTe does.
    """
    coord = _coord_arg(coord, "slice_and_offset")
    hook = getattr(layout, "__cute_slice_and_offset__", None)
    if hook is not None:
        return hook(coord)
    check_layout(layout, "slice_and_offset")
    return slice_(layout, coord), crd2idx_unchecked(_zero_none(coord), layout.shape, layout.stride)


def dice(coord: Coord, layout: Any) -> Any:
    """The sub-layout (or sub-tuple) of the modes of ``coord`` that are *not* ``None``."""
    coord = _coord_arg(coord, "dice")
    if type(layout) is Layout:
        return make_layout_unchecked(_dice_tuple(coord, layout.shape, True), _dice_tuple(coord, layout.stride, True))
    return _dice_tuple(coord, as_tiler_tuple(layout, "dice argument"), True)


def flatten(x: Any) -> Any:
    """Flatten an IntTuple or a layout to depth <= 1."""
    if type(x) is Layout:
        try:
            return make_layout_unchecked(_flatten_tuple(x.shape), _flatten_tuple(x.stride))
        except RecursionError:
            raise CuteValueError(f"flatten: the layout is nested too deeply ({short_repr(x)})") from None
    if map_outer(x):
        return map_outer(x)(flatten)
    # a flattened IntTuple is a shape, stride or coordinate to evaluate: None (a slice) is no leaf of one
    return _flatten_tuple(as_int_tuple(x, "flatten argument", allow_basis=True))


UPPER_LAYER_OPERATIONS["slice_"] = slice_
