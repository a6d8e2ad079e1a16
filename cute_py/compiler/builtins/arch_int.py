"""Integer instructions as kernel builtins, with the CuTe DSL's ``cute.arch`` names: bit counts and fields,
high and wide multiplies, 24-bit multiplies, carry chains, saturating adds, ``lop3``, funnel shifts and
``prmt``.

Operands are traced integers or Python ints; a Python int takes the type of the traced operands beside it
(an Int32 when all are Python ints), and must fit it. Where the DSL requires operands of one type, mixing
types raises :class:`~cute_py.errors.TraceError` naming them. Each function's docstring names its PTX; the
result has the operands' type unless it says otherwise.

The carry-chain builtins (``add_cc``, ``addc``, ``sub_cc``, ``subc``, ``mad_cc``, ``madc``) communicate through
the hardware carry flag, which no other instruction of a kernel here sets: a ``*c`` call reads the flag of the
``*_cc`` call just before it, so issue the chain without other carry-chain builtins between its parts.
"""

from __future__ import annotations

from typing import Any

from ...errors import TraceError
from ...tensor.dtypes import DType, Int16, Int32, Int64, Uint16, Uint32, Uint64
from ..lang.values import TracedFloat, wrap
from ..lang.traced_int import TracedInt
from ..emit import numeric
from ..emit.numeric import SHF_KINDS
from ..emit.operands import int_operand, static_int

__all__ = ["popc", "clz", "bfind", "brev", "bfe", "bfi", "mul_hi", "mul_wide", "mul24", "mad24", "add_cc", "addc",
           "sub_cc", "subc", "mad_cc", "madc", "add_sat_int", "sub_sat_int", "lop3", "shf", "prmt"]

I32_TYPES = (Int32, Uint32)
I32_I64_TYPES = (Int32, Uint32, Int64, Uint64)


def _common(name: str, values: tuple[Any, ...], allowed: tuple[DType, ...]) -> tuple[list[Any], DType]:
    """(MLIR values, dtype) of integer operands of one type among ``allowed``."""
    traced = [v for v in values if isinstance(v, TracedInt)]
    for v in values:
        if not (isinstance(v, TracedInt) or type(v) is int):
            got = f"a traced {v.dtype.name}" if isinstance(v, TracedFloat) else repr(v)
            raise TraceError(f"{name} takes integers ({', '.join(t.name for t in allowed)}), got {got}")
    dtypes = {v.dtype for v in traced}
    if len(dtypes) > 1:
        raise TraceError(f"{name} needs operands of one integer type, got "
                         f"{', '.join(sorted(d.name for d in dtypes))}")
    dtype = dtypes.pop() if dtypes else Int32
    if dtype not in allowed:
        raise TraceError(f"{name} takes {', '.join(t.name for t in allowed)} operands, got a {dtype.name}")
    irs = []
    for i, v in enumerate(values):
        if isinstance(v, TracedInt):
            irs.append(v.ir)
        else:
            lo = -(1 << (dtype.width - 1)) if dtype.signed else 0
            if not lo <= v < lo + (1 << dtype.width):
                raise TraceError(f"{name}: operand {i} ({v}) does not fit in a {dtype.name}")
            irs.append(int_operand(v, f"{name}: operand {i}", dtype.width))
    return irs, dtype


def popc(value: TracedInt | int) -> TracedInt:
    """``popc``: the number of set bits of ``value`` (an integer of any width), of ``value``'s type."""
    (v,), dtype = _common("popc", (value,), (Int16, Uint16, Int32, Uint32, Int64, Uint64))
    return numeric.popc(v, dtype)


def clz(value: TracedInt | int) -> TracedInt:
    """``clz.b32``/``clz.b64``: the number of leading zero bits of ``value`` (0..32 or 0..64), a Uint32."""
    (v,), dtype = _common("clz", (value,), I32_I64_TYPES)
    return numeric.clz(v, dtype)


def bfind(value: TracedInt | int) -> TracedInt:
    """``bfind.{s,u}{32,64}``: the bit position of the most significant bit of ``value`` that differs from its
    sign (a signed type) or is set (an unsigned one); 0xFFFFFFFF when there is none. A Uint32."""
    (v,), dtype = _common("bfind", (value,), I32_I64_TYPES)
    return numeric.bfind(v, dtype)


