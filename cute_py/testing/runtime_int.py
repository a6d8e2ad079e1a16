"""``RuntimeInt``: a stand-in for a traced run-time integer, for testing dynamic-aware code on the CPU.

It carries a concrete value (``.value``) but is a :class:`~cute_py.int_tuple.Dynamic`
leaf, so the algebra treats it exactly as it treats a value known only inside a
kernel: it computes with it through arithmetic and refuses decisions that need
a static int.
"""

from ..int_tuple import Dynamic

__all__ = ["RuntimeInt", "value_of"]


def value_of(x):
    """The concrete value of a RuntimeInt, an int, or a tuple of them."""
    if type(x) is tuple:
        return tuple(value_of(e) for e in x)
    return x.value if isinstance(x, RuntimeInt) else x


def _v(x):
    if isinstance(x, RuntimeInt):
        return x.value
    if type(x) is int:
        return x
    return NotImplemented


class RuntimeInt(Dynamic):
    """A run-time integer with a known value; every operation returns another RuntimeInt."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = int(value)

    def __repr__(self):
        return f"RuntimeInt({self.value})"

    def __str__(self):
        return "?"

    def _op(self, other, fn):
        o = _v(other)
        return NotImplemented if o is NotImplemented else RuntimeInt(fn(self.value, o))

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b)

    def __radd__(self, o):
        return self._op(o, lambda a, b: b + a)

    def __sub__(self, o):
        return self._op(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return self._op(o, lambda a, b: b - a)

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b)

    def __rmul__(self, o):
        return self._op(o, lambda a, b: b * a)

    def __floordiv__(self, o):
        return self._op(o, lambda a, b: a // b)

    def __rfloordiv__(self, o):
        return self._op(o, lambda a, b: b // a)

    def __mod__(self, o):
        return self._op(o, lambda a, b: a % b)

    def __rmod__(self, o):
        return self._op(o, lambda a, b: b % a)

    def __and__(self, o):
        return self._op(o, lambda a, b: a & b)

    def __rand__(self, o):
        return self._op(o, lambda a, b: b & a)

    def __xor__(self, o):
        return self._op(o, lambda a, b: a ^ b)

    def __rxor__(self, o):
        return self._op(o, lambda a, b: b ^ a)

    def __or__(self, o):
        return self._op(o, lambda a, b: a | b)

    def __ror__(self, o):
        return self._op(o, lambda a, b: b | a)

    def __rshift__(self, o):
        return self._op(o, lambda a, b: a >> b)

    def __lshift__(self, o):
        return self._op(o, lambda a, b: a << b)

    def __neg__(self):
        return RuntimeInt(-self.value)

    def __abs__(self):
        return RuntimeInt(abs(self.value))

    def __bool__(self):
        raise TypeError("the truth value of a run-time integer is not known while tracing")

    def __eq__(self, o):
        raise TypeError("comparing a run-time integer needs a run-time branch")

    __lt__ = __le__ = __gt__ = __ge__ = __ne__ = __eq__
    __hash__ = None

    def min_(self, o):
        return RuntimeInt(min(self.value, _v(o)))

    def max_(self, o):
        return RuntimeInt(max(self.value, _v(o)))

    def signum_(self):
        return RuntimeInt((self.value > 0) - (self.value < 0))
