"""The operand vocabulary of the warpgroup MMA (the CuTe DSL's ``cute.nvgpu.OperandMajorMode`` and
``cute.nvgpu.warpgroup.OperandSource`` / ``Field``).

- ``OperandMajorMode``: which mode of an operand is contiguous in shared memory -- ``K``, or ``MN`` (M for A,
  N for B). WGMMA reads an MN-major operand "transposed" (its ``imm-trans`` bit is 1).
- ``OperandSource``: where A comes from -- ``SMEM`` (a shared-memory matrix descriptor) or ``RMEM`` (four 32-bit
  registers per thread; then A is K-major).
- ``Field.ACCUMULATE``: the MMA field that says whether D = A*B + D (true) or D = A*B (false): WGMMA's
  ``scale-d`` predicate.
"""

from __future__ import annotations

import enum

__all__ = ["OperandMajorMode", "OperandSource", "Field"]


class OperandMajorMode(enum.Enum):
    """Which mode of an MMA operand is contiguous in memory: ``MN`` (M for A, N for B) or ``K``."""

    MN = "mn"
    K = "k"

    def __str__(self) -> str:
        return f"OperandMajorMode.{self.name}"


class OperandSource(enum.Enum):
    """Where the warpgroup MMA reads its A operand: shared memory (a descriptor) or registers."""

    SMEM = "smem"
    RMEM = "rmem"

    def __str__(self) -> str:
        return f"OperandSource.{self.name}"


class Field(enum.Enum):
    """Settable fields of a warpgroup MMA: ``ACCUMULATE`` (WGMMA's ``scale-d``: keep adding into D)."""

    ACCUMULATE = "accum_c"

    def __str__(self) -> str:
        return f"Field.{self.name}"
