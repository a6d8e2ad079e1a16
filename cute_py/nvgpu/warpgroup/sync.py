"""The warpgroup MMA's ordering instructions (the CuTe DSL's ``cute.nvgpu.warpgroup.fence`` / ``commit_group`` /
``wait_group``), each issued by all 128 threads of a warpgroup (``.sync.aligned``):

- ``fence()``: ``wgmma.fence.sync.aligned`` -- order earlier register and shared-memory writes before the
  ``wgmma.mma_async`` that read them (before the first MMA, and after touching its accumulators);
- ``commit_group()``: ``wgmma.commit_group.sync.aligned`` -- close a group of the MMAs issued so far;
- ``wait_group(n)``: ``wgmma.wait_group.sync.aligned n`` -- wait until at most ``n`` groups are pending
  (``n`` static, 0..7); then their accumulators may be read.
"""

from __future__ import annotations

from ... import device
from ...errors import DeviceOnlyError
from ..sync import WgmmaCommitGroupOp, WgmmaFenceOp, WgmmaWaitGroupOp
from .ops import WgmmaShapeError

__all__ = ["fence", "commit_group", "wait_group"]


def _emit(front, op):
    tracer = device.active()
    if tracer is None:
        raise DeviceOnlyError(f"{front} is a device operation: call it inside a kernel (@cute_py.kernel)")
    return tracer.emit(op)


def fence() -> None:
    """``wgmma.fence.sync.aligned``."""
    return _emit("warpgroup.fence", WgmmaFenceOp())


def commit_group() -> None:
    """``wgmma.commit_group.sync.aligned``."""
    return _emit("warpgroup.commit_group", WgmmaCommitGroupOp())


def wait_group(group: int) -> None:
    """``wgmma.wait_group.sync.aligned group``: at most ``group`` (a static int in 0..7) groups stay pending."""
    if type(group) is not int or not 0 <= group <= 7:
        raise WgmmaShapeError(f"wait_group takes a static count of pending groups in 0..7, got {group!r}")
    return _emit("warpgroup.wait_group", WgmmaWaitGroupOp(group))
