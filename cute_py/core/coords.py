"""Coordinates and strides: exclusive prefix and suffix products, compact strides (column-major,
row-major, in a given order), and the maps between coordinates and indices (``crd2idx``, ``idx2crd``),
as CuTe's ``int_tuple.hpp`` and ``stride.hpp``. Leaves may be dynamic (:mod:`cute_py.core.leaves`)."""

from __future__ import annotations

from typing import Any

from ..errors import CuteTypeError, CuteValueError, RankError
from .congruence import weakly_congruent_unchecked, zeros_like
from .int_tuple import flatten_unchecked
from .normalise import as_int_tuple, is_shaped, need_static
from .notation import fmt, short_repr
from .products import product_like_unchecked, product_unchecked
from .typing import Coord, IntTuple, Shape, Stride

__all__ = ["prefix_product", "suffix_product", "compact_col_major", "compact_row_major", "compact_order", "crd2idx",
           "idx2crd"]


def prefix_product(a: IntTuple, init: IntTuple = 1) -> IntTuple:
    """Exclusive prefix product, hierarchical: ``prefix_product((2,(3,4))) == (1,(2,6))``."""
    return _prefix_product(as_int_tuple(a, "prefix_product argument"), as_int_tuple(init, "prefix_product init"))


def _prefix_product(a, init=1):
    if type(a) is tuple:
        if type(init) is tuple:
            # tuple tuple: element-wise
            if len(a) != len(init):
                raise RankError(f"prefix_product needs equal ranks, got {fmt(a)} and init {fmt(init)}")
            return tuple(_prefix_product(x, i) for x, i in zip(a, init))
        # tuple int: running product
        out = []
        for x in a:
            out.append(_prefix_product(x, init))
            init = init * product_unchecked(x)
        return tuple(out)
    if type(init) is tuple:
        raise RankError(f"prefix_product of an int {fmt(a)} with a tuple init {fmt(init)}")
    # int int
    return init


def suffix_product(a: IntTuple, init: IntTuple = 1) -> IntTuple:
    """Exclusive suffix product, hierarchical: ``suffix_product((2,3,4)) == (12,4,1)``."""
    return _suffix_product(as_int_tuple(a, "suffix_product argument"), as_int_tuple(init, "suffix_product init"))


def _suffix_product(a, init=1):
    if type(a) is tuple:
        if type(init) is tuple:
            # tuple tuple: element-wise
            if len(a) != len(init):
                raise RankError(f"suffix_product needs equal ranks, got {fmt(a)} and init {fmt(init)}")
            return tuple(_suffix_product(x, i) for x, i in zip(a, init))
        # tuple int: running product from the right
        out = []
        for x in reversed(a):
            out.append(_suffix_product(x, init))
            init = init * product_unchecked(x)
        return tuple(reversed(out))
    if type(init) is tuple:
        raise RankError(f"suffix_product of an int {fmt(a)} with a tuple init {fmt(init)}")
    # int int
    return init


def _compact(shape, current, left):
    # returns (stride, current * size(shape)); static size-1 modes get stride 0 as in CuTe
    if type(shape) is tuple:
        out = [None] * len(shape)
        order = range(len(shape)) if left else range(len(shape) - 1, -1, -1)
        for i in order:
            out[i], current = _compact(shape[i], current, left)
        return tuple(out), current
    if type(shape) is int and shape == 1:
        return 0, current
    return current, current * shape


def compact_col_major(shape: Shape, current: IntTuple = 1) -> Stride:
    """Column-major (LayoutLeft) compact strides; static size-1 modes get stride 0."""
    return _compact_major(as_int_tuple(shape, "shape"), as_int_tuple(current, "compact_col_major start"), True)


def compact_row_major(shape: Shape, current: IntTuple = 1) -> Stride:
    """Row-major (LayoutRight) compact strides; static size-1 modes get stride 0."""
    return _compact_major(as_int_tuple(shape, "shape"), as_int_tuple(current, "compact_row_major start"), False)


def _compact_major(shape, current, left):
    if type(current) is tuple:
        if type(shape) is not tuple or len(shape) != len(current):
            raise RankError(f"the start strides {fmt(current)} do not match the shape {fmt(shape)}")
        return tuple(_compact_major(s, c, left) for s, c in zip(shape, current))
    return _compact(shape, current, left)[0]


