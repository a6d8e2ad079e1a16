"""``Tensor(engine, layout)``: a layout over storage.

The engine is a :class:`~cute_py.pointer.Pointer` (device memory, possibly with an
unknown address), a host numpy array (:class:`ArrayEngine`, readable and
writable), or a coordinate counter (:class:`CoordEngine`: the tensor's values are
coordinates, as in identity and TMA coordinate tensors).  ``tensor[coord]`` reads
an element, ``tensor[coord with None]`` slices; the layout algebra (composition,
divides, ``group_modes``, ``coalesce``...) applies to tensors through their layout.
"""

from .basis import ArithTuple, make_identity_layout
from .dtypes import dtype_of
from .errors import CuteTypeError, CuteValueError
from .int_tuple import as_int_tuple, fmt, product, product_each
from .layout import Layout, _has_none, cosize, dice, slice_and_offset
from .pointer import AddressSpace, Pointer
from .recast import recast_layout
from .tiling import make_fragment_like_layout, zipped_divide

__all__ = [
    "Tensor",
    "ArrayEngine",
    "CoordEngine",
    "make_tensor",
    "make_identity_tensor",
    "make_coord_tensor",
    "make_fragment_like",
    "recast_tensor",
    "domain_offset",
    "local_tile",
    "local_partition",
    "inner_partition",
    "outer_partition",
    "is_tensor",
    "set_device_access",
]

_device = {"access": None}


def set_device_access(access):
    """Install (``None``: remove) the object that reads and writes tensors over device pointers while a
    kernel is traced (``access.load(pointer, offset)``, ``access.store(pointer, offset, value)``); returns
    the previous one."""
    old = _device["access"]
    _device["access"] = access
    return old


class ArrayEngine:
    """A flat host numpy array and an element offset into it."""

    __slots__ = ("array", "offset", "dtype")

    def __init__(self, array, offset=0, dtype=None):
        self.array = array
        self.offset = offset
        self.dtype = dtype if dtype is not None else dtype_of(array.dtype.name)

    def __add__(self, n):
        return ArrayEngine(self.array, self.offset + n, self.dtype)

    def read(self, i):
        return self.array[self.offset + i]

    def write(self, i, v):
        self.array[self.offset + i] = v

    memspace = AddressSpace.rmem

    def __repr__(self):
        return f"host_array[{self.dtype.name}](offset={fmt(self.offset)}, size={self.array.size})"


class CoordEngine:
    """A counting iterator over coordinates: element ``i`` is ``origin + i`` (``i`` a coordinate).

    ``source`` optionally names what the coordinates address (the TMA atom of a TMA coordinate
    tensor); it is kept by every view of the tensor.
    """

    __slots__ = ("origin", "source")

    def __init__(self, origin, source=None):
        self.origin = origin
        self.source = source

    def __add__(self, n):
        return CoordEngine(_add_coord(self.origin, n), self.source)

    def read(self, i):
        return _add_coord(self.origin, i)

    dtype = None
    memspace = None

    def __repr__(self):
        return f"ArithTuple({','.join(fmt(x) for x in self.origin)})" if isinstance(self.origin, tuple) else \
            f"ArithTuple({fmt(self.origin)})"


def _add_coord(a, b):
    if isinstance(b, tuple) or isinstance(a, tuple):
        a = ArithTuple(a) if isinstance(a, tuple) else a
        return a + b if isinstance(a, ArithTuple) else ArithTuple(b) + a
    return a + b


