"""Loads and stores in a kernel: tensor elements, and vectors of bits.

Inside a ``@cute_py.kernel``, a tensor over a shared- or global-memory pointer reads and
writes its elements::

    v = s_tile[i, j]          # a load: a traced value of the tensor's element type
    d_tile[j, i] = v          # a store: a float must have the element type, an integer converts

Coordinates may be traced; swizzled (composed) layouts apply their swizzle. Register fragments
live in :mod:`.registers`. ``load_bits``/``store_bits`` move 8-128 bits at an address (one vector
access), which the tile copies use; ``pack``/``unpack`` turn elements into such bits and back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...tensor.dtypes import Scalar
from ...core.typing import Int
from ...errors import TraceError
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.offsets import element_offset
from ...tensor.tensor import Tensor
from ...tensor.engines import ArrayEngine, check_store
from .builder import current
from ...tensor.dtypes import Int64
from . import numeric
from .values import TracedBool, TracedFloat, convert, wrap
from .traced_int import TracedInt, as_value

if TYPE_CHECKING:
    from ...tensor.dtypes import DType

__all__ = ["element_values", "traced_elements", "pointer_value", "element_ptr", "move", "element_type",
           "load_element", "store_element", "load_bits", "store_bits", "pack", "unpack"]



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


# -- copies between memory and registers ----------------------------------------------------------


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
