"""Composition, complement, inverses, common vectors and nullspaces of layouts.

Each function follows the current CuTe C++ (``layout.hpp``) case by case,
including which inputs it rejects; where the C++ preconditions are weaker than the
documented law, the function raises instead of returning a result that breaks it
(each docstring lists those cases).  Results are memoised (layouts are immutable).
"""

from __future__ import annotations

from typing import Any

from .memo import memoize
from ..errors import CuteTypeError, CuteValueError, DivisibilityError, NotInjectiveError, RankError, StaticValueRequired
from .coords import compact_col_major_unchecked
from .int_tuple import (as_int_tuple, ceil_div_unchecked, divisor_of, flatten_unchecked, fmt, is_int,
                        product_unchecked, signum)
from .layout import (UPPER_LAYER_OPERATIONS, Layout, coalesce_flat, coalesce_flat_lists, coalesce_unchecked,
                     concat_layouts, make_layout_unchecked, coalesce_x, cosize, make_layout)
from .typing import Shape

__all__ = [
    "composition",
    "complement",
    "right_inverse",
    "left_inverse",
    "max_common_layout",
    "max_common_vector",
    "nullspace",
    "coalesce_shape",
    "max_alignment",
]


def _is(x, v):
    return type(x) is int and x == v


def _unwrap(t):
    return t[0] if len(t) == 1 else t


# -- composition ------------------------------------------------------------------------------
#
# CuTe's algorithm, case by case, with its two divisibility conditions.  Where they are weaker than
# the law result(c) == lhs(rhs(c)), cute_py raises instead of returning a wrong layout:
#   * an rhs stride below a bounded lhs mode must divide it, unless the rhs ends inside that mode;
#   * a negative rhs stride may only skip whole bounded lhs modes (it would wrap inside one);
#   * the rhs leaves must not carry into each other: in every bounded lhs mode, the largest digits
#     the leaves reach must add up to less than the mode's extent.
# ``usage`` collects, per bounded lhs mode (its index, or (basis path, index) below a basis stride),
# [extent, sum of the largest digits] for the last rule (``None`` as the sum once a run-time value makes
# it unknowable).


