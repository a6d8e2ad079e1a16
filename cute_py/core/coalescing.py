"""Coalescing and filtering layouts: ``coalesce`` (whole, or mode by mode to a profile), ``coalesce_x``,
``filter_zeros`` and ``filter``, as CuTe's ``layout.hpp``, and the flat coalescing the algebra builds on."""

from __future__ import annotations

from typing import Any

from ..errors import RankError
from .congruence import filter_zeros_tuple_unchecked
from .int_tuple import flatten_unchecked as _flatten_tuple
from .normalise import as_int_tuple
from .notation import fmt
from .layout import Layout, check_layout, make_layout, make_layout_unchecked, map_outer
from .memo import memoize
from .typing import IntTuple, Stride

__all__ = ["coalesce", "coalesce_x", "filter_zeros", "filter"]


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
    if type(layout) is not Layout and map_outer(layout):
        return map_outer(layout)(lambda o: coalesce(o, target_profile))
    check_layout(layout, "coalesce")
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
    check_layout(layout, "filter_zeros")
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
    if type(layout) is not Layout and map_outer(layout):
        return map_outer(layout)(lambda o: filter(o, target_profile))
    check_layout(layout, "filter")
    if type(target_profile) is not tuple:
        return _filter(layout)
    return _transform(layout, target_profile, filter)