def brev(value: TracedInt | int) -> TracedInt:
    """``brev.b32``/``brev.b64``: ``value`` with its bits reversed (bit 0 to bit 31 or 63)."""
    (v,), dtype = _common("brev", (value,), I32_I64_TYPES)
    return numeric.brev(v, dtype)


def _field(x, what, name):
    if type(x) is int and not 0 <= x <= 255:
        raise TraceError(f"{name}: {what} must lie in [0, 255] (PTX reads 8 bits of it), got {x}")
    return int_operand(x, f"{name}: {what}")


def bfe(value: TracedInt | int, start: TracedInt | int, length: TracedInt | int) -> TracedInt:
    """``bfe.{s,u}{32,64}``: the ``length`` bits of ``value`` from bit ``start``, right-justified; sign-extended
    from the field's top bit for a signed type (the value's sign bit past its end), zero-extended otherwise.
    ``start`` and ``length`` are read in 0..255."""
    (v,), dtype = _common("bfe", (value,), I32_I64_TYPES)
    s, n = _field(start, "start", "bfe"), _field(length, "length", "bfe")
    return numeric.bfe(v, s, n, dtype)


def bfi(replacement: TracedInt | int, value: TracedInt | int, start: TracedInt | int,
        length: TracedInt | int) -> TracedInt:
    """``bfi.b32``/``bfi.b64``: ``value`` with its ``length`` bits from bit ``start`` replaced by the low bits of
    ``replacement`` (both of one type)."""
    (r, v), dtype = _common("bfi", (replacement, value), I32_I64_TYPES)
    s, n = _field(start, "start", "bfi"), _field(length, "length", "bfi")
    return numeric.bfi(r, v, s, n, dtype)


def mul_hi(a: TracedInt | int, b: TracedInt | int) -> TracedInt:
    """``mul.hi.{s,u}{32,64}``: the high half of the double-width product ``a * b``."""
    (x, y), dtype = _common("mul_hi", (a, b), I32_I64_TYPES)
    return numeric.mul_hi(x, y, dtype)


_WIDE = {Int16: Int32, Uint16: Uint32, Int32: Int64, Uint32: Uint64}


def mul_wide(a: TracedInt | int, b: TracedInt | int) -> TracedInt:
    """``mul.wide.{s,u}{16,32}``: the exact double-width product ``a * b`` (16-bit operands give a 32-bit
    result, 32-bit ones a 64-bit result)."""
    (x, y), dtype = _common("mul_wide", (a, b), tuple(_WIDE))
    return numeric.mul_wide(x, y, dtype, _WIDE[dtype])


def _hi(hi, name):
    if type(hi) is not bool:
        raise TraceError(f"{name}: hi must be True or False, got {hi!r}")
    return hi


def mul24(a: TracedInt | int, b: TracedInt | int, hi: bool = False) -> TracedInt:
    """``mul24.{lo,hi}.{s,u}32``: the low (or, with ``hi``, the high) 32 bits of the 48-bit product of the low
    24 bits of ``a`` and ``b``."""
    (x, y), dtype = _common("mul24", (a, b), I32_TYPES)
    return numeric.mul24(x, y, _hi(hi, "mul24"), dtype)


def mad24(a: TracedInt | int, b: TracedInt | int, c: TracedInt | int, hi: bool = False) -> TracedInt:
    """``mad24.{lo,hi}.{s,u}32``: :func:`mul24` of ``a`` and ``b`` plus ``c``."""
    (x, y, z), dtype = _common("mad24", (a, b, c), I32_TYPES)
    return numeric.mad24(x, y, z, _hi(hi, "mad24"), dtype)


def _carry(name, values):
    irs, dtype = _common(name, values, I32_I64_TYPES)
    return numeric.carry(name, irs, dtype)


def add_cc(a: TracedInt | int, b: TracedInt | int) -> TracedInt:
    """``add.cc.u32``/``.u64``: ``a + b`` (wrapping), setting the carry flag to its carry-out."""
    return _carry("add_cc", (a, b))


