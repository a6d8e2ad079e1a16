"""The emission of the universal ops: a ``CopyUniversalOp`` vector move (plain LLVM loads and stores, no dialect
op), and the universal MMA (:class:`~cute_py.nvgpu.universal.MmaUniversalOp`): one thread's
``d = a * b + c`` on its one value of each operand, an ``llvm.intr.fma`` for floats (one rounding, as CuTe's
``UniversalFMA`` computes with ``fma``), a multiply and an add for integers."""

from __future__ import annotations

from typing import Any

from ...core.int_tuple import product
from ...errors import TraceError
from ...atom import CopyUniversalOp
from ...nvgpu.universal import MmaUniversalOp
from ...tensor.engines import ArrayEngine
from ...tensor.tensor import Tensor
from ..lang.memory import move
from ..lang.values import as_type, wrap

__all__ = ["ENTRIES"]


def _value(t: Any, role: str, op: MmaUniversalOp) -> Any:
    if not isinstance(t, Tensor) or not isinstance(t.engine, ArrayEngine):
        raise TraceError(f"gemm: {role} of {op!r} must be a register fragment, got {t!r}")
    if product(t.layout.shape) != 1:
        raise TraceError(f"gemm: one {op!r} takes 1 value of {role} per thread, got {t.layout}")
    if t.element_type is not op.abacc_dtype:
        raise TraceError(f"gemm: {role} of {op!r} holds {op.abacc_dtype.name} elements, got a "
                         f"{t.element_type.name} fragment")
    return as_type(t.engine.read(t.layout(0)), op.abacc_dtype)


def _fma(b: Any, op: MmaUniversalOp, D: Tensor, A: Tensor, B: Tensor, C: Tensor) -> None:
    a, x, c = _value(A, "A", op), _value(B, "B", op), _value(C, "C", op)
    _value(D, "D", op)
    dt = op.abacc_dtype
    if dt.is_float:
        with b.at_end():
            d = wrap(b.mlir.llvm.intr_fma(a.ir, x.ir, c.ir), dt)
    else:
        d = a * x + c
    D.engine.write(D.layout(0), d)


def _universal_move(b, op, src, dst, first, vector, nbits):
    """Plain loads and stores of elements ``first .. first + vector`` of ``src`` into ``dst`` (``nbits`` each
    vector): LLVM loads and stores, no dialect op."""
    move(src, dst, first, vector, nbits)


# op class -> (its entry, the dialect ops the entry builds)
ENTRIES = {
    MmaUniversalOp: (_fma, ("llvm.intr.fma",)),
    CopyUniversalOp: (_universal_move, ()),
}
