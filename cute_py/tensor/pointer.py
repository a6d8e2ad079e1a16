"""Typed pointers with a memory space and an alignment (the engines of device tensors).

A :class:`Pointer` names an element type, a memory space (global, shared,
shared-cluster, register) and a byte alignment; its address may be unknown (a
*fake* pointer, for building atoms and compiling kernels without data).  Adding
an element offset keeps track of the alignment that is still guaranteed.
"""

from __future__ import annotations

import enum
import math
from typing import Any

from .dtypes import DType, dtype_of
from ..errors import CuteTypeError, CuteValueError, StaticValueRequired
from ..core.leaves import divisor_of, DynamicInt
from ..core.normalise import as_index, index_or_none
from ..core.notation import fmt, short_repr
from ..core.swizzle import Swizzle
from ..core.typing import Int

_ADDRESS_LIMIT = 1 << 64

__all__ = ["AddressSpace", "Pointer", "make_ptr", "recast_ptr"]


class AddressSpace(enum.Enum):
    """Memory spaces, with their PTX state-space names."""

    generic = "generic"
    gmem = "global"
    smem = "shared::cta"
    dsmem = "shared::cluster"
    rmem = "register"


class Pointer:
    """``dtype*`` in ``memspace``, aligned to ``alignment`` bytes, at ``address`` (``None``: unknown).

    ``offset`` counts the elements added since the pointer was made, and ``base`` is the address
    at offset 0: after a run-time offset ``address`` is unknown, but ``base + offset`` still
    locates the element (a kernel computes it).

    ``store_guard`` is ``None``, or why stores through this pointer are refused (a tensor recast to wider
    elements that only partly cover the original's: a store would overwrite elements outside it); every
    pointer derived from it keeps it.

    ``peer`` is, for a ``dsmem`` pointer (``arch.map_dsmem_ptr``), the rank in the cluster of the CTA whose
    shared memory it addresses (at this CTA's offsets); ``None`` otherwise.

    ``owner`` is the object that owns the memory at ``address`` (the array a pointer of
    :func:`cute_py.runtime.from_dlpack` points into), kept alive by the pointer and every pointer derived from
    it; ``None`` when nothing is owned.
    """

    __slots__ = ("dtype", "memspace", "alignment", "address", "offset", "base", "store_guard", "peer", "owner",
                 "swizzle")

    def __init__(self, dtype: DType | str | Any, memspace: AddressSpace = AddressSpace.gmem,
                 alignment: int | None = None, address: int | None = None, offset: Int = 0,
                 base: Int | None = None) -> None:
        dtype = dtype_of(dtype)
        if not isinstance(memspace, AddressSpace):
            raise CuteTypeError(f"memspace must be an AddressSpace, got {memspace!r}")
        min_align = max(1, dtype.width // 8)
        if alignment is None:
            alignment = min_align
        alignment = as_index(alignment, "alignment")
        if alignment <= 0 or alignment & (alignment - 1) or alignment >= _ADDRESS_LIMIT:
            raise CuteValueError(f"alignment must be a power of two in bytes (below 2**64), got {alignment!r}")
        if alignment < min_align:
            raise CuteValueError(f"alignment {alignment} is below the {min_align}-byte size of {dtype.name}")
        if address is not None:
            address = as_index(address, "address")
            if not 0 <= address < _ADDRESS_LIMIT:
                raise CuteValueError(f"address must be a non-negative 64-bit int, got {address!r}")
            if address % alignment:
                raise CuteValueError(f"address {address:#x} is not {alignment}-byte aligned as claimed")
        if not (type(offset) is int or isinstance(offset, DynamicInt)):
            offset = as_index(offset, "pointer offset")
        if base is not None and not (type(base) is int or isinstance(base, DynamicInt)):
            base = as_index(base, "pointer base")
        if base is None and address is not None and type(offset) is int and (offset * dtype.width) % 8 == 0:
            base = address - offset * dtype.width // 8
        for name, v in (("dtype", dtype), ("memspace", memspace), ("alignment", alignment),
                        ("address", address), ("offset", offset), ("base", base), ("store_guard", None),
                        ("peer", None), ("owner", None), ("swizzle", None)):
            object.__setattr__(self, name, v)

    def guarded(self, reason: str) -> Pointer:
        """This pointer, refusing stores for ``reason`` (see the class)."""
        p = _with(self, self.alignment, self.address, self.offset)
        object.__setattr__(p, "store_guard", reason)
        return p

    def owned_by(self, owner: object) -> Pointer:
        """This pointer, keeping ``owner`` (the object that owns its memory) alive (see the class)."""
        p = _with(self, self.alignment, self.address, self.offset)
        object.__setattr__(p, "owner", owner)
        return p

    def at_peer(self, rank: Int) -> Pointer:
        """This shared-memory pointer's offset in the shared memory of CTA ``rank`` of the cluster (a ``dsmem``
        pointer, see the class)."""
        if self.memspace not in (AddressSpace.smem, AddressSpace.dsmem):
            raise CuteValueError(f"only a shared-memory pointer maps to a peer CTA, got {self!r}")
        p = _with(self, self.alignment, self.address, self.offset)
        object.__setattr__(p, "memspace", AddressSpace.dsmem)
        object.__setattr__(p, "peer", rank)
        return p

    def __setattr__(self, name, value):
        raise AttributeError("Pointer is immutable")

    def __add__(self, n):
        """The pointer ``n`` elements further (alignment shrinks to what the offset keeps)."""
        if type(n) is not int and not isinstance(n, DynamicInt):
            v = None if isinstance(n, (bool, float)) else index_or_none(n)
            if v is None:
                raise CuteTypeError(f"pointers advance by an int number of elements, got {short_repr(n)} ({type(n).__name__})")
            n = v
        if type(n) is int and n == 0:
            return self
        if type(n) is int:
            bits = n * self.dtype.width
            align = math.gcd(self.alignment, abs(bits) // 8) if bits % 8 == 0 else 1
            address = None if self.address is None else self.address + bits // 8
            if address is not None and not 0 <= address < _ADDRESS_LIMIT:
                raise CuteValueError(f"the pointer {self!r} advanced by {n} elements leaves the 64-bit address space")
        else:  # a run-time offset: what is known to divide it keeps some alignment
            div = getattr(n, "known_divisor", 1)
            bits = div * self.dtype.width
            align = math.gcd(self.alignment, bits // 8) if bits % 8 == 0 else 1
            address = None
        return _with(self, max(align, 1), address, self.offset + n)

    __radd__ = __add__

    def at_offset(self, offset: Int) -> Pointer:
        """This pointer's base at element ``offset`` instead of its own (``offset`` static or run-time): the
        alignment is what this pointer's alignment and the distance between the two offsets imply."""
        if type(offset) is int and type(self.offset) is int:
            return self + (offset - self.offset)
        d = math.gcd(divisor_of(offset), divisor_of(self.offset)) * self.dtype.width
        align = math.gcd(self.alignment, d // 8) if d % 8 == 0 else 1
        return _with(self, max(align, 1), None, offset)

    def align(self, min_align: int, *, loc: Any = None, ip: Any = None) -> Pointer:
        """This pointer rounded up to the next ``min_align``-byte boundary (itself when it is one), claiming that
        alignment: the CuTe DSL's ``Pointer.align``. A pointer already known to be ``min_align``-aligned is
        returned as it is; one of known address is rounded on the host; in a kernel the address is rounded where
        it runs (a tensor made over the result starts at the boundary, so a view that was not aligned moves, as
        in the DSL). ``min_align``: a power of two no smaller than the element. ``CuteValueError`` for a bad
        ``min_align``; ``StaticValueRequired`` on the host for a pointer of unknown address."""
        n = as_index(min_align, "min_align")
        if n <= 0 or n & (n - 1) or n >= _ADDRESS_LIMIT:
            raise CuteValueError(f"align: min_align must be a power of two in bytes, got {min_align!r}")
        size = max(1, self.dtype.width // 8)
        if n < size or self.dtype.width % 8:
            raise CuteValueError(f"align: min_align {n} is below the {size}-byte elements of {self!r}")
        if n <= self.alignment:
            return self
        if self.address is not None:
            p = self + ((-self.address) % n) // size
            return _with(p, n, p.address, p.offset)
        from .. import device

        ctx = device.active()
        if ctx is None or self.memspace not in (AddressSpace.gmem, AddressSpace.generic):
            raise StaticValueRequired(f"align({n}): the address of {self!r} is not known here (only in a kernel, "
                                      f"for a global-memory pointer)")
        address = ctx.pointer_address(self)
        delta = (n - (address & (n - 1))) & (n - 1)
        p = self + delta // size
        return _with(p, n, None, p.offset)

    def byte_offset(self) -> Int:
        """The offset from the base in bytes (``offset * width / 8``)."""
        return self.offset * self.dtype.width // 8

    def __eq__(self, other: object) -> bool:
        return type(other) is Pointer and all(
            getattr(self, k) == getattr(other, k) for k in ("dtype", "memspace", "alignment", "address")
        ) and _same(self.offset, other.offset) and _same(self.peer, other.peer) and self.swizzle == other.swizzle

    def __hash__(self) -> int:
        return hash((self.dtype.name, self.memspace, self.alignment, self.address))

    def __repr__(self):
        where = "?" if self.address is None else f"{self.address:#x}"
        off = "" if (type(self.offset) is int and self.offset == 0) else f"+{fmt(self.offset)}"
        peer = "" if self.peer is None else f", cta={self.peer if type(self.peer) is int else '?'}"
        sw = "" if self.swizzle is None else f", {self.swizzle}"
        return f"{self.memspace.name}_ptr[{self.dtype.width}b](align={self.alignment}, {where}{off}{peer}{sw})"

    def without_swizzle(self) -> Pointer:
        """This pointer with no swizzle (see ``recast_ptr``)."""
        if self.swizzle is None:
            return self
        p = _with(self, self.alignment, self.address, self.offset)
        object.__setattr__(p, "swizzle", None)
        return p


def _same(a, b):
    return a is b or (type(a) is int and type(b) is int and a == b)


def with_dtype(ptr: Pointer, dtype: DType) -> Pointer:
    """``ptr`` reading its bytes as ``dtype``, an element type of the same width (everything else kept)."""
    if dtype.width != ptr.dtype.width:
        raise CuteValueError(f"with_dtype keeps the element width: {ptr.dtype.name} is {ptr.dtype.width} bits, "
                             f"{dtype.name} {dtype.width}")
    p = _with(ptr, ptr.alignment, ptr.address, ptr.offset)
    object.__setattr__(p, "dtype", dtype)
    return p


def _with(ptr, align, address, offset):
    p = object.__new__(Pointer)
    for name, v in (("dtype", ptr.dtype), ("memspace", ptr.memspace), ("alignment", align),
                    ("address", address), ("offset", offset), ("base", ptr.base), ("store_guard", ptr.store_guard),
                    ("peer", ptr.peer), ("owner", ptr.owner), ("swizzle", ptr.swizzle)):
        object.__setattr__(p, name, v)
    return p


def make_ptr(dtype: DType | str | Any, address: int | None = None, memspace: AddressSpace = AddressSpace.gmem,
             assumed_align: int | None = None) -> Pointer:
    """A :class:`Pointer` (``address=None`` for a pointer known only by its properties)."""
    if not isinstance(dtype, DType):
        dtype = dtype_of(dtype)
    if not isinstance(memspace, AddressSpace):
        raise CuteTypeError(f"memspace must be an AddressSpace, got {short_repr(memspace)}")
    return Pointer(dtype, memspace, assumed_align, address)


def recast_ptr(ptr: Pointer, swizzle_: Any = None, dtype: DType | str | Any | None = None) -> Pointer:
    """``ptr`` seen as a pointer to ``dtype`` elements (the CuTe DSL's ``recast_ptr``): the same byte address,
    memory space and alignment; ``dtype=None`` keeps the element type.

    @post recast_ptr(p, dtype=t) addresses byte ``base + offset * width / 8`` of ``p``, and its alignment is ``p``'s.

    Raises ``CuteValueError`` when ``ptr`` is not aligned to a whole ``dtype`` element, or when a run-time element
    offset of ``ptr`` is not known to be a whole number of ``dtype`` elements.

    ``swizzle_``: a swizzle of byte addresses the pointer carries (CuTe's ``swizzle_ptr``, the DSL's swizzled
    pointers; shared memory only): ``make_tensor(ptr, layout)`` over it is the tensor of the composed layout
    ``swizzle o smem_ptr[width b] o layout`` (a byte swizzle, as ``MemRange.get_tensor(layout, swizzle=...)``
    makes), and a recast keeps it (it acts on bytes, whatever the element). An identity swizzle (``S<0,m,s>``)
    is none; a pointer that carries one swizzle takes no other (``CuteValueError``).
    """
    if not isinstance(ptr, Pointer):
        raise CuteTypeError(f"recast_ptr needs a Pointer, got {short_repr(ptr)} ({type(ptr).__name__})")
    swizzled = None
    if swizzle_ is not None:
        if not isinstance(swizzle_, Swizzle):
            raise CuteTypeError(f"recast_ptr's swizzle_ must be a Swizzle or None, got {short_repr(swizzle_)}")
        if swizzle_.bits:
            if ptr.memspace not in (AddressSpace.smem, AddressSpace.dsmem):
                raise CuteValueError(f"recast_ptr: a swizzle ({swizzle_}) goes with a shared-memory pointer, got "
                                     f"{ptr!r}")
            if ptr.swizzle is not None and ptr.swizzle != swizzle_:
                raise CuteValueError(f"recast_ptr: {ptr!r} carries {ptr.swizzle} already; it takes no other "
                                     f"swizzle ({swizzle_})")
            swizzled = swizzle_
    if dtype is None and swizzled is None:
        return ptr
    dtype = ptr.dtype if dtype is None else dtype_of(dtype)
    if dtype is ptr.dtype and (swizzled is None or swizzled == ptr.swizzle):
        return ptr
    need = max(1, dtype.width // 8)
    if ptr.alignment < need:
        raise CuteValueError(f"recast_ptr: {ptr!r} is {ptr.alignment}-byte aligned, a {dtype.name} pointer needs "
                             f"{need}-byte alignment")
    old, new = ptr.dtype.width, dtype.width
    offset = ptr.offset
    if type(offset) is int:
        bits = offset * old
        if bits % new:
            raise CuteValueError(f"recast_ptr: {ptr!r} is {bits} bits past its base, not a whole number of "
                                 f"{new}-bit {dtype.name} elements")
        offset = bits // new
    elif old % new == 0:
        offset = offset * (old // new)
    elif (getattr(offset, "known_divisor", 1) * old) % new == 0:
        offset = offset // (new // old)
    else:
        raise CuteValueError(f"recast_ptr: the run-time offset of {ptr!r} ({fmt(offset)} {old}-bit elements) is not "
                             f"known to be a whole number of {new}-bit {dtype.name} elements")
    p = object.__new__(Pointer)
    for name, v in (("dtype", dtype), ("memspace", ptr.memspace), ("alignment", ptr.alignment),
                    ("address", ptr.address), ("offset", offset), ("base", ptr.base),
                    ("store_guard", ptr.store_guard), ("peer", ptr.peer), ("owner", ptr.owner),
                    ("swizzle", swizzled if swizzled is not None else ptr.swizzle)):
        object.__setattr__(p, name, v)
    return p
