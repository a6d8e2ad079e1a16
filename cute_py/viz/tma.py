"""The TMA picture: a gmem tensor's tile grid, one CTA tile, and the boxes each multicast CTA loads.

The boxes are not re-derived here: the picture partitions an identity tensor of the
gmem shape with the atom's own :func:`~cute_py.nvgpu.cpasync.tma_partition`, once
per multicast CTA, and draws the gmem coordinates each CTA's instructions cover.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import CuteTypeError, CuteValueError, RankError
from ..core.normalise import as_int_tuple
from ..core.notation import fmt
from ..core.products import product, product_each
from ..core.layout import Layout
from ..core.modes import group_modes
from ..core.typing import Coord, Shape
from ._svg import PALETTE, Canvas
from .pictures import PAD, headings, text_width

if TYPE_CHECKING:
    from ..nvgpu.tma.atom import TmaCopyAtom
    from ..tensor.tensor import Tensor
    from ._svg import Picture

__all__ = ["tma_svg", "tma_boxes"]


def _gmem_shape(gmem):
    shape = getattr(gmem, "shape", gmem)
    shape = as_int_tuple(shape, "gmem shape")
    shape = product_each(shape) if type(shape) is tuple else (shape,)
    if not 1 <= len(shape) <= 2:
        raise RankError(
            f"tma_svg draws rank-1 or rank-2 gmem tensors, got shape {fmt(shape)}; slice or group the other modes "
            f"first (e.g. group_modes(tensor, 1, {len(shape)}))"
        )
    return shape


def tma_boxes(atom: TmaCopyAtom, gmem: Tensor | Shape, tile_coord: Coord | None = None,
              cta_tiler: Shape | None = None) -> tuple[tuple[int, ...], tuple[int, ...],
                                                       list[tuple[int, int, tuple[int, int], tuple[int, int]]]]:
    """The gmem rectangles each multicast CTA's TMA instructions load for one CTA tile.

    Returns ``(tile_origin, tile_shape, boxes)`` where ``boxes`` lists
    ``(cta, instruction, (m0, m1), (n0, n1))`` half-open ranges of gmem coordinates
    (for a rank-1 tensor, m is always ``(0, 1)``).  Computed with ``tma_partition``
    on an identity tensor of the gmem shape.
    """
    from ..tensor.pointer import AddressSpace, Pointer
    from ..tensor.tensor import make_identity_tensor, make_tensor
    from ..tensor.partition import local_tile

    desc = getattr(atom, "descriptor", None)
    if desc is None or not hasattr(atom, "smem_layout"):
        raise CuteTypeError(f"tma_svg needs the TMA atom of make_tiled_tma_atom, got {atom!r}")
    from ..nvgpu.tma.atom import tma_partition

    shape = _gmem_shape(gmem)
    rank = len(shape)
    if cta_tiler is None:
        tshape = product_each(atom.smem_layout.shape)
        cta_tiler = tuple(tshape[:rank]) if type(tshape) is tuple else (tshape,)
    cta_tiler = as_int_tuple(cta_tiler, "cta_tiler")
    cta_tiler = cta_tiler if type(cta_tiler) is tuple else (cta_tiler,)
    if tile_coord is None:
        tile_coord = (0,) * rank
    coord = tile_coord if type(tile_coord) is tuple else (tile_coord,)
    if len(cta_tiler) != rank or len(coord) != rank:
        raise RankError(
            f"tma_svg: the gmem shape {fmt(shape)}, the CTA tiler {fmt(cta_tiler)} and the tile coordinate "
            f"{fmt(coord)} must have the same rank"
        )
    for i, (c, s, t) in enumerate(zip(coord, shape, cta_tiler)):
        if type(c) is not int or not 0 <= c < -(-s // t):
            raise CuteValueError(
                f"tma_svg: tile coordinate {fmt(coord)} is outside the {fmt(tuple(-(-a // b) for a, b in zip(shape, cta_tiler)))} "
                f"grid of {fmt(cta_tiler)} tiles of the gmem shape {fmt(shape)}"
            )
    ident = make_identity_tensor(shape if rank > 1 else shape[0])
    gtile = local_tile(ident, cta_tiler if rank > 1 else cta_tiler[0], coord if rank > 1 else coord[0])
    smem = make_tensor(Pointer(atom.dtype, AddressSpace.smem, alignment=max(1024, desc.smem_alignment)),
                       atom.smem_layout)
    if rank > 1:
        gtile, smem = group_modes(gtile, 0, rank), group_modes(smem, 0, len(smem))
    mc = atom.num_multicast
    values = atom.num_values
    per_cta = values // mc
    boxes = []
    for k in range(mc):
        _, gpart = tma_partition(atom, k, Layout(mc), smem, gtile)
        total = product(gpart.layout.shape[0] if type(gpart.layout.shape) is tuple else gpart.layout.shape)
        for j in range(total // values):
            pts = [_mn(gpart[v + values * j], rank) for v in range(per_cta)]
            boxes.extend((k, j, mr, nr) for mr, nr in _rectangles(pts))
    origin = tuple(c * t for c, t in zip(coord, cta_tiler))
    return origin, cta_tiler, boxes


def _mn(c, rank):
    c = tuple(c) if not isinstance(c, int) else (c,)
    return (0, c[0]) if rank == 1 else (c[0], c[1])


def _rectangles(points):
    # cover a set of (m, n) points by rectangles: one when they fill their bounding box,
    # otherwise runs along n merged down the rows
    pts = set(points)
    ms = [p[0] for p in pts]
    ns = [p[1] for p in pts]
    m0, m1, n0, n1 = min(ms), max(ms) + 1, min(ns), max(ns) + 1
    if (m1 - m0) * (n1 - n0) == len(pts):
        return [((m0, m1), (n0, n1))]
    runs = {}
    for m in sorted(set(ms)):
        row = sorted(n for (mm, n) in pts if mm == m)
        start = prev = row[0]
        for n in row[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            runs.setdefault((start, prev + 1), []).append(m)
            if n is not None:
                start = prev = n
    out = []
    for (a, b), rows in runs.items():
        top = last = rows[0]
        for m in rows[1:] + [None]:
            if m is not None and m == last + 1:
                last = m
                continue
            out.append(((top, last + 1), (a, b)))
            if m is not None:
                top = last = m
    return out


def tma_svg(atom: TmaCopyAtom, gmem: Tensor | Shape, tile_coord: Coord | None = None, cta_tiler: Shape | None = None,
            *, title: str | None = None) -> Picture:
    """An SVG picture of one TMA tile load: the gmem tensor, its tile grid, and each CTA's boxes.

    ``atom`` comes from ``make_tiled_tma_atom``; ``gmem`` is the gmem tensor (or its
    shape); ``tile_coord`` picks the CTA tile (default: the first); ``cta_tiler`` defaults to the smem
    tile's shape.  The left panel shows the whole tensor with the tile highlighted,
    the right one the tile with the box of every (CTA, instruction) in the CTA's
    colour.
    """
    shape = _gmem_shape(gmem)
    if tile_coord is None:
        tile_coord = (0,) * len(shape) if len(shape) > 1 else 0
    origin, tiler, boxes = tma_boxes(atom, gmem, tile_coord, cta_tiler)
    if len(shape) == 1:
        shape, origin, tiler = (1,) + shape, (0,) + origin, (1,) + tiler
    M, N = shape
    d = atom.descriptor
    mc = atom.num_multicast
    iters = 1 + max(j for _, j, _, _ in boxes)
    gdesc = str(gmem.layout) if hasattr(gmem, "layout") else fmt(shape)
    lines = [
        title or f"TMA {type(atom.op).__name__}: {atom.dtype.name} gmem {gdesc} <-> smem {atom.smem_layout}",
        f"descriptor: global_dims {fmt(tuple(d.global_dims))}, box_dims {fmt(tuple(d.box_dims))} (TMA dim order), "
        f"swizzle {d.swizzle.name}, {mc} multicast CTA{'s' if mc > 1 else ''}",
        f"tile {fmt(tuple(tile_coord) if type(tile_coord) is tuple else tile_coord)} of {fmt(tiler)}: "
        f"rows {origin[0]}..{origin[0] + tiler[0] - 1}, cols {origin[1]}..{origin[1] + tiler[1] - 1}; "
        f"each CTA loads {atom.num_values // mc} elements per instruction, {iters} instruction{'s' if iters > 1 else ''}",
    ]
    canvas = Canvas()
    top = headings(canvas, lines) + 24
    # left: the whole gmem tensor, scaled to fit 480 x 480
    s = min(480.0 / N, 480.0 / M, 24.0)
    gx, gy = PAD + 40, top
    canvas.text(gx, gy - 8, f"gmem {fmt(tuple(shape))}", size=11, anchor="start", bold=True)
    canvas.rect(gx, gy, N * s, M * s, "#FAFAFA", title=f"gmem tensor {gdesc}", cls="gmem", stroke="#333333")
    tm, tn = tiler
    if M // tm <= 256:
        for i in range(1, -(-M // tm)):
            canvas.line(gx, gy + i * tm * s, gx + N * s, gy + i * tm * s, "#999999", 0.5)
    if N // tn <= 256:
        for i in range(1, -(-N // tn)):
            canvas.line(gx + i * tn * s, gy, gx + i * tn * s, gy + M * s, "#999999", 0.5)
    for k, j, (m0, m1), (n0, n1) in boxes:
        canvas.rect(gx + n0 * s, gy + m0 * s, (n1 - n0) * s, (m1 - m0) * s, PALETTE[k % len(PALETTE)],
                    cls="overview", data={"cta": k, "iter": j})
    canvas.rect(gx + origin[1] * s, gy + origin[0] * s, tn * s, tm * s, "none", cls="tile", stroke="#000000",
                stroke_width=2, title=f"tile {fmt(tile_coord)}: rows {origin[0]}..{origin[0] + tm - 1}, "
                f"cols {origin[1]}..{origin[1] + tn - 1}")
    canvas.text(gx - 4, gy + 10, 0, size=9, anchor="end")
    canvas.text(gx - 4, gy + M * s, M - 1, size=9, anchor="end")
    canvas.text(gx, gy + M * s + 12, 0, size=9, anchor="start")
    canvas.text(gx + N * s, gy + M * s + 12, N - 1, size=9, anchor="end")
    # right: the tile, scaled to fit 480 x 480, with every (CTA, instruction) box
    z = min(480.0 / tn, 480.0 / tm, 32.0)
    zx, zy = gx + N * s + 90, top
    canvas.text(zx, zy - 8, f"tile {fmt(tile_coord)}: boxes by CTA (colour) and instruction (#)", size=11,
                anchor="start", bold=True)
    for k, j, (m0, m1), (n0, n1) in boxes:
        x, y = zx + (n0 - origin[1]) * z, zy + (m0 - origin[0]) * z
        w, h = (n1 - n0) * z, (m1 - m0) * z
        canvas.rect(x, y, w, h, PALETTE[k % len(PALETTE)], cls="box", stroke="#333333", stroke_width=1,
                    title=f"CTA {k}, instruction {j}: rows {m0}..{m1 - 1}, cols {n0}..{n1 - 1} "
                    f"({m1 - m0} x {n1 - n0} elements)",
                    data={"cta": k, "iter": j, "m0": m0, "m1": m1, "n0": n0, "n1": n1})
        label = f"CTA{k}" + (f" #{j}" if iters > 1 else "")
        size = min(12.0, h * 0.6, w / (0.62 * len(label) + 0.5))
        if size >= 6:
            canvas.text(x + w / 2, y + h / 2 + size * 0.35, label, size=size, cls="label")
    canvas.text(zx - 4, zy + 10, origin[0], size=9, anchor="end")
    canvas.text(zx - 4, zy + tm * z, origin[0] + tm - 1, size=9, anchor="end")
    canvas.text(zx, zy + tm * z + 12, origin[1], size=9, anchor="start")
    canvas.text(zx + tn * z, zy + tm * z + 12, origin[1] + tn - 1, size=9, anchor="end")
    width = max(zx + tn * z + PAD, text_width(lines))
    height = top + max(M * s, tm * z) + 20 + PAD
    legend_y = height
    for k in range(mc):
        canvas.rect(PAD + 40 + k * 70, legend_y, 14, 14, PALETTE[k % len(PALETTE)], cls="legend",
                    stroke="#333333", data={"cta": k})
        canvas.text(PAD + 58 + k * 70, legend_y + 11, f"CTA {k}", size=10, anchor="start")
    return canvas.picture(width, legend_y + 14 + PAD, lines[0])

