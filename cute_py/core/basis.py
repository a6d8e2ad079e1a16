"""Basis strides ``E(i)`` and arithmetic tuples: layouts whose codomain is a coordinate.

``ScaledBasis(v, modes)`` is ``v`` times the unit vector of (nested) mode ``modes``
of the codomain; it prints ``v@m`` (``1@1@0`` for ``E([0, 1])``, innermost mode
first, as CuTe prints).  Sums of bases are :class:`ArithTuple` coordinates.
``make_identity_layout(shape)`` maps each coordinate to itself; TMA coordinate
tensors are built from it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import CuteTypeError, CuteValueError
from .int_tuple import get_unchecked
from .leaves import DynamicInt, is_int
from .normalise import as_index, as_int_tuple
from .notation import fmt, short_repr
from .products import product_unchecked
from .layout import Layout, make_layout_unchecked
from .typing import Int, IntTuple, Shape, Stride, XTuple

__all__ = [
    "ScaledBasis",
    "E",
    "ArithTuple",
    "make_identity_layout",
    "make_basis_like",
    "basis_get",
    "basis_value",
    "as_arith_tuple",
    "is_scaled_basis",
]


class ScaledBasis:
    """``value @ modes``: an immutable, hashable basis stride."""

    __slots__ = ("value", "modes")
    __cute_stride__ = True

    def __init__(self, value: Int, modes: int | Sequence[int] = ()) -> None:
        if isinstance(modes, (tuple, list)):
            modes = tuple(as_index(m, "a basis mode") for m in modes)
        else:
            modes = (as_index(modes, "a basis mode"),)
        for m in modes:
            if m < 0:
                raise CuteValueError(f"basis modes must be non-negative ints, got {modes}")
        if len(modes) > 64:
            raise CuteValueError(f"a basis names at most 64 nested modes, got {len(modes)}")
        if not is_int(value):
            value = as_int_tuple(value, "the scale of a basis")
            if type(value) is tuple:
                raise CuteTypeError(f"a basis is scaled by an int, got {short_repr(value)}")
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "modes", modes)

    def __setattr__(self, name, value):
        raise AttributeError("ScaledBasis is immutable")

    def __reduce__(self):
        return (ScaledBasis, (self.value, self.modes))

    def __cute_substitute__(self, fn):
        """This basis with ``fn`` applied to its scale (see ``symbolic.substitute``)."""
        return ScaledBasis(fn(self.value), self.modes)

    @property
    def __cute_static__(self):
        return type(self.value) is int

    def __str__(self):
        return fmt(self.value) + "".join(f"@{m}" for m in reversed(self.modes))

    def __repr__(self):
        return f"ScaledBasis({self.value!r}, {self.modes!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is ScaledBasis and self.modes == other.modes and _eq(self.value, other.value)

    def __hash__(self) -> int:
        return hash(("E", self.value, self.modes))

    # arithmetic: scaling keeps the basis, sums become arithmetic tuples
    def __mul__(self, k):
        if type(k) is ScaledBasis:
            raise CuteTypeError(f"cannot multiply two bases ({self} * {k})")
        return ScaledBasis(self.value * _scalar(k, "a basis"), self.modes)

    __rmul__ = __mul__

    def __add__(self, other):
        if type(other) is int and other == 0:
            return self
        if not (is_int(other) or isinstance(other, (tuple, ScaledBasis))):
            other = _scalar(other, "a basis")
        if not self.modes:
            return self.value + other
        return as_arith_tuple(self) + other

    __radd__ = __add__

    def __neg__(self):
        return ScaledBasis(-self.value, self.modes)

    def __abs__(self):
        return ScaledBasis(abs(self.value), self.modes)

    def __floordiv__(self, k):
        k = _scalar(k, "a basis")
        if type(k) is int and k == 0:
            raise CuteValueError(f"cannot divide the basis {self} by 0")
        return ScaledBasis(self.value // k, self.modes)

    def __cute_compose__(self, ls, ld, rs, impl):
        # lhs o (rs : value@modes) == (the lhs mode named by modes) o (rs : value)
        return impl(basis_get(self, ls), basis_get(self, ld), rs, self.value, self.modes)

    def __cute_cosize__(self):
        return as_arith_tuple(self).__cute_cosize__()

    def __cute_coprofile__(self):
        return _zeros(as_arith_tuple(self))

    def __cute_coord__(self):
        return as_arith_tuple(self)


def _scalar(k, what):
    # an int (or run-time int) to scale or shift ``what`` by
    if type(k) is int or isinstance(k, DynamicInt):
        return k
    return as_index(k, f"the int that scales or shifts {what}")


def _eq(a, b):
    if type(a) is int and type(b) is int:
        return a == b
    return a is b


def E(*modes: int | Sequence[int]) -> ScaledBasis:
    """The unit basis stride of mode ``modes``: ``E(0)`` prints ``1@0``, ``E(0, 1)`` (or ``E([0, 1])``) ``1@1@0``."""
    if len(modes) == 1 and isinstance(modes[0], (list, tuple)):
        modes = tuple(modes[0])
    return ScaledBasis(1, modes)


def is_scaled_basis(x: object) -> bool:
    """True for a :class:`ScaledBasis`."""
    return type(x) is ScaledBasis


class ArithTuple(tuple):
    """A coordinate in a layout's codomain: a tuple with element-wise ``+`` (shorter ones pad with 0).

    Its elements are ints (integer-likes are converted), run-time ints or nested coordinates.
    """

    __slots__ = ()

    def __new__(cls, items=()):
        try:
            items = tuple(items)
        except TypeError:
            raise CuteTypeError(f"an ArithTuple is built from a sequence of ints, got {short_repr(items)}") from None
        return tuple.__new__(cls, [_coord_element(e) for e in items])

    def __cute_substitute__(self, fn):
        """This coordinate with ``fn`` applied to each element (see ``symbolic.substitute``)."""
        return type(self)(fn(e) for e in self)

    def __add__(self, other):
        if type(other) is int and other == 0:
            return self
        if type(other) is ScaledBasis:
            other = as_arith_tuple(other)
        if not isinstance(other, tuple):
            raise CuteTypeError(f"cannot add {other!r} to the coordinate {self}")
        n = max(len(self), len(other))
        a = tuple(self) + (0,) * (n - len(self))
        b = tuple(other) + (0,) * (n - len(other))
        return ArithTuple(_add(x, y) for x, y in zip(a, b))

    __radd__ = __add__

    def __mul__(self, k):
        k = _scalar(k, "a coordinate")
        return ArithTuple(x * k for x in self)

    __rmul__ = __mul__

    def __str__(self):
        return fmt(tuple(self))

    def __repr__(self):
        return f"ArithTuple{tuple(self)!r}"

    def __cute_coprofile__(self):
        return _zeros(tuple(self))

    def __cute_cosize__(self):
        # the size of the bounding shape of a codomain coordinate (each leaf + 1)
        return product_unchecked(_plus_one(tuple(self)))


def _coord_element(e):
    if type(e) is int or type(e) is ArithTuple or isinstance(e, DynamicInt):
        return e
    if isinstance(e, (tuple, list)):
        return ArithTuple(as_int_tuple(e, "an element of an ArithTuple"))
    return as_int_tuple(e, "an element of an ArithTuple")


def _zeros(t):
    if isinstance(t, tuple):
        return tuple(_zeros(x) for x in t)
    return 0


def _plus_one(t):
    if isinstance(t, tuple):
        return tuple(_plus_one(x) for x in t)
    return t + 1


def _add(x, y):
    if isinstance(x, tuple) or isinstance(y, tuple):
        x = ArithTuple(x) if isinstance(x, tuple) else (ArithTuple() if x == 0 else x)
        return x + y
    return x + y


def as_arith_tuple(b: ScaledBasis | IntTuple) -> Int | ArithTuple:
    """The coordinate of a scaled basis: ``2@1 -> (0,2)``, ``1@1@0 -> ((0,1),)``; an int or a coordinate is kept."""
    if type(b) is not ScaledBasis:
        if type(b) is int or type(b) is ArithTuple or isinstance(b, DynamicInt):
            return b
        b = as_int_tuple(b, "as_arith_tuple argument (a basis, an int or a coordinate)")
        return ArithTuple(b) if type(b) is tuple else b
    v = b.value
    for m in reversed(b.modes):
        v = ArithTuple((0,) * m + (v,))
    return v


def basis_get(b: ScaledBasis | Int, t: Layout | XTuple) -> Layout | XTuple:
    """The part of ``t`` that the basis ``b`` names (``t`` itself for an int)."""
    if type(b) is not ScaledBasis:
        b = as_int_tuple(b, "basis_get basis (a ScaledBasis or an int)")
        if type(b) is tuple:
            raise CuteTypeError(f"basis_get takes a basis or an int, got {short_repr(b)}")
    if not isinstance(t, Layout):
        t = as_int_tuple(t, "basis_get argument", allow_basis=True)
    if type(b) is not ScaledBasis or not b.modes:
        return t
    return get_unchecked(t, b.modes)


def basis_value(b: ScaledBasis | Int) -> Int:
    """The scale of a basis (an int is its own value)."""
    if type(b) is ScaledBasis:
        return b.value
    b = as_int_tuple(b, "basis_value argument (a ScaledBasis or an int)")
    if type(b) is tuple:
        raise CuteTypeError(f"basis_value takes a basis or an int, got {short_repr(b)}")
    return b


def make_basis_like(shape: Shape) -> Stride:
    """Unit bases with the profile of ``shape``: ``make_basis_like((2,(3,4))) == (1@0,(1@0@1,1@1@1))``."""
    return _basis_like(as_int_tuple(shape, "shape"), ())


def _basis_like(shape, prefix):
    if type(shape) is tuple:
        return tuple(_basis_like(s, prefix + (i,)) for i, s in enumerate(shape))
    return ScaledBasis(1, prefix) if prefix else 1


def make_identity_layout(shape: Shape) -> Layout:
    """The layout ``shape : make_basis_like(shape)``, which maps every coordinate to itself.

    @post make_identity_layout(s)(c) == c for every coordinate c of s
    """
    shape = Layout(shape).shape  # validated: an IntTuple of extents >= 0
    return make_layout_unchecked(shape, _basis_like(shape, ())) if type(shape) is tuple else Layout(shape, 1)
