"""Float instructions and conversions as kernel builtins, with the CuTe DSL's ``cute.arch`` names.

=====================================  ===========================================================  =============================
call                                   value                                                        PTX
=====================================  ===========================================================  =============================
``fmax(a, b, abs=, nan=, ftz=)``       the larger Float32                                           ``max{.ftz}{.NaN}{.xorsign.abs}.f32``
``fmin(a, b, ...)``                    the smaller Float32                                          ``min{...}.f32``
``rcp_approx(a)``                      ``1 / a``, approximate, denormals flushed                    ``rcp.approx.ftz.f32``
``exp2(a)``                            ``2 ** a``, approximate, denormals flushed                   ``ex2.approx.ftz.f32``
``cvt_f32_tf32(a)``                    ``a`` rounded to TF32 (nearest, ties away), its 32 bits       ``cvt.rna.tf32.f32``
                                       as an Int32 (an MMA operand register)
``cvt_f32_bf16(a)``                    ``a`` as a BFloat16 (nearest even)                           ``cvt.rn.bf16.f32``
``cvt_f32x2_bf16x2(v)``                two Float32 as two BFloat16, nearest even, saturated to the   ``cvt.rn.bf16x2.f32`` of the
                                       largest finite value (NaN stays NaN)                         values clamped (``.satfinite``)
``cvt_i8_bf16(x)``, ``cvt_i8x2_...``   Int8 values as BFloat16 / Float32 (exact)                    ``cvt.rn.{bf16,f32}.s32``
=====================================  ===========================================================  =============================

``fmax``: ``nan=True`` propagates a NaN operand (IEEE ``maximum``), else a NaN loses to a number
(``maximumNumber``); ``abs=True`` gives the larger magnitude with the sign ``sign(a) ^ sign(b)``
(``.xorsign.abs``); ``ftz=True`` flushes denormal inputs and result to zero. ``fmin`` alike.

Where the DSL takes and returns raw MLIR vectors (``vector<2xf32>``, ``vector<4xi8>``), the vector here is a
``TensorSSA`` (``tensor.load()``) or a tuple of that many traced values, and the result a ``TensorSSA`` of the
converted elements.
"""

from __future__ import annotations

from typing import Any

from ...errors import TraceError
from ...tensor.dtypes import BFloat16, DType, Float32, Int8
from ..lang.tensor_ssa import TensorSSA
from ..lang.values import TracedFloat, as_type, wrap
from ..lang.traced_int import TracedInt
from ..emit import numeric

__all__ = ["fmax", "fmin", "rcp_approx", "exp2", "cvt_f32_tf32", "cvt_f32_bf16", "cvt_f32x2_bf16x2", "cvt_i8_bf16",
           "cvt_i8x2_to_bf16x2", "cvt_i8x4_to_bf16x4", "cvt_i8x2_to_f32x2", "cvt_i8x4_to_f32x4",
           "cvt_i8_bf16_intrinsic"]


def _f32(x: Any, what: str) -> Any:
    """The f32 MLIR value of a Float32 operand (a Python number becomes a constant)."""
    if isinstance(x, TracedFloat):
        if x.dtype is not Float32:
            raise TraceError(f"{what} must be a Float32, got a traced {x.dtype.name}; convert it explicitly")
        return x.ir
    if type(x) in (int, float):
        return as_type(float(x), Float32).ir
    got = f"a traced {x.dtype.name}" if isinstance(x, TracedInt) else repr(x)
    raise TraceError(f"{what} must be a Float32 or a Python number, got {got}")


def _flags(name: str, **flags: Any) -> None:
    for k, v in flags.items():
        if type(v) is not bool:
            raise TraceError(f"{name}: {k} must be True or False, got {v!r}")


def _minmax(op: str, a: Any, b: Any, abs: bool, nan: bool, ftz: bool) -> TracedFloat:
    name = f"f{op}"
    _flags(name, abs=abs, nan=nan, ftz=ftz)
    x, y = _f32(a, f"{name}: a"), _f32(b, f"{name}: b")
    return numeric.min_max(op, x, y, abs=abs, nan=nan, ftz=ftz)


def fmax(a: Any, b: Any, *, abs: bool = False, nan: bool = False, ftz: bool = False) -> TracedFloat:
    """``max.f32`` of two Float32 values, with the modifiers the module describes."""
    return _minmax("max", a, b, abs, nan, ftz)


def fmin(a: Any, b: Any, *, abs: bool = False, nan: bool = False, ftz: bool = False) -> TracedFloat:
    """``min.f32`` of two Float32 values, with the modifiers the module describes."""
    return _minmax("min", a, b, abs, nan, ftz)


def rcp_approx(a: Any) -> TracedFloat:
    """``rcp.approx.ftz.f32``: an approximation of ``1 / a`` (max. error 1 ulp; denormals flushed to zero)."""
    return numeric.rcp_approx(_f32(a, "rcp_approx: a"))


