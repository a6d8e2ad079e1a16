"""``cute.math``: elementary functions of traced floats, as the CuTe DSL's ``cute.math``.

Each function takes a traced number (an integer is taken as Float32) or a Python number (computed on the host
with Python's ``math``). Float16 and BFloat16 compute in Float32 and round once to their type; Float32 gives
Float32. Float64 has ``sqrt`` and ``fma`` (correctly rounded); its other functions are not offered yet (a
TraceError says so).

**Accuracy** (Float32, measured on an H100 against double precision; see tests/gpu/test_math_gpu.py):

========  ===============================================  ======================================================
function  default                                          ``fastmath=True`` (the PTX approximation, ftz)
========  ===============================================  ======================================================
sqrt      correctly rounded (``sqrt.rn``)                  ``sqrt.approx.ftz``
rsqrt     ``1 / sqrt(x)``, both rounded: <= 2 ulp           ``rsqrt.approx.ftz``
exp2      ``ex2.approx`` (<= 3 ulp; 2 for normal results)   ``ex2.approx.ftz``
exp       ``ex2.approx`` of a compensated ``x * log2(e)``:   ``ex2.approx.ftz(x * log2(e))``
          <= 3 ulp
log2      reduction to [sqrt(1/2), sqrt(2)) and an atanh   ``lg2.approx.ftz``
          series: <= 3 ulp
log       the same series: <= 2 ulp                        ``lg2.approx.ftz(x) * ln(2)``
sin, cos  reduction by pi/2 in three parts, polynomials:   ``sin.approx.ftz`` / ``cos.approx.ftz``
          <= 2 ulp for ``|x| <= 105615``; beyond, the
          reduction loses accuracy (reduce the argument
          first)
tanh      a polynomial below 0.55, ``1 - 2 / (exp(2x) +    ``tanh.approx`` (relative error about 2^-11)
          1)`` above: <= 3 ulp
erf       ``x + x Q(x^2)`` below 0.921875, ``1 - 2^p(x)``   (the same)
          to 3.92 (``Q``, ``p`` fitted; ``2^`` by
          ``ex2.approx``), then +-1: <= 3 ulp
fma       ``a * b + c`` rounded once                        (the same)
========  ===============================================  ======================================================

Special values follow C's ``<math.h>``: NaN in, NaN out; ``log`` of a negative number is NaN, of zero -inf;
``exp`` of -inf is 0.
"""

from __future__ import annotations

import math as _pymath
from typing import Any

from ...errors import TraceError
from ...tensor.dtypes import Float32, Float64, Int32
from ..emit.numeric import approx, copysign, float_bits, float_of_bits, fma_rn, roundeven, sqrt_rn
from ..lang import numeric
from ..lang.tensor_ssa import TensorSSA
from ..lang.values import TracedBool, TracedFloat, as_type, operand_dtype
from ..lang.traced_int import TracedInt, select

__all__ = ["sqrt", "rsqrt", "exp2", "exp", "log2", "log", "sin", "cos", "tanh", "erf", "fma"]

_LOG2E_HI, _LOG2E_LO = 1.4426950216293335, 1.92596298909109e-08  # log2(e) = hi + lo, hi a Float32
_LN2_HI, _LN2_LO = 0.6931471824645996, -1.904654323148236e-09  # ln(2) = hi + lo
# pi/2 in three Float32 parts (Cody and Waite), exact in products with the quadrant count up to 105615
_PIO2 = (1.57079601e+00, 3.13916473e-07, 5.39030253e-15)
_SIN = (-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880)  # Taylor: r + r^3 * P(r^2)
_COS = (-0.5, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800)  # 1 + r^2 * Q(r^2)
_TANH = (-0.3333333333333333, 0.13333333333333333, -0.05396825396825397, 0.021869488536155203,
         -0.008863235529902197, 0.003592128036572481, -0.0014558343870513183, 0.000590027440945586,
         -0.00023912911424355248)  # Taylor: a + a^3 * T(a^2), |a| < 0.55
# erf(x) = x + x * Q(x^2) below 0.921875 (Q a relative least-squares fit of erf(x) / x - 1, minimax-weighted)
_ERF_SPLIT = 0.921875
_ERF_SMALL = (0.12837916612625122, -0.37612634897232056, 0.11283701658248901, -0.026859700679779053,
              0.005201713647693396, -0.0008149792556650937, 8.397788042202592e-05)
