"""Swizzle functions ``S<B,M,S>``: XOR bit-permutations of offsets, as in CuTe's ``swizzle.hpp``.

``Swizzle(bits, base, shift)`` maps ``x -> x ^ ((x & yyy_msk) >> shift)``: the ``bits``
bits starting at ``base + max(0, shift)`` (YYY) are XORed into the ``bits`` bits
starting at ``base - min(0, shift)`` (ZZZ).  A negative shift moves YYY left.
Swizzles print ``S<3,4,3>``, are bijections on ``[0, size)`` and involutions.
Their bits lie within the lowest :data:`MAX_SWIZZLE_BITS` bits of an offset
(``base + bits + |shift| <= 64``: offsets of 64-bit address spaces).
"""

from __future__ import annotations

MAX_SWIZZLE_BITS = 64

from typing import TYPE_CHECKING

from ..errors import CuteTypeError, CuteValueError
from .int_tuple import flatten_unchecked
from .leaves import DynamicInt
from .normalise import as_index, index_or_none
from .notation import fmt, short_repr
from .typing import Int

if TYPE_CHECKING:
    from .layout import Layout

__all__ = ["Swizzle", "make_swizzle", "is_swizzle", "carries_exactly", "swizzle_alignment", "MAX_SWIZZLE_BITS",
           "MAX_SWIZZLE_ALIGNMENT"]

MAX_SWIZZLE_ALIGNMENT = 1024  # bytes: the repeat of the 128B swizzle S<3,4,3>, the longest hardware swizzle


def swizzle_alignment(sw: Swizzle) -> int:
    """The byte alignment shared memory needs under ``sw``, a swizzle of byte addresses: its repeat
    ``2**(base + bits + |shift|)`` (every bit it reads or writes lies below), at most
    :data:`MAX_SWIZZLE_ALIGNMENT`; 1 for no swizzle.

    A tensor evaluates its swizzle on byte offsets from its pointer; the hardware (TMA, GMMA) on addresses. The
    two agree exactly when the pointer is aligned to the repeat, and every hardware swizzle repeats within
    1024 bytes. A swizzle with a longer repeat is no hardware swizzle: only the kernel's own offsets read it,
    wherever the tile starts, so 1024-byte alignment (what any shared-memory tile can be given) is enough.
    """
    if not sw.bits:
        return 1
    return min(1 << (sw.base + sw.bits + abs(sw.shift)), MAX_SWIZZLE_ALIGNMENT)


