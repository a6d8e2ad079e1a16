"""The rules a tensor's storage and layout must meet when it is made: a swizzled shared-memory tile's alignment, and a
layout over a host array staying inside it."""

from __future__ import annotations

from typing import Any

from ..core.int_tuple import flatten_unchecked
from ..core.leaves import DynamicInt
from ..core.layout import Layout, cosize
from ..core.swizzle import Swizzle
from ..errors import CuteTypeError, CuteValueError
from .pointer import AddressSpace, Pointer

__all__ = ["check_swizzle_alignment", "check_inside"]


def _leaves(t):
    return flatten_unchecked(t) if type(t) is tuple else (t,)


def check_swizzle_alignment(ptr: Pointer, layout: Any) -> None:
    """``CuteValueError`` unless a swizzled shared-memory tile's pointer is aligned to the swizzle's repeat (capped:
    ``swizzle_alignment``; a known address aligned further than claimed counts)."""
    if ptr.memspace not in (AddressSpace.smem, AddressSpace.dsmem) or not isinstance(getattr(layout, "inner", None),
                                                                                     Swizzle):
        return
    from ..core.composed import smem_byte_swizzle
    from ..core.swizzle import swizzle_alignment

    need = swizzle_alignment(smem_byte_swizzle(layout, ptr.dtype.width))
    have = ptr.alignment
    byte = ptr.address if type(ptr.address) is int else None
    if byte is not None and byte % need == 0:
        have = need  # a known address aligned further than claimed
    if have < need:
        raise CuteValueError(f"make_tensor: the swizzle of {layout} over {ptr.dtype.name} repeats every {need} bytes "
                             f"and needs a {need}-byte aligned shared-memory pointer, got {ptr!r}")


def check_inside(layout: Any, n: int) -> None:
    """``CuteValueError`` unless every offset ``layout`` reaches over a host array of ``n`` elements lies in
    ``[0, n)`` (run-time strides and composed layouts of another offset are checked element by element)."""
    outer, base = layout, 0
    if type(layout) is not Layout:
        outer, base = layout.outer, layout.offset
        if type(outer) is not Layout or type(base) is not int:
            return  # checked element by element
    fs, fd = _leaves(outer.shape), _leaves(outer.stride)
    lo = hi = base
    for s, d in zip(fs, fd):
        if type(s) is not int or type(d) is not int:
            if not isinstance(d, (int, DynamicInt)):
                raise CuteTypeError(f"a tensor over a host array needs integer strides, got {layout}")
            return  # run-time values: checked element by element
        if s == 0:
            return  # empty: reaches nothing
        lo, hi = lo + min(0, (s - 1) * d), hi + max(0, (s - 1) * d)
    if lo < 0:
        raise CuteValueError(f"layout {layout} reaches offset {lo}, before the start of the {n} elements given")
    if type(layout) is Layout and hi >= n or type(layout) is not Layout and cosize(layout) > n:
        raise CuteValueError(f"layout {layout} reaches offset {hi}, beyond the {n} elements given")
