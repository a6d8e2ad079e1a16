"""What the pictures and tables show, computed once: grids of values, TV ownership, banks.

Everything here is plain data (no text, no SVG), so the text tables and the SVG
pictures agree by construction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..core.composed import as_position_independent_swizzle_layout, is_byte_swizzled
from ..errors import CuteTypeError, CuteValueError, RankError, StaticValueRequired
from ..core.normalise import is_static
from ..core.notation import fmt
from ..core.products import product
from ..core.layout import Layout
from ..core.modes import group_modes
from ..core.typing import Tiler

if TYPE_CHECKING:
    from ..core.composed import ComposedLayout
    from ..tensor.tensor import Tensor

__all__ = [
    "Grid",
    "grid_of",
    "format_value",
    "TvGrid",
    "tv_grid",
    "bank_of",
    "bank_stats",
]

# the largest grid a picture draws (a 256 x 256 layout); larger ones should be sliced first
MAX_CELLS = 1 << 16


class Grid:
    """A rows x cols grid of values ``value(m, n)`` of ``obj`` (after grouping modes; ``note`` says so)."""

    __slots__ = ("obj", "rows", "cols", "values", "note", "rank")

    def __init__(self, obj: Layout | ComposedLayout | Tensor, rows: int, cols: int, values: list[Any], note: str | None,
                 rank: int) -> None:
        self.obj, self.rows, self.cols, self.values, self.note, self.rank = obj, rows, cols, values, note, rank

    def value(self, m: int, n: int) -> Any:
        return self.values[m + self.rows * n]


def _rank(x):
    return len(x.shape) if type(x.shape) is tuple else 1


def _check_drawable(x, what):
    # a Layout, or a ComposedLayout or Tensor (both map their outer layout): a numpy array has a shape too
    kind_ok = type(x) is Layout or (hasattr(x, "__cute_map_outer__") and (hasattr(x, "outer") or hasattr(x, "engine")))
    shape = getattr(x, "shape", None) if kind_ok else None
    if shape is None or not hasattr(x, "__len__"):
        raise CuteTypeError(f"{what} needs a Layout, a ComposedLayout or a Tensor, got {x!r}")
    if not is_static(shape):
        raise StaticValueRequired(f"{what} needs a layout of static shape, got shape {fmt(shape)}")


def grid_of(x: Layout | ComposedLayout | Tensor, what: str = "print_layout", group: bool = True,
            max_cells: int = MAX_CELLS) -> Grid:
    """The grid of a layout-like ``x`` (Layout, ComposedLayout, Tensor).

    Rank 1 is one row; rank 2 is rows = size(mode 0), cols = size(mode 1); rank > 2
    is grouped to rank 2 with ``group_modes(x, 1, rank)`` when ``group`` is true
    (the note says so), and rejected otherwise with a hint to group the modes.
    """
    _check_drawable(x, what)
    if is_byte_swizzled(x):
        x = as_position_independent_swizzle_layout(x)  # a byte-swizzled layout: its element offsets
    r = _rank(x)
    note = None
    if r > 2:
        if not group:
            raise RankError(
                f"{what} needs a rank-2 layout (rows, columns), got the rank-{r} {x}; "
                f"group its modes first, e.g. group_modes(layout, 1, {r})"
            )
        orig = x
        x = group_modes(x, 1, r)
        note = f"rank {r} shown as rank 2: group_modes(layout, 1, {r}) = {_short(x, orig)}"
    if r <= 1:
        rows, cols = 1, product(x.shape)
    else:
        rows, cols = product(x.shape[0]), product(x.shape[1])
    if rows * cols > max_cells:
        raise CuteValueError(
            f"{what}: {x} has {rows} x {cols} = {rows * cols} cells, more than the {max_cells} a picture "
            f"draws; slice it first (e.g. layout((None, 0)) or zipped_divide and a tile)"
        )
    values = [x(i) for i in range(rows * cols)]
    return Grid(x, rows, cols, values, note, r)


def _short(x, orig):
    # a tensor prints with its engine; the note only needs the layout
    return getattr(x, "layout", x) if hasattr(orig, "engine") else x


def format_value(v: Any) -> str:
    """A short, exact label for a layout value or a tensor element."""
    if type(v) is int:
        return str(v)
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, float):
        return f"{v:.4g}"
    kind = getattr(getattr(v, "dtype", None), "kind", None)
    if kind in ("i", "u", "b"):
        return str(int(v))
    if kind == "f":
        return f"{float(v):.4g}"
    return fmt(v) if type(v) is tuple else str(v)


class TvGrid:
    """Ownership of the cells of an M x N tile by (thread, value) pairs of a TV layout."""

    __slots__ = ("rows", "cols", "owners", "num_threads", "num_values", "layout_tv", "tiler_mn")

    def __init__(self, rows: int, cols: int, owners: dict[tuple[int, int], list[tuple[int, int]]], num_threads: int,
                 num_values: int, layout_tv: Layout, tiler_mn: Tiler) -> None:
        self.rows, self.cols, self.owners = rows, cols, owners
        self.num_threads, self.num_values = num_threads, num_values
        self.layout_tv, self.tiler_mn = layout_tv, tiler_mn

    def owner_list(self, m: int, n: int) -> list[tuple[int, int]]:
        """Every (thread, value) that maps to cell (m, n), in (thread, value) order."""
        return self.owners.get((m, n), [])


def _tile_dims(tiler_mn, what):
    if type(tiler_mn) is int:
        return 1, tiler_mn
    if isinstance(tiler_mn, Layout):
        tiler_mn = tiler_mn.shape
    if type(tiler_mn) is not tuple or not 1 <= len(tiler_mn) <= 2 or not is_static(tiler_mn):
        raise RankError(f"{what} needs a static rank-1 or rank-2 tile (M, N), got {fmt(tiler_mn)}")
    if len(tiler_mn) == 1:
        return 1, product(tiler_mn[0])
    return product(tiler_mn[0]), product(tiler_mn[1])


def split_tv_args(a, b, what):
    """Accept ``(layout_tv, tiler_mn)`` in either order (``make_layout_tv`` returns ``(tiler, tv)``)."""
    if isinstance(b, Layout) and not isinstance(a, Layout):
        a, b = b, a
    if not isinstance(a, Layout):
        raise CuteTypeError(f"{what} needs a TV layout (a Layout: (thread, value) -> tile offset), got {a!r}")
    return a, b


def tv_grid(layout_tv: Layout | Tiler, tiler_mn: Tiler, what: str = "tv_svg", max_cells: int = MAX_CELLS) -> TvGrid:
    """Which (thread, value) owns each cell of the ``tiler_mn`` tile under ``layout_tv``.

    ``layout_tv`` maps (thread, value) to the column-major offset of a cell of the
    tile (as ``make_layout_tv`` and ``TiledCopy.get_layoutS_TV`` return it).
    """
    layout_tv, tiler_mn = split_tv_args(layout_tv, tiler_mn, what)
    if not is_static(layout_tv.shape):
        raise StaticValueRequired(f"{what} needs a TV layout of static shape, got {layout_tv}")
    if _rank(layout_tv) != 2:
        raise RankError(
            f"{what} needs a TV layout of rank 2 (thread, value), got the rank-{_rank(layout_tv)} {layout_tv}; "
            f"group its modes, e.g. group_modes(layout_tv, 1, {_rank(layout_tv)})"
        )
    rows, cols = _tile_dims(tiler_mn, what)
    if rows * cols > max_cells:
        raise CuteValueError(f"{what}: the {rows} x {cols} tile has more than the {max_cells} cells a picture draws")
    nt, nv = product(layout_tv.shape[0]), product(layout_tv.shape[1])
    owners = {}
    for v in range(nv):
        for t in range(nt):
            idx = layout_tv((t, v))
            if type(idx) is not int or not 0 <= idx < rows * cols:
                raise CuteValueError(
                    f"{what}: the TV layout {layout_tv} maps (thread {t}, value {v}) to {fmt(idx)}, outside the "
                    f"{rows} x {cols} tile {fmt(tiler_mn)}"
                )
            owners.setdefault((idx % rows, idx // rows), []).append((t, v))
    for lst in owners.values():
        lst.sort()
    return TvGrid(rows, cols, owners, nt, nv, layout_tv, tiler_mn)


def bank_of(offset: int, element_bits: int = 16) -> int:
    """The 4-byte shared-memory bank (0..31) of element ``offset`` of ``element_bits`` bits."""
    return (offset * element_bits // 8 // 4) % 32


def bank_stats(offsets: Iterable[int], element_bits: int = 16) -> tuple[int, int]:
    """``(distinct_banks, ways)`` of a set of element offsets accessed together.

    ``ways`` is the bank-conflict degree: the largest number of distinct 4-byte words
    that fall into one bank (1 means conflict-free; two elements in one word share it).
    """
    words = {o * element_bits // 32 for o in offsets}
    per_bank = {}
    for w in words:
        per_bank[w % 32] = per_bank.get(w % 32, 0) + 1
    return len(per_bank), max(per_bank.values(), default=0)
