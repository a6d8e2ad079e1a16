"""``Tensor(engine, layout)``: a layout over storage.

The engine is a :class:`~cute_py.tensor.pointer.Pointer` (device memory, possibly with an
unknown address), a host numpy array (:class:`~cute_py.tensor.engines.ArrayEngine`, readable and
writable), or a coordinate counter (:class:`~cute_py.tensor.engines.CoordEngine`: the tensor's values are
coordinates, as in identity and TMA coordinate tensors).  ``tensor[coord]`` reads
an element, ``tensor[coord with None]`` slices; the layout algebra (composition,
divides, ``group_modes``, ``coalesce``...) applies to tensors through their layout.

Bounds: a static coordinate (or a static component of one) outside the tensor's shape
raises :class:`~cute_py.errors.CuteIndexError` for every engine, so a kernel that
indexes shared or global memory out of bounds with a static index fails while it is
traced; run-time components are the kernel's to check.  The views (``cute_py.tensor.partition``) ``local_tile`` and
``local_partition`` check their static tile and thread the same way (a divide pads a
partial last tile: that tile is inside).  ``domain_offset`` makes a view at any coordinate
whose out-of-range components address flat modes (CuTe's residue-first tiles start before
the tensor): a view is no dereference; its elements are checked when read or written.
On the host, every element offset read or written must also lie inside the array, and an
element of a ``domain_offset`` view must be an element of the tensor it shifts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import device
from ..core.basis import ArithTuple, make_identity_layout
from ..core.composed import is_byte_swizzled, smem_element_layout
from .dtypes import dtype_of
from ..errors import CuteIndexError, CuteTypeError, CuteValueError, StaticValueRequired
from ..core.int_tuple import flatten_unchecked
from ..core.normalise import as_int_tuple
from ..core.notation import fmt, short_repr
from ..core.products import product_each_unchecked, product_unchecked
from ..core.layout import cosize, has_none, Layout
from ..core.modes import slice_and_offset
from .pointer import AddressSpace, Pointer
from .storage_rules import check_inside, check_swizzle_alignment
from .engines import ArrayEngine, CoordEngine, check_domain, check_store, outside
from .kept_offsets import keep_offset, known_offset
from .offsets import element_offset, offset_width, wide_layout, widen_coord
from ..core.recast import recast_exactness, recast_layout
from ..core.swizzle import Swizzle
from ..core.tiling import make_fragment_like_layout
from ..core.typing import Coord, Shape, Stride

if TYPE_CHECKING:
    import numpy as np

    from ..core.composed import ComposedLayout
    from .dtypes import DType

__all__ = [
    "Tensor",
    "make_tensor",
    "make_identity_tensor",
    "make_coord_tensor",
    "make_fragment_like",
    "recast_tensor",
    "is_tensor",
]


def _memory_layout(engine, layout):
    """The function of element offsets a swizzled layout is in a tensor.

    Over shared memory, the swizzle the hardware applies to byte addresses (flagged, or unflagged but read in
    whichever unit is a hardware swizzle), in element units. Over a host array (standing for shared memory),
    a flagged layout likewise; an unflagged one stays a function of element offsets, as everywhere else.
    """
    if not isinstance(getattr(layout, "inner", None), Swizzle):
        return layout
    if isinstance(engine, Pointer) and engine.memspace in (AddressSpace.smem, AddressSpace.dsmem):
        return smem_element_layout(layout, engine.dtype.width)
    if is_byte_swizzled(layout):
        if isinstance(engine, ArrayEngine):
            return smem_element_layout(layout, engine.dtype.width)
        raise CuteValueError(f"{layout} swizzles shared-memory byte addresses; a tensor over {short_repr(engine)} "
                             f"cannot use it")
    return layout


def _shown_layout(engine, layout):
    """The layout as a tensor prints it: over shared memory a hardware swizzle in bytes, as the DSL prints it (and as
    make_tensor reads an unflagged swizzle at a shared-memory pointer); anything else as it is."""
    sw = getattr(layout, "inner", None)
    if not (isinstance(engine, Pointer) and engine.memspace in (AddressSpace.smem, AddressSpace.dsmem)
            and type(sw) is Swizzle and sw.bits and engine.dtype.width % 8 == 0):
        return layout
    shift = (engine.dtype.width // 8).bit_length() - 1
    if sw.base + shift != 4 or sw.shift != 3:  # not one of the hardware swizzles in bytes: the element form
        return layout
    return f"{Swizzle(sw.bits, 4, 3)} o {fmt(layout.offset)} o {layout.outer}"


class Tensor:
    """A layout over an engine.  Immutable view; host-array tensors are writable element-wise."""

    __slots__ = ("engine", "layout")

    def __init__(self, engine: Pointer | ArrayEngine | CoordEngine, layout: Layout | ComposedLayout) -> None:
        if not (type(layout) is Layout or (hasattr(layout, "__cute_map_outer__") and hasattr(layout, "outer"))):
            raise CuteTypeError(f"a tensor needs a Layout or a composed layout, got {short_repr(layout)}")
        if not isinstance(engine, (Pointer, ArrayEngine, CoordEngine)):
            raise CuteTypeError(f"a tensor engine is a Pointer, a host array or a coordinate counter, got {short_repr(engine)}")
        if isinstance(engine, Pointer) and engine.swizzle is not None:  # a swizzled pointer: a swizzled layout
            if type(layout) is not Layout:
                raise CuteTypeError(f"a pointer that carries a swizzle ({engine!r}) takes a plain layout, got "
                                    f"{short_repr(layout)}")
            from ..core.composed import ComposedLayout, SmemPtrFlag

            layout = ComposedLayout(engine.swizzle, SmemPtrFlag(engine.dtype.width), layout)
            engine = engine.without_swizzle()
            check_swizzle_alignment(engine, layout)
        if type(layout) is not Layout:
            layout = _memory_layout(engine, layout)
        object.__setattr__(self, "engine", engine)
        object.__setattr__(self, "layout", layout)

    def __setattr__(self, name, value):
        if name == "element_type":
            return Tensor.element_type.__set__(self, value)
        raise AttributeError("a Tensor's engine and layout cannot be rebound")

    # -- properties ---------------------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        return self.layout.shape

    @property
    def stride(self) -> Stride:
        return self.layout.stride

    @property
    def leading_dim(self) -> int | tuple[int, ...] | None:
        """The position of the first mode (left to right, depth first) of static stride 1 and extent other than a
        static 1, as the CuTe DSL's ``tensor.leading_dim``: a top-level index, a tuple of indices for a nested
        mode, ``None`` if there is none (:func:`cute_py.leading_dim`); a composed layout has no strides."""
        from ..core.congruence import leading_dim

        return leading_dim(self.shape, self.stride)

    @property
    def element_type(self) -> DType | None:
        """The element type (``None`` for coordinate tensors).

        Settable, as in the DSL, for storage whose element type the array library lacks (float8 data in a
        ``uint8`` torch tensor: ``t.element_type = cute.Float8E4M3FN``): the tensor then reads the same bytes as
        the new type. Only a type of the same width, over a pointer (the layout counts elements, so another width
        would change what it addresses: :func:`recast_tensor` does that); ``CuteTypeError`` otherwise."""
        return self.engine.dtype

    @element_type.setter
    def element_type(self, new: DType) -> None:
        from .pointer import with_dtype

        e = self.engine
        if not isinstance(e, Pointer):
            raise CuteTypeError(f"element_type is set on a tensor over a pointer, got {self!r}")
        dt = dtype_of(new)
        if dt.width != e.dtype.width:
            raise CuteTypeError(f"element_type = {dt.name} would read the {e.dtype.width}-bit elements of {self!r} "
                                f"as {dt.width}-bit ones (the layout counts elements); recast_tensor changes the width")
        object.__setattr__(self, "engine", with_dtype(e, dt))

    @property
    def memspace(self) -> AddressSpace | None:
        return self.engine.memspace

    @property
    def iterator(self) -> Pointer | ArrayEngine | CoordEngine:
        """The engine: a pointer, a host array view or a coordinate counter."""
        return self.engine

    def __len__(self) -> int:
        return len(self.layout)

    @property
    def type(self) -> str:
        """The tensor's type as text, as the DSL's ``tensor.type`` prints it: element type, memory, alignment and
        layout (``memref<f32, gmem, align<16>, (8,5):(5,1)>``), or ``coord_tensor<origin o layout>``."""
        e = self.engine
        if isinstance(e, CoordEngine):
            return f"coord_tensor<{fmt(e.origin)} o {self.layout}>"
        space = "host" if isinstance(e, ArrayEngine) else ("gmem" if e.memspace is AddressSpace.gmem else
                                                           e.memspace.name)
        align = f", align<{e.alignment}>" if isinstance(e, Pointer) else ""
        return f"memref<{e.dtype.short_name}, {space}{align}, {self.layout}>"

    def __repr__(self):
        return f"tensor<{self.engine!r} o {_shown_layout(self.engine, self.layout)}>"

    __str__ = __repr__

    # -- algebra hooks: the layout operations act on the layout, keeping the engine ----------
    def __cute_map_outer__(self, fn):
        return Tensor(self.engine, fn(self.layout))

    def __cute_slice__(self, coord):
        return self[coord]

    def __cute_substitute__(self, fn):
        """This tensor with ``fn`` applied to its layout and a coordinate engine's origin (``symbolic.substitute``)."""
        t = object.__new__(Tensor)
        object.__setattr__(t, "engine", fn(self.engine) if isinstance(self.engine, CoordEngine) else self.engine)
        object.__setattr__(t, "layout", fn(self.layout))
        return t

    def mark_layout_dynamic(self, leading_dim: int | None = None) -> Tensor:
        """Make this device tensor's shape and strides run-time values (``cute_py.tensor.dynamic``)."""
        from .dynamic import mark_layout_dynamic

        return mark_layout_dynamic(self, leading_dim)

    def mark_compact_shape_dynamic(self, mode: int, stride_order: tuple[int, ...] | None = None,
                                   divisibility: int = 1) -> Tensor:
        """Make one extent of this compact device tensor a run-time value (``cute_py.tensor.dynamic``)."""
        from .dynamic import mark_compact_shape_dynamic

        return mark_compact_shape_dynamic(self, mode, stride_order, divisibility)

    # -- access ------------------------------------------------------------------------------
    def _offset(self, coord):
        return element_offset(self, coord)

    def _element_offset(self, coord):
        # the offset of the element at ``coord`` of a tensor over an array or coordinates, checked against a
        # domain_offset view's tensor; kept for the next int index into the same layout (kept_offsets)
        off = self._offset(coord)
        check_domain(self, coord, off)
        keep_offset(self, coord, off)
        return off

    def _coord(self, coord):
        # the coordinate, normalised and checked against the shape (static components only)
        coord = as_int_tuple(coord, "tensor coordinate", allow_none=True)
        check_coord(coord, self.layout.shape, self)
        return coord

    def __getitem__(self, coord: Coord) -> Tensor | Any:
        """``tensor[c]`` reads the element at coordinate ``c``; a ``None`` in ``c`` slices."""
        if type(coord) is int:  # an index into a host array or a register fragment seen before: its offset
            off = known_offset(self, coord)
            if off is not None:
                return self.engine.read(off)
        coord = self._coord(coord)
        if has_none(coord):
            if offset_width(self) == 64:  # see offsets: the operands of the offset widened first
                sub, off = slice_and_offset(widen_coord(coord, self.layout.shape), wide_layout(self.layout))
            else:
                sub, off = slice_and_offset(coord, self.layout)
            return Tensor(self.engine + off, sub)
        if isinstance(self.engine, Pointer):
            access = device.active()
            if access is None:
                raise CuteValueError("a tensor over a device pointer cannot be read on the host")
            return access.load(self.engine, self._offset(coord))
        return self.engine.read(self._element_offset(coord))

    def __call__(self, *coord: Coord) -> Tensor | Any:
        return self[coord[0] if len(coord) == 1 else coord]

    def __setitem__(self, coord: Coord, value: Any) -> None:
        check_store(self, "a store")
        if type(coord) is int:
            off = known_offset(self, coord)
            if off is not None:
                self.engine.write(off, value)
                return
        access = device.active() if isinstance(self.engine, Pointer) else None
        if not isinstance(self.engine, ArrayEngine) and access is None:
            raise CuteValueError(f"only tensors over host arrays (or device memory inside a kernel) are writable, "
                                 f"this one is over {self.engine!r}")
        coord = self._coord(coord)
        if has_none(coord):
            sub = self[coord]
            n = product_unchecked(sub.shape)
            if type(n) is not int:
                raise StaticValueRequired(f"assigning to a slice needs a static size, got the shape {fmt(sub.shape)}")
            if hasattr(value, "__len__") and len(value) != n:
                raise CuteValueError(f"cannot assign {len(value)} values to a slice of {n} elements")
            for i in range(n):
                sub[i] = value[i] if hasattr(value, "__len__") else value
            return
        if access is not None:
            access.store(self.engine, self._offset(coord), value)
            return
        self.engine.write(self._element_offset(coord), value)

    def load(self) -> Any:
        """Every element of this tensor as one value: in a kernel a register value (a TensorSSA: elementwise
        arithmetic, ``.to(dtype)``, ``.reduce``); on the host the same operations computed by numpy
        (:class:`~cute_py.tensor.host_ssa.HostTensorSSA`; a coordinate tensor gives a numpy array of
        coordinates)."""
        access = device.active()
        if access is None:
            values = self.to_numpy()
            if self.element_type is None:  # coordinates: a numpy array of them
                return values
            from .host_ssa import HostTensorSSA

            return HostTensorSSA(values.reshape(-1, order="F"), self.shape, self.element_type)
        return access.load_tensor(self)

    def store(self, value: Any) -> None:
        """Write ``value`` into this tensor: in a kernel a TensorSSA of the same size or a number for every element;
        on the host (a tensor over an array) a number, a sequence of the tensor's size in flat order, or a numpy
        array of the shape :meth:`load` gives (read in column-major order, as it was written)."""
        access = device.active()
        if access is not None:
            access.store_tensor(self, value)
            return
        n = product_unchecked(self.shape)
        if type(n) is not int:
            raise StaticValueRequired(f"storing into a tensor needs a static size, got the shape {fmt(self.shape)}")
        from .host_ssa import HostTensorSSA

        if isinstance(value, HostTensorSSA):
            value = value.array
        elif hasattr(value, "reshape") and hasattr(value, "size") and getattr(value, "ndim", 1) > 1:
            if value.size != n:  # a numpy array of the shape load() gives: its elements in column-major order
                raise CuteValueError(f"cannot store {value.size} values into a tensor of {n} elements")
            value = value.reshape(-1, order="F")
        if hasattr(value, "__len__") and len(value) != n:
            raise CuteValueError(f"cannot store {len(value)} values into a tensor of {n} elements")
        for i in range(n):
            self[i] = value[i] if hasattr(value, "__len__") else value

    def fill(self, value: Any) -> None:
        """Set every element to ``value`` (``store`` of one number)."""
        if hasattr(value, "__len__"):
            raise CuteValueError(f"fill takes one value, got {short_repr(value)}")
        self.store(value)

    def to_numpy(self) -> np.ndarray:
        """The tensor's elements as a numpy array of its (flattened to rank <= depth-1) shape, column-major order."""
        import numpy as np

        n = product_unchecked(self.shape)
        if type(n) is not int:
            raise StaticValueRequired(f"to_numpy needs a static size, the tensor's shape is {fmt(self.shape)}")
        shape = product_each_unchecked(self.shape)
        flat = [self[i] for i in range(n)]
        if isinstance(self.engine, CoordEngine):
            out = np.empty(n, dtype=object)
            out[:] = [tuple(x) if isinstance(x, tuple) else x for x in flat]
        else:
            out = np.array(flat, dtype=self.engine.array.dtype)
        return out.reshape(shape, order="F")


