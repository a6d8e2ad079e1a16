"""The host half of ``python -m cute_py demo`` (parts 1, 2, and part 4 on the CPU): layouts and their
algebra, a TMA atom and its box, and the demo's tile copy through the CPU reference.  Pure algebra, plus numpy
for the CPU run; the configuration of the demo (``DTYPE``, ``TILE``, ``SWIZZLE``...) lives here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.algebra import complement, composition
from ..core.inverse import left_inverse, right_inverse
from ..core.int_tuple import size
from ..core.coalescing import coalesce
from ..core.layout import Layout, make_layout
from ..core.modes import group_modes
from ..core.tiling import blocked_product, raked_product, tile_to_shape, zipped_divide
from ..errors import CuteValueError
from ..nvgpu.warpgroup.smem import SmemLayoutAtomKind, make_smem_layout_atom
from ..tensor.dtypes import dtype_of
from ..tensor.pointer import AddressSpace, make_ptr
from ..tensor.tensor import make_tensor
from ..tensor.partition import local_tile

if TYPE_CHECKING:
    from ..core.composed import ComposedLayout
    from ..nvgpu.tma.atom import TmaCopyAtom
    from ..tensor.dtypes import DType

__all__ = ["tour", "tma_tour", "run_on_cpu", "smem_tile_layout", "heading", "DTYPE", "TILE", "SWIZZLE", "GPU_SHAPE",
           "CPU_SHAPE", "REPS", "JIT_INSTALL"]

DTYPE = "BFloat16"  # the element type of the demo's copy
TILE = (128, 64)  # rows x columns of one CTA tile
SWIZZLE = "128B"  # the shared-memory tile is 128B-swizzled
GPU_SHAPE = (8192, 8192)  # the tensor copied on a GPU (and the shape kernel 1 is compiled for)
CPU_SHAPE = (300, 200)  # the tensor copied by the CPU reference (edge tiles are partial)
REPS = 10  # timed runs of the GPU copy (after 3 untimed ones); the median is reported
JIT_INSTALL = "pip install -e '.[jit]'"


def _table(layout):
    rows, cols = layout.shape
    width = max(len(str(layout((r, c)))) for r in range(rows) for c in range(cols))
    lines = []
    for r in range(rows):
        lines.append("    " + " ".join(str(layout((r, c))).rjust(width) for c in range(cols)))
    return "\n".join(lines)


def heading(out: Callable[[str], object], text: str) -> None:
    """Print the title of a part of the demo."""
    out(f"\n== {text} ==\n")


def tour(out: Callable[[str], object] = print) -> None:
    """Part 1: print a few layouts and their algebra, checking each law it shows."""
    a = Layout((4, (2, 8)), (2, (1, 8)))
    out(f"A layout maps coordinates to offsets:  A = {a}")
    out(f"  A(5) = {a(5)},  A((1,(1,3))) = {a((1, (1, 3)))},  A((None,(1,None))) = {a((None, (1, None)))}")
    out(f"  coalesce(A) = {coalesce(a)}\n")

    row = make_layout((4, 6), stride=(6, 1))
    out(f"A 4x6 row-major layout {row}:")
    out(_table(row) + "\n")

    x, y = Layout((6, 2), (8, 2)), Layout((4, 3), (3, 1))
    r = composition(x, y)
    ok = all(r(i) == x(y(i)) for i in range(size(y)))
    out(f"composition({x}, {y}) = {r}   [R(i) == A(B(i)) for all i: {ok}]")
    out(f"complement((2,2):(1,6), 24) = {complement(Layout((2, 2), (1, 6)), 24)}")
    inv = right_inverse(Layout((4, 8), (1, 5)))
    out(f"right_inverse((4,8):(1,5)) = {inv};  left_inverse((2,4):(4,1)) = {left_inverse(Layout((2, 4), (4, 1)))}")

    gmem = Layout((128, 128), (128, 1))
    out(f"zipped_divide({gmem}, (64,32)) = {zipped_divide(gmem, (64, 32))}   [(tile),(tiles)]")
    block, tiles = Layout((2, 5), (5, 1)), Layout((3, 4), (1, 3))
    out(f"blocked_product({block}, {tiles}) = {blocked_product(block, tiles)}")
    out(f"raked_product({block}, {tiles})   = {raked_product(block, tiles)}")


def smem_tile_layout(dtype: DType | str | Any, tile: tuple[int, int], swizzle: str) -> Layout | ComposedLayout:
    """The shared-memory layout of one ``tile`` (rows, cols) of ``dtype``, row-major (K-major)."""
    rows, cols = tile
    if swizzle == "none":
        return Layout((rows, cols), (cols, 1))
    if swizzle == "128B":
        atom = make_smem_layout_atom(SmemLayoutAtomKind.K_SW128, dtype_of(dtype).width)
        return tile_to_shape(atom, (rows, cols))
    raise CuteValueError(f"swizzle must be 'none' or '128B', got {swizzle!r}")


def _smem_layout():
    return smem_tile_layout(DTYPE, TILE, SWIZZLE)


def tma_tour(out: Callable[[str], object] = print, shape: tuple[int, int] = GPU_SHAPE) -> TmaCopyAtom:
    """Part 2: print the TMA atom of a row-major ``shape`` bf16 tensor and a 128B-swizzled tile, its
    descriptor, and what ``tma_partition`` makes of one tile. Returns the atom."""
    from ..nvgpu import cpasync
    from ..tensor.fake import make_fake_tensor

    dt = dtype_of(DTYPE)
    rows, cols = shape
    gmem = make_fake_tensor(dt, shape, stride=(cols, 1))
    smem = _smem_layout()
    out(f"gmem tensor: {rows}x{cols} {dt.name}, row-major      {gmem.layout}")
    out(f"smem tile:   {TILE[0]}x{TILE[1]}, {SWIZZLE}-swizzled        {smem}")
    atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), gmem, smem, TILE)
    d = atom.descriptor
    out(f"make_tiled_tma_atom(CopyBulkTensorTileG2SOp(), gmem, smem, {TILE}) -> descriptor:")
    out(f"  TMA box {d.box_dims} (innermost dim first) = {d.box_bytes} bytes per instruction")
    out(f"  global dims {d.global_dims}, global strides {d.global_strides} bytes, element strides "
        f"{d.element_strides}")
    out(f"  swizzle {d.swizzle.name} ({d.swizzle.span}-byte span; the smem tile must be {d.smem_alignment}-byte "
        f"aligned), L2 promotion {d.l2_promotion.name}, out-of-bounds fill {d.oob_fill.name}")
    out(f"  TMA coordinate tensor {tma_tensor.layout}   (gmem (row, col) -> TMA (col, row))")

    coord = (1, 2)
    s_tile = make_tensor(make_ptr(dt, None, AddressSpace.smem, d.smem_alignment), smem)
    g_tile = local_tile(tma_tensor, TILE, coord)
    tAsA, tAgA = cpasync.tma_partition(atom, 0, Layout(1), group_modes(s_tile, 0, 2), group_modes(g_tile, 0, 2))
    mode0 = tAgA.layout.shape[0]
    out(f"tma_partition of the tile at block {coord}, as ((TMA box, TMA instructions), ...):")
    out(f"  smem: {tAsA.layout}")
    out(f"  gmem: {tAgA.layout}, starting at TMA coordinate {tuple(tAgA[0])}")
    out(f"  -> {size(mode0[1])} TMA instruction(s) of {size(mode0[0])} elements per tile")
    return atom




def run_on_cpu(shape: tuple[int, int] = CPU_SHAPE, out: Callable[[str], object] = print) -> bool:
    """Run the demo's tile copy through :func:`cute_py.reference.run_tma_copy` on a ``shape`` numpy array
    of random bf16 bits; print the check. Returns True when the output equals the input bit for bit."""
    import numpy as np

    from .. import reference as ref
    from ..nvgpu import cpasync
    from ..tensor.fake import make_fake_tensor

    dt = dtype_of(DTYPE)
    gmem = make_fake_tensor(dt, shape, stride=(shape[1], 1))
    smem = _smem_layout()
    load, load_t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), gmem, smem, TILE)
    store, store_t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), gmem, smem, TILE)
    rng = np.random.default_rng(0)
    src = rng.integers(0, 1 << 16, size=shape[0] * shape[1]).astype(dt.storage_dtype)  # bf16 bits
    dst = np.zeros_like(src)
    t0 = time.perf_counter()
    tiles = ref.run_tma_copy(src, dst, load, load_t, store, store_t, smem, TILE)
    seconds = time.perf_counter() - t0
    ok = bool(np.array_equal(src, dst))
    out(f"  cute_py.reference.run_tma_copy: {shape[0]}x{shape[1]} {DTYPE}, {tiles} tiles of {TILE[0]}x{TILE[1]} "
        f"(edge tiles clipped to the tensor), TMA load -> {SWIZZLE}-swizzled smem -> TMA store, "
        f"{1e3 * seconds:.0f} ms")
    out(f"  CPU reference: output == input bit-exactly: {ok}")
    return ok
