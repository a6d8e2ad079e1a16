"""NVIDIA Hopper copy and MMA operations: ``cute_py.nvgpu.cpasync`` (cp.async and TMA), ``cute_py.nvgpu.warp``
(mma.sync, ldmatrix, stmatrix), ``cute_py.nvgpu.warpgroup`` (wgmma), ``OperandMajorMode``, and the universal copy (``CopyUniversalOp``, as the DSL's
``cute.nvgpu.CopyUniversalOp``)."""

from ..atom import CopyUniversalOp
from . import cpasync, warp, warpgroup
from .warpgroup.operands import OperandMajorMode

__all__ = ["cpasync", "warp", "warpgroup", "CopyUniversalOp", "OperandMajorMode"]
