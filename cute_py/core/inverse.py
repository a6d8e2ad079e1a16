"""Inverses of layouts and what CuTe derives from them: ``right_inverse``, ``left_inverse``, the largest common
layout and vector of two layouts, ``nullspace`` and ``max_alignment``.

Each function follows the current CuTe C++ (``layout.hpp``) case by case, including which inputs it rejects;
where the C++ preconditions are weaker than the documented law, the function raises instead of returning a
result that breaks it (each docstring lists those cases). Results are memoised (layouts are immutable).
"""

from __future__ import annotations

from typing import Any

from ..errors import CuteTypeError, CuteValueError, DivisibilityError, NotInjectiveError, StaticValueRequired
from .algebra import composition_unchecked, need_layout
from .int_tuple import exchange_sort, is_int_value, unwrap_single
from .coords import compact_col_major_unchecked
from .int_tuple import flatten_unchecked
from .leaves import divisor_of, DynamicInt, is_int
from .normalise import need_nonzero_stride
from .notation import short_repr
from .products import product_unchecked
from .coalescing import coalesce_flat, coalesce_flat_lists, coalesce_unchecked
from .layout import Layout, make_layout_unchecked, UPPER_LAYER_OPERATIONS
from .memo import memoize

__all__ = ["right_inverse", "left_inverse", "max_common_layout", "max_common_vector", "nullspace", "max_alignment"]


# -- inverses --------------------------------------------------------------------------------


def _need_int_strides(strides, layout, op):
    for x in strides:
        if not is_int(x):
            raise CuteTypeError(f"{op} needs integer strides, but {layout} has the stride {x}")


def _inverse_other(layout, inverse, op):
    if type(layout) is not Layout and hasattr(layout, "__cute_map_outer__") and hasattr(layout, "outer"):
        inner, off = layout.inner, layout.offset
        if hasattr(inner, "yyy_msk") and type(off) is int and off == 0:
            # inv(S o L) == inv(L) o S for a swizzle (its own inverse)
            return composition_unchecked(inverse(layout.outer), inner)
        raise CuteValueError(
            f"{op} of a composed layout is supported for a swizzle with offset 0 (its own inverse), got {layout}"
        )
    hint = "; invert its .layout" if hasattr(layout, "layout") and hasattr(layout, "engine") else ""
    raise CuteTypeError(f"{op}: layout must be a Layout (or a ComposedLayout), got {type(layout).__name__} "
                        f"{short_repr(layout)}{hint}")


def _flat_modes(layout):
    fs, fd = flatten_unchecked(layout.shape), flatten_unchecked(layout.stride)
    if type(fs) is not tuple:
        fs, fd = (fs,), (fd,)
    if not fs:
        return [1], [0], [1, 1]
    s, d = coalesce_flat_lists(fs, fd, fs[-1], fd[-1])
    pre = [1]
    for x in s:
        pre.append(x * pre[-1])
    return s, d, pre


@memoize
def right_inverse(layout: Any) -> Any:
    """A layout ``R`` with ``layout(R(i)) == i`` for all ``i < size(R)``, as large as CuTe finds it.

    CuTe's algorithm: coalesce, sort the modes with static strides by stride, and follow the strides from 1
    (each mode whose stride is the extent reached so far extends the run).

    @post layout(result(i)) == i for 0 <= i < size(result)
    """
    if type(layout) is not Layout:
        return _inverse_other(layout, _right_inverse, "right_inverse")
    shape, stride = layout.shape, layout.stride
    if type(shape) is tuple:
        fs, fd = flatten_unchecked(shape), flatten_unchecked(stride)
        if not fs:
            return make_layout_unchecked(1, 0)
        s, d = coalesce_flat_lists(fs, fd, fs[-1], fd[-1])
    else:
        s, d = [shape], [stride]
    keys, pre, p = [], [], 1
    for i, x in enumerate(s):
        y = d[i]
        if type(y) is int:
            keys.append(i)
        elif not is_int(y):
            raise CuteTypeError(f"right_inverse needs integer strides, but {layout} has the stride {y}")
        if type(x) is int and x == 0:
            # the empty layout has no value to invert; CuTe's result would claim some
            raise CuteValueError(f"right_inverse of the empty layout {layout} (a mode of extent 0)")
        pre.append(p)
        p = p * x
    strides = [d[i] for i in keys]
    if len(set(strides)) == len(strides):
        order = sorted(keys, key=d.__getitem__)  # distinct strides: any sort gives CuTe's order
    else:
        order = [keys[j] for j in exchange_sort(strides)]
    rs, rd, curr = [], [], 1
    runtime = [i for i in range(len(s)) if i not in keys]   # the modes with run-time strides
    used = set()
    for i in order:
        _decided(layout, s, d, curr, runtime, used)
        x = d[i]
        if type(curr) is not int:
            break
        if x == curr:
            rs.append(s[i])
            rd.append(pre[i])
            used.add(i)
            curr = s[i] * x
        elif x > curr:
            break  # sorted: no later stride is the extent reached
    else:
        _decided(layout, s, d, curr, runtime, used)
    if not rs:
        return make_layout_unchecked(1, 0)
    return coalesce_flat(rs, rd, rs[-1], rd[-1])


