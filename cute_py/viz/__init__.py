"""See your layout: CuTe-style text tables and SVG pictures (no plotting library needed).

Text (CuTe's ``print_layout`` style)::

    print_layout(layout)              # rows x columns of indices
    print_tensor(tensor)              # a tensor's pointer, layout and values, in the CuTe DSL's format
    format_tensor(tensor)             # a host tensor's values in the print_layout grid
    print_layout_tv(layout_tv, tile)  # T{thread}V{value} per tile cell

Pictures (:class:`Picture`: an SVG ``str`` with ``.save(path)``, shown by Jupyter)::

    layout_svg(layout)                       # one cell per element, labelled with its index
    tv_svg(layout_tv, tiler_mn)              # cells coloured by thread, labelled T3V1
    smem_banks_svg(smem_layout, bits=16)     # the 32 shared-memory banks and the conflicts
    tiled_copy_svg(tiled_copy)               # source and destination TV layouts side by side
    tma_svg(tma_atom, gmem, tile_coord)      # a TMA box over its gmem tensor, per multicast CTA
    to_svg(obj)                              # whichever of the above fits obj

``Layout``, ``ComposedLayout`` and ``TiledCopy`` display themselves in notebooks
through these (``_repr_svg_``).  The command line is ``python -m cute_py show``.
"""

from __future__ import annotations

from typing import Any

from ._model import bank_of, bank_stats
from ._svg import PALETTE, Picture, bank_color, thread_color
from .banks import bank_summary, smem_banks_svg
from .pictures import layout_svg, tiled_copy_svg, tv_svg
from .readings import swizzle_readings, swizzle_readings_svg
from .tensor_print import format_tensor_values, print_tensor
from .text import format_layout, format_layout_tv, format_tensor, print_layout, print_layout_tv
from .tma import tma_boxes, tma_svg

__all__ = [
    "swizzle_readings",
    "swizzle_readings_svg",
    "Picture",
    "PALETTE",
    "thread_color",
    "bank_color",
    "bank_of",
    "bank_stats",
    "bank_summary",
    "format_layout",
    "format_layout_tv",
    "format_tensor",
    "format_tensor_values",
    "print_layout",
    "print_layout_tv",
    "print_tensor",
    "layout_svg",
    "tv_svg",
    "smem_banks_svg",
    "tiled_copy_svg",
    "tma_svg",
    "tma_boxes",
    "to_svg",
    "repr_svg",
]

# notebooks: above this many cells an object shows a note saying so instead of its picture (a 64 x 64 picture is
# about 0.9 MB of SVG; 128 x 128 was 3.6 MB)
REPR_MAX_CELLS = 64 * 64


def to_svg(obj: Any, **kwargs: Any) -> Picture:
    """The natural picture of ``obj``: a TiledCopy, a TMA atom (with ``gmem=``), or a layout/tensor."""
    from ..atom import TiledCopy

    if isinstance(obj, TiledCopy):
        return tiled_copy_svg(obj, **kwargs)
    if hasattr(obj, "descriptor") and hasattr(obj, "smem_layout"):
        kwargs.pop("max_cells", None)  # a TMA picture draws boxes, not cells
        return tma_svg(obj, **kwargs)
    return layout_svg(obj, **kwargs)


def repr_svg(obj: Any) -> str | None:
    """Jupyter's ``_repr_svg_`` for cute_py objects: the picture; a one-line note with the text repr when it has
    more than ``REPR_MAX_CELLS`` cells (saying how to draw it anyway); ``None`` (the text repr) when it cannot be
    drawn at all (dynamic shapes, rank-3 TV layouts...)."""
    from ..errors import CuteError

    try:
        return str(to_svg(obj, max_cells=REPR_MAX_CELLS))
    except CuteError as e:
        if "cells, more than" not in str(e):
            return None
    from html import escape

    text = (f"{obj}: more cells than the {REPR_MAX_CELLS} drawn inline; cute_py.viz.to_svg(x, max_cells=...) "
            f"draws it (or slice it first)")
    width = 7 * len(text) + 20
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="28" data-cute-note="too-large">'
            f'<text x="10" y="19" font-family="monospace" font-size="12">{escape(text)}</text></svg>')
