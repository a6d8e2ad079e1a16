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
from ..errors import CuteTypeError, CuteValueError
from ..core.int_tuple import DynamicInt, index_or_none, as_index, short_repr, fmt
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

    __slots__ = ("dtype", "memspace", "alignment", "address", "offset", "base", "store_guard", "peer", "owner")

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
                        ("peer", None), ("owner", None)):
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

    def byte_offset(self) -> Int:
        """The offset from the base in bytes (``offset * width / 8``)."""
        return self.offset * self.dtype.width // 8

    def __eq__(self, other: object) -> bool:
        return type(other) is Pointer and all(
            getattr(self, k) == getattr(other, k) for k in ("dtype", "memspace", "alignment", "address")
        ) and _same(self.offset, other.offset) and _same(self.peer, other.peer)

    def __hash__(self) -> int:
        return hash((self.dtype.name, self.memspace, self.alignment, self.address))

    def __repr__(self):
        where = "?" if self.address is None else f"{self.address:#x}"
        off = "" if (type(self.offset) is int and self.offset == 0) else f"+{fmt(self.offset)}"
        peer = "" if self.peer is None else f", cta={self.peer if type(self.peer) is int else '?'}"
        return f"{self.memspace.name}_ptr[{self.dtype.width}b](align={self.alignment}, {where}{off}{peer})"


def _same(a, b):
    return a is b or (type(a) is int and type(b) is int and a == b)


def _with(ptr, align, address, offset):
    p = object.__new__(Pointer)
    for name, v in (("dtype", ptr.dtype), ("memspace", ptr.memspace), ("alignment", align),
                    ("address", address), ("offset", offset), ("base", ptr.base), ("store_guard", ptr.store_guard),
                    ("peer", ptr.peer), ("owner", ptr.owner)):
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

    Deliberately unlike the DSL, a pointer carries no swizzle here: ``swizzle_`` must be ``None`` or an identity
    swizzle (``S<0,m,s>``), anything else raises ``CuteValueError`` (a swizzled shared-memory tensor is a tensor with
    a swizzled layout: ``MemRange.get_tensor(layout, swizzle=...)``, or ``make_tensor`` with
    ``make_composed_layout(swizzle, 0, layout)``).
    """
    if not isinstance(ptr, Pointer):
        raise CuteTypeError(f"recast_ptr needs a Pointer, got {short_repr(ptr)} ({type(ptr).__name__})")
    if swizzle_ is not None:
        if not isinstance(swizzle_, Swizzle):
            raise CuteTypeError(f"recast_ptr's swizzle_ must be a Swizzle or None, got {short_repr(swizzle_)}")
        if swizzle_.bits:
            raise CuteValueError(f"recast_ptr: a cute_py pointer carries no swizzle ({swizzle_} given for {ptr!r}); "
                                 f"swizzle the tensor's layout instead (MemRange.get_tensor(layout, swizzle=...) or "
                                 f"make_tensor(ptr, make_composed_layout(swizzle, 0, layout)))")
    if dtype is None:
        return ptr
    dtype = dtype_of(dtype)
    if dtype is ptr.dtype:
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
                    ("store_guard", ptr.store_guard), ("peer", ptr.peer), ("owner", ptr.owner)):
        object.__setattr__(p, name, v)
    return p
