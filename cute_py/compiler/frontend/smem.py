"""Shared-memory allocation inside a kernel: tensors and mbarriers at static offsets.

All allocations of a kernel share one dynamic shared-memory region whose base is aligned
to 1024 bytes (the 128B-swizzle repeat). An allocation's address is a static byte offset
into it, kept as the ``address`` of a shared-memory :class:`~cute_py.tensor.pointer.Pointer`, so
tensors over it slice and partition with static offsets. A tensor's alignment defaults to
what a TMA copy of its layout needs (DESIGN §4): 128 B, or 256/512/1024 B for a 32B/64B/128B
swizzle. The kernel is launched with ``total`` bytes of dynamic shared memory.

Each allocation is recorded with its kind (``"tensor"``, ``"mbarrier"`` or ``"bytes"``), so that
:func:`check_mbarrier_pointer` rejects an mbarrier operation on a tensor's data or on an address
that is not 8-byte aligned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core.composed import smem_element_layout
from ...tensor.dtypes import dtype_of
from ...errors import CuteValueError
from ...core.int_tuple import is_static
from ...core.layout import cosize
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.tensor import Tensor
from .builder import SMEM_BASE_ALIGN, current
from ...errors import TraceError

if TYPE_CHECKING:
    from ...core.composed import ComposedLayout
    from ...core.layout import Layout
    from ...tensor.dtypes import DType

__all__ = ["SmemAllocator", "smem_alignment_of", "check_mbarrier_pointer", "MAX_SMEM_BYTES", "MBARRIER_BYTES"]

MAX_SMEM_BYTES = 227 * 1024  # dynamic shared memory per block on sm_90
MBARRIER_BYTES = 8  # an mbarrier is one 8-byte aligned 64-bit word


def smem_alignment_of(layout: Layout | ComposedLayout, dtype: DType) -> int:
    """The byte alignment a TMA copy of a tile with ``layout`` (elements of ``dtype``) needs."""
    from ...nvgpu.tma import tma_swizzle_of

    return max(128, tma_swizzle_of(layout, dtype).smem_alignment)


class _Region:
    """The byte counter of one kernel's shared memory, and its allocations ``(start, end, kind)``."""

    __slots__ = ("total", "allocations")

    def __init__(self):
        self.total = 0
        self.allocations = []

    def take(self, nbytes, alignment, kind):
        start = -(-self.total // alignment) * alignment
        end = start + nbytes
        if end > MAX_SMEM_BYTES:
            raise TraceError(f"shared memory overflow: allocating {nbytes} bytes at offset {start} needs "
                             f"{end} bytes, more than the {MAX_SMEM_BYTES} a block may use on sm_90")
        self.total = end
        self.allocations.append((start, end, kind))
        return start

    def allocation_at(self, address):
        """``(start, end, kind)`` of the allocation holding byte ``address``, or ``None``."""
        for start, end, kind in self.allocations:
            if start <= address < end:
                return start, end, kind
        return None


class SmemAllocator:
    """Allocates the current kernel's shared memory (every allocator of a kernel shares one region)."""

    def __init__(self) -> None:
        b = current()
        region = getattr(b, "smem_region", None)
        if region is None:
            region = b.smem_region = _Region()
        self._region = region

    @property
    def total(self) -> int:
        """Bytes of dynamic shared memory the kernel uses so far."""
        return self._region.total

    def allocate(self, nbytes: int, alignment: int = 128) -> Pointer:
        """A shared-memory ``Pointer`` (Uint8) to ``nbytes`` bytes aligned to ``alignment``."""
        _check_alignment(alignment)
        if type(nbytes) is not int or nbytes <= 0:
            raise TraceError(f"allocate needs a positive static byte count, got {nbytes!r}")
        return Pointer("Uint8", AddressSpace.smem, alignment, self._region.take(nbytes, alignment, "bytes"))

    def allocate_tensor(self, dtype: DType | str | Any, layout: Layout | ComposedLayout,
                        alignment: int | None = None) -> Tensor:
        """A shared-memory tensor of ``dtype`` with ``layout`` (swizzled layouts allowed).

        ``alignment`` defaults to the TMA alignment of the layout's swizzle; a smaller explicit
        one is rejected when the layout is swizzled.
        """
        dtype = dtype_of(dtype)
        if getattr(layout, "inner", None) is not None:
            try:  # a byte-swizzled (or byte-read) layout, as a function of element offsets
                elements = smem_element_layout(layout, dtype.width)
            except CuteValueError as e:
                raise TraceError(str(e)) from None
        else:
            elements = layout
        outer = getattr(elements, "outer", elements)
        size = cosize(outer)
        if not is_static(size):
            raise TraceError(f"a shared-memory tensor needs a static layout, got {layout}")
        try:
            need = smem_alignment_of(layout, dtype)
        except CuteValueError as e:  # not a TMA swizzle: only the element alignment is needed
            need = max(16, dtype.width // 8)
            del e
        if alignment is None:
            alignment = need
        _check_alignment(alignment)
        if getattr(layout, "inner", None) is not None and alignment < need:
            raise TraceError(f"the swizzled layout {layout} needs {need}-byte aligned shared memory, "
                             f"got alignment={alignment}")
        nbytes = max(1, (size + getattr(elements, "offset", 0)) * dtype.width // 8)
        start = self._region.take(nbytes, alignment, "tensor")
        return Tensor(Pointer(dtype, AddressSpace.smem, alignment, start), layout)

    def allocate_mbarrier(self, count: int = 1) -> Pointer:
        """A shared-memory ``Pointer`` (Int64) to ``count`` consecutive 8-byte mbarriers."""
        if type(count) is not int or count <= 0:
            raise TraceError(f"allocate_mbarrier needs a positive static count, got {count!r}")
        start = self._region.take(MBARRIER_BYTES * count, MBARRIER_BYTES, "mbarrier")
        return Pointer("Int64", AddressSpace.smem, MBARRIER_BYTES, start)


def _check_alignment(a):
    if type(a) is not int or a <= 0 or a & (a - 1) or a > SMEM_BASE_ALIGN:
        raise TraceError(f"shared-memory alignment must be a power of two up to {SMEM_BASE_ALIGN}, got {a!r}")


def check_mbarrier_pointer(ptr: object, what: str, peer: bool = False) -> None:
    """Raise ``TraceError`` unless ``ptr`` can address an mbarrier: a shared-memory ``Pointer``, 8-byte aligned,
    into an ``allocate_mbarrier`` (or raw ``allocate``) allocation of this kernel, never a tensor's data.
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
    start, end, kind = found
    if kind == "tensor":
        raise TraceError(f"{what}: the address {address} lies in the data of a shared-memory tensor (bytes "
                         f"[{start}, {end})); an mbarrier needs its own storage: "
                         f"SmemAllocator.allocate_mbarrier()")