def exp2(a: Any) -> TracedFloat:
    """``ex2.approx.ftz.f32``: an approximation of ``2 ** a`` (denormals flushed). The DSL deprecates it for
    ``cute.math.exp2(a, fastmath=True)``, which is the same instruction."""
    return numeric.ex2_approx_ftz(_f32(a, "exp2: a"))


def cvt_f32_tf32(src_f32: Any) -> TracedInt:
    """``cvt.rna.tf32.f32``: ``src_f32`` rounded to TF32 (to nearest, ties away from zero), as the 32-bit register
    an MMA reads (an Int32 holding the f32 bits with the low 13 mantissa bits zero)."""
    return numeric.cvt_rna_tf32(_f32(src_f32, "cvt_f32_tf32: src_f32"))


def cvt_f32_bf16(src_f32: Any) -> TracedFloat:
    """``cvt.rn.bf16.f32``: ``src_f32`` rounded to the nearest BFloat16 (ties to even)."""
    return numeric.cvt_rn_bf16(_f32(src_f32, "cvt_f32_bf16: src_f32"))


def _elements(src: Any, n: int, dtype: DType, name: str) -> list[Any]:
    """The ``n`` traced ``dtype`` elements of a TensorSSA or a tuple (a Python number converted)."""
    items = list(src.elements) if isinstance(src, TensorSSA) else (list(src) if isinstance(src, (tuple, list))
                                                                    else None)
    if items is None or len(items) != n:
        raise TraceError(f"{name} takes a TensorSSA or a tuple of {n} {dtype.name} values, got {src!r}")
    out = []
    for i, x in enumerate(items):
        if isinstance(x, (TracedInt, TracedFloat)):
            if x.dtype is not dtype:
                raise TraceError(f"{name}: element {i} must be a {dtype.name}, got a traced {x.dtype.name}")
            out.append(x)
        elif type(x) in (int, float) and (dtype.is_float or type(x) is int):
            if not dtype.is_float and not -(1 << (dtype.width - 1)) <= x < (1 << (dtype.width - 1)):
                raise TraceError(f"{name}: element {i} ({x}) does not fit in a {dtype.name}")
            out.append(as_type(x, dtype))
        else:
            raise TraceError(f"{name}: element {i} must be a {dtype.name}, got {x!r}")
    return out


def cvt_f32x2_bf16x2(src_vec2: Any) -> TensorSSA:
    """``cvt.rn.satfinite.bf16x2.f32``'s result: two Float32 values (a TensorSSA or a tuple) as two BFloat16,
    rounded to nearest even and saturated to the largest finite BFloat16 (a NaN stays NaN). (``.satfinite``
    needs PTX ISA 8.1; the values are clamped with ``min``/``max.NaN`` before ``cvt.rn.bf16x2.f32``.)"""
    lo, hi = _elements(src_vec2, 2, Float32, "cvt_f32x2_bf16x2")
    low, high = numeric.cvt_bf16x2_satfinite(lo.ir, hi.ir)
    return TensorSSA([wrap(low, BFloat16), wrap(high, BFloat16)], 2, BFloat16)


def _convert_i8(src: Any, n: int, dtype: DType, name: str) -> TensorSSA:
    return TensorSSA([x.to(dtype) for x in _elements(src, n, Int8, name)], n, dtype)


def cvt_i8_bf16(src_i8: Any) -> TracedFloat:
    """An Int8 as a BFloat16 (exact: every Int8 is a BFloat16)."""
    (x,) = _elements((src_i8,), 1, Int8, "cvt_i8_bf16")
    return x.to(BFloat16)


def cvt_i8x2_to_bf16x2(src_vec2: Any) -> TensorSSA:
    """Two Int8 values (a TensorSSA or a tuple) as two BFloat16 (exact)."""
    return _convert_i8(src_vec2, 2, BFloat16, "cvt_i8x2_to_bf16x2")


def cvt_i8x4_to_bf16x4(src_vec4: Any) -> TensorSSA:
    """Four Int8 values as four BFloat16 (exact)."""
    return _convert_i8(src_vec4, 4, BFloat16, "cvt_i8x4_to_bf16x4")


def cvt_i8x2_to_f32x2(src_vec2: Any) -> TensorSSA:
    """Two Int8 values as two Float32 (exact)."""
    return _convert_i8(src_vec2, 2, Float32, "cvt_i8x2_to_f32x2")


def cvt_i8x4_to_f32x4(src_vec4: Any) -> TensorSSA:
    """Four Int8 values as four Float32 (exact)."""
    return _convert_i8(src_vec4, 4, Float32, "cvt_i8x4_to_f32x4")


def cvt_i8_bf16_intrinsic(vec_i8: Any, length: int) -> TensorSSA:
    """``length`` Int8 values (a TensorSSA or a tuple) as ``length`` BFloat16 (exact)."""
    if type(length) is not int or length <= 0:
        raise TraceError(f"cvt_i8_bf16_intrinsic: length must be a positive static int, got {length!r}")
    return _convert_i8(vec_i8, length, BFloat16, "cvt_i8_bf16_intrinsic")
