"""Register fragments in a kernel: a tensor over a Python list of traced values, indexed by static coordinates
(``make_fragment``, ``make_rmem_tensor``), which the compiler keeps in registers; writes inside run-time control
flow are logged so that the construct carries them (``note_write``).

A fragment may be seen as elements of another type (``cute.recast_tensor`` of a register tensor: packing two
16-bit values into one 32-bit register to move or permute them together, or taking a 32-bit value's halves
apart). Element ``i`` of such a view is the bits ``[i * w, (i + 1) * w)`` of the fragment (``w`` the view's
width), counted from the fragment's first element, the first element in the lowest bits (as in memory on the GPU).
Reads and writes go through to the fragment, and a view of a view sees the same bits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core.layout import Layout, cosize
from ...core.tiling import make_fragment_like_layout
from ...core.typing import Shape
from ...errors import CuteValueError, StaticTraceError, TraceError
from ...tensor.dtypes import Scalar, dtype_of
from ...tensor.engines import ArrayEngine
from ...tensor.tensor import Tensor
from .builder import active, current
from .memory import pack, unpack
from .traced_int import TracedInt
from .values import TracedFloat

if TYPE_CHECKING:
    from ...core.composed import ComposedLayout
    from ...tensor.dtypes import DType

__all__ = ["RegisterEngine", "RegisterView", "recast_registers", "make_fragment", "make_rmem_tensor",
           "make_fragment_like", "note_write", "MAX_FRAGMENT"]


class RegisterEngine(ArrayEngine):
    """The storage of a register fragment: Python-held traced values, indexed by static offsets."""

    __slots__ = ()

    def __add__(self, n):
        self._static(n)
        return RegisterEngine(self.array, self.offset + n, self.dtype)

    def _static(self, i):
        if type(i) is not int:
            raise StaticTraceError(f"a register fragment is indexed with static coordinates (its elements live in "
                                   f"registers), got the run-time offset {i!r}: index it in a loop over "
                                   f"cute.range_constexpr(...) (a run-time loop with static bounds unrolls "
                                   f"by itself)")

    def _element(self, i):
        """The array index of element ``i``; ``TraceError`` when it is not one of the fragment's elements."""
        self._static(i)
        at = self.offset + i
        if type(at) is not int or not 0 <= at < self.array.size:
            raise TraceError(f"register fragment index out of bounds: element offset {at} of a fragment of "
                             f"{self.array.size} elements (valid offsets 0..{self.array.size - 1})")
        return at

    def read(self, i: int) -> Any:
        return self.array[self._element(i)]

    def write(self, i: int, v: Any) -> None:
        at = self._element(i)
        if current().write_logs:  # inside run-time control flow: the element becomes a carried value
            note_write(self.array, at, self.dtype)
        if self.dtype.kind == "bool" and isinstance(v, (TracedInt, TracedFloat)):
            raise TraceError(f"a Boolean register fragment holds Booleans, got a run-time {v.dtype.name} (compare "
                             f"it, x != 0, or convert it, cute.Boolean(x))")
        self.array[at] = _as_bool(v) if self.dtype.kind == "bool" else v

    def recast(self, dtype: DType) -> RegisterEngine:
        """This fragment seen as ``dtype`` elements (``recast_tensor``): :func:`recast_registers`."""
        return recast_registers(self, dtype)

    def __repr__(self):
        return f"registers[{self.dtype.name}](offset={self.offset}, size={self.array.size})"


def _as_bool(v):
    """A number stored in a Boolean fragment, held as a Python bool: ``0``/``1`` and ``cute.Boolean(x)`` become
    ``False``/``True``, so that every path of run-time control flow holds a Boolean there (a traced Boolean on one
    path and ``0`` on another then carries as one Boolean); other values are kept (and refused where used)."""
    if isinstance(v, Scalar) and v.dtype.kind == "bool":
        v = v.value
    if type(v) is int and v in (0, 1) or type(v).__name__ == "bool_":
        return bool(v)
    return v


MAX_FRAGMENT = 1 << 16  # elements of one register fragment (each is traced on its own)


def make_fragment(layout: Layout | Shape, dtype: DType | str | Any) -> Tensor:
    """A register tensor of ``dtype`` with ``layout`` (static), its elements initialised to 0.

    Elements hold traced values (or Python numbers) and are read and written with static
    coordinates; the compiler keeps them in registers.
    """
    import numpy as np

    dtype = dtype_of(dtype)
    if not isinstance(layout, Layout):
        layout = Layout(layout)
    n = cosize(layout)
    if type(n) is not int:
        raise TraceError(f"a register fragment needs a static layout, got {layout}")
    if n > MAX_FRAGMENT:
        raise TraceError(f"a register fragment of {n} elements ({layout}): a thread has at most 255 "
                         f"registers, and fragments are limited to {MAX_FRAGMENT} elements")
    store = np.empty(max(n, 1), dtype=object)
    store[:] = False if dtype.kind == "bool" else 0
    b = active()
    if b is not None and b.write_logs:  # made inside run-time control flow: not carried by it (note_write)
        b.fragment_births[id(store)] = (store, tuple(b.write_logs))
    return Tensor(RegisterEngine(store, 0, dtype), layout)


