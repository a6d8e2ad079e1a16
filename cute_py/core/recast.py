"""Changing the element width a layout counts in: ``upcast``, ``downcast``, ``recast_layout``.

``upcast(layout, n)`` views a layout of elements as a layout of ``n``-times wider
elements (a stride-1 mode shrinks by ``n``, other strides are divided by ``n``);
``downcast(layout, n)`` is the reverse; ``recast_layout(new_bits, old_bits, layout)``
combines them for any ratio of widths, as CuTe's ``recast_layout<Old, New>``.
Swizzles are recast by moving their base; composed layouts recast each part.

As in CuTe, ``upcast`` rounds: a stride-1 mode of ``s`` elements becomes ``ceil(s/n)``
wide elements, so ``recast_layout(64, 16, 2:1) == 1:1`` -- the wide elements cover at least
the narrow ones, maybe more.  Reading through such a view is harmless; writing through it
would overwrite the elements the narrow layout does not reach.  :func:`upcast_exactness`
tells the two apart (structurally, by the strides), and a tensor recast that way refuses
stores (see ``recast_tensor``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .memo import memoize
from ..errors import CuteTypeError, CuteValueError, DivisibilityError
from .int_tuple import flatten_unchecked, is_static_unchecked, as_index, short_repr, fmt, is_int
from .layout import Layout, make_layout_unchecked
from .composed import SmemPtrFlag
from .swizzle import Swizzle, downcast_swizzle, upcast_swizzle
from .typing import Int

if TYPE_CHECKING:
    from .composed import ComposedLayout

__all__ = ["upcast", "downcast", "recast_layout", "upcast_exactness", "recast_exactness"]


def _need_positive(n, op):
    n = as_index(n, f"{op}: the factor")
    if n < 1:
        raise CuteValueError(f"{op} needs a positive static int factor, got {fmt(n)}")
    return n


def _need_recastable(x, op):
    if not (type(x) in (Layout, Swizzle) or is_int(x) or (hasattr(x, "__cute_map_outer__") and hasattr(x, "outer"))):
        raise CuteTypeError(f"{op} expects a layout, a swizzle, a composed layout or an offset, got {short_repr(x)}")


def _upcast_leaf(s, d, n, whole):
    # CuTe's upcast<n>(shape, stride) of one mode (layout.hpp)
    if type(d) is int:
        if d == 0:
            # static stride 0: unchanged
            return s, d
        ad = abs(d)
        if ad % n != 0 and n % ad != 0:
            raise DivisibilityError(
                f"upcast by {n}: stride {d} must divide or be divisible by {n} (in {whole})"
            )
        q = -(-n // ad)  # ceil_div(n, |d|)
        sign = 1 if d > 0 else -1
        return -(-s // q) if type(s) is int else (s + q - 1) // q, sign * (-(-ad // n))
    if is_int(d):
        # a run-time stride: assumed to be a multiple of n
        return s, d // n
    raise CuteTypeError(f"upcast of a layout with the stride {d} is not supported (in {whole})")


def _map_leaves(shape, stride, fn):
    if type(shape) is tuple:
        pairs = [_map_leaves(s, d, fn) for s, d in zip(shape, stride)]
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    return fn(shape, stride)


def _has_unit_stride(stride):
    if type(stride) is tuple:
        return any(_has_unit_stride(d) for d in stride)
    return type(stride) is int and stride == 1


@memoize
def upcast(layout: Layout | Swizzle | ComposedLayout | Int, n: int) -> Layout | Swizzle | ComposedLayout | Int:
    """View ``layout`` in units ``n`` times wider (elements -> vectors of ``n`` elements), as CuTe's ``upcast<n>``.

    A static stride 0 stays; a stride ``d`` (``d % n == 0`` or ``n % d == 0``, else a
    :class:`DivisibilityError`) gives the extent ``ceil_div(s, ceil_div(n, |d|))`` and the stride
    ``sign(d) * ceil_div(|d|, n)``: a run of elements that does not fill whole wide units is rounded
    up (``upcast(2:1, 4) == 1:1``), and :func:`upcast_exactness` says whether that happened.

    @post {n*result(j) + k : j, 0 <= k < n} >= {layout(i)}: the wide elements cover the narrow ones
    @post upcast_exactness(layout, n) is None  implies  the cover is exact (no other element)
    """
    n = _need_positive(n, "upcast")
    _need_recastable(layout, "upcast")
    if n == 1:
        return layout
    if type(layout) is Swizzle:
        return upcast_swizzle(layout, n)
    if type(layout) is Layout:
        s, d = _map_leaves(layout.shape, layout.stride, lambda s, d: _upcast_leaf(s, d, n, layout))
        return make_layout_unchecked(s, d)
    if hasattr(layout, "__cute_map_outer__") and hasattr(layout, "outer"):
        if _flagged(layout):
            flag = layout.offset
            return _flag_composed(layout, SmemPtrFlag(flag.bits * n, _upcast_offset(flag.offset, n)), upcast(layout.outer, n))
        return _recast_composed(layout, lambda x: upcast(x, n), _upcast_offset(layout.offset, n))
    if is_int(layout):
        return _upcast_offset(layout, n)
    raise CuteTypeError(f"upcast expects a layout, a swizzle or a composed layout, got {short_repr(layout)}")


def upcast_exactness(layout: Layout | ComposedLayout, n: int) -> str | None:
    """``None`` when ``upcast(layout, n)`` covers exactly the elements ``layout`` reaches, else the reason.

    The layout's image is a union of whole ``n``-element units exactly when, with the stride-0 and
    size-1 modes set aside and the rest sorted by ``|stride|`` and coalesced, the first mode has
    stride 1 and an extent divisible by ``n`` and every other stride is a multiple of ``n``; the
    per-mode division then maps it onto those units.  Structural: O(rank log rank), whatever the size.
    A composed layout is judged by its outer layout (and its offset); run-time extents or strides are
    assumed to fit, as CuTe assumes. The judgement is sound, not complete: ``None`` means exact; a layout
    whose modes overlap (``(2,3):(1,1)``) may get a reason although its cover happens to be exact.
    """
    n = _need_positive(n, "upcast_exactness")
    if n == 1:
        return None
    offset = 0
    if type(layout) is not Layout and hasattr(layout, "outer"):
        offset = getattr(layout.offset, "offset", layout.offset)
        layout = layout.outer
    if type(layout) is not Layout:
        raise CuteTypeError(f"upcast_exactness expects a layout, got {short_repr(layout)}")
    if type(offset) is int and offset % n:
        return f"its offset {offset} is not a multiple of {n}"
    if not (is_static_unchecked(layout.shape) and is_static_unchecked(layout.stride)):
        return None
    fs, fd = flatten_unchecked(layout.shape), flatten_unchecked(layout.stride)
    if type(fs) is not tuple:
        fs, fd = (fs,), (fd,)
    if any(s == 0 for s in fs):
        return None  # an empty layout: nothing to cover
    modes = sorted(((abs(d), d, s) for s, d in zip(fs, fd) if s != 1 and d != 0), key=lambda m: m[0])
    merged = []
    for _, d, s in modes:
        if merged and merged[-1][1] > 0 and d > 0 and merged[-1][0] * merged[-1][1] == d:
            merged[-1] = (merged[-1][0] * s, merged[-1][1])
        else:
            merged.append((s, d))
    if not merged:
        return f"it reaches one element, not a whole {n}-element unit"
    if merged[0][1] != 1 or merged[0][0] % n:
        return (f"its contiguous run ({merged[0][0]} elements at stride {merged[0][1]}) is not a whole number of "
                f"{n}-element units")
    bad = [d for _, d in merged[1:] if abs(d) % n]
    if bad:
        return f"its stride {bad[0]} is not a multiple of {n}"
    return None


def _upcast_offset(off, n):
    if type(off) is int and off % n != 0:
        raise DivisibilityError(f"upcast by {n}: the offset {off} is not a multiple of {n}")
    return off // n


@memoize
def downcast(layout: Layout | Swizzle | ComposedLayout | Int, n: int) -> Layout | Swizzle | ComposedLayout | Int:
    """View ``layout`` in units ``n`` times narrower (an element becomes ``n`` elements).

    Needs a stride-1 mode (the adjacent elements to split), as CuTe does, and, where
    CuTe's result would not be that view, exactly one mode of stride 1 or -1 (two would
    overlap once widened, a stride -1 would run the narrow elements backwards).

    @post {result(i)} == {n*layout(j) + k : j, 0 <= k < n} for a layout of static strides
    """
    n = _need_positive(n, "downcast")
    _need_recastable(layout, "downcast")
    if n == 1:
        return layout
    if type(layout) is Swizzle:
        return downcast_swizzle(layout, n)
    if type(layout) is Layout:
        if not _has_unit_stride(layout.stride):
            raise CuteValueError(f"downcast needs a mode of stride 1 (adjacent elements), got {layout}")
        units = [d for d in _leaves(layout.stride) if type(d) is int and d in (1, -1)]
        if len(units) != 1:
            raise CuteValueError(
                f"downcast by {n} needs exactly one mode of stride 1 (or -1) to split, got {layout}: the widened "
                f"modes would overlap"
            )
        if units[0] == -1:
            raise CuteValueError(f"downcast by {n} of the reversed (stride -1) elements of {layout}: each element "
                                 f"would be split backwards")

        def leaf(s, d):
            if type(d) is int and d in (1, -1):
                return s * n, d
            return s, d * n

        s, d = _map_leaves(layout.shape, layout.stride, leaf)
        return make_layout_unchecked(s, d)
    if hasattr(layout, "__cute_map_outer__") and hasattr(layout, "outer"):
        if _flagged(layout):
            flag = layout.offset
            if flag.bits % n:
                raise DivisibilityError(f"downcast by {n} of {layout}: its {flag.bits}-bit elements do not split "
                                        f"into {n} whole elements")
            return _flag_composed(layout, SmemPtrFlag(flag.bits // n, flag.offset * n), downcast(layout.outer, n))
        return _recast_composed(layout, lambda x: downcast(x, n), layout.offset * n)
    if is_int(layout):
        return layout * n
    raise CuteTypeError(f"downcast expects a layout, a swizzle or a composed layout, got {short_repr(layout)}")


def _leaves(t):
    return flatten_unchecked(t) if type(t) is tuple else (t,)


def _flagged(layout):
    return type(getattr(layout, "offset", None)) is SmemPtrFlag


def _flag_composed(layout, flag, outer):
    # a byte-swizzled layout keeps its swizzle (it acts on bytes, whatever the element width), as CuTe does
    from .composed import ComposedLayout

    return ComposedLayout(layout.inner, flag, outer)


def _recast_composed(layout, fn, offset):
    from .composed import ComposedLayout

    # kept composed even when the swizzle becomes the identity, as CuTe keeps it
    return ComposedLayout(fn(layout.inner), offset, fn(layout.outer))


def recast_layout(new_bits: int, old_bits: int,
                  layout: Layout | Swizzle | ComposedLayout | Int) -> Layout | Swizzle | ComposedLayout | Int:
    """``layout`` of ``old_bits``-wide elements seen as ``new_bits``-wide elements.

    ``recast_layout(32, 16, (8,64):(64,1)) == (8,32):(32,1)``; the swizzle of a composed
    layout moves with it: fp16 ``S<3,3,3>`` is ``S<3,2,3>`` in 32-bit units.
    @post recast_layout(old, new, recast_layout(new, old, L)) == L where exact
    """
    new_bits = as_index(new_bits, "recast_layout: new_bits")
    old_bits = as_index(old_bits, "recast_layout: old_bits")
    for name, v in (("new_bits", new_bits), ("old_bits", old_bits)):
        if v <= 0:
            raise CuteValueError(f"recast_layout: {name} must be a positive int, got {v!r}")
    _need_recastable(layout, "recast_layout")
    g = math.gcd(new_bits, old_bits)
    num, den = new_bits // g, old_bits // g
    if num == 1 and den == 1:
        return layout
    if num == 1:
        return downcast(layout, den)
    if den == 1:
        return upcast(layout, num)
    return downcast(upcast(layout, num), den)


def recast_exactness(new_bits: int, old_bits: int, layout: Layout | ComposedLayout) -> str | None:
    """``None`` when ``recast_layout(new_bits, old_bits, layout)`` covers exactly the bits ``layout`` reaches,
    else the reason (only widening can cover more: see :func:`upcast_exactness`)."""
    recast_layout(new_bits, old_bits, layout)  # the same checks of the arguments
    num = new_bits // math.gcd(new_bits, old_bits)
    if num == 1:
        return None
    return upcast_exactness(layout, num)  # recast_layout widens first; the narrowing after it is exact


def upcast_unchecked(layout, n):
    # CuTe's upcast<n> of a plain layout, rounding as the C++ does (used inside the library
    # where the rounding is intended, e.g. retiling fragments)
    def leaf(s, d):
        if type(d) is int:
            if d == 0:
                return s, d
            q = -(-n // abs(d))
            return -(-s // q) if type(s) is int else (s + q - 1) // q, (1 if d > 0 else -1) * (-(-abs(d) // n))
        return s, d // n

    shape, stride = _map_leaves(layout.shape, layout.stride, leaf)
    return make_layout_unchecked(shape, stride)