class Swizzle:
    """The swizzle function ``S<bits,base,shift>``; immutable and hashable."""

    __slots__ = ("bits", "base", "shift", "_y", "_rs", "_ls")

    def __init__(self, bits: int, base: int, shift: int | None = None) -> None:
        if shift is None:
            shift = bits
        bits = as_index(bits, "Swizzle bits")
        base = as_index(base, "Swizzle base")
        shift = as_index(shift, "Swizzle shift")
        if bits < 0 or base < 0:
            raise CuteValueError(f"Swizzle bits and base must be >= 0, got S<{bits},{base},{shift}>")
        if abs(shift) < bits:
            raise CuteValueError(
                f"Swizzle needs |shift| >= bits (the YYY and ZZZ masks may not overlap), got S<{bits},{base},{shift}>"
            )
        if base + bits + abs(shift) > MAX_SWIZZLE_BITS:
            raise CuteValueError(
                f"Swizzle needs base + bits + |shift| <= {MAX_SWIZZLE_BITS} (bits of an offset), got S<{bits},{base},{shift}>"
            )
        object.__setattr__(self, "bits", bits)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "shift", shift)
        # precomputed for __call__: the YYY mask and the right (or, for a negative shift, left) shift amount
        object.__setattr__(self, "_y", ((1 << bits) - 1) << (base + max(0, shift)))
        object.__setattr__(self, "_rs", shift if shift >= 0 else None)  # None: shift left by _ls
        object.__setattr__(self, "_ls", max(0, -shift))

    def __setattr__(self, name, value):
        raise AttributeError("Swizzle is immutable")

    def __reduce__(self):
        return (Swizzle, (self.bits, self.base, self.shift))

    @property
    def bit_msk(self) -> int:
        """``(1 << bits) - 1``."""
        return (1 << self.bits) - 1

    @property
    def yyy_msk(self) -> int:
        """The mask of the bits that are XORed into ZZZ."""
        return self.bit_msk << (self.base + max(0, self.shift))

    @property
    def zzz_msk(self) -> int:
        """The mask of the bits that are changed."""
        return self.bit_msk << (self.base - min(0, self.shift))

    @property
    def swizzle_code(self) -> int:
        """``yyy_msk | zzz_msk``."""
        return self.yyy_msk | self.zzz_msk

    def size(self) -> int:
        """The natural domain size ``2**(base + bits + |shift|)``: the swizzle is a bijection on it."""
        return 1 << (self.base + self.bits + abs(self.shift))

    def cosize(self) -> int:
        """Equal to :meth:`size` (a bijection)."""
        return self.size()

    @property
    def shape(self) -> int:
        # a swizzle is a function on [0, size): its "shape" for size()/rank()
        return self.size()

    def map_ints(self, offsets: list[int]) -> list[int]:
        """``[self(x) for x in offsets]`` for a list of ints, in one pass (offset tables of static layouts)."""
        y, rs, ls = self._y, self._rs, self._ls
        if rs is None:
            return [x ^ ((x & y) << ls) for x in offsets]
        return [x ^ ((x & y) >> rs) for x in offsets]

    def __call__(self, offset: Int) -> Int:
        """Apply the swizzle to an int (or a run-time integer): ``x ^ ((x & yyy) >> shift)``."""
        if type(offset) is int:
            try:
                return offset ^ ((offset & self._y) >> self._rs)
            except TypeError:  # a negative shift (``_rs`` is None): YYY moves left
                return offset ^ ((offset & self._y) << self._ls)
        offset = _offset(offset, self)  # a run-time or integer-like value (as an int)
        if self._ls:
            return offset ^ ((offset & self._y) << self._ls)
        return offset ^ ((offset & self._y) >> self._rs)

    def __eq__(self, other: object) -> bool:
        """Swizzles are equal as functions: every ``S<0,m,s>`` is the identity, and equal to every other."""
        if type(other) is not Swizzle:
            return False
        if self.bits == 0 or other.bits == 0:
            return self.bits == other.bits
        return (self.bits, self.base, self.shift) == (other.bits, other.base, other.shift)

    def __hash__(self) -> int:
        return hash(("S", 0)) if self.bits == 0 else hash(("S", self.bits, self.base, self.shift))

    @property
    def is_identity(self) -> bool:
        """True for ``S<0,m,s>``, which changes no offset."""
        return self.bits == 0

    def __str__(self):
        return f"S<{self.bits},{self.base},{self.shift}>"

    def __repr__(self):
        return f"Swizzle({self.bits}, {self.base}, {self.shift})"

    @staticmethod
    def from_masks(yyy_msk: int, zzz_msk: int) -> Swizzle:
        """The swizzle with these masks (see :func:`make_swizzle`)."""
        return make_swizzle(None, yyy_msk=yyy_msk, zzz_msk=zzz_msk)


def _offset(x, sw):
    # an offset a swizzle applies to: a run-time integer, or an integer-like value as an int
    if isinstance(x, DynamicInt):
        return x
    if not isinstance(x, (bool, float)):
        v = index_or_none(x)
        if v is not None:
            return v
    raise CuteTypeError(f"the swizzle {sw} applies to an int offset, got {short_repr(x)} ({type(x).__name__})")


_CHECK_LIMIT = 1 << 16