def make_rmem_tensor(layout_or_shape: Layout | Shape, dtype: DType | str | Any) -> Tensor:
    """A register tensor of ``dtype`` over ``layout_or_shape`` (a layout, or a shape: compact column-major), as the
    CuTe DSL's ``make_rmem_tensor``; the same tensor as :func:`make_fragment`. Outside a kernel (a jit function's
    host code) it is a zeroed host array under the layout."""
    if active() is None:
        from ...tensor.tensor import make_fragment_like as host_fragment

        layout = layout_or_shape if isinstance(layout_or_shape, Layout) else Layout(layout_or_shape)
        n = cosize(layout)
        if type(n) is not int:
            raise CuteValueError(f"make_rmem_tensor needs a static layout, got {layout}")
        return Tensor(host_fragment(Layout(max(n, 1)), dtype_of(dtype)).engine, layout)
    return make_fragment(layout_or_shape, dtype)


def make_fragment_like(src: Tensor | Layout | ComposedLayout, dtype: DType | str | Any | None = None) -> Tensor:
    """A register fragment shaped like ``src`` (a tensor or layout), compact in ``src``'s stride order."""
    layout = src.layout if isinstance(src, Tensor) else src
    layout = getattr(layout, "outer", layout)
    if dtype is None:
        dtype = src.element_type if isinstance(src, Tensor) else None
        if dtype is None:
            raise CuteValueError("make_fragment_like of a layout (or a coordinate tensor) needs a dtype")
    return make_fragment(make_fragment_like_layout(layout), dtype)


def note_write(array: Any, at: int, dtype: Any) -> None:
    """Before element ``at`` of a register fragment's ``array`` is written: log its old value in every open
    run-time construct (the first write of each construct keeps the value from before it), except the
    constructs the fragment was made in (``make_fragment`` records them in ``fragment_births``): it does not
    exist before them, and each iteration of a loop makes it anew. Used after such a construct, its values are
    out of scope (a ``TraceError``)."""
    b = current()
    born = b.fragment_births.get(id(array))
    inside = {id(x) for x in born[1]} if born is not None and born[0] is array else ()
    for log in b.write_logs:
        if id(log) in inside:
            continue
        key = (id(array), at)
        if key not in log:
            log[key] = (array, at, array[at], dtype)


def recast_registers(engine: RegisterEngine, dtype: DType) -> RegisterEngine:
    """The engine of ``engine``'s fragment seen as ``dtype`` elements from ``engine``'s offset (``CuteValueError``
    where that offset is not a whole number of ``dtype`` elements, or either type is not a whole number of bytes
    wide)."""
    bits = engine.offset * engine.dtype.width
    base = engine.base if isinstance(engine, RegisterView) else RegisterEngine(engine.array, 0, engine.dtype)
    old = base.dtype
    for t in (old, dtype):
        if t.kind == "bool" or t.width % 8:
            raise CuteValueError(f"recast_tensor of a register fragment: {t.name} is not a whole number of bytes "
                                 f"wide (registers are recast in bytes)")
    big, small = max(old.width, dtype.width), min(old.width, dtype.width)
    if big % small:
        raise CuteValueError(f"recast_tensor of a register fragment: {old.name} and {dtype.name} do not divide each "
                             f"other's width ({old.width} and {dtype.width} bits)")
    if bits % dtype.width:
        raise CuteValueError(f"recast_tensor of a register fragment: its offset ({bits // engine.dtype.width} "
                             f"{engine.dtype.name} elements) is not a whole number of {dtype.name}")
    if dtype == old:
        return RegisterEngine(base.array, bits // dtype.width, dtype)
    return RegisterView(base, bits // dtype.width, dtype)


class RegisterView(RegisterEngine):
    """The elements of ``dtype`` over the register fragment ``base`` (an engine at offset 0 of another type):
    ``offset`` counts ``dtype`` elements from ``base``'s first bit."""

    __slots__ = ("base",)

    def __init__(self, base: RegisterEngine, offset: int, dtype: DType) -> None:
        super().__init__(base.array, offset, dtype)
        self.base = base

    def __add__(self, n):
        self._static(n)
        return RegisterView(self.base, self.offset + n, self.dtype)

    def _element(self, i):
        self._static(i)
        at = self.offset + i
        size = self.base.array.size * self.base.dtype.width // self.dtype.width
        if type(at) is not int or not 0 <= at < size:
            raise TraceError(f"register fragment index out of bounds: element offset {at} of a fragment of {size} "
                             f"{self.dtype.name} elements seen through recast_tensor (valid offsets 0..{size - 1})")
        return at

    def _ratio(self) -> int:
        return max(self.dtype.width, self.base.dtype.width) // min(self.dtype.width, self.base.dtype.width)

    def read(self, i: int) -> Any:
        at, r, old = self._element(i), self._ratio(), self.base.dtype
        if self.dtype.width > old.width:  # the r elements it spans, packed
            return unpack(pack([self.base.read(at * r + k) for k in range(r)], old, self.dtype.width),
                          self.dtype, 1)[0]
        return self._parts(at // r)[at % r]

    def write(self, i: int, v: Any) -> None:
        at, r, old = self._element(i), self._ratio(), self.base.dtype
        if self.dtype.width > old.width:
            for k, part in enumerate(unpack(pack([v], self.dtype, self.dtype.width), old, r)):
                self.base.write(at * r + k, part)
            return
        parts = self._parts(at // r)
        parts[at % r] = v
        self.base.write(at // r, unpack(pack(parts, self.dtype, old.width), old, 1)[0])

    def _parts(self, j: int) -> list[Any]:
        """The ``dtype`` parts of the base's element ``j``, lowest bits first."""
        old = self.base.dtype
        return unpack(pack([self.base.read(j)], old, old.width), self.dtype, old.width // self.dtype.width)

    def __repr__(self):
        return f"registers[{self.base.dtype.name} as {self.dtype.name}](offset={self.offset})"
