"""``python -m cute_py show``: print a layout's text table and write its SVG picture.

::

    python -m cute_py show "(4,(2,8)):(2,(1,8))" -o layout.svg
    python -m cute_py show --tv "(4,8):(8,1)" "(2,2)" -o tv.svg
    python -m cute_py show "(8,64):(64,1)" --swizzle 3,3,3 -o banks.svg
    python -m cute_py show --copy "(8,4):(4,1)" "(1,8)" -o copy.svg
    python -m cute_py show "(128,64):(64,1)" --swizzle 3,3,3 --tma "(512,256):(256,1)" \\
        --multicast 2 --tile-coord 1,2 -o tma.svg
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from ..core.composed import smem_element_layout
from ..errors import CuteError, CuteValueError

__all__ = ["add_show_parser", "run_show", "main"]

_EPILOG = """\
pictures:
  LAYOUT                     the layout as a grid of cells labelled with their index
  --tv THR VAL               make_layout_tv(THR, VAL): cells coloured by thread, labelled T{t}V{v}
  LAYOUT --tile M,N          LAYOUT is a TV layout over an M x N tile
  LAYOUT --swizzle B,M,S     S<B,M,S> o 0 o LAYOUT and its 32 shared-memory banks (also --banks);
                             with --readings, the swizzle on byte addresses and on element offsets
  --copy THR VAL             a cp.async TiledCopy (make_tiled_copy_tv): source and destination
  LAYOUT --tma GMEM          LAYOUT (with --swizzle) is the smem tile of a TMA load from GMEM
examples:
  python -m cute_py show "(4,(2,8)):(2,(1,8))" -o layout.svg
  python -m cute_py show "(8,64):(64,1)" --swizzle 3,3,3 -o banks.svg
  python -m cute_py show "(128,64):(64,1)" --swizzle 3,3,3 --tma "(512,256):(256,1)" --multicast 2 -o tma.svg
"""


def add_show_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``show`` subcommand to an argparse subparsers object."""
    p = sub.add_parser(
        "show",
        help="print a layout's table and draw it as SVG",
        description="Print a layout's CuTe-style text table and (with -o) write its SVG picture.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("layout", nargs="?", metavar="LAYOUT", help='a layout in CuTe notation, e.g. "(4,(2,8)):(2,(1,8))" or '
                   '"S<3,3,3> o 0 o (8,64):(64,1)"')
    p.add_argument("-o", "--output", help="write the SVG picture to this file (.svg)")
    p.add_argument("--tv", nargs=2, metavar=("THR", "VAL"), help="draw make_layout_tv(THR, VAL)")
    p.add_argument("--tile", metavar="M,N", help="LAYOUT is a TV layout over this tile")
    p.add_argument("--swizzle", metavar="B,M,S", help="compose LAYOUT with Swizzle(B, M, S) and draw its banks")
    p.add_argument("--banks", action="store_true", help="draw LAYOUT's shared-memory banks")
    p.add_argument("--readings", action="store_true",
                   help="with --swizzle: where each element lands (in bytes) with the swizzle on byte addresses "
                        "and on element offsets, side by side")
    p.add_argument("--bits", type=int, default=16, metavar="N", help="element width in bits (default 16: fp16)")
    p.add_argument("--copy", nargs=2, metavar=("THR", "VAL"), help="draw a cp.async TiledCopy of THR x VAL")
    p.add_argument("--copy-bits", type=int, default=128, metavar="N", help="bits per copy instruction (default 128)")
    p.add_argument("--tma", metavar="GMEM", help="draw a TMA load of the smem tile LAYOUT from this gmem layout")
    p.add_argument("--multicast", type=int, default=1, metavar="N", help="TMA multicast CTAs (default 1)")
    p.add_argument("--tile-coord", default="0", metavar="I,J", help="the CTA tile the TMA picture shows (default 0,0)")
    p.add_argument("--no-table", action="store_true", help="do not print the text table")
    return p


def _ints(text, what):
    from ..core.parse import parse_int_tuple

    t = text.strip()
    if t.startswith("S<") or t.startswith("Sw<"):
        t = t[t.index("<") + 1:].rstrip(">")
    try:
        if t.startswith("("):
            return parse_int_tuple(t)
        vals = tuple(int(x) for x in t.split(","))
    except (CuteValueError, ValueError):
        raise CuteValueError(f"{what} must be integers separated by commas, got {text!r}") from None
    return vals if len(vals) > 1 else vals[0]


def _dtype(bits):
    from ..tensor.dtypes import Float16, Float32, Float64, Uint8

    table = {8: Uint8, 16: Float16, 32: Float32, 64: Float64}
    if bits not in table:
        raise CuteValueError(f"--bits must be one of 8, 16, 32, 64 for copies, got {bits}")
    return table[bits]


def _need(args, layout_needed, mode):
    if layout_needed and args.layout is None:
        raise CuteValueError(f"{mode} needs a LAYOUT argument")
    if not layout_needed and args.layout is not None:
        raise CuteValueError(f"{mode} takes no LAYOUT argument (got {args.layout!r})")


