"""``ComposedLayout(inner, offset, outer)``: the function ``c -> inner(offset + outer(c))``.

The inner function is usually a :class:`~cute_py.core.swizzle.Swizzle` (swizzled shared
memory), the outer one a :class:`~cute_py.core.layout.Layout`.  Its shape is the outer
layout's; the algebra acts on the outer layout (divides, products, coalesce,
``tile_to_shape``...) and keeps the inner function, as CuTe does.  Prints
``S<3,4,3> o 0 o (8,64):(64,1)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NoReturn

from .memo import memoize
from .algebra import composition
from ..errors import CuteTypeError, CuteValueError, StaticValueRequired
from .coords import crd2idx_unchecked
from .leaves import is_int
from .normalise import as_index, as_int_tuple
from .notation import fmt, short_repr
from .products import product_unchecked
from .layout import has_none, is_flat_int_tuple, Layout, make_layout_unchecked, offset_table
from .modes import dice, slice_, slice_and_offset
from .swizzle import Swizzle, carries_exactly, make_swizzle
from .function_inner import FunctionInner
from .typing import Coord, Int, IntTuple, Shape

if TYPE_CHECKING:
    from .basis import ScaledBasis

# Swizzles and composed layouts are not memoisation keys: every identity swizzle S<0,m,s> equals every other
# (as the identity), so a cached result could come back printed with another's m and s.

__all__ = [
    "ComposedLayout",
    "SmemPtrFlag",
    "make_composed_layout",
    "is_composed_layout",
    "is_byte_swizzled",
    "get_swizzle_portion",
    "get_nonswizzle_portion",
    "as_position_independent_swizzle_layout",
    "smem_byte_swizzle",
    "smem_element_layout",
    "HARDWARE_SWIZZLES",
]


class SmemPtrFlag:
    """The offset slot of a shared-memory layout whose swizzle acts on *byte addresses* (CuTe's
    ``smem_ptr_flag_bits<B>``): ``S<3,4,3> o smem_ptr[16b](unset) o (8,64):(64,1)`` is the 128B-swizzled atom
    of 16-bit elements, whatever the element width (the swizzle is the hardware's, on bytes).

    ``bits`` is the element width; ``offset`` counts elements added by slicing (CuTe drops the flag there,
    which turns the byte swizzle into an element one; cute_py keeps it). A flagged layout is not a function
    of element offsets: it becomes one at a shared-memory pointer (``make_tensor``) or through
    :func:`as_position_independent_swizzle_layout`.
    """

    __slots__ = ("bits", "offset")

    def __init__(self, bits: int, offset: Int = 0) -> None:
        bits = as_index(bits, "the element bits of a smem_ptr flag")
        if bits <= 0:
            raise CuteValueError(f"the element bits of a smem_ptr flag must be positive, got {bits}")
        if not is_int(offset):
            offset = as_index(offset, "the offset of a smem_ptr flag")
        object.__setattr__(self, "bits", bits)
        object.__setattr__(self, "offset", offset)

    def __setattr__(self, name, value):
        raise AttributeError("SmemPtrFlag is immutable")

    def __reduce__(self):
        return (SmemPtrFlag, (self.bits, self.offset))

    def __add__(self, n):
        if isinstance(n, SmemPtrFlag):
            raise CuteTypeError(f"cannot add two smem_ptr flags ({self} + {n})")
        if type(n) is int and n == 0:
            return self
        return SmemPtrFlag(self.bits, self.offset + (n if is_int(n) else as_index(n, "an offset")))

    __radd__ = __add__

    def __eq__(self, other: object) -> bool:
        return type(other) is SmemPtrFlag and self.bits == other.bits and _same(self.offset, other.offset)

    def __hash__(self) -> int:
        return hash(("smem_ptr", self.bits, self.offset if type(self.offset) is int else id(self.offset)))

    def __str__(self):
        text = f"smem_ptr[{self.bits}b](unset)"
        return text if type(self.offset) is int and self.offset == 0 else f"{text}+{fmt(self.offset)}"

    def __repr__(self):
        return f"SmemPtrFlag({self.bits}, {self.offset!r})" if self.offset != 0 else f"SmemPtrFlag({self.bits})"


def _same(a, b):
    return a is b or (type(a) is int and type(b) is int and a == b)


class ComposedLayout:
    """An immutable, hashable ``inner o offset o outer``.

    The inner function is a Swizzle, a Layout, a ComposedLayout, or an object whose class
    sets ``__cute_inner__ = True`` (an offset function the algebra carries along).
    """

    __slots__ = ("inner", "offset", "outer")

    def __init__(self, inner: Any, offset: IntTuple | ScaledBasis | SmemPtrFlag,
                 outer: Layout | ComposedLayout) -> None:
        if callable(inner) and not (type(inner) in (Swizzle, Layout) or isinstance(inner, ComposedLayout)
                                    or getattr(type(inner), "__cute_inner__", False)):
            inner = FunctionInner(inner)  # a Python function of the coordinate (gather/scatter, custom layouts)
        if not (type(inner) in (Swizzle, Layout) or isinstance(inner, ComposedLayout)
                or getattr(type(inner), "__cute_inner__", False)):
            raise CuteTypeError(
                f"the inner function of a composed layout must be a Swizzle or a layout, got {short_repr(inner)}"
            )
        if not (is_int(offset) or hasattr(offset, "__cute_stride__") or type(offset) is SmemPtrFlag):
            offset = as_int_tuple(offset, "the offset of a composed layout")
            if type(offset) is tuple:
                from .basis import ArithTuple

                offset = ArithTuple(offset)  # a coordinate offset (an IntTuple), as CuTe's make_composed_layout
        if type(offset) is SmemPtrFlag and type(inner) is not Swizzle:
            raise CuteTypeError(f"a smem_ptr flag marks a swizzle on byte addresses; the inner function is "
                                f"{short_repr(inner)}")
        if not isinstance(outer, (Layout, ComposedLayout)):
            raise CuteTypeError(f"the outer function of a composed layout must be a Layout, got {short_repr(outer)}")
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "outer", outer)

    def __setattr__(self, name, value):
        raise AttributeError("ComposedLayout is immutable")

    def __reduce__(self):
        return (ComposedLayout, (self.inner, self.offset, self.outer))

    def __cute_substitute__(self, fn):
        """This composed layout with ``fn`` applied to its parts (see ``symbolic.substitute``)."""
        inner = fn(self.inner) if type(self.inner) is not Swizzle else self.inner
        offset = fn(self.offset) if type(self.offset) is not SmemPtrFlag else self.offset
        return ComposedLayout(inner, offset, fn(self.outer))

    @property
    def shape(self) -> Shape:
        """The shape of the outer layout."""
        return self.outer.shape

    @property
    def stride(self) -> NoReturn:
        raise CuteTypeError("a composed layout has no strides; use .outer.stride")

    def __len__(self) -> int:
        return len(self.outer)

    def __getitem__(self, i: int) -> Layout | ComposedLayout:
        return _compose3(self.inner, self.offset, self.outer[i])

    def __iter__(self) -> Iterator[Layout | ComposedLayout]:
        for i in range(len(self)):
            yield self[i]

    def __call__(self, *coord: Coord) -> Any:
        """``inner(offset + outer(coord))``; a coordinate with ``None`` slices."""
        if len(coord) == 1:
            coord = coord[0]
        elif not coord:
            raise CuteValueError("a composed layout is evaluated at a coordinate: layout(i) or layout((i, j))")
        if type(coord) is not int and not is_flat_int_tuple(coord):
            coord = as_int_tuple(coord, "coordinate", allow_none=True)
            if has_none(coord):
                return slice_(self, coord)
        if type(self.offset) is SmemPtrFlag:
            raise CuteValueError(
                f"{self} swizzles byte addresses of {self.offset.bits}-bit elements, not element offsets: index a "
                f"tensor over a shared-memory pointer (make_tensor(ptr, layout)), or evaluate "
                f"as_position_independent_swizzle_layout(layout)")
        outer = self.outer
        if type(outer) is Layout:
            r = crd2idx_unchecked(coord, outer.shape, outer.stride)
        else:
            r = outer(coord)
        return self.inner(self.offset + r)

    def cosize(self) -> Int:
        """The codomain size of the outer layout (as in CuTe)."""
        from .layout import cosize

        return cosize(self.outer)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is ComposedLayout
            and self.inner == other.inner
            and self.offset == other.offset
            and self.outer == other.outer
        )

    def __hash__(self) -> int:
        return hash((self.inner, self.offset, self.outer))

    def __str__(self):
        return f"{self.inner} o {fmt(self.offset)} o {self.outer}"

    def __repr__(self):
        return f"ComposedLayout({self.inner!r}, {self.offset!r}, {self.outer!r})"

    # -- hooks used by the algebra (layout.py, algebra.py, tiling.py) ------------------------
    def __cute_map_outer__(self, fn):
        """Apply ``fn`` to the outer layout, keeping inner and offset."""
        return _compose3(self.inner, self.offset, fn(self.outer))

    def __cute_slice__(self, coord):
        return slice_and_offset_composed(coord, self)[0]

    def __cute_slice_and_offset__(self, coord):
        return slice_and_offset_composed(coord, self)


def _compose3(inner, offset, outer):
    # CuTe's composition(a, offset, b): an identity swizzle with offset 0 disappears
    if type(inner) is Swizzle and inner.bits == 0 and type(offset) is int and offset == 0:
        return outer
    return ComposedLayout(inner, offset, outer)


def _swizzle_compose_layout(sw, layout):
    # composition(sw, layout): the composed layout sw o 0 o layout
    return _compose3(sw, 0, layout)


def _swizzle_transport(sw, layout):
    # composition(layout, sw): the swizzle whose masks are the layout's images of sw's, o layout;
    # CuTe notes that this "works in many cases, but not all": cute_py checks that it does
    carried = make_swizzle(None, yyy_msk=layout(sw.yyy_msk), zzz_msk=layout(sw.zzz_msk))
    n = product_unchecked(layout.shape)
    if type(n) is not int:
        raise StaticValueRequired(f"carrying the swizzle {sw} through {layout} needs a static size")
    if not carries_exactly(sw, carried, layout, n):
        raise CuteValueError(f"the swizzle {sw} cannot be carried exactly through the layout {layout}: "
                             f"{carried} o {layout} is not {layout} o {sw} on [0, {n})")
    return _compose3(carried, 0, layout)


# A swizzle composes with layouts through the algebra's protocols (cute_py.device documents them); the
# composed layouts it makes live here, so the hooks are attached here and swizzle.py stays below this module.
Swizzle.__cute_compose_layout__ = _swizzle_compose_layout
Swizzle.__cute_transport__ = _swizzle_transport


def make_composed_layout(inner: Any, offset: IntTuple | ScaledBasis | SmemPtrFlag,
                         outer: Layout | ComposedLayout) -> ComposedLayout:
    """The composed layout ``inner o offset o outer`` (always a :class:`ComposedLayout`)."""
    return ComposedLayout(inner, offset, outer)


def is_composed_layout(x: object) -> bool:
    """True for a :class:`ComposedLayout`."""
    return type(x) is ComposedLayout


def get_swizzle_portion(layout: Layout | ComposedLayout) -> Swizzle:
    """The swizzle of a swizzled composed layout; the identity ``S<0,4,3>`` for a plain layout."""
    if type(layout) is ComposedLayout:
        if type(layout.inner) is not Swizzle:
            raise CuteTypeError(f"get_swizzle_portion: the inner function of {layout} is not a Swizzle")
        return layout.inner
    if type(layout) is Layout:
        return Swizzle(0, 4, 3)
    raise CuteTypeError(f"get_swizzle_portion expects a layout, got {layout!r}")


def get_nonswizzle_portion(layout: Layout | ComposedLayout) -> Layout | ComposedLayout:
    """The outer (non-swizzled) layout of a swizzled composed layout; a plain layout itself."""
    if type(layout) is ComposedLayout:
        if type(layout.inner) is not Swizzle:
            raise CuteTypeError(f"get_nonswizzle_portion: the inner function of {layout} is not a Swizzle")
        return layout.outer
    if type(layout) is Layout:
        return layout
    raise CuteTypeError(f"get_nonswizzle_portion expects a layout, got {layout!r}")


# -- byte and element swizzles of shared memory --------------------------------------------------
#
# The hardware (TMA, GMMA) swizzles shared-memory *byte addresses*: S<1,4,3>, S<2,4,3>, S<3,4,3> (32B, 64B,
# 128B; S<0,4,3> is none). A flagged layout (offset slot a SmemPtrFlag) states its swizzle in bytes. An
# unflagged composed layout states it in element units when evaluated -- as CuTe C++ evaluates it -- but CuTe
# code also writes byte swizzles unflagged (S<3,4,3> for 16-bit elements): at a shared-memory pointer and in
# TMA, such a layout is read in whichever unit makes it a hardware swizzle. For elements wider than 8 bits at
# most one reading is one (the element reading moves the base by log2 of the element bytes); for 8-bit
# elements both readings are the same.

HARDWARE_SWIZZLES = frozenset(Swizzle(b, 4, 3) for b in range(4))


def _is_hardware(sw):
    return sw.bits == 0 or sw in HARDWARE_SWIZZLES


def _recast_swizzle(new_bits, old_bits, sw, what):
    """``sw`` (acting on units of ``old_bits``) acting on units of ``new_bits``, exactly (no lost bits)."""
    if sw.bits == 0 or new_bits == old_bits:
        return sw
    big, small = max(new_bits, old_bits), min(new_bits, old_bits)
    q, r = divmod(big, small)
    if r or q & (q - 1):
        raise CuteValueError(f"{what}: {old_bits}-bit and {new_bits}-bit units differ by a factor that is not a "
                             f"power of two")
    k = (q.bit_length() - 1) * (1 if new_bits > old_bits else -1)  # new units are 2**k old ones
    base = sw.base - k
    if base < 0:
        raise CuteValueError(f"{what}: the swizzle {sw} on {old_bits}-bit units moves bits below a "
                             f"{new_bits}-bit unit; it cannot act on whole {new_bits}-bit elements")
    return Swizzle(sw.bits, base, sw.shift)


def is_byte_swizzled(layout: object) -> bool:
    """True for a layout whose swizzle is marked as acting on byte addresses (a :class:`SmemPtrFlag` offset)."""
    return type(layout) is ComposedLayout and type(layout.offset) is SmemPtrFlag


def smem_byte_swizzle(layout: Layout | ComposedLayout, bits: int) -> Swizzle:
    """The swizzle a shared-memory tile of ``layout`` (elements of ``bits`` bits) applies to byte addresses.

    A plain layout has none (``S<0,4,3>``); a flagged one its own swizzle (its element width must be
    ``bits``); an unflagged composed layout is read in elements or in bytes, whichever is a hardware
    swizzle (the element reading when neither is, or both).
    """
    bits = as_index(bits, "the element bits")
    if type(layout) is Layout:
        return Swizzle(0, 4, 3)
    if type(layout) is not ComposedLayout or type(layout.inner) is not Swizzle:
        raise CuteTypeError(f"expected a layout or a swizzled composed layout, got {short_repr(layout)}")
    sw = layout.inner
    if type(layout.offset) is SmemPtrFlag:
        if layout.offset.bits != bits:
            raise CuteValueError(f"{layout} is a layout of {layout.offset.bits}-bit elements, used for "
                                 f"{bits}-bit ones")
        return sw
    as_elements = _recast_swizzle(8, bits, sw, f"reading {sw} in {bits}-bit elements")
    if _is_hardware(as_elements) or not _is_hardware(sw):
        return as_elements
    return sw


def smem_element_layout(layout: Layout | ComposedLayout, bits: int) -> Layout | ComposedLayout:
    """``layout`` as a function of element offsets for a shared-memory tile of ``bits``-bit elements whose base
    is aligned to the swizzle: the swizzle :func:`smem_byte_swizzle` reads, in element units.

    @post smem_element_layout(L, b)(c) * b / 8 == byte swizzle applied to (offset + outer(c)) * b / 8
    """
    if type(layout) is Layout:
        return layout
    sw = smem_byte_swizzle(layout, bits)
    offset = layout.offset.offset if type(layout.offset) is SmemPtrFlag else layout.offset
    elem = _recast_swizzle(bits, 8, sw, f"the byte swizzle {sw} of {layout} on {bits}-bit elements")
    return _compose3(elem, offset, layout.outer)  # the identity swizzle at offset 0 leaves the plain layout


def as_position_independent_swizzle_layout(layout: Layout | ComposedLayout) -> Layout | ComposedLayout:
    """A flagged (byte-swizzled) layout as a function of element offsets (CuTe's function of the same name):
    ``S<3,4,3> o smem_ptr[16b](unset) o L`` becomes ``S<3,3,3> o 0 o L``. Other layouts are returned as they are."""
    if is_byte_swizzled(layout):
        return smem_element_layout(layout, layout.offset.bits)
    if not (isinstance(layout, ComposedLayout) or type(layout).__name__ == "Layout"):
        raise CuteTypeError(f"as_position_independent_swizzle_layout needs a layout, got {short_repr(layout)}")
    return layout


# -- slicing ------------------------------------------------------------------------------------


def _all_none(c):
    if c is None:
        return True
    return type(c) is tuple and all(_all_none(e) for e in c)


def _static_coord(c):
    if type(c) is tuple:
        return all(_static_coord(e) for e in c)
    return c is None or type(c) is int


@memoize
def slice_and_offset_composed(coord, layout):
    """CuTe's ``slice_and_offset`` of a composed layout: ``(sub-layout, offset)``.

    For a swizzle with a static coordinate the result decays to a plain layout
    whenever the remaining modes do not mix swizzled bits, as in CuTe (the decayed
    form is checked on the whole sub-domain and only used when it is exact);
    otherwise it is a composed layout whose offset absorbs the fixed modes.
    @post sub(c') + offset == layout(coord filled with c') for all c'
    """
    inner, off, outer = layout.inner, layout.offset, layout.outer
    if _all_none(coord):
        return _compose3(inner, off, slice_(outer, coord)), 0
    sub, o = slice_and_offset(coord, outer)
    general = (ComposedLayout(inner, off + o, sub), 0)
    if type(inner) is not Swizzle or not _static_coord(coord) or type(off) is not int:
        return general
    decayed = _checked_decay(coord, inner.bits, inner.base, inner.shift, off, outer)
    return general if decayed is None else decayed


# the decayed form of a slice is only used where it has been checked point by point
_DECAY_CHECK_LIMIT = 1 << 16


@memoize
def _checked_decay(coord, bits, base, shift, off, outer):
    """The decayed slice of ``S<bits,base,shift> o off o outer`` at the static ``coord``, or ``None`` where it
    does not equal the general form on every point of the sub-domain (or has more than ``_DECAY_CHECK_LIMIT``).

    Keyed on the swizzle's parameters rather than on the swizzle (not a memoisation key), so a kernel that
    slices one swizzled buffer many times checks each slice once."""
    inner = Swizzle(bits, base, shift)
    try:
        decayed = _swizzle_slice(coord, inner, off, outer)
    except CuteValueError:
        return None
    sub, o = slice_and_offset(coord, outer)
    d_layout, d_off = decayed
    n = _size(sub)
    if type(n) is not int or n > _DECAY_CHECK_LIMIT:
        return None
    subs, decays = _offset_table(sub), _offset_table(d_layout)
    if subs is not None and decays is not None:        # plain static layouts: every point from two tables
        base = off + o
        return decayed if [d + d_off for d in decays] == inner.map_ints([base + s for s in subs]) else None
    general = ComposedLayout(inner, off + o, sub)
    return decayed if all(d_layout(i) + d_off == general(i) for i in range(n)) else None


def _offset_table(layout):
    """``[layout(i) for i in range(size(layout))]`` for a static plain layout (``offset_table``), or for a swizzle
    composed with an int offset and such a layout; ``None`` for any other layout."""
    if type(layout) is not ComposedLayout:
        return offset_table(layout)
    inner, off = layout.inner, layout.offset
    outer = offset_table(layout.outer) if type(inner) is Swizzle and type(off) is int else None
    return None if outer is None else inner.map_ints([off + t for t in outer])


def _swizzle_slice(coord, inner, off, outer):
    # CuTe's decay of a sliced swizzled layout to a plain layout (or a re-offset composed layout)
    b, m, s = inner.bits, inner.base, abs(inner.shift)
    sw_shape = (1 << m, 1 << b, 1 << (s - b), 1 << b, 1)
    anti_zy = make_layout_unchecked(sw_shape, (1, 0, 1 << (m + b), 0, 1 << (m + b + s)))
    only_zy = make_layout_unchecked(sw_shape, (0, 1 << m, 0, 1 << (m + s), 0))
    sliced = slice_(outer, coord)
    diced = dice(coord, outer)
    diced_coord = dice(coord, coord)
    offset_only_zy = off ^ composition(only_zy, diced)(diced_coord)
    offset_anti_zy = composition(anti_zy, diced)(diced_coord)
    sliced_only_zy = composition(only_zy, sliced)
    n = _size(sliced_only_zy)
    active = sliced_only_zy(n - 1)
    if active & ~inner(active):
        # the remaining modes hit both Y and Z: keep the swizzle
        return ComposedLayout(inner, offset_only_zy, sliced), offset_anti_zy
    z = inner.zzz_msk & -inner.zzz_msk
    y = inner.yyy_msk & -inner.yyy_msk

    def strides(z_first):
        if z_first:
            return tuple((z << i) if (offset_only_zy & (y << i)) == 0 else -(z << i) for i in range(b))
        return tuple(((y + z) << i) if (offset_only_zy & (z << i)) == 0 else ((y - z) << i) for i in range(b))

    two = (2,) * b
    swizzle_layout = make_layout_unchecked(
        (1 << m, two, 1 << (s - b), two, 1),
        (1, strides(z < y), 1 << (m + b), strides(z > y), 1 << (m + b + s)),
    )
    return composition(swizzle_layout, sliced), inner(offset_only_zy) + offset_anti_zy


def _size(layout):
    return product_unchecked(layout.shape)


def check_offset_zero(layout, op):
    """Raise unless the composed layout's offset is 0 (CuTe requires it for ``op``)."""
    if not (type(layout.offset) is int and layout.offset == 0):
        raise CuteValueError(f"{op} needs a composed layout with offset 0, got {layout}")