def check_coord(coord, shape, what):
    """Raise :class:`CuteIndexError` if a static component of ``coord`` (``None`` components are free)
    lies outside ``shape``: an int for a mode must be in ``[0, size(mode))``."""
    if outside(coord, shape):
        raise CuteIndexError(f"the coordinate {fmt(coord)} is outside the shape {fmt(shape)} of {short_repr(what, 120)}")


def is_tensor(x: object) -> bool:
    """True for a :class:`Tensor`."""
    return type(x) is Tensor


def make_tensor(storage: Pointer | ArrayEngine | CoordEngine | np.ndarray,
                layout: Layout | ComposedLayout | Shape) -> Tensor:
    """A tensor over ``storage`` (a Pointer, a numpy array, or an engine) with ``layout`` (or a shape).

    A numpy array is used as flat storage (in memory order); the layout must stay
    inside it: every offset it reaches is in ``[0, array.size)`` (negative strides
    included: the lowest offset is the sum of ``(s-1)*d`` over the negative strides).
    """
    if type(layout) is not Layout and not (hasattr(layout, "__cute_map_outer__") and hasattr(layout, "outer")):
        layout = Layout(layout)
    host = getattr(storage, "owner", None) if isinstance(storage, Pointer) else None
    if hasattr(host, "__cute_host_view__") and type(layout) is Layout and device.active() is None:
        n = cosize(layout)  # a pointer to raw host memory: a view of the elements the layout reaches
        if type(n) is not int:
            raise StaticValueRequired(f"a tensor over host memory needs a static layout, got {layout}")
        return Tensor(host.__cute_host_view__(storage, n), layout)
    if isinstance(storage, (Pointer, ArrayEngine, CoordEngine)):
        if isinstance(storage, Pointer) and type(layout) is not Layout:
            check_swizzle_alignment(storage, layout)
        return Tensor(storage, layout)
    flags = getattr(storage, "flags", None)
    if hasattr(storage, "dtype") and hasattr(storage, "ravel") and hasattr(flags, "c_contiguous"):
        if not (flags.c_contiguous or flags.f_contiguous):
            raise CuteValueError("make_tensor needs a contiguous numpy array as storage")
        flat = storage.ravel(order="K")
        check_inside(layout, flat.size)
        return Tensor(ArrayEngine(flat), layout)
    raise CuteTypeError(f"make_tensor needs a Pointer, a numpy array or an engine, got {short_repr(storage)}")