class Tensor:
    """A layout over an engine.  Immutable view; host-array tensors are writable element-wise."""

    __slots__ = ("engine", "layout")

    def __init__(self, engine, layout):
        if not (type(layout) is Layout or hasattr(layout, "__cute_map_outer__")):
            raise CuteTypeError(f"a tensor needs a Layout or a composed layout, got {layout!r}")
        if not isinstance(engine, (Pointer, ArrayEngine, CoordEngine)):
            raise CuteTypeError(f"a tensor engine is a Pointer, a host array or a coordinate counter, got {engine!r}")
        object.__setattr__(self, "engine", engine)
        object.__setattr__(self, "layout", layout)

    def __setattr__(self, name, value):
        raise AttributeError("a Tensor's engine and layout cannot be rebound")

    # -- properties ---------------------------------------------------------------------------
    @property
    def shape(self):
        return self.layout.shape

    @property
    def stride(self):
        return self.layout.stride

    @property
    def element_type(self):
        """The element type (``None`` for coordinate tensors)."""
        return self.engine.dtype

    @property
    def memspace(self):
        return self.engine.memspace

    @property
    def iterator(self):
        """The engine: a pointer, a host array view or a coordinate counter."""
        return self.engine

    def __len__(self):
        return len(self.layout)

    def __repr__(self):
        return f"tensor<{self.engine!r} o {self.layout}>"

    __str__ = __repr__

    # -- algebra hooks: the layout operations act on the layout, keeping the engine ----------
    def __cute_map_outer__(self, fn):
        return Tensor(self.engine, fn(self.layout))

    def __cute_slice__(self, coord):
        return self[coord]

    # -- access ------------------------------------------------------------------------------
    def _offset(self, coord):
        return self.layout(coord)

    def __getitem__(self, coord):
        """``tensor[c]`` reads the element at coordinate ``c``; a ``None`` in ``c`` slices."""
        if _has_none(coord):
            sub, off = slice_and_offset(coord, self.layout)
            return Tensor(self.engine + off, sub)
        if isinstance(self.engine, Pointer):
            access = _device["access"]
            if access is None:
                raise CuteValueError("a tensor over a device pointer cannot be read on the host")
            return access.load(self.engine, self._offset(coord))
        return self.engine.read(self._offset(coord))

    def __call__(self, *coord):
        return self[coord[0] if len(coord) == 1 else coord]

    def __setitem__(self, coord, value):
        access = _device["access"] if isinstance(self.engine, Pointer) else None
        if not isinstance(self.engine, ArrayEngine) and access is None:
            raise CuteValueError(f"only tensors over host arrays (or device memory inside a kernel) are writable, "
                                 f"this one is over {self.engine!r}")
        if _has_none(coord):
            sub = self[coord]
            for i in range(product(sub.shape)):
                sub[i] = value[i] if hasattr(value, "__len__") else value
            return
        if access is not None:
            access.store(self.engine, self._offset(coord), value)
            return
        self.engine.write(self._offset(coord), value)

    def to_numpy(self):
        """The tensor's elements as a numpy array of its (flattened to rank <= depth-1) shape, column-major order."""
        import numpy as np

        n = product(self.shape)
        shape = product_each(self.shape)
        flat = [self[i] for i in range(n)]
        if isinstance(self.engine, CoordEngine):
            out = np.empty(n, dtype=object)
            out[:] = [tuple(x) if isinstance(x, tuple) else x for x in flat]
        else:
            out = np.array(flat, dtype=self.engine.array.dtype)
        return out.reshape(shape, order="F")


def is_tensor(x):
    """True for a :class:`Tensor`."""
    return type(x) is Tensor


def make_tensor(storage, layout):
    """A tensor over ``storage`` (a Pointer, a numpy array, or an engine) with ``layout``.

    A numpy array is used as flat storage (in memory order); the layout must stay
    inside it: ``cosize(layout) <= array.size``.
    """
    if type(layout) is not Layout and not hasattr(layout, "__cute_map_outer__"):
        layout = Layout(as_int_tuple(layout, "shape"))
    if isinstance(storage, (Pointer, ArrayEngine, CoordEngine)):
        return Tensor(storage, layout)
    if hasattr(storage, "dtype") and hasattr(storage, "reshape"):
        if not (storage.flags.c_contiguous or storage.flags.f_contiguous):
            raise CuteValueError("make_tensor needs a contiguous numpy array as storage")
        flat = storage.ravel(order="K")
        need = cosize(layout)
        if type(need) is int and need > flat.size:
            raise CuteValueError(f"layout {layout} reaches offset {need - 1}, beyond the {flat.size} elements given")
        return Tensor(ArrayEngine(flat), layout)
    raise CuteTypeError(f"make_tensor needs a Pointer, a numpy array or an engine, got {storage!r}")


def make_identity_tensor(shape):
    """The tensor whose element at each coordinate of ``shape`` is that coordinate.

    @post make_identity_tensor(s)[c] == c for every coordinate c of s
    """
    layout = make_identity_layout(shape)
    return Tensor(CoordEngine(_zeros_like(shape)), layout)


def make_coord_tensor(layout):
    """A coordinate tensor over ``layout`` (a layout with basis strides), starting at the zero coordinate."""
    from .int_tuple import flatten

    fd = flatten(layout.stride)
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


def make_fragment_like(src, dtype=None):
    """A register tensor with a compact layout ordered like ``src``'s (CuTe's ``make_fragment_like``): a host
    array, or, while a kernel is traced, a register fragment of the kernel."""
    import numpy as np

    access = _device["access"]
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
    frag = make_fragment_like_layout(layout)
    store = dtype.numpy_dtype or dtype.storage_dtype
    return Tensor(ArrayEngine(np.zeros(cosize(frag), dtype=store), 0, dtype), frag)


