"""``cute_py.nvgpu.cpasync`` (the CuTe DSL's ``cute.nvgpu.cpasync``): the asynchronous copies of Hopper, cp.async
and TMA, as the DSL names them.

The cp.async unit is this package -- its operation and cache modes (:mod:`.ops`) and the tile copier
(:mod:`.copier`); the TMA names are those of :mod:`cute_py.nvgpu.tma` (operations, ``make_tiled_tma_atom``,
``tma_partition``, the descriptor, multicast masks), ``st.async`` (``CopyDsmemStoreOp``) is in
:mod:`cute_py.nvgpu.sync`, and the low-level device forms (``tma_load``, ``cp_async_shared_global``...) in
:mod:`cute_py.nvgpu.forms`. Every name is re-exported here, explicitly.
"""

from __future__ import annotations

from ..forms import (BYTES_PER_POINTER, BYTES_PER_TENSORMAP, DeviceOnlyError, copy_tensormap, cp_async_gs,
                     cp_async_gs_conditional, cp_async_shared_global, cp_fence_tma_desc_release, extract_tensormap_ptr,
                     fence_tma_desc_acquire, fence_tma_desc_release, prefetch_descriptor, prefetch_tma_descriptor,
                     tma_load, tma_store, tma_store_arrive, tma_store_wait, update_tma_descriptor)
from ..sync import CopyDsmemStoreOp
from ..tma.atom import TmaCopyAtom, make_tiled_tma_atom, tma_partition
from ..tma.desc import TmaDescriptor, TmaError, TmaSwizzle
from ..tma.multicast import create_tma_multicast_mask
from ..tma.ops import (CopyBulkTensorIm2colG2SOp, CopyBulkTensorTileG2SMulticastOp, CopyBulkTensorTileG2SOp,
                       CopyBulkTensorTileS2GOp, CopyReduceBulkTensorTileS2GOp, ReductionOp, is_tma_op)
from .copier import EvictionPolicy, GenericToSharedAsyncTileCopier, ThreadScope
from .ops import CopyG2SOp, LoadCacheMode

__all__ = [
    "LoadCacheMode",
    "ReductionOp",
    "CopyG2SOp",
    "CopyBulkTensorTileG2SOp",
    "CopyBulkTensorTileG2SMulticastOp",
    "CopyBulkTensorIm2colG2SOp",
    "CopyBulkTensorTileS2GOp",
    "CopyReduceBulkTensorTileS2GOp",
    "CopyDsmemStoreOp",
    "is_tma_op",
    "TmaCopyAtom",
    "make_tiled_tma_atom",
    "tma_partition",
    "create_tma_multicast_mask",
    "TmaDescriptor",
    "TmaError",
    "TmaSwizzle",
    "GenericToSharedAsyncTileCopier",
    "EvictionPolicy",
    "ThreadScope",
    # the low-level builtins (the instruction classes behind them are in cute_py.nvgpu.sync)
    "BYTES_PER_POINTER",
    "BYTES_PER_TENSORMAP",
    "DeviceOnlyError",
    "copy_tensormap",
    "cp_async_gs",
    "cp_async_gs_conditional",
    "cp_async_shared_global",
    "cp_fence_tma_desc_release",
    "extract_tensormap_ptr",
    "fence_tma_desc_acquire",
    "fence_tma_desc_release",
    "prefetch_descriptor",
    "prefetch_tma_descriptor",
    "tma_load",
    "tma_store",
    "tma_store_arrive",
    "tma_store_wait",
    "update_tma_descriptor",
]
