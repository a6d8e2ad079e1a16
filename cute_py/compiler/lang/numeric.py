"""The numbers of the kernel language on MLIR values: the CuTe DSL's type promotion, conversions between every
pair of numeric types, float arithmetic and comparisons.

This module knows types and MLIR values only; :mod:`.values` wraps the results in traced objects.

**Registers.** A value of a numeric type lives in a register of its MLIR type: ``i1`` for ``Boolean``, ``iN``
for the integers (signedness is the type's, not the register's), ``f16``/``bf16``/``f32``/``f64`` for the
floats (``TFloat32`` in an ``f32``), and the *bits* of the 8-bit floats in an ``i8`` (LLVM has no such type).

**Promotion** (the CuTe DSL's rules, :func:`promote`): a Python ``int`` is an ``Int32`` (``Int64`` when it does
not fit), a ``float`` a ``Float32``, a ``bool`` a ``Boolean``. Equal types stay. A float and an integer give the
float type; two floats the wider one, for equal widths ``Float64 > Float32 > Float16`` (``BFloat16`` with
``Float16`` gives ``Float16``; two different 8-bit floats are an error: convert explicitly). Two integers of the
same signedness give the wider; of mixed signedness the unsigned type when it is at least as wide as the
signed one, else the signed type. Arithmetic on two ``Boolean`` s is on ``Int32``.

**Conversions** (:func:`convert`), as PTX's ``cvt``: integer to integer truncates or extends by the *source's*
signedness; integer to float and float to narrower float round to nearest even; float to integer truncates
toward zero and saturates (NaN gives 0); anything to ``Boolean`` is ``!= 0``; ``Boolean`` is 0 or 1. To an 8-bit
float: round to nearest even and saturate to the largest finite value (through ``Float32``); from one: exact.
To ``TFloat32``: round to nearest, ties away from zero.
"""

from __future__ import annotations

from typing import Any

import mlir_dialects as md

from ...errors import TraceError
from ...tensor.dtypes import Boolean, DType, Float16, Float32, Int32, Int64, TFloat32, Uint64
from .builder import current

__all__ = ["register_type", "python_dtype", "promote", "constant", "convert", "float_binary", "float_compare",
           "float_unary", "is_f8"]

_FLOAT_TYPES = {"Float16": "f16", "BFloat16": "bf16", "Float32": "f32", "TFloat32": "f32", "Float64": "f64"}
_F8_KIND = {"Float8E4M3FN": "e4m3", "Float8E5M2": "e5m2"}
_FLOAT_RANK = {"Float64": 3, "Float32": 2, "Float16": 1}


def is_f8(dtype: DType) -> bool:
    """True for the 8-bit float types (held as their bits)."""
    return dtype.name in _F8_KIND


def register_type(dtype: DType) -> Any:
    """The MLIR type of a register holding a value of ``dtype``."""
    b = current()
    if dtype is Boolean:
        return b.int_type(1)
    name = _FLOAT_TYPES.get(dtype.name)
    if name is not None:
        return b.ir.Type.parse(name)
    return b.int_type(dtype.width)


def python_dtype(x: object) -> DType | None:
    """The numeric type of a Python scalar: ``bool`` -> Boolean, ``int`` -> Int32 (Int64 when it does not fit,
    Uint64 above that), ``float`` -> Float32; ``None`` for anything else."""
    t = type(x)
    if t is bool:
        return Boolean
    if t is int:
        if -(1 << 31) <= x < 1 << 31:
            return Int32
        if -(1 << 63) <= x < 1 << 63:
            return Int64
        if 0 <= x < 1 << 64:
            return Uint64
        raise TraceError(f"the integer {x} does not fit in 64 bits")
    if t is float:
        return Float32
    return None


def promote(a: DType, b: DType, arithmetic: bool = True) -> DType:
    """The type both operands of a binary operation are converted to (see the module's rules); ``arithmetic``
    promotes ``Boolean`` with ``Boolean`` to ``Int32`` (bitwise operations keep it)."""
    if a is b:
        return Int32 if (arithmetic and a is Boolean) else a
    if a.is_float or b.is_float:
        if not (a.is_float and b.is_float):  # a float and an integer (or Boolean): the float's type
            return a if a.is_float else b
        if a.width != b.width:
            wide = a if a.width > b.width else b
            if wide.width >= 16:
                return wide
        else:
            ranked = [t for t in (a, b) if t.name in _FLOAT_RANK]
            if ranked:
                return max(ranked, key=lambda t: _FLOAT_RANK[t.name])
        raise TraceError(f"no implicit promotion between {a.name} and {b.name}: convert one explicitly "
                         f"(x.to(cute.Float32))")
    if a is Boolean or b is Boolean:  # Boolean with an integer: the integer's type
        return b if a is Boolean else a
    if a.signed == b.signed:
        return a if a.width >= b.width else b
    unsigned, signed = (a, b) if not a.signed else (b, a)
    return unsigned if unsigned.width >= signed.width else signed


def constant(value: int | float | bool, dtype: DType) -> Any:
    """The MLIR constant of the Python number ``value`` as ``dtype`` (rounded to nearest even for floats)."""
    b = current()
    arith = b.mlir.arith
    if is_f8(dtype):
        return convert(constant(float(value), Float32), Float32, dtype)
    if dtype.is_float:
        if dtype is TFloat32:
            return convert(constant(float(value), Float32), Float32, TFloat32)
        with b.at_end():
            return arith.ConstantOp(register_type(dtype), float(value)).result
    if dtype is Boolean:
        return b.const(1 if value else 0, 1)
    v = int(value)
    lo, hi = (-(1 << (dtype.width - 1)), 1 << (dtype.width - 1)) if dtype.signed else (0, 1 << dtype.width)
    if not lo <= v < hi:
        raise TraceError(f"the constant {v} does not fit in {dtype.name}")
    if v >= 1 << (dtype.width - 1):  # an unsigned value above the signed range: its two's complement bits
        v -= 1 << dtype.width
    return b.const(v, dtype.width)