# erf(x) = 1 - 2^p(x - 0.921875) from there to 3.92, p a fit of log2(erfc(x)) weighted by erfc(x) (the error it
# leaves in erf): Float32 coefficients, no division
_ERFC_LOG2 = (-2.3783719539642334, -3.6182973384857178, -1.2017484903335571, -0.06467027962207794,
              0.015659218654036522, -0.0030949232168495655, 0.0004310383810661733, -3.0562379834009334e-05)
_LN_SERIES = (1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11)  # 2 atanh(s) = 2s (1 + s^2/3 + s^4/5 + ...)
_SQRT_HALF_BITS = 0x3F3504F3  # Float32 sqrt(1/2)


def _operand(x: Any, fn: str, f64: bool = False) -> tuple[TracedFloat, Any] | None:
    """``(x as a Float32 traced value, the type of the result)``; ``None`` for a Python number."""
    dtype = operand_dtype(x)
    if dtype is None or (dtype.is_float and dtype.width == 8):
        raise TraceError(f"cute.math.{fn} takes a number, got {x!r}")
    if not isinstance(x, (TracedFloat, TracedInt, TracedBool)):
        return None
    if dtype is Float64:
        if not f64:
            raise TraceError(f"cute.math.{fn} of Float64 is not supported (sqrt and fma are); convert to Float32")
        return x, Float64
    out = dtype if dtype.is_float else Float32
    return x.to(Float32), out


def _approx(name: str, x: TracedFloat, ftz: bool = True) -> TracedFloat:
    return TracedFloat(approx(name, x.ir, ftz=ftz), Float32)


def _f32(v: float) -> TracedFloat:
    return TracedFloat(numeric.constant(v, Float32), Float32)


def _fma(a: Any, b: Any, c: Any) -> TracedFloat:
    a, b, c = (v if isinstance(v, TracedFloat) else _f32(v) for v in (a, b, c))
    return TracedFloat(fma_rn(a.ir, b.ir, c.ir), a.dtype)


