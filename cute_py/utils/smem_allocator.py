"""``cute_py.utils.SmemAllocator`` (the CuTe DSL's ``cutlass.utils.SmemAllocator``): the kernel's shared-memory
allocator, the same class as ``cute_py.arch.SmemAllocator`` (see :mod:`cute_py.compiler.lang.smem`), and
``get_smem_capacity_in_bytes``."""

from __future__ import annotations

from ..compiler.lang.smem import SmemAllocator

__all__ = ["SmemAllocator", "get_smem_capacity_in_bytes"]


def get_smem_capacity_in_bytes(compute_capability: str | None = None) -> int:
    """The shared memory one block may use on ``compute_capability`` (``None``, ``"sm_90"`` or ``"sm_90a"``):
    ``SmemAllocator.capacity_in_bytes``."""
    return SmemAllocator.capacity_in_bytes(compute_capability)
