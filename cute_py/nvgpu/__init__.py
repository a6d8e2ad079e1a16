"""NVIDIA Hopper copy operations: ``cute_py.nvgpu.cpasync`` (cp.async and TMA), and the universal copy
(``CopyUniversalOp``, as the DSL's ``cute.nvgpu.CopyUniversalOp``)."""

from ..atom import CopyUniversalOp
from . import cpasync

__all__ = ["cpasync", "CopyUniversalOp"]
