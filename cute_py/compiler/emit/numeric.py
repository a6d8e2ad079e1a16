"""The emission of the numeric unit's special instructions: integer bit and field instructions, high, wide and
24-bit multiplies, carry chains, saturating adds, ``lop3``, funnel shifts and ``prmt``; float minimum and maximum
with modifiers, approximations (``rcp``, ``ex2``, ``cute_nvgpu.math_approx``), rounding conversions, the LLVM
intrinsics of the math functions (``fma``, ``sqrt``, ``roundeven``, ``copysign``, ``ctpop``), and bitcasts between
a float and its bits.

Operands are MLIR values of the type the instruction reads; the inline-PTX constraint letters follow the width of
the type (``h`` 16, ``r`` 32, ``l`` 64 bits, ``f`` an f32). The functions that return a traced value say so, the
others return an MLIR value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mlir_dialects as md

from ...tensor.dtypes import BFloat16, DType, Float32, Int32, Uint32
from ..lang.builder import current
from ..lang.values import wrap
from .ptx import asm, asm_value

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


def _letter(dtype):
    return {16: "h", 32: "r", 64: "l"}[dtype.width]


def _sign(dtype):
    return f"{'s' if dtype.signed else 'u'}{dtype.width}"


def popc(value: Any, dtype: DType) -> Any:
    """``llvm.intr.ctpop`` (``popc``) of the integer ``value`` of ``dtype``: a traced ``dtype``."""
    b = current()
    with b.at_end():
        return wrap(b.mlir.llvm.intr_ctpop(value), dtype)


def clz(value: Any, dtype: DType) -> Any:
    """``clz.b32``/``clz.b64`` of ``value`` (of ``dtype``): a traced Uint32."""
    return asm_value(f"clz.b{dtype.width} $0, $1;", f"={_letter(Uint32)},{_letter(dtype)}", [value], Uint32)


def bfind(value: Any, dtype: DType) -> Any:
    """``bfind.{s,u}{32,64}`` of ``value`` (of ``dtype``): a traced Uint32."""
    return asm_value(f"bfind.{_sign(dtype)} $0, $1;", f"={_letter(Uint32)},{_letter(dtype)}", [value], Uint32)


def brev(value: Any, dtype: DType) -> Any:
    """``brev.b32``/``brev.b64`` of ``value``: a traced ``dtype``."""
    return asm_value(f"brev.b{dtype.width} $0, $1;", f"={_letter(dtype)},{_letter(dtype)}", [value], dtype)


def bfe(value: Any, start: Any, length: Any, dtype: DType) -> Any:
    """``bfe.{s,u}{32,64}`` of ``value`` (of ``dtype``) from the ``i32`` ``start``, ``length`` bits: a traced
    ``dtype``."""
    return asm_value(f"bfe.{_sign(dtype)} $0, $1, $2, $3;", f"={_letter(dtype)},{_letter(dtype)},r,r",
                     [value, start, length], dtype)


def bfi(replacement: Any, value: Any, start: Any, length: Any, dtype: DType) -> Any:
    """``bfi.b32``/``bfi.b64``: ``value`` with ``length`` bits from ``start`` replaced by ``replacement``'s: a
    traced ``dtype``."""
    c = _letter(dtype)
    return asm_value(f"bfi.b{dtype.width} $0, $1, $2, $3, $4;", f"={c},{c},{c},r,r",
                     [replacement, value, start, length], dtype)


def mul_hi(x: Any, y: Any, dtype: DType) -> Any:
    """``mul.hi.{s,u}{32,64}`` of ``x`` and ``y`` (of ``dtype``): a traced ``dtype``."""
    c = _letter(dtype)
    return asm_value(f"mul.hi.{_sign(dtype)} $0, $1, $2;", f"={c},{c},{c}", [x, y], dtype)


def mul_wide(x: Any, y: Any, dtype: DType, out: DType) -> Any:
    """``mul.wide.{s,u}{16,32}`` of ``x`` and ``y`` (of ``dtype``): a traced ``out`` (twice as wide)."""
    c = _letter(dtype)
    return asm_value(f"mul.wide.{_sign(dtype)} $0, $1, $2;", f"={_letter(out)},{c},{c}", [x, y], out)


def mul24(x: Any, y: Any, hi: bool, dtype: DType) -> Any:
    """``mul24.{lo,hi}.{s,u}32`` of ``x`` and ``y``: a traced ``dtype``."""
    return asm_value(f"mul24.{'hi' if hi else 'lo'}.{_sign(dtype)} $0, $1, $2;", "=r,r,r", [x, y], dtype)


def mad24(x: Any, y: Any, z: Any, hi: bool, dtype: DType) -> Any:
    """``mad24.{lo,hi}.{s,u}32`` of ``x``, ``y`` and ``z``: a traced ``dtype``."""
    return asm_value(f"mad24.{'hi' if hi else 'lo'}.{_sign(dtype)} $0, $1, $2, $3;", "=r,r,r,r", [x, y, z], dtype)


def carry(op: str, operands: Sequence[Any], dtype: DType) -> Any:
    """The carry-chain instruction ``op`` (a key of :data:`CARRY_OPS`) of ``operands`` (of ``dtype``): a traced
    ``dtype``."""
    ptx, unsigned_suffix = CARRY_OPS[op]
    c = _letter(dtype)
    suffix = f"u{dtype.width}" if unsigned_suffix else _sign(dtype)
    n = len(operands)
    names = ", ".join(f"${i + 1}" for i in range(n))
    return asm_value(f"{ptx}.{suffix} $0, {names};", ",".join([f"={c}"] + [c] * n), list(operands), dtype)


def add_sat_s32(x: Any, y: Any, dtype: DType) -> Any:
    """``add.sat.s32`` of ``x`` and ``y``: a traced ``dtype``."""
    return asm_value("add.sat.s32 $0, $1, $2;", "=r,r,r", [x, y], dtype)


def sub_sat_s32(x: Any, y: Any, dtype: DType) -> Any:
    """``sub.sat.s32`` of ``x`` and ``y``: a traced ``dtype``."""
    return asm_value("sub.sat.s32 $0, $1, $2;", "=r,r,r", [x, y], dtype)


def lop3(x: Any, y: Any, z: Any, lut: int, dtype: DType) -> Any:
    """``lop3.b32`` of ``x``, ``y``, ``z`` with the truth table ``lut``: a traced ``dtype``."""
    return asm_value(f"lop3.b32 $0, $1, $2, $3, {lut};", "=r,r,r,r", [x, y, z], dtype)


def shf(x: Any, y: Any, shift: Any, kind: str, dtype: DType) -> Any:
    """``shf.{l,r}.{wrap,clamp}.b32`` (``kind`` a key of :data:`SHF_KINDS`) of ``x`` (low) and ``y`` (high) by
    ``shift``: a traced ``dtype``."""
    direction, mode = SHF_KINDS[kind]
    return asm_value(f"shf.{direction}.{mode}.b32 $0, $1, $2, $3;", "=r,r,r,r", [x, y, shift], dtype)


def prmt(src: Any, src_reg_shifted: Any, indices: Any) -> Any:
    """``prmt.b32`` of the ``i32`` values: the ``i32`` result."""
    (res,) = asm("prmt.b32 $0, $1, $2, $3;", "=r,r,r,r", [src, src_reg_shifted, indices], [current().int_type(32)])
    return res


# -- floats -----------------------------------------------------------------------------------------


def min_max(op: str, a: Any, b: Any, abs: bool, nan: bool, ftz: bool) -> Any:
    """``{max,min}{.ftz}{.NaN}{.xorsign.abs}.f32`` (``op`` ``"max"`` or ``"min"``) of the f32 values: a traced
    Float32."""
    mods = (".ftz" if ftz else "") + (".NaN" if nan else "") + (".xorsign.abs" if abs else "")
    return asm_value(f"{op}{mods}.f32 $0, $1, $2;", "=f,f,f", [a, b], Float32)


def rcp_approx(a: Any) -> Any:
    """``rcp.approx.ftz.f32`` of the f32 ``a``: a traced Float32."""
    return asm_value("rcp.approx.ftz.f32 $0, $1;", "=f,f", [a], Float32)


def ex2_approx_ftz(a: Any) -> Any:
    """``ex2.approx.ftz.f32`` of the f32 ``a``: a traced Float32."""
    return asm_value("ex2.approx.ftz.f32 $0, $1;", "=f,f", [a], Float32)


def cvt_rna_tf32(a: Any) -> Any:
    """``cvt.rna.tf32.f32`` of the f32 ``a``: its bits, a traced Int32."""
    return asm_value("cvt.rna.tf32.f32 $0, $1;", "=r,f", [a], Int32)


def cvt_rn_bf16(a: Any) -> Any:
    """``cvt.rn.bf16.f32`` of the f32 ``a``: a traced BFloat16."""
    return asm_value("cvt.rn.bf16.f32 $0, $1;", "=h,f", [a], BFloat16)


def cvt_bf16x2_satfinite(lo: Any, hi: Any) -> tuple[Any, Any]:
    """``(low, high)``: the f32 values ``lo`` and ``hi`` as ``bf16`` values, rounded to nearest even and saturated
    to the largest finite BFloat16 (``.satfinite`` needs PTX ISA 8.1: the values are clamped with ``min``/``max.NaN``,
    which keep a NaN, before ``cvt.rn.bf16x2.f32``, which rounds to the same result)."""
    b = current()
    (packed,) = asm("{\n\t.reg .f32 %lo, %hi;\n\t"
                    "max.NaN.f32 %hi, $1, 0fFF7F0000;\n\tmin.NaN.f32 %hi, %hi, 0f7F7F0000;\n\t"
                    "max.NaN.f32 %lo, $2, 0fFF7F0000;\n\tmin.NaN.f32 %lo, %lo, 0f7F7F0000;\n\t"
                    "cvt.rn.bf16x2.f32 $0, %hi, %lo;\n\t}", "=r,f,f", [hi, lo], [b.int_type(32)])
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
