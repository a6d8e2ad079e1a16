"""Command line: ``python -m cute_py demo`` (also installed as ``cute-py``)."""

import argparse
import sys

__all__ = ["main"]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="cute-py", description="CuTe layout algebra in pure Python")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="print a tour of the layout algebra")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import tour

        tour()
    return 0


if __name__ == "__main__":
    sys.exit(main())
