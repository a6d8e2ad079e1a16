"""The width in which a kernel computes the element offsets of a tensor over global memory.

A coordinate becomes an offset as ``sum(c_i * d_i)``. In a kernel the coordinates are traced integers (thread
and block indices, loop counters: 32-bit values) and the strides are static ints or run-time values; 32-bit
arithmetic wraps past ``2**31`` elements. The rule (``offset_width``):

- a layout whose extents and strides are all static is evaluated in 32 bits exactly when every offset it
  reaches lies in ``[-2**31, 2**31)`` (its span: the sum of ``(s - 1) * d`` over the positive strides, and
  likewise over the negative ones);
- a layout with a run-time extent or stride is evaluated in 64 bits: no bound on its span is known while
  compiling (a 32-bit run-time stride, ``from_dlpack(..., use_32bit_stride=True)`` or ``sym_int()``, is passed
  as a 32-bit value and widened in the kernel: the products with it are 64-bit);
- tensors over shared memory, registers and host arrays keep their widths (shared memory is below 2**31
  bytes; host offsets are Python ints).

Widening happens on the operands, never on a wrapped result (``element_offset``): a flat run-time coordinate into
a tuple of modes is first split over the modes in its own width (cheap 32-bit division; the coordinate fits its
width, being below the extent of its mode), then each per-mode coordinate and each run-time stride is widened to
64 bits, so that every product and the sum are 64-bit. The layout's arithmetic is otherwise untouched: the same
split and products as ``crd2idx`` (colexicographic), in a wider type.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import device
from ..core.int_tuple import flatten_unchecked
from ..core.leaves import DynamicInt
from ..core.products import product_unchecked
from ..core.layout import Layout, make_layout_unchecked
from .dtypes import Int64
from .pointer import AddressSpace, Pointer

__all__ = ["offset_width", "widen_coord", "widen_value", "wide_layout", "element_offset", "static_span"]

_LIMIT = 1 << 31
_GLOBAL = (AddressSpace.gmem, AddressSpace.generic)


def static_span(shape: Any, stride: Any) -> tuple[int, int]:
    """``(lowest, highest)`` offset that the static layout ``shape:stride`` reaches (``(0, 0)`` for an empty
    one)."""
    lo = hi = 0
    shapes, strides = flatten_unchecked(shape), flatten_unchecked(stride)
    if type(shapes) is not tuple:
        shapes, strides = (shapes,), (strides,)
    for s, d in zip(shapes, strides):
        if s == 0:
            return 0, 0
        if d > 0:
            hi += (s - 1) * d
        else:
            lo += (s - 1) * d
    return lo, hi


@functools.lru_cache(maxsize=4096)
def _static_width(layout: Layout) -> int:
    lo, hi = static_span(layout.shape, layout.stride)
    return 32 if -_LIMIT <= lo and hi < _LIMIT else 64


def offset_width(tensor: Any) -> int:
    """32 or 64: the width of the element offsets of ``tensor`` in the kernel being traced (see the module's
    rule); 0 outside a kernel or for a tensor whose offsets are not global-memory element offsets."""
    engine, layout = tensor.engine, tensor.layout
    if type(layout) is not Layout or not isinstance(engine, Pointer) or engine.memspace not in _GLOBAL:
        return 0
    if device.active() is None:
        return 0
    leaves = flatten_unchecked(layout.shape), flatten_unchecked(layout.stride)
    leaves = leaves[0] + leaves[1] if type(leaves[0]) is tuple else leaves
    if all(type(x) is int for x in leaves):
        return _static_width(layout)
    if all(type(x) is int or isinstance(x, DynamicInt) for x in leaves):
        return 64
    return 0


def widen_coord(coord: Any, shape: Any) -> Any:
    """``coord`` (a coordinate of ``shape``, ``None`` for sliced modes) with each run-time leaf narrower than 64
    bits widened to 64. A flat coordinate into a tuple of modes is first split over them (the colexicographic
    split ``crd2idx`` makes): a run-time one always, a static one where the modes have run-time extents (its
    parts are then run-time values); the size a part is split by is computed in 64 bits when it is a product of
    run-time extents (a 32-bit product of two of them wraps). Static leaves of static shapes stay ints."""
    if coord is None:
        return coord
    if type(coord) is tuple:
        if type(shape) is not tuple or len(coord) != len(shape):
            return coord  # a rank mismatch: the layout's evaluation reports it
        return tuple(widen_coord(c, s) for c, s in zip(coord, shape))
    dynamic = isinstance(coord, DynamicInt)
    if not dynamic and type(coord) is not int:
        return coord
    if type(shape) is tuple and (dynamic or not _static(shape)):
        out, last = [], len(shape) - 1
        for i, s in enumerate(shape):
            if i == last:
                out.append(widen_coord(coord, s))
                break
            p = product_unchecked(s)
            if type(p) is int and p == 0:
                return coord  # an empty mode: the layout's evaluation reports it
            if type(p) is not int and type(s) is tuple:
                p = product_unchecked(_wide_tuple(s))
            out.append(widen_coord(coord % p, s))
            coord = coord // p
        return tuple(out)
    return widen_value(coord)


def _static(t):
    if type(t) is tuple:
        return all(_static(x) for x in t)
    return type(t) is int


def widen_value(x: Any) -> Any:
    """``x`` widened to 64 bits if it is a run-time integer narrower than that; anything else as it is."""
    if isinstance(x, DynamicInt) and getattr(x, "width", 64) < 64 and hasattr(x, "to"):
        return x.to(Int64)
    return x


def _wide_tuple(t):
    if type(t) is tuple:
        return tuple(_wide_tuple(x) for x in t)
    return widen_value(t)


def wide_layout(layout: Layout) -> Layout:
    """``layout`` with each run-time stride narrower than 64 bits widened to 64 (static strides stay ints)."""
    flat = flatten_unchecked(layout.stride)
    if all(type(d) is int for d in (flat if type(flat) is tuple else (flat,))):
        return layout
    return make_layout_unchecked(layout.shape, _wide_tuple(layout.stride))


def element_offset(tensor: Any, coord: Any, width: int | None = None) -> Any:
    """``tensor.layout(coord)`` computed in the width ``offset_width(tensor)`` gives (or ``width``): with every
    run-time operand widened first when that is 64."""
    width = offset_width(tensor) if width is None else width
    if width != 64:
        return tensor.layout(coord)
    return wide_layout(tensor.layout)(widen_coord(coord, tensor.layout.shape))
