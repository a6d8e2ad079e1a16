"""Row softmax on a GPU, side by side with ``torch.softmax(x, dim=1)`` in one run: examples/softmax.py's kernel as
GB/s of the bytes it must move (a read and a write) and as a ratio to torch, for Float32 and BFloat16 rows.

    python benchmarks/bench_softmax.py [--reps 50] [--out FILE]

Every output is checked against torch (float64) before it is timed. Both are timed together in interleaved rounds
(``_rounds.interleaved``: six rounds of at least ``--reps`` back-to-back launches and 5 ms between two CUDA events,
in alternating orders); GB/s are medians over the rounds, the ratio the median of the rounds' ratios.
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _rounds import interleaved, paired  # noqa: E402
from bench_elementwise import device_line, reporter  # noqa: E402

SHAPES = [(8192, 1024), (4096, 4096), (2048, 8192), (1024, 16384)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--out")
    args = parser.parse_args()
    say = reporter(args.out)

    import torch
    import cute_py as cute
    from examples import softmax

    say(device_line(torch, f"reps {args.reps}"))
    for dtype in (torch.float32, torch.bfloat16):
        for shape in SHAPES:
            x = torch.randn(shape, device="cuda").to(dtype)
            y = torch.empty_like(x)
            compiled = cute.compile(softmax, x, y)
            compiled(x, y)
            torch.cuda.synchronize()
            err = float((y.double() - torch.softmax(x.double(), dim=1)).abs().max())
            assert err < (1e-6 if dtype is torch.float32 else 1e-2), err
            t = interleaved([lambda: compiled(x, y), lambda: torch.softmax(x, dim=1)], args.reps)
            ours, theirs = (statistics.median(s) for s in t)
            nbytes = 2 * x.numel() * x.element_size()
            say(f"softmax {str(dtype).split('.')[-1]:9} {shape[0]:5}x{shape[1]:<6} cute_py {nbytes / ours / 1e9:7.1f} "
                f"GB/s  torch {nbytes / theirs / 1e9:7.1f} GB/s  ratio {paired(t, 0, 1):5.3f}x")


if __name__ == "__main__":
    main()
