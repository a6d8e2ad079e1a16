"""Attention forward on a Hopper GPU, side by side in one run: examples/attention.py's kernel, torch's
``scaled_dot_product_attention`` with its cuDNN backend and with its flash backend, as TFLOP/s.

    python benchmarks/bench_attention.py [--reps 20] [--dims 64 128 256] [--seqlens 512 ... 16384] [--out FILE]
        [--tiles 176:2 80:2:heavy persistent ...]   # other tiles of ours (BLOCK_N:STAGES[:BLOCK_M][:heavy|
                                                    # :persistent|:pertile][:nooverlap], or flags alone for the
                                                    # default tile; nooverlap: attention's overlap=False)
        [--precompile 12]                 # compile every kernel first, in 12 processes

Shapes as FlashAttention-3's paper measures them: batch x seqlen = 16k tokens, heads x head_dim = 2048, bf16.
FLOPs: ``4 * batch * heads * seqlen^2 * head_dim``, halved for causal. Every configuration checks our output
against the cuDNN backend's before it is timed; every column is timed in ``--rounds`` interleaved rounds
(``_rounds.interleaved``: ``--reps`` back-to-back launches between CUDA events, or as many as last ``--min-ms``, the
order rotated and reversed from round to round), TFLOP/s are each column's median over its rounds and the ratios
the median of the rounds' ratios (``_rounds.paired``). The SM clock is sampled (``nvidia-smi``) while each
configuration runs.

FlashAttention-3's published forward figures (H100 SXM5, bf16, its paper): head_dim 128 at seqlen 16k: 648
TFLOP/s, causal 616; head_dim 64: 497; head_dim 256: 756.
"""
import argparse
import os
import statistics
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _rounds import faster, interleaved  # noqa: E402
from bench_elementwise import device_line, reporter, timed_compile  # noqa: E402

TOKENS = 16384
WIDTH = 2048
SEQLENS = [512, 1024, 2048, 4096, 8192, 16384]
PUBLISHED_FA3 = {(128, False): 648, (128, True): 616, (64, False): 497, (256, False): 756}


class ClockSampler:
    """The SM clock (MHz) of device 0, sampled by ``nvidia-smi`` every 0.2 s while in a ``with`` block."""

    def __init__(self):
        self.samples = []
        self._stop = threading.Event()

    def _poll(self):
        while not self._stop.is_set():
            try:
                text = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                                      capture_output=True, text=True, timeout=5).stdout.strip()
                self.samples.append(int(text.split()[0]))
            except (OSError, ValueError, IndexError, subprocess.SubprocessError):
                return
            self._stop.wait(0.2)

    def __enter__(self):
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def summary(self):
        if not self.samples:
            return "clock n/a"
        return f"clock {min(self.samples)}-{max(self.samples)} MHz (median {int(statistics.median(self.samples))})"


def _variants(args):
    """Our kernels to time, by column name: the default and each ``--tiles`` entry, as ``attention``'s keyword
    arguments (the same for the precompile and the timed run, so that the timed run loads from the disk cache)."""
    base = dict(pingpong=args.pingpong == "on", heavy_first=args.heavy_first)
    variants = {"cute_py": base}
    for tile in args.tiles:
        parts = tile.split(":")
        flags = [p for p in parts if not p.isdigit()]
        numbers = [int(p) for p in parts if p.isdigit()]
        if len(numbers) not in (0, 2, 3) or set(flags) - {"heavy", "persistent", "pertile", "nooverlap"}:
            raise SystemExit(f"--tiles: BLOCK_N:STAGES[:BLOCK_M], then :heavy, :persistent, :pertile or :nooverlap, "
                             f"or the flags alone; got {tile!r}")
        kw = dict(base, heavy_first=args.heavy_first or "heavy" in flags)
        if numbers:
            kw.update(zip(("block_n", "stages", "block_m"), numbers))
        if "persistent" in flags or "pertile" in flags:
            kw.update(persistent="persistent" in flags)
        if "nooverlap" in flags:
            kw.update(overlap=False)
        variants[f"cute_py[{tile}]"] = kw
    return variants