def compact_col_major_unchecked(shape, current=1):
    return _compact(shape, current, True)[0]


def compact_order(shape: Shape, order: IntTuple) -> Stride:
    """Compact strides that visit the modes of ``shape`` in increasing ``order``.

    ``order`` is weakly congruent to ``shape``; a leaf of ``order`` orders a whole
    sub-shape, which is then compact column-major.  Equal orders are visited left
    to right.  ``compact_order((2,2,2,2), (0,2,3,1)) == (1,4,8,2)``.
    """
    shape = as_int_tuple(shape, "shape")
    order = as_int_tuple(order, "order")
    if not weakly_congruent_unchecked(order, shape):
        raise RankError(f"order {fmt(order)} must be weakly congruent to shape {fmt(shape)}")
    ref_shape = flatten_unchecked(product_like_unchecked(shape, order))
    ref_order = flatten_unchecked(order)
    if type(ref_shape) is not tuple:
        ref_shape, ref_order = (ref_shape,), (ref_order,)
    for o in ref_order:
        need_static(o, "each element of the order of compact_order")

    def rec(s, o):
        if type(o) is tuple:
            return tuple(rec(x, y) for x, y in zip(s, o))
        start = 1
        for rs, ro in zip(ref_shape, ref_order):
            if ro < o:
                start = start * rs
        return compact_col_major_unchecked(s, start)

    return rec(shape, order)


def crd2idx(coord: Coord, shape: Any, stride: Stride | None = None) -> Any:
    """Map a coordinate to an index.

    With ``stride``: the inner product of the (hierarchical) coordinate with the
    strides, an int coordinate being split colexicographically over a tuple mode.
    Without ``stride``: ``shape`` may be a layout of any kind (a composed layout too) or a
    tensor, and this is ``layout(coord)``; or a shape, giving the colexicographic
    (column-major) index of ``coord``.
    """
    if stride is None:
        if is_shaped(shape):
            return _crd2idx_layout(coord, shape)
        return crd2idx_colex(as_int_tuple(coord, "coordinate"), as_int_tuple(shape, "shape"))
    # static ints nested at most two levels (three for an index split over a nested mode) are computed here,
    # in one pass that checks them; anything else goes through normalisation and crd2idx_unchecked
    if type(coord) is tuple:
        if type(shape) is tuple and type(stride) is tuple and len(coord) == len(shape) == len(stride):
            r = 0
            for c, s, d in zip(coord, shape, stride):
                if type(c) is int and type(s) is int and type(d) is int:
                    r = r + c * d  # int int int
                elif type(c) is tuple and type(s) is tuple and type(d) is tuple and len(c) == len(s) == len(d):
                    # tuple tuple tuple of ints
                    for c2, s2, d2 in zip(c, s, d):
                        if type(c2) is not int or type(s2) is not int or type(d2) is not int:
                            break
                        r = r + c2 * d2
                    else:
                        continue
                    break
                elif type(c) is int and type(s) is tuple and type(d) is tuple:
                    # int tuple tuple: an index split over the mode
                    v = _split_static(c, s, d, True)
                    if v is None:
                        break
                    r = r + v
                else:
                    break
            else:
                return r
    elif type(coord) is int:
        if type(shape) is int:
            if type(stride) is int:
                return coord * stride  # int int int
        elif type(shape) is tuple and type(stride) is tuple:
            r = _split_static(coord, shape, stride, True)
            if r is not None:
                return r
    return crd2idx_unchecked(as_int_tuple(coord, "coordinate"), as_int_tuple(shape, "shape"),
                             as_int_tuple(stride, "stride", allow_basis=True))


def _split_static(coord, shape, stride, nested):
    # crd2idx_unchecked's int tuple tuple case for a static int index over static ints (nested: one more level of
    # flat tuples of ints); None for anything else, or an empty mode to split over (the general path reports it)
    if len(shape) != len(stride):
        return None
    r = 0
    last = len(shape) - 1
    i = 0
    for s, d in zip(shape, stride):
        if type(s) is int:
            if type(d) is not int:
                return None
            if i == last:
                return r + coord * d
            if s == 0:
                return None
            r = r + (coord % s) * d
            coord = coord // s
        elif nested and type(s) is tuple and type(d) is tuple:
            p = 1
            for e in s:
                if type(e) is not int:
                    return None
                p = p * e
            if i == last:
                v = _split_static(coord, s, d, False)
            elif p == 0:
                return None
            else:
                v = _split_static(coord % p, s, d, False)
                coord = coord // p
            if v is None:
                return None
            r = r + v
        else:
            return None
        i += 1
    return r


