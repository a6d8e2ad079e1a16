"""The device instructions that are not copies of a unit -- descriptor (tensormap) management, fences, the
bulk-group commit and wait, a cp.async tile copy, the warpgroup MMA's fence, commit, wait and issue -- and
``st.async`` into a peer CTA's shared memory (:class:`CopyDsmemStoreOp`).

Each is a frozen dataclass; a low-level form (:mod:`cute_py.nvgpu.forms`) or a unit's device function hands one,
with its operands, to the active tracer, which emits it through its table keyed by the op's class.
``INSTRUCTION_CLASSES`` lists every non-copy instruction (the op tables are checked complete against it).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..atom import CopyOp

if TYPE_CHECKING:
    from ..tensor.dtypes import DType

__all__ = [
    "CopyDsmemStoreOp",
    "DeviceInstruction",
    "PrefetchTensormapOp",
    "TensormapPtrOp",
    "TensormapCopyOp",
    "TensormapReplaceOp",
    "FenceTensormapAcquireOp",
    "FenceTensormapReleaseOp",
    "CpFenceTensormapReleaseOp",
    "BulkCommitGroupOp",
    "BulkWaitGroupOp",
    "CpAsyncTileCopyOp",
    "WgmmaFenceOp",
    "WgmmaCommitGroupOp",
    "WgmmaWaitGroupOp",
    "WgmmaMmaAsyncOp",
    "COPY_OP_CLASSES",
    "INSTRUCTION_CLASSES",
]


@dataclasses.dataclass(frozen=True)
class CopyDsmemStoreOp(CopyOp):
    """``st.async.shared::cluster.mbarrier::complete_tx::bytes``: a store into a peer CTA's smem."""

    def valid_bits(self, dtype: DType) -> set[int]:
        return {32, 64, 128}


@dataclasses.dataclass(frozen=True)
class DeviceInstruction:
    """A device instruction other than a copy (the copies are the ops of the units: ``cpasync.ops``, ``tma.ops``,
    ``warp.ops`` and :class:`CopyDsmemStoreOp` here)."""


@dataclasses.dataclass(frozen=True)
class PrefetchTensormapOp(DeviceInstruction):
    """``prefetch.tensormap [desc]`` (operands: ``atom``)."""


@dataclasses.dataclass(frozen=True)
class TensormapPtrOp(DeviceInstruction):
    """The generic address of an atom's descriptor parameter (operands: ``atom``); returns a pointer value."""


@dataclasses.dataclass(frozen=True)
class TensormapCopyOp(DeviceInstruction):
    """Copy an atom's 128-byte descriptor to memory (operands: ``atom``, ``dst``)."""


@dataclasses.dataclass(frozen=True)
class TensormapReplaceOp(DeviceInstruction):
    """``tensormap.replace`` of the address, dims and strides for a new tensor (operands: ``atom``, ``tensor``,
    ``desc``)."""


@dataclasses.dataclass(frozen=True)
class FenceTensormapAcquireOp(DeviceInstruction):
    """``fence.proxy.tensormap::generic.acquire.gpu [desc], 128`` (operands: ``desc``)."""


@dataclasses.dataclass(frozen=True)
class FenceTensormapReleaseOp(DeviceInstruction):
    """``fence.proxy.tensormap::generic.release.gpu``."""


@dataclasses.dataclass(frozen=True)
class CpFenceTensormapReleaseOp(DeviceInstruction):
    """``tensormap.cp_fenceproxy`` from shared to global memory (operands: ``src``, ``dst``)."""


@dataclasses.dataclass(frozen=True)
class BulkCommitGroupOp(DeviceInstruction):
    """``cp.async.bulk.commit_group``: close the group of TMA stores issued so far."""


@dataclasses.dataclass(frozen=True)
class BulkWaitGroupOp(DeviceInstruction):
    """``cp.async.bulk.wait_group[.read] count`` (a static count in 0..63)."""

    count: int = 0
    read: bool = False


@dataclasses.dataclass(frozen=True)
class CpAsyncTileCopyOp(DeviceInstruction):
    """One thread's cp.async copies of a tile (``GenericToSharedAsyncTileCopier.copy``): operands ``dst``,
    ``src``, ``plan`` (its checked static facts) and ``num_valid_rows`` (``None``: no mask)."""

    copier: Any = None


@dataclasses.dataclass(frozen=True)
class WgmmaFenceOp(DeviceInstruction):
    """``wgmma.fence.sync.aligned`` (``cute_py.nvgpu.warpgroup.fence``)."""


@dataclasses.dataclass(frozen=True)
class WgmmaCommitGroupOp(DeviceInstruction):
    """``wgmma.commit_group.sync.aligned``."""


@dataclasses.dataclass(frozen=True)
class WgmmaWaitGroupOp(DeviceInstruction):
    """``wgmma.wait_group.sync.aligned count`` (a static count in 0..7)."""

    count: int = 0


@dataclasses.dataclass(frozen=True)
class WgmmaMmaAsyncOp(DeviceInstruction):
    """One ``wgmma.mma_async`` of ``mma`` (a ``warpgroup.MmaF16BF16Op``): operands ``acc``, ``a``, ``b``,
    ``accumulate`` (see ``MmaF16BF16Op.mma``)."""

    mma: Any = None


INSTRUCTION_CLASSES = (PrefetchTensormapOp, TensormapPtrOp, TensormapCopyOp, TensormapReplaceOp,
                       FenceTensormapAcquireOp, FenceTensormapReleaseOp, CpFenceTensormapReleaseOp, BulkCommitGroupOp,
                       BulkWaitGroupOp, CpAsyncTileCopyOp, WgmmaFenceOp, WgmmaCommitGroupOp, WgmmaWaitGroupOp,
                       WgmmaMmaAsyncOp)


# the concrete copy op of this module (with the units' COPY_OP_CLASSES, what the op tables are checked against)
COPY_OP_CLASSES = (CopyDsmemStoreOp,)
