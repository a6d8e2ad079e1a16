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
from ..errors import CuteTypeError, CuteValueError, DivisibilityError, StaticValueRequired
from .int_tuple import flatten_unchecked
from .leaves import divisor_of, is_int
from .normalise import as_index, is_static_unchecked
from .notation import fmt, short_repr
from .layout import Layout, make_layout_unchecked
from .composed import SmemPtrFlag
from .swizzle import Swizzle, downcast_swizzle, upcast_swizzle
from .typing import Int

if TYPE_CHECKING:
    from .composed import ComposedLayout

__all__ = ["upcast", "downcast", "recast_layout", "upcast_exactness", "recast_exactness", "assume_recastable"]


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
        # a run-time stride: a multiple of n, as CuTe C++ takes it; the promise goes with the value
        # (``assume_divisor_``): a value known on the host is checked now, a compile's run-time extent or stride
        # where each call binds it (in every mode, as a static stride is checked in every mode)
        if hasattr(d, "assume_divisor_"):
            d = d.assume_divisor_(n)
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

    @post {result(j)} == {layout(i) // n}: the result reaches exactly the wide elements holding the offsets of
          ``layout`` (where CuTe's per-mode division would not, for overlapping modes or a reversed run that does not
          end on a wide element: ``upcast((2,2):(1,1), 2)``, ``upcast((4,8):(-1,4), 2)``, a ``CuteValueError``)
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
        _need_exact_cover(layout, n)
        return make_layout_unchecked(s, d)
    if hasattr(layout, "__cute_map_outer__") and hasattr(layout, "outer"):
        if _flagged(layout):
            flag = layout.offset
            return _flag_composed(layout, SmemPtrFlag(flag.bits * n, _upcast_offset(flag.offset, n)), upcast(layout.outer, n))
        return _recast_composed(layout, lambda x: upcast(x, n), _upcast_offset(layout.offset, n))
    if is_int(layout):
        return _upcast_offset(layout, n)
    raise CuteTypeError(f"upcast expects a layout, a swizzle or a composed layout, got {short_repr(layout)}")


_ENUMERATE = 1 << 14   # a layout (or its part below n) of at most this many elements is judged by its offsets


def _image(modes):
    out = {0}
    for s, d in modes:
        out = {o + k * d for o in out for k in range(s)}
    return out


def _upcast_modes(modes, n):
    return [(-(-s // -(-n // abs(d))), (1 if d > 0 else -1) * (-(-abs(d) // n))) for s, d in modes]


def _need_exact_cover(layout, n):
    """``CuteValueError`` unless CuTe's per-mode ``upcast<n>`` of ``layout`` reaches exactly the wide elements
    ``o // n`` of the offsets ``o`` of ``layout``; ``StaticValueRequired`` where run-time leaves leave it open.

    The modes of stride at least ``n`` (multiples of ``n``: the divisibility rule) move whole wide elements, so
    the cover is exact when the modes of smaller stride (the part inside one wide element) are: one such mode
    of positive stride always is; one of negative stride ``-d`` and extent ``s`` is when ``n / d`` divides
    ``s - 1``; several are judged by their offsets."""
    fs, fd = flatten_unchecked(layout.shape), flatten_unchecked(layout.stride)
    if type(fs) is not tuple:
        fs, fd = (fs,), (fd,)
    modes = [(s, d) for s, d in zip(fs, fd) if not (type(d) is int and d == 0) and not (type(s) is int and s == 1)]
    if any(type(s) is int and s == 0 for s, _ in modes):
        return  # empty: nothing to cover, and the result is empty too
    # a run-time stride is taken to be a multiple of n (see _upcast_leaf): its mode moves whole wide elements
    modes = [(s, d) for s, d in modes if type(d) is int]
    static = [(s, d) for s, d in modes if type(s) is int and type(d) is int]
    if len(static) == len(modes) and math.prod(s for s, _ in modes) <= _ENUMERATE:
        part, whole = modes, True
    else:
        part, whole = [(s, d) for s, d in modes if type(d) is int and abs(d) < n], False
        if len(part) == 1 and type(part[0][1]) is int and (part[0][1] > 0 or (
                type(part[0][0]) is int and (part[0][0] - 1) % (n // -part[0][1]) == 0)):
            return
        if any(type(s) is not int for s, _ in part):
            raise StaticValueRequired(
                f"upcast by {n} of {layout}: whether its modes of stride below {n}, of run-time extents, reach "
                f"whole wide elements is not known; make their extents static")
        if not part:
            return
        if math.prod(s for s, _ in part) > _ENUMERATE:
            raise CuteValueError(f"upcast by {n} of {layout}: the cover of its modes of stride below {n} is not "
                                 f"judged for more than {_ENUMERATE} elements; coalesce them first")
    want = {o // n for o in _image(part)}
    got = _image(_upcast_modes(part, n))
    if got != want:
        missing, extra = sorted(want - got)[:4], sorted(got - want)[:4]
        raise CuteValueError(
            f"upcast by {n} of {layout} is not exact: CuTe's per-mode division would reach the wide elements "
            f"{sorted(got)[:8]}{'...' if len(got) > 8 else ''} of the {'layout' if whole else 'modes of stride below ' + str(n)}, "
            f"not those of its offsets (o // {n}): missing {missing}, extra {extra}. The law: the result reaches "
            f"exactly the wide elements o // {n} of the offsets o of the layout (overlapping modes or a reversed "
            f"run that does not end on a wide element break it)")


def upcast_exactness(layout: Layout | ComposedLayout, n: int) -> str | None:
    """``None`` when ``upcast(layout, n)`` covers exactly the elements ``layout`` reaches, else the reason.

    The layout's image is a union of whole ``n``-element units exactly when, with the stride-0 and
    size-1 modes set aside and the rest sorted by ``|stride|`` and coalesced, the first mode has
    stride 1 and an extent divisible by ``n`` and every other stride is a multiple of ``n``; the
    per-mode division then maps it onto those units.  Structural: O(rank log rank), whatever the size.
    A composed layout is judged by its outer layout (and its offset); a mode with a run-time extent or
    stride fits when its stride is 0 or a known multiple of ``n`` (else a reason). The judgement is sound, not complete: ``None`` means exact; a layout
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
    fs, fd = flatten_unchecked(layout.shape), flatten_unchecked(layout.stride)
    if type(fs) is not tuple:
        fs, fd = (fs,), (fd,)
    if not (is_static_unchecked(layout.shape) and is_static_unchecked(layout.stride)):
        # a mode with a run-time leaf fits when its stride is 0 or a known multiple of n (it moves whole units);
        # the static modes are judged as they are
        kept = []
        for s_, d_ in zip(fs, fd):
            if type(s_) is int and type(d_) is int:
                kept.append((s_, d_))
            elif type(d_) is int and d_ == 1 and divisor_of(s_) % n == 0:
                kept.append((n, 1))  # a contiguous run of a known multiple of n elements: it stands for one of n
            elif not (type(d_) is int and d_ == 0) and divisor_of(d_) % n:
                return (f"its mode {fmt(s_)}:{fmt(d_)} has a run-time extent or stride not known to move whole "
                        f"{n}-element units")
        fs, fd = tuple(x for x, _ in kept), tuple(y for _, y in kept)
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


def assume_recastable(new_bits: int, old_bits: int, layout: Layout) -> Layout:
    """``layout`` with its run-time leaves promised what a recast from ``old_bits`` to ``new_bits`` elements needs
    to cover whole wide elements (``cute.assume``): a run-time stride a multiple of the ratio, the run-time extent
    of a stride-1 mode a multiple of it. A value known on the host is checked now (``CuteValueError``); a run-time
    extent or stride of a compile carries the promise to where each call binds it. Modes of extent 1 and of stride
    0 are left alone; a static layout is returned as it is.

    @post recast_exactness(new_bits, old_bits, result) is None wherever only run-time leaves stood in the way
    """
    num = new_bits // math.gcd(new_bits, old_bits)
    if num == 1 or type(layout) is not Layout or is_static_unchecked(layout.stride) and \
            is_static_unchecked(layout.shape):
        return layout

    def leaf(s, d):
        if type(d) is int and d == 0 or type(s) is int and s == 1:
            return s, d
        if type(d) is not int and hasattr(d, "assume_divisor_"):
            d = d.assume_divisor_(num)
        elif d == 1 and type(s) is not int and hasattr(s, "assume_divisor_"):
            s = s.assume_divisor_(num)
        return s, d

    shape, stride = _map_leaves(layout.shape, layout.stride, leaf)
    return make_layout_unchecked(shape, stride)


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
