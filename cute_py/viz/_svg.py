"""A tiny SVG writer: the :class:`Picture` result type, the colour palettes and a grid drawer.

No plotting library: pictures are written as text.  Every cell is a ``<rect
class="cell">`` with a ``<title>`` child (the tooltip with the full information)
and ``data-*`` attributes (row, column and what the cell shows), so tools and
tests can read a picture back with ``xml.etree.ElementTree``.
"""

from __future__ import annotations

import colorsys
from collections.abc import Callable
from os import PathLike
from xml.sax.saxutils import escape, quoteattr

__all__ = [
    "Picture",
    "PALETTE",
    "thread_color",
    "bank_color",
    "Canvas",
    "GridStyle",
    "grid_style",
    "draw_grid",
]

# 16 pastel colours, distinct from each other and light enough for black text
PALETTE = (
    "#AFC8F0",  # blue
    "#FFC48A",  # orange
    "#A8E6A1",  # green
    "#FFA8A8",  # red
    "#D2B8F0",  # purple
    "#E6C9A8",  # brown
    "#F8BBDD",  # pink
    "#E2E29A",  # olive
    "#9EE0E8",  # cyan
    "#FFE08A",  # yellow
    "#B8C0FF",  # periwinkle
    "#8FD8B8",  # mint
    "#F0B0A0",  # salmon
    "#D8D0C0",  # stone
    "#E0B0F0",  # lavender
    "#C8DC8C",  # lime
)
EMPTY_FILL = "#F4F4F4"  # cells no (thread, value) owns
TEXT_COLOR = "#000000"
WARN_COLOR = "#C00000"

MAX_CANVAS = 4096.0  # px: the grid shrinks its cells to stay within this
MIN_FONT = 5.0  # px: below this, cell labels are dropped (the tooltips stay)


def thread_color(t: int) -> str:
    """The fill of thread ``t`` (the palette, cycling)."""
    return PALETTE[t % len(PALETTE)]


def _bank_palette():
    # 32 pastel hues in a scrambled order, so neighbouring banks look different
    out = []
    for b in range(32):
        hue = ((b * 13) % 32) / 32.0
        light = 0.80 if b % 2 == 0 else 0.72
        r, g, bl = colorsys.hls_to_rgb(hue, light, 0.70)
        out.append("#%02X%02X%02X" % (round(r * 255), round(g * 255), round(bl * 255)))
    return tuple(out)


BANK_PALETTE = _bank_palette()


def ramp_color(fraction: float) -> str:
    """The fill of a value at ``fraction`` (0..1) of a layout's range: light yellow through green to dark blue, so
    that a large layout reads as a gradient (its order) rather than as stripes of a cycling palette."""
    f = min(1.0, max(0.0, fraction))
    hue = (60 + 170 * f) / 360.0
    r, g, b = colorsys.hls_to_rgb(hue, 0.85 - 0.45 * f, 0.65)
    return "#%02X%02X%02X" % (round(r * 255), round(g * 255), round(b * 255))


def bank_color(bank: int) -> str:
    """The fill of shared-memory bank ``bank`` (0..31)."""
    return BANK_PALETTE[bank % 32]


class Picture(str):
    """An SVG document (a ``str``) that Jupyter displays as a picture.

    ``picture.save(path)`` writes it; ``str(picture)`` is the SVG text.
    """

    __slots__ = ()

    def _repr_svg_(self):
        return str(self)

    def save(self, path: str | PathLike[str]) -> str | PathLike[str]:
        """Write the SVG to ``path`` (``.svg``, or no extension); returns ``path``. Another extension is a
        ``CuteValueError``: the picture is SVG text, and a file named ``.png`` holding it would lie."""
        import os

        ext = os.path.splitext(os.fspath(path))[1].lower()
        if ext not in ("", ".svg"):
            from ..errors import CuteValueError

            raise CuteValueError(f"a picture is SVG: save it as .svg, not {ext} (for a PNG, convert the SVG, e.g. "
                                 f"rsvg-convert picture.svg -o picture.png)")
        with open(path, "w", encoding="utf-8") as f:
            f.write(self)
        return path

    def __repr__(self):
        return f"<Picture: SVG, {len(self)} characters; .save(path) writes it>"


def _n(x):
    # compact number formatting for coordinates
    r = round(x, 1)
    return str(int(r)) if r == int(r) else str(r)