def _composition_impl(ls, ld, rs, rd, usage, path=()):
    if type(rs) is tuple:
        # rhs tuple: compose mode by mode (right-distributivity)
        if type(rd) is not tuple or len(rs) != len(rd):
            raise RankError(f"composition: rhs shape {fmt(rs)} and stride {fmt(rd)} are not congruent")
        return concat_layouts([_composition_impl(ls, ld, s, d, usage, path) for s, d in zip(rs, rd)])
    compose_basis = getattr(rd, "__cute_compose__", None)
    if compose_basis is not None:
        # rhs basis stride: select the lhs mode it names
        return compose_basis(ls, ld, rs, lambda a, b, c, d, modes: _composition_impl(a, b, c, d, usage, path + modes))
    if _is(rd, 0):
        # rhs static stride 0: the result is rhs
        return make_layout_unchecked(rs, rd)
    if type(ls) is not tuple:
        # lhs integral: scale the rhs stride
        return make_layout_unchecked(rs, rd * ld)
    # general case: lhs tuple, rhs integral
    result_shape, result_stride = [], []
    rest_shape, rest_stride = rs, rd
    for m in range(len(ls) - 1):
        curr_shape, curr_stride = ls[m], ld[m]
        static = type(curr_shape) is int and type(rest_stride) is int
        if static:
            if curr_shape <= 0:
                raise CuteValueError(f"composition: the lhs mode of extent {curr_shape} is empty, so the lhs has "
                                     f"no values past index 0 (lhs {fmt(ls)}:{fmt(ld)}, rhs {fmt(rs)}:{fmt(rd)})")
            d = abs(rest_stride)
            if not (d % curr_shape == 0 or d < curr_shape):
                raise DivisibilityError(
                    f"composition stride divisibility condition: the rhs stride {rest_stride} must be "
                    f"divisible by, or less than, the lhs mode shape {curr_shape} "
                    f"(lhs {fmt(ls)}:{fmt(ld)}, rhs {fmt(rs)}:{fmt(rd)})"
                )
        elif not _is(rest_shape, 1) or type(rest_stride) is not int:
            # a run-time extent or stride: whether the stride divides, or stays inside, the lhs mode is a run-time
            # fact (C++ assumes it; a wrong guess would give a layout that is not lhs o rhs), and the walk divides
            # by the stride, which could be 0 or negative at run time. It is proven when the stride is a static
            # divisor of what is known to divide the (positive) extent: then it divides it.
            if not (type(rest_stride) is int and rest_stride > 0 and divisor_of(curr_shape) % rest_stride == 0):
                raise StaticValueRequired(
                    f"composition: whether the rhs stride {fmt(rest_stride)} divides, or is less than, the lhs mode "
                    f"of extent {fmt(curr_shape)} depends on run-time values (lhs {fmt(ls)}:{fmt(ld)}, rhs "
                    f"{fmt(rs)}:{fmt(rd)}); make them static, or assume a divisibility (cute.assume) that proves it")
        abs_stride = abs(rest_stride)
        if not static and type(rest_stride) is int and rest_stride > 0 and divisor_of(curr_shape) % rest_stride == 0:
            next_shape, next_stride = curr_shape // rest_stride, 1   # exact: the stride divides the extent
        else:
            next_shape = ceil_div_unchecked(curr_shape, abs_stride)
            next_stride = ceil_div_unchecked(abs_stride, curr_shape) * signum(rest_stride)
        if _is(next_shape, 1) or _is(rest_shape, 1):
            rest_stride = next_stride
            continue
        if type(next_shape) is int and type(rest_shape) is int:
            new_shape = min(next_shape, rest_shape)
        elif type(rest_shape) is int and divisor_of(next_shape) % rest_shape == 0:
            new_shape = rest_shape   # the mode holds a multiple of the rhs extent: all of it fits
        elif type(next_shape) is int and divisor_of(rest_shape) % next_shape == 0:
            new_shape = next_shape   # the rhs extent is a multiple of what the mode holds
        else:
            # the rhs takes min(next, rest) of this mode and the rest from the next ones: exact only when that
            # minimum divides the rhs extent, which run-time values leave open
            raise StaticValueRequired(
                f"composition: whether the rhs extent {fmt(rest_shape)} splits at the lhs mode of extent "
                f"{fmt(curr_shape)} (it must divide, or be divided by, {fmt(next_shape)}) depends on run-time values "
                f"(lhs {fmt(ls)}:{fmt(ld)}, rhs {fmt(rs)}:{fmt(rd)}); make them static, or assume a divisibility "
                f"(cute.assume) that proves it")
        if type(new_shape) is int and type(rest_shape) is int:
            if new_shape <= 0:
                raise CuteValueError(f"composition: the rhs mode {fmt(rs)}:{fmt(rd)} is empty "
                                     f"(lhs {fmt(ls)}:{fmt(ld)})")
            if rest_shape % new_shape != 0:
                raise DivisibilityError(
                    f"composition shape divisibility condition: the rhs shape {rest_shape} must be "
                    f"divisible by {new_shape} (lhs {fmt(ls)}:{fmt(ld)}, rhs {fmt(rs)}:{fmt(rd)})"
                )
        if static and type(new_shape) is int:
            if rest_stride < 0:
                raise DivisibilityError(
                    f"composition: the negative rhs stride {rest_stride} would wrap around inside the lhs mode "
                    f"of extent {curr_shape} (lhs {fmt(ls)}:{fmt(ld)}, rhs {fmt(rs)}:{fmt(rd)})"
                )
            if curr_shape % rest_stride != 0 and new_shape != rest_shape:
                raise DivisibilityError(
                    f"composition: the rhs stride {rest_stride} does not divide the lhs mode of extent {curr_shape} "
                    f"and the rhs runs past it ({rest_shape} elements), so the result would not be lhs o rhs "
                    f"(lhs {fmt(ls)}:{fmt(ld)}, rhs {fmt(rs)}:{fmt(rd)})"
                )
            if usage is not None:
                key = (path, m) if path else m
                entry = usage.get(key)
                if entry is None:
                    usage[key] = [curr_shape, rest_stride * (new_shape - 1)]
                elif entry[1] is not None:
                    entry[1] += rest_stride * (new_shape - 1)
        elif usage is not None:
            usage[(path, m) if path else m] = [curr_shape, None]
        result_shape.append(new_shape)
        result_stride.append(rest_stride * curr_stride)
        rest_shape = rest_shape // new_shape
        rest_stride = next_stride
    if not result_shape:
        return make_layout_unchecked(rest_shape, rest_stride * ld[-1])
    if _is(rest_shape, 1):
        return make_layout_unchecked(_unwrap(tuple(result_shape)), _unwrap(tuple(result_stride)))
    result_shape.append(rest_shape)
    result_stride.append(rest_stride * ld[-1])
    return make_layout_unchecked(tuple(result_shape), tuple(result_stride))


