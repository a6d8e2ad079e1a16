"""The storage a :class:`~cute_py.tensor.tensor.Tensor` other than a pointer stands over, and the bounds of what it
addresses: a host numpy array (:class:`ArrayEngine`, readable and writable, every element offset checked against
the array), a coordinate counter (:class:`CoordEngine`: the values are coordinates, as in identity and TMA
coordinate tensors), the store guard (``check_store``) and the coordinate rules the views share (``outside``,
``natural_coord``, ``add_natural``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.basis import ArithTuple
from ..core.coords import idx2crd_unchecked
from ..core.normalise import as_index
from ..core.notation import fmt
from ..core.products import product_unchecked
from ..core.typing import Int, IntTuple
from ..errors import CuteIndexError, DivisibilityError
from .dtypes import dtype_of
from .pointer import AddressSpace

if TYPE_CHECKING:
    import numpy as np

    from .dtypes import DType

__all__ = ["ArrayEngine", "CoordEngine", "check_store", "check_domain", "outside", "natural_coord", "add_natural"]


class ArrayEngine:
    """A flat host numpy array and an element offset into it."""

    __slots__ = ("array", "offset", "dtype", "store_guard", "domain")

    def __init__(self, array: np.ndarray, offset: Int = 0, dtype: DType | None = None,
                 store_guard: str | None = None) -> None:
        self.array = array
        self.offset = offset  # may be negative or past the end (a shifted view): each access is checked
        self.dtype = dtype if dtype is not None else dtype_of(array.dtype.name)
        self.store_guard = store_guard  # None, or why writes are refused (as Pointer.store_guard)
        self.domain = None  # set by domain_offset: (layout of the view, its shift, the shape it shifts)

    def __add__(self, n):
        return ArrayEngine(self.array, self.offset + n, self.dtype, self.store_guard)

    def _index(self, i):
        j = self.offset + i
        if type(j) is not int:
            j = as_index(j, "the element offset into a host array")
        if not 0 <= j < self.array.size:
            raise CuteIndexError(
                f"the element offset {j} is outside the host array of {self.array.size} elements"
            )
        return j

    def read(self, i: Int) -> Any:
        return self.array[self._index(i)]

    def write(self, i: Int, v: Any) -> None:
        check_store(self, "a store")
        self.array[self._index(i)] = v

    memspace = AddressSpace.rmem

    def __repr__(self):
        return f"host_array[{self.dtype.name}](offset={fmt(self.offset)}, size={self.array.size})"


class CoordEngine:
    """A counting iterator over coordinates: element ``i`` is ``origin + i`` (``i`` a coordinate).

    ``source`` optionally names what the coordinates address (the TMA atom of a TMA coordinate
    tensor); it is kept by every view of the tensor.
    """

    __slots__ = ("origin", "source")

    def __init__(self, origin: IntTuple, source: object = None) -> None:
        self.origin = origin
        self.source = source

    def __add__(self, n):
        return CoordEngine(_add_coord(self.origin, n), self.source)

    def read(self, i: IntTuple) -> IntTuple:
        return _add_coord(self.origin, i)

    def __cute_substitute__(self, fn):
        return CoordEngine(fn(self.origin), self.source)

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


def check_store(target: Any, op: str) -> None:
    """Raise :class:`DivisibilityError` if ``target`` (a tensor or an engine) refuses stores (see
    :func:`recast_tensor`); ``op`` names the store."""
    engine = getattr(target, "engine", target)
    guard = getattr(engine, "store_guard", None)
    if guard is not None:
        raise DivisibilityError(f"{op} through this tensor is refused: {guard}")


def outside(c: Any, s: Any) -> bool:
    """Whether a static component of the coordinate ``c`` (``None`` components are free, run-time ones are the
    kernel's to check) lies outside the shape ``s``: an int for a mode must be in ``[0, size(mode))``."""
    if c is None:
        return False
    if type(c) is tuple:
        if type(s) is not tuple or len(c) != len(s):
            return False  # not congruent: the layout reports it
        for ci, si in zip(c, s):
            if outside(ci, si):
                return True
        return False
    if type(c) is not int:
        return False  # a run-time component
    if c < 0:
        return True
    n = product_unchecked(s)
    return type(n) is int and c >= n


def natural_coord(c: Any, s: Any) -> Any:
    """The natural (congruent) coordinate of ``c`` in the shape ``s``; a component outside a flat mode is kept as
    it is."""
    if type(c) is tuple and type(s) is tuple and len(c) == len(s):
        return tuple(natural_coord(ci, si) for ci, si in zip(c, s))
    if type(s) is tuple and type(c) is not tuple:
        return idx2crd_unchecked(c, s)
    return c


def add_natural(a: Any, b: Any) -> Any:
    """Two natural coordinates of one shape added mode by mode."""
    if type(a) is tuple and type(b) is tuple:
        return tuple(add_natural(x, y) for x, y in zip(a, b))
    return a + b


def check_domain(tensor: Any, coord: Any, off: Any) -> None:
    """An element of a ``domain_offset`` view of a host array (``coord``, at ``off`` from the view's start) must be
    an element of the tensor it shifts: :class:`CuteIndexError` otherwise; nothing for other tensors."""
    dom = getattr(tensor.engine, "domain", None)
    if dom is None or dom[0] is not tensor.layout:
        return
    layout, shift, shape = dom
    full = add_natural(shift, natural_coord(coord, layout.shape))
    if outside(full, shape):
        raise CuteIndexError(f"the coordinate {fmt(coord)} (element offset {fmt(tensor.engine.offset + off)} of the "
                             f"array) of the view shifted by {fmt(shift)} is the coordinate {fmt(full)}, outside the "
                             f"shape {fmt(shape)} of the tensor it views")
