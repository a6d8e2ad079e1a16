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

# notebooks: above this many cells, objects fall back to their text repr
REPR_MAX_CELLS = 128 * 128


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
    """Jupyter's ``_repr_svg_`` for cute_py objects: the picture, or ``None`` (text repr) when it
    cannot be drawn (dynamic shapes, more than ``REPR_MAX_CELLS`` cells, rank-3 TV layouts...)."""
    from ..errors import CuteError

    try:
        return str(to_svg(obj, max_cells=REPR_MAX_CELLS))
    except CuteError:
        return None