def _horner(z: TracedFloat, coefficients: tuple[float, ...]) -> TracedFloat:
    acc = _f32(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = _fma(acc, z, c)
    return acc


def _bits(x: TracedFloat) -> TracedInt:
    return TracedInt(float_bits(x.ir), 32, dtype=Int32, index=False)


def _from_bits(i: TracedInt) -> TracedFloat:
    return TracedFloat(float_of_bits(i.ir), Float32)


def _finish(y: TracedFloat, out: Any) -> Any:
    return y if out is Float32 or out is Float64 else y.to(out)


def _unary(fn: str, x: Any, precise: Any, fast: Any, host: Any, fastmath: bool) -> Any:
    if isinstance(x, TensorSSA):  # element by element
        return x.map(lambda e: _unary(fn, e, precise, fast, host, fastmath))
    got = _operand(x, fn)
    if got is None:
        return host(x)
    v, out = got
    return _finish(fast(v) if fastmath else precise(v), out)


# -- the functions ----------------------------------------------------------------------------------


def sqrt(x: Any, fastmath: bool = False) -> Any:
    """The square root of ``x`` (NaN below zero): correctly rounded, or ``sqrt.approx.ftz`` with ``fastmath``."""
    if isinstance(x, TensorSSA):
        return x.map(lambda e: sqrt(e, fastmath))
    got = _operand(x, "sqrt", f64=True)
    if got is None:
        return _pymath.sqrt(x) if x >= 0 else _pymath.nan
    v, out = got
    if fastmath and out is not Float64:
        return _finish(_approx("sqrt", v), out)
    return _finish(TracedFloat(sqrt_rn(v.ir), v.dtype), out)


def rsqrt(x: Any, fastmath: bool = False) -> Any:
    """``1 / sqrt(x)``: two correctly rounded steps, or ``rsqrt.approx.ftz`` with ``fastmath``."""
    return _unary("rsqrt", x, lambda v: _f32(1.0) / TracedFloat(sqrt_rn(v.ir), v.dtype), lambda v: _approx("rsqrt", v),
                  lambda h: 1 / _pymath.sqrt(h), fastmath)


def exp2(x: Any, fastmath: bool = False) -> Any:
    """``2 ** x``: ``ex2.approx.f32`` (subnormal results kept), or its ``.ftz`` form with ``fastmath``."""
    return _unary("exp2", x, lambda v: _approx("ex2", v, ftz=False), lambda v: _approx("ex2", v),
                  _exp2_host, fastmath)


def _exp2_host(h: float) -> float:
    try:
        return 2.0 ** h
    except OverflowError:
        return _pymath.inf


def _exp(v: TracedFloat) -> TracedFloat:
    t = v * _LOG2E_HI
    low = _fma(v, _LOG2E_HI, -t) + v * _LOG2E_LO  # v * log2(e) = t + low, almost exactly
    r = _approx("ex2", t, ftz=False)
    y = _fma(r, low * _LN2_HI, r)  # 2^(t + low) = 2^t * (1 + low * ln 2)
    # an infinite argument or result: the compensation would be NaN (inf - inf, inf * 0)
    return select((abs(v) == _pymath.inf) | (r == _pymath.inf), r, y)


def exp(x: Any, fastmath: bool = False) -> Any:
    """``e ** x``: ``ex2.approx`` of a compensated ``x * log2(e)``, or ``ex2.approx.ftz(x * log2(e))`` with
    ``fastmath``."""
    return _unary("exp", x, _exp, lambda v: _approx("ex2", v * _LOG2E_HI), _exp_host, fastmath)


def _exp_host(h: float) -> float:
    try:
        return _pymath.exp(h)
    except OverflowError:
        return _pymath.inf


def _ln_parts(v: TracedFloat) -> tuple[TracedFloat, TracedFloat]:
    """``(e, ln(m))`` with ``v = 2^e * m``, ``m`` in [sqrt(1/2), sqrt(2)) (subnormals scaled first)."""
    tiny = v < 1.1754943508222875e-38
    scaled = select(tiny, v * 8388608.0, v)  # 2^23
    bits = _bits(scaled)
    mant = (bits - _SQRT_HALF_BITS) & 0x7FFFFF  # the mantissa relative to sqrt(1/2): m = 2^(e) ...
    e_bits = (bits - _SQRT_HALF_BITS) >> 23
    m = _from_bits(mant + _SQRT_HALF_BITS)
    e = e_bits.to(Float32) - select(tiny, 23.0, 0.0)
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    ln_m = _fma(s * z, _horner(z, _LN_SERIES), s) * 2.0
    return e, ln_m


def _special_log(v: TracedFloat, y: TracedFloat) -> TracedFloat:
    y = select(v == 0.0, -_pymath.inf, y)
    y = select(v == _pymath.inf, _pymath.inf, y)
    return select((v < 0.0) | (v != v), _pymath.nan, y)


def _log2(v: TracedFloat) -> TracedFloat:
    e, ln_m = _ln_parts(v)
    return _special_log(v, _fma(ln_m, _LOG2E_HI, _fma(ln_m, _LOG2E_LO, e)))


def _log(v: TracedFloat) -> TracedFloat:
    e, ln_m = _ln_parts(v)
    return _special_log(v, _fma(e, _LN2_HI, _fma(e, _LN2_LO, ln_m)))


def log2(x: Any, fastmath: bool = False) -> Any:
    """``log2(x)`` (NaN below zero, -inf at zero), or ``lg2.approx.ftz`` with ``fastmath``."""
    return _unary("log2", x, _log2, lambda v: _approx("lg2", v), _log_host(_pymath.log2), fastmath)


def log(x: Any, fastmath: bool = False) -> Any:
    """The natural logarithm of ``x`` (NaN below zero, -inf at zero), or ``lg2.approx.ftz(x) * ln 2`` with
    ``fastmath``."""
    return _unary("log", x, _log, lambda v: _approx("lg2", v) * _LN2_HI, _log_host(_pymath.log), fastmath)


def _log_host(f: Any) -> Any:
    return lambda h: f(h) if h > 0 else (-_pymath.inf if h == 0 else _pymath.nan)


def _reduce(v: TracedFloat) -> tuple[TracedFloat, TracedInt]:
    """``(r, q)`` with ``v = q * pi/2 + r``, ``|r| <= pi/4`` (exact for ``|v| <= 105615``), ``q`` modulo 4."""
    scaled = v * 0.6366197723675814  # 2 / pi
    q = TracedFloat(roundeven(scaled.ir), Float32)
    r = _fma(-q, _PIO2[0], v)
    r = _fma(-q, _PIO2[1], r)
    r = _fma(-q, _PIO2[2], r)
    return r, q.to(Int32) & 3


def _sin_cos(r: TracedFloat) -> tuple[TracedFloat, TracedFloat]:
    z = r * r
    return _fma(r * z, _horner(z, _SIN), r), _fma(z, _horner(z, _COS), 1.0)


def _sin(v: TracedFloat) -> TracedFloat:
    r, q = _reduce(v)
    s, c = _sin_cos(r)
    y = select((q & 1) == 1, c, s)
    return select(q >= 2, -y, y)


def _cos(v: TracedFloat) -> TracedFloat:
    r, q = _reduce(v)
    s, c = _sin_cos(r)
    y = select((q & 1) == 1, s, c)
    return select((q == 1) | (q == 2), -y, y)


def sin(x: Any, fastmath: bool = False) -> Any:
    """The sine of ``x`` (radians), or ``sin.approx.ftz`` with ``fastmath``."""
    return _unary("sin", x, _sin, lambda v: _approx("sin", v), _pymath.sin, fastmath)


def cos(x: Any, fastmath: bool = False) -> Any:
    """The cosine of ``x`` (radians), or ``cos.approx.ftz`` with ``fastmath``."""
    return _unary("cos", x, _cos, lambda v: _approx("cos", v), _pymath.cos, fastmath)


def _tanh(v: TracedFloat) -> TracedFloat:
    a = abs(v)
    z = a * a
    small = _fma(a * z, _horner(z, _TANH), a)
    large = 1.0 - 2.0 / (_exp(a * 2.0) + 1.0)
    t = select(a < 0.55, small, large)
    return TracedFloat(copysign(t.ir, v.ir), Float32)


def tanh(x: Any, fastmath: bool = False) -> Any:
    """The hyperbolic tangent of ``x``, or ``tanh.approx.f32`` with ``fastmath``."""
    return _unary("tanh", x, _tanh, lambda v: _approx("tanh", v, ftz=False), _pymath.tanh, fastmath)


def _erf(v: TracedFloat) -> TracedFloat:
    a = abs(v)
    small = _fma(a, _horner(a * a, _ERF_SMALL), a)
    large = 1.0 - _approx("ex2", _horner(a - _ERF_SPLIT, _ERFC_LOG2), ftz=False)
    r = select(a < _ERF_SPLIT, small, select(a < 3.92, large, 1.0))  # from 3.92 on, erf rounds to 1 in Float32
    r = TracedFloat(copysign(r.ir, v.ir), Float32)
    return select(v != v, v, r)


def erf(x: Any, fastmath: bool = False) -> Any:
    """The error function of ``x`` (``x + x Q(x^2)`` below 0.921875, ``1 - 2^p(x)`` with fitted ``Q``, ``p`` up to
    3.92, then +-1; no division); ``fastmath`` changes nothing (PTX has no approximation of it)."""
    return _unary("erf", x, _erf, _erf, _pymath.erf, fastmath)


def fma(a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` rounded once (the operands promoted to one float type; Float32 for integers)."""
    types = [operand_dtype(v) for v in (a, b, c)]
    if None in types:
        raise TraceError(f"cute.math.fma takes numbers, got {a!r}, {b!r}, {c!r}")
    if not any(isinstance(v, (TracedFloat, TracedInt, TracedBool)) for v in (a, b, c)):
        return a * b + c
    common = numeric.promote(numeric.promote(types[0], types[1]), types[2])
    if not common.is_float:
        common = Float32
    if common.width == 8:
        raise TraceError(f"cute.math.fma of {common.name} is not supported: convert to Float16 or Float32")
    x, y, z = (as_type(v, common) for v in (a, b, c))
    return TracedFloat(fma_rn(x.ir, y.ir, z.ir), x.dtype)
