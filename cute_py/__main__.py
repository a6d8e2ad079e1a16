"""Command line: ``python -m cute_py demo [--emit mlir|ptx] [--cpu]`` and ``python -m cute_py show LAYOUT``
(also installed as ``cute-py``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cute-py", description="CuTe layout algebra in pure Python")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="a tour: layouts, a TMA atom, the compiled TMA copy kernel and a run of it",
        description="A tour of layouts and their algebra, a TMA atom and its box, the TMA copy kernel compiled "
                    "to PTX, and the copy run on a CUDA GPU (or, without one, on the CPU reference).",
    )
    demo.add_argument("--emit", choices=("mlir", "ptx"),
                      help="print the MLIR or the PTX of the demo's kernel and exit (no GPU needed)")
    demo.add_argument("--cpu", action="store_true",
                      help="run the copy on the CPU reference even when a CUDA GPU is available")
    from .viz.cli import add_show_parser

    add_show_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "demo":
        from . import demo as _demo

        if args.emit is not None:
            return _demo.emit(args.emit)
        return _demo.run(cpu=args.cpu)
    elif args.command == "show":
        from .viz.cli import run_show

        return run_show(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
