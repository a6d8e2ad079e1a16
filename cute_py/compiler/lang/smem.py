"""Shared-memory allocation inside a kernel: tensors, arrays, structs and mbarriers at static offsets.

All allocations of a kernel share one dynamic shared-memory region whose base is aligned
to 1024 bytes (the 128B-swizzle repeat). An allocation's address is a static byte offset
into it, kept as the ``address`` of a shared-memory :class:`~cute_py.tensor.pointer.Pointer`, so
tensors over it slice and partition with static offsets. A tensor's alignment defaults to
what a TMA copy of its layout needs (DESIGN §4): 128 B, or 256/512/1024 B for a 32B/64B/128B
swizzle (at least the repeat of any swizzle, capped at 1024: ``swizzle_alignment``). The kernel is
launched with ``total`` bytes of dynamic shared memory; more than ``MAX_SMEM_BYTES`` (227 KB on sm_90) is an error naming the sizes.

The CuTe DSL's ``cutlass.utils.SmemAllocator`` API: ``allocate(bytes | numeric type | struct, byte_alignment)``,
``allocate_array(type, n)``, ``allocate_tensor(type, layout, byte_alignment, swizzle)``; and cute_py's
``allocate_mbarrier(count)``. Where it differs from the DSL: ``allocate(n)`` of raw bytes is 128-byte aligned
unless told otherwise (the DSL: 1); ``allocate_tensor`` aligns to what its layout needs for TMA and its swizzle
(``byte_alignment`` raises it further; cute_py's own ``alignment=`` keyword is exact and may not be below the
swizzle's need); a tensor's storage covers every byte its (swizzled) layout reaches; a layout that reaches below
its storage (negative strides) is an error.

Each allocation is recorded with its kind, so that :func:`check_mbarrier_pointer` rejects an mbarrier
operation on a tensor's data, on a struct field or array of an element type other than Int64/Uint64, or
on an address that is not 8-byte aligned.
"""

from __future__ import annotations

from typing import Any

from ...tensor.dtypes import DType, Int64, Uint64, dtype_of
from ...errors import CuteError, CuteValueError
from ...core.composed import ComposedLayout, SmemPtrFlag
from ...core.int_tuple import as_index, short_repr
from ...core.layout import Layout, make_layout
from ...core.swizzle import Swizzle
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.tensor import Tensor
from .builder import SMEM_BASE_ALIGN, current
from .smem_struct import layout_footprint, struct, swizzle_span
from ..specs.limits import MAX_SMEM_BYTES
from ...errors import TraceError

__all__ = ["SmemAllocator", "smem_alignment_of", "check_mbarrier_pointer", "MAX_SMEM_BYTES", "MBARRIER_BYTES"]

MBARRIER_BYTES = 8  # an mbarrier is one 8-byte aligned 64-bit word
_MBARRIER_TYPES = (Int64, Uint64)  # what struct fields and arrays that may hold mbarriers are made of
_NOT_MBARRIER = ("tensor", "array", "field")  # kinds of allocation an mbarrier may not be placed in


def smem_alignment_of(layout: Layout | ComposedLayout, dtype: DType) -> int:
    """The byte alignment a TMA copy of a tile with ``layout`` (elements of ``dtype``) needs."""
    from ...nvgpu.tma.desc import tma_swizzle_of

    return max(128, tma_swizzle_of(layout, dtype).smem_alignment)