def _leaves(t):
    t = flatten_unchecked(t)
    return t if type(t) is tuple else (t,)


def make_identity_tensor(shape: Shape) -> Tensor:
    """The tensor whose element at each coordinate of ``shape`` is that coordinate.

    @post make_identity_tensor(s)[c] == c for every coordinate c of s
    """
    layout = make_identity_layout(shape)
    return Tensor(CoordEngine(_zeros_like(layout.shape)), layout)


def make_coord_tensor(layout: Layout) -> Tensor:
    """A coordinate tensor over ``layout`` (a layout with basis strides), starting at the zero coordinate."""
    if type(layout) is not Layout:
        raise CuteTypeError(f"make_coord_tensor needs a Layout, got {short_repr(layout)}")
    fd = flatten_unchecked(layout.stride)
    total = 0
    for d in fd if type(fd) is tuple else (fd,):
        total = total + d
    profile = getattr(total, "__cute_coprofile__", None)
    origin = _zeros_like(profile()) if profile is not None else 0
    return Tensor(CoordEngine(origin), layout)


def _zeros_like(s):
    if type(s) is tuple:
        return ArithTuple(_zeros_like(x) for x in s)
    return 0


def make_fragment_like(src: Tensor | Layout | ComposedLayout, dtype: DType | str | Any = None) -> Tensor:
    """A register tensor with a compact layout ordered like ``src``'s (CuTe's ``make_fragment_like``): a host
    array, or, while a kernel is traced, a register fragment of the kernel."""
    import numpy as np

    access = device.active()
    if access is not None:
        return access.make_fragment_like(src, dtype)

    layout = src.layout if isinstance(src, Tensor) else src
    if hasattr(layout, "__cute_map_outer__"):
        layout = layout.outer
    if dtype is None:
        if not isinstance(src, Tensor) or src.element_type is None:
            raise CuteValueError("make_fragment_like of a layout needs a dtype")
        dtype = src.element_type
    dtype = dtype_of(dtype)
    if type(layout) is not Layout:
        raise CuteTypeError(f"make_fragment_like needs a tensor or a layout, got {short_repr(src)}")
    frag = make_fragment_like_layout(layout)
    store = dtype.numpy_dtype or dtype.storage_dtype
    n = cosize(frag)
    if type(n) is not int:
        raise StaticValueRequired(f"a host fragment needs a static size, got the layout {frag}")
    if n > _MAX_HOST_ELEMENTS:
        raise CuteValueError(f"a host fragment of {n} elements is more than the {_MAX_HOST_ELEMENTS} cute_py allocates")
    return Tensor(ArrayEngine(np.zeros(n, dtype=store), 0, dtype), frag)


