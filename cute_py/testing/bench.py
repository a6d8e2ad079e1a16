"""Timing compiled kernels on the GPU, with the CuTe DSL's ``testing.benchmark`` and ``JitArguments``.

``benchmark(fn, ...)`` runs ``fn`` ``warmup_iterations`` times, then ``iterations`` times with a CUDA event
recorded on ``stream`` before each call and after the last, and returns the mean time of one call in
microseconds (the DSL's value: the span of the timed calls over their number). With a ``workspace_generator``
the calls cycle through ``workspace_count`` argument sets (so the timed calls do not all hit the same data in
L2). With ``use_cuda_graphs`` the timed calls are captured once into a CUDA graph on ``stream`` (which must not
be the default stream) and the graph is launched instead.

What this adds to the DSL's: the result is a :class:`Timing`, a ``float`` (the mean) that also holds each call's
time (``samples``, from consecutive events), their ``median``, ``min``, ``max`` and ``spread`` (``(max - min) /
median``); and ``cold_l2=True`` writes a buffer twice the size of the GPU's L2 cache before each timed call,
outside its events, so that every call starts from a cold L2 (its mean is then over the calls alone).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import CuteTypeError, CuteValueError

__all__ = ["JitArguments", "Timing", "benchmark"]


class JitArguments:
    """The positional and keyword arguments of one call of a benchmarked function."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs

    def __repr__(self):
        return f"JitArguments({len(self.args)} args, {sorted(self.kwargs)})"


class Timing(float):
    """A benchmark's result: the mean time of one call in microseconds (the ``float`` itself), and ``samples``
    (each timed call's microseconds) with their ``median``, ``min``, ``max`` and ``spread``."""

    samples: tuple[float, ...]

    def __new__(cls, mean: float, samples: tuple[float, ...]) -> "Timing":
        t = super().__new__(cls, mean)
        t.samples = tuple(samples)
        return t

    @property
    def median(self) -> float:
        s = sorted(self.samples)
        n = len(s)
        return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)

    @property
    def spread(self) -> float:
        """``(max - min) / median`` of the samples (0 for one sample)."""
        m = self.median
        return (self.max - self.min) / m if m > 0 else 0.0

    def __repr__(self):
        return (f"Timing(mean={float(self):.3f} us, median={self.median:.3f}, min={self.min:.3f}, "
                f"max={self.max:.3f}, {len(self.samples)} samples)")


def _check(cu, result, what):
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise CuteValueError(f"benchmark: {what} failed with {err!r}")
    return result[1] if isinstance(result, tuple) and len(result) > 1 else None


def _stream_handle(stream):
    if stream is None:
        return 0
    for attr in ("cuda_stream", "handle"):  # torch / cupy streams
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)  # an int or a CUstream


def _int_arg(v, name, minimum):
    if type(v) is not int or v < minimum:
        raise CuteValueError(f"benchmark: {name} must be an int >= {minimum}, got {v!r}")
    return v