class Canvas:
    """Accumulates SVG elements; ``picture(width, height, title)`` closes the document."""

    def __init__(self) -> None:
        self.parts = []

    def add(self, text: str) -> None:
        self.parts.append(text)

    def text(self, x: float, y: float, s: object, size: float = 12.0, cls: str | None = None, anchor: str = "middle",
             color: str | None = None, bold: bool = False, title: object = None) -> None:
        attrs = f'x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}"'
        classes = [cls] if cls else []
        if anchor != "middle":
            classes.append(anchor[0])  # .e (end) / .s (start) in the style sheet
        if classes:
            attrs += f' class="{" ".join(classes)}"'
        if color:
            attrs += f' fill="{color}"'
        if bold:
            attrs += ' font-weight="bold"'
        inner = escape(str(s))
        if title is not None:
            inner = f"{inner}<title>{escape(str(title))}</title>"
        self.add(f"<text {attrs}>{inner}</text>")

    def rect(self, x: float, y: float, w: float, h: float, fill: str, title: object = None, cls: str | None = None,
             data: dict[str, object] | None = None, stroke: str | None = None, stroke_width: float | None = None,
             opacity: float | None = None) -> None:
        attrs = f'x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" fill="{fill}"'
        if cls:
            attrs += f' class="{cls}"'
        if stroke:
            attrs += f' stroke="{stroke}"'
        if stroke_width is not None:
            attrs += f' stroke-width="{_n(stroke_width)}"'
        if opacity is not None:
            attrs += f' fill-opacity="{opacity}"'
        for k, v in (data or {}).items():
            attrs += f" data-{k}={quoteattr(str(v))}"
        if title is None:
            self.add(f"<rect {attrs}/>")
        else:
            self.add(f"<rect {attrs}><title>{escape(str(title))}</title></rect>")

    def line(self, x1: float, y1: float, x2: float, y2: float, color: str = "#333333", width: float = 1.0) -> None:
        self.add(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" stroke="{color}" '
                 f'stroke-width="{_n(width)}"/>')

    def picture(self, width: float, height: float, title: object) -> Picture:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" height="{_n(height)}" '
            f'viewBox="0 0 {_n(width)} {_n(height)}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace">'
            f"<title>{escape(str(title))}</title>"
            "<style>text{text-anchor:middle}.e{text-anchor:end}.s{text-anchor:start}"
            ".cell{stroke:#555;stroke-width:0.5}</style>"
            f'<rect width="100%" height="100%" fill="#FFFFFF"/>'
        )
        return Picture(head + "".join(self.parts) + "</svg>")


class GridStyle:
    """Cell geometry and label font size for a rows x cols grid of labels."""

    __slots__ = ("cell_w", "cell_h", "font", "labels", "head_every_r", "head_every_c", "head_font")

    def __init__(self, cell_w: float, cell_h: float, font: float, labels: bool, head_every_r: int, head_every_c: int,
                 head_font: float) -> None:
        self.cell_w, self.cell_h, self.font, self.labels = cell_w, cell_h, font, labels
        self.head_every_r, self.head_every_c, self.head_font = head_every_r, head_every_c, head_font


def _every(cell, chars, font):
    # show every k-th header index so that header labels do not overlap
    need = chars * font * 0.62 + 2
    k = 1
    while k * cell < need:
        k *= 2
    return k


def grid_style(rows: int, cols: int, max_label_chars: int, max_canvas: float = MAX_CANVAS) -> GridStyle:
    """Choose cell sizes so a rows x cols grid fits ``max_canvas`` px; drop labels that would be too small."""
    font = 11.0
    pref_w = max(2.5, max_label_chars * 0.62) * font + 8
    pref_h = font * 1.9
    cell_w = min(pref_w, max_canvas / max(cols, 1))
    cell_h = min(pref_h, max_canvas / max(rows, 1))
    # keep cells roughly square when they had to shrink
    cell_w = max(cell_w, min(cell_h, pref_w))
    font = min(font, (cell_w - 3) / (max(max_label_chars, 1) * 0.62), (cell_h - 2) * 0.72)
    labels = font >= MIN_FONT
    head_font = 10.0
    return GridStyle(cell_w, cell_h, font, labels,
                     _every(cell_h, 1, head_font * 1.2), _every(cell_w, len(str(cols - 1)), head_font), head_font)


def draw_grid(canvas: Canvas, x0: float, y0: float, rows: int, cols: int,
              cell: Callable[[int, int], tuple[str, object, object, dict[str, object] | None]],
              style: GridStyle) -> tuple[float, float]:
    """Draw a rows x cols grid at (x0, y0): ``cell(m, n) -> (fill, label, title, data)``.

    Row indices go on the left, column indices on top (every k-th when cells are small).
    Returns the grid's (width, height), headers excluded.
    """
    cw, ch = style.cell_w, style.cell_h
    hf = style.head_font
    for n in range(0, cols, style.head_every_c):
        canvas.text(x0 + (n + 0.5) * cw, y0 - 4, n, size=hf, cls="head", color="#444444")
    for m in range(0, rows, style.head_every_r):
        canvas.text(x0 - 4, y0 + (m + 0.5) * ch + hf * 0.35, m, size=hf, cls="head", anchor="end",
                    color="#444444")
    labels = []
    for m in range(rows):
        y = y0 + m * ch
        for n in range(cols):
            fill, label, title, data = cell(m, n)
            x = x0 + n * cw
            canvas.rect(x, y, cw, ch, fill, title=title, cls="cell", data=data)
            if style.labels and label is not None:
                labels.append(f'<text x="{_n(x + cw / 2)}" y="{_n(y + ch / 2 + style.font * 0.35)}">'
                              f"{escape(str(label))}</text>")
    if labels:
        canvas.add(f'<g class="labels" font-size="{_n(style.font)}">' + "".join(labels) + "</g>")
    return cols * cw, rows * ch


def header_margin(rows, style):
    """Left margin for the row indices of a grid."""
    return len(str(max(rows - 1, 0))) * style.head_font * 0.62 + 10
