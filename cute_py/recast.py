"""Changing the element width a layout counts in: ``upcast``, ``downcast``, ``recast_layout``.

``upcast(layout, n)`` views a layout of elements as a layout of ``n``-times wider
elements (a stride-1 mode shrinks by ``n``, other strides are divided by ``n``);
``downcast(layout, n)`` is the reverse; ``recast_layout(new_bits, old_bits, layout)``
combines them for any ratio of widths, as CuTe's ``recast_layout<Old, New>``.
Swizzles are recast by moving their base; composed layouts recast each part.

Where CuTe rounds silently, cute_py rejects: a mode of contiguous elements that
does not fill whole wider elements, or a stride that is not a multiple of the
new width, cannot be recast exactly and raises :class:`DivisibilityError`.
"""

import math

from ._memo import memoize
from .errors import CuteTypeError, CuteValueError, DivisibilityError
from .int_tuple import _flatten, _is_static, as_index, short_repr, fmt, is_int
from .layout import Layout, _mk
from .swizzle import Swizzle, downcast_swizzle, upcast_swizzle

__all__ = ["upcast", "downcast", "recast_layout"]


def _need_positive(n, op):
    n = as_index(n, f"{op}: the factor")
    if n < 1:
        raise CuteValueError(f"{op} needs a positive static int factor, got {fmt(n)}")
    return n


def _need_recastable(x, op):
    if not (type(x) in (Layout, Swizzle) or is_int(x) or (hasattr(x, "__cute_map_outer__") and hasattr(x, "outer"))):
        raise CuteTypeError(f"{op} expects a layout, a swizzle, a composed layout or an offset, got {short_repr(x)}")


def _upcast_leaf(s, d, n, whole):
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
def upcast(layout, n):
    """View ``layout`` in units ``n`` times wider (elements -> vectors of ``n`` elements).

    Rejects layouts whose elements do not fill whole wider elements (see the module).

    @post {n*result(j) + k : j, 0 <= k < n} == {layout(i)}: the wide elements cover exactly the narrow ones
    """
    n = _need_positive(n, "upcast")
    _need_recastable(layout, "upcast")
    if n == 1:
        return layout
    if type(layout) is Swizzle:
        return upcast_swizzle(layout, n)
    if type(layout) is Layout:
        s, d = _map_leaves(layout.shape, layout.stride, lambda s, d: _upcast_leaf(s, d, n, layout))
        result = _mk(s, d)
        _check_exact(layout, result, n)
        return result
    if hasattr(layout, "__cute_map_outer__") and hasattr(layout, "outer"):
        return _recast_composed(layout, lambda x: upcast(x, n), _upcast_offset(layout.offset, n))
    if is_int(layout):
        return _upcast_offset(layout, n)
    raise CuteTypeError(f"upcast expects a layout, a swizzle or a composed layout, got {short_repr(layout)}")


def _check_exact(layout, result, n):
    """Reject an upcast whose wide elements would not cover exactly the layout's narrow elements.

    The layout's image is a union of whole ``n``-element units exactly when, with the
    stride-0 and size-1 modes set aside and the rest sorted by ``|stride|`` and coalesced,
    the first mode has stride 1 and an extent divisible by ``n`` and every other stride is a
    multiple of ``n``; the per-mode division then maps it onto those units.  (Structural:
    O(rank log rank), whatever the size.)
    """
    if not (_is_static(layout.shape) and _is_static(layout.stride)):
        return
    fs, fd = _flatten(layout.shape), _flatten(layout.stride)
    if type(fs) is not tuple:
        fs, fd = (fs,), (fd,)
    if any(s == 0 for s in fs):
        return  # an empty layout: nothing to cover
    modes = sorted(((abs(d), d, s) for s, d in zip(fs, fd) if s != 1 and d != 0), key=lambda m: m[0])
    merged = []
    for _, d, s in modes:
        if merged and merged[-1][1] > 0 and d > 0 and merged[-1][0] * merged[-1][1] == d:
            merged[-1] = (merged[-1][0] * s, merged[-1][1])
        else:
            merged.append((s, d))
    exact = (
        bool(merged) and merged[0][1] == 1 and merged[0][0] % n == 0
        and all(abs(d) % n == 0 for _, d in merged[1:])
    )
    if not exact:
        raise DivisibilityError(
            f"upcast by {n} is not exact: the elements {layout} reaches do not fill whole {n}-element units "
            f"(it needs, its strides sorted, a stride-1 run whose extent is a multiple of {n} and other strides "
            f"that are multiples of {n}; the result {result} would claim more)"
        )


def _upcast_offset(off, n):
    if type(off) is int and off % n != 0:
        raise DivisibilityError(f"upcast by {n}: the offset {off} is not a multiple of {n}")
    return off // n


@memoize
def downcast(layout, n):
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
        return _mk(s, d)
    if hasattr(layout, "__cute_map_outer__") and hasattr(layout, "outer"):
        return _recast_composed(layout, lambda x: downcast(x, n), layout.offset * n)
    if is_int(layout):
        return layout * n
    raise CuteTypeError(f"downcast expects a layout, a swizzle or a composed layout, got {short_repr(layout)}")


def _leaves(t):
    return _flatten(t) if type(t) is tuple else (t,)


def _recast_composed(layout, fn, offset):
    from .composed import ComposedLayout

    # kept composed even when the swizzle becomes the identity, as CuTe keeps it
    return ComposedLayout(fn(layout.inner), offset, fn(layout.outer))


def recast_layout(new_bits, old_bits, layout):
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


def _upcast_unchecked(layout, n):
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
    return _mk(shape, stride)
