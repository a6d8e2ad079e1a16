"""The shared-memory bank picture of a (swizzled) smem layout.

Each cell (m, n) is labelled with its element offset ``layout(m, n)`` and coloured
by its 4-byte bank ``(offset * bits // 8 // 4) % 32``.  Under the grid, each column
says how many ways its accesses conflict (the most distinct 4-byte words that
share one bank when the whole column is read at once); right of it, each row says
the same.  A heading sums it up, so a 128B-swizzled fp16 tile (``S<3,3,3> o 0 o
(8,64):(64,1)``: conflict-free columns) and its unswizzled twin (8-way column
conflicts) read differently at a glance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.composed import is_byte_swizzled, smem_element_layout
from ..errors import CuteTypeError, CuteValueError
from ..core.notation import fmt
from ._model import MAX_CELLS, bank_of, bank_stats, grid_of
from ._svg import WARN_COLOR, Canvas, bank_color, draw_grid, grid_style, header_margin
from .pictures import PAD, headings, text_width

if TYPE_CHECKING:
    from ..core.composed import ComposedLayout
    from ..core.layout import Layout
    from ._svg import Picture

__all__ = ["smem_banks_svg", "bank_summary"]


def _offsets_grid(layout, element_bits, what):
    if element_bits is None:  # a byte-swizzled layout knows its element width; 16 (fp16) otherwise
        element_bits = layout.offset.bits if is_byte_swizzled(layout) else 16
    if type(element_bits) is not int or element_bits <= 0:
        raise CuteValueError(f"{what}: element_bits must be a positive int (16 for fp16), got {element_bits!r}")
    if hasattr(layout, "inner") and hasattr(layout, "outer"):
        # the layout of a shared-memory tile: its swizzle as the hardware reads it for these elements
        layout = smem_element_layout(layout, element_bits)
    grid = grid_of(layout, what, group=False, max_cells=MAX_CELLS)
    for v in grid.values:
        if type(v) is not int or v < 0:
            raise CuteTypeError(f"{what} needs a layout of non-negative element offsets, got the value {fmt(v)} in {layout}")
    return grid, element_bits


def _stats(grid, element_bits):
    rows = [bank_stats([grid.value(m, n) for n in range(grid.cols)], element_bits) for m in range(grid.rows)]
    cols = [bank_stats([grid.value(m, n) for m in range(grid.rows)], element_bits) for n in range(grid.cols)]
    return rows, cols


def _sentence(kind, stats):
    distinct = sorted({d for d, _ in stats})
    worst = max(w for _, w in stats)
    span = f"{distinct[0]}" if len(distinct) == 1 else f"{distinct[0]}..{distinct[-1]}"
    verdict = "conflict-free" if worst <= 1 else f"worst {worst}-way bank conflict"
    return f"each {kind} hits {span} distinct banks: {verdict}"


def bank_summary(layout: Layout | ComposedLayout, element_bits: int | None = None) -> str:
    """Two sentences: the banks each row and each column of a rank-2 smem layout hit, and the worst conflict."""
    grid, element_bits = _offsets_grid(layout, element_bits, "bank_summary")
    rows, cols = _stats(grid, element_bits)
    return f"{_sentence('row', rows)}; {_sentence('column', cols)}"


def smem_banks_svg(layout: Layout | ComposedLayout, element_bits: int | None = None, *,
                   title: str | None = None) -> Picture:
    """An SVG picture of the 32 shared-memory banks a rank-2 smem layout's elements fall into.

    ``layout`` (a Layout or a swizzled ComposedLayout) maps (m, n) to an element
    offset; elements are ``element_bits`` wide (16 for fp16).  Cells are labelled
    with the offset and coloured by bank; per-row and per-column conflict degrees
    are written at the edges and summed up in the heading.
    """
    grid, element_bits = _offsets_grid(layout, element_bits, "smem_banks_svg")
    rows_st, cols_st = _stats(grid, element_bits)
    labels = [str(v) for v in grid.values]
    style = grid_style(grid.rows, grid.cols, max(len(s) for s in labels))
    canvas = Canvas()
    lines = [
        title or f"{layout}: shared-memory banks of {element_bits}-bit elements",
        f"bank = (offset * {element_bits} // 8 // 4) % 32; cell label = offset, colour = bank",
        _sentence("row", rows_st),
        _sentence("column", cols_st),
    ]
    top = headings(canvas, lines) + 16
    # the bank legend: 32 swatches
    sw = 18.0
    canvas.text(PAD, top + 10, "bank", size=10, anchor="start")
    for b in range(32):
        x = PAD + 34 + b * sw
        canvas.rect(x, top, sw, 14, bank_color(b), title=f"bank {b}", cls="legend", data={"bank": b})
        canvas.text(x + sw / 2, top + 10.5, b, size=8)
    top += 14 + 18 + 16
    left = PAD + header_margin(grid.rows, style)

    def cell(m, n):
        o = grid.value(m, n)
        b = bank_of(o, element_bits)
        byte = o * element_bits // 8
        title = f"(m={m}, n={n}) offset {o} (byte {byte}) bank {b}"
        return bank_color(b), labels[m + grid.rows * n], title, {"m": m, "n": n, "offset": o, "bank": b}

    w, h = draw_grid(canvas, left, top, grid.rows, grid.cols, cell, style)
    # conflict degrees: right of each row, under each column
    sf = min(10.0, style.cell_h * 0.7)
    for m, (d, ways) in enumerate(rows_st):
        canvas.text(left + w + 4, top + (m + 0.5) * style.cell_h + sf * 0.35, f"{ways}-way" if ways > 1 else "ok",
                    size=sf, anchor="start", cls="rowstat", color=WARN_COLOR if ways > 1 else None,
                    title=f"row {m}: {d} distinct banks, {ways}-way conflict")
    cf = min(10.0, style.cell_w * 0.45)
    show_every = 1 if style.cell_w >= 14 else max(1, int(14 // style.cell_w) + 1)
    for n, (d, ways) in enumerate(cols_st):
        if n % show_every:
            continue
        canvas.text(left + (n + 0.5) * style.cell_w, top + h + 12, f"{ways}" if ways > 1 else "ok", size=cf,
                    cls="colstat", color=WARN_COLOR if ways > 1 else None,
                    title=f"column {n}: {d} distinct banks, {ways}-way conflict")
    canvas.text(left, top + h + 28, "under each column / right of each row: bank-conflict ways of reading it at once",
                size=10, anchor="start")
    width = max(left + w + 60, text_width(lines), PAD + 34 + 32 * sw + PAD)
    return canvas.picture(width, top + h + 28 + PAD, lines[0])
