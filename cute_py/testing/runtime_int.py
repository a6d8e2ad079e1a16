"""``RuntimeInt``: a stand-in for a traced run-time integer, for testing dynamic-aware code on the CPU.

It carries a concrete value (``.value``) but is a :class:`~cute_py.core.leaves.DynamicInt`
leaf, so the algebra treats it exactly as it treats a value known only inside a
kernel: it computes with it through arithmetic and refuses decisions that need
a static int.

Like a traced integer (and CuTe's mixed static-dynamic arithmetic), a product with a
static ``0`` is the static ``0``, ``x % 1`` and ``0 // x`` are the static ``0``, and an ordering
comparison (``< <= > >=``) is a run-time condition, a :class:`RuntimeBool`, which combines
with ``& | ^ ~`` and refuses to be a Python truth value.  ``==`` and ``!=`` stay refused
(:class:`~cute_py.errors.StaticValueRequired`): equality decides structure (congruence,
compatibility), which needs static values.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..errors import StaticValueRequired
from ..core.valued import ValuedInt
from ..core.valued import value_of as _value_of

__all__ = ["RuntimeInt", "RuntimeBool", "value_of"]


def _is_zero(x):
    return type(x) is int and x == 0


class RuntimeInt(ValuedInt):
    """A run-time integer with a known value; every operation returns another RuntimeInt (or a static 0)."""

    __slots__ = ()

    def __mul__(self, o):
        return 0 if _is_zero(o) else ValuedInt.__mul__(self, o)

    def __rmul__(self, o):
        return 0 if _is_zero(o) else ValuedInt.__rmul__(self, o)

    def __mod__(self, o):
        return 0 if type(o) is int and o in (1, -1) else ValuedInt.__mod__(self, o)

    def __rfloordiv__(self, o):
        return 0 if _is_zero(o) else ValuedInt.__rfloordiv__(self, o)

    def __rmod__(self, o):
        return 0 if _is_zero(o) else ValuedInt.__rmod__(self, o)

    def _compare(self, o, fn):
        other = o.value if isinstance(o, ValuedInt) else o
        if type(other) is not int:
            return NotImplemented
        return RuntimeBool(fn(self.value, other))

    def __lt__(self, o):
        return self._compare(o, lambda a, b: a < b)

    def __le__(self, o):
        return self._compare(o, lambda a, b: a <= b)

    def __gt__(self, o):
        return self._compare(o, lambda a, b: a > b)

    def __ge__(self, o):
        return self._compare(o, lambda a, b: a >= b)

    __eq__ = ValuedInt.__eq__
    __ne__ = ValuedInt.__ne__
    __hash__ = None


class RuntimeBool:
    """A run-time condition with a known value (``.value``): what comparing a :class:`RuntimeInt` gives."""

    __slots__ = ("value",)
    __hash__ = None

    def __init__(self, value: object) -> None:
        self.value = bool(value)

    def _combine(self, o, fn):
        if isinstance(o, RuntimeBool):
            return RuntimeBool(fn(self.value, o.value))
        if type(o) is bool:
            return RuntimeBool(fn(self.value, o))
        return NotImplemented

    def __and__(self, o):
        return self._combine(o, lambda a, b: a and b)

    __rand__ = __and__

    def __or__(self, o):
        return self._combine(o, lambda a, b: a or b)

    __ror__ = __or__

    def __xor__(self, o):
        return self._combine(o, lambda a, b: a != b)

    __rxor__ = __xor__

    def __invert__(self):
        return RuntimeBool(not self.value)

    def __bool__(self) -> NoReturn:
        raise StaticValueRequired("the truth value of a run-time condition is not known while tracing")

    def __repr__(self):
        return f"RuntimeBool({self.value})"


def value_of(x: Any) -> Any:
    """The value of a run-time integer or condition, or of every such leaf of a tuple, layout or basis stride."""
    if isinstance(x, RuntimeBool):
        return x.value
    return _value_of(x)
