"""Warp-level tensor-core operations: ``mma.sync`` MMA ops and the ``ldmatrix`` / ``stmatrix`` copy ops.

- :class:`MmaF16BF16Op` ``(ab_dtype, acc_dtype, shape_mnk)``: ``mma.sync.aligned.m16n8k{8,16}.row.col`` on
  Float16 or BFloat16 inputs with Float32 accumulators (Float16 accumulators for Float16 inputs).  Its
  thread-value layouts are CuTe's ``SM80_16x8x{8,16}_*_TN`` traits: A is ``(M, K)``, B is ``(N, K)`` (both
  K-major, "TN"), C ``(M, N)``, all indexed column-major.
- :class:`LdMatrix8x8x16bOp` ``(transpose, num_matrices)``: ``ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans]
  .shared.b16`` -- each of ``num_matrices`` 8x8 matrices of 16-bit elements is read from eight 16-byte rows
  of shared memory whose addresses threads ``8 i .. 8 i + 7`` give (matrix ``i``); thread ``t`` receives
  row ``t / 4``, elements ``2 (t % 4)`` and ``+1`` of each matrix (of its transpose with ``.trans``).  Its
  (thread, value) -> bit layouts are CuTe's ``SM75_U32x{1,2,4}_LDSM_N`` / ``SM75_U16x{2,4,8}_LDSM_T``.
- :class:`StMatrix8x8x16bOp` ``(transpose, num_matrices)``: ``stmatrix.sync.aligned.m8n8.x{1,2,4}[.trans]
  .shared.b16``, the reverse data movement (CuTe's ``SM90_U32x*_STSM_N`` / ``SM90_U16x*_STSM_T``).

Each op has one kernel emission entry, one CPU reference (:mod:`cute_py.reference.warp`) and one dialect op
with its lowering rule.  ``ptx_mma_sm70`` (``mma.sync.aligned.m8n8k4``) is in :mod:`cute_py.arch`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...atom import CopyOp
from ...core.layout import Layout
from ...errors import CuteTypeError, CuteValueError
from ...mma import MmaOp
from ...tensor.dtypes import BFloat16, DType, Float16, Float32, dtype_of

__all__ = [
    "MmaF16BF16Op",
    "LdMatrix8x8x16bOp",
    "StMatrix8x8x16bOp",
    "MMA_OP_CLASSES",
    "COPY_OP_CLASSES",
]

# CuTe's SM80 register layouts ((T32, V) -> column-major index of the tile)
_16x8_ROW = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))  # (M16, N8) / (M16, K8)
_8x8_ROW = Layout(((4, 8), 2), ((16, 1), 8))  # (N8, K8)
_A_16x16 = Layout(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))  # (M16, K16)
_B_8x16 = Layout(((4, 8), (2, 2)), ((16, 1), (8, 64)))  # (N8, K16)


def _dtype(x, what):
    try:
        return dtype_of(x)
    except Exception:
        raise CuteTypeError(f"{what} must be a cute_py numeric type, got {x!r}") from None


@dataclasses.dataclass(frozen=True)
class MmaF16BF16Op(MmaOp):
    """``mma.sync.aligned.m16n8k{8,16}.row.col.{f32,f16}.{f16,bf16}.{f16,bf16}.{f32,f16}``.

    Rules: ``ab_dtype`` is Float16 or BFloat16; ``acc_dtype`` is Float32, or Float16 with Float16 inputs;
    ``shape_mnk`` is ``(16, 8, 8)`` or ``(16, 8, 16)``.  Each thread of the warp holds 4 (k8) or 8 (k16)
    elements of A, 2 or 4 of B and 4 accumulators.
    """

    ab_dtype: Any = Float16
    acc_dtype: Any = Float32
    shape_mnk: tuple = (16, 8, 16)

    def __post_init__(self):
        ab, acc = _dtype(self.ab_dtype, "ab_dtype"), _dtype(self.acc_dtype, "acc_dtype")
        if ab not in (Float16, BFloat16):
            raise CuteValueError(f"MmaF16BF16Op: ab_dtype must be Float16 or BFloat16, got {ab.name}")
        if acc not in (Float32, Float16):
            raise CuteValueError(f"MmaF16BF16Op: acc_dtype must be Float32 or Float16, got {acc.name}")
        if acc is Float16 and ab is not Float16:
            raise CuteValueError(f"MmaF16BF16Op: Float16 accumulators need Float16 inputs, got {ab.name} "
                                 "(BFloat16 inputs accumulate in Float32)")
        shape = tuple(self.shape_mnk) if isinstance(self.shape_mnk, (tuple, list)) else self.shape_mnk
        if shape not in ((16, 8, 8), (16, 8, 16)):
            raise CuteValueError(f"MmaF16BF16Op: shape_mnk must be (16, 8, 8) or (16, 8, 16), got {self.shape_mnk!r}")
        object.__setattr__(self, "ab_dtype", ab)
        object.__setattr__(self, "acc_dtype", acc)
        object.__setattr__(self, "shape_mnk", shape)

    @property
    def a_dtype(self) -> DType:
        return self.ab_dtype

    @property
    def b_dtype(self) -> DType:
        return self.ab_dtype

    def thr_id(self) -> Layout:
        return Layout(32)

    def layout_a_tv(self) -> Layout:
        return _A_16x16 if self.shape_mnk[2] == 16 else _16x8_ROW

    def layout_b_tv(self) -> Layout:
        return _B_8x16 if self.shape_mnk[2] == 16 else _8x8_ROW

    def layout_c_tv(self) -> Layout:
        return _16x8_ROW

    @property
    def ptx(self) -> str:
        """The instruction's PTX name."""
        m, n, k = self.shape_mnk
        acc = "f32" if self.acc_dtype is Float32 else "f16"
        ab = "f16" if self.ab_dtype is Float16 else "bf16"
        return f"mma.sync.aligned.m{m}n{n}k{k}.row.col.{acc}.{ab}.{ab}.{acc}"

    def __repr__(self):
        return f"MmaF16BF16Op({self.ab_dtype.name}, {self.acc_dtype.name}, {self.shape_mnk})"