def _need_evaluable(lhs, flat):
    # a static extent 0 in any flat mode but the last leaves the lhs without a value at any index (coalescing
    # may move such a mode: the original modes are checked when the coalesced lhs has an extent 0 at all)
    if type(lhs.shape) is not tuple:
        return
    for x in (flat.shape if type(flat.shape) is tuple else (flat.shape,)):
        if type(x) is int and x == 0:
            break
    else:
        return
    leaves = flatten_unchecked(lhs.shape)
    for s in leaves[:-1]:
        if type(s) is int and s == 0:
            raise CuteValueError(f"composition: the lhs {lhs} is empty (a mode of extent 0 before its last), "
                                 f"so it has no value at any index")


def _compose_layouts(lhs, rhs):
    """``lhs o rhs`` for two layouts, rejecting rhs whose leaves would carry into each other in lhs."""
    flat = coalesce_x(lhs, _coprofile(rhs))
    if type(lhs.shape) is tuple:
        _need_evaluable(lhs, flat)
    usage = {} if type(rhs.shape) is tuple else None  # one rhs leaf cannot carry into another
    result = _composition_impl(flat.shape, flat.stride, rhs.shape, rhs.stride, usage)
    if usage:
        for key, (extent, total) in usage.items():
            if total is not None and total >= extent:
                m = key if type(key) is int else key[1]
                raise DivisibilityError(
                    f"composition: the rhs modes carry into each other: in the lhs mode {m} of extent {extent} "
                    f"their offsets add up to {total}, so the result would not be lhs o rhs (lhs {lhs}, rhs {rhs})"
                )
    return result


def _need_layout(x, op, what="lhs"):
    if type(x) is not Layout:
        raise CuteTypeError(f"{op}: {what} must be a Layout, got {type(x).__name__} {x!r}")


