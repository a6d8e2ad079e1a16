"""``cute_py.cuda``: the CUDA driver helpers the CuTe DSL's programs call as ``cutlass.cuda`` — making a device's
primary context current, the default stream, and synchronising a stream (through cuda-python)."""

from __future__ import annotations

from typing import Any

__all__ = ["initialize_cuda_context", "default_stream", "stream_sync"]


def initialize_cuda_context(device_id: int = 0, flags: int = 0) -> Any:
    """Initialise the driver (``cuInit(flags)``) and make device ``device_id``'s primary context current; returns
    the context. ``LaunchError`` naming the driver call that failed (no driver, no such device)."""
    from .compiler.runtime.launch import check, driver

    d = driver()
    check(d.cuInit(flags), "cuInit")
    dev = check(d.cuDeviceGet(device_id), f"cuDeviceGet({device_id})")
    ctx = check(d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def default_stream() -> Any:
    """The legacy default stream as a driver ``CUstream`` (handle 0)."""
    from .compiler.runtime.launch import driver

    return driver().CUstream(0)


def stream_sync(stream: Any) -> None:
    """Wait for the work queued on ``stream`` (any stream ``cute_py`` takes: a ``CUstream``, a torch stream...)."""
    from .compiler.specs.annotations import stream_handle
    from .compiler.runtime.launch import check, driver

    d = driver()
    h = stream_handle(stream)
    check(d.cuStreamSynchronize(h if not isinstance(h, int) else d.CUstream(h)), "cuStreamSynchronize")
