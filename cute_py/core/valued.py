"""Run-time integers whose value is nonetheless known: the algebra treats them exactly as the
dynamic values of a kernel (no static decisions), while their value can still be read.

The integer-like classes form one set:

- :class:`~cute_py.core.leaves.DynamicInt` — the base of every leaf known only at run time; the
  algebra makes no static decision on it and prints it ``?``.
- :class:`~cute_py.compiler.TracedInt` — a value of the kernel being traced (an MLIR value).
- :class:`ValuedInt` (here) — a dynamic integer whose value Python also knows:
  :class:`~cute_py.runtime.HostInt` (a gmem tensor's extents and strides, known on the host when a TMA
  descriptor is built, dynamic in the kernel) and :class:`~cute_py.testing.RuntimeInt` (dynamic values
  for tests on the CPU).
- :class:`~cute_py.tensor.dtypes.Scalar` — not a leaf: a host value of a numeric type (``cute.Int32(6)``),
  a run-time parameter when passed to a kernel.  ``cute.Int32`` itself is the element type, the
  annotation of such a parameter, and, in a kernel, the conversion of a traced value.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

from ..errors import CuteValueError, StaticValueRequired
from .leaves import divisor_of, DynamicInt
from .normalise import as_index, index_or_none

__all__ = ["ValuedInt", "value_of"]


class ValuedInt(DynamicInt):
    """A dynamic integer with a known ``value``; arithmetic gives another one of the same class.

    Truth values and comparisons raise :class:`~cute_py.errors.StaticValueRequired` (a ``TypeError``
    too): deciding on a run-time value needs a run-time branch.
    """

    __slots__ = ("value", "known_divisor")

    def __init__(self, value: int | ValuedInt, known_divisor: int = 1) -> None:
        """``known_divisor``: a positive int known to divide the value (what the algebra may rely on, as it does
        on a traced value's); it must divide ``value``."""
        self.value = value.value if isinstance(value, ValuedInt) else as_index(value, f"the value of a {type(self).__name__}")
        if type(known_divisor) is not int or known_divisor < 1:
            raise CuteValueError(f"known_divisor must be a positive int, got {known_divisor!r}")
        if self.value % known_divisor:
            raise CuteValueError(f"{known_divisor} does not divide the run-time value {self.value}")
        self.known_divisor = known_divisor

    def _op(self, other, fn, div_rule=None):
        o = other.value if isinstance(other, ValuedInt) else other
        if type(o) is not int:
            o = None if isinstance(o, (bool, float)) else index_or_none(o)  # integer-likes count as ints
            if o is None:
                return NotImplemented
        try:
            value = fn(self.value, o)
        except ZeroDivisionError:
            raise CuteValueError(f"a run-time integer ({self.value}) is divided by zero") from None
        div = div_rule(self.known_divisor, divisor_of(other)) if div_rule else 1
        return type(self)(value, max(1, div) if value % max(1, div) == 0 else 1)

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b, math.gcd)

    def __radd__(self, o):
        return self._op(o, lambda a, b: b + a, math.gcd)

    def __sub__(self, o):
        return self._op(o, lambda a, b: a - b, math.gcd)

    def __rsub__(self, o):
        return self._op(o, lambda a, b: b - a, math.gcd)

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b, lambda a, b: a * b)

    def __rmul__(self, o):
        return self._op(o, lambda a, b: b * a, lambda a, b: a * b)

    def __floordiv__(self, o):
        # an exact division by a static divisor of the known divisor keeps the rest of it
        return self._op(o, lambda a, b: a // b,
                        lambda a, b: a // b if type(o) is int and o > 0 and a % o == 0 else 1)

    def __rfloordiv__(self, o):
        return self._op(o, lambda a, b: b // a)

    def __mod__(self, o):
        return self._op(o, lambda a, b: a % b, math.gcd)

    def __rmod__(self, o):
        return self._op(o, lambda a, b: b % a)

    def __and__(self, o):
        return self._op(o, lambda a, b: a & b)

    def __rand__(self, o):
        return self._op(o, lambda a, b: b & a)

    def __or__(self, o):
        return self._op(o, lambda a, b: a | b)

    def __ror__(self, o):
        return self._op(o, lambda a, b: b | a)

    def __xor__(self, o):
        return self._op(o, lambda a, b: a ^ b)

    def __rxor__(self, o):
        return self._op(o, lambda a, b: b ^ a)

    def __rshift__(self, o):
        return self._op(o, lambda a, b: a >> b)

    def __lshift__(self, o):
        return self._op(o, lambda a, b: a << b)

    def __neg__(self):
        return type(self)(-self.value, self.known_divisor)

    def __abs__(self):
        return type(self)(abs(self.value), self.known_divisor)

    def assume_divisor_(self, n: int) -> ValuedInt:
        """This value, known to be divisible by ``n`` too (checked: the value is known)."""
        if self.value % n:
            raise CuteValueError(f"assume: the run-time value {self.value} is not divisible by {n}")
        return type(self)(self.value, math.lcm(self.known_divisor, n))

    def __bool__(self) -> NoReturn:
        raise StaticValueRequired("the truth value of a run-time integer is not known while tracing")

    def __eq__(self, o: object) -> NoReturn:
        raise StaticValueRequired("comparing a run-time integer needs a run-time branch (or a static value)")

    __lt__ = __le__ = __gt__ = __ge__ = __ne__ = __eq__
    __hash__ = None

    def min_(self, o: int | ValuedInt) -> ValuedInt:
        return type(self)(min(self.value, value_of(o)))

    def max_(self, o: int | ValuedInt) -> ValuedInt:
        return type(self)(max(self.value, value_of(o)))

    def signum_(self) -> ValuedInt:
        return type(self)((self.value > 0) - (self.value < 0))

    def __str__(self):
        return "?" if self.known_divisor == 1 else f"?{{div={self.known_divisor}}}"

    def __repr__(self):
        if self.known_divisor == 1:
            return f"{type(self).__name__}({self.value})"
        return f"{type(self).__name__}({self.value}, known_divisor={self.known_divisor})"


def value_of(x: Any) -> Any:
    """The value of a :class:`ValuedInt`, or of every such leaf of a tuple, layout or basis stride."""
    if isinstance(x, ValuedInt):
        return x.value
    if type(x) is tuple:
        return tuple(value_of(e) for e in x)
    if isinstance(x, tuple):  # an arithmetic tuple (a coordinate): the same kind of tuple
        return type(x)(tuple(value_of(e) for e in x))
    value = getattr(x, "value", None)
    if value is not None and hasattr(x, "modes"):  # a basis stride
        return type(x)(value_of(value), x.modes)
    if hasattr(x, "shape") and hasattr(x, "stride") and type(x).__name__ == "Layout":
        from .layout import make_layout_unchecked

        return make_layout_unchecked(value_of(x.shape), value_of(x.stride))
    return x
