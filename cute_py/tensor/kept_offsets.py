"""The element offsets of int indices into static layouts, kept: a kernel's trace reads and writes its register
fragments element by element (an MMA's accumulators, a softmax's rows), each index many times, through views
whose layouts are new objects of a few values. ``Tensor.__getitem__`` / ``__setitem__`` take an int index's offset
from here where the tensor's layout (by value) has given it before, and keep each one they compute.

Only offsets that depend on nothing but the layout and the index are kept: a static :class:`Layout` (every extent
and stride an int), an int index, an int offset computed and checked by the long way (so an index outside the
shape is refused every time), and only for host arrays and register fragments (a device tensor's offsets have a
width rule, a ``domain_offset`` view checks each element against the tensor it shifts).

@post known_offset(t, i) is None or known_offset(t, i) == t.layout(i)
"""

from __future__ import annotations

from typing import Any

from ..core.int_tuple import flatten_unchecked
from ..core.layout import Layout
from .engines import ArrayEngine

__all__ = ["known_offset", "keep_offset"]

# {layout: {index: offset}}, and the same tables by the id of a layout object seen: id -> (layout, table)
_OFFSETS: dict[Layout, dict[int, int]] = {}
_OFFSETS_BY_ID: dict[int, tuple[Layout, dict[int, int]]] = {}
_OFFSETS_KEPT = 4096  # layouts (objects) kept at most, then all forgotten at once


def _offset_table(layout):
    """The table of int indices into ``layout`` to offsets, or ``None`` when ``layout`` is not a static
    :class:`Layout`."""
    known = _OFFSETS_BY_ID.get(id(layout))
    if known is not None and known[0] is layout:
        return known[1]
    if type(layout) is not Layout:
        return None
    flat = flatten_unchecked(layout.shape), flatten_unchecked(layout.stride)
    if not all(type(x) is int for part in flat for x in (part if type(part) is tuple else (part,))):
        return None
    if len(_OFFSETS_BY_ID) >= _OFFSETS_KEPT:
        _OFFSETS_BY_ID.clear()
        _OFFSETS.clear()
    table = _OFFSETS.setdefault(layout, {})
    _OFFSETS_BY_ID[id(layout)] = (layout, table)
    return table


def known_offset(tensor: Any, i: int) -> int | None:
    """The offset of the int index ``i`` into ``tensor`` (a host array's or a register fragment's, not a view
    shifted by ``domain_offset``) where :func:`keep_offset` has kept it for its layout, else ``None``."""
    engine = tensor.engine
    if not isinstance(engine, ArrayEngine) or engine.domain is not None:
        return None
    table = _offset_table(tensor.layout)
    return None if table is None else table.get(i)


def keep_offset(tensor: Any, i: Any, off: Any) -> None:
    """Keep ``off``, the checked offset of index ``i`` into ``tensor``: where ``i`` and ``off`` are ints and the
    layout a static :class:`Layout`, every array it is used with gives the same."""
    if type(i) is int and type(off) is int:
        table = _offset_table(tensor.layout)
        if table is not None:
            table[i] = off