@memoize
def composition(lhs: Any, rhs: Any) -> Any:
    """The layout ``lhs o rhs``: ``result(c) == lhs(rhs(c))`` for every ``c`` in the domain of ``rhs``.

    ``rhs`` is a layout, an int ``n`` (the layout ``n:1``), ``None`` (``lhs``
    itself), or a tiler: a tuple with one element per mode of ``lhs`` (layouts,
    ints, ``None`` or nested tilers), applied mode by mode; modes of ``lhs``
    beyond the tiler are dropped, as in CuTe.
    Rejects inputs that break CuTe's stride or shape divisibility conditions and, where
    those conditions are weaker than the law, inputs whose result would not be
    ``lhs o rhs``: an rhs stride that neither divides a bounded lhs mode nor ends inside
    it, a negative rhs stride inside a bounded lhs mode, rhs modes whose offsets carry
    into each other in an lhs mode, and an empty lhs (an extent 0 before its last mode).
    ``lhs`` is evaluated beyond its size along its last mode, as in CuTe.

    @post is_compatible(rhs, result) for a layout rhs
    @post result(c) == lhs(rhs(c)) for all c in the domain of rhs
    """
    if type(lhs) is not Layout:
        return _composition_other(lhs, rhs)
    if type(rhs) is Layout:
        return _compose_layouts(lhs, rhs)
    if rhs is None:
        return lhs
    if isinstance(rhs, (tuple, list)):
        rhs = tuple(rhs)
        if len(rhs) > len(lhs):
            raise RankError(f"composition: the tiler {_tiler_str(rhs)} has more modes than the layout {lhs}")
        return concat_layouts([composition_unchecked(lhs[i], r) for i, r in enumerate(rhs)])
    if hasattr(rhs, "__cute_map_outer__") and hasattr(rhs, "outer"):
        # Layout o (inner o 0 o outer) == (Layout o inner) o outer
        offset = rhs.offset
        if not (type(offset) is int and offset == 0):
            raise CuteValueError(f"composition of a layout with a composed layout needs offset 0, got {rhs}")
        return composition_unchecked(composition_unchecked(lhs, rhs.inner), rhs.outer)
    transported = getattr(rhs, "__cute_transport__", None)
    if transported is not None:
        # Layout o Swizzle: the swizzle carried through the layout, then the layout
        return transported(lhs)
    rhs = as_int_tuple(rhs, "composition rhs (a Layout, an int, None or a tuple tiler)")
    if type(rhs) is int and rhs < 0:
        raise CuteValueError(f"composition: the rhs extent must be >= 0, got {rhs} (lhs {lhs})")
    flat = coalesce_x(lhs)
    if type(lhs.shape) is tuple:
        _need_evaluable(lhs, flat)
    return _composition_impl(flat.shape, flat.stride, rhs, 1, None)


def _composition_other(lhs, rhs):
    mapper = getattr(lhs, "__cute_map_outer__", None)
    if mapper is not None:
        # (inner o offset o outer) o rhs == inner o offset o (outer o rhs)
        return mapper(lambda outer: composition_unchecked(outer, rhs))
    before = getattr(lhs, "__cute_compose_layout__", None)
    if before is not None and type(rhs) is Layout:
        # Swizzle o Layout: a composed layout with offset 0
        return before(rhs)
    raise CuteTypeError(f"composition: lhs must be a Layout, got {type(lhs).__name__} {lhs!r}")


def _coprofile(rhs):
    # the profile of rhs's codomain: None (a scalar) for integer strides, zeros for coordinates
    fd = flatten_unchecked(rhs.stride)
    fd = fd if type(fd) is tuple else (fd,)
    if all(type(x) is int for x in fd):
        return None
    total = 0
    for x in fd:
        total = total + x
    hook = getattr(total, "__cute_coprofile__", None)
    return hook() if hook is not None else None


composition_unchecked = composition.__wrapped__


def _tiler_str(t):
    if type(t) is tuple:
        return "<" + ",".join(_tiler_str(e) for e in t) + ">"
    return "_" if t is None else str(t)


# -- complement -----------------------------------------------------------------------------


def coalesce_shape(shape: Shape) -> Shape:
    """Merge the flattened modes of a shape where static-ness allows (CuTe's ``coalesce(shape)``)."""
    flat = flatten_unchecked(shape)
    if type(flat) is not tuple:
        return flat
    if not flat:
        return 1  # the empty shape has one element
    out = [flat[0]]
    for a in flat[1:]:
        if (type(out[-1]) is int) == (type(a) is int):
            out[-1] = out[-1] * a
        else:
            out.append(a)
    return _unwrap(tuple(out))


def _exchange_sort(keys):
    # CuTe's exchange sort of (key, index) pairs: not stable, reproduced exactly
    n = len(keys)
    k = list(keys)
    v = list(range(n))
    for i in range(n):
        for j in range(i + 1, n):
            if k[j] < k[i]:
                k[i], k[j] = k[j], k[i]
                v[i], v[j] = v[j], v[i]
    return v


