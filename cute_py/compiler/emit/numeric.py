"""The emission of the numeric unit's special instructions: integer bit and field instructions, high, wide and
24-bit multiplies, carry chains, saturating adds, ``lop3``, funnel shifts and ``prmt``; float minimum and maximum
with modifiers, approximations (``rcp``, ``ex2``, ``cute_nvgpu.math_approx``), rounding conversions, the LLVM
intrinsics of the math functions (``fma``, ``sqrt``, ``roundeven``, ``copysign``, ``ctpop``), and bitcasts between
a float and its bits.

Each instruction is an op of the ``cute_nvgpu`` dialect (``int_op``, ``float_minmax``, ``math_approx``,
``cvt_f32``) or an LLVM intrinsic. Operands are MLIR values of the type the instruction reads; the functions that
return a traced value say so, the others return an MLIR value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mlir_dialects as md

from ...tensor.dtypes import BFloat16, DType, Float32, Int32, Uint32
from ..lang.builder import current
from ..lang.values import wrap

__all__ = ["ENTRIES", "SHF_KINDS", "CARRY_OPS", "popc", "clz", "bfind", "brev", "bfe", "bfi", "mul_hi", "mul_wide",
           "mul24", "mad24", "carry", "add_sat_s32", "sub_sat_s32", "lop3", "shf", "prmt", "min_max", "rcp_approx",
           "ex2_approx_ftz", "cvt_rna_tf32", "cvt_rn_bf16", "cvt_bf16x2_satfinite", "approx", "fma_rn", "sqrt_rn",
           "roundeven", "copysign", "float_bits", "float_of_bits"]

# shf's kinds: name -> (direction, mode)
SHF_KINDS = {"l": ("l", "wrap"), "r": ("r", "wrap"), "clamp_left": ("l", "clamp"), "clamp_right": ("r", "clamp")}
# the carry-chain instructions: name -> (PTX, whose type suffix is unsigned)
CARRY_OPS = {"add_cc": ("add.cc", True), "addc": ("addc", True), "sub_cc": ("sub.cc", True), "subc": ("subc", True),
             "mad_cc": ("mad.lo.cc", False), "madc": ("madc.lo", False)}


# -- integers ---------------------------------------------------------------------------------------


def _int_op(instr: str, args: Sequence[Any], dtype: DType, **attrs: Any) -> Any:
    """``cute_nvgpu.int_op`` ``instr`` of the MLIR values ``args``: its result as a traced ``dtype``."""
    with current().at_end():
        return wrap(md.int_op(instr, list(args), **attrs).res, dtype)


def popc(value: Any, dtype: DType) -> Any:
    """``llvm.intr.ctpop`` (``popc``) of the integer ``value`` of ``dtype``: a traced ``dtype``."""
    b = current()
    with b.at_end():
        return wrap(b.mlir.llvm.intr_ctpop(value), dtype)


def clz(value: Any, dtype: DType) -> Any:
    """``clz.b32``/``clz.b64`` of ``value`` (of ``dtype``): a traced Uint32."""
    return _int_op("clz", [value], Uint32)


def bfind(value: Any, dtype: DType) -> Any:
    """``bfind.{s,u}{32,64}`` of ``value`` (of ``dtype``): a traced Uint32."""
    return _int_op("bfind", [value], Uint32, signed=dtype.signed)


def brev(value: Any, dtype: DType) -> Any:
    """``brev.b32``/``brev.b64`` of ``value``: a traced ``dtype``."""
    return _int_op("brev", [value], dtype)


def bfe(value: Any, start: Any, length: Any, dtype: DType) -> Any:
    """``bfe.{s,u}{32,64}`` of ``value`` (of ``dtype``) from the ``i32`` ``start``, ``length`` bits: a traced
    ``dtype``."""
    return _int_op("bfe", [value, start, length], dtype, signed=dtype.signed)


def bfi(replacement: Any, value: Any, start: Any, length: Any, dtype: DType) -> Any:
    """``bfi.b32``/``bfi.b64``: ``value`` with ``length`` bits from ``start`` replaced by ``replacement``'s: a
    traced ``dtype``."""
    return _int_op("bfi", [replacement, value, start, length], dtype)


def mul_hi(x: Any, y: Any, dtype: DType) -> Any:
    """``mul.hi.{s,u}{32,64}`` of ``x`` and ``y`` (of ``dtype``): a traced ``dtype``."""
    return _int_op("mul_hi", [x, y], dtype, signed=dtype.signed)


def mul_wide(x: Any, y: Any, dtype: DType, out: DType) -> Any:
    """``mul.wide.{s,u}{16,32}`` of ``x`` and ``y`` (of ``dtype``): a traced ``out`` (twice as wide)."""
    return _int_op("mul_wide", [x, y], out, signed=dtype.signed)


def mul24(x: Any, y: Any, hi: bool, dtype: DType) -> Any:
    """``mul24.{lo,hi}.{s,u}32`` of ``x`` and ``y``: a traced ``dtype``."""
    return _int_op("mul24", [x, y], dtype, signed=dtype.signed, mode="hi" if hi else "lo")


def mad24(x: Any, y: Any, z: Any, hi: bool, dtype: DType) -> Any:
    """``mad24.{lo,hi}.{s,u}32`` of ``x``, ``y`` and ``z``: a traced ``dtype``."""
    return _int_op("mad24", [x, y, z], dtype, signed=dtype.signed, mode="hi" if hi else "lo")


def carry(op: str, operands: Sequence[Any], dtype: DType) -> Any:
    """The carry-chain instruction ``op`` (a key of :data:`CARRY_OPS`) of ``operands`` (of ``dtype``): a traced
    ``dtype``."""
    _, unsigned_suffix = CARRY_OPS[op]
    return _int_op(op, operands, dtype, signed=dtype.signed and not unsigned_suffix)


def add_sat_s32(x: Any, y: Any, dtype: DType) -> Any:
    """``add.sat.s32`` of ``x`` and ``y``: a traced ``dtype``."""
    return _int_op("add_sat", [x, y], dtype, signed=True)


def sub_sat_s32(x: Any, y: Any, dtype: DType) -> Any:
    """``sub.sat.s32`` of ``x`` and ``y``: a traced ``dtype``."""
    return _int_op("sub_sat", [x, y], dtype, signed=True)


def lop3(x: Any, y: Any, z: Any, lut: int, dtype: DType) -> Any:
    """``lop3.b32`` of ``x``, ``y``, ``z`` with the truth table ``lut``: a traced ``dtype``."""
    return _int_op("lop3", [x, y, z], dtype, lut=lut)


def shf(x: Any, y: Any, shift: Any, kind: str, dtype: DType) -> Any:
    """``shf.{l,r}.{wrap,clamp}.b32`` (``kind`` a key of :data:`SHF_KINDS`) of ``x`` (low) and ``y`` (high) by
    ``shift``: a traced ``dtype``."""
    direction, mode = SHF_KINDS[kind]
    return _int_op("shf", [x, y, shift], dtype, mode=f"{direction}.{mode}")


def prmt(src: Any, src_reg_shifted: Any, indices: Any) -> Any:
    """``prmt.b32`` of the ``i32`` values: the ``i32`` result."""
    with current().at_end():
        return md.int_op("prmt", [src, src_reg_shifted, indices]).res


# -- floats -----------------------------------------------------------------------------------------


def min_max(op: str, a: Any, b: Any, abs: bool, nan: bool, ftz: bool) -> Any:
    """``{max,min}{.ftz}{.NaN}{.xorsign.abs}.f32`` (``op`` ``"max"`` or ``"min"``) of the f32 values: a traced
    Float32."""
    with current().at_end():
        return wrap(md.float_minmax(op, a, b, ftz=ftz, nan=nan, xorsign_abs=abs).res, Float32)


def rcp_approx(a: Any) -> Any:
    """``rcp.approx.ftz.f32`` of the f32 ``a`` (a volatile statement): a traced Float32."""
    with current().at_end():
        return wrap(md.math_approx("rcp", a, ftz=True, volatile=True).res, Float32)


def ex2_approx_ftz(a: Any) -> Any:
    """``ex2.approx.ftz.f32`` of the f32 ``a`` (a volatile statement): a traced Float32."""
    with current().at_end():
        return wrap(md.math_approx("ex2", a, ftz=True, volatile=True).res, Float32)


def cvt_rna_tf32(a: Any) -> Any:
    """``cvt.rna.tf32.f32`` of the f32 ``a``: its bits, a traced Int32."""
    with current().at_end():
        return wrap(md.cvt_f32("tf32", a).res, Int32)


def cvt_rn_bf16(a: Any) -> Any:
    """``cvt.rn.bf16.f32`` of the f32 ``a``: a traced BFloat16."""
    with current().at_end():
        return wrap(md.cvt_f32("bf16", a).res, BFloat16)


def cvt_bf16x2_satfinite(lo: Any, hi: Any) -> tuple[Any, Any]:
    """``(low, high)``: the f32 values ``lo`` and ``hi`` as ``bf16`` values, rounded to nearest even and saturated
    to the largest finite BFloat16 (``.satfinite`` needs PTX ISA 8.1: the values are clamped with ``min``/``max.NaN``,
    which keep a NaN, before ``cvt.rn.bf16x2.f32``, which rounds to the same result)."""
    b = current()
    with b.at_end():
        packed = md.cvt_f32("bf16x2_satfinite", hi, lo).res
    arith = b.mlir.arith
    shift = b.const(16, 32)
    bf16 = b.ir.BF16Type.get()
    with b.at_end():
        low = arith.BitcastOp(bf16, arith.TruncIOp(b.int_type(16), packed).result).result
        high = arith.BitcastOp(bf16, arith.TruncIOp(b.int_type(16), arith.ShRUIOp(packed, shift).result).result).result
    return low, high


def approx(name: str, x: Any, ftz: bool = True) -> Any:
    """``cute_nvgpu.math_approx`` ``name`` (``sqrt``, ``rsqrt``, ``ex2``, ``lg2``, ``sin``, ``cos``, ``tanh``) of
    the f32 ``x``, ``.ftz`` unless ``ftz`` is False."""
    with current().at_end():
        return md.math_approx(name, x, ftz=ftz).res


def _intrinsic(name, *args):
    b = current()
    fn = getattr(b.mlir.llvm, name)
    with b.at_end():
        return fn(*args)


def fma_rn(a: Any, b: Any, c: Any) -> Any:
    """``llvm.intr.fma``: ``a * b + c`` of the float values, rounded once."""
    return _intrinsic("intr_fma", a, b, c)


def sqrt_rn(x: Any) -> Any:
    """``llvm.intr.sqrt`` of the float ``x``, correctly rounded."""
    return _intrinsic("intr_sqrt", x)


def roundeven(x: Any) -> Any:
    """``llvm.intr.roundeven`` of the float ``x``: the nearest integer, ties to even."""
    return _intrinsic("intr_roundeven", x)


def copysign(x: Any, y: Any) -> Any:
    """``llvm.intr.copysign``: the magnitude of ``x`` with the sign of ``y``."""
    return _intrinsic("intr_copysign", x, y)


def float_bits(value: Any, width: int = 32) -> Any:
    """The bits of the float value ``value`` as an ``i<width>`` (a bitcast)."""
    b = current()
    with b.at_end():
        return b.mlir.arith.BitcastOp(b.int_type(width), value).result


def float_of_bits(value: Any) -> Any:
    """The f32 whose bits are the ``i32`` ``value`` (a bitcast)."""
    b = current()
    with b.at_end():
        return b.mlir.arith.BitcastOp(b.ir.F32Type.get(), value).result


# op class -> (its entry, the dialect ops the entry builds): the numeric unit's instructions have no op class
ENTRIES: dict[type, tuple[Any, tuple[str, ...]]] = {}
