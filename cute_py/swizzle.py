"""Swizzle functions ``S<B,M,S>``: XOR bit-permutations of offsets, as in CuTe's ``swizzle.hpp``.

``Swizzle(bits, base, shift)`` maps ``x -> x ^ ((x & yyy_msk) >> shift)``: the ``bits``
bits starting at ``base + max(0, shift)`` (YYY) are XORed into the ``bits`` bits
starting at ``base - min(0, shift)`` (ZZZ).  A negative shift moves YYY left.
Swizzles print ``S<3,4,3>``, are bijections on ``[0, size)`` and involutions.
"""

from .errors import CuteTypeError, CuteValueError
from .int_tuple import fmt

__all__ = ["Swizzle", "make_swizzle", "is_swizzle"]


class Swizzle:
    """The swizzle function ``S<bits,base,shift>``; immutable and hashable."""

    __slots__ = ("bits", "base", "shift", "_y", "_rs", "_ls")

    def __init__(self, bits, base, shift=None):
        if shift is None:
            shift = bits
        for name, v in (("bits", bits), ("base", base), ("shift", shift)):
            if type(v) is not int:
                raise CuteTypeError(f"Swizzle {name} must be a static int, got {v!r}")
        if bits < 0 or base < 0:
            raise CuteValueError(f"Swizzle bits and base must be >= 0, got S<{bits},{base},{shift}>")
        if abs(shift) < bits:
            raise CuteValueError(
                f"Swizzle needs |shift| >= bits (the YYY and ZZZ masks may not overlap), got S<{bits},{base},{shift}>"
            )
        object.__setattr__(self, "bits", bits)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "shift", shift)
        # precomputed for __call__: the YYY mask and the right/left shift amounts
        object.__setattr__(self, "_y", ((1 << bits) - 1) << (base + max(0, shift)))
        object.__setattr__(self, "_rs", max(0, shift))
        object.__setattr__(self, "_ls", max(0, -shift))

    def __setattr__(self, name, value):
        raise AttributeError("Swizzle is immutable")

    def __reduce__(self):
        return (Swizzle, (self.bits, self.base, self.shift))

    @property
    def bit_msk(self):
        """``(1 << bits) - 1``."""
        return (1 << self.bits) - 1

    @property
    def yyy_msk(self):
        """The mask of the bits that are XORed into ZZZ."""
        return self.bit_msk << (self.base + max(0, self.shift))

    @property
    def zzz_msk(self):
        """The mask of the bits that are changed."""
        return self.bit_msk << (self.base - min(0, self.shift))

    @property
    def swizzle_code(self):
        """``yyy_msk | zzz_msk``."""
        return self.yyy_msk | self.zzz_msk

    def size(self):
        """The natural domain size ``2**(base + bits + |shift|)``: the swizzle is a bijection on it."""
        return 1 << (self.base + self.bits + abs(self.shift))

    def cosize(self):
        """Equal to :meth:`size` (a bijection)."""
        return self.size()

    @property
    def shape(self):
        # a swizzle is a function on [0, size): its "shape" for size()/rank()
        return self.size()

    def __call__(self, offset):
        """Apply the swizzle to an int (or a run-time integer): ``x ^ ((x & yyy) >> shift)``."""
        if self._ls:
            return offset ^ ((offset & self._y) << self._ls)
        return offset ^ ((offset & self._y) >> self._rs)

    def __eq__(self, other):
        return type(other) is Swizzle and (self.bits, self.base, self.shift) == (other.bits, other.base, other.shift)

    def __hash__(self):
        return hash(("S", self.bits, self.base, self.shift))

    def __str__(self):
        return f"S<{self.bits},{self.base},{self.shift}>"

    def __repr__(self):
        return f"Swizzle({self.bits}, {self.base}, {self.shift})"

    @staticmethod
    def from_masks(yyy_msk, zzz_msk):
        """The swizzle with these masks (see :func:`make_swizzle`)."""
        return make_swizzle(None, yyy_msk=yyy_msk, zzz_msk=zzz_msk)

    def __cute_compose_layout__(self, layout):
        # composition(self, layout): the composed layout self o 0 o layout
        from .composed import _compose3

        return _compose3(self, 0, layout)

    def __cute_transport__(self, layout):
        # composition(layout, self): the swizzle whose masks are the layout's images of ours, o layout
        from .composed import _compose3

        from .int_tuple import product

        sw = make_swizzle(None, yyy_msk=layout(self.yyy_msk), zzz_msk=layout(self.zzz_msk))
        n = product(layout.shape)
        if type(n) is not int or any(
            sw(layout(i)) != layout(self(i)) for i in range(n) if self(i) < n
        ):
            raise CuteValueError(f"the swizzle {self} cannot be carried exactly through the layout {layout}")
        return _compose3(sw, 0, layout)

    def is_identity(self):
        """True for swizzles with no bits (``S<0,M,S>``), which change nothing."""
        return self.bits == 0


