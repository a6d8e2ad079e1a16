"""``python -m mlir_dialects --emit mlir|lowered|ptx``: print a sample kernel that uses every op.

``mlir`` prints it as written, ``lowered`` after the lowering to NVVM/LLVM, ``ptx`` as PTX
(``--chip``/``--features`` pick the target). No GPU is needed.
"""

import argparse
import sys

__all__ = ["main"]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mlir_dialects", description=__doc__.splitlines()[0])
    parser.add_argument("--emit", choices=("mlir", "lowered", "ptx"), default="mlir")
    parser.add_argument("--chip", default="sm_90a")
    parser.add_argument("--features", default="+ptx80")
    args = parser.parse_args(argv)

    from .pipeline import lower_copy, to_ptx
    from .sample import build_sample_module, sample_context

    ctx, loc = sample_context()
    with ctx, loc:
        module = build_sample_module()
        if args.emit == "mlir":
            text = str(module)
        elif args.emit == "lowered":
            text = str(lower_copy(module))
        else:
            text = to_ptx(module, chip=args.chip, features=args.features)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