_right_inverse = right_inverse.__wrapped__


def _decided(layout, s, d, curr, runtime, used):
    """``StaticValueRequired`` unless the next step of the run is known for every value of the run-time leaves:
    which mode's stride is ``curr``, the extent reached (a run-time stride could be it; a run-time extent reached
    could be a later static stride)."""
    for j in runtime:
        y = d[j]
        if type(curr) is int and curr % max(1, divisor_of(y)) != 0:
            continue   # its known divisor does not divide the extent reached: it is not that stride
        raise StaticValueRequired(
            f"right_inverse: whether the run-time stride {y} of {layout} is {curr}, the extent the inverse has "
            f"reached, decides the result and is not known while compiling; make it static")
    if type(curr) is not int:
        for j, x in enumerate(d):
            if j not in used and type(x) is int and x > 0 and x % max(1, divisor_of(curr)) == 0:
                raise StaticValueRequired(
                    f"right_inverse: whether the run-time extent {curr} the inverse has reached in {layout} is the "
                    f"stride {x} of another mode decides the result and is not known while compiling")


@memoize
def left_inverse(layout: Any) -> Any:
    """A layout ``L`` with ``layout(L(layout(i))) == layout(i)`` (``L(layout(i)) == i`` if injective).

    Rejects layouts whose strides break CuTe's left-inverse divisibility condition
    and layouts with run-time strides, as CuTe does, and, where CuTe's result would not
    be a left inverse, layouts with negative strides (a negative offset is no coordinate of
    the inverse) and layouts whose modes, sorted by
    stride, overlap (a mode reaching past the stride of the next one: not injective
    once the stride-0 modes are set aside).

    @post layout(result(layout(i))) == layout(i) for 0 <= i < size(layout)
    """
    if type(layout) is not Layout:
        return _inverse_other(layout, left_inverse.__wrapped__, "left_inverse")
    s, d, pre = _flat_modes(layout)
    _need_int_strides(d, layout, "left_inverse")
    for x in d:
        if type(x) is not int:
            raise StaticValueRequired(f"left_inverse needs static strides, but {layout} has a run-time stride")
    for i, x in enumerate(d):
        if x < 0:
            # the inverse's domain is the offsets 0, 1, ...: a negative offset is no index of it
            raise CuteValueError(
                f"left_inverse needs non-negative strides (the offsets of the layout are the coordinates of its "
                f"inverse, which start at 0), but {layout} has the stride {x} on a mode of extent {s[i]}"
            )
    order = exchange_sort(d)
    rs, rd, size, reach = [], [0], 1, 0
    for i in order:
        x = d[i]
        if x == 0:
            continue
        if x % size != 0:
            raise DivisibilityError(
                f"left_inverse divisibility condition: stride {x} must be divisible by {size}, "
                f"the size of the modes with smaller strides, in {layout}"
            )
        if x < reach:
            raise NotInjectiveError(
                f"left_inverse needs the modes of {layout}, sorted by stride, not to overlap: the stride {x} "
                f"is below {reach}, the extent of the modes with smaller strides"
            )
        rs.append(x // size)
        rd.append(pre[i])
        size = size * (x // size)
        reach = x * s[i]
    rs.append(s[order[-1]])
    return coalesce_unchecked(make_layout_unchecked(tuple(rs), tuple(rd)))


# -- common vectors and nullspace --------------------------------------------------------------


def _common(a, b):
    need_layout(a, "max_common_layout", "a")
    need_layout(b, "max_common_layout", "b")
    inv_b = _right_inverse(b)
    try:
        common = coalesce_unchecked(composition_unchecked(a, inv_b))
    except DivisibilityError:
        # a o inv_b is no layout as a whole; its first mode is a o (the first mode of inv_b)
        try:
            common = coalesce_unchecked(composition_unchecked(a, coalesce_unchecked(inv_b)[0]))
        except DivisibilityError:
            return inv_b, None  # not even that: one element in common
    first = common[0]
    if type(first.shape) is int and is_int_value(first.stride, 1):
        return inv_b, first
    return inv_b, None


def _swizzle_base(x):
    # the size of the unswizzled run of a swizzled composed layout, or None
    inner = getattr(x, "inner", None)
    return (1 << inner.base) if hasattr(inner, "yyy_msk") and hasattr(x, "__cute_map_outer__") else None


@memoize
def max_common_layout(a: Any, b: Any) -> Layout:
    """The layout of the largest contiguous run of indices on which ``a`` and ``b`` agree.

    With a swizzled composed layout, the run stops at the swizzle's unswizzled base.
    @post a(result(i)) == i and b(result(i)) == i for 0 <= i < size(result)
    """
    base_a, base_b = _swizzle_base(a), _swizzle_base(b)
    if base_b is not None and base_a is None:
        a, b, base_a, base_b = b, a, base_b, base_a
    if base_a is not None:
        common = max_common_layout(a.outer, b.outer if base_b is not None else b)
        n = product_unchecked(common.shape)
        return composition_unchecked(common, base_a) if type(n) is int and base_a < n else common
    inv_b, first = _common(a, b)
    if first is None:
        return make_layout_unchecked(1, 0)
    return composition_unchecked(inv_b, first)


@memoize
def max_common_vector(a: Any, b: Any) -> int:
    """The number N of contiguous elements on which ``a`` and ``b`` agree (``>= 1``).

    With swizzled composed layouts, N stops at the swizzles' unswizzled base(s).
    @post a(b.get_1d_coord(n)) == n for 0 <= n < N (non-negative strides)
    """
    base_a, base_b = _swizzle_base(a), _swizzle_base(b)
    if base_a is not None or base_b is not None:
        vec = max_common_vector(a.outer if base_a else a, b.outer if base_b else b)
        if base_a is not None and base_b is not None and a.inner == b.inner:
            return vec
        return min(x for x in (vec, base_a, base_b) if x is not None)
    _, first = _common(a, b)
    return 1 if first is None else first.shape


@memoize
def nullspace(layout: Any) -> Layout:
    """The layout of the coordinates (as 1-D indices) that ``layout`` maps to 0 through stride-0 modes.

    @post layout(result(i)) == 0 for 0 <= i < size(result)
    @post size(result) == size(layout) // size(filter(layout))
    """
    if type(layout) is not Layout and hasattr(layout, "__cute_map_outer__") and hasattr(layout, "outer"):
        return make_layout_unchecked(1, 0)  # not attempted for composed layouts, as in CuTe
    need_layout(layout, "nullspace", "layout")
    fd = flatten_unchecked(layout.stride)
    fs = flatten_unchecked(layout.shape)
    if type(fd) is not tuple:
        fd, fs = (fd,), (fs,)
    for x in fd:
        if isinstance(x, DynamicInt):
            need_nonzero_stride(x, layout, "nullspace")
    idx = [i for i, x in enumerate(fd) if is_int_value(x, 0)]
    if not idx:
        return make_layout_unchecked(1, 0)
    rstride = compact_col_major_unchecked(fs)
    return make_layout_unchecked(unwrap_single(tuple(fs[i] for i in idx)), unwrap_single(tuple(rstride[i] for i in idx)))


# -- alignment ---------------------------------------------------------------------------------


@memoize
def max_alignment(layout: Any) -> int:
    """The largest N such that the offsets of ``layout`` come in runs of N consecutive offsets, each starting at
    a multiple of N: CuTe's ``max_alignment``, ``gcd(size<0>(P), stride<1>(P))`` with
    ``P = logical_divide(F, right_inverse(F))`` and ``F`` the coalesced layout with its run-time extents read
    as 1 and its run-time strides as 0 (so N holds for every value they take).

    ``F o right_inverse(F)`` is the identity on ``[0, n)``: the run of ``n`` offsets from 0; the other modes of
    ``F`` (those ``right_inverse`` leaves out) repeat it at their strides, so N is the gcd of ``n`` and those
    strides (a stride 0 leaves it as it is); an empty layout gives 1.  A swizzled composed layout
    ``S<b,m,s> o off o L`` gives ``gcd(2**m, off, max_alignment(L))``; other composed layouts give 1, as in CuTe.

    @post every offset o of layout has o - o % N ... o - o % N + N - 1 among the offsets of layout
    @post N divides size(right_inverse(layout)) (for static layouts)
    """
    if type(layout) is not Layout:
        return _composed_alignment(layout)
    s, d, _ = _flat_modes(layout)
    if any(type(x) is int and x == 0 for x in s):
        return 1  # an empty layout: no offsets, and 1 holds for any
    shapes, strides, others = [], [], []
    for x, y in zip(s, d):
        if not is_int(y):
            raise CuteTypeError(f"max_alignment needs integer strides, but {layout} has the stride {y}")
        if type(x) is not int or type(y) is not int:
            # a run-time extent or stride: the mode repeats the run at a stride known only by its divisor
            if not (type(y) is int and y == 0) and not (type(x) is int and x == 1):
                others.append(divisor_of(y))
            continue
        shapes.append(x)
        strides.append(y)
    # the modes right_inverse chains (strides 1, s0, s0*s1, ...) make the run [0, n); the others repeat it
    n = 1
    for i in exchange_sort(strides):
        if strides[i] == n:
            n = shapes[i] * strides[i]
        elif shapes[i] != 1:
            others.append(strides[i])
    for x in others:
        n = _gcd(n, abs(x))
    return n


def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def _composed_alignment(layout):
    inner = getattr(layout, "inner", None)
    if not hasattr(layout, "__cute_map_outer__") or inner is None:
        need_layout(layout, "max_alignment", "layout")
    if not hasattr(inner, "yyy_msk"):
        return 1  # a general composed layout: not attempted, as in CuTe
    offset = layout.offset
    offset = getattr(offset, "offset", offset)  # a smem_ptr flag: the offset it carries (CuTe's flag is a 0)
    if type(offset) is not int:
        return 1  # a run-time offset: only 1 is known
    n = _gcd(1 << inner.base, abs(offset))
    return _gcd(n, max_alignment(layout.outer))


UPPER_LAYER_OPERATIONS["max_alignment"] = max_alignment
