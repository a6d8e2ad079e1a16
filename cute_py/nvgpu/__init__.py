"""NVIDIA Hopper copy and MMA operations: ``cute_py.nvgpu.cpasync`` (cp.async and TMA), ``cute_py.nvgpu.warp``
(mma.sync, ldmatrix, stmatrix), ``cute_py.nvgpu.warpgroup`` (wgmma), ``OperandMajorMode``, the cache modes of loads
(``LoadCacheMode``, also ``cpasync.LoadCacheMode``), and the universal copy and MMA (``CopyUniversalOp``,
``MmaUniversalOp``, as the DSL's ``cute.nvgpu.CopyUniversalOp`` and ``cute.nvgpu.MmaUniversalOp``)."""

from ..atom import CopyUniversalOp
from . import cpasync, warp, warpgroup
from .copy_ops import LoadCacheMode
from .universal import MmaUniversalOp
from .warpgroup.operands import OperandMajorMode

__all__ = ["cpasync", "warp", "warpgroup", "CopyUniversalOp", "MmaUniversalOp", "LoadCacheMode", "OperandMajorMode"]
