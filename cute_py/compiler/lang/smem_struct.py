"""Shared-storage structs (the CuTe DSL's ``@cute.struct``) and the byte extent of a layout in memory.

A struct class declares fields, each one of

- a scalar element type (``x: cute.Int32``): one element;
- ``struct.MemRange[dtype, n]``: ``n`` consecutive elements;
- another struct (``inner: Inner``);
- ``struct.Align[T, a]``: any of these, aligned to at least ``a`` bytes (a power of two).

The layout follows the C rules as the DSL defines them: a field's alignment is its element size (a scalar or a
``MemRange``: ``max(1, width / 8)`` bytes), a struct's the largest alignment of its fields, or the larger one an
``Align`` asks for; each field starts at the next multiple of its alignment after the previous field's end; the
struct's size is the end of its last field rounded up to the struct's alignment. A ``MemRange`` of ``n``
elements takes ``ceil(n * width / 8)`` bytes.

On the host the decorated class gives ``size_in_bytes()`` (also ``__sizeof__()``) and ``__alignof__()``, e.g. for
a launch's ``smem=``; in a kernel ``SmemAllocator().allocate(Struct)`` places one in shared memory and returns an
instance whose attributes are the fields: a scalar field's ``.ptr`` (``.load()``, ``.store(v)``, or
``storage.x = v``), a ``MemRange``'s ``.data_ptr()``, ``.get_tensor(layout, swizzle=None, dtype=None)`` and
``[i]``, a nested struct's fields; ``.base`` is the instance's byte pointer (so no field may be named ``base``).
``Struct(base)`` makes an instance over any byte pointer aligned to the struct's alignment.

A ``MemRange`` of 0 elements is accepted, as in the DSL: it takes no bytes but is aligned as its elements, and only
its ``data_ptr()`` (an address) may be used.

Where cute_py differs from the DSL: ``Align[Align[T, a], b]`` is accepted and means ``Align[T, max(a, b)]`` (C's
rule for several alignment specifiers; the DSL rejects it); a ``MemRange`` of sub-byte elements would round its
byte count up (the DSL rounds down); field annotations written as strings (``from __future__ import
annotations``) are evaluated where the class is defined; a struct class may not derive from another class or
give its fields default values; ``get_tensor`` checks that the layout (and its swizzle) stays inside the range
and that the range is aligned to the swizzle's repeat, and its ``swizzle`` acts on byte addresses (as the DSL's
swizzled pointers do: an fp16 128B-swizzled tile is ``get_tensor(outer, swizzle=S<3,4,3>)``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ...core.composed import ComposedLayout, SmemPtrFlag, smem_byte_swizzle, smem_element_layout
from ...core.int_tuple import as_index, flatten, fmt, is_int, is_static, short_repr
from ...core.layout import Layout, cosize
from ...core.swizzle import Swizzle, swizzle_alignment
from ...errors import CuteTypeError, CuteValueError
from ...tensor.dtypes import DType, dtype_of
from ...tensor.pointer import Pointer, recast_ptr
from ...tensor.tensor import Tensor

if TYPE_CHECKING:
    from ...core.typing import Int

__all__ = ["struct", "size_in_bytes", "layout_footprint", "swizzle_span", "StructField"]


def _elem_bytes(dtype):
    return max(1, dtype.width // 8)


def _align_of_power(a, what):
    if type(a) is bool:
        raise CuteTypeError(f"{what} must be a power-of-two int, got {a!r}")
    a = as_index(a, what)
    if a <= 0 or a & (a - 1):
        raise CuteValueError(f"{what} must be a positive power of two, got {a}")
    return a


def _member_name(m):
    if isinstance(m, DType):
        return m.name
    return getattr(m, "__name__", short_repr(m))


class _MemRangeMeta(type):
    """``struct.MemRange[dtype, n]``: the class of a field of ``n`` consecutive ``dtype`` elements."""

    def __getitem__(cls, params: tuple[DType, int]) -> type:
        if type(params) is not tuple or len(params) != 2:
            raise CuteTypeError(f"struct.MemRange takes [element type, count], got {short_repr(params)}")
        dtype, n = params
        if not isinstance(dtype, DType):
            raise CuteTypeError(f"struct.MemRange's element type must be a numeric type (cute.Float16...), got "
                                f"{short_repr(dtype)}")
        if type(n) is bool:
            raise CuteTypeError(f"struct.MemRange's count must be an int, got {n!r}")
        n = as_index(n, "struct.MemRange's count")
        if n < 0:
            raise CuteValueError(f"struct.MemRange's count must be >= 0, got {n} (MemRange[{dtype.name}, {n}])")
        return _MemRangeMeta(f"struct.MemRange[{dtype.name}, {n}]", (struct.MemRange,), {"_dtype": dtype, "_size": n})

    @property
    def dtype(cls) -> DType | None:
        """The element type (``None`` for the unparameterised ``struct.MemRange``)."""
        return cls.__dict__.get("_dtype")

    @property
    def size(cls) -> int | None:
        """The number of elements."""
        return cls.__dict__.get("_size")

    @property
    def elem_width(cls) -> int:
        """The element width in bits."""
        return cls._need().width

    @property
    def size_in_bytes(cls) -> int:
        """``ceil(size * width / 8)``."""
        return -(-cls._need().width * cls.size // 8)

    def _need(cls):
        if cls.dtype is None:
            raise CuteTypeError("struct.MemRange needs [element type, count]")
        return cls.dtype

    def __repr__(cls):
        return cls.__name__


class _AlignMeta(type):
    """``struct.Align[T, a]``: the class of a field of type ``T`` aligned to at least ``a`` bytes."""

    def __getitem__(cls, params: tuple[Any, int]) -> type:
        if type(params) is not tuple or len(params) != 2:
            raise CuteTypeError(f"struct.Align takes [type, alignment], got {short_repr(params)}")
        member, a = params
        a = _align_of_power(a, "struct.Align's alignment")
        if isinstance(member, _AlignMeta) and member.dtype is not None:
            member, a = member.dtype, max(a, member.align)  # Align of Align: the strictest
        is_range = isinstance(member, _MemRangeMeta) and member.dtype is not None
        if not (isinstance(member, (DType, struct)) or is_range):
            raise CuteTypeError(f"struct.Align applies to a numeric type, a struct.MemRange[...] or a struct, got "
                                f"{short_repr(member)}")
        return _AlignMeta(f"struct.Align[{_member_name(member)}, {a}]", (struct.Align,),
                          {"_dtype": member, "_align": a})

    @property
    def dtype(cls) -> Any:
        """The aligned type."""
        return cls.__dict__.get("_dtype")

    @property
    def align(cls) -> int | None:
        """The alignment asked for, in bytes."""
        return cls.__dict__.get("_align")

    def __repr__(cls):
        return cls.__name__


class StructField:
    """One field of a struct: ``name``, byte ``offset``, ``size`` and ``align`` in bytes, ``kind`` (``"scalar"``,
    ``"range"`` or ``"struct"``), the element ``dtype`` (scalars and ranges), the element ``count`` (1 for a
    scalar) and, for a nested struct, ``struct`` (the decorated class)."""

    __slots__ = ("name", "offset", "size", "align", "kind", "dtype", "count", "struct")

    def __init__(self, name: str, offset: int, size: int, align: int, kind: str, dtype: DType | None = None,
                 count: int = 1, struct: Any = None) -> None:
        self.name, self.offset, self.size, self.align, self.kind = name, offset, size, align, kind
        self.dtype, self.count, self.struct = dtype, count, struct

    def __repr__(self):
        what = {"scalar": lambda: self.dtype.name, "range": lambda: f"MemRange[{self.dtype.name}, {self.count}]",
                "struct": lambda: repr(self.struct)}[self.kind]()
        return f"{self.name}: {what} @{self.offset} ({self.size} B, align {self.align})"


def _layout_member(name, member, owner):
    """``(size, natural-or-asked alignment, kind, dtype, count, struct)`` of one annotation."""
    align = 1
    if isinstance(member, _AlignMeta):
        if member.dtype is None:
            raise CuteTypeError(f"{owner}.{name}: struct.Align needs [type, alignment]")
        align, member = member.align, member.dtype
    if isinstance(member, DType):
        size = _elem_bytes(member)
        return size, max(align, size), "scalar", member, 1, None
    if isinstance(member, _MemRangeMeta) and member.dtype is not None:
        return member.size_in_bytes, max(align, _elem_bytes(member.dtype)), "range", member.dtype, member.size, None
    if isinstance(member, struct):
        return member.size_in_bytes(), max(align, member.__alignof__()), "struct", None, 1, member
    raise CuteTypeError(f"{owner}.{name}: a struct field is a numeric type, a struct.MemRange[dtype, n], a struct or "
                        f"a struct.Align[...] of one, got {short_repr(member)}")


def _annotations(cls, frame):
    own = cls.__dict__.get("__annotations__", {})
    out = {}
    for name, member in own.items():
        if isinstance(member, str):  # postponed (``from __future__ import annotations``): evaluated where written
            module = sys.modules.get(cls.__module__)
            g = dict(vars(module)) if module is not None else {}
            try:
                member = eval(member, g, dict(frame.f_locals) if frame is not None else {})
            except Exception as e:
                raise CuteTypeError(f"{cls.__name__}.{name}: the annotation {member!r} does not evaluate where the "
                                    f"struct is defined ({type(e).__name__}: {e})") from None
        out[name] = member
    return out


class struct:
    """Decorator: a class with field annotations becomes a C-like struct (see the module).

    ``size_in_bytes()`` / ``__sizeof__()`` and ``__alignof__()`` give its size and alignment in bytes;
    ``fields`` the :class:`StructField` of each field; calling it with a byte pointer (``Struct(base)``) gives
    an instance over that memory (what ``SmemAllocator.allocate(Struct)`` returns).

    @post every field's offset is a multiple of its alignment, fields do not overlap and lie in
          ``[0, size_in_bytes())``, and ``size_in_bytes()`` is the last field's end rounded up to ``__alignof__()``
    """

    class MemRange(metaclass=_MemRangeMeta):
        """``struct.MemRange[dtype, n]``: ``n`` consecutive elements of ``dtype``."""

    class Align(metaclass=_AlignMeta):
        """``struct.Align[T, a]``: ``T`` aligned to at least ``a`` bytes (a power of two)."""

    def __init__(self, cls: type) -> None:
        if not isinstance(cls, type):
            raise CuteTypeError(f"@struct decorates a class, got {short_repr(cls)}")
        if "__slots__" in cls.__dict__:
            raise CuteTypeError(f"a struct class declares its fields as annotations, not __slots__ ({cls.__name__})")
        if cls.__bases__ != (object,):
            raise CuteTypeError(f"a struct class cannot derive from another class, {cls.__name__} derives from "
                                f"{', '.join(b.__name__ for b in cls.__bases__)}")
        frame = sys._getframe(1)
        annotations = _annotations(cls, frame)
        del frame
        if not annotations:
            raise CuteTypeError(f"the struct {cls.__name__} has no fields (annotate them: x: cute.Int32)")
        if "base" in annotations:
            raise CuteValueError(f"{cls.__name__}.base: 'base' names an instance's base pointer, not a field")
        defaults = [n for n in annotations if n in cls.__dict__]
        if defaults:
            raise CuteValueError(f"struct fields take no default values (shared memory is not initialised): "
                                 f"{cls.__name__}.{defaults[0]}")
        fields, offset, alignment = [], 0, 1
        for name, member in annotations.items():
            size, align, kind, dtype, count, sub = _layout_member(name, member, cls.__name__)
            offset = struct.align_offset(offset, align)
            fields.append(StructField(name, offset, size, align, kind, dtype, count, sub))
            offset += size
            alignment = max(alignment, align)
        self._cls = cls
        self.__name__ = f"cute.struct::{cls.__name__}"
        self._fields = tuple(fields)
        self._align_of = alignment
        self._size_of = struct.align_offset(offset, alignment)
        instance_type = self

        def struct_setattr(obj, name, value):
            field = obj.__dict__.get(name)
            if type(field) is not ScalarField:
                raise CuteTypeError(f"only a scalar field of {instance_type.__name__} can be assigned, not {name!r}")
            field.store(value)

        type.__setattr__(cls, "__setattr__", struct_setattr)
        type.__setattr__(cls, "__repr__", lambda obj: f"<{instance_type.__name__} at {obj.__dict__['base']!r}>")

    @property
    def fields(self) -> tuple[StructField, ...]:
        """The fields, in declaration order."""
        return self._fields

    def size_in_bytes(self) -> int:
        """The size in bytes (a multiple of the alignment)."""
        return self._size_of

    def __sizeof__(self) -> int:
        return self._size_of

    def __alignof__(self) -> int:
        return self._align_of

    @staticmethod
    def align_offset(offset: Int, align: int) -> Int:
        """``offset`` (an int, or a run-time value in a kernel) rounded up to a multiple of ``align`` (a positive
        power of two)."""
        align = _align_of_power(align, "align_offset's alignment")
        if not is_int(offset):
            offset = as_index(offset, "align_offset's offset")
        return (offset + (align - 1)) // align * align

    def __call__(self, base: Pointer) -> Any:
        """An instance of the struct over the memory at ``base`` (a pointer to 8-bit elements, aligned to the
        struct's alignment): each field an attribute (see the module)."""
        if not isinstance(base, Pointer) or base.dtype.width != 8:
            raise CuteTypeError(f"a struct's base must be a pointer to bytes (Uint8/Int8), got {short_repr(base)}")
        if base.alignment < self._align_of:
            raise CuteValueError(f"{self.__name__} needs {self._align_of}-byte alignment, but its base {base!r} is "
                                 f"only {base.alignment}-byte aligned")
        obj = object.__new__(self._cls)
        object.__setattr__(obj, "base", base)
        for f in self._fields:
            p = base + f.offset
            if f.kind == "scalar":
                value = ScalarField(recast_ptr(p, dtype=f.dtype))
            elif f.kind == "range":
                value = MemRangeField(p, f.dtype, f.count, f"{self._cls.__name__}.{f.name}")
            else:
                value = f.struct(p)
            object.__setattr__(obj, f.name, value)
        return obj

    def __repr__(self):
        inner = ", ".join(repr(f) for f in self._fields)
        return f"{self.__name__}{{{inner}}} ({self._size_of} B, align {self._align_of})"


class ScalarField:
    """A scalar field of a struct instance: ``ptr`` (a pointer to its one element), ``dtype``, ``load()`` and
    ``store(value)`` (as a one-element tensor's ``[0]``)."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: Pointer) -> None:
        self.ptr = ptr

    @property
    def dtype(self) -> DType:
        return self.ptr.dtype

    def load(self) -> Any:
        """The field's value (in a kernel: a traced value)."""
        return Tensor(self.ptr, Layout(1))[0]

    def store(self, value: Any) -> None:
        """Write ``value`` into the field (converted as a tensor store converts)."""
        Tensor(self.ptr, Layout(1))[0] = value

    def __repr__(self):
        return f"<struct scalar {self.dtype.name} at {self.ptr!r}>"


class MemRangeField:
    """A ``MemRange[dtype, n]`` field of a struct instance."""

    __slots__ = ("_base", "_dtype", "_size", "_name")

    def __init__(self, base: Pointer, dtype: DType, size: int, name: str) -> None:
        self._base, self._dtype, self._size, self._name = base, dtype, size, name

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def size(self) -> int:
        """The number of elements."""
        return self._size

    def data_ptr(self) -> Pointer:
        """A pointer to the first element (of a 0-element range: only its address)."""
        return recast_ptr(self._base, dtype=self._dtype)

    def get_tensor(self, layout: Layout | ComposedLayout, swizzle: Swizzle | None = None,
                   dtype: DType | None = None) -> Tensor:
        """A tensor over the range with ``layout`` (elements of ``dtype``, by default the range's).

        ``swizzle`` (with a plain layout, as the DSL's ``get_tensor(layout.outer, swizzle=layout.inner)``) acts on
        byte addresses: the tensor's layout is ``swizzle o smem_ptr[width b] o layout``. Raises ``CuteValueError``
        when the range has no elements, when the layout reaches outside the range's bytes (below its start or past
        its end, after the swizzle), or when the range is not aligned to the swizzle's repeat.
        """
        if self._size == 0:
            raise CuteValueError(f"{self._name} is a MemRange of 0 elements: it holds no tensor (data_ptr() gives "
                                 f"only its address)")
        dt = self._dtype if dtype is None else dtype_of(dtype)
        if swizzle is not None:
            if not isinstance(swizzle, Swizzle):
                raise CuteTypeError(f"{self._name}.get_tensor: swizzle must be a Swizzle, got {short_repr(swizzle)}")
            if type(layout) is not Layout:
                raise CuteTypeError(f"{self._name}.get_tensor: a swizzle goes with a plain layout (the DSL's "
                                    f"layout.outer), got {short_repr(layout)}")
            if swizzle.bits:
                layout = ComposedLayout(swizzle, SmemPtrFlag(dt.width), layout)
        elif type(layout) is not Layout and not isinstance(layout, ComposedLayout):
            raise CuteTypeError(f"{self._name}.get_tensor needs a Layout or a ComposedLayout, got {short_repr(layout)}")
        ptr = recast_ptr(self._base, dtype=dt)
        nbytes = -(-self._size * self._dtype.width // 8)
        lo, end = layout_footprint(layout, dt)
        if end > nbytes:
            raise CuteValueError(f"{self._name}.get_tensor: the layout {layout} of {dt.name} reaches byte {end - 1}, "
                                 f"past the {nbytes} bytes of the MemRange[{self._dtype.name}, {self._size}]")
        span = swizzle_span(layout, dt)
        known = ptr.address if type(ptr.address) is int else None  # an offset known aligned further than claimed
        if ptr.alignment < span and (known is None or known % span):
            raise CuteValueError(f"{self._name}.get_tensor: the swizzle of {layout} repeats every {span} bytes and "
                                 f"needs a {span}-byte aligned range, but {ptr!r} is only {ptr.alignment}-byte "
                                 f"aligned (declare the field struct.Align[..., {span}])")
        return Tensor(ptr, layout)

    def _tensor(self, index):
        if self._size == 0:
            raise CuteValueError(f"{self._name} is a MemRange of 0 elements: it has no element {fmt(index)}")
        return Tensor(self.data_ptr(), Layout(self._size))

    def __getitem__(self, index: Int) -> Any:
        return self._tensor(index)[index]

    def __setitem__(self, index: Int, value: Any) -> None:
        self._tensor(index)[index] = value

    def __repr__(self):
        return f"<struct.MemRange[{self._dtype.name}, {self._size}] at {self._base!r}>"


# -- the byte extent of a layout -------------------------------------------------------------------------


def swizzle_span(layout: Layout | ComposedLayout, dtype: DType) -> int:
    """The byte alignment the storage of a shared-memory tensor of ``layout`` (``dtype`` elements) needs for the
    swizzle it applies to byte addresses: :func:`~cute_py.core.swizzle.swizzle_alignment` (its repeat, at most
    1024; ``S<3,4,3>``: 1024), 1 for none. ``make_tensor`` over a shared-memory pointer checks the same rule."""
    if type(layout) is Layout:
        return 1
    return swizzle_alignment(smem_byte_swizzle(layout, dtype.width))


def layout_footprint(layout: Layout | ComposedLayout, dtype: DType) -> tuple[int, int]:
    """``(lowest byte, end byte)`` that a shared-memory tensor of ``layout`` (``dtype`` elements, storage aligned to
    :func:`swizzle_span`) touches, relative to its storage; ``(0, 0)`` for an empty layout.

    A swizzle keeps each aligned block of its repeat, so the end is the largest swizzled offset of the last block
    the layout's offsets reach into. Raises ``CuteValueError`` for a layout that is not static or whose offsets
    are no ints (basis strides), and for one that reaches below its storage (a negative offset).
    """
    width = dtype.width
    elements = smem_element_layout(layout, width) if type(layout) is not Layout else layout
    if type(elements) is Layout:
        outer, offset, sw = elements, 0, None
    else:
        outer, offset, sw = elements.outer, elements.offset, elements.inner
    shape, stride = flatten(outer.shape), flatten(outer.stride)
    shape = shape if type(shape) is tuple else (shape,)
    stride = stride if type(stride) is tuple else (stride,)
    if not (is_static(shape) and all(type(d) is int for d in stride) and type(offset) is int):
        raise CuteValueError(f"a memory tensor needs a static layout with int strides, got {layout}")
    if any(s == 0 for s in shape):
        return 0, 0
    lo = offset + sum((s - 1) * d for s, d in zip(shape, stride) if d < 0)
    hi = offset + sum((s - 1) * d for s, d in zip(shape, stride) if d > 0)
    if lo < 0:
        raise CuteValueError(f"the layout {layout} reaches element offset {lo}, below the start of its storage")
    if sw is not None and sw.bits:
        block = 1 << (sw.base + sw.bits + abs(sw.shift))
        last, first = max(lo, hi - hi % block), min(hi, lo - lo % block + block - 1)
        lo, hi = min(sw(x) for x in range(lo, first + 1)), max(sw(x) for x in range(last, hi + 1))
    return lo * width // 8, -(-(hi + 1) * width // 8)


def size_in_bytes(dtype: DType | str | Any, layout: Layout | ComposedLayout | None) -> Int:
    """The bytes of ``cosize(layout)`` elements of ``dtype``, rounded up to a whole byte (the DSL's
    ``cute.size_in_bytes``); 0 for ``layout=None``. For a composed layout: the cosize of its outer layout when its
    inner function is a swizzle (the swizzle stays inside its aligned blocks), of its inner layout otherwise. A
    dynamic cosize gives a run-time value."""
    if not isinstance(dtype, DType):
        try:
            dtype = dtype_of(dtype)
        except CuteTypeError:
            raise CuteTypeError(f"size_in_bytes needs a numeric type, got {short_repr(dtype)}") from None
    if layout is None:
        return 0
    if isinstance(layout, ComposedLayout):
        if isinstance(layout.inner, Swizzle):
            n = cosize(layout.outer)
        elif type(layout.inner) is Layout:
            n = cosize(layout.inner)
        else:
            raise CuteTypeError(f"size_in_bytes takes a composed layout whose inner function is a swizzle or a "
                                f"layout, got {short_repr(layout)}")
    elif type(layout) is Layout:
        n = cosize(layout)
    else:
        raise CuteTypeError(f"size_in_bytes needs a Layout, a ComposedLayout or None, got {short_repr(layout)}")
    return (n * dtype.width + 7) // 8
