"""NVIDIA Hopper copy and MMA operations, one package per hardware unit: ``cute_py.nvgpu.cpasync`` (cp.async,
and the TMA names the DSL keeps there), ``cute_py.nvgpu.tma`` (the TMA unit), ``cute_py.nvgpu.warp`` (mma.sync,
ldmatrix, stmatrix), ``cute_py.nvgpu.warpgroup`` (wgmma); ``sync`` (the instructions that are not copies of a
unit, and st.async) and ``forms`` (the low-level device forms). Here: ``OperandMajorMode``, the cache modes of
loads (``LoadCacheMode``, also ``cpasync.LoadCacheMode``), and the universal copy and MMA (``CopyUniversalOp``,
``MmaUniversalOp``, as the DSL's ``cute.nvgpu.CopyUniversalOp`` and ``cute.nvgpu.MmaUniversalOp``)."""

from __future__ import annotations

from ..atom import CopyUniversalOp
from . import cpasync, warp, warpgroup
from .cpasync.ops import LoadCacheMode
from .universal import MmaUniversalOp
from .warpgroup.operands import OperandMajorMode

__all__ = ["cpasync", "warp", "warpgroup", "CopyUniversalOp", "MmaUniversalOp", "LoadCacheMode", "OperandMajorMode"]