class _Region:
    """The byte counter of one kernel's shared memory, and its allocations ``(start, end, kind, what)``."""

    __slots__ = ("total", "allocations")

    def __init__(self):
        self.total = 0
        self.allocations = []

    def take(self, nbytes, alignment, kind, what=None):
        start = -(-self.total // alignment) * alignment
        end = start + nbytes
        if end > MAX_SMEM_BYTES:
            what = what or f"{nbytes} bytes"
            raise TraceError(f"shared memory overflow: allocating {what} at offset {start} (aligned to {alignment}) "
                             f"needs {end} bytes, more than the {MAX_SMEM_BYTES} a block may use on sm_90")
        self.total = end
        self.allocations.append((start, end, kind, what))
        return start

    def allocation_at(self, address):
        """``(start, end, kind, what)`` of the allocation holding byte ``address``, or ``None``."""
        for a in self.allocations:
            if a[0] <= address < a[1]:
                return a
        return None


def _struct_parts(st, start, prefix):
    """``(start, end, kind, what)`` of every non-empty scalar or range field of the struct ``st`` at ``start``."""
    for f in st.fields:
        name = f"{prefix}.{f.name}"
        if f.kind == "struct":
            yield from _struct_parts(f.struct, start + f.offset, name)
        elif f.size:
            kind = "bytes" if f.dtype in _MBARRIER_TYPES else "field"
            what = f"the struct field {name} ({f.dtype.name}" + (f" x {f.count})" if f.kind == "range" else ")")
            yield start + f.offset, start + f.offset + f.size, kind, what


def _traced(fn):
    """Raise the CuteErrors of ``fn`` as TraceErrors (inside a kernel they point at the user's line)."""
    try:
        return fn()
    except TraceError:
        raise
    except CuteError as e:
        raise TraceError(str(e)) from None


# compute capability -> KB of shared memory a block may use (the multiprocessor's capacity less 1 KB)
_SMEM_KB = {"sm_80": 163, "sm_86": 99, "sm_87": 163, "sm_89": 99, "sm_90": 227, "sm_100": 227, "sm_101": 227,
            "sm_103": 227, "sm_110": 227, "sm_120": 99, "sm_121": 99}


class SmemAllocator:
    """Allocates the current kernel's shared memory (every allocator of a kernel shares one region); see the
    module for the API and where it differs from the DSL's."""

    def __init__(self) -> None:
        b = current()
        region = getattr(b, "smem_region", None)
        if region is None:
            region = b.smem_region = _Region()
        self._region = region

    @staticmethod
    def capacity_in_bytes(compute_capability: str | None = None) -> int:
        """The shared memory one block may use on ``compute_capability`` (``"sm_80"``...; ``None``: sm_90, the
        target cute_py compiles for): the device's per-multiprocessor capacity less the 1 KB the system keeps
        (227 KB on sm_90 and sm_100, 163 KB on sm_80, 99 KB on sm_86 and sm_89). An Ampere kernel that sizes its
        stages for sm_80 so fits on the Hopper it runs on here. ``CuteValueError`` for an unknown name."""
        if compute_capability is None:
            return MAX_SMEM_BYTES
        cap = _SMEM_KB.get(compute_capability[:-1] if isinstance(compute_capability, str) and
                           compute_capability.endswith("a") else compute_capability)
        if cap is None:
            raise CuteValueError(f"no shared-memory capacity known for compute capability "
                                 f"{short_repr(compute_capability)} (known: {', '.join(_SMEM_KB)})")
        return cap * 1024

    @property
    def total(self) -> int:
        """Bytes of dynamic shared memory the kernel uses so far."""
        return self._region.total

    def allocate(self, size_or_type: int | DType | Any, byte_alignment: int | None = None, *,
                 alignment: int | None = None) -> Pointer | Any:
        """Shared memory for ``size_or_type``:

        - an int: a ``Pointer`` (Uint8) to that many bytes (``> 0``), aligned to ``byte_alignment`` (or
          ``alignment``; default 128);
        - a numeric type: a pointer to one element, aligned to at least its size;
        - a ``@cute.struct`` class: an instance of it (its fields as attributes), aligned to at least the struct's
          alignment.
        """
        align = _one_alignment(byte_alignment, alignment)
        if isinstance(size_or_type, struct):
            st = size_or_type
            align = max(align or 1, st.__alignof__())
            _check_alignment(align)
            if st.size_in_bytes() == 0:
                raise TraceError(f"{st.__name__} has no bytes to allocate")
            start = self._region.take(st.size_in_bytes(), align, "struct",
                                      f"{st.__name__} ({st.size_in_bytes()} bytes)")
            self._region.allocations.pop()
            self._region.allocations.extend(_struct_parts(st, start, st.__name__[len("cute.struct::"):]))
            return _traced(lambda: st(Pointer("Uint8", AddressSpace.smem, align, start)))
        if isinstance(size_or_type, DType):
            dt = size_or_type
            align = max(align or 1, max(1, dt.width // 8))
            _check_alignment(align)
            kind = "bytes" if dt in _MBARRIER_TYPES else "array"
            start = self._region.take(max(1, dt.width // 8), align, kind, f"one {dt.name}")
            return Pointer(dt, AddressSpace.smem, align, start)
        nbytes = size_or_type
        if type(nbytes) is not int or nbytes <= 0:
            raise TraceError(f"allocate needs a positive static byte count, a numeric type or a @cute.struct class, "
                             f"got {short_repr(nbytes)}")
        align = 128 if align is None else align
        _check_alignment(align)
        return Pointer("Uint8", AddressSpace.smem, align, self._region.take(nbytes, align, "bytes"))

    def allocate_array(self, element_type: DType, num_elems: int = 1, *, byte_alignment: int = 1) -> Pointer:
        """A ``Pointer`` to ``num_elems`` (static, ``>= 1``) consecutive ``element_type`` elements, aligned to at
        least ``byte_alignment`` and the element size."""
        if not isinstance(element_type, DType):
            raise TraceError(f"allocate_array needs a numeric type, got {short_repr(element_type)}")
        if type(num_elems) is bool or not isinstance(num_elems, int):
            raise TraceError(f"allocate_array needs a static int element count, got {short_repr(num_elems)}")
        if num_elems < 1:
            raise TraceError(f"allocate_array needs at least 1 element, got {num_elems}")
        align = max(_one_alignment(byte_alignment, None), max(1, element_type.width // 8))
        _check_alignment(align)
        kind = "bytes" if element_type in _MBARRIER_TYPES else "array"
        nbytes = -(-num_elems * element_type.width // 8)
        start = self._region.take(nbytes, align, kind, f"an array of {num_elems} {element_type.name}")
        return Pointer(element_type, AddressSpace.smem, align, start)

    def allocate_tensor(self, element_type: DType | str | Any, layout: Layout | ComposedLayout | int,
                        byte_alignment: int | None = None, swizzle: Swizzle | None = None, *,
                        alignment: int | None = None) -> Tensor:
        """A shared-memory tensor of ``element_type`` with ``layout`` (an int ``n`` is ``n:1``; swizzled layouts
        allowed).

        ``swizzle`` (with a plain layout) acts on byte addresses, as the DSL's swizzled pointer: the tensor's layout
        is ``swizzle o smem_ptr[width b] o layout``. The storage covers every byte the layout reaches and is
        aligned to the TMA alignment of the layout's swizzle and the swizzle's repeat, raised to ``byte_alignment``;
        ``alignment=`` sets it exactly, and may not be below what a swizzled layout needs.
        """
        if byte_alignment is not None and alignment is not None:
            raise TraceError(f"allocate_tensor takes byte_alignment or alignment, not both "
                             f"({byte_alignment}, {alignment})")
        dtype = _traced(lambda: dtype_of(element_type))
        if type(layout) is int:
            layout = make_layout(layout)
        if swizzle is not None:
            if not isinstance(swizzle, Swizzle):
                raise TraceError(f"allocate_tensor's swizzle must be a Swizzle, got {short_repr(swizzle)}")
            if type(layout) is not Layout:
                raise TraceError(f"allocate_tensor: a swizzle goes with a plain layout, got {layout} and {swizzle}")
            if swizzle.bits:
                layout = ComposedLayout(swizzle, SmemPtrFlag(dtype.width), layout)
        if type(layout) is not Layout and not isinstance(layout, ComposedLayout):
            raise TraceError(f"allocate_tensor needs a Layout, a ComposedLayout or an int, got {short_repr(layout)}")
        _, nbytes = _traced(lambda: layout_footprint(layout, dtype))
        span = _traced(lambda: swizzle_span(layout, dtype))
        try:
            need = smem_alignment_of(layout, dtype)
        except CuteValueError as e:  # not a TMA swizzle: only the element alignment is needed
            need = max(16, dtype.width // 8)
            del e
        need = max(need, span)
        if alignment is None:
            alignment = max(need, _one_alignment(byte_alignment, None) or 1)
        _check_alignment(alignment)
        if alignment < span or (getattr(layout, "inner", None) is not None and alignment < need):
            raise TraceError(f"the swizzled layout {layout} needs {need}-byte aligned shared memory, "
                             f"got alignment={alignment}")
        start = self._region.take(max(1, nbytes), alignment, "tensor", f"a tensor {layout} of {dtype.name} "
                                                                         f"({max(1, nbytes)} bytes)")
        return Tensor(Pointer(dtype, AddressSpace.smem, alignment, start), layout)

    def allocate_mbarrier(self, count: int = 1) -> Pointer:
        """A shared-memory ``Pointer`` (Int64) to ``count`` consecutive 8-byte mbarriers."""
        if type(count) is not int or count <= 0:
            raise TraceError(f"allocate_mbarrier needs a positive static count, got {count!r}")
        start = self._region.take(MBARRIER_BYTES * count, MBARRIER_BYTES, "mbarrier", f"{count} mbarriers")
        return Pointer("Int64", AddressSpace.smem, MBARRIER_BYTES, start)


def _one_alignment(byte_alignment, alignment):
    if byte_alignment is not None and alignment is not None:
        raise TraceError(f"give byte_alignment or alignment, not both ({byte_alignment}, {alignment})")
    a = byte_alignment if alignment is None else alignment
    if a is None:
        return None
    if type(a) is bool:
        raise TraceError(f"shared-memory alignment must be an int, got {a!r}")
    try:
        return as_index(a, "shared-memory alignment")
    except CuteError as e:
        raise TraceError(str(e)) from None


def _check_alignment(a):
    if type(a) is not int or a <= 0 or a & (a - 1) or a > SMEM_BASE_ALIGN:
        raise TraceError(f"shared-memory alignment must be a power of two up to {SMEM_BASE_ALIGN}, got {a!r}")


def check_mbarrier_pointer(ptr: object, what: str, peer: bool = False) -> None:
    """Raise ``TraceError`` unless ``ptr`` can address an mbarrier: a shared-memory ``Pointer``, 8-byte aligned,
    into an ``allocate_mbarrier`` allocation of this kernel, raw ``allocate`` bytes, or Int64/Uint64 storage (an
    array or a struct field), never a tensor's data nor storage of another element type.
    With ``peer``, the pointer must be mapped to a peer CTA (``arch.map_dsmem_ptr``)."""
    if isinstance(ptr, Tensor):
        raise TraceError(f"{what}: the mbarrier must be a pointer from SmemAllocator.allocate_mbarrier(), got "
                         f"a tensor ({ptr.layout}); a tensor's data cannot hold an mbarrier")
    if not isinstance(ptr, Pointer):
        raise TraceError(f"{what}: the mbarrier must be a shared-memory pointer from "
                         f"SmemAllocator.allocate_mbarrier(), got {ptr!r}")
    if ptr.memspace is not (AddressSpace.dsmem if peer else AddressSpace.smem):
        want = "a peer CTA's shared memory (arch.map_dsmem_ptr)" if peer else "shared memory"
        raise TraceError(f"{what}: the mbarrier must be in {want}, got a {ptr.memspace.name} pointer "
                         f"{ptr!r}")
    if ptr.alignment < MBARRIER_BYTES:
        raise TraceError(f"{what}: an mbarrier is {MBARRIER_BYTES}-byte aligned, but {ptr!r} is only known to "
                         f"be {ptr.alignment}-byte aligned")
    region = getattr(current(), "smem_region", None)
    address = ptr.address if ptr.address is not None else ptr.base
    if region is None or address is None:
        return
    found = region.allocation_at(address)
    if found is None:
        raise TraceError(f"{what}: the shared-memory address {address} is not inside any allocation of this "
                         f"kernel (allocate mbarriers with SmemAllocator.allocate_mbarrier())")
    start, end, kind, holder = found
    if kind == "tensor":
        raise TraceError(f"{what}: the address {address} lies in the data of a shared-memory tensor (bytes "
                         f"[{start}, {end})); an mbarrier needs its own storage: "
                         f"SmemAllocator.allocate_mbarrier()")
    if kind in _NOT_MBARRIER:
        raise TraceError(f"{what}: the address {address} lies in {holder} (bytes [{start}, {end})); an mbarrier "
                         f"needs storage of Int64 (SmemAllocator.allocate_mbarrier(), or a struct field "
                         f"MemRange[Int64, n])")