def _crd2idx_layout(coord, layout):
    # crd2idx(coord, layout) is layout(coord), whatever the kind of layout; a tensor's layout is evaluated
    layout = getattr(layout, "layout", layout)
    if getattr(layout, "__cute_map_outer__", None) is None:
        if type(layout).__name__ != "Layout":
            raise CuteTypeError(f"crd2idx needs a layout, a tensor or a shape, got {short_repr(layout)}")
        try:  # a plain layout: its shape and stride
            return crd2idx(coord, layout.shape, layout.stride)
        except RecursionError:
            raise CuteValueError("crd2idx: the layout is nested too deeply") from None
    coord = as_int_tuple(coord, "coordinate")  # evaluated, never sliced: no None
    return layout(coord)


def crd2idx_unchecked(coord, shape, stride):
    if type(coord) is tuple:
        if type(shape) is tuple:
            # tuple tuple tuple: sum over the modes
            if type(stride) is not tuple or len(coord) != len(shape) or len(shape) != len(stride):
                raise RankError(
                    f"coordinate {fmt(coord)} does not match the rank of shape {fmt(shape)} / stride {fmt(stride)}"
                )
            r = 0
            for c, s, d in zip(coord, shape, stride):
                if type(c) is int and type(s) is int and type(d) is int:
                    r = r + c * d  # int int int, inlined
                else:
                    r = r + crd2idx_unchecked(c, s, d)
            return r
        # tuple int int: a tuple coordinate into a leaf mode is an error (as in CuTe)
        raise RankError(f"the coordinate {fmt(coord)} is a tuple but the shape {fmt(shape)} is an int")
    if coord is None:
        raise CuteValueError("a coordinate with None slices a layout; use slice_ instead of evaluating it")
    if type(shape) is tuple:
        # int tuple tuple: split the index colexicographically over the modes
        if type(stride) is not tuple or len(shape) != len(stride):
            raise RankError(f"shape {fmt(shape)} and stride {fmt(stride)} are not congruent")
        r = 0
        last = len(shape) - 1
        for i, (s, d) in enumerate(zip(shape, stride)):
            if i == last:
                if type(s) is int and type(d) is int:
                    return r + (0 if d == 0 else coord * d)  # int int int, inlined
                return r + crd2idx_unchecked(coord, s, d)
            if type(s) is int and type(d) is int:
                # int int int, inlined
                if s == 0:
                    raise CuteValueError(f"the index {fmt(coord)} cannot be split over the empty mode {fmt(s)} "
                                         f"of shape {fmt(shape)}")
                m = coord % s
                r = r + (0 if d == 0 else m * d)
                coord = coord // s
                continue
            p = product_unchecked(s)
            if type(p) is int and p == 0:
                raise CuteValueError(f"the index {fmt(coord)} cannot be split over the empty mode {fmt(s)} "
                                     f"of shape {fmt(shape)}")
            r = r + crd2idx_unchecked(coord % p, s, d)
            coord = coord // p
        return r
    if type(stride) is tuple:
        raise RankError(f"the shape {fmt(shape)} is an int but the stride {fmt(stride)} is a tuple")
    # int int int (a static stride 0 contributes a static 0, as CuTe's i * _0)
    return 0 if type(stride) is int and stride == 0 else coord * stride


def crd2idx_colex(coord, shape):
    if type(coord) is not tuple:
        # int coordinate: already an index
        return coord
    if type(shape) is not tuple:
        raise RankError(f"coordinate {fmt(coord)} has more modes than shape {fmt(shape)}")
    # tuple tuple: flatten both to the coordinate's profile and apply Horner's rule
    if len(coord) != len(shape):
        raise RankError(f"coordinate {fmt(coord)} does not match the rank of shape {fmt(shape)}")
    fc = flatten_unchecked(coord)
    fs = flatten_unchecked(product_like_unchecked(shape, coord))
    if not fc:
        return 0
    r = fc[-1]
    for c, s in zip(reversed(fc[:-1]), reversed(fs[:-1])):
        r = c + s * r
    return r