def carries_exactly(sw: Swizzle, carried: Swizzle, layout: Layout, n: int) -> bool:
    """True if ``carried(layout(i)) == layout(sw(i))`` for all ``0 <= i < n``.

    ``sw`` changes only the bits below ``top = base + bits + |shift|``.  When ``2**top`` is a
    boundary between the (coalesced) modes of ``layout``, the modes above it add multiples of
    ``2**t`` beyond every bit ``carried`` reads or writes (``t``), and those below stay in
    ``[0, 2**t)``, the identity only needs checking on ``[0, 2**top)``; otherwise on all of
    ``[0, n)``.  Checks longer than 2**16 points are refused (False).
    """
    span = 1 << (sw.base + sw.bits + abs(sw.shift))
    limit = n
    if n > span:
        shapes, strides = _merged_modes(layout)
        t = max(carried.yyy_msk, carried.zzz_msk).bit_length()
        prefix, lo_min, lo_max = 1, 0, 0
        for k, (s, d) in enumerate(zip(shapes, strides)):
            if prefix == span:
                if not all(type(x) is int and x % (1 << t) == 0 for x in strides[k:]):
                    break
                if 0 <= lo_min and lo_max < (1 << t):
                    limit = span
                break
            if type(s) is not int or type(d) is not int:
                break
            lo_min, lo_max = lo_min + min(0, (s - 1) * d), lo_max + max(0, (s - 1) * d)
            prefix *= s
            if prefix > span:
                break
    if limit > _CHECK_LIMIT:
        return False
    return all(carried(layout(i)) == layout(sw(i)) for i in range(limit))


def _merged_modes(layout):
    # the flat modes of a layout, size-1 modes dropped and contiguous neighbours merged (as coalesce does)
    fs, fd = flatten_unchecked(layout.shape), flatten_unchecked(layout.stride)
    if type(fs) is not tuple:
        fs, fd = (fs,), (fd,)
    shapes, strides = [], []
    for s, d in zip(fs, fd):
        if type(s) is int and s == 1:
            continue
        if shapes and type(s) is int and type(d) is int and type(shapes[-1]) is int and type(strides[-1]) is int \
                and shapes[-1] * strides[-1] == d:
            shapes[-1] *= s
            continue
        shapes.append(s)
        strides.append(d)
    return tuple(shapes), tuple(strides)


def is_swizzle(x: object) -> bool:
    """True for a :class:`Swizzle`."""
    return type(x) is Swizzle


def _popcount(x):
    return bin(x).count("1")


def _ctz(x):
    return (x & -x).bit_length() - 1 if x else 32


def make_swizzle(b: int | None, m: int | None = None, s: int | None = None, *, yyy_msk: int | None = None,
                 zzz_msk: int | None = None) -> Swizzle:
    """``make_swizzle(b, m, s)`` is ``Swizzle(b, m, s)``; ``make_swizzle(yyy_msk=Y, zzz_msk=Z)``
    recovers the swizzle from its masks (CuTe's ``make_swizzle<Y,Z>``), e.g. masks
    ``0b1000, 0b0100 -> S<1,2,1>`` and ``0b11000000, 0b00000110 -> S<2,1,5>``."""
    if yyy_msk is None and zzz_msk is None:
        return Swizzle(b, m, s)
    if b is not None or m is not None or s is not None:
        raise CuteTypeError("make_swizzle takes either (b, m, s) or the masks yyy_msk=, zzz_msk=")
    if yyy_msk is None or zzz_msk is None:
        raise CuteTypeError("make_swizzle from masks takes both yyy_msk= and zzz_msk=")
    y = as_index(yyy_msk, "make_swizzle yyy_msk")
    z = as_index(zzz_msk, "make_swizzle zzz_msk")
    if y < 0 or z < 0 or max(y, z) >> MAX_SWIZZLE_BITS:
        raise CuteValueError(f"make_swizzle: the masks must be non-negative {MAX_SWIZZLE_BITS}-bit ints, got Y={y}, Z={z}")
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
    if type(a) is not Swizzle or type(b) is not Swizzle:
        raise CuteTypeError(f"compose_swizzles takes two Swizzles, got {short_repr(a)} and {short_repr(b)}")
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
    n = as_index(n, what)
    if n <= 0 or n & (n - 1):
        raise CuteValueError(f"{what} needs a power of two, got {fmt(n)}")
    return n.bit_length() - 1
