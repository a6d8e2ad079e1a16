"""Elementwise kernels that compute, on a GPU, side by side with torch in one run: ``elementwise_add`` (fp32 and
bf16) against ``torch.add(a, b, out=c)``, and ``fused_silu_add`` (bf16, Float32 math) against torch's eager
``silu(x) * scale + y`` (several kernels) — each as GB/s of the bytes it must move (two reads and a write) and as a
fraction of the device-to-device copy bandwidth of torch ``copy_`` on the same bytes.

    python benchmarks/bench_elementwise.py [--elements N] [--reps 50] [--out FILE]

Every output is checked (add: bit-exact against torch; fused: within |exact| * 2^-7 (a bf16 ulp) plus the Float32
rounding of its terms, against double precision) before it is timed. The copy, ours and torch's are timed together
in interleaved rounds (``_rounds.interleaved``: six rounds of at least ``--reps`` back-to-back launches and 5 ms
between two CUDA events, in rotated and reversed orders); GB/s are medians over the rounds, the ratios the medians
of the rounds' ratios (``_rounds.paired``).
"""
import argparse
import datetime
import os
import platform
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _rounds import interleaved, paired  # noqa: E402


def reporter(path):
    """``say(line)``: print ``line`` and, with a ``path``, append it to that file."""
    out = open(path, "w") if path else None

    def say(line):
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
    return say


def timed_compile(what, *args, **kwargs):
    """``cute.compile(*args, **kwargs)``, printing to stderr how long it took, by stage (``trace``,
    ``mlir``, ... as the compiled kernel's ``stage_times`` has them; a kernel loaded from the disk cache has
    fewer): where the compile time of a benchmark's kernels goes on the machine it runs on."""
    import time

    import cute_py as cute

    start = time.perf_counter()
    compiled = cute.compile(*args, **kwargs)
    stages = getattr(compiled, "stage_times", None) or {}
    parts = ", ".join(f"{name} {t:.2f}" for name, t in stages.items())
    print(f"# compiled {what} in {time.perf_counter() - start:.2f} s ({parts or 'no stage times'})", file=sys.stderr,
          flush=True)
    return compiled


def device_line(torch, extra):
    """The report's first line: the device, the versions, the date (UTC) and ``extra``."""
    import cute_py as cute

    props = torch.cuda.get_device_properties(0)
    return (f"device {props.name} ({props.multi_processor_count} SMs, sm_{props.major}{props.minor}), torch "
            f"{torch.__version__}, cute_py {cute.__version__}, Python {platform.python_version()}, "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {extra}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=(1 << 28) + 3)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--out")
    args = parser.parse_args()
    say = reporter(args.out)

    import torch
    from examples import elementwise_add, fused_silu_add

    say(device_line(torch, f"{args.elements} elements, reps {args.reps}"))
    n = args.elements
    for dtype in (torch.float32, torch.bfloat16):
        size = torch.tensor([], dtype=dtype).element_size()
        a, b = torch.randn(n, device="cuda").to(dtype), torch.randn(n, device="cuda").to(dtype)
        c, ref = torch.empty_like(a), torch.empty_like(a)
        moved = 3 * n * size
        src, dst = torch.empty(3 * n * size // 2, dtype=torch.uint8, device="cuda"), None
        dst = torch.empty_like(src)
        elementwise_add(a, b, c)
        torch.add(a, b, out=ref)
        torch.cuda.synchronize()
        exact = torch.equal(c, ref)
        # the copy reads and writes the same 3 n elements' bytes
        t = interleaved([lambda: dst.copy_(src), lambda: elementwise_add(a, b, c),
                         lambda: torch.add(a, b, out=ref)], args.reps)
        t_copy, t_ours, t_torch = (statistics.median(x) for x in t)
        name = str(dtype).replace("torch.", "")
        say(f"copy_ ceiling {name}: {moved / t_copy / 1e9:8.1f} GB/s")
        say(f"elementwise_add {name}: cute_py {moved / t_ours / 1e9:8.1f} GB/s ({paired(t, 1, 0):.3f} of "
            f"copy_)   torch.add {moved / t_torch / 1e9:8.1f} GB/s ({paired(t, 2, 0):.3f})   "
            f"cute_py / torch {paired(t, 1, 2):.3f}   exact={exact}")
        if dtype is torch.bfloat16:
            y = torch.randn(n, device="cuda").to(dtype)
            fused_silu_add(a, y, c, 0.5)
            torch.cuda.synchronize()
            ad, yd = a.double(), y.double()
            term = ad / (1.0 + torch.exp(-ad)) * 0.5
            exact = term + yd
            bound = (exact.to(dtype).double().abs() * 2.0 ** -7).clamp(min=2.0 ** -133) + 2.0 ** -20 * (
                term.abs() + yd.abs())
            close = bool(((c.double() - exact).abs() <= bound).all())
            del ad, yd, term, exact, bound
            t = interleaved([lambda: dst.copy_(src), lambda: fused_silu_add(a, y, c, 0.5),
                             lambda: torch.add(torch.nn.functional.silu(a) * 0.5, y, out=ref)], args.reps)
            t_ours, t_torch = (statistics.median(x) for x in t[1:])
            say(f"fused_silu_add bf16: cute_py {moved / t_ours / 1e9:8.1f} GB/s ({paired(t, 1, 0):.3f} of "
                f"copy_)   torch eager {moved / t_torch / 1e9:8.1f} GB/s   cute_py / torch {paired(t, 1, 2):.3f}   "
                f"within bound={close}")


if __name__ == "__main__":
    main()