def _tensors(torch, d, s):
    """q, k, v, out and lse of a configuration: ``TOKENS`` tokens of ``WIDTH`` channels, bf16."""
    b, h = TOKENS // s, WIDTH // d
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    return q, k, v, torch.empty_like(q), torch.empty(b, h, s, device="cuda", dtype=torch.float32)


def _compile_jobs(jobs):
    """Compile ``(d, causal, seqlen, keyword arguments)`` jobs into the disk cache (a worker process)."""
    import torch

    from examples import attention

    for d, causal, s, kw in jobs:
        timed_compile(f"d={d} causal={int(causal)} seqlen={s} {kw}", attention, *_tensors(torch, d, s), causal, **kw)
        torch.cuda.empty_cache()


def _precompile(configs, variants, workers):
    """Fill the disk cache with every configuration's kernels in ``workers`` processes."""
    import multiprocessing

    jobs = [(d, causal, s, kw) for d, causal, s in configs for kw in variants.values()]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        pool.map(_compile_jobs, [jobs[i::workers] for i in range(workers)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=6, help="rounds of every column, alternating their order")
    parser.add_argument("--min-ms", type=float, default=5.0, help="a timing lasts at least this long (more launches)")
    parser.add_argument("--dims", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--seqlens", type=int, nargs="+", default=SEQLENS)
    parser.add_argument("--causal", choices=["both", "yes", "no"], default="both")
    parser.add_argument("--pingpong", choices=["on", "off"], default="on",
                        help="the consumer warpgroups take turns issuing their MMAs (the default) or not")
    parser.add_argument("--heavy-first", action="store_true",
                        help="the grid ordered by query block, last first (attention's heavy_first)")
    parser.add_argument("--tiles", nargs="+", default=[],
                        help="other tiles of ours timed beside the default in the same run: BLOCK_N:STAGES each "
                             "(:BLOCK_M, query rows a tile, after them: 128 or 192), "
                             "then :heavy (heavy_first), :persistent (a persistent grid) or :pertile (a CTA per "
                             "tile), and :nooverlap (overlap=False); or flags alone for the default tile")
    parser.add_argument("--backward", action="store_true",
                        help="time the backward (dq, dk, dv from dout) instead: FLOPs 2.5x the forward's")
    parser.add_argument("--precompile", type=int, metavar="N",
                        help="compile the forward kernels of every configuration first, in N processes (CPU work)")
    parser.add_argument("--out")
    args = parser.parse_args()
    say = reporter(args.out)
    causals = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    if args.precompile:
        _precompile([(d, causal, s) for d in args.dims for causal in causals for s in args.seqlens], _variants(args),
                    args.precompile)

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import cute_py as cute
    from examples import attention

    say(device_line(torch, f"{args.rounds} interleaved rounds of >= {args.reps} launches and >= {args.min_ms} ms, "
                           f"pingpong {args.pingpong}, heavy_first {args.heavy_first}"))
    variants = _variants(args)
    for d in args.dims:
        for causal in causals:
            for s in args.seqlens:
                b, h = TOKENS // s, WIDTH // d
                q, k, v, o, lse = _tensors(torch, d, s)
                ours = cute.compile(attention, q, k, v, o, lse, causal, **variants["cute_py"])
                qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
                if args.backward:
                    _backward_row(say, torch, F, SDPBackend, sdpa_kernel, ours, q, k, v, o, lse, qt, kt, vt, b, h, s,
                                  d, causal, args)
                    continue

                def sdpa(backend):
                    def run():
                        with sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
                    return run

                runs = {"cute_py": lambda: ours(q, k, v, o, lse), "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
                        "flash": sdpa(SDPBackend.FLASH_ATTENTION)}
                for name, kw in variants.items():
                    if name != "cute_py":
                        other = cute.compile(attention, q, k, v, o, lse, causal, **kw)
                        runs[name] = lambda other=other: other(q, k, v, o, lse)
                ref = runs["cudnn"]().transpose(1, 2)
                for name in [n for n in runs if n.startswith("cute_py")]:
                    o.fill_(float("nan"))
                    runs[name]()
                    err = (o.float() - ref.float()).abs().max().item()
                    assert err < 2e-2, f"d={d} causal={causal} s={s} {name}: differs from cuDNN by {err}"
                flops = 4 * b * h * s * s * d / (2 if causal else 1)
                with ClockSampler() as clock:
                    samples = dict(zip(runs, interleaved(list(runs.values()), args.reps, args.rounds, args.min_ms)))
                tf = {name: flops / statistics.median(t) / 1e12 for name, t in samples.items()}
                pub = PUBLISHED_FA3.get((d, causal))
                pub_text = f"  FA3 paper (16k) {pub}" if pub and s == 16384 else ""
                vs_cudnn, vs_flash = (faster(samples, "cute_py", other) for other in ("cudnn", "flash"))
                say(f"d={d:3} causal={int(causal)} seqlen={s:5} batch={b:2} heads={h:2}: cute_py {tf['cute_py']:6.1f}"
                    f"  cudnn {tf['cudnn']:6.1f}  flash {tf['flash']:6.1f} TFLOP/s  ratio/cudnn "
                    f"{vs_cudnn:5.3f}x  ratio/flash {vs_flash:5.3f}x  {clock.summary()}{pub_text}")
                for name in runs:
                    if name.startswith("cute_py["):
                        say(f"    {name} {tf[name]:6.1f} TFLOP/s  ratio/cudnn {faster(samples, name, 'cudnn'):5.3f}x")
                torch.cuda.empty_cache()


def _backward_row(say, torch, F, SDPBackend, sdpa_kernel, forward, q, k, v, o, lse, qt, kt, vt, b, h, s, d, causal,
                  args):
    """One configuration of the backward: ours (its three kernels) and each SDPA backend's autograd backward."""
    from examples import attention_backward

    forward(q, k, v, o, lse)
    do = torch.randn_like(q)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    graphs = {}
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        leaves = [t.detach().requires_grad_() for t in (qt, kt, vt)]
        with sdpa_kernel(backend):
            graphs[name] = (F.scaled_dot_product_attention(*leaves, is_causal=causal), leaves)
    runs = {"cute_py": lambda: attention_backward(q, k, v, o, lse, do, dq, dk, dv, causal=causal)}
    for name, (out, leaves) in graphs.items():
        runs[name] = (lambda out=out, leaves=leaves: torch.autograd.grad(out, leaves, do.transpose(1, 2),
                                                                         retain_graph=True))
    runs["cute_py"]()
    ref = runs["cudnn"]()
    err = max(((mine.float() - theirs.transpose(1, 2).float()).abs().max() / theirs.float().abs().max()).item()
              for mine, theirs in zip((dq, dk, dv), ref))
    assert err < 2e-2, f"d={d} causal={causal} s={s}: the gradients differ from cuDNN's by {err} (relative)"
    flops = 2.5 * 4 * b * h * s * s * d / (2 if causal else 1)
    with ClockSampler() as clock:
        samples = dict(zip(runs, interleaved(list(runs.values()), args.reps, args.rounds, args.min_ms)))
    tf = {name: flops / statistics.median(t) / 1e12 for name, t in samples.items()}
    vs_cudnn, vs_flash = (faster(samples, "cute_py", other) for other in ("cudnn", "flash"))
    say(f"backward d={d:3} causal={int(causal)} seqlen={s:5} batch={b:2} heads={h:2}: cute_py {tf['cute_py']:6.1f}  "
        f"cudnn {tf['cudnn']:6.1f}  flash {tf['flash']:6.1f} TFLOP/s  ratio/cudnn {vs_cudnn:5.3f}x"
        f"  ratio/flash {vs_flash:5.3f}x  {clock.summary()}")


if __name__ == "__main__":
    main()
