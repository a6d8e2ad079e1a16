"""The run-time scalar arguments of a ``Compiled`` call, checked and converted at every call.

A parameter of type ``Int32`` or ``Int64`` takes a Python int or an integer-like (numpy integers), never a bool
or a float, within the type's range; ``Float32`` takes a Python float or int (or numpy floats and ints) whose
value rounds to a finite float32 (infinities and NaN pass as they are). A :class:`~cute_py.tensor.dtypes.Scalar`
of the parameter's own type passes its value; one of another type (``Int64(5)`` for an ``Int32`` parameter) is
converted only where the value is exactly representable: an integer scalar within the range (a float
parameter: exactly a float32), a float scalar for a float parameter within its range. Everything else is a
:class:`~cute_py.errors.SpecMismatch` naming the rule, the parameter and the value, before anything is written
or launched (a jit function catches it and specialises again for the value, which it then compiles or refuses).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ...core.int_tuple import int_like, short_repr
from ...errors import SpecMismatch
from ...tensor.dtypes import Scalar

__all__ = ["converter", "RANGES", "F32_LIMIT", "fits"]

RANGES = {"Int32": (-(1 << 31), (1 << 31) - 1), "Int64": (-(1 << 63), (1 << 63) - 1)}
# the finite doubles that round to a finite float32: |x| < FLT_MAX + half its ulp (that half rounds to even: inf)
F32_LIMIT = (2.0 - 2.0 ** -23) * 2.0 ** 127 + 2.0 ** 103


class _NegativeZero(float):
    """-0.0 as a run-time Float32 value: unequal to 0.0 (a call with -0.0 after one with 0.0 refills its parameter,
    though the two compare equal as floats)."""

    __slots__ = ()

    def __eq__(self, other):
        return type(other) is _NegativeZero

    def __ne__(self, other):
        return type(other) is not _NegativeZero

    __hash__ = float.__hash__


_NEGATIVE_ZERO = _NegativeZero(-0.0)


def fits(kind: str, value: Any) -> bool:
    """Whether ``value`` (a Python int or float) is storable in a parameter of ``kind`` without loss of range."""
    if kind == "Float32":
        return isinstance(value, float) and not (abs(value) >= F32_LIMIT and math.isfinite(value))
    lo, hi = RANGES[kind]
    return type(value) is int and lo <= value <= hi


def converter(kind: str, position: int) -> Callable[[Any], int | float]:
    """The check of argument ``position`` for a run-time scalar parameter of ``kind`` (``Int32``, ``Int64``,
    ``Float32``): a function of the argument returning the value the parameter block takes."""
    if kind == "Float32":
        def convert(v):
            t = type(v)
            if t is float:
                x = v
            elif t is int:
                x = _float_of_int(v)
            else:
                x = _float_other(v)
            if x is None or (abs(x) >= F32_LIMIT and math.isfinite(x)):
                _refuse(kind, position, v, "a Python float or int whose value rounds to a finite float32 "
                        f"(|x| < {F32_LIMIT:.9g}), infinities and NaN, or a Scalar exactly representable in it")
            if x == 0.0 and math.copysign(1.0, x) < 0:
                return _NEGATIVE_ZERO
            return x
        return convert
    lo, hi = RANGES[kind]

    def convert(v):
        if type(v) is int:
            x = v
        elif isinstance(v, Scalar):
            x = v.value if v.dtype.kind in ("int", "uint") else None
        else:
            x = int_like(v)
        if x is None or not lo <= x <= hi:
            _refuse(kind, position, v, f"a Python int (or integer-like, not a bool or a float) in [{lo}, {hi}], or "
                    "an integer Scalar of a value in that range")
        return x
    return convert


def _float_of_int(v):
    try:
        return float(v)
    except OverflowError:
        return None


def _float_other(v):
    if isinstance(v, Scalar):
        if v.dtype.kind == "float":  # another float type: exact only (Float16 always is)
            x = float(v.value)
            return x if v.dtype.name == "Float32" or not math.isfinite(x) or _round_f32(x) == x else None
        if v.dtype.kind in ("int", "uint"):  # exact only: an int a float32 holds (24 significant bits)
            x = _float_of_int(v.value)
            return x if x is not None and _exact_f32(v.value) else None
        return None
    if isinstance(v, (bool, str, bytes)) or getattr(getattr(v, "dtype", None), "kind", None) == "b":
        return None
    i = int_like(v)
    if i is not None:
        return _float_of_int(i)
    f = getattr(type(v), "__float__", None)
    if f is None or getattr(getattr(v, "dtype", None), "kind", "f") not in ("f",):
        return None  # complex numbers, strings, other objects
    try:
        x = f(v)
    except Exception:
        return None
    return x if type(x) is float else None


def _round_f32(x):
    import struct

    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return None


def _exact_f32(n):
    """Whether the int ``n`` is exactly a float32 (at most 24 significant bits, within range)."""
    m = abs(n)
    if m == 0:
        return True
    m >>= (m & -m).bit_length() - 1  # drop trailing zero bits
    return m.bit_length() <= 24 and abs(n) < F32_LIMIT


def _refuse(kind, position, v, rule):
    raise SpecMismatch(f"argument {position}: a run-time {kind} parameter takes {rule}; got {short_repr(v)} "
                       f"({type(v).__name__})")