def addc(a: TracedInt | int, b: TracedInt | int) -> TracedInt:
    """``addc.u32``/``.u64``: ``a + b + carry`` (the flag of the previous carry-chain builtin)."""
    return _carry("addc", (a, b))


def sub_cc(a: TracedInt | int, b: TracedInt | int) -> TracedInt:
    """``sub.cc.u32``/``.u64``: ``a - b`` (wrapping), setting the carry flag to its borrow-out."""
    return _carry("sub_cc", (a, b))


def subc(a: TracedInt | int, b: TracedInt | int) -> TracedInt:
    """``subc.u32``/``.u64``: ``a - (b + borrow)`` (the flag of the previous carry-chain builtin)."""
    return _carry("subc", (a, b))


def mad_cc(a: TracedInt | int, b: TracedInt | int, c: TracedInt | int) -> TracedInt:
    """``mad.lo.cc``: the low half of ``a * b`` plus ``c``, setting the carry flag to the addition's carry-out."""
    return _carry("mad_cc", (a, b, c))


def madc(a: TracedInt | int, b: TracedInt | int, c: TracedInt | int) -> TracedInt:
    """``madc.lo``: the low half of ``a * b`` plus ``c`` plus the carry flag."""
    return _carry("madc", (a, b, c))


def add_sat_int(a: TracedInt | int, b: TracedInt | int) -> TracedInt:
    """``add.sat.s32``: ``a + b`` clamped to the Int32 range."""
    (x, y), dtype = _common("add_sat_int", (a, b), (Int32,))
    return numeric.add_sat_s32(x, y, dtype)


def sub_sat_int(a: TracedInt | int, b: TracedInt | int) -> TracedInt:
    """``sub.sat.s32``: ``a - b`` clamped to the Int32 range."""
    (x, y), dtype = _common("sub_sat_int", (a, b), (Int32,))
    return numeric.sub_sat_s32(x, y, dtype)


def lop3(a: TracedInt | int, b: TracedInt | int, c: TracedInt | int, lut: int) -> TracedInt:
    """``lop3.b32``: the bitwise function of three inputs whose truth table is ``lut`` (a static int 0..255:
    bit ``(a_i << 2) | (b_i << 1) | c_i`` of it is result bit ``i``; e.g. ``0xF0 & 0xCC`` is ``a & b``)."""
    (x, y, z), dtype = _common("lop3", (a, b, c), I32_TYPES)
    static_int(lut, "lop3: lut", "a truth table 0..255")
    if not 0 <= lut <= 255:
        raise TraceError(f"lop3: lut must be a truth table 0..255, got {lut}")
    return numeric.lop3(x, y, z, lut, dtype)


def shf(a: TracedInt | int, b: TracedInt | int, shift: TracedInt | int, kind: str = "l") -> TracedInt:
    """``shf.{l,r}.{wrap,clamp}.b32``: a funnel shift of the 64-bit value whose bits 31..0 are ``a`` and bits
    63..32 are ``b``: ``"l"`` gives the high word after shifting it left, ``"r"`` the low word after shifting it
    right, by ``shift`` modulo 32 (``"clamp_left"``/``"clamp_right"``: by ``min(shift, 32)``)."""
    if type(kind) is not str or kind not in SHF_KINDS:
        raise TraceError(f"shf: kind must be one of {', '.join(SHF_KINDS)}, got {kind!r}")
    (x, y), dtype = _common("shf", (a, b), I32_TYPES)
    n = int_operand(shift, "shf: shift")
    return numeric.shf(x, y, n, kind, dtype)


def prmt(src: TracedInt | int, src_reg_shifted: TracedInt | int, prmt_indices: TracedInt | int) -> TracedInt:
    """``prmt.b32``: four bytes picked from the eight of ``src`` (bytes 0..3) and ``src_reg_shifted`` (bytes
    4..7) by the four selector nibbles of ``prmt_indices`` (result byte ``i`` from nibble ``i``; a nibble's bit 3
    replicates the picked byte's sign). An Int32."""
    ops = [int_operand(v, f"prmt: {w}") for v, w in ((src, "src"), (src_reg_shifted, "src_reg_shifted"),
                                                       (prmt_indices, "prmt_indices"))]
    return wrap(numeric.prmt(*ops), Int32)