@memoize
def complement(layout: Any, cotarget: Shape | Layout | None = None) -> Layout:
    """The layout of the offsets in ``[0, cotarget)`` that ``layout`` does not reach, ordered.

    ``cotarget`` is an int or a shape (its size is the target; a shape keeps its
    static/dynamic split); by default it is ``cosize(layout)``.
    Rejects what CuTe rejects (non-injective layouts, run-time strides) and,
    where CuTe's result would not be the complement, layouts with negative strides or
    empty modes, layouts whose strides, sorted, do not each divide by the extent of the
    modes below them, and shape cotargets that the rest of the complement would not cover.

    @post result is ordered: result(i-1) < result(i) for 0 < i < size(result)
    @post result(i) != layout(j) for 0 < i < size(result), all j
    @post layout and result together reach every offset in [0, size(cotarget)) (covering)
    """
    return _complement_impl(layout, cotarget, True)


def _complement_impl(layout, cotarget, covering, with_open=False):
    # with_open: returns (complement, open), ``open`` when its last mode is the rest mode beyond everything
    # the layout reaches, so that the complement evaluated past its size stays disjoint from the layout
    # ``covering=False`` keeps CuTe's result where it is ordered and disjoint but leaves gaps (what a
    # logical_product needs: disjoint copies of the block)
    if type(layout) is not Layout:
        if hasattr(layout, "__cute_map_outer__") and hasattr(layout, "outer"):
            # a composed layout: the complement of its outer layout
            return _complement_impl(layout.outer, cosize(layout.outer) if cotarget is None else cotarget, covering,
                                    with_open)
        _need_layout(layout, "complement", "layout")
    # filter (drop stride-0 and size-1 modes) and coalesce, checking the modes on the way
    fs, fd = flatten_unchecked(layout.shape), flatten_unchecked(layout.stride)
    if type(fs) is not tuple:
        fs, fd = (fs,), (fd,)
    ks, kd = [], []
    for s, d in zip(fs, fd):
        if type(s) is int:
            if s == 0:
                raise CuteValueError(f"complement of the empty layout {layout} (a mode of extent 0)")
            if s == 1:
                continue
        if type(d) is int:
            if d == 0:
                continue
            if d < 0:
                raise CuteValueError(f"complement needs non-negative strides, but {layout} has the stride {d}")
        elif not is_int(d):
            raise CuteTypeError(f"complement needs integer strides, but {layout} has the stride {d}")
        ks.append(s)
        kd.append(d)
    shape, stride = coalesce_flat_lists(ks, kd, ks[-1], kd[-1]) if ks else ([1], [0])
    if cotarget is None:
        cotarget = sum(_mul(s - 1, d) for s, d in zip(shape, stride)) + 1
    elif type(cotarget) is int:
        if cotarget < 0:
            raise CuteValueError(f"complement: the cotarget {cotarget} is negative")
    else:
        cotarget = cotarget.shape if type(cotarget) is Layout else as_int_tuple(cotarget, "complement cotarget")
        for c in (flatten_unchecked(cotarget) if type(cotarget) is tuple else (cotarget,)):
            if type(c) is int and c < 0:
                raise CuteValueError(f"complement: the cotarget {fmt(cotarget)} has a negative extent")
    if len(stride) == 1 and _is(stride[0], 0):
        # irreducible rank-1 stride-0 layout: everything is in the complement
        everything = make_layout(coalesce_shape(cotarget))
        return (everything, True) if with_open else everything
    for d in stride:
        if type(d) is not int:
            # the order of the modes, the gaps between them and whether a mode is there at all (stride 0) are
            # decided by the strides
            raise StaticValueRequired(
                f"complement needs static strides, but {layout} has a run-time stride (it decides the order and "
                f"the gaps of the modes, and could be 0)")
    # repeatedly take the mode with the smallest stride (the first one on ties), as CuTe does
    result_shape, result_stride = [], [1]
    for _ in range(len(stride) - 1):
        min_stride = min(stride)
        i = stride.index(min_stride)
        below = result_stride[-1]
        gap = _static_gap(min_stride, below, layout)
        if gap == 0 or (covering and min_stride % below):
            _complement_gap_error(min_stride, below, layout)
        result_shape.append(gap)
        result_stride.append(min_stride * shape[i])
        del shape[i], stride[i]
    below = result_stride[-1]
    gap = _static_gap(stride[0], below, layout)
    if _is(gap, 0) or (covering and type(below) is int and type(stride[0]) is int and stride[0] % below):
        _complement_gap_error(stride[0], below, layout)
    result_shape.append(gap)
    new_stride = stride[0] * shape[0]
    if type(cotarget) is int and type(new_stride) is int:
        # static int cotarget: the rest is one mode (stride 0 if it has size 1)
        rest_shape = (cotarget + new_stride - 1) // new_stride
        rest_stride = new_stride if rest_shape != 1 else 0
    else:
        rest_shape = coalesce_shape(ceil_div_unchecked(cotarget, new_stride))
        rest_stride = compact_col_major_unchecked(rest_shape, new_stride)
        covered, target = product_unchecked(rest_shape) * new_stride, product_unchecked(cotarget)
        if covering and type(covered) is int and type(target) is int and covered < target:
            raise DivisibilityError(
                f"complement: the shape cotarget {fmt(cotarget)} folded through ceil_div by {fmt(new_stride)} gives "
                f"{fmt(rest_shape)}, which covers only [0, {covered}) of [0, {target}) (layout {layout})"
            )
    if type(rest_shape) is tuple:
        result_shape.extend(rest_shape)
        result_stride.extend(rest_stride)
    else:
        result_shape.append(rest_shape)
        result_stride.append(rest_stride)
    result = coalesce_flat(result_shape, result_stride, result_shape[-1], result_stride[-1])
    if with_open:
        return result, type(rest_shape) is tuple or not _is(rest_shape, 1)
    return result


