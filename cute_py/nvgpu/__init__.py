"""NVIDIA Hopper copy operations: ``cute_py.nvgpu.cpasync`` (cp.async and TMA)."""

from . import cpasync

__all__ = ["cpasync"]
