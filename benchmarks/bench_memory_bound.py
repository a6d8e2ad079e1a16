"""Memory-bound row kernels on a GPU, side by side in one run: softmax forward/backward, RMSNorm forward/backward,
LayerNorm forward and cross-entropy forward/backward (examples/softmax_rows.py, norms.py, cross_entropy.py) against
torch eager and ``torch.compile`` of the same function, as GB/s of the bytes each must move (every input read once,
every output written once) and as a fraction of the device-to-device copy ceiling (torch ``copy_`` of the same
number of bytes, read + written, timed in the same rounds as the kernel).

    python benchmarks/bench_memory_bound.py [--quick | --model] [--kernels a,b] [--lengths 4096,65536]
                                            [--dtypes bf16,fp32] [--bytes 2**30] [--reps 20] [--no-compile] [--out FILE]

Rows of ``n`` elements, as many rows as make one input of ``--bytes`` (1 GiB: 1-3 GiB moved). Every output of ours
is checked against torch (float64 reference, loose bound) before it is timed. The copy, ours, eager and compiled
columns are timed in ``--rounds`` interleaved rounds (``_rounds.interleaved``: ``--reps`` back-to-back launches
between CUDA events, or as many as last ``--min-ms``, the order rotated and reversed from round to round); GB/s
are each column's median over its rounds, the fraction of the copy ceiling and the speed-ups the medians of the
rounds' ratios (``_rounds.paired``). The header gives the device, the date and the SM clock at the start, the last
line the clock at the end.
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _rounds import interleaved, paired  # noqa: E402
from bench_elementwise import device_line, reporter  # noqa: E402

LENGTHS = [256, 1024, 4096, 16384, 65536, 262144]
QUICK = [4096, 32768, 262144]
# widths models use, none a power of two: hidden sizes (2560-28672) and vocabularies (50304, 128256, 151936)
MODEL = [2560, 5120, 7168, 12288, 28672, 50304, 128256, 151936]
KERNELS = ["softmax_fwd", "softmax_bwd", "rmsnorm_fwd", "rmsnorm_bwd", "layernorm_fwd", "ce_fwd", "ce_bwd"]


def _size(text):
    return 1 << int(text[3:]) if text.startswith("2**") else int(text)


def _clock():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=10).stdout.strip()
        return out.splitlines()[0] if out else "unknown"
    except Exception as e:  # no nvidia-smi
        return f"unknown ({type(e).__name__})"


def _cases(torch, ex, name, m, n, dtype):
    """``(ours, torch function, its arguments, bytes moved, check)`` for kernel ``name`` on (m, n) rows."""
    dev = "cuda"
    x = torch.randn(m, n, device=dev).to(dtype)
    size = x.element_size()
    f32 = torch.float32
    if name == "softmax_fwd":
        y = torch.empty_like(x)
        return (ex.softmax_forward, (x, y), lambda a: torch.softmax(a, 1), (x,), 2 * m * n * size,
                lambda: (y, torch.softmax(x.double(), 1)))
    if name == "softmax_bwd":
        y = torch.softmax(x.float(), 1).to(dtype)
        dy, dx = torch.randn_like(x), torch.empty_like(x)

        def bwd(yy, gg):
            yf, gf = yy.float(), gg.float()
            return (yf * (gf - (yf * gf).sum(1, keepdim=True))).to(yy.dtype)
        return (ex.softmax_backward, (y, dy, dx), bwd, (y, dy), 3 * m * n * size,
                lambda: (dx, bwd(y.double(), dy.double())))
    if name in ("rmsnorm_fwd", "rmsnorm_bwd"):
        w = (torch.rand(n, device=dev) + 0.5).to(dtype)
        rstd = torch.rsqrt(x.float().pow(2).mean(1) + 1e-6)
        if name == "rmsnorm_fwd":
            y = torch.empty_like(x)

            def fwd(a, ww):
                af = a.float()
                return (af * torch.rsqrt(af.pow(2).mean(1, keepdim=True) + 1e-6) * ww.float()).to(a.dtype)
            return (ex.rmsnorm_forward, (x, w, y, torch.empty(m, device=dev), 1e-6), fwd, (x, w),
                    2 * m * n * size, lambda: (y, fwd(x.double(), w.double())))
        dy, dx, dw = torch.randn_like(x), torch.empty_like(x), torch.empty_like(w)
        ws = torch.empty(ex.rmsnorm_workspace_rows(m, n, torch.cuda.get_device_properties(0).multi_processor_count),
                         n, dtype=f32, device=dev)

        def bwd(gg, a, ww, rs):
            xh = a.float() * rs[:, None]
            gw = gg.float() * ww.float()
            dxx = (gw - xh * (gw * xh).mean(1, keepdim=True)) * rs[:, None]
            return dxx.to(a.dtype), (gg.float() * xh).sum(0).to(ww.dtype)
        return (ex.rmsnorm_backward, (dy, x, w, rstd, dx, dw, ws), bwd, (dy, x, w, rstd), 3 * m * n * size,
                lambda: (dx, bwd(dy.double(), x.double(), w.double(), rstd.double())[0]))
    if name == "layernorm_fwd":
        w, b, y = (torch.rand(n, device=dev) + 0.5).to(dtype), torch.randn(n, device=dev).to(dtype), torch.empty_like(x)

        def fwd(a, ww, bb):
            return torch.nn.functional.layer_norm(a, (a.shape[1],), ww, bb, 1e-5)
        return (ex.layernorm_forward, (x, w, b, y, torch.empty(m, device=dev), torch.empty(m, device=dev), 1e-5),
                fwd, (x, w, b), 2 * m * n * size, lambda: (y, fwd(x.double(), w.double(), b.double())))
    target = torch.randint(0, n, (m,), device=dev)
    lse = torch.logsumexp(x.float(), 1)
    if name == "ce_fwd":
        loss, out_lse = torch.empty(m, device=dev), torch.empty(m, device=dev)

        def fwd(a, tt):
            return torch.nn.functional.cross_entropy(a.float(), tt, reduction="none")
        return (ex.cross_entropy_forward, (x, target, loss, out_lse), fwd, (x, target), m * n * size,
                lambda: (loss, fwd(x.double(), target)))
    dloss, dx = torch.rand(m, device=dev), torch.empty_like(x)

    def bwd(a, tt, dl, ls):
        p = torch.exp(a.float() - ls[:, None])
        p[torch.arange(a.shape[0], device=a.device), tt] -= 1
        return (p * dl[:, None]).to(a.dtype)
    return (ex.cross_entropy_backward, (x, target, dloss, lse, dx), bwd, (x, target, dloss, lse), 2 * m * n * size,
            lambda: (dx, bwd(x.double(), target, dloss.double(), lse.double())))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"bf16 only, lengths {QUICK}")
    parser.add_argument("--model", action="store_true", help=f"bf16 only, the widths models use: {MODEL}")
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--lengths")
    parser.add_argument("--dtypes")
    parser.add_argument("--bytes", type=_size, default=1 << 30, help="bytes of one input: an int or 2**k")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=6, help="rounds of every column, alternating their order")
    parser.add_argument("--min-ms", type=float, default=5.0, help="a timing lasts at least this long (more launches)")
    parser.add_argument("--no-compile", action="store_true", help="leave out torch.compile")
    parser.add_argument("--out")
    args = parser.parse_args()
    say = reporter(args.out)

    import torch
    import cute_py as cute
    import examples as ex

    preset = QUICK if args.quick else MODEL if args.model else LENGTHS
    lengths = [int(v) for v in args.lengths.split(",")] if args.lengths else preset
    names = args.dtypes.split(",") if args.dtypes else (["bf16"] if args.quick or args.model else ["bf16", "fp32"])
    dtypes = [{"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[d] for d in names]
    say(device_line(torch, f"{args.rounds} interleaved rounds of >= {args.reps} launches and >= {args.min_ms} ms, "
                           f"input {args.bytes / 2**30:.2f} GiB, clock at start: {_clock()}"))
    say(f"{'kernel':14} {'dtype':9} {'rows x n':>16} {'ours GB/s':>9} {'of copy':>7} {'eager':>7} {'compile':>7} "
        f"{'vs eager':>8} {'vs comp':>8} {'copy GB/s':>9}")
    for dtype in dtypes:
        size = torch.tensor([], dtype=dtype).element_size()
        for n in lengths:
            m = max(1, args.bytes // (n * size))
            for name in args.kernels.split(","):
                try:
                    ours, ours_args, fn, fn_args, moved, check = _cases(torch, ex, name, m, n, dtype)
                    compiled = cute.compile(ours, *ours_args)
                    compiled(*ours_args)
                    torch.cuda.synchronize()
                    got, exact = check()
                    err = float(((got.double() - exact).abs() / (exact.abs() + 1)).nan_to_num(1.0).max())
                    if err > (1e-4 if dtype is torch.float32 else 2e-2):
                        raise AssertionError(f"wrong result: max relative error {err:.3g}")
                    src = torch.empty(moved // 2, dtype=torch.uint8, device="cuda")
                    dst = torch.empty_like(src)
                    fns = [lambda s=src, d=dst: d.copy_(s), lambda: compiled(*ours_args), lambda: fn(*fn_args)]
                    if not args.no_compile:
                        torch._dynamo.reset()  # a fresh cache: past 8 shapes of one function it would run eager
                        comp = torch.compile(fn, dynamic=False)
                        fns.append(lambda: comp(*fn_args))
                    samples = interleaved(fns, args.reps, args.rounds, args.min_ms)
                    del fns, src, dst  # the copy's bytes freed before the next case
                    t_copy, t_ours, t_eager = (statistics.median(t) for t in samples[:3])
                    t_comp = statistics.median(samples[3]) if len(samples) > 3 else float("nan")
                    vs_comp = paired(samples, 1, 3) if len(samples) > 3 else float("nan")
                    say(f"{name:14} {str(dtype).split('.')[-1]:9} {m:>7} x {n:<6} {moved / t_ours / 1e9:9.1f} "
                        f"{paired(samples, 1, 0):7.3f} {moved / t_eager / 1e9:7.1f} {moved / t_comp / 1e9:7.1f} "
                        f"{paired(samples, 1, 2):7.2f}x {vs_comp:7.2f}x {moved / t_copy / 1e9:9.1f}")
                except Exception as e:  # a failing row is reported, the run goes on
                    say(f"{name:14} {str(dtype).split('.')[-1]:9} {m:>7} x {n:<6} failed: {type(e).__name__}: "
                        f"{str(e)[:300]}")
                torch.cuda.empty_cache()
    say(f"clock at end: {_clock()}")


if __name__ == "__main__":
    main()
