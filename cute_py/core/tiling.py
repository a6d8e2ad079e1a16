"""Divides and products of layouts, and ``tile_to_shape``.

``logical_divide(A, B) = composition(A, make_layout(B, complement(B, shape(coalesce(A)))))``
and ``logical_product(A, B) = make_layout(A, composition(complement(A, size(A)*cosize(B)), B))``,
as in the current CuTe C++; the zipped/tiled/flat forms regroup their modes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .memo import memoize
from .algebra import complement_unchecked, composition_unchecked, disjoint_complement
from .inverse import right_inverse
from ..errors import CuteTypeError, CuteValueError, DivisibilityError, RankError, StaticValueRequired
from .congruence import evenly_divides_unchecked, filter_zeros_tuple_unchecked
from .coords import compact_col_major_unchecked
from .division import ceil_div_unchecked
from .int_tuple import flatten_unchecked, unflatten
from .leaves import is_int
from .normalise import as_int_tuple, is_static_unchecked
from .notation import fmt, short_repr
from .products import product_each_unchecked, product_unchecked
from .coalescing import coalesce_unchecked
from .layout import concat_layouts, cosize, Layout, make_layout_unchecked, make_ordered_layout, vector_layout
from .modes import append, slice_
from .typing import Int, IntTuple, Shape, Tiler

if TYPE_CHECKING:
    from .composed import ComposedLayout

__all__ = [
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "tile_to_shape",
    "tile_unzip",
    "zip_layouts",
    "make_layout_tv",
    "make_fragment_like_layout",
]


def _on_outer(x, fn, *args):
    """For a composed layout ``x``: ``fn`` applied to its outer layout, keeping inner and offset."""
    mapper = getattr(x, "__cute_map_outer__", None)
    if mapper is None:
        return None
    return mapper(lambda outer: fn(outer, *args))


def _need_layout(x, op, what):
    if type(x) is not Layout:
        raise CuteTypeError(f"{op}: {what} must be a Layout, got {type(x).__name__} {short_repr(x)}")


def _by_mode(op, layout, tiler, fn):
    """Apply ``fn`` to the modes of ``layout`` and the elements of a tuple ``tiler``; keep the rest."""
    if len(tiler) > len(layout):
        raise RankError(f"{op}: too many modes in tiler {fmt(tiler)} for layout {layout} of rank {len(layout)}")
    modes = [layout[i] if t is None else fn(layout[i], t) for i, t in enumerate(tiler)]   # None: the mode whole
    modes.extend(layout[i] for i in range(len(tiler), len(layout)))
    return concat_layouts(modes)


def _as_tiler(tiler, op, level=0):
    """A tiler as the algebra takes it: a layout, ``None``, an extent >= 0, or a tuple of tilers
    (lists become tuples, integer-likes ints; anything else is rejected)."""
    t = type(tiler)
    if tiler is None and level == 0 and "divide" not in op:
        # None (CuTe's ``_``) keeps a mode whole: as the whole tiler of a divide it keeps the layout (CuTe C++'s
        # logical_divide(L, _) is L); a product has no such meaning
        raise CuteTypeError(f"{op}: None is a tiler only inside a by-mode tuple (keep that mode whole), not the "
                            f"whole tiler; pass a layout, an extent or a tuple")
    if t is int and tiler >= 0 or t is Layout or tiler is None:
        return tiler
    if t is tuple:  # the common tuple of extents and layouts, as it is
        for e in tiler:
            if not (type(e) is int and e >= 0 or type(e) is Layout or e is None):
                break
        else:
            return tiler
    if isinstance(tiler, (tuple, list)):
        if level >= 64:
            raise CuteValueError(f"{op}: the tiler is nested too deeply")
        return tuple(_as_tiler(t, op, level + 1) for t in tiler)
    if hasattr(tiler, "__cute_map_outer__"):
        raise CuteTypeError(f"{op}: a tiler is a layout, an int, None or a tuple of them, got {short_repr(tiler)}")
    n = as_int_tuple(tiler, f"{op} tiler (a layout, an int, None or a tuple of them)")
    if type(n) is int and n < 0:
        raise CuteValueError(f"{op}: a tile extent must be >= 0, got {n}")
    return n


@memoize
def logical_divide(layout: Layout | ComposedLayout, tiler: Tiler) -> Layout | ComposedLayout:
    """Split ``layout`` into (tile, rest) by ``tiler``: ``composition(layout, (tiler, complement))``.

    ``tiler`` is a layout, an int, ``None`` or a tuple applied mode by mode.

    A tiler that does not divide the layout gets a last, partial tile: the rest mode is
    rounded up (``ceil_div``), as in CuTe, so the result evaluates ``layout`` beyond its size there.

    @post size(result) >= size(layout), with equality when the tiler divides the layout
    @post result(c) == layout(T(c)) with T = make_layout(tiler, complement(tiler, shape(coalesce(layout))))
    """
    if type(layout) is not Layout and hasattr(layout, "__cute_map_outer__"):
        return _on_outer(layout, logical_divide, tiler)
    _need_layout(layout, "logical_divide", "layout")
    tiler = _as_tiler(tiler, "logical_divide")
    if type(tiler) is Layout:
        rest = complement_unchecked(tiler, coalesce_unchecked(layout).shape)
        return composition_unchecked(layout, concat_layouts([tiler, rest]))
    if type(tiler) is tuple:
        return _by_mode("logical_divide", layout, tiler, _logical_divide)
    if tiler is None:
        return layout
    if type(tiler) is int and tiler == 0:
        raise CuteValueError(f"logical_divide: a tile of extent 0 cannot tile {layout}")
    return _logical_divide(layout, vector_layout(tiler))


_logical_divide = logical_divide.__wrapped__


def _zip2_by(t, guide):
    # CuTe's zip2_by: the rank-2 modes at the leaves of the guide split into (firsts, seconds + extra modes)
    if type(guide) is tuple:
        # tuple guide: mode by mode, the modes past the guide go to the seconds
        if type(t) is not tuple or len(t) < len(guide):
            raise RankError(f"cannot regroup {fmt(t)} by the tiler profile {_tiler_profile(guide)}")
        split = [_zip2_by(t[i], g) for i, g in enumerate(guide)]
        return (tuple(x[0] for x in split), tuple(x[1] for x in split) + t[len(guide):])
    # leaf guide (an extent, a layout, or None: a mode the divide or product left as it was): a rank-2 mode
    if type(t) is not tuple or len(t) != 2:
        if guide is None:
            raise RankError(f"a None tiler mode keeps the mode {fmt(t)} as it is and regroups it as "
                            f"(first, second): it must have rank 2")
        raise RankError(f"expected a rank-2 (tile, rest) mode, got {fmt(t)}")
    return t


def _tiler_profile(guide):
    if type(guide) is tuple:
        return "(" + ",".join(_tiler_profile(g) for g in guide) + ")"
    return "_" if guide is None else "x"


def tile_unzip(layout: Layout, tiler: Tiler) -> Layout:
    """Gather the (tile, rest) pairs at the leaves of ``tiler`` into ((tiles...), (rests..., extra modes...))."""
    return make_layout_unchecked(_zip2_by(layout.shape, tiler), _zip2_by(layout.stride, tiler))


def _unpack(result, first, second):
    # CuTe's result(_, repeat<R>(_)): a rank-1 mode is kept as it is, others are spliced
    def coord(mode):
        r = len(result[mode])
        return None if r == 1 else (None,) * r

    c0 = coord(0) if first else None
    c1 = coord(1) if second else None
    return slice_(result, (c0, c1))


@memoize
def zipped_divide(layout: Layout | ComposedLayout, tiler: Tiler) -> Layout | ComposedLayout:
    """``logical_divide`` with the tile modes gathered first: ``((TILE...), (REST...))``.

    @post size(result[0]) == size of the tile; result is logical_divide regrouped
    """
    if type(layout) is not Layout and hasattr(layout, "__cute_map_outer__"):
        return _on_outer(layout, zipped_divide, tiler)
    tiler = _as_tiler(tiler, "zipped_divide")
    return tile_unzip(_logical_divide(layout, tiler), tiler)


@memoize
def tiled_divide(layout: Layout | ComposedLayout, tiler: Tiler) -> Layout | ComposedLayout:
    """``zipped_divide`` with the rest modes unpacked: ``((TILE...), REST0, REST1, ...)``.

    @post result == slice_(zipped_divide(layout, tiler), (None, repeat(R))), ``R`` the rank of the rest group and
          CuTe's ``repeat<1>(_)`` being ``_`` itself: a rest group of rank 1 stays one mode (``((2),(4))``, as C++;
          the DSL unpacks it, ``((2),4)``)"""
    if type(layout) is not Layout and hasattr(layout, "__cute_map_outer__"):
        return _on_outer(layout, tiled_divide, tiler)
    return _unpack(zipped_divide.__wrapped__(layout, tiler), False, True)


@memoize
def flat_divide(layout: Layout | ComposedLayout, tiler: Tiler) -> Layout | ComposedLayout:
    """``zipped_divide`` with both groups unpacked: ``(TILE0, TILE1, ..., REST0, REST1, ...)``.

    @post result == slice_(zipped_divide(layout, tiler), (repeat(R0), repeat(R1))) with CuTe's ``repeat<1>(_)``
          being ``_``: a group of rank 1 stays one mode (``((2),(4))``, as C++; the DSL gives ``(2,4)``)"""
    if type(layout) is not Layout and hasattr(layout, "__cute_map_outer__"):
        return _on_outer(layout, flat_divide, tiler)
    return _unpack(zipped_divide.__wrapped__(layout, tiler), True, True)


@memoize
def logical_product(block: Layout | ComposedLayout, tiler: Tiler | ComposedLayout) -> Layout | ComposedLayout:
    """Repeat ``block`` over ``tiler``: ``(block, composition(complement(block, size(block)*cosize(tiler)), tiler))``.

    ``tiler`` is a layout, an int, ``None`` or a tuple applied mode by mode.

    @post size(result) == size(block) * size(tiler)
    @post result[0] == block (for a layout tiler)
    """
    if type(block) is not Layout and hasattr(block, "__cute_map_outer__"):
        return _on_outer(block, logical_product, tiler)
    _need_layout(block, "logical_product", "block")
    if type(tiler) is not Layout and hasattr(tiler, "__cute_map_outer__") and hasattr(tiler, "outer"):
        return _product_with_swizzled_tiler(block, tiler)
    tiler = _as_tiler(tiler, "logical_product")
    if type(tiler) is Layout:
        reach = cosize(tiler)
        comp, open_ = disjoint_complement(block, product_unchecked(block.shape) * reach)
        room = product_unchecked(comp.shape)
        if not open_ and type(room) is int and type(reach) is int and room < reach:
            # CuTe's complement leaves gaps here; the tiler would run past it into the block
            raise DivisibilityError(
                f"logical_product: the complement of the block {block} has {room} positions and ends inside "
                f"the block's span, but the tiler {tiler} reaches {reach}: the copies would overlap the block"
            )
        return concat_layouts([block, composition_unchecked(comp, tiler)])
    if type(tiler) is tuple:
        return _by_mode("logical_product", block, tiler, _logical_product)
    if tiler is None:
        return block
    return _logical_product(block, vector_layout(tiler))


_logical_product = logical_product.__wrapped__


def _product_with_swizzled_tiler(block, tiler):
    # the product with the tiler's outer layout, under the tiler's swizzle carried to the new layout
    inner, offset = tiler.inner, tiler.offset
    if not (hasattr(inner, "yyy_msk") and type(offset) is int and offset == 0):
        raise CuteTypeError(f"logical_product: a composed tiler needs a swizzle with offset 0, got {tiler}")
    outer = tiler.outer
    new_layout = _logical_product(block, outer)
    b, m, s = inner.bits, inner.base, abs(inner.shift)
    only_zy = make_layout_unchecked((1 << m, 1 << b, 1 << (s - b), 1 << b, 1), (0, 1 << m, 0, 1 << (m + s), 0))
    layout_only_zy = composition_unchecked(only_zy, outer)
    active = layout_only_zy(product_unchecked(layout_only_zy.shape) - 1)
    new_z = new_layout((0, outer(active & inner.zzz_msk)))
    new_y = new_layout((0, outer(active & inner.yyy_msk)))
    return composition_unchecked(inner.from_masks(new_y, new_z), new_layout)


@memoize
def zipped_product(block: Layout | ComposedLayout, tiler: Tiler) -> Layout | ComposedLayout:
    """``logical_product`` with the block modes gathered first: ``((BLOCK...), (REPEAT...))``."""
    if type(block) is not Layout and hasattr(block, "__cute_map_outer__"):
        return _on_outer(block, zipped_product, tiler)
    tiler = _as_tiler(tiler, "zipped_product")
    return tile_unzip(_logical_product(block, tiler), tiler)


@memoize
def tiled_product(block: Layout | ComposedLayout, tiler: Tiler) -> Layout | ComposedLayout:
    """``zipped_product`` with the repeat modes unpacked: ``((BLOCK...), R0, R1, ...)`` (a repeat group of rank 1
    stays one mode, as :func:`tiled_divide`'s rest group)."""
    if type(block) is not Layout and hasattr(block, "__cute_map_outer__"):
        return _on_outer(block, tiled_product, tiler)
    return _unpack(zipped_product.__wrapped__(block, tiler), False, True)


@memoize
def flat_product(block: Layout | ComposedLayout, tiler: Tiler) -> Layout | ComposedLayout:
    """``zipped_product`` with both groups unpacked: ``(B0, B1, ..., R0, R1, ...)`` (a group of rank 1 stays one
    mode, as :func:`flat_divide`'s)."""
    if type(block) is not Layout and hasattr(block, "__cute_map_outer__"):
        return _on_outer(block, flat_product, tiler)
    return _unpack(zipped_product.__wrapped__(block, tiler), True, True)


def _zip(a, b):
    # CuTe's zip of two IntTuples (tuple_algorithms.hpp): a leaf first wraps the pair, ((a,b)), whatever b is;
    # a tuple first zips mode by mode with a tuple of its rank, ((a0,b0),(a1,b1),...), and takes nothing else
    if type(a) is not tuple:
        # leaf anything: one mode holding the pair
        return ((a, b),)
    if type(b) is not tuple:
        # tuple leaf: no zip (CuTe does not compile it)
        raise RankError(f"cannot zip the tuple {fmt(a)} with the leaf {fmt(b)}: zip pairs a tuple with a tuple "
                        f"of its rank (a leaf first wraps the pair)")
    # tuple tuple: mode by mode, equal ranks
    if len(a) != len(b):
        raise RankError(f"cannot zip {fmt(a)} with {fmt(b)}: ranks differ")
    return tuple(zip(a, b))


def zip_layouts(a: Layout, b: Layout, op: str = "zip_layouts") -> Layout:
    """Zip two layouts mode by mode, as CuTe's ``zip(a, b)``: ``((a0,b0),(a1,b1),...)`` for equal ranks.

    A leaf-shaped ``a`` wraps the pair in one mode, ``((a,b))``, whatever ``b`` is; a tuple-shaped
    ``a`` needs a tuple-shaped ``b`` of its rank (a leaf ``b`` is a :class:`RankError`, as in CuTe).
    """
    try:
        return make_layout_unchecked(_zip(a.shape, b.shape), _zip(a.stride, b.stride))
    except RankError as e:
        raise RankError(f"{op}: {e} (zipping {a} with {b})") from None


def _rank_product(block, tiler, op):
    _need_layout(block, op, "block")
    _need_layout(tiler, op, "tiler")
    r = max(len(block), len(tiler))
    result = _logical_product(append(block, up_to_rank=r), append(tiler, up_to_rank=r))
    return result[0], result[1]


@memoize
def blocked_product(block: Layout | ComposedLayout, tiler: Layout) -> Layout | ComposedLayout:
    """Tile ``block`` over ``tiler``, the block being the inner (fastest) part of each mode.

    @post rank(result) == max(rank(block), rank(tiler))
    @post size(result) == size(block) * size(tiler)
    """
    if type(block) is not Layout and hasattr(block, "__cute_map_outer__"):
        return _on_outer(block, blocked_product, tiler)
    b, t = _rank_product(block, tiler, "blocked_product")
    return zip_layouts(b, t, "blocked_product")


@memoize
def raked_product(block: Layout | ComposedLayout, tiler: Layout) -> Layout | ComposedLayout:
    """Tile ``block`` over ``tiler``, interleaving the blocks (the tiler is the inner part of each mode).

    @post rank(result) == max(rank(block), rank(tiler))
    @post size(result) == size(block) * size(tiler)
    """
    if type(block) is not Layout and hasattr(block, "__cute_map_outer__"):
        return _on_outer(block, raked_product, tiler)
    b, t = _rank_product(block, tiler, "raked_product")
    return zip_layouts(t, b, "raked_product")


@memoize
def _tile_to_shape(block, trg_shape, order):
    rb = len(block)
    rt = len(trg_shape) if type(trg_shape) is tuple else 1
    if rb > rt:
        raise RankError(f"tile_to_shape: the block {block} has more modes than the target shape {fmt(trg_shape)}")
    padded = append(block, up_to_rank=rt)
    block_shape = product_each_unchecked(padded.shape)
    target_shape = product_each_unchecked(trg_shape)
    if is_static_unchecked(target_shape) and not evenly_divides_unchecked(target_shape, block_shape):
        raise DivisibilityError(
            f"tile_to_shape: the block shape {fmt(block_shape)} does not divide the target shape {fmt(target_shape)}"
        )
    product_shape = ceil_div_unchecked(target_shape, block_shape)
    if order is None:
        tiles = Layout(product_shape)
    else:
        tiles = make_ordered_layout(product_shape, order)
    return blocked_product.__wrapped__(padded, tiles)


def tile_to_shape(atom: Layout | ComposedLayout, trg_shape: Shape,
                  order: IntTuple | None = None) -> Layout | ComposedLayout:
    """Repeat ``atom`` (a layout) until it has shape ``trg_shape``; ``order`` orders the repeats.

    @pre rank(atom) <= rank(trg_shape) and the atom's mode sizes divide the target's
    @post is_compatible(trg_shape, shape(result))
    """
    if type(atom) is not Layout and hasattr(atom, "__cute_map_outer__"):
        return _on_outer(atom, tile_to_shape, trg_shape, order)
    _need_layout(atom, "tile_to_shape", "atom")
    trg_shape = Layout(trg_shape).shape  # validated: extents >= 0
    if order is not None:
        order = as_int_tuple(order, "tile_to_shape order")
    return _tile_to_shape(atom, trg_shape, order)


def make_layout_tv(thr_layout: Layout, val_layout: Layout) -> tuple[tuple[Int, ...], Layout]:
    """``(tiler_mn, layout_tv)``: each thread of ``thr_layout`` owns a ``val_layout`` block of the tile.

    ``layout_mn = raked_product(thr_layout, val_layout)`` lays the blocks out over the
    ``tiler_mn = product_each(shape(layout_mn))`` tile; ``layout_tv`` maps
    ``(thread, value)`` to the tile offset: ``right_inverse(layout_mn)`` reshaped to
    ``(size(thr_layout), size(val_layout))``.  E.g. thr ``(2,3):(3,1)``, val ``(2,2):(2,1)``
    give ``(4,6)`` and ``((3,2),(2,2)):((8,2),(4,1))``.
    Rejects thread and value layouts whose raked product is not a bijection onto the tile
    (CuTe would return a TV layout that names offsets no (thread, value) owns).

    @post layout_mn(layout_tv(i)) == i for 0 <= i < size(thr_layout) * size(val_layout): every offset of
          the tile is owned by exactly one (thread, value)
    """
    _need_layout(thr_layout, "make_layout_tv", "thr_layout")
    _need_layout(val_layout, "make_layout_tv", "val_layout")
    layout_mn = raked_product(thr_layout, val_layout)
    thr_size, val_size = product_unchecked(thr_layout.shape), product_unchecked(val_layout.shape)
    inverse = right_inverse(layout_mn)
    covered, needed = product_unchecked(inverse.shape), thr_size * val_size
    if type(covered) is not int or type(needed) is not int:
        raise StaticValueRequired(
            f"make_layout_tv: whether raked_product({thr_layout}, {val_layout}) = {layout_mn} is a bijection onto "
            f"its tile (its right inverse covers {covered} of {needed} offsets) is not known for run-time values; "
            f"make the thread and value layouts static")
    if covered < needed:
        raise CuteValueError(
            f"make_layout_tv: raked_product({thr_layout}, {val_layout}) = {layout_mn} is not a bijection onto "
            f"its {needed} tile offsets (its right inverse covers {covered}), so some (thread, value) would own "
            f"no offset of the tile"
        )
    layout_tv = composition_unchecked(inverse, Layout((thr_size, val_size)))
    return product_each_unchecked(layout_mn.shape), layout_tv


def make_fragment_like_layout(layout: Layout) -> Layout:
    """A compact layout with ``layout``'s shape for a register fragment (CuTe's ``make_fragment_like``).

    Mode 0 (the vector mode of copy and MMA atoms) is column-major, keeping its
    stride-0 modes; the other modes are compact in the order of ``layout``'s strides.
    """
    _need_layout(layout, "make_fragment_like", "layout")
    if len(layout) > 1 and is_static_unchecked(layout.shape) and type(layout.shape) is tuple:
        s0, d0 = layout.shape[0], layout.stride[0]
        first = Layout(s0, compact_col_major_unchecked(filter_zeros_tuple_unchecked(d0, s0)))
        rest = make_ordered_layout(layout.shape[1:], _stride_order(layout.stride[1:]))
        return tiled_product.__wrapped__(first, rest)
    return Layout(layout.shape)


def _stride_order(stride):
    """The order of the modes by ``stride``, as CuTe's ``compact_order``: a run-time stride counts as larger than
    every static one, and run-time strides rank left to right (their flat positions)."""
    flat = flatten_unchecked(stride) if type(stride) is tuple else (stride,)
    for d in flat:
        if type(d) is not int and not is_int(d):
            raise CuteTypeError(f"make_fragment_like needs integer strides to order the modes, got {fmt(d)}")
    top = max([0] + [d for d in flat if type(d) is int])
    order = tuple(d if type(d) is int else top + 1 + i for i, d in enumerate(flat))
    return unflatten(order, stride) if type(stride) is tuple else order[0]
