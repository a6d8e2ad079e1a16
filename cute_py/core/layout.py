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

from .memo import memoize, register_key_type, set_error_type
from ..errors import CuteTypeError, CuteValueError, RankError, StaticValueRequired
from .congruence import as_tiler_tuple, congruent_unchecked, filter_zeros_tuple_unchecked
from .coords import compact_col_major_unchecked, compact_order, crd2idx_colex, crd2idx_unchecked, idx2crd_unchecked
from .int_tuple import (as_index, as_int_tuple, as_mode, depth_unchecked, DynamicInt, fmt, get_unchecked, is_int,
                        is_shaped, MAX_DEPTH, short_repr)
from .int_tuple import flatten_unchecked as _flatten_tuple
from .typing import Coord, Int, IntTuple, Shape, Stride, XTuple

__all__ = [
    "Layout",
    "is_layout",
    "make_layout",
    "make_ordered_layout",
    "make_layout_like",
    "cosize",
    "coalesce",
    "filter",
    "filter_zeros",
    "select",
    "group_modes",
    "append",
    "prepend",
    "slice_",
    "slice_and_offset",
    "dice",
    "flatten",
    "coalesce_x",
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
                return slice_(self, coord)
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
        return _limit_depth(make_layout_unchecked(shape, stride), "make_layout")
    if len(args) == 2 and stride is None:
        args, stride = args[:1], args[1]
    if len(args) != 1:
        raise CuteTypeError(f"make_layout takes a shape (and a stride) or layouts, got {len(args)} arguments")
    return Layout(args[0], stride)


def _limit_depth(layout, op):
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
    _need_layout(layout, "make_layout_like")
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


def _map_outer(x):
    """The outer-layout mapper of a composed layout (``None`` for anything else)."""
    return getattr(x, "__cute_map_outer__", None)


def _need_layout(x, op):
    if type(x) is not Layout:
        raise CuteTypeError(f"{op} expects a Layout, got {type(x).__name__} {short_repr(x)}")


def cosize(layout: Any, mode: int | Sequence[int] = ()) -> Int:
    """The size of the codomain: ``sum((s-1)*|d|) + 1`` over the modes (of ``mode`` if given).

    For non-negative strides this is ``layout(size(layout) - 1) + 1``; for basis
    strides it is the size of the codomain's bounding shape (CuTe's ``coshape``).
    """
    if mode != ():
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


# -- coalesce and filter ------------------------------------------------------------------


def _static_basis(x):
    return getattr(x, "__cute_static__", False)


def coalesce_flat_lists(fs, fd, ns, nd):
    """Merge the flat modes ``fs:fd`` (all but the last) into the seed ``ns:nd``, back to front.

    CuTe's rules, in order, for each mode ``s:d`` against the front ``t:e`` of the result:
    ``s == 1``: skip it; a seed ``t == 1``: replace it; ``s*d == e`` (static): merge into
    ``s*t:d``; otherwise prepend ``s:d``.  Returns the result's modes as two lists.
    """
    shapes, strides = [ns], [nd]
    for i in range(len(fs) - 2, -1, -1):
        s = fs[i]
        if type(s) is int and s == 1:
            continue
        d = fd[i]
        t = shapes[-1]
        if len(shapes) == 1 and type(t) is int and t == 1:
            shapes[0], strides[0] = s, d
            continue
        e = strides[-1]
        if type(s) is int and type(d) is int and type(e) is int and type(t) is int and s * d == e:
            shapes[-1], strides[-1] = s * t, d
        elif type(s) is int and type(t) is int and _static_basis(d) and _static_basis(e) and s * d == e:
            # basis strides merge like ints when they are static and name the same mode
            shapes[-1], strides[-1] = s * t, d
        else:
            shapes.append(s)
            strides.append(d)
    if len(shapes) == 1:
        if type(shapes[0]) is int and shapes[0] == 1:
            return [1], [0]
        return shapes, strides
    shapes.reverse()
    strides.reverse()
    return shapes, strides


def coalesce_flat(fs, fd, ns, nd):
    """:func:`coalesce_flat_lists` as a layout (a leaf layout when one mode is left)."""
    shapes, strides = coalesce_flat_lists(fs, fd, ns, nd)
    if len(shapes) == 1:
        return make_layout_unchecked(shapes[0], strides[0])
    return make_layout_unchecked(tuple(shapes), tuple(strides))


def coalesce_unchecked(layout):
    fs, fd = layout.shape, layout.stride
    if type(fs) is not tuple:
        return make_layout_unchecked(1, 0) if type(fs) is int and fs == 1 else layout
    fs, fd = _flatten_tuple(fs), _flatten_tuple(fd)
    if not fs:
        return make_layout_unchecked(1, 0)
    return coalesce_flat(fs, fd, fs[-1], fd[-1])


def _coalesce_x(layout):
    # like coalesce_unchecked, but a trailing size-1 mode keeps its stride (the function outside the domain)
    fs, fd = _flatten_tuple(layout.shape), _flatten_tuple(layout.stride)
    if type(fs) is not tuple:
        fs, fd = (fs,), (fd,)
    if not fs:
        return make_layout_unchecked(1, 0)
    last = fs[-1]
    if type(last) is int and last == 1:
        return coalesce_flat(fs, fd, 2, fd[-1])
    return coalesce_flat(fs, fd, last, fd[-1])


def _filter_flat(layout):
    """The flat modes of ``filter(layout)`` as two lists (``[1], [0]`` if nothing is left)."""
    fs, fd = _flatten_tuple(layout.shape), _flatten_tuple(layout.stride)
    if type(fs) is not tuple:
        fs, fd = (fs,), (fd,)
    # dropping static stride-0 and size-1 modes before coalescing is what filter_zeros + coalesce do
    ks, kd = [], []
    for s, d in zip(fs, fd):
        if (type(d) is int and d == 0) or (type(s) is int and s == 1):
            continue
        ks.append(s)
        kd.append(d)
    if not ks:
        return [1], [0]
    return coalesce_flat_lists(ks, kd, ks[-1], kd[-1])


def _filter(layout):
    s, d = _filter_flat(layout)
    return make_layout_unchecked(s[0], d[0]) if len(s) == 1 else make_layout_unchecked(tuple(s), tuple(d))


def _transform(layout, profile, fn):
    """Apply ``fn(mode, profile_mode)`` to the first ``rank(profile)`` modes; keep the rest."""
    if len(profile) > len(layout):
        raise RankError(f"profile {fmt(profile)} has more modes than layout {layout}")
    modes = [fn(layout[i], p) for i, p in enumerate(profile)]
    modes.extend(layout[i] for i in range(len(profile), len(layout)))
    return make_layout(*modes)


def _profile(p, op):
    # a target profile: None, or an IntTuple whose tuple structure is what counts
    return None if p is None else as_int_tuple(p, f"{op} target profile")


@memoize
def coalesce(layout: Any, target_profile: IntTuple | None = None) -> Any:
    """Merge modes where possible, keeping the function on the domain and the size.

    With ``target_profile`` (an IntTuple), coalesce only inside each of its leaves,
    keeping the profile: ``coalesce((2,(1,6)):(1,(6,2)), (1,1)) == (2,6):(1,2)``.
    @post size(result) == size(layout); result(i) == layout(i) for 0 <= i < size(layout)
    """
    if target_profile is not None:
        target_profile = _profile(target_profile, "coalesce")
    if type(layout) is not Layout and _map_outer(layout):
        return _map_outer(layout)(lambda o: coalesce(o, target_profile))
    _need_layout(layout, "coalesce")
    if type(target_profile) is not tuple:
        return coalesce_unchecked(layout)
    return _transform(layout, target_profile, coalesce)


def coalesce_x(layout: Layout, target_profile: IntTuple | None = None) -> Layout:
    """:func:`coalesce` that also keeps the function beyond the domain (used by composition)."""
    if target_profile is None or type(target_profile) is not tuple:
        return _coalesce_x(layout)
    return _transform(layout, target_profile, coalesce_x)


def filter_zeros(layout: Layout, target_profile: Stride | None = None) -> Layout:
    """Replace the modes with static stride 0 (or at 0 leaves of ``target_profile``) by size 1."""
    _need_layout(layout, "filter_zeros")
    guide = layout.stride if target_profile is None else as_int_tuple(target_profile, "filter_zeros profile",
                                                                      allow_basis=True)
    return make_layout_unchecked(filter_zeros_tuple_unchecked(guide, layout.shape), layout.stride)


@memoize
def filter(layout: Any, target_profile: IntTuple | None = None) -> Any:
    """Remove all stride-0 and size-1 modes, then coalesce (``1:0`` if nothing is left).

    @post layout(i) for the kept coordinates are unchanged, in order; depth(result) <= 1
    """
    if target_profile is not None:
        target_profile = _profile(target_profile, "filter")
    if type(layout) is not Layout and _map_outer(layout):
        return _map_outer(layout)(lambda o: filter(o, target_profile))
    _need_layout(layout, "filter")
    if type(target_profile) is not tuple:
        return _filter(layout)
    return _transform(layout, target_profile, filter)


# -- modes ----------------------------------------------------------------------------------


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
    if _map_outer(layout):
        return _map_outer(layout)(lambda o: select(o, modes))
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
        return _limit_depth(make_layout_unchecked(shape, stride), "group_modes")
    if _map_outer(x):
        return _map_outer(x)(lambda o: group_modes(o, begin, end))
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
    if _map_outer(x):
        return _map_outer(x)(lambda o: _extend(o, elem, up_to_rank, front))
    if type(x) is Layout:
        if elem is None:
            elem = make_layout_unchecked(1, 0)
        _need_layout(elem, "append/prepend of a layout")
        return _limit_depth(make_layout_unchecked(
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
    _need_layout(layout, "slice_and_offset")
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
    if _map_outer(x):
        return _map_outer(x)(flatten)
    return _flatten_tuple(_as_int_tuple_arg(x, "flatten"))