def _f8_to_f16(value, dtype):
    b = current()
    with b.at_end():
        return md.cvt_f8_to_f16(_F8_KIND[dtype.name], value).res


def _f32_to_narrow(value, kind):
    b = current()
    with b.at_end():
        return md.cvt_f32_to_narrow(kind, value).res


def convert(value: Any, src: DType, dst: DType) -> Any:
    """The MLIR value ``value`` of type ``src`` converted to ``dst`` (see the module's rules)."""
    if src is dst or (src.is_float and dst.is_float and register_type(src) == register_type(dst)
                      and dst is not TFloat32):
        return value
    b = current()
    arith, llvm = b.mlir.arith, b.mlir.llvm
    rt = register_type(dst)
    if is_f8(src):  # exact, through f16
        return convert(_f8_to_f16(value, src), Float16, dst)
    if is_f8(dst) or dst is TFloat32:  # through f32 (exact from every narrower float and from small integers)
        v32 = convert(value, src, Float32)
        return _f32_to_narrow(v32, "tf32" if dst is TFloat32 else _F8_KIND[dst.name])
    if dst is Boolean:
        if src.is_float:
            with b.at_end():
                zero = arith.ConstantOp(register_type(src), 0.0).result
                return arith.CmpFOp(arith.CmpFPredicate.UNE, value, zero).result
        zero = b.const(0, src.width if src is not Boolean else 1)
        with b.at_end():
            return arith.CmpIOp(arith.CmpIPredicate.ne, value, zero).result
    with b.at_end():
        if src.is_float and dst.is_float:
            if dst.width == src.width:  # Float16 <-> BFloat16: exactly to Float32, then rounded once
                value = arith.ExtFOp(register_type(Float32), value).result
                return arith.TruncFOp(rt, value).result
            return (arith.ExtFOp if dst.width > src.width else arith.TruncFOp)(rt, value).result
        if src.is_float:  # to an integer: truncate toward zero, saturating; NaN gives 0
            sign = "s" if dst.signed else "u"
            name = f"llvm.fpto{sign}i.sat.i{dst.width}.{register_type(src)}"
            return llvm.call_intrinsic(rt, name, [value], [], [])
        unsigned = src is Boolean or not src.signed
        if dst.is_float:
            return (arith.UIToFPOp if unsigned else arith.SIToFPOp)(rt, value).result
        width = 1 if src is Boolean else src.width
        if dst.width == width:
            return value
        if dst.width < width:
            return arith.TruncIOp(rt, value).result
        return (arith.ExtUIOp if unsigned else arith.ExtSIOp)(rt, value).result


_FLOAT_OPS = {"add": "AddFOp", "sub": "SubFOp", "mul": "MulFOp", "truediv": "DivFOp", "min": "MinimumFOp",
              "max": "MaximumFOp"}


def _check_arithmetic(dtype, op):
    if is_f8(dtype):
        raise TraceError(f"{op} on {dtype.name} is not supported: 8-bit floats are a storage format, convert "
                         f"to Float16 or Float32 first (x.to(cute.Float32))")


def float_binary(op: str, a: Any, b_: Any, dtype: DType) -> Any:
    """``a op b_`` for two MLIR floats of ``dtype``: add, sub, mul, truediv (rounded to nearest even), floordiv
    (``floor(a / b)``), mod (``a - floor(a / b) * b``, with one rounding: a fused multiply-add), min and max
    (NaN if either is NaN, as numpy's ``minimum``/``maximum``)."""
    _check_arithmetic(dtype, op)
    bld = current()
    arith, llvm = bld.mlir.arith, bld.mlir.llvm
    with bld.at_end():
        if op in _FLOAT_OPS:
            return getattr(arith, _FLOAT_OPS[op])(a, b_).result
        if op in ("floordiv", "mod"):
            q = llvm.intr_floor(arith.DivFOp(a, b_).result)
            if op == "floordiv":
                return q
            return llvm.intr_fma(arith.NegFOp(q).result, b_, a)
    raise TraceError(f"internal error: unknown float operation {op!r}")


_FLOAT_PREDICATES = {"lt": "OLT", "le": "OLE", "gt": "OGT", "ge": "OGE", "eq": "OEQ", "ne": "UNE"}


def float_compare(op: str, a: Any, b_: Any, dtype: DType) -> Any:
    """The ``i1`` of ``a op b_`` (lt le gt ge eq ne) for two MLIR floats of ``dtype``: false when either is NaN,
    except ``ne`` (true), as in Python."""
    _check_arithmetic(dtype, "comparison")
    bld = current()
    arith = bld.mlir.arith
    with bld.at_end():
        return arith.CmpFOp(getattr(arith.CmpFPredicate, _FLOAT_PREDICATES[op]), a, b_).result


def float_unary(op: str, a: Any, dtype: DType) -> Any:
    """``-a`` (``neg``, exact) or ``abs(a)`` (``abs``) of an MLIR float of ``dtype``."""
    _check_arithmetic(dtype, op)
    bld = current()
    with bld.at_end():
        if op == "neg":
            return bld.mlir.arith.NegFOp(a).result
        if op == "abs":
            return bld.mlir.llvm.intr_fabs(a)
    raise TraceError(f"internal error: unknown float operation {op!r}")
