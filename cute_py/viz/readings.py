"""The two readings of a swizzle over shared memory, side by side.

A swizzle ``S<b,m,s>`` composed with a layout of ``bits``-bit elements can act on byte addresses (what the
hardware does for TMA and GMMA, and what a flagged layout, ``S o smem_ptr[16b](unset) o L``, states) or on
element offsets (what a bare composed layout, ``S o 0 o L``, evaluates to). :func:`swizzle_readings_svg`
draws where each element of the tile lands, in bytes, under both readings, and marks the elements they put
in different places.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.composed import ComposedLayout, SmemPtrFlag, smem_element_layout
from ..errors import CuteTypeError, CuteValueError
from ..core.layout import Layout
from ..core.swizzle import Swizzle
from ._model import grid_of
from ._svg import PALETTE, WARN_COLOR, Canvas, draw_grid, grid_style, header_margin
from .pictures import PAD, headings, text_width

if TYPE_CHECKING:
    from ._svg import Picture

__all__ = ["swizzle_readings", "swizzle_readings_svg"]


def swizzle_readings(swizzle: Swizzle, outer: Layout, element_bits: int) -> tuple[list[int], list[int]]:
    """``(bytes, elements)``: the byte address of each element of ``outer`` (column-major over its grid) when
    ``swizzle`` acts on byte addresses, and when it acts on element offsets."""
    if type(swizzle) is not Swizzle or type(outer) is not Layout:
        raise CuteTypeError(f"swizzle_readings takes a Swizzle and a Layout, got {swizzle!r}, {outer!r}")
    if type(element_bits) is not int or element_bits < 8 or element_bits % 8:
        raise CuteValueError(f"element_bits must be a whole number of bytes (8, 16, 32, 64), got {element_bits!r}")
    eb = element_bits // 8
    as_bytes = smem_element_layout(ComposedLayout(swizzle, SmemPtrFlag(element_bits), outer), element_bits)
    as_elements = ComposedLayout(swizzle, 0, outer)
    by_bytes = [v * eb for v in grid_of(as_bytes, "swizzle_readings", group=False).values]
    by_elements = [v * eb for v in grid_of(as_elements, "swizzle_readings", group=False).values]
    return by_bytes, by_elements


def swizzle_readings_svg(swizzle: Swizzle, outer: Layout, element_bits: int = 16, *,
                         title: str | None = None) -> Picture:
    """Two grids over the tile of ``outer``: each element's byte address with ``swizzle`` read on bytes (left)
    and on elements (right); elements the readings place differently are outlined in red on the right."""
    by_bytes, by_elements = swizzle_readings(swizzle, outer, element_bits)
    grid = grid_of(outer, "swizzle_readings_svg", group=False)
    rows, cols = grid.rows, grid.cols
    differ = sum(a != b for a, b in zip(by_bytes, by_elements))
    lines = [title or f"{swizzle} over {outer}, {element_bits}-bit elements: byte address of each element",
             f"left: {swizzle} on byte addresses (TMA, GMMA; {swizzle} o smem_ptr[{element_bits}b](unset) o ...)",
             f"right: {swizzle} on element offsets ({swizzle} o 0 o ... evaluated); {differ} of {rows * cols} "
             f"elements land elsewhere (outlined)"]
    labels = [str(v) for v in by_bytes + by_elements]
    style = grid_style(rows, 2 * cols, max(len(s) for s in labels))
    canvas = Canvas()
    top = headings(canvas, lines) + 16
    left = PAD + header_margin(rows, style)

    def cells(values, other, reading):
        def cell(m, n):
            i = m + rows * n
            v = values[i]
            fill = PALETTE[(v // 16) % 8]  # colour = 16-byte chunk, the unit the hardware swizzle permutes
            data = {"m": m, "n": n, "byte": v, "differs": int(v != other[i]), "reading": reading}
            return fill, str(v), f"(m={m}, n={n}) at byte {v}" + (" (differs)" if v != other[i] else ""), data
        return cell

    w, h = draw_grid(canvas, left, top, rows, cols, cells(by_bytes, by_elements, "bytes"), style)
    left2 = left + w + 2 * PAD + header_margin(rows, style)
    w2, _ = draw_grid(canvas, left2, top, rows, cols, cells(by_elements, by_bytes, "elements"), style)
    for m in range(rows):
        for n in range(cols):
            if by_bytes[m + rows * n] != by_elements[m + rows * n]:
                canvas.rect(left2 + n * style.cell_w, top + m * style.cell_h, style.cell_w, style.cell_h, "none",
                            stroke=WARN_COLOR, stroke_width=1.5)
    width = max(left2 + w2 + PAD, text_width(lines))
    return canvas.picture(width, top + h + PAD, lines[0])