def recast_tensor(tensor, dtype):
    """The same memory seen as elements of ``dtype`` (layout recast, engine reinterpreted)."""
    dtype = dtype_of(dtype)
    old = tensor.element_type
    if old is None:
        raise CuteValueError("a coordinate tensor cannot be recast")
    layout = recast_layout(dtype.width, old.width, tensor.layout)
    eng = tensor.engine
    if isinstance(eng, Pointer):
        bits = eng.offset * old.width
        if type(bits) is int and bits % dtype.width:
            raise CuteValueError(f"the tensor's offset ({fmt(eng.offset)} elements) is not a whole number of {dtype.name}")
        return Tensor(Pointer(dtype, eng.memspace, max(eng.alignment, max(1, dtype.width // 8)) if eng.address is None
                              else eng.alignment, eng.address, bits // dtype.width, eng.base), layout)
    if isinstance(eng, ArrayEngine):
        bits = eng.offset * old.width
        if bits % dtype.width:
            raise CuteValueError(f"the tensor's offset ({eng.offset} elements) is not a whole number of {dtype.name}")
        view = eng.array.view(dtype.numpy_dtype or dtype.storage_dtype)
        return Tensor(ArrayEngine(view, bits // dtype.width, dtype), layout)
    raise CuteValueError(f"cannot recast a tensor over {eng!r}")


def domain_offset(coord, tensor):
    """The tensor whose coordinate 0 is ``coord`` of ``tensor`` (its engine advanced by ``tensor.layout(coord)``)."""
    layout = tensor.layout
    if hasattr(layout, "__cute_map_outer__") and type(layout) is not Layout:
        from .composed import ComposedLayout

        return Tensor(tensor.engine, ComposedLayout(layout.inner, layout.offset + layout.outer(coord), layout.outer))
    return Tensor(tensor.engine + layout(coord), layout)


def _repeat_none(r):
    return None if r == 1 else (None,) * r


def inner_partition(tensor, tiler, coord):
    """Tile ``tensor`` by ``tiler`` and keep the tile at ``coord`` of the rest modes."""
    tiled = zipped_divide(tensor, tiler)
    r0 = len(tiled.layout[0])
    if type(coord) is tuple:
        r1 = len(tiled.layout[1])
        coord = coord + (None,) * (r1 - len(coord))
        if r1 == 1 and len(coord) == 1 and type(tiled.layout.shape[1]) is not tuple:
            coord = coord[0]
    return tiled[(_repeat_none(r0), coord)]


def outer_partition(tensor, tiler, coord):
    """Tile ``tensor`` by ``tiler`` and keep, for every tile, the element at ``coord`` of the tile."""
    tiled = zipped_divide(tensor, tiler)
    r1 = len(tiled.layout[1])
    if type(coord) is tuple:
        r0 = len(tiled.layout[0])
        coord = coord + (None,) * (r0 - len(coord))
        if r0 == 1 and len(coord) == 1 and type(tiled.layout.shape[0]) is not tuple:
            coord = coord[0]
    return tiled[(coord, _repeat_none(r1))]


def local_tile(tensor, tiler, coord, proj=None):
    """The ``coord``-th tile of ``tensor`` under ``tiler`` (CuTe's ``local_tile``).

    ``proj`` (a tuple of 1/``None`` per mode) drops the tiler and coordinate modes marked ``None``,
    e.g. ``local_tile(A, (bm, bn, bk), (m, n, None), proj=(1, None, 1))`` tiles A by (bm, bk).
    """
    if proj is not None:
        tiler = dice(_proj_coord(proj), tiler)
        coord = dice(_proj_coord(proj), coord)
    return inner_partition(tensor, tiler, coord)


def _proj_coord(proj):
    # CuTe's Step<_1, X, _1>: X (None) drops the mode
    return tuple(None if p is None else 0 for p in proj)


def local_partition(tensor, thr_layout, index, proj=None):
    """The elements of ``tensor`` owned by thread ``index`` when ``thr_layout`` tiles it (CuTe's ``local_partition``)."""
    if proj is not None:
        keep = _proj_coord(proj)
        thr_layout = dice(keep, thr_layout)
    shape = product_each(thr_layout.shape)
    coord = _flat_coord(thr_layout, index)
    return outer_partition(tensor, shape if len(shape) > 1 else shape[0], coord)


def _flat_coord(layout, index):
    # the (flat, rank-matching) coordinate of ``index`` in a compact thread layout
    from .int_tuple import idx2crd

    hier = idx2crd(index, layout.shape, layout.stride)
    if type(hier) is not tuple:
        return hier
    out = []
    for c, s in zip(hier, layout.shape):
        out.append(c if type(c) is not tuple else _crd2idx_colex(c, s))
    return tuple(out)


def _crd2idx_colex(c, s):
    from .int_tuple import crd2idx

    return crd2idx(c, s)
