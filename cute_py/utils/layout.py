"""``cute_py.utils.LayoutEnum`` (the CuTe DSL's ``cutlass.utils.LayoutEnum``): whether a GEMM operand's
matrix is row-major or column-major, and what that makes it for the MMA.

The enum speaks of the operand's two matrix modes, in the GEMM's order: A is ``(M, K)``, B is ``(N, K)``,
C and D are ``(M, N)`` (a third mode, the batch, follows).  ``ROW_MAJOR`` means the second mode is the
contiguous one (stride 1): K for A and B, N for C; ``COL_MAJOR`` the first: M for A and C, N for B.  So a
row-major A or B is K-major for the MMA and a column-major one MN-major (``mma_major_mode``), and a
row-major C is N-major.

``OperandMajorMode`` is the DSL's ``cute.nvgpu.OperandMajorMode`` (``MN`` or ``K``), defined in
:mod:`cute_py.nvgpu.warpgroup.operands`.
"""

from __future__ import annotations

import enum
from typing import Any

from ..core.notation import fmt
from ..errors import CuteTypeError, CuteValueError
from ..nvgpu.warpgroup.operands import OperandMajorMode

__all__ = ["LayoutEnum", "OperandMajorMode"]


def _leaves(shape: Any, stride: Any):
    if isinstance(stride, tuple):
        if not isinstance(shape, tuple) or len(shape) != len(stride):
            raise CuteValueError(f"LayoutEnum.from_tensor: the shape {fmt(shape)} and the stride {fmt(stride)} "
                                 f"are not congruent")
        for sh, st in zip(shape, stride):
            yield from _leaves(sh, st)
    else:
        yield shape, stride


def _leading_mode(shape: Any, stride: Any) -> int | None:
    """The first top-level mode (left to right, nested modes depth first) that holds a leaf of static stride 1
    and an extent other than 1 -- the CuTe DSL's ``leading_dim``, reduced to its top-level mode -- or ``None``."""
    if not isinstance(shape, tuple) and not isinstance(stride, tuple):
        shape, stride = (shape,), (stride,)
    if not isinstance(shape, tuple) or not isinstance(stride, tuple) or len(shape) != len(stride):
        raise CuteValueError(f"LayoutEnum.from_tensor: the shape {fmt(shape)} and the stride {fmt(stride)} are "
                             f"not congruent")
    for i, (sh, st) in enumerate(zip(shape, stride)):
        for leaf_shape, leaf_stride in _leaves(sh, st):
            if type(leaf_stride) is int and leaf_stride == 1 and not (type(leaf_shape) is int and leaf_shape == 1):
                return i
    return None


class LayoutEnum(enum.Enum):
    """A GEMM operand's majorness: ``ROW_MAJOR`` (its second mode, K for A/B or N for C, has stride 1) or
    ``COL_MAJOR`` (its first mode, M for A/C or N for B, has stride 1)."""

    ROW_MAJOR = "row_major"
    COL_MAJOR = "col_major"

    def mma_major_mode(self) -> OperandMajorMode:
        """The MMA majorness of an A or B operand with this layout: ``K`` for row-major, ``MN`` for column-major."""
        return OperandMajorMode.K if self is LayoutEnum.ROW_MAJOR else OperandMajorMode.MN

    def sm90_mma_major_mode(self) -> OperandMajorMode:
        """The warpgroup (sm_90) MMA majorness of an A or B operand: the same as :meth:`mma_major_mode`."""
        return self.mma_major_mode()

    def is_k_major_a(self) -> bool:
        """A ``(M, K)`` operand A with this layout has K contiguous."""
        return self is LayoutEnum.ROW_MAJOR

    def is_m_major_a(self) -> bool:
        """A ``(M, K)`` operand A with this layout has M contiguous."""
        return self is LayoutEnum.COL_MAJOR

    def is_n_major_b(self) -> bool:
        """A ``(N, K)`` operand B with this layout has N contiguous."""
        return self is LayoutEnum.COL_MAJOR

    def is_k_major_b(self) -> bool:
        """A ``(N, K)`` operand B with this layout has K contiguous."""
        return self is LayoutEnum.ROW_MAJOR

    def is_n_major_c(self) -> bool:
        """A ``(M, N)`` output C/D with this layout has N contiguous."""
        return self is LayoutEnum.ROW_MAJOR

    def is_m_major_c(self) -> bool:
        """A ``(M, N)`` output C/D with this layout has M contiguous."""
        return self is LayoutEnum.COL_MAJOR

    @staticmethod
    def from_tensor(tensor: Any) -> LayoutEnum:
        """The layout of a GEMM operand tensor (``(M, K, L)``, ``(N, K, L)`` or ``(M, N, L)``, or without the
        batch mode): ``ROW_MAJOR`` when its mode 1 is the leading one, ``COL_MAJOR`` when mode 0 is.  The
        leading mode is the first mode, left to right, with a static stride of 1 and an extent other than 1
        (inside a nested mode any leaf counts), as the DSL's ``tensor.leading_dim`` finds it.

        ``tensor`` is anything with ``shape`` and ``stride`` (a ``cute_py.Tensor``, a layout).  Raises
        ``CuteValueError`` naming the strides when no mode has stride 1 or when it is a mode past 1 (the batch
        mode), where the matrix has no majorness.
        """
        shape, stride = getattr(tensor, "shape", None), getattr(tensor, "stride", None)
        if callable(stride):  # an array library's tensor: torch's .stride()
            stride = stride()
            shape = tuple(shape) if shape is not None else None
        if shape is None or stride is None:
            raise CuteTypeError(f"LayoutEnum.from_tensor needs a tensor with a shape and a stride, got "
                                f"{type(tensor).__name__}")
        if isinstance(shape, list) or isinstance(stride, list):
            shape, stride = tuple(shape), tuple(stride)
        mode = _leading_mode(shape, stride)
        if mode == 1:
            return LayoutEnum.ROW_MAJOR
        if mode == 0:
            return LayoutEnum.COL_MAJOR
        where = ("no mode has one" if mode is None else
                 f"the first mode that has one is mode {mode}, a batch mode, so neither matrix mode is contiguous")
        raise CuteValueError(f"LayoutEnum.from_tensor: a GEMM operand's leading mode (static stride 1, extent other "
                             f"than 1) must be mode 0 or mode 1; of shape {fmt(shape)} and stride {fmt(stride)}, "
                             f"{where}")
