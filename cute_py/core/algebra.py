"""Composition and complement of layouts (inverses, common vectors, nullspaces and alignment: ``inverse``).

Each function follows the current CuTe C++ (``layout.hpp``) case by case,
including which inputs it rejects; where the C++ preconditions are weaker than the
documented law, the function raises instead of returning a result that breaks it
(each docstring lists those cases).  Results are memoised (layouts are immutable).
"""

from __future__ import annotations

from typing import Any

from ..errors import CuteTypeError, CuteValueError, DivisibilityError, NotInjectiveError, RankError, StaticValueRequired
from .coords import compact_col_major_unchecked
from .symbolic import deciding_active
from .division import ceil_div_unchecked
from .int_tuple import (as_int_tuple, divisor_of, flatten_unchecked, fmt, is_int, is_int_value, product_unchecked,
                        signum, unwrap_single)
from .coalescing import coalesce_flat, coalesce_flat_lists, coalesce_x
from .layout import concat_layouts, cosize, Layout, make_layout, make_layout_unchecked
from .memo import memoize
from .typing import Shape

__all__ = [
    "composition",
    "complement",
    "coalesce_shape",
]


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
    if is_int_value(rd, 0):
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
        else:
            # a run-time extent or stride (whatever the rhs extent: the static form checks a rhs of extent 1 too): whether the stride divides, or stays inside, the lhs mode is a run-time
            # fact (C++ assumes it; a wrong guess would give a layout that is not lhs o rhs), and the walk divides
            # by the stride, which could be 0 or negative at run time. It is proven when the stride is a static
            # divisor of what is known to divide the (positive) extent: then it divides it.
            proven = type(rest_stride) is int and rest_stride > 0 and divisor_of(curr_shape) % rest_stride == 0
            if not proven and _decided_divides(curr_shape, rest_stride):
                proven = True  # host code with the call's values: C++'s assumption, taken on them and guarded
            if not proven:
                raise StaticValueRequired(
                    f"composition: whether the rhs stride {fmt(rest_stride)} divides, or is less than, the lhs mode "
                    f"of extent {fmt(curr_shape)} depends on run-time values (lhs {fmt(ls)}:{fmt(ld)}, rhs "
                    f"{fmt(rs)}:{fmt(rd)}); make them static, or assume a divisibility (cute.assume) that proves it")
        abs_stride = rest_stride if not static and type(rest_stride) is not int else abs(rest_stride)
        if not static:  # proven (or decided) above: the stride divides the extent
            next_shape, next_stride = curr_shape // rest_stride, 1   # exact: the stride divides the extent
        else:
            next_shape = ceil_div_unchecked(curr_shape, abs_stride)
            next_stride = ceil_div_unchecked(abs_stride, curr_shape) * signum(rest_stride)
        if is_int_value(next_shape, 1) or is_int_value(rest_shape, 1):
            rest_stride = next_stride
            continue
        if type(next_shape) is int and type(rest_shape) is int:
            new_shape = min(next_shape, rest_shape)
        elif type(rest_shape) is int and divisor_of(next_shape) % rest_shape == 0:
            new_shape = rest_shape   # the mode holds a multiple of the rhs extent: all of it fits
        elif type(next_shape) is int and divisor_of(rest_shape) % next_shape == 0:
            new_shape = next_shape   # the rhs extent is a multiple of what the mode holds
        elif _decided_split(next_shape, rest_shape) is not None:  # decided on the call's values, guarded
            new_shape = _decided_split(next_shape, rest_shape)
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
    if is_int_value(rest_shape, 1):
        return make_layout_unchecked(unwrap_single(tuple(result_shape)), unwrap_single(tuple(result_stride)))
    result_shape.append(rest_shape)
    result_stride.append(rest_stride * ld[-1])
    return make_layout_unchecked(tuple(result_shape), tuple(result_stride))


def _decided_divides(extent, stride) -> bool:
    """Whether host code deciding on a call's values (``core.symbolic.Decision``) finds ``stride`` a positive
    divisor of ``extent`` (both recorded as guards of the compile); False when nothing decides."""
    if deciding_active() is None:
        return False
    try:
        return bool(stride > 0) and bool(extent % stride == 0)
    except StaticValueRequired:  # a value no argument gives
        return False


def _decided_split(next_shape, rest_shape):
    """How many of ``rest_shape`` elements a mode that holds ``next_shape`` takes, decided on a call's values:
    all of them when they fit, else ``next_shape`` when it divides them; ``None`` when nothing decides or
    neither holds (the caller raises)."""
    if deciding_active() is None:
        return None
    try:
        if bool(next_shape >= rest_shape):  # the rest of the rhs fits in this mode
            return rest_shape
        if bool(rest_shape % next_shape == 0):
            return next_shape
    except StaticValueRequired:
        return None
    return None


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


def need_layout(x, op, what="lhs"):
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
    return unwrap_single(tuple(out))


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
        need_layout(layout, "complement", "layout")
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
    if len(stride) == 1 and is_int_value(stride[0], 0):
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
    vanishing = None if covering else next((s for s in shape if type(s) is not int), None)
    for _ in range(len(stride) - 1):
        min_stride = min(stride)
        i = stride.index(min_stride)
        below = result_stride[-1]
        _check_floored_gap(min_stride, below, vanishing, layout)
        gap = _static_gap(min_stride, below, layout)
        if gap == 0 or (covering and min_stride % below):
            _complement_gap_error(min_stride, below, layout)
        result_shape.append(gap)
        result_stride.append(min_stride * shape[i])
        del shape[i], stride[i]
    below = result_stride[-1]
    _check_floored_gap(stride[0], below, vanishing, layout)
    gap = _static_gap(stride[0], below, layout)
    if is_int_value(gap, 0) or (covering and type(below) is int and type(stride[0]) is int and stride[0] % below):
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
        return result, type(rest_shape) is tuple or not is_int_value(rest_shape, 1)
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


def _check_floored_gap(stride, below, extent, layout):
    """A gap that does not divide evenly is rounded down, and where it falls depends on every mode below it: a
    run-time ``extent`` that may be 1 (its mode then drops out) decides the result, so it must be static."""
    if extent is not None and type(stride) is int and type(below) is int and stride % below:
        raise StaticValueRequired(
            f"complement of {layout}: the stride {stride} is no multiple of {below}, the extent below it, and whether "
            f"the run-time extent {extent} is 1 (its mode then drops out) moves the gap; make it static")


def disjoint_complement(layout, cotarget):
    """CuTe's complement where only its order and disjointness are needed (it may leave gaps):
    ``(complement, open)``, ``open`` when evaluating it past its size stays disjoint from ``layout``."""
    return _complement_impl(layout, cotarget, False, True)


def _mul(a, b):
    return a * b
