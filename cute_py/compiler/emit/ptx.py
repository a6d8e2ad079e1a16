"""One PTX instruction (or a short fixed sequence) as ``llvm.inline_asm``, for the instructions of the emission
units that have neither an op of the ``cute_nvgpu`` dialect nor an LLVM operation: special registers such as
``%dynamic_smem_size``, ``fence.proxy.alias``, ``bfind``, ``prmt``, ``lop3``... (each unit's function names its
PTX). This is the only module that builds ``llvm.inline_asm``.

Operands are ``$0``, ``$1``...: the results first, then the inputs, as in LLVM's inline assembly; the
constraint letters are ``r`` (32-bit), ``l`` (64-bit), ``h`` (16-bit), ``f`` (f32), ``d`` (f64), ``n``
(an immediate). Every statement is volatile (``has_side_effects``): it stays where the kernel put it, and a
read of a clock or a timer is never merged with another.

Also here: the argument checks the arch builtins share (static ints, traced integers of a width, run-time
conditions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import TraceError
from ...tensor.dtypes import DType
from ..lang.builder import current
from ..lang.values import TracedBool, TracedFloat, wrap
from ..lang.traced_int import TracedInt, as_value

__all__ = ["asm", "asm_value", "int_type", "static_int", "int_operand", "predicate_value", "ir_type_of", "join_words"]


def ir_type_of(dtype: DType) -> Any:
    """The MLIR type of values of ``dtype`` (``i32``, ``f32``, ``f16``, ``bf16``...)."""
    b = current()
    ir = b.ir
    if dtype.is_float:
        return {16: ir.BF16Type.get() if dtype.name == "BFloat16" else ir.F16Type.get(), 32: ir.F32Type.get(),
                64: ir.F64Type.get()}[dtype.width]
    return b.int_type(1 if dtype.name == "Boolean" else dtype.width)


def int_type(width: int) -> Any:
    """``i<width>``."""
    return current().int_type(width)


def asm(ptx: str, constraints: str, operands: Sequence[Any], results: Sequence[Any] = ()) -> list[Any]:
    """Emit ``ptx`` with ``constraints`` over the MLIR values ``operands``; the MLIR values of its ``results``
    (MLIR types; none, one, or several as an LLVM struct)."""
    b = current()
    llvm, ir = b.mlir.llvm, b.ir
    results = list(results)
    if not results:
        res_type = None
    elif len(results) == 1:
        res_type = results[0]
    else:
        res_type = llvm.StructType.get_literal(results)
    with b.at_end():
        op = llvm.InlineAsmOp(res_type, list(operands), ptx, constraints, has_side_effects=True)
        if len(results) <= 1:
            return [op.result] if results else []
        return [llvm.ExtractValueOp(t, op.result, ir.DenseI64ArrayAttr.get([i])).result
                for i, t in enumerate(results)]


def asm_value(ptx: str, constraints: str, operands: Sequence[Any], dtype: DType) -> TracedInt | TracedFloat:
    """The one result of ``ptx`` (see :func:`asm`) as a traced value of ``dtype``."""
    (value,) = asm(ptx, constraints, operands, [ir_type_of(dtype)])
    return wrap(value, dtype)


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
    (res,) = asm("mov.b64 $0, {$1, $2};", "=l,r,r", [lo_v, hi_v], [current().int_type(64)])
    return wrap(res, Uint64)