def is_swizzle(x):
    """True for a :class:`Swizzle`."""
    return type(x) is Swizzle


def _popcount(x):
    return bin(x).count("1")


def _ctz(x):
    return (x & -x).bit_length() - 1 if x else 32


def make_swizzle(b, m=None, s=None, *, yyy_msk=None, zzz_msk=None):
    """``make_swizzle(b, m, s)`` is ``Swizzle(b, m, s)``; ``make_swizzle(yyy_msk=Y, zzz_msk=Z)``
    recovers the swizzle from its masks (CuTe's ``make_swizzle<Y,Z>``), e.g. masks
    ``0b1000, 0b0100 -> S<1,2,1>`` and ``0b11000000, 0b00000110 -> S<2,1,5>``."""
    if yyy_msk is None and zzz_msk is None:
        return Swizzle(b, m, s)
    if b is not None or m is not None or s is not None:
        raise CuteTypeError("make_swizzle takes either (b, m, s) or the masks yyy_msk=, zzz_msk=")
    y, z = yyy_msk, zzz_msk
    by, bz = _popcount(y), _popcount(z)
    if by != bz:
        raise CuteValueError(f"make_swizzle: the masks have different numbers of bits ({y:#b} has {by}, {z:#b} has {bz})")
    base = min(_ctz(y), _ctz(z)) % 32
    shift = _ctz(y) - _ctz(z)
    sw = Swizzle(by, base, shift) if by == 0 or abs(shift) >= by else None
    if sw is None or (y | z) != sw.swizzle_code:
        raise CuteValueError(f"make_swizzle: masks Y={y:#b}, Z={z:#b} are not the masks of any Swizzle<B,M,S>")
    return sw


def compose_swizzles(a, b):
    """The composition of two swizzles with the same shift (CuTe: XOR of their masks)."""
    if a.shift != b.shift:
        raise CuteValueError(f"can only compose swizzles of the same shift, got {a} and {b}")
    return make_swizzle(None, yyy_msk=a.yyy_msk ^ b.yyy_msk, zzz_msk=a.zzz_msk ^ b.zzz_msk)


def upcast_swizzle(sw, n):
    """The swizzle seen in units ``n`` times wider (``n`` a power of two): the base drops by log2(n)."""
    log2n = _log2_exact(n, "upcast of a swizzle")
    new_m = sw.base - log2n
    if new_m >= 0:
        return Swizzle(sw.bits, new_m, sw.shift)
    return Swizzle(max(sw.bits + new_m, 0), 0, sw.shift)


def downcast_swizzle(sw, n):
    """The swizzle seen in units ``n`` times narrower (``n`` a power of two): the base grows by log2(n)."""
    return Swizzle(sw.bits, sw.base + _log2_exact(n, "downcast of a swizzle"), sw.shift)


def _log2_exact(n, what):
    if type(n) is not int or n <= 0 or n & (n - 1):
        raise CuteValueError(f"{what} needs a power of two, got {fmt(n)}")
    return n.bit_length() - 1
