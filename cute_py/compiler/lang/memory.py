"""Loads and stores in a kernel: tensor elements, vectors of bits, and register fragments.

Inside a ``@cute_py.kernel``, a tensor over a shared- or global-memory pointer reads and
writes its elements::

    v = s_tile[i, j]          # a load: a traced value of the tensor's element type
    d_tile[j, i] = v          # a store: a float must have the element type, an integer converts

Coordinates may be traced; swizzled (composed) layouts apply their swizzle. A register
fragment (``make_fragment``) is a tensor over a Python list of traced values, indexed by
static coordinates. ``load_bits``/``store_bits`` move 8-128 bits at an address (one vector
access), which the tile copies use.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...tensor.dtypes import Scalar, dtype_of
from ...core.typing import Int, Shape
from ...errors import CuteValueError, StaticTraceError, TraceError
from ...core.layout import Layout, cosize
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.offsets import element_offset
from ...tensor.tensor import Tensor
from ...tensor.engines import ArrayEngine, check_store
from ...core.tiling import make_fragment_like_layout
from .builder import active, current
from ...tensor.dtypes import Int64
from . import numeric
from .values import TracedBool, TracedFloat, convert, wrap
from .traced_int import TracedInt, as_value

if TYPE_CHECKING:
    from ...core.composed import ComposedLayout
    from ...tensor.dtypes import DType

__all__ = ["note_write", "element_values", "traced_elements", "pointer_value", "element_ptr", "move",
           "make_fragment", "make_rmem_tensor", "make_fragment_like", "element_type", "load_element",
           "store_element", "load_bits", "store_bits", "pack", "unpack", "RegisterEngine"]



def pointer_value(ptr: Pointer | Any, what: str = "pointer", peer: bool = False) -> Any:
    """The MLIR value of a cute_py ``Pointer`` in the kernel being traced.

    Shared-memory pointers are static byte offsets into the kernel's dynamic shared memory;
    global-memory pointers carry the tagged address of a kernel argument (see ``args``).
    A traced pointer value (``__cute_value__``) passes through.
    """
    b = current()
    if hasattr(ptr, "__cute_value__"):
        return ptr.__cute_value__()
    if not isinstance(ptr, Pointer):
        raise TraceError(f"{what} must be a pointer, got {ptr!r}")
    if ptr.swizzle is not None:
        raise TraceError(f"{what} {ptr!r} carries a swizzle: its elements are read through a tensor "
                         f"(make_tensor(ptr, layout)), which applies it")
    address = ptr.address
    if address is None:  # a run-time element offset from a known base: base + offset * width / 8
        if ptr.base is None or ptr.dtype.width % 8:
            raise TraceError(f"{what} {ptr!r} has no known base address (only pointers derived from a "
                             f"shared-memory allocation or a kernel argument can be used in a kernel)")
        address = ptr.offset
        if ptr.memspace is not AddressSpace.smem and getattr(address, "width", 64) < 64:
            address = convert(Int64, address)  # global byte offsets in 64 bits (element offsets may be 32-bit)
        address = address * (ptr.dtype.width // 8)
        static = ptr.base
    else:
        static = 0
    if ptr.memspace is AddressSpace.dsmem and not peer:
        # its value is this CTA's offset; only the DSMEM store maps it to the peer (mapa) where it uses it
        raise TraceError(f"{what} {ptr!r} addresses a peer CTA's shared memory: only a CopyDsmemStoreOp copy "
                         f"(st.async) writes through it")
    if ptr.memspace in (AddressSpace.smem, AddressSpace.dsmem):  # a dsmem pointer: this CTA's offset (see peer)
        if ptr.address is None:
            return b.smem_ptr(as_value(address + static, 32))
        return b.smem_ptr(address)
    if ptr.memspace in (AddressSpace.gmem, AddressSpace.generic):
        base = b.gmem_base_of(static if ptr.address is None else address)
        if base is None:
            raise TraceError(f"{what} {ptr!r} does not come from a tensor argument of this kernel")
        param, offset = base
        if ptr.address is None:  # the run-time element offset, in bytes, on top of the static one
            offset = as_value(address + offset, 64)
        elif offset == 0:
            return param
        llvm = b.mlir.llvm
        with b.at_end():
            if type(offset) is int and -(1 << 31) <= offset < (1 << 31):  # a constant index of the GEP is 32-bit
                return llvm.GEPOp(param.type, param, [], [offset], b.int_type(8), 0).result
            if type(offset) is int:
                offset = b.const(offset, 64)
            return llvm.GEPOp(param.type, param, [offset], [-2147483648], b.int_type(8), 0).result
    raise TraceError(f"{what}: {ptr.memspace.name} pointers are not supported here")


def element_type(dtype: DType) -> Any:
    """The MLIR type of one element of ``dtype`` in memory: its register type (see ``numeric``), but a byte for
    ``Boolean`` (0 or 1)."""
    if dtype.kind == "bool":
        return current().int_type(8)
    return numeric.register_type(dtype)


def _is_float_type(dtype: DType) -> bool:
    return dtype.is_float and not numeric.is_f8(dtype)


def _bits_type(nbits):
    b = current()
    if nbits == 128:
        return b.ir.Type.parse("vector<4xi32>")
    return b.int_type(nbits)


def _check_access(ptr, nbytes, what):
    if not isinstance(ptr, Pointer) or ptr.memspace not in (AddressSpace.smem, AddressSpace.gmem):
        raise TraceError(f"{what}: loads and stores go to shared or global memory, got {ptr!r}")
    if ptr.alignment < nbytes:
        raise TraceError(f"{what}: a {nbytes}-byte access needs a {nbytes}-byte aligned address, but "
                         f"{ptr!r} is only known to be {ptr.alignment}-byte aligned")


def load_bits(ptr: Pointer, nbits: int, what: str = "load") -> Any:
    """The ``nbits`` (8..128, a power of two) bits at ``ptr`` (an MLIR iN or vector<4xi32> value)."""
    _check_access(ptr, nbits // 8, what)
    p = pointer_value(ptr, what)
    b = current()
    with b.at_end():
        return b.mlir.llvm.LoadOp(_bits_type(nbits), p, alignment=nbits // 8).result


def store_bits(ptr: Pointer, value: Any, nbits: int, what: str = "store") -> None:
    """Store the ``nbits``-bit MLIR value ``value`` at ``ptr``."""
    check_store(ptr, what)
    _check_access(ptr, nbits // 8, what)
    p = pointer_value(ptr, what)
    b = current()
    with b.at_end():
        b.mlir.llvm.StoreOp(value, p, alignment=nbits // 8)


def _wrap(value, dtype):
    """The traced value of the element ``value`` (its MLIR value as loaded) of ``dtype``."""
    if dtype.kind == "bool":  # a byte: any non-zero value is true
        b = current()
        zero = b.const(0, 8)
        with b.at_end():
            return TracedBool(b.mlir.arith.CmpIOp(b.mlir.arith.CmpIPredicate.ne, value, zero).result)
    return wrap(value, dtype)


def _unwrap(value, dtype, what):
    """The MLIR value of ``value`` as an element of ``dtype``: a traced float must have the element type, a traced
    integer or Boolean converts to an integer element type; Python numbers become constants."""
    b = current()
    if isinstance(value, Scalar):  # a typed constant (cute.Uint8(1), in the kernel or captured): its number, by
        if value.dtype is not dtype and (dtype.is_float or value.dtype.is_float or dtype.kind == "bool"):
            raise TraceError(f"{what}: the {value.dtype.name} value {value.value!r} cannot be stored as "  # the
                             f"{dtype.name} (convert it first: cute.{dtype.name}(...))")  # rules of traced values
        value = value.value
    if isinstance(value, (TracedInt, TracedFloat, TracedBool)):
        if value.dtype is dtype:
            v = value.ir
        elif dtype.is_float or value.dtype.is_float or dtype.kind == "bool":
            raise TraceError(f"{what}: the {value.dtype.name} value cannot be stored as {dtype.name} (convert it "
                             f"first: x.to(cute.{dtype.name}))")
        else:  # integers convert between widths, by the value's signedness
            v = value.to(dtype).ir
        if dtype.kind == "bool":
            with b.at_end():
                v = b.mlir.arith.ExtUIOp(b.int_type(8), v).result
        return v
    if dtype.is_float:
        if type(value) in (int, float):
            return numeric.constant(value, dtype)
        raise TraceError(f"{what}: a {dtype.name} element takes a float value, got {value!r}")
    if dtype.kind == "bool":
        if type(value) is bool or (type(value) is int and value in (0, 1)):
            return b.const(int(value), 8)
        raise TraceError(f"{what}: a Boolean element takes a bool, got {value!r}")
    if type(value) in (int, bool):
        lo, hi = (0, (1 << dtype.width) - 1) if not dtype.signed else (-(1 << (dtype.width - 1)),
                                                                      (1 << (dtype.width - 1)) - 1)
        if not lo <= value <= hi:
            raise TraceError(f"{what}: {value} does not fit in {dtype.name} ([{lo}, {hi}])")
        return numeric.constant(int(value), dtype)
    raise TraceError(f"{what}: a {dtype.name} element takes an integer value, got {value!r}")


def load_element(ptr: Pointer) -> TracedInt | TracedFloat:
    """The element of ``ptr.dtype`` at ``ptr``, as a traced value."""
    dtype = ptr.dtype
    if dtype.width % 8 or dtype.width > 64:
        raise TraceError(f"loading single {dtype.name} elements ({dtype.width} bits) is not supported")
    raw = load_bits(ptr, dtype.width, "tensor load")
    if _is_float_type(dtype):
        b = current()
        with b.at_end():
            raw = b.mlir.llvm.BitcastOp(element_type(dtype), raw).result
    return _wrap(raw, dtype)


def store_element(ptr: Pointer, value: TracedInt | TracedFloat | int | float) -> None:
    """Store ``value`` (a traced value or a Python number) as one ``ptr.dtype`` element at ``ptr``."""
    dtype = ptr.dtype
    if dtype.width % 8 or dtype.width > 64:
        raise TraceError(f"storing single {dtype.name} elements ({dtype.width} bits) is not supported")
    check_store(ptr, "a tensor store")
    v = _unwrap(value, dtype, "tensor store")
    _check_access(ptr, dtype.width // 8, "tensor store")
    p = pointer_value(ptr, "tensor store")
    b = current()
    with b.at_end():
        b.mlir.llvm.StoreOp(v, p, alignment=dtype.width // 8)


def pack(values: Iterable[TracedInt | TracedFloat | int | float], dtype: DType, nbits: int) -> Any:
    """The ``nbits``-bit MLIR value (as ``load_bits`` gives) holding ``values`` (elements of ``dtype``, first
    element in the lowest bits)."""
    elems = [_unwrap(v, dtype, "copy (store)") for v in values]
    if len(elems) == 1:
        return _to_bits(elems[0], dtype, nbits)
    b = current()
    llvm = b.mlir.llvm
    vec_t = b.ir.Type.parse(f"vector<{len(elems)}x{element_type(dtype)}>")
    with b.at_end():
        vec = llvm.UndefOp(vec_t).result
        for k, e in enumerate(elems):
            vec = llvm.InsertElementOp(vec, e, b.const(k, 32)).result
        return llvm.BitcastOp(_bits_type(nbits), vec).result


def unpack(bits: Any, dtype: DType, count: int) -> list[TracedInt | TracedFloat]:
    """The ``count`` traced elements of ``dtype`` held by the MLIR value ``bits`` (the inverse of ``pack``)."""
    b = current()
    llvm = b.mlir.llvm
    if count == 1:
        with b.at_end():
            v = bits if not _is_float_type(dtype) else llvm.BitcastOp(element_type(dtype), bits).result
        return [_wrap(v, dtype)]
    vec_t = b.ir.Type.parse(f"vector<{count}x{element_type(dtype)}>")
    with b.at_end():
        vec = llvm.BitcastOp(vec_t, bits).result
        return [_wrap(llvm.ExtractElementOp(vec, b.const(k, 32)).result, dtype) for k in range(count)]


def element_values(values: Iterable[TracedInt | TracedFloat | int | float], dtype: DType, what: str) -> list[Any]:
    """The MLIR values of ``values`` as elements of ``dtype`` in registers (Python numbers become constants)."""
    return [_unwrap(v, dtype, what) for v in values]


def traced_elements(raws: Iterable[Any], dtype: DType) -> list[TracedInt | TracedFloat]:
    """The traced values of the MLIR values ``raws``, elements of ``dtype`` in registers (``element_values``'s
    inverse)."""
    return [_wrap(v, dtype) for v in raws]


def _to_bits(value, dtype, nbits):
    if not _is_float_type(dtype):
        return value
    b = current()
    with b.at_end():
        return b.mlir.llvm.BitcastOp(_bits_type(nbits), value).result


# -- register fragments ---------------------------------------------------------------------------


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


def element_ptr(t: Tensor, i: Int) -> Pointer:
    """The pointer to flat element ``i`` of a memory tensor (through its swizzle, if any)."""
    return t.engine + element_offset(t, i)


def move(src: Tensor, dst: Tensor, first: int, vector: int, nbits: int) -> None:
    """Plain loads and stores of elements ``first .. first + vector`` of ``src`` into ``dst`` (the emission of
    ``CopyUniversalOp``): one vector access between registers and memory where ``nbits`` allows, else element by
    element."""
    s_reg, d_reg = isinstance(src.engine, ArrayEngine), isinstance(dst.engine, ArrayEngine)
    dtype = src.element_type
    if s_reg != d_reg and nbits in (8, 16, 32, 64, 128) and dtype.width % 8 == 0:
        # registers <-> memory: one vector access, the elements packed into / unpacked from it
        if s_reg:
            values = [src.engine.read(src.layout(i)) for i in range(first, first + vector)]
            store_bits(element_ptr(dst, first), pack(values, dst.element_type, nbits), nbits, "copy (store)")
        else:
            bits = load_bits(element_ptr(src, first), nbits, "copy (load)")
            for i, v in zip(range(first, first + vector), unpack(bits, dtype, vector)):
                dst.engine.write(dst.layout(i), v)
        return
    if s_reg or d_reg or nbits not in (8, 16, 32, 64, 128):
        for i in range(first, first + vector):
            if s_reg:
                value = src.engine.read(src.layout(i))
            else:
                value = load_element(element_ptr(src, i))
            if d_reg:
                dst.engine.write(dst.layout(i), value)
            else:
                store_element(element_ptr(dst, i), value)
        return
    bits = load_bits(element_ptr(src, first), nbits, "copy (load)")
    store_bits(element_ptr(dst, first), bits, nbits, "copy (store)")

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