def benchmark(callable: Callable[..., Any], *, warmup_iterations: int = 10, iterations: int = 100,
              stream: Any = None, kernel_arguments: JitArguments | None = None,
              workspace_generator: Callable[[], JitArguments] | None = None, workspace_count: int = 1,
              use_cuda_graphs: bool = False, use_cupti: bool = False, nvtx_tag: str | None = None,
              cold_l2: bool = False) -> Timing:
    """The mean time of one call of ``callable`` in microseconds, as a :class:`Timing` (see the module).  Exactly
    one of ``kernel_arguments`` and ``workspace_generator`` may be given (neither: the call takes no arguments).
    ``use_cupti`` is refused (CUDA events only); ``nvtx_tag`` is accepted and has no effect; ``cold_l2`` does not
    go with ``use_cuda_graphs`` (a graph's calls run back to back)."""
    from cuda.bindings import driver as cu

    if not callable_(callable):
        raise CuteTypeError(f"benchmark needs a callable, got {type(callable).__name__}")
    _int_arg(warmup_iterations, "warmup_iterations", 0)
    _int_arg(iterations, "iterations", 1)
    _int_arg(workspace_count, "workspace_count", 1)
    if use_cupti:
        raise CuteValueError("benchmark: use_cupti is not supported (times come from CUDA events)")
    if kernel_arguments is not None and workspace_generator is not None:
        raise CuteValueError("benchmark takes kernel_arguments or workspace_generator, not both")
    if cold_l2 and use_cuda_graphs:
        raise CuteValueError("benchmark: cold_l2 needs each call timed on its own; use_cuda_graphs times the graph")
    if workspace_generator is not None:
        workspaces = [workspace_generator() for _ in range(workspace_count)]
    else:
        workspaces = [kernel_arguments if kernel_arguments is not None else JitArguments()]
    for w in workspaces:
        if not isinstance(w, JitArguments):
            raise CuteTypeError(f"benchmark: workspaces are JitArguments, got {type(w).__name__}")
    handle = _stream_handle(stream)
    if use_cuda_graphs and handle == 0:
        raise CuteValueError("benchmark: use_cuda_graphs needs a non-default stream (a capture cannot run on it)")
    extra = {} if handle == 0 else {"stream": handle}

    def call(i):
        w = workspaces[i % len(workspaces)]
        callable(*w.args, **{**extra, **w.kwargs})

    hstream = cu.CUstream(handle)
    for i in range(warmup_iterations):
        call(i)
    graph_exec = None
    if use_cuda_graphs:
        _check(cu, cu.cuStreamBeginCapture(hstream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
               "cuStreamBeginCapture")
        try:
            for i in range(iterations):
                call(i)
        finally:
            graph = _check(cu, cu.cuStreamEndCapture(hstream), "cuStreamEndCapture")
        graph_exec = _check(cu, cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        _check(cu, cu.cuGraphLaunch(graph_exec, hstream), "cuGraphLaunch")  # warm the graph once
    if graph_exec is not None:
        try:
            events = [_check(cu, cu.cuEventCreate(0), "cuEventCreate") for _ in range(2)]
            try:
                _check(cu, cu.cuEventRecord(events[0], hstream), "cuEventRecord")
                _check(cu, cu.cuGraphLaunch(graph_exec, hstream), "cuGraphLaunch")
                _check(cu, cu.cuEventRecord(events[1], hstream), "cuEventRecord")
                _check(cu, cu.cuEventSynchronize(events[1]), "cuEventSynchronize")
                ms = _check(cu, cu.cuEventElapsedTime(events[0], events[1]), "cuEventElapsedTime")
            finally:
                for e in events:
                    cu.cuEventDestroy(e)
        finally:
            cu.cuGraphExecDestroy(graph_exec)
        return Timing(ms * 1e3 / iterations, (ms * 1e3 / iterations,))
    return _timed_calls(cu, hstream, call, iterations, cold_l2)


def _timed_calls(cu, hstream, call, iterations, cold_l2):
    """Each call between two events (consecutive calls share one; with ``cold_l2`` each call has its own pair,
    with the L2 flush before the first): their times and mean."""
    flush, size = (_l2_flush_buffer(cu) if cold_l2 else (None, 0))
    count = iterations + 1 if not cold_l2 else 2 * iterations
    events = []
    try:
        for _ in range(count):
            events.append(_check(cu, cu.cuEventCreate(0), "cuEventCreate"))
        for i in range(iterations):
            if cold_l2:
                _check(cu, cu.cuMemsetD8Async(flush, i & 0xFF, size, hstream), "cuMemsetD8Async")
                _check(cu, cu.cuEventRecord(events[2 * i], hstream), "cuEventRecord")
            elif i == 0:
                _check(cu, cu.cuEventRecord(events[0], hstream), "cuEventRecord")
            call(i)
            _check(cu, cu.cuEventRecord(events[2 * i + 1 if cold_l2 else i + 1], hstream), "cuEventRecord")
        _check(cu, cu.cuEventSynchronize(events[-1]), "cuEventSynchronize")
        pairs = [(2 * i, 2 * i + 1) if cold_l2 else (i, i + 1) for i in range(iterations)]
        samples = tuple(_check(cu, cu.cuEventElapsedTime(events[a], events[b]), "cuEventElapsedTime") * 1e3
                        for a, b in pairs)
        mean = sum(samples) / iterations if cold_l2 else \
            _check(cu, cu.cuEventElapsedTime(events[0], events[-1]), "cuEventElapsedTime") * 1e3 / iterations
    finally:
        for e in events:
            cu.cuEventDestroy(e)
        if flush is not None:
            cu.cuMemFree(flush)
    return Timing(mean, samples)


def _l2_flush_buffer(cu):
    """``(device allocation, bytes)``: twice the L2 cache of the current device."""
    dev = _check(cu, cu.cuCtxGetDevice(), "cuCtxGetDevice")
    l2 = _check(cu, cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev),
                "cuDeviceGetAttribute")
    size = 2 * max(int(l2), 1 << 20)
    return _check(cu, cu.cuMemAlloc(size), "cuMemAlloc"), size

callable_ = callable
