"""SVG pictures of layouts, TV layouts and tiled copies.

* :func:`layout_svg` — a grid of cells, row ``m`` and column ``n`` labelled with
  ``layout(m, n)`` and coloured by ``layout(m, n) % 8``;
* :func:`tv_svg` — the cells of a tile coloured by the thread that owns them and
  labelled ``T{t}V{v}`` (CuTe's ``print_latex_tv``);
* :func:`tiled_copy_svg` — a :class:`~cute_py.atom.TiledCopy`'s source and
  destination TV layouts side by side.

Each cell has a ``<title>`` tooltip with its full coordinates and value, so the
picture stays usable when the cells are too small for labels (a 128 x 128 layout).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import CuteTypeError
from ..core.coords import idx2crd
from ..core.notation import fmt
from ..core.typing import Tiler
from ._model import MAX_CELLS, format_value, grid_of, tv_grid
from ._svg import EMPTY_FILL, PALETTE, Canvas, draw_grid, grid_style, header_margin, ramp_color, thread_color
from .text import tv_label

if TYPE_CHECKING:
    from ..atom import TiledCopy
    from ..core.composed import ComposedLayout
    from ..core.layout import Layout
    from ..tensor.tensor import Tensor
    from ._svg import Picture

__all__ = ["layout_svg", "tv_svg", "tiled_copy_svg"]

LINE = 17.0  # px per heading line
PAD = 10.0

RAMP_CELLS = 256  # more cells than this (a 16 x 16 tile): colour by a ramp over the values, not value % 8


def text_width(lines):
    """Width in px the heading lines need (13 px bold first line, 11 px others, monospace)."""
    return max(len(s) * (13 if i == 0 else 11) * 0.62 for i, s in enumerate(lines)) + 2 * PAD


def headings(canvas, lines, x=PAD):
    y = PAD
    for i, line in enumerate(lines):
        y += LINE
        canvas.text(x, y - 4, line, size=13 if i == 0 else 11, anchor="start", bold=(i == 0))
    return y


def layout_svg(layout: Layout | ComposedLayout | Tensor, *, title: str | None = None,
               max_cells: int = MAX_CELLS) -> Picture:
    """An SVG picture of a layout (or composed layout, or host tensor): one cell per element.

    Cell (m, n) shows ``layout(m, n)``; its fill is ``PALETTE[layout(m, n) % 8]`` (CuTe's colouring), or, with
    more than ``RAMP_CELLS`` cells, a colour ramp over the layout's values from the smallest to the largest
    (``ramp_color``), which a large layout shows as a gradient of its order where ``% 8`` would stripe.
    Non-integer values, such as TMA coordinates, use the first colour. Rank 1 is one row and rank > 2 is grouped
    to rank 2, as in :func:`print_layout`.
    """
    grid = grid_of(layout, "layout_svg", max_cells=max_cells)
    shape0 = grid.obj.shape if grid.rank > 1 else None
    labels = [format_value(v) for v in grid.values]
    style = grid_style(grid.rows, grid.cols, max(len(s) for s in labels))
    canvas = Canvas()
    lines = [title or str(layout)]
    if grid.note:
        lines.append(grid.note)
    ints = [v for v in grid.values if type(v) is int]
    ramp = len(grid.values) > RAMP_CELLS and ints
    lo, hi = (min(ints), max(ints)) if ramp else (0, 0)
    lines.append("cell (m, n) = layout(m, n); " + (f"colour = value, light ({lo}) to dark ({hi})" if ramp
                                                     else "colour = value % 8"))
    top = headings(canvas, lines) + 16
    left = PAD + header_margin(grid.rows, style)

    def cell(m, n):
        i = m + grid.rows * n
        v = grid.values[i]
        if shape0 is not None:
            crd = f"({fmt(idx2crd(m, shape0[0]))},{fmt(idx2crd(n, shape0[1]))})"
        else:
            crd = fmt(idx2crd(n, grid.obj.shape))
        if type(v) is not int:
            fill = PALETTE[0]
        elif ramp:
            fill = ramp_color((v - lo) / (hi - lo) if hi > lo else 0.0)
        else:
            fill = PALETTE[v % 8]
        return fill, labels[i], f"(m={m}, n={n}) coord {crd} -> {labels[i]}", {"m": m, "n": n, "value": labels[i]}

    w, h = draw_grid(canvas, left, top, grid.rows, grid.cols, cell, style)
    width = max(left + w + PAD, text_width(lines))
    return canvas.picture(width, top + h + PAD, lines[0])


def _tv_cell(g):
    def cell(m, n):
        own = g.owner_list(m, n)
        base = {"m": m, "n": n}
        if not own:
            return EMPTY_FILL, None, f"(m={m}, n={n}): owned by no thread", dict(base, thread=-1, value=-1)
        t, v = own[0]
        label = tv_label(t, v) + ("*" if len(own) > 1 else "")
        names = ", ".join(tv_label(*o) for o in own)
        title = f"(m={m}, n={n}) offset {m + g.rows * n}: {names}"
        data = dict(base, thread=t, value=v)
        if len(own) > 1:
            data["owners"] = len(own)
        return thread_color(t), label, title, data

    return cell


def _tv_max_label(g):
    return len(tv_label(g.num_threads - 1, g.num_values - 1)) + 1


def _tv_lines(g):
    return [
        f"TV layout {g.layout_tv} over the tile {fmt(g.tiler_mn)}",
        f"{g.num_threads} threads x {g.num_values} values; cell = T(thread)V(value), colour = thread "
        f"(mod {len(PALETTE)}); * = owned more than once",
    ]


def tv_svg(layout_tv: Layout | Tiler, tiler_mn: Tiler, *, title: str | None = None,
           max_cells: int = MAX_CELLS) -> Picture:
    """An SVG picture of a TV layout over its ``tiler_mn`` tile: cells coloured by thread, labelled ``T{t}V{v}``.

    ``layout_tv`` maps (thread, value) to the column-major offset of a tile cell, as
    ``make_layout_tv(thr, val)`` returns it (the two arguments are accepted in
    either order, so ``tv_svg(*make_layout_tv(thr, val))`` works).
    """
    g = tv_grid(layout_tv, tiler_mn, "tv_svg", max_cells=max_cells)
    style = grid_style(g.rows, g.cols, _tv_max_label(g))
    canvas = Canvas()
    lines = ([title] if title else []) + _tv_lines(g)
    top = headings(canvas, lines) + 16
    left = PAD + header_margin(g.rows, style)
    w, h = draw_grid(canvas, left, top, g.rows, g.cols, _tv_cell(g), style)
    width = max(left + w + PAD, text_width(lines))
    return canvas.picture(width, top + h + PAD, lines[0])


def tiled_copy_svg(tiled_copy: TiledCopy, *, max_cells: int = MAX_CELLS) -> Picture:
    """An SVG picture of a :class:`~cute_py.atom.TiledCopy`: source and destination TV layouts side by side.

    The left panel is ``get_layoutS_TV()``, the right one ``get_layoutD_TV()``, both
    over ``tiler_mn``; each cell is labelled ``T{t}V{v}`` and coloured by thread.
    """
    from ..atom import TiledCopy

    if not isinstance(tiled_copy, TiledCopy):
        raise CuteTypeError(f"tiled_copy_svg needs a TiledCopy, got {tiled_copy!r}")
    gs = tv_grid(tiled_copy.get_layoutS_TV(), tiled_copy.tiler_mn, "tiled_copy_svg", max_cells=max_cells)
    gd = tv_grid(tiled_copy.get_layoutD_TV(), tiled_copy.tiler_mn, "tiled_copy_svg", max_cells=max_cells)
    style = grid_style(gs.rows, gs.cols, max(_tv_max_label(gs), _tv_max_label(gd)), max_canvas=2048.0)
    atom = tiled_copy.atom
    canvas = Canvas()
    lines = [
        f"TiledCopy of {type(atom.op).__name__} ({atom.dtype.name}, {atom.num_bits} bits per instruction): "
        f"{tiled_copy.size} threads over the tile {fmt(tiled_copy.tiler_mn)}",
        f"layout_tv {tiled_copy.layout_tv}; cell = T(thread)V(value), colour = thread (mod {len(PALETTE)})",
    ]
    top = headings(canvas, lines) + LINE + 16
    margin = header_margin(gs.rows, style)
    x = PAD + margin
    width = 0.0
    for side, g, name in (("S", gs, "source: get_layoutS_TV()"), ("D", gd, "destination: get_layoutD_TV()")):
        canvas.text(x, top - 16 - 6, f"{name} = {g.layout_tv}", size=11, anchor="start", bold=True)
        base = _tv_cell(g)

        def cell(m, n, base=base, side=side):
            fill, label, title, data = base(m, n)
            return fill, label, f"{side}: {title}", dict(data, side=side)

        w, h = draw_grid(canvas, x, top, g.rows, g.cols, cell, style)
        width = x + w
        x += w + 2 * PAD + margin + 20
    width = max(width + PAD, text_width(lines))
    return canvas.picture(width, top + h + PAD, lines[0])