def _static_gap(stride, below, layout):
    """``stride // below``: how many times the modes below a stride fit under it. With a run-time extent among
    those modes, whether they overlap the next one (a gap of 0: not injective) or leave a hole is a run-time fact."""
    if type(below) is not int:
        raise StaticValueRequired(
            f"complement: whether the modes of {layout} below the stride {stride} (reaching {fmt(below)}) overlap it "
            f"depends on a run-time extent; make it static")
    return stride // below


def _complement_gap_error(stride, below, layout):
    # the mode of this stride starts inside, or not at a multiple of, the extent of the modes below it
    if stride < below:
        raise NotInjectiveError(
            f"complement needs an injective layout, got {layout}: sorted by stride, its modes overlap "
            f"(the stride {stride} is below {below}, the extent of the modes with smaller strides)"
        )
    raise DivisibilityError(
        f"complement divisibility condition: the stride {stride} must be a multiple of {below}, the extent "
        f"of the modes with smaller strides, or the result would not cover the gap between them (in {layout})"
    )


complement_unchecked = complement.__wrapped__


def disjoint_complement(layout, cotarget):
    """CuTe's complement where only its order and disjointness are needed (it may leave gaps):
    ``(complement, open)``, ``open`` when evaluating it past its size stays disjoint from ``layout``."""
    return _complement_impl(layout, cotarget, False, True)


def _mul(a, b):
    return a * b


# -- inverses --------------------------------------------------------------------------------


def _need_int_strides(strides, layout, op):
    for x in strides:
        if not is_int(x):
            raise CuteTypeError(f"{op} needs integer strides, but {layout} has the stride {x}")


