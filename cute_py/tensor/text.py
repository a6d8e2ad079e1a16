"""The CuTe DSL's text of a tensor's values, given a function that renders one element: rows are mode 0,
columns mode 1, each further mode an outer level (the last mode outermost), as numpy nests them; a rank-1
tensor is one element per line; the verbose form is one ``(coordinate)=value`` line per element, the last mode
fastest.  Shared by the host's ``print_tensor`` and the kernel's (which renders elements as printf formats)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from ..core.notation import fmt

__all__ = ["values_text"]

INDENT = 7


def _nested(sizes, cell):
    order = list(range(len(sizes) - 1, 1, -1))  # the outer levels: the last mode first

    def level(depth, fixed):
        indent = " " * (INDENT + depth + 1)
        if depth == len(order):  # the matrix of modes 0 and 1
            rows = ["[" + ", ".join(cell((i, j) + tuple(fixed)) for j in range(sizes[1])) + ", ]"
                    for i in range(sizes[0])]
            return "[" + (",\n" + indent).join(rows) + "]"
        mode = order[depth]
        sep = ",\n" + "\n" * (len(order) - depth) + indent
        parts = []
        for k in range(sizes[mode]):
            f = list(fixed)
            f[mode - 2] = k
            parts.append(level(depth + 1, f))
        return "[" + sep.join(parts) + "]"

    return " " * INDENT + level(0, [0] * (len(sizes) - 2)) + ")"


def values_text(sizes: tuple[int, ...], cell: Callable[[tuple[int, ...]], str], verbose: bool = False) -> str:
    """The text after ``data=`` of a tensor whose modes have ``sizes`` elements; ``cell(coordinate)`` renders
    one element (called once per element, in the order the text shows them)."""
    if verbose:
        lines = [f"\t{fmt(c if len(c) > 1 else c[0])}={cell(c)}"
                 for c in itertools.product(*(range(n) for n in sizes))]
        return " (\n" + "\n".join(lines) + "\n)"
    if len(sizes) == 1:
        rows = [f"[{cell((i,))}, ]" for i in range(sizes[0])]
        return "\n" + " " * INDENT + (",\n" + " " * INDENT).join(rows) + ")"
    return "\n" + _nested(sizes, cell)
