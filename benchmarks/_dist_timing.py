"""Timing for the multi-GPU benchmarks (``bench_all_reduce.py``, ``bench_all_gather_gemm.py``): CUDA events
around a run on every rank after a barrier, the median over repetitions, the slowest rank's."""

import statistics

import torch
import torch.distributed as dist


def median_us(run, per, reps):
    """The slowest rank's median microseconds of ``run()`` divided by ``per`` (the calls ``run`` makes)."""
    times = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / per)
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t)


def eager_us(fn, calls, reps):
    """Microseconds per call of ``fn`` called ``calls`` times from Python (host time included)."""
    fn()
    torch.cuda.synchronize()

    def run():
        for _ in range(calls):
            fn()

    return median_us(run, calls, reps)


def graph_us(fn, calls, reps):
    """Microseconds per call of ``fn`` captured ``calls`` times in one CUDA graph (no host time)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    return median_us(graph.replay, calls, reps)