def _inverse_other(layout, inverse, op):
    if type(layout) is not Layout and hasattr(layout, "__cute_map_outer__"):
        inner, off = layout.inner, layout.offset
        if hasattr(inner, "yyy_msk") and type(off) is int and off == 0:
            # inv(S o L) == inv(L) o S for a swizzle (its own inverse)
            return composition_unchecked(inverse(layout.outer), inner)
        raise CuteValueError(
            f"{op} of a composed layout is supported for a swizzle with offset 0 (its own inverse), got {layout}"
        )
    raise CuteTypeError(f"{op}: layout must be a Layout, got {type(layout).__name__} {layout!r}")


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
        order = [keys[j] for j in _exchange_sort(strides)]
    rs, rd, curr = [], [], 1
    for i in order:
        x = d[i]
        if x == curr:
            rs.append(s[i])
            rd.append(pre[i])
            curr = s[i] * x
            if type(curr) is not int:
                break  # a run-time extent: no static stride follows it
        elif x > curr:
            break  # sorted: no later stride is the extent reached
    if not rs:
        return make_layout_unchecked(1, 0)
    return coalesce_flat(rs, rd, rs[-1], rd[-1])


_right_inverse = right_inverse.__wrapped__


@memoize
def left_inverse(layout: Any) -> Any:
    """A layout ``L`` with ``layout(L(layout(i))) == layout(i)`` (``L(layout(i)) == i`` if injective).

    Rejects layouts whose strides break CuTe's left-inverse divisibility condition
    and layouts with run-time strides, as CuTe does, and, where CuTe's result would not
    be a left inverse, layouts with negative strides and layouts whose modes, sorted by
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
    if any(x < 0 for x in d) and sum(1 for x in d if x != 0) > 1:
        # one negative stride inverts (CuTe gives a negative extent, which floor division reads right);
        # with more non-zero modes the digits of a negative offset are not the coordinates
        raise CuteValueError(
            f"left_inverse of a layout with a negative stride needs it to be the only non-zero stride, got {layout}"
        )
    order = _exchange_sort(d)
    rs, rd, size, reach = [], [0], 1, 0
    for i in order:
        x = d[i]
        if x == 0:
            continue
        if x < 0:  # the only non-zero mode: its stride is the gap, its extent the last mode
            rs.append(x)
            rd.append(pre[i])
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
    _need_layout(a, "max_common_layout", "a")
    _need_layout(b, "max_common_layout", "b")
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
    if type(first.shape) is int and _is(first.stride, 1):
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
    if type(layout) is not Layout and hasattr(layout, "__cute_map_outer__"):
        return make_layout_unchecked(1, 0)  # not attempted for composed layouts, as in CuTe
    _need_layout(layout, "nullspace", "layout")
    fd = flatten_unchecked(layout.stride)
    fs = flatten_unchecked(layout.shape)
    if type(fd) is not tuple:
        fd, fs = (fd,), (fs,)
    idx = [i for i, x in enumerate(fd) if _is(x, 0)]
    if not idx:
        return make_layout_unchecked(1, 0)
    rstride = compact_col_major_unchecked(fs)
    return make_layout_unchecked(_unwrap(tuple(fs[i] for i in idx)), _unwrap(tuple(rstride[i] for i in idx)))


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
    shapes, strides = [], []
    for x, y in zip(s, d):
        if not is_int(y):
            raise CuteTypeError(f"max_alignment needs integer strides, but {layout} has the stride {y}")
        if type(x) is not int:
            continue  # a run-time extent counts as 1
        shapes.append(x)
        strides.append(y if type(y) is int else 0)  # a run-time stride counts as 0
    # the modes right_inverse chains (strides 1, s0, s0*s1, ...) make the run [0, n); the others repeat it
    n = 1
    others = []
    for i in _exchange_sort(strides):
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
        _need_layout(layout, "max_alignment", "layout")
    if not hasattr(inner, "yyy_msk"):
        return 1  # a general composed layout: not attempted, as in CuTe
    offset = layout.offset
    offset = getattr(offset, "offset", offset)  # a smem_ptr flag: the offset it carries (CuTe's flag is a 0)
    if type(offset) is not int:
        return 1  # a run-time offset: only 1 is known
    n = _gcd(1 << inner.base, abs(offset))
    return _gcd(n, max_alignment(layout.outer))


UPPER_LAYER_OPERATIONS["max_alignment"] = max_alignment
