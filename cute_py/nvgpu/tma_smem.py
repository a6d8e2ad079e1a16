"""Where a TMA tile lives in shared memory: the runs each instruction fills, and the rules they must keep.

A TMA instruction moves its box to (or from) consecutive shared-memory addresses, starting at a
128-byte aligned address (the hardware swizzles the address itself). A tile takes one
instruction per box: its elements must be exactly those runs -- aligned, not overlapping, and
sharing a smem element only where they are one gmem element too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.algebra import composition
from ..core.inverse import right_inverse
from ..core.basis import ScaledBasis, basis_get
from ..core.composed import SmemPtrFlag, get_nonswizzle_portion, smem_byte_swizzle
from ..errors import CuteError
from ..core.int_tuple import flatten
from ..core.notation import fmt
from ..core.products import product
from ..core.coalescing import coalesce
from ..core.layout import Layout
from ..core.tiling import logical_divide, tile_to_shape
from .tma import TmaError

if TYPE_CHECKING:
    from ..atom import CopyAtom
    from ..core.composed import ComposedLayout

__all__ = ["value_layout", "check_smem_instructions", "check_same_tile", "check_store_targets"]


def value_layout(smem_mode0: Layout | ComposedLayout, tile_size: int, box_values: int) -> Layout:
    """``(TMA, TMA_Iter)``: the tile's element indices in shared-memory order, by instruction.

    Mode 0 walks the ``box_values`` elements one TMA instruction moves (consecutive in shared
    memory), mode 1 the instructions of the tile.
    """
    inv = right_inverse(get_nonswizzle_portion(smem_mode0))
    layout_v = tile_to_shape(Layout((inv.shape,), (inv.stride,)), tile_size)
    return logical_divide(layout_v, Layout(box_values))


def check_smem_instructions(atom: CopyAtom, tile: Layout | ComposedLayout, cta_v_map: Layout,
                            gmem_layout: Layout) -> None:
    """Each TMA instruction of a tile moves ``box`` consecutive elements of shared memory starting at a
    128-byte aligned address: the tile's elements must be exactly those runs, with no overlap.

    ``cta_v_map`` maps the tile's element index to its gmem coordinate: two tile elements may share a smem
    element only where they are the same gmem element in every tile (a stride-0 gmem mode that the tile
    covers whole, as in CuTe's tests).
    """
    bits = atom.dtype.width
    box = atom.num_values
    outer = get_nonswizzle_portion(tile)
    offset = _element_offset(tile)
    where = f"the smem layout {tile} ({atom.dtype.name})"
    if type(offset) is not int:
        raise TmaError(f"{where} has a run-time offset; a TMA tile's offset must be static")
    _check_aliasing(outer, cta_v_map, gmem_layout, where)
    try:
        c = composition(outer, value_layout(tile, product(outer.shape), box))
        runs, starts = coalesce(c[0]), coalesce(c[1])
    except CuteError as e:
        raise TmaError(f"{where} cannot be cut into TMA instructions of {box} consecutive elements: {e}") from None
    if box > 1 and (runs.shape, runs.stride) != (box, 1):
        raise TmaError(f"{where}: a TMA instruction moves {box} elements to consecutive smem addresses, but in "
                       f"the tile they are at {runs} (tile elements in instruction order)")
    modes = [(s, d) for s, d in zip(_flat(starts.shape), _flat(starts.stride)) if s != 1 and d != 0]
    for s, d in modes:
        if d * bits % 1024:
            raise TmaError(f"{where}: consecutive TMA instructions of the tile start {d} elements = {d * bits / 8:g} "
                           f"bytes apart; each must start at a 128-byte aligned smem address")
    if offset * bits % 1024:
        raise TmaError(f"{where}: its offset of {offset} elements = {offset * bits / 8:g} bytes puts the TMA "
                       f"instructions at smem addresses that are not 128-byte aligned")
    reach = box
    for s, d in sorted(modes, key=lambda m: m[1]):
        if d < reach:
            raise TmaError(f"{where} is not injective: TMA instructions of {box} elements, {d} elements apart, "
                           f"overlap in shared memory (the instructions start at {starts})")
        reach += d * (s - 1)


def _check_aliasing(outer, cta_v_map, gmem_layout, where):
    # modes of the tile (refined to both layouts' mode boundaries) where smem repeats must repeat in gmem
    for s, d_smem, e in _common_modes(coalesce(outer), coalesce(cta_v_map)):
        if type(d_smem) is int and d_smem < 0 and s > 1:
            raise TmaError(f"{where} has a negative stride ({d_smem}); TMA fills smem in increasing addresses")
        if s == 1 or d_smem != 0:
            continue
        path = e.modes if isinstance(e, ScaledBasis) else ()
        g_stride = basis_get(ScaledBasis(1, path), gmem_layout.stride) if path else gmem_layout.stride
        g_extent = basis_get(ScaledBasis(1, path), gmem_layout.shape) if path else product(gmem_layout.shape)
        covered = product(tuple(m for m, b in zip(_flat(cta_v_map.shape), _flat(cta_v_map.stride))
                                if (b.modes if isinstance(b, ScaledBasis) else ()) == path))
        if not (type(g_stride) is int and g_stride == 0 and covered == g_extent):
            raise TmaError(f"{where} is not injective: {s} elements of the tile share one smem element (smem "
                           f"stride 0) but are not one gmem element in every tile (gmem mode {list(path)}: stride "
                           f"{fmt(g_stride)}, extent {fmt(g_extent)}, {fmt(covered)} in the tile)")


def check_store_targets(outer: Layout, cta_v_map: Layout, gmem_layout: Layout) -> None:
    """A plain TMA store writes each tile element to its gmem element: tile elements that share a gmem element
    (a stride-0 gmem mode) must share their smem element too, or whichever write lands last wins."""
    for s, d_smem, e in _common_modes(coalesce(outer), coalesce(cta_v_map)):
        path = e.modes if isinstance(e, ScaledBasis) else ()
        g_stride = basis_get(ScaledBasis(1, path), gmem_layout.stride) if path else gmem_layout.stride
        if s > 1 and type(g_stride) is int and g_stride == 0 and d_smem != 0:
            raise TmaError(f"the CTA tile covers {s} elements of a stride-0 (broadcast) gmem mode that hold different "
                           f"smem elements: a TMA store would write them all to one gmem element (use a reduction, "
                           f"or a smem layout with stride 0 there)")


def _common_modes(a, b):
    """``[(shape, stride in a, stride in b)]``: the flat modes of two layouts over one index space, each mode
    split where the other has a mode boundary (stops at the first boundary that does not divide)."""
    sa, da = list(_flat(a.shape)), list(_flat(a.stride))
    sb, db = list(_flat(b.shape)), list(_flat(b.stride))
    out = []
    while sa and sb:
        x, y = sa[0], sb[0]
        if type(x) is not int or type(y) is not int:
            break
        n = min(x, y)
        if max(x, y) % n:
            break
        out.append((n, da[0], db[0]))
        for s, d in ((sa, da), (sb, db)):
            if s[0] == n:
                s.pop(0)
                d.pop(0)
            else:
                s[0] //= n
                d[0] = d[0] * n
    return out


def _flat(x):
    f = flatten(x)
    return f if type(f) is tuple else (f,)


def _element_offset(layout):
    off = getattr(layout, "offset", 0)
    return off.offset if type(off) is SmemPtrFlag else off


def check_same_tile(atom: Any, smem_mode0: Layout | ComposedLayout) -> None:
    """The boxes were derived from the atom's smem layout: the tile they land in must be laid out the same way,
    with the same swizzle on byte addresses (a smem tensor whose byte swizzle differs from the descriptor's would
    put every element where the TMA does not)."""
    want, got = atom.smem_layout, smem_mode0
    bits = atom.dtype.width
    try:
        sw_want, sw_got = smem_byte_swizzle(want, bits), smem_byte_swizzle(got, bits)
    except CuteError as e:
        raise TmaError(f"tma_partition: the smem tile {got} does not fit the TMA atom: {e}") from None
    same = coalesce(get_nonswizzle_portion(want)) == coalesce(get_nonswizzle_portion(got))
    if not same:
        raise TmaError(f"tma_partition: the smem tile {got} is not laid out like the smem layout {want} the TMA atom "
                       f"was built for (its boxes follow that layout)")
    if sw_want != sw_got:
        raise TmaError(f"tma_partition: the smem tile {got} swizzles byte addresses with {sw_got}, the TMA "
                       f"descriptor with {sw_want} (from {want}): every element would land elsewhere")
    offset = _element_offset(got)
    if type(offset) is int and offset * atom.dtype.width % 1024:
        raise TmaError(f"tma_partition: the smem tile {got} starts {offset} elements into its buffer, which puts "
                       f"its TMA instructions at smem addresses that are not 128-byte aligned")