def idx2crd(idx: IntTuple, shape: Shape, stride: IntTuple | None = None) -> Coord:
    """Split an index into a (hierarchical) coordinate of ``shape``.

    Without ``stride`` the enumeration is colexicographic, ``c0 = i % s0, c1 = (i // s0) % s1, ...``,
    and the last (sub)mode takes what is left, unbounded, as in CuTe (``crd2idx`` of the index over
    the shape's unit bases): ``idx2crd(32, (4,)) == (32,)``, ``idx2crd(526, (4,(8,1),(2,8))) ==
    (2,(3,0),(0,8))``.  With ``stride`` (for compact layouts) every leaf is bounded: ``c = (i // d) % s``.

    @post crd2idx(result, shape) == idx (without stride, for an empty-free shape)
    """
    idx = as_int_tuple(idx, "index")
    shape = as_int_tuple(shape, "shape")
    if stride is not None:
        stride = as_int_tuple(stride, "stride")
    return idx2crd_unchecked(idx, shape, stride)


def idx2crd_unchecked(idx, shape, stride=None):
    if stride is None:
        if type(idx) is tuple:
            # tuple tuple: mode by mode
            if type(shape) is not tuple or len(idx) != len(shape):
                raise RankError(f"index {fmt(idx)} does not match the rank of shape {fmt(shape)}")
            return tuple(idx2crd_unchecked(i, s) for i, s in zip(idx, shape))
        if type(shape) is tuple:
            # int tuple: colexicographic split, the last mode taking the rest
            return _idx2crd_colex(idx, shape)
        # int int: the index is the coordinate
        return idx
    return _idx2crd_strided(idx, shape, stride)


def _idx2crd_colex(idx, shape):
    # CuTe's crd2idx(idx, shape, make_basis_like(shape)): each mode but the last takes idx % size(mode), the
    # last takes idx // (size of the modes before it), recursively inside tuple modes
    out = []
    last = len(shape) - 1
    for i, s in enumerate(shape):
        if i == last:
            out.append(_idx2crd_colex(idx, s) if type(s) is tuple else idx)
            break
        p = product_unchecked(s)
        if type(p) is int and p == 0:
            raise CuteValueError(f"idx2crd cannot split the index {fmt(idx)} over the empty mode {fmt(s)} "
                                 f"of shape {fmt(shape)}")
        if type(p) is int and p == 1:
            out.append(zeros_like(s))  # a static 0, as CuTe's i % _1
            continue
        r = idx % p
        out.append(_idx2crd_colex(r, s) if type(s) is tuple else r)
        idx = idx // p
    return tuple(out)


def _idx2crd_strided(idx, shape, stride):
    if type(idx) is tuple:
        # tuple tuple tuple
        if type(shape) is not tuple or type(stride) is not tuple or not len(idx) == len(shape) == len(stride):
            raise RankError(f"index {fmt(idx)} does not match the rank of shape {fmt(shape)} / stride {fmt(stride)}")
        return tuple(_idx2crd_strided(i, s, d) for i, s, d in zip(idx, shape, stride))
    if type(shape) is tuple:
        if type(stride) is not tuple:
            # int tuple int: compact column-major strides starting at `stride`
            stride = _prefix_product(shape, stride)
        # int tuple tuple
        if len(shape) != len(stride):
            raise RankError(f"shape {fmt(shape)} and stride {fmt(stride)} are not congruent")
        return tuple(_idx2crd_strided(idx, s, d) for s, d in zip(shape, stride))
    if type(stride) is tuple:
        raise RankError(f"the shape {fmt(shape)} is an int but the stride {fmt(stride)} is a tuple")
    # int int int
    if getattr(stride, "__cute_stride__", False):
        # a basis stride maps into a coordinate space: no integer index divides by it
        raise CuteTypeError(f"idx2crd needs integer strides to split the index {fmt(idx)}, got the basis stride "
                            f"{fmt(stride)} (over the extent {fmt(shape)})")
    if type(shape) is int and shape == 1:
        return 0
    if (type(stride) is int and stride == 0) or (type(shape) is int and shape == 0):
        raise CuteValueError(f"idx2crd cannot split the index {fmt(idx)} by the stride {fmt(stride)} "
                             f"over the extent {fmt(shape)}: both must be non-zero")
    return (idx // stride) % shape
