"""The universal MMA: one thread's fused multiply-add, ``d = a * b + c`` (CuTe's ``UniversalFMA``, the CuTe DSL's
``cute.nvgpu.MmaUniversalOp``).

A SIMT GEMM builds its tiled MMA from it: one thread issues one instruction on a ``1 x 1 x 1`` tile, so the
thread and value layouts of A, B and C are each ``(1,1):(0,0)``, and ``make_tiled_mma(op, (tm, tn, 1))``
spreads ``tm * tn`` threads over the output tile. A, B and the accumulator share one element type
(``abacc_dtype``: Float32, Float64 or Float16; an integer type multiply-adds in integers).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..core.layout import Layout
from ..errors import CuteTypeError, CuteValueError
from ..mma import MmaOp
from ..tensor.dtypes import BFloat16, DType, Float16, Float32, Float64, Int32, Int64, dtype_of

__all__ = ["MmaUniversalOp", "MMA_OP_CLASSES"]

_ONE = Layout((1, 1), (0, 0))
_TYPES = (Float16, BFloat16, Float32, Float64, Int32, Int64)


@dataclasses.dataclass(frozen=True)
class MmaUniversalOp(MmaOp):
    """``d = a * b + c`` by one thread (an ``fma`` for floats). ``abacc_dtype``: the element type of A, B, C and
    D, one of Float16, BFloat16, Float32, Float64, Int32, Int64."""

    abacc_dtype: Any = Float32
    shape_mnk = (1, 1, 1)

    def __post_init__(self):
        try:
            dt = dtype_of(self.abacc_dtype)
        except CuteTypeError:
            raise CuteTypeError(f"MmaUniversalOp: abacc_dtype must be an element type, got "
                                f"{self.abacc_dtype!r}") from None
        if dt not in _TYPES:
            raise CuteValueError(f"MmaUniversalOp: abacc_dtype must be one of "
                                 f"{', '.join(t.name for t in _TYPES)}, got {dt.name}")
        object.__setattr__(self, "abacc_dtype", dt)

    @property
    def a_dtype(self) -> DType:
        return self.abacc_dtype

    @property
    def b_dtype(self) -> DType:
        return self.abacc_dtype

    @property
    def acc_dtype(self) -> DType:
        return self.abacc_dtype

    def thr_id(self) -> Layout:
        return Layout(1)

    def layout_a_tv(self) -> Layout:
        return _ONE

    def layout_b_tv(self) -> Layout:
        return _ONE

    def layout_c_tv(self) -> Layout:
        return _ONE

    def __repr__(self):
        return f"MmaUniversalOp({self.abacc_dtype.name})"


MMA_OP_CLASSES = (MmaUniversalOp,)
