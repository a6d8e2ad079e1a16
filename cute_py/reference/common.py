"""Helpers the unit references share: memory as bytes, and the tiles of a whole tiled copy (their grid, a
shared-memory tile as a host tensor, bounds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ..core.composed import smem_element_layout
from ..core.int_tuple import ceil_div, product, product_each
from ..core.layout import Layout, cosize
from ..core.typing import Coord, Shape, Tiler
from ..tensor.dtypes import DType
from ..tensor.engines import ArrayEngine
from ..tensor.tensor import Tensor

if TYPE_CHECKING:
    from ..core.composed import ComposedLayout

__all__ = ["byte_view", "tile_grid", "tile_coords", "smem_tile", "smem_tile_bytes", "in_bounds"]


def byte_view(a: np.ndarray) -> np.ndarray:
    """The bytes of ``a`` as a flat ``uint8`` view (writes reach ``a``)."""
    return a.view(np.uint8).reshape(-1)


def tile_grid(shape: Shape, tiler: Tiler) -> tuple[int, ...]:
    """The number of ``tiler`` tiles along each mode of ``shape`` (partial tiles count)."""
    t = product_each(tiler) if isinstance(tiler, tuple) else (tiler,)
    s = product_each(shape)
    return tuple(ceil_div(a, b) for a, b in zip(s, t))


def tile_coords(grid: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Every coordinate of ``grid``, the first mode fastest."""
    n = product(grid)
    for i in range(n):
        c, r = [], i
        for g in grid:
            c.append(r % g)
            r //= g
        yield tuple(c)


def smem_tile(layout: Layout | ComposedLayout, dtype: DType, nbytes: int) -> tuple[np.ndarray, Tensor]:
    """``(buffer, tensor)``: a shared-memory tile of ``nbytes`` zero bytes (aligned to any swizzle) and the host
    tensor of ``layout`` over it -- a byte-swizzled layout becomes the function of element offsets the hardware's
    swizzle gives there."""
    buf = np.zeros(nbytes, dtype=np.uint8)
    view = buf.view(dtype.numpy_dtype or dtype.storage_dtype)
    return buf, Tensor(ArrayEngine(view, 0, dtype), smem_element_layout(layout, dtype.width))


def smem_tile_bytes(layout: Layout | ComposedLayout, dtype: DType) -> int:
    """The bytes a shared-memory tile of ``layout`` spans, rounded up to 1024 (a swizzle's repeat)."""
    layout = smem_element_layout(layout, dtype.width)
    outer = getattr(layout, "outer", layout)
    n = (cosize(outer) + getattr(layout, "offset", 0)) * dtype.width // 8
    return -(-n // 1024) * 1024


def in_bounds(c: Coord, shape: tuple[int, ...]) -> bool:
    """True when the coordinate ``c`` lies inside ``shape``."""
    c = tuple(c) if isinstance(c, tuple) else (c,)
    return all(0 <= x < y for x, y in zip(c, shape))
