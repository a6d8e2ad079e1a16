"""Timing compiled kernels on the GPU, with the CuTe DSL's ``testing.benchmark`` and ``JitArguments``.

``benchmark(fn, ...)`` runs ``fn`` ``warmup_iterations`` times, then ``iterations`` times between two CUDA
events recorded on ``stream``, and returns the mean time of one call in microseconds.  With a
``workspace_generator`` the calls cycle through ``workspace_count`` argument sets (so the timed calls do not
all hit the same data in L2).  With ``use_cuda_graphs`` the timed calls are captured once into a CUDA graph on
``stream`` (which must not be the default stream) and the graph is launched instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import CuteTypeError, CuteValueError

__all__ = ["JitArguments", "benchmark"]


class JitArguments:
    """The positional and keyword arguments of one call of a benchmarked function."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs

    def __repr__(self):
        return f"JitArguments({len(self.args)} args, {sorted(self.kwargs)})"


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
              use_cuda_graphs: bool = False, use_cupti: bool = False, nvtx_tag: str | None = None) -> float:
    """The mean time of one call of ``callable`` in microseconds (see the module).  Exactly one of
    ``kernel_arguments`` and ``workspace_generator`` may be given (neither: the call takes no arguments).
    ``use_cupti`` is refused (CUDA events only); ``nvtx_tag`` is accepted and has no effect."""
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
    start = _check(cu, cu.cuEventCreate(0), "cuEventCreate")
    end = _check(cu, cu.cuEventCreate(0), "cuEventCreate")
    try:
        _check(cu, cu.cuEventRecord(start, hstream), "cuEventRecord")
        if graph_exec is not None:
            _check(cu, cu.cuGraphLaunch(graph_exec, hstream), "cuGraphLaunch")
        else:
            for i in range(iterations):
                call(i)
        _check(cu, cu.cuEventRecord(end, hstream), "cuEventRecord")
        _check(cu, cu.cuEventSynchronize(end), "cuEventSynchronize")
        ms = _check(cu, cu.cuEventElapsedTime(start, end), "cuEventElapsedTime")
    finally:
        cu.cuEventDestroy(start)
        cu.cuEventDestroy(end)
        if graph_exec is not None:
            cu.cuGraphExecDestroy(graph_exec)
    return ms * 1e3 / iterations


callable_ = callable
