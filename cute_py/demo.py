"""A short tour of the layout algebra, printed by ``python -m cute_py demo``."""

from . import (
    Layout,
    blocked_product,
    coalesce,
    complement,
    composition,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    raked_product,
    right_inverse,
    size,
    tile_to_shape,
    zipped_divide,
)

__all__ = ["tour"]


def _table(layout):
    rows, cols = layout.shape
    width = max(len(str(layout((r, c)))) for r in range(rows) for c in range(cols))
    lines = []
    for r in range(rows):
        lines.append("    " + " ".join(str(layout((r, c))).rjust(width) for c in range(cols)))
    return "\n".join(lines)


def tour(out=print):
    """Print a tour of layouts and their algebra, checking each law it shows."""
    out("cute_py: CuTe layouts in pure Python\n")

    a = Layout((4, (2, 8)), (2, (1, 8)))
    out(f"A layout maps coordinates to offsets:  A = {a}")
    out(f"  A(5) = {a(5)},  A((1,(1,3))) = {a((1, (1, 3)))},  A((None,(1,None))) = {a((None, (1, None)))}")
    out(f"  coalesce(A) = {coalesce(a)}\n")

    row = make_layout((4, 6), stride=(6, 1))
    out(f"A 4x6 row-major layout {row}:")
    out(_table(row) + "\n")

    x, y = Layout((6, 2), (8, 2)), Layout((4, 3), (3, 1))
    r = composition(x, y)
    ok = all(r(i) == x(y(i)) for i in range(size(y)))
    out(f"composition({x}, {y}) = {r}   [R(i) == A(B(i)) for all i: {ok}]")
    c = complement(Layout((2, 2), (1, 6)), 24)
    out(f"complement((2,2):(1,6), 24) = {c}")
    inv = right_inverse(Layout((4, 8), (1, 5)))
    out(f"right_inverse((4,8):(1,5)) = {inv};  left_inverse((2,4):(4,1)) = {left_inverse(Layout((2, 4), (4, 1)))}\n")

    gmem = Layout((128, 128), (128, 1))
    out(f"Tiling a 128x128 row-major tensor {gmem} by (64,32):")
    out(f"  logical_divide = {logical_divide(gmem, (64, 32))}")
    out(f"  zipped_divide  = {zipped_divide(gmem, (64, 32))}\n")

    block, tiles = Layout((2, 5), (5, 1)), Layout((3, 4), (1, 3))
    out(f"Products of a 2x5 block {block} over 3x4 tiles {tiles}:")
    out(f"  logical_product((2,2):(4,1), 6:1) = {logical_product(Layout((2, 2), (4, 1)), Layout(6, 1))}")
    out(f"  blocked_product = {blocked_product(block, tiles)}")
    out(f"  raked_product   = {raked_product(block, tiles)}")
    out(f"  tile_to_shape((8,8):(8,1), (32,64)) = {tile_to_shape(Layout((8, 8), (8, 1)), (32, 64))}\n")

    out("Try it:  python -c \"import cute_py as cute; print(cute.composition(cute.Layout((6,2),(8,2)), 4))\"")
