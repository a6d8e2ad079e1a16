"""Text tables in the style of CuTe's ``print_layout``: column indices, ``+----+`` separators, rows.

::

    >>> print_layout(Layout((2, 3), (3, 1)))
    (2,3):(3,1)
          0   1   2
        +---+---+---+
     0  | 0 | 1 | 2 |
        +---+---+---+
     1  | 3 | 4 | 5 |
        +---+---+---+

A rank-1 layout is one row; a layout of rank > 2 is grouped to rank 2
(``group_modes(layout, 1, rank)``) and the table says so.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from ..errors import CuteValueError
from ..core.notation import fmt
from ..core.typing import Tiler
from ._model import format_value, grid_of, tv_grid

if TYPE_CHECKING:
    from ..core.composed import ComposedLayout
    from ..core.layout import Layout
    from ..tensor.tensor import Tensor

__all__ = [
    "format_layout",
    "print_layout",
    "format_tensor",
    "format_layout_tv",
    "print_layout_tv",
    "format_table",
]


def format_table(rows: int, cols: int, label: Callable[[int, int], str]) -> str:
    """The CuTe-style table of ``label(m, n)`` (strings) for an ``rows x cols`` grid."""
    cells = [[label(m, n) for n in range(cols)] for m in range(rows)]
    w = max([len(s) for row in cells for s in row] + [len(str(cols - 1)), 1])
    rw = max(2, len(str(rows - 1)))
    margin = " " * (rw + 2)
    sep = margin + ("+" + "-" * (w + 2)) * cols + "+"
    lines = [margin + "".join("  " + str(n).rjust(w) + " " for n in range(cols)).rstrip()]
    for m, row in enumerate(cells):
        lines.append(sep)
        lines.append(str(m).rjust(rw) + "  " + "".join("| " + s.rjust(w) + " " for s in row) + "|")
    lines.append(sep)
    return "\n".join(lines)


def _grid_text(grid, title):
    head = [title] + ([f"({grid.note})"] if grid.note else [])
    table = format_table(grid.rows, grid.cols, lambda m, n: format_value(grid.value(m, n)))
    return "\n".join(head + [table])


def format_layout(layout: Layout | ComposedLayout) -> str:
    """The text table of a layout (or composed layout): row ``m``, column ``n`` shows ``layout(m, n)``."""
    grid = grid_of(layout, "print_layout")
    return _grid_text(grid, str(layout))


def print_layout(layout: Layout | ComposedLayout, file: TextIO | None = None) -> None:
    """Print the CuTe-style table of ``layout`` (rows x columns of indices; see :func:`format_layout`)."""
    print(format_layout(layout), file=file if file is not None else sys.stdout)


def format_tensor(tensor: Tensor) -> str:
    """The text table of a host tensor's values (over a numpy array or coordinates)."""
    from ..tensor.pointer import Pointer
    from ..tensor.tensor import Tensor

    if not isinstance(tensor, Tensor):
        raise CuteValueError(f"print_tensor needs a Tensor, got {tensor!r}; use print_layout for layouts")
    if isinstance(tensor.engine, Pointer):
        raise CuteValueError(
            f"print_tensor needs a host tensor (over a numpy array or coordinates); {tensor} is over a "
            f"{tensor.engine.memspace.name} pointer and cannot be read here: print_layout(tensor.layout) shows its offsets"
        )
    grid = grid_of(tensor, "print_tensor")
    return _grid_text(grid, str(tensor))


def tv_label(t, v):
    return f"T{t}V{v}"


def format_layout_tv(layout_tv: Layout | Tiler, tiler_mn: Tiler) -> str:
    """The ``tiler_mn`` tile as a table of ``T{thread}V{value}`` (``*`` marks cells owned several times)."""
    g = tv_grid(layout_tv, tiler_mn, "print_layout_tv")

    def label(m, n):
        own = g.owner_list(m, n)
        if not own:
            return "."
        return tv_label(*own[0]) + ("*" if len(own) > 1 else "")

    head = f"{g.layout_tv} over the tile {fmt(g.tiler_mn)}: {g.num_threads} threads x {g.num_values} values"
    return head + "\n" + format_table(g.rows, g.cols, label)


def print_layout_tv(layout_tv: Layout | Tiler, tiler_mn: Tiler, file: TextIO | None = None) -> None:
    """Print which thread and value own each cell of the tile (see :func:`format_layout_tv`)."""
    print(format_layout_tv(layout_tv, tiler_mn), file=file if file is not None else sys.stdout)