_MAX_HOST_ELEMENTS = 1 << 31


def recast_tensor(tensor: Tensor, dtype: DType | str | Any) -> Tensor:
    """The same memory seen as elements of ``dtype`` (layout recast as CuTe's ``recast_layout``, engine
    reinterpreted).

    Widening rounds as CuTe does: ``(2):(1)`` fp16 seen as 64-bit elements is one element, which also
    spans two fp16 elements the tensor does not reach.  Reading such a view is allowed; a store through it
    (or any view of it) raises :class:`DivisibilityError` at the store, naming the layout.
    @post the result reads the bits of tensor's elements (and, widened inexactly, their neighbours')
    """
    if type(tensor) is not Tensor:
        raise CuteTypeError(f"recast_tensor needs a Tensor, got {short_repr(tensor)}")
    dtype = dtype_of(dtype)
    old = tensor.element_type
    if old is None:
        raise CuteValueError("a coordinate tensor cannot be recast")
    layout = recast_layout(dtype.width, old.width, tensor.layout)
    reason = recast_exactness(dtype.width, old.width, tensor.layout)
    guard = None if reason is None else (
        f"the {old.name} tensor with layout {tensor.layout} seen as {dtype.name} ({layout}) covers {dtype.name} "
        f"elements only partly: {reason}, so a store would overwrite {old.name} elements outside the tensor")
    eng = tensor.engine
    guard = guard or getattr(eng, "store_guard", None)
    if isinstance(eng, Pointer):
        bits = eng.offset * old.width
        if type(bits) is int and bits % dtype.width:
            raise CuteValueError(f"the tensor's offset ({fmt(eng.offset)} elements) is not a whole number of {dtype.name}")
        ptr = Pointer(dtype, eng.memspace, max(eng.alignment, max(1, dtype.width // 8)) if eng.address is None
                      else eng.alignment, eng.address, bits // dtype.width, eng.base)
        return Tensor(ptr if guard is None else ptr.guarded(guard), layout)
    if hasattr(eng, "recast"):  # a register fragment: a view of its values' bits
        return Tensor(eng.recast(dtype), layout)
    if isinstance(eng, ArrayEngine):
        bits = eng.offset * old.width
        if bits % dtype.width:
            raise CuteValueError(f"the tensor's offset ({eng.offset} elements) is not a whole number of {dtype.name}")
        try:
            view = eng.array.view(dtype.numpy_dtype or dtype.storage_dtype)
        except ValueError as e:
            raise CuteValueError(f"the host array cannot be seen as {dtype.name}: {e}") from None
        return Tensor(ArrayEngine(view, bits // dtype.width, dtype, guard), layout)
    raise CuteValueError(f"cannot recast a tensor over {eng!r}")
