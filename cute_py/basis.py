"""Basis strides ``E(i)`` and arithmetic tuples: layouts whose codomain is a coordinate.

``ScaledBasis(v, modes)`` is ``v`` times the unit vector of (nested) mode ``modes``
of the codomain; it prints ``v@m`` (``1@1@0`` for ``E([0, 1])``, innermost mode
first, as CuTe prints).  Sums of bases are :class:`ArithTuple` coordinates.
``make_identity_layout(shape)`` maps each coordinate to itself; TMA coordinate
tensors are built from it.
"""

from .errors import CuteTypeError, CuteValueError
from .int_tuple import fmt, get, is_int, product
from .layout import Layout, _mk

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

    def __init__(self, value, modes=()):
        if isinstance(modes, int):
            modes = (modes,)
        modes = tuple(modes)
        for m in modes:
            if type(m) is not int or m < 0:
                raise CuteValueError(f"basis modes must be non-negative ints, got {modes}")
        if not is_int(value):
            raise CuteTypeError(f"a basis is scaled by an int, got {value!r}")
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "modes", modes)

    def __setattr__(self, name, value):
        raise AttributeError("ScaledBasis is immutable")

    def __reduce__(self):
        return (ScaledBasis, (self.value, self.modes))

    @property
    def __cute_static__(self):
        return type(self.value) is int

    def __str__(self):
        return fmt(self.value) + "".join(f"@{m}" for m in reversed(self.modes))

    def __repr__(self):
        return f"ScaledBasis({self.value!r}, {self.modes!r})"

    def __eq__(self, other):
        return type(other) is ScaledBasis and self.modes == other.modes and _eq(self.value, other.value)

    def __hash__(self):
        return hash(("E", self.value, self.modes))

    # arithmetic: scaling keeps the basis, sums become arithmetic tuples
    def __mul__(self, k):
        if type(k) is ScaledBasis:
            raise CuteTypeError(f"cannot multiply two bases ({self} * {k})")
        return ScaledBasis(self.value * k, self.modes)

    __rmul__ = __mul__

    def __add__(self, other):
        if type(other) is int and other == 0:
            return self
        if not self.modes:
            return self.value + other
        return as_arith_tuple(self) + other

    __radd__ = __add__

    def __neg__(self):
        return ScaledBasis(-self.value, self.modes)

    def __abs__(self):
        return ScaledBasis(abs(self.value), self.modes)

    def __floordiv__(self, k):
        return ScaledBasis(self.value // k, self.modes)

    def __cute_compose__(self, ls, ld, rs, impl):
        # lhs o (rs : value@modes) == (the lhs mode named by modes) o (rs : value)
        return impl(basis_get(self, ls), basis_get(self, ld), rs, self.value)

    def __cute_cosize__(self):
        return as_arith_tuple(self).__cute_cosize__()

    def __cute_coprofile__(self):
        return _zeros(as_arith_tuple(self))

    def __cute_coord__(self):
        return as_arith_tuple(self)


def _eq(a, b):
    if type(a) is int and type(b) is int:
        return a == b
    return a is b


def E(*modes):
    """The unit basis stride of mode ``modes``: ``E(0)`` prints ``1@0``, ``E(0, 1)`` (or ``E([0, 1])``) ``1@1@0``."""
    if len(modes) == 1 and isinstance(modes[0], (list, tuple)):
        modes = tuple(modes[0])
    return ScaledBasis(1, modes)


def is_scaled_basis(x):
    """True for a :class:`ScaledBasis`."""
    return type(x) is ScaledBasis


class ArithTuple(tuple):
    """A coordinate in a layout's codomain: a tuple with element-wise ``+`` (shorter ones pad with 0)."""

    __slots__ = ()

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
        return product(_plus_one(tuple(self)))


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


def as_arith_tuple(b):
    """The coordinate of a scaled basis: ``2@1 -> (0,2)``, ``1@1@0 -> ((0,1),)``."""
    if type(b) is not ScaledBasis:
        return b
    v = b.value
    for m in reversed(b.modes):
        v = ArithTuple((0,) * m + (v,))
    return v


def basis_get(b, t):
    """The part of ``t`` that the basis ``b`` names (``t`` itself for an int)."""
    if type(b) is not ScaledBasis or not b.modes:
        return t
    return get(t, b.modes)


def basis_value(b):
    """The scale of a basis (an int is its own value)."""
    return b.value if type(b) is ScaledBasis else b


def make_basis_like(shape, _prefix=()):
    """Unit bases with the profile of ``shape``: ``make_basis_like((2,(3,4))) == (1@0,(1@0@1,1@1@1))``."""
    if type(shape) is tuple:
        return tuple(make_basis_like(s, _prefix + (i,)) for i, s in enumerate(shape))
    return ScaledBasis(1, _prefix) if _prefix else 1


def make_identity_layout(shape):
    """The layout ``shape : make_basis_like(shape)``, which maps every coordinate to itself.

    @post make_identity_layout(s)(c) == c for every coordinate c of s
    """
    from .int_tuple import as_int_tuple

    shape = as_int_tuple(shape, "shape")
    return _mk(shape, make_basis_like(shape)) if type(shape) is tuple else Layout(shape, 1)
