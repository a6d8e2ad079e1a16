"""``ComposedLayout(inner, offset, outer)``: the function ``c -> inner(offset + outer(c))``.

The inner function is usually a :class:`~cute_py.swizzle.Swizzle` (swizzled shared
memory), the outer one a :class:`~cute_py.layout.Layout`.  Its shape is the outer
layout's; the algebra acts on the outer layout (divides, products, coalesce,
``tile_to_shape``...) and keeps the inner function, as CuTe does.  Prints
``S<3,4,3> o 0 o (8,64):(64,1)``.
"""

from ._memo import memoize, register_key_type
from .algebra import composition
from .errors import CuteTypeError, CuteValueError
from .int_tuple import _crd2idx, _product, as_int_tuple, short_repr, fmt, is_int
from .layout import Layout, _flat_ints, _has_none, _mk, dice, slice_, slice_and_offset
from .swizzle import Swizzle

register_key_type(Swizzle)  # immutable, equal only to a Swizzle of the same ints: a memoisation key

__all__ = [
    "ComposedLayout",
    "make_composed_layout",
    "is_composed_layout",
    "get_swizzle_portion",
    "get_nonswizzle_portion",
]


@register_key_type
class ComposedLayout:
    """An immutable, hashable ``inner o offset o outer``.

    The inner function is a Swizzle, a Layout, a ComposedLayout, or an object whose class
    sets ``__cute_inner__ = True`` (an offset function the algebra carries along).
    """

    __slots__ = ("inner", "offset", "outer")

    def __init__(self, inner, offset, outer):
        if not (type(inner) in (Swizzle, Layout) or isinstance(inner, ComposedLayout)
                or getattr(type(inner), "__cute_inner__", False)):
            raise CuteTypeError(
                f"the inner function of a composed layout must be a Swizzle or a layout, got {short_repr(inner)}"
            )
        if not (is_int(offset) or hasattr(offset, "__cute_stride__")):
            offset = as_int_tuple(offset, "the offset of a composed layout")
            if type(offset) is tuple:
                raise CuteTypeError(f"the offset of a composed layout must be an int, got {short_repr(offset)}")
        if not isinstance(outer, (Layout, ComposedLayout)):
            raise CuteTypeError(f"the outer function of a composed layout must be a Layout, got {short_repr(outer)}")
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "outer", outer)

    def __setattr__(self, name, value):
        raise AttributeError("ComposedLayout is immutable")

    def __reduce__(self):
        return (ComposedLayout, (self.inner, self.offset, self.outer))

    @property
    def shape(self):
        """The shape of the outer layout."""
        return self.outer.shape

    @property
    def stride(self):
        raise CuteTypeError("a composed layout has no strides; use .outer.stride")

    def __len__(self):
        return len(self.outer)

    def __getitem__(self, i):
        return _compose3(self.inner, self.offset, self.outer[i])

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __call__(self, *coord):
        """``inner(offset + outer(coord))``; a coordinate with ``None`` slices."""
        if len(coord) == 1:
            coord = coord[0]
        elif not coord:
            raise CuteValueError("a composed layout is evaluated at a coordinate: layout(i) or layout((i, j))")
        if type(coord) is not int and not _flat_ints(coord):
            coord = as_int_tuple(coord, "coordinate", allow_none=True)
            if _has_none(coord):
                return slice_(self, coord)
        outer = self.outer
        if type(outer) is Layout:
            r = _crd2idx(coord, outer.shape, outer.stride)
        else:
            r = outer(coord)
        return self.inner(self.offset + r)

    def cosize(self):
        """The codomain size of the outer layout (as in CuTe)."""
        from .layout import cosize

        return cosize(self.outer)

    def __eq__(self, other):
        return (
            type(other) is ComposedLayout
            and self.inner == other.inner
            and self.offset == other.offset
            and self.outer == other.outer
        )

    def __hash__(self):
        return hash((self.inner, self.offset, self.outer))

    def __str__(self):
        return f"{self.inner} o {fmt(self.offset)} o {self.outer}"

    def __repr__(self):
        return f"ComposedLayout({self.inner!r}, {self.offset!r}, {self.outer!r})"

    def _repr_svg_(self):
        """Jupyter's rich display: the picture from :mod:`cute_py.viz` (``None``: use the text repr)."""
        import importlib  # viz sits below the algebra (DESIGN §1): loaded by name, only when asked

        return importlib.import_module("cute_py.viz").repr_svg(self)

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


def make_composed_layout(inner, offset, outer):
    """The composed layout ``inner o offset o outer`` (always a :class:`ComposedLayout`)."""
    return ComposedLayout(inner, offset, outer)


def is_composed_layout(x):
    """True for a :class:`ComposedLayout`."""
    return type(x) is ComposedLayout


def get_swizzle_portion(layout):
    """The swizzle of a swizzled composed layout; the identity ``S<0,4,3>`` for a plain layout."""
    if type(layout) is ComposedLayout:
        if type(layout.inner) is not Swizzle:
            raise CuteTypeError(f"get_swizzle_portion: the inner function of {layout} is not a Swizzle")
        return layout.inner
    if type(layout) is Layout:
        return Swizzle(0, 4, 3)
    raise CuteTypeError(f"get_swizzle_portion expects a layout, got {layout!r}")


def get_nonswizzle_portion(layout):
    """The outer (non-swizzled) layout of a swizzled composed layout; a plain layout itself."""
    if type(layout) is ComposedLayout:
        if type(layout.inner) is not Swizzle:
            raise CuteTypeError(f"get_nonswizzle_portion: the inner function of {layout} is not a Swizzle")
        return layout.outer
    if type(layout) is Layout:
        return layout
    raise CuteTypeError(f"get_nonswizzle_portion expects a layout, got {layout!r}")


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
    try:
        decayed = _swizzle_slice(coord, inner, off, outer)
    except CuteValueError:
        return general
    d_layout, d_off = decayed
    n = _size(sub)
    if type(n) is int and n <= _DECAY_CHECK_LIMIT and all(d_layout(i) + d_off == general[0](i) for i in range(n)):
        return decayed
    return general


# the decayed form of a slice is only used where it has been checked point by point
_DECAY_CHECK_LIMIT = 1 << 16


def _swizzle_slice(coord, inner, off, outer):
    # CuTe's decay of a sliced swizzled layout to a plain layout (or a re-offset composed layout)
    b, m, s = inner.bits, inner.base, abs(inner.shift)
    sw_shape = (1 << m, 1 << b, 1 << (s - b), 1 << b, 1)
    anti_zy = _mk(sw_shape, (1, 0, 1 << (m + b), 0, 1 << (m + b + s)))
    only_zy = _mk(sw_shape, (0, 1 << m, 0, 1 << (m + s), 0))
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
    swizzle_layout = _mk(
        (1 << m, two, 1 << (s - b), two, 1),
        (1, strides(z < y), 1 << (m + b), strides(z > y), 1 << (m + b + s)),
    )
    return composition(swizzle_layout, sliced), inner(offset_only_zy) + offset_anti_zy


def _size(layout):
    return _product(layout.shape)


def check_offset_zero(layout, op):
    """Raise unless the composed layout's offset is 0 (CuTe requires it for ``op``)."""
    if not (type(layout.offset) is int and layout.offset == 0):
        raise CuteValueError(f"{op} needs a composed layout with offset 0, got {layout}")
