"""Command line: ``python -m cute_py demo`` and ``python -m cute_py show LAYOUT`` (also installed as ``cute-py``)."""

import argparse
import sys

__all__ = ["main"]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="cute-py", description="CuTe layout algebra in pure Python")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="print a tour of the layout algebra")
    from .viz.cli import add_show_parser

    add_show_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import tour

        tour()
    elif args.command == "show":
        from .viz.cli import run_show

        return run_show(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
