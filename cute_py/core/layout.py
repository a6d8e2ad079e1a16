"""``Layout(shape, stride)``: a function from coordinates to indices, and its basic operations.

A layout maps a coordinate ``c`` of ``shape`` to ``crd2idx(c, shape, stride)``.
Layouts are immutable and hashable, print in CuTe notation (``(4,(2,8)):(2,(1,8))``)
and are called like functions: ``layout(i)`` for a 1-D index, ``layout(coord)``
for a (hierarchical) coordinate, ``layout((None, 3))`` for the sub-layout that
keeps the ``None`` modes (CuTe's ``_``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import CuteTypeError, CuteValueError, RankError, StaticValueRequired
from .congruence import congruent_unchecked, filter_zeros_tuple_unchecked
from .coords import compact_col_major_unchecked, compact_order, crd2idx_colex, crd2idx_unchecked, idx2crd_unchecked
from .int_tuple import depth_unchecked, flatten_unchecked as _flatten_tuple, get_unchecked
from .leaves import DynamicInt, is_int
from .normalise import as_index, as_int_tuple, as_mode, is_shaped, MAX_DEPTH
from .notation import fmt, short_repr
from .memo import register_key_type, set_error_type
from .typing import Coord, Int, IntTuple, Shape, Stride

__all__ = [
    "Layout",
    "is_layout",
    "make_layout",
    "make_ordered_layout",
    "make_layout_like",
    "cosize",
]

set_error_type(CuteValueError)

_new = object.__new__
_set = object.__setattr__


def _as_stride(x):
    # a stride leaf is an int, a dynamic value, or a basis stride (``__cute_stride__``)
    return as_int_tuple(x, "stride", allow_basis=True)


def _check_shape(shape, whole):
    if type(shape) is tuple:
        for e in shape:
            _check_shape(e, whole)
    elif type(shape) is int and shape < 0:
        raise CuteValueError(f"shape extents must be >= 0, got {shape} in shape {fmt(whole)}")


def make_layout_unchecked(shape, stride):
    """Build a layout without validation (for the library's own, already valid, results)."""
    layout = _new(Layout)
    _set(layout, "shape", shape)
    _set(layout, "stride", stride)
    return layout


def concat_layouts(layouts):
    """The concatenation of layouts as the modes of a new layout (``make_layout(*layouts)``)."""
    return make_layout_unchecked(tuple(x.shape for x in layouts), tuple(x.stride for x in layouts))


def vector_layout(n):
    """``Layout(n)`` for a leaf ``n``: ``n:1`` (``1:0`` for a static 1)."""
    return make_layout_unchecked(n, 0 if (type(n) is int and n == 1) else 1)


@register_key_type
class Layout:
    """An immutable, hashable layout ``shape:stride``.

    ``Layout(shape)`` is compact column-major (static size-1 modes get stride 0,
    as in CuTe); ``Layout(shape, stride)`` requires ``stride`` congruent to
    ``shape``.  Lists are accepted and stored as tuples.
    """

    __slots__ = ("shape", "stride", "_hash")

    def __init__(self, shape: Shape, stride: Stride | None = None) -> None:
        shape = as_int_tuple(shape, "shape")
        _check_shape(shape, shape)
        if stride is None:
            stride = compact_col_major_unchecked(shape)
        else:
            stride = _as_stride(stride)
            if not congruent_unchecked(shape, stride):
                raise RankError(f"stride {fmt(stride)} is not congruent to shape {fmt(shape)}")
        _set(self, "shape", shape)
        _set(self, "stride", stride)

    def __setattr__(self, name, value):
        raise AttributeError(f"Layout is immutable; cannot set {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"Layout is immutable; cannot delete {name!r}")

    def __reduce__(self):
        return (Layout, (self.shape, self.stride))

    # -- identity ---------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return type(other) is Layout and self.shape == other.shape and self.stride == other.stride

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            h = hash((self.shape, self.stride))
            _set(self, "_hash", h)
            return h

    def __cute_substitute__(self, fn):
        """This layout with ``fn`` applied to its shape and stride (see ``symbolic.substitute``)."""
        return make_layout_unchecked(fn(self.shape), fn(self.stride))

    def __str__(self):
        try:
            return f"{fmt(self.shape)}:{fmt(self.stride)}"
        except RecursionError:
            return "<a layout nested too deeply to print>"

    def __repr__(self):
        try:
            return f"Layout({self.shape!r}, {self.stride!r})"
        except RecursionError:
            return "Layout(<nested too deeply to print>)"

    def __format__(self, spec):
        return format(str(self), spec)

    # -- modes ------------------------------------------------------------------------
    def __getitem__(self, i: int) -> Layout:
        """Mode ``i`` as a layout (an int-shaped layout has the single mode 0)."""
        if type(i) is not int:
            i = as_index(i, "a mode index of a layout")
        if type(self.shape) is tuple:
            try:
                return make_layout_unchecked(self.shape[i], self.stride[i])
            except IndexError:
                raise RankError(f"mode {i} is out of range for layout {self} of rank {len(self.shape)}") from None
        if i in (0, -1):
            return self
        raise RankError(f"mode {i} is out of range for the rank-1 layout {self}")

    def __iter__(self) -> Iterator[Layout]:
        if type(self.shape) is tuple:
            for s, d in zip(self.shape, self.stride):
                yield make_layout_unchecked(s, d)
        else:
            yield self

    def __len__(self) -> int:
        return len(self.shape) if type(self.shape) is tuple else 1

    # -- evaluation -------------------------------------------------------------------
    def __call__(self, *coord: Coord) -> Int | Coord | Layout:
        """Evaluate at an index or a coordinate; a coordinate with ``None`` slices."""
        if len(coord) == 1:
            coord = coord[0]
        elif not coord:
            raise CuteValueError("a layout is evaluated at a coordinate: layout(i) or layout((i, j))")
        if type(coord) is not int and not is_flat_int_tuple(coord):
            coord = as_int_tuple(coord, "coordinate", allow_none=True)
            if has_none(coord):
                return UPPER_LAYER_OPERATIONS["slice_"](self, coord)
        try:
            r = crd2idx_unchecked(coord, self.shape, self.stride)
        except RecursionError:
            raise CuteValueError(f"the layout is nested too deeply to evaluate ({short_repr(self)})") from None
        if type(r) is int:
            return r
        # a codomain coordinate (basis strides) is returned as a coordinate tuple
        as_coord = getattr(r, "__cute_coord__", None)
        return as_coord() if as_coord is not None else r

    # -- index to coordinate (compact layouts) ----------------------------------------------
    def get_hier_coord(self, idx: Int) -> Coord:
        """The hierarchical coordinate of the index ``idx``: CuTe's ``idx2crd(idx, shape, stride)``.

        Meaningful for compact layouts (a bijection onto ``[0, size)``) and ``idx`` in ``[0, size)``;
        where the split coordinate does not map back to ``idx`` (static values), raises
        :class:`CuteValueError` instead of returning it.
        @post is_congruent(result, shape) and self(result) == idx
        """
        return _hier_coord(self, idx, "get_hier_coord")

    def get_flat_coord(self, idx: Int) -> Int | tuple[Int, ...]:
        """The coordinate of ``idx`` with one int per top-level mode (each mode's colexicographic index).

        @post depth(result) <= 1, rank(result) == rank(self) (an int for one mode), self(result) == idx
        """
        hier = _hier_coord(self, idx, "get_flat_coord")
        if type(self.shape) is not tuple:
            return crd2idx_colex(hier, self.shape)
        if len(self.shape) == 1:  # one mode: its index (CuTe's repeat<1> is a single int)
            return crd2idx_colex(hier[0], self.shape[0])
        return tuple(crd2idx_colex(c, s) for c, s in zip(hier, self.shape))

    def get_1d_coord(self, idx: Int) -> Int:
        """The colexicographic 1-D coordinate of ``idx``.  @post self(result) == idx"""
        return crd2idx_colex(_hier_coord(self, idx, "get_1d_coord"), self.shape)

    @property
    def max_alignment(self) -> int:
        """The largest N such that the layout's offsets come in aligned runs of N (see :func:`max_alignment`)."""
        return UPPER_LAYER_OPERATIONS["max_alignment"](self)


# operations of the modules above this one that a Layout offers as attributes (they register here)
UPPER_LAYER_OPERATIONS = {}


def _hier_coord(layout, idx, op):
    if not is_int(idx):
        idx = as_index(idx, f"{op}: the index")
    for d in (_flatten_tuple(layout.stride) if type(layout.stride) is tuple else (layout.stride,)):
        if not is_int(d):
            raise CuteTypeError(f"{op} needs integer strides, got {layout}")
    try:
        crd = idx2crd_unchecked(idx, layout.shape, layout.stride)
        back = crd2idx_unchecked(crd, layout.shape, layout.stride)
    except RecursionError:
        raise CuteValueError(f"{op}: the layout is nested too deeply ({short_repr(layout)})") from None
    if type(back) is int and type(idx) is int and back != idx:
        raise CuteValueError(
            f"{op}: the index {idx} splits into the coordinate {fmt(crd)} of {layout}, which maps to {back}: "
            f"the index is not an offset of the layout (a compact layout and an index in [0, size) are needed)")
    return crd


def is_layout(x: object) -> bool:
    """True for a :class:`Layout`."""
    return type(x) is Layout


def is_flat_int_tuple(c):
    # True for a flat tuple of ints: a coordinate that needs no normalising and has no None
    if type(c) is not tuple:
        return False
    for e in c:
        if type(e) is not int:
            return False
    return True


def has_none(c):
    if type(c) is not tuple:
        return c is None
    for e in c:
        if e is None or (type(e) is tuple and has_none(e)):
            return True
    return False


def make_layout(*args: Shape | Stride | Layout, stride: Stride | None = None) -> Layout:
    """``make_layout(shape, stride=None)`` or ``make_layout(*layouts)``.

    With a shape: the layout ``shape:stride`` (compact column-major by default).
    With layouts: their concatenation, one mode per layout (a single layout is
    wrapped into a rank-1 layout, as in CuTe).
    """
    if args and all(type(a) is Layout for a in args):
        if stride is not None:
            raise CuteTypeError("make_layout(*layouts) takes no stride")
        shape, stride = tuple(a.shape for a in args), tuple(a.stride for a in args)
        return limit_depth(make_layout_unchecked(shape, stride), "make_layout")
    if len(args) == 2 and stride is None:
        args, stride = args[:1], args[1]
    if len(args) != 1:
        raise CuteTypeError(f"make_layout takes a shape (and a stride) or layouts, got {len(args)} arguments")
    return Layout(args[0], stride)


def limit_depth(layout, op):
    """``layout``, unless an operation that nests modes made it deeper than :data:`MAX_DEPTH`."""
    try:
        d = depth_unchecked(layout.shape)
    except RecursionError:
        d = None
    if d is None or d > MAX_DEPTH:
        raise CuteValueError(f"{op}: the result would be nested more than {MAX_DEPTH} levels deep (the limit of cute_py)")
    return layout


def make_ordered_layout(shape: Shape, order: IntTuple) -> Layout:
    """The compact layout of ``shape`` whose modes are visited in increasing ``order``.

    ``make_ordered_layout((2,2,2,2), (0,2,3,1)) == (2,2,2,2):(1,4,8,2)``.
    """
    shape = as_int_tuple(shape, "shape")
    return Layout(shape, compact_order(shape, order))


def make_layout_like(layout: Layout) -> Layout:
    """A compact layout with the shape of ``layout`` and the order of its strides.

    Static 0 strides are kept: ``(2,2,2,2):(0,2,4,1) -> (2,2,2,2):(0,2,4,1)``.
    """
    check_layout(layout, "make_layout_like")
    shape = filter_zeros_tuple_unchecked(layout.stride, layout.shape)
    return Layout(layout.shape, compact_order(shape, _order_of(layout.stride)))


def _order_of(stride):
    # the strides as an order (static ints compare; 0 strides give size-1 shapes anyway)
    if type(stride) is tuple:
        return tuple(_order_of(s) for s in stride)
    if type(stride) is not int:
        if isinstance(stride, DynamicInt):
            raise StaticValueRequired(f"make_layout_like needs static strides, got {fmt(stride)}")
        raise CuteTypeError(f"make_layout_like needs integer strides, got {fmt(stride)}")
    return stride


def map_outer(x):
    """The outer-layout mapper of a composed layout (``None`` for anything else)."""
    return getattr(x, "__cute_map_outer__", None)


def check_layout(x, op):
    if type(x) is not Layout:
        raise CuteTypeError(f"{op} expects a Layout, got {type(x).__name__} {short_repr(x)}")


def cosize(layout: Any, mode: int | Sequence[int] = ()) -> Int:
    """The size of the codomain: ``sum((s-1)*|d|) + 1`` over the modes (of ``mode`` if given).

    For non-negative strides this is ``layout(size(layout) - 1) + 1``; for basis
    strides it is the size of the codomain's bounding shape (CuTe's ``coshape``).
    """
    if not (type(mode) is tuple and mode == ()):
        if not is_shaped(layout):
            raise CuteTypeError(f"cosize expects a layout, got {short_repr(layout)}")
        layout = get_unchecked(layout, as_mode(mode, "cosize"))
    if type(layout) is not Layout:
        if is_shaped(layout) and hasattr(layout, "cosize"):
            return layout.cosize()
        raise CuteTypeError(f"cosize expects a layout, got {short_repr(layout)}")
    try:
        fs, fd = _flatten_tuple(layout.shape), _flatten_tuple(layout.stride)
    except RecursionError:
        raise CuteValueError(f"cosize: the layout is nested too deeply ({short_repr(layout)})") from None
    if type(fs) is not tuple:
        fs, fd = (fs,), (fd,)
    co = 0
    for s, d in zip(fs, fd):
        if type(s) is int and s == 0:
            return 0  # an empty layout reaches nothing
        co = co + (s - 1) * abs(d)
    hook = getattr(co, "__cute_cosize__", None)
    return hook() if hook is not None else co + 1


def offset_table(layout: Any) -> list[int] | None:
    """``[layout(i) for i in range(size(layout))]`` for a :class:`Layout` of int shapes and strides, built mode by
    mode (the first mode fastest, as CuTe's index-to-coordinate map goes); ``None`` for any other layout."""
    if type(layout) is not Layout:
        return None
    shape, stride = _flatten_tuple(layout.shape), _flatten_tuple(layout.stride)
    table = [0]
    for extent, step in zip(*((shape, stride) if type(shape) is tuple else ((shape,), (stride,)))):
        if type(extent) is not int or type(step) is not int:
            return None
        table = [t + k * step for k in range(extent) for t in table]
    return table
