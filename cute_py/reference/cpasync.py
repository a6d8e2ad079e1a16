"""CPU (numpy) execution of the cp.async unit.

- :func:`cp_async`: copy ``cp_size`` bytes; bytes past ``src_size`` are zero-filled;
- :func:`run_cp_async_copy`: a whole tiled copy gmem -> smem (cp.async) -> gmem, every thread and vector.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core.coords import idx2crd
from ..core.int_tuple import product
from ..core.typing import Shape
from ..errors import CuteValueError
from ..nvgpu.cpasync.ops import CopyG2SOp
from ..tensor.engines import ArrayEngine
from ..tensor.partition import local_tile
from ..tensor.tensor import Tensor, make_identity_tensor
from .common import byte_view, in_bounds, smem_tile, smem_tile_bytes, tile_coords, tile_grid

if TYPE_CHECKING:
    from ..atom import TiledCopy
    from ..core.composed import ComposedLayout
    from ..core.layout import Layout

__all__ = ["cp_async", "run_cp_async_copy", "ENTRIES"]


def cp_async(src: np.ndarray, src_byte: int, dst: np.ndarray, dst_byte: int, cp_size: int,
             src_size: int | None = None) -> None:
    """``cp.async``: copy ``cp_size`` bytes from ``src`` to ``dst`` (bytes past ``src_size`` become 0)."""
    if cp_size not in (4, 8, 16):
        raise CuteValueError(f"cp.async copies 4, 8 or 16 bytes, not {cp_size}")
    if src_byte % cp_size or dst_byte % cp_size:
        raise CuteValueError(f"cp.async addresses must be {cp_size}-byte aligned (src {src_byte}, dst {dst_byte})")
    n = cp_size if src_size is None else src_size
    if not 0 <= n <= cp_size:
        raise CuteValueError(f"src_size must be in 0..{cp_size}, got {n}")
    s, d = byte_view(src), byte_view(dst)
    d[dst_byte:dst_byte + n] = s[src_byte:src_byte + n]
    d[dst_byte + n:dst_byte + cp_size] = 0


def run_cp_async_copy(src: np.ndarray, dst: np.ndarray, tiled_copy: TiledCopy, gmem_layout: Layout,
                      smem_layout: Layout | ComposedLayout, cta_tiler: Shape) -> int:
    """Copy ``src`` into ``dst`` (flat numpy gmem buffers over ``gmem_layout``) tile by tile: cp.async
    gmem -> smem with ``tiled_copy`` (every thread, every vector), then plain stores smem -> gmem.

    Vectors of partial edge tiles copy their in-bounds prefix and zero-fill the rest
    (``src_size``); wholly out-of-bounds vectors are zero-filled from a valid address.
    Returns the number of tiles.
    """
    atom = tiled_copy.atom
    dtype, eb = atom.dtype, atom.dtype.width // 8
    vec_bytes = atom.num_bits // 8
    shape = gmem_layout.shape if isinstance(gmem_layout.shape, tuple) else (gmem_layout.shape,)
    store = dtype.numpy_dtype or dtype.storage_dtype
    g_src = Tensor(ArrayEngine(src.reshape(-1).view(store), 0, dtype), gmem_layout)
    g_dst = Tensor(ArrayEngine(dst.reshape(-1).view(store), 0, dtype), gmem_layout)
    ident = make_identity_tensor(gmem_layout.shape)
    tiles = 0
    for coord in tile_coords(tile_grid(gmem_layout.shape, cta_tiler)):
        buf, s_tile = smem_tile(smem_layout, dtype, smem_tile_bytes(smem_layout, dtype))
        g_tile, c_tile = local_tile(g_src, cta_tiler, coord), local_tile(ident, cta_tiler, coord)
        for t in range(tiled_copy.size):
            thr = tiled_copy.get_slice(t)
            t_s, t_d, t_c = thr.partition_S(g_tile), thr.partition_D(s_tile), thr.partition_S(c_tile)
            v = product(t_s.layout.shape[0])
            for i in range(product(t_s.layout.shape) // v):
                first = _vec_coord(t_s.layout, 0, i)
                inside = [in_bounds(t_c[_vec_coord(t_c.layout, j, i)], shape) for j in range(v)]
                k = inside.index(False) if False in inside else v
                if any(inside[k:]):
                    raise CuteValueError("a cp.async vector whose in-bounds elements are not a prefix cannot be predicated")
                src_byte = (t_s.engine.offset + t_s.layout(first)) * eb if k else 0
                dst_byte = (t_d.engine.offset + t_d.layout(_vec_coord(t_d.layout, 0, i))) * eb
                cp_async(src, src_byte, buf, dst_byte, vec_bytes, min(k * eb, vec_bytes))
        for j in range(product(c_tile.shape)):
            c = c_tile[j]
            if in_bounds(c, shape):
                g_dst[tuple(c) if isinstance(c, tuple) else c] = s_tile[j]
        tiles += 1
    return tiles


def _vec_coord(layout, j, i):
    # coordinate (j, rest index i) of a partitioned (V, rest...) layout
    shape = layout.shape
    rest = shape[1:]
    rc = idx2crd(i, rest) if rest else ()
    return (j,) + (rc if type(rc) is tuple else (rc,))


# one instruction of each copy op of the unit: the function that executes it
ENTRIES = {CopyG2SOp: cp_async}
