"""``cute_py.nvgpu.warp`` (the CuTe DSL's ``cute.nvgpu.warp``): the warp-level tensor-core operations of
:mod:`.ops` -- ``mma.sync`` (:class:`MmaF16BF16Op`) and ``ldmatrix`` / ``stmatrix`` (:class:`LdMatrix8x8x16bOp`,
:class:`StMatrix8x8x16bOp`)."""

from __future__ import annotations

from .ops import COPY_OP_CLASSES, MMA_OP_CLASSES, LdMatrix8x8x16bOp, MmaF16BF16Op, StMatrix8x8x16bOp

__all__ = ["MmaF16BF16Op", "LdMatrix8x8x16bOp", "StMatrix8x8x16bOp", "MMA_OP_CLASSES", "COPY_OP_CLASSES"]