def build(args):
    """``(text, picture)`` for parsed ``show`` arguments."""
    from ..core.parse import parse_layout
    from . import text as T
    from .banks import bank_summary, smem_banks_svg
    from .pictures import layout_svg, tiled_copy_svg, tv_svg

    modes = [m for m in ("tv", "copy", "tma") if getattr(args, m)]
    if len(modes) > 1:
        raise CuteValueError(f"choose one of --tv, --copy, --tma (got {', '.join('--' + m for m in modes)})")
    if args.tv:
        _need(args, False, "--tv")
        from ..core.tiling import make_layout_tv

        tiler, tv = make_layout_tv(parse_layout(args.tv[0]), parse_layout(args.tv[1]))
        return T.format_layout_tv(tv, tiler), tv_svg(tv, tiler)
    if args.copy:
        _need(args, False, "--copy")
        from ..atom import make_copy_atom, make_tiled_copy_tv
        from ..nvgpu.cpasync.ops import CopyG2SOp

        atom = make_copy_atom(CopyG2SOp(), _dtype(args.bits), args.copy_bits)
        tc = make_tiled_copy_tv(atom, parse_layout(args.copy[0]), parse_layout(args.copy[1]))
        text = "\n".join([repr(tc), "source (get_layoutS_TV):", T.format_layout_tv(tc.get_layoutS_TV(), tc.tiler_mn),
                          "destination (get_layoutD_TV):", T.format_layout_tv(tc.get_layoutD_TV(), tc.tiler_mn)])
        return text, tiled_copy_svg(tc)
    _need(args, True, "show")
    layout = parse_layout(args.layout)
    if args.swizzle:
        from ..core.composed import ComposedLayout
        from ..core.swizzle import Swizzle

        sw = _ints(args.swizzle, "--swizzle B,M,S")
        if type(sw) is not tuple or len(sw) != 3:
            raise CuteValueError(f"--swizzle takes three integers B,M,S (e.g. 3,3,3), got {args.swizzle!r}")
        if args.readings:
            from .readings import swizzle_readings, swizzle_readings_svg

            by_bytes, by_elements = swizzle_readings(Swizzle(*sw), layout, args.bits)
            text = (f"{Swizzle(*sw)} over {layout}, {args.bits}-bit elements: {sum(a != b for a, b in zip(by_bytes, by_elements))}"
                    f" of {len(by_bytes)} elements land at different bytes on byte addresses and on element offsets")
            return text, swizzle_readings_svg(Swizzle(*sw), layout, args.bits)
        layout = ComposedLayout(Swizzle(*sw), 0, layout)
    elif args.readings:
        raise CuteValueError("--readings needs --swizzle B,M,S")
    if args.tma:
        return _tma(args, layout)
    if args.tile:
        tile = _ints(args.tile, "--tile M,N")
        return T.format_layout_tv(layout, tile), tv_svg(layout, tile)
    if args.swizzle or args.banks:
        picture = smem_banks_svg(layout, args.bits)
        table = T.format_layout(smem_element_layout(layout, args.bits) if args.swizzle else layout)
        return table + "\n" + bank_summary(layout, args.bits), picture
    return T.format_layout(layout), layout_svg(layout)


def _tma(args, smem):
    from ..core.notation import fmt
    from ..core.products import product_each
    from ..nvgpu import cpasync
    from ..core.parse import parse_layout
    from ..tensor.fake import make_fake_tensor
    from .tma import tma_boxes, tma_svg

    g = parse_layout(args.tma)
    gmem = make_fake_tensor(_dtype(args.bits), g.shape, stride=g.stride)
    op = cpasync.CopyBulkTensorTileG2SMulticastOp() if args.multicast > 1 else cpasync.CopyBulkTensorTileG2SOp()
    tiler = product_each(smem.shape)
    atom, _ = cpasync.make_tiled_tma_atom(op, gmem, smem, tiler, num_multicast=args.multicast)
    coord = _ints(args.tile_coord, "--tile-coord I,J")
    origin, tile, boxes = tma_boxes(atom, gmem, coord)
    d = atom.descriptor
    lines = [repr(atom), f"tile {fmt(coord)} of {fmt(tile)} at {fmt(origin)}: {len(boxes)} boxes"]
    lines += [f"  CTA {k} #{j}: rows {m0}..{m1 - 1}, cols {n0}..{n1 - 1}" for k, j, (m0, m1), (n0, n1) in boxes]
    lines.append(f"box_dims {fmt(tuple(d.box_dims))} per CTA, {d.box_bytes} bytes per instruction")
    return "\n".join(lines), tma_svg(atom, gmem, coord)


def run_show(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``show`` for parsed arguments; returns the exit status (2 for a bad layout or option)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        text, picture = build(args)
    except CuteError as e:
        print(f"cute-py show: error: {type(e).__name__}: {e}", file=err)
        return 2
    if not args.no_table:
        print(text, file=out)
    if args.output:
        try:
            picture.save(args.output)
        except CuteError as e:
            print(f"cute-py show: error: {type(e).__name__}: {e}", file=err)
            return 2
        print(f"wrote {args.output} ({len(picture)} bytes)", file=out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``cute-py show ...`` on its own (the package's ``__main__`` adds it next to ``demo``)."""
    parser = argparse.ArgumentParser(prog="cute-py")
    add_show_parser(parser.add_subparsers(dest="command", required=True))
    return run_show(parser.parse_args(argv))