# -- ldmatrix / stmatrix ------------------------------------------------------------------------------

# (thread, value) -> bit of the matrices, for x1, x2, x4 (CuTe's copy traits)
_ROWS_BITS = {  # each thread's 128-bit row (threads beyond the addressing ones repeat them)
    1: Layout(((8, 4), 128), ((128, 0), 1)),
    2: Layout(((16, 2), 128), ((128, 0), 1)),
    4: Layout((32, 128), (128, 1)),
}
_REGS_BITS = {  # non-transposed: register i of thread t = bits 32 t .. 32 t + 31 of matrix i
    1: Layout((32, 32), (32, 1)),
    2: Layout((32, (32, 2)), (32, (1, 1024))),
    4: Layout((32, (32, 4)), (32, (1, 1024))),
}
_REGS_BITS_T = {  # transposed: 16-bit halves from rows 2 (t % 4) and + 1, column t / 4
    1: Layout(((4, 8), (16, 2)), ((256, 16), (1, 128))),
    2: Layout(((4, 8), (16, 2, 2)), ((256, 16), (1, 128, 1024))),
    4: Layout(((4, 8), (16, 2, 4)), ((256, 16), (1, 128, 1024))),
}


@dataclasses.dataclass(frozen=True)
class _MatrixOp(CopyOp):
    transpose: bool = False
    num_matrices: int = 1

    def __post_init__(self):
        if type(self.transpose) is not bool:
            raise CuteTypeError(f"{type(self).__name__}: transpose must be a bool, got {self.transpose!r}")
        if self.num_matrices not in (1, 2, 4) or type(self.num_matrices) is not int:
            raise CuteValueError(f"{type(self).__name__}: num_matrices must be 1, 2 or 4, got {self.num_matrices!r}")

    def thr_id(self) -> Layout:
        return Layout(32)

    def valid_bits(self, dtype: DType) -> set[int]:
        return {32 * self.num_matrices}

    def default_bits(self, dtype: DType) -> int:
        return 32 * self.num_matrices

    def check(self, dtype: DType, num_bits: int) -> None:
        if dtype.width != 16:
            raise CuteValueError(f"{type(self).__name__} moves 16-bit elements (b16), not {dtype.name} "
                                 f"({dtype.width} bits)")
        super().check(dtype, num_bits)

    def _rows(self):
        return _ROWS_BITS[self.num_matrices]

    def _regs(self):
        return (_REGS_BITS_T if self.transpose else _REGS_BITS)[self.num_matrices]

    @property
    def ptx_suffix(self) -> str:
        return f"m8n8.x{self.num_matrices}{'.trans' if self.transpose else ''}.shared.b16"


@dataclasses.dataclass(frozen=True)
class LdMatrix8x8x16bOp(_MatrixOp):
    """``ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16``: shared memory rows -> registers (see the
    module).  Source: each thread's 16-byte row; destination: its ``2 * num_matrices`` elements."""

    def bit_layouts(self) -> tuple[Layout, Layout, Layout]:
        """(src, dst, ref) (thread, value) -> bit layouts."""
        return self._rows(), self._regs(), self._regs()


@dataclasses.dataclass(frozen=True)
class StMatrix8x8x16bOp(_MatrixOp):
    """``stmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16``: registers -> shared memory rows (sm_90)."""

    def bit_layouts(self) -> tuple[Layout, Layout, Layout]:
        """(src, dst, ref) (thread, value) -> bit layouts."""
        return self._regs(), self._rows(), self._regs()


MMA_OP_CLASSES = (MmaF16BF16Op,)
COPY_OP_CLASSES = (LdMatrix8x8x16bOp, StMatrix8x8x16bOp)
