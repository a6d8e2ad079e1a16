"""The argument checks the arch builtins share (static ints, traced integers of a width, run-time conditions), the
MLIR type of a numeric type's values, and a 64-bit word joined from two 32-bit ones (``cute_nvgpu.int_op``
``pack_b64``).
"""

from __future__ import annotations

from typing import Any

import mlir_dialects as md

from ...errors import TraceError
from ...tensor.dtypes import DType
from ..lang.builder import current
from ..lang.values import TracedBool, TracedFloat, wrap
from ..lang.traced_int import TracedInt, as_value

__all__ = ["static_int", "int_operand", "predicate_value", "ir_type_of", "join_words"]


def ir_type_of(dtype: DType) -> Any:
    """The MLIR type of values of ``dtype`` (``i32``, ``f32``, ``f16``, ``bf16``...)."""
    b = current()
    ir = b.ir
    if dtype.is_float:
        return {16: ir.BF16Type.get() if dtype.name == "BFloat16" else ir.F16Type.get(), 32: ir.F32Type.get(),
                64: ir.F64Type.get()}[dtype.width]
    return b.int_type(1 if dtype.name == "Boolean" else dtype.width)


def static_int(x: object, what: str, rule: str) -> int:
    """``x`` as a static Python int; ``TraceError`` naming ``rule`` when it is traced or not an int."""
    if type(x) is not int:
        kind = "a traced value" if isinstance(x, (TracedInt, TracedBool, TracedFloat)) else repr(x)
        raise TraceError(f"{what} must be a static Python int ({rule}), got {kind}")
    return x


def int_operand(x: object, what: str, width: int = 32, lo: int | None = None, hi: int | None = None,
                rule: str = "") -> Any:
    """The ``i<width>`` MLIR value of an integer operand: a static int (checked against ``[lo, hi)`` and the
    width) or a traced integer of at most ``width`` bits (a wider one is rejected, never truncated)."""
    if isinstance(x, TracedInt):
        if x.width > width:
            raise TraceError(f"{what} must be an integer of at most {width} bits, got a traced "
                             f"{x.dtype.name}; convert it explicitly (Int{width}(x))")
        return as_value(x, width)
    if type(x) is not int:
        raise TraceError(f"{what} must be an int or a traced integer, got {x!r}")
    if lo is not None and not lo <= x < hi:
        raise TraceError(f"{what} must lie in [{lo}, {hi}){rule}, got {x}")
    if not -(1 << (width - 1)) <= x < (1 << width):
        raise TraceError(f"{what} must fit in {width} bits, got {x}")
    if x >= 1 << (width - 1):
        x -= 1 << width
    return current().const(x, width)


def predicate_value(pred: object, what: str) -> Any:
    """The ``i1`` MLIR value of a run-time condition or a Python bool."""
    if isinstance(pred, TracedBool):
        return pred.ir
    if type(pred) is bool:
        return current().const(int(pred), 1)
    raise TraceError(f"{what} must be a run-time condition (a comparison of traced values) or a bool, "
                     f"got {pred!r}")


def _signed32(v):
    """A static 32-bit word as the signed int with the same bits (what a traced Int32 combines with)."""
    return v - (1 << 32) if type(v) is int and v >= 1 << 31 else v


def join_words(lo: Any, hi: Any, what: str, hi_bits: int = 0) -> Any:
    """The 64-bit value ``lo | (hi | hi_bits) << 32`` of two 32-bit words (ints in 0..2^32 or traced 32-bit
    integers; ``hi_bits`` a constant or-ed into the high word): an int when both are static, else a traced Uint64
    (``mov.b64 d, {lo, hi}``)."""
    if type(lo) is int and type(hi) is int:
        return lo | (hi | hi_bits) << 32
    hi = hi | (hi_bits if type(hi) is int else _signed32(hi_bits)) if hi_bits else hi
    from ...tensor.dtypes import Uint64

    lo_v = int_operand(_signed32(lo), f"{what}: the low word", 32)
    hi_v = int_operand(_signed32(hi), f"{what}: the high word", 32)
    with current().at_end():
        return wrap(md.int_op("pack_b64", [lo_v, hi_v]).res, Uint64)
