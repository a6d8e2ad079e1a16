"""Kernel builtins of shared memory with the CuTe DSL's ``cute.arch`` names: ``alloc_smem``, ``get_dyn_smem``,
``get_dyn_smem_size`` and ``store_async_dsmem``.

A cute_py kernel has one shared-memory region, the launch's *dynamic* shared memory, whose base is aligned to
1024 bytes; ``SmemAllocator`` and ``alloc_smem`` hand out static offsets into it, and the launch gives the
kernel as many bytes as it allocated (unless ``launch(smem=...)`` says more). Where the DSL's ``alloc_smem``
reserves *static* shared memory, ours takes its bytes from that same region: the pointer and its alignment
are the same, only the PTX declaration differs.

``get_dyn_smem`` is the start of the region (offset 0): a kernel lays its shared memory out either by hand from
that pointer or with the allocators, not both; ``get_dyn_smem`` raises once the kernel has allocated, and the
launch must then give the bytes (``launch(smem=n)``), which ``get_dyn_smem_size()`` reads back at run time.
"""

from __future__ import annotations

from typing import Any

from ...errors import TraceError
from ...tensor.dtypes import DType
from ...tensor.pointer import AddressSpace, Pointer
from ..lang.builder import SMEM_BASE_ALIGN
from ..lang.memory import pointer_value
from ..lang.smem import SmemAllocator, check_mbarrier_pointer
from ..lang.values import TracedFloat
from ..lang.traced_int import TracedInt
from ..emit import sync
from ..emit.operands import int_operand
from .arch_sreg import dynamic_smem_size

__all__ = ["alloc_smem", "get_dyn_smem", "get_dyn_smem_size", "store_async_dsmem"]

MAX_CLUSTER_CTAS = 16


def _element_type(element_type, name):
    if not isinstance(element_type, DType):
        raise TraceError(f"{name}: element_type must be a numeric type (cute.Float32, cute.Int8...), got "
                         f"{element_type!r}")
    return element_type


def _alignment(alignment, dtype, name):
    if alignment is None:
        return max(1, dtype.width // 8)
    if type(alignment) is not int or alignment <= 0 or alignment & (alignment - 1) or alignment > SMEM_BASE_ALIGN:
        raise TraceError(f"{name}: alignment must be a power of two up to {SMEM_BASE_ALIGN} bytes, got "
                         f"{alignment!r}")
    if alignment < dtype.width // 8:
        raise TraceError(f"{name}: alignment {alignment} is below the {dtype.width // 8} bytes of a {dtype.name}")
    return alignment


def alloc_smem(element_type: DType, size_in_elems: int, alignment: int | None = None) -> Pointer:
    """A shared-memory pointer to ``size_in_elems`` (a static positive int) new elements of ``element_type``,
    aligned to ``alignment`` bytes (default: the element's size). The bytes may also hold mbarriers
    (``alloc_smem(cute.Int64, n)``)."""
    name = "alloc_smem"
    dtype = _element_type(element_type, name)
    if type(size_in_elems) is not int or size_in_elems <= 0:
        raise TraceError(f"{name}: size_in_elems must be a positive static int, got {size_in_elems!r}")
    align = _alignment(alignment, dtype, name)
    raw = SmemAllocator().allocate(-(-size_in_elems * dtype.width // 8), align)
    return Pointer(dtype, AddressSpace.smem, align, raw.address)


def get_dyn_smem(element_type: DType, alignment: int | None = None) -> Pointer:
    """A shared-memory pointer of ``element_type`` to the start of the kernel's dynamic shared memory (see the
    module: the launch's ``smem=`` bytes; the region the allocators use), aligned to ``alignment`` bytes
    (default: the element's size; the start is aligned to 1024)."""
    name = "get_dyn_smem"
    dtype = _element_type(element_type, name)
    align = _alignment(alignment, dtype, name)
    used = SmemAllocator().total
    if used:
        raise TraceError(f"{name}: the kernel already allocated {used} bytes of shared memory (SmemAllocator or "
                         f"alloc_smem), which start at the same address; lay shared memory out either from "
                         f"get_dyn_smem or with the allocators")
    return Pointer(dtype, AddressSpace.smem, align, 0)


def get_dyn_smem_size() -> TracedInt:
    """The bytes of dynamic shared memory the launch gave the block (``%dynamic_smem_size``; an Int32)."""
    return dynamic_smem_size()


def store_async_dsmem(smem_ptr: Pointer, value: Any, mbar_ptr: Pointer, peer_cta_rank: TracedInt | int) -> None:
    """``st.async.shared::cluster.mbarrier::complete_tx::bytes``: store ``value`` (a 32-bit int, or a tuple of 2
    or 4) at ``smem_ptr``'s offset in the shared memory of CTA ``peer_cta_rank`` of the cluster, completing its
    bytes on that CTA's mbarrier at ``mbar_ptr``'s offset (both pointers are this CTA's own)."""
    name = "store_async_dsmem"
    for what, p in (("smem_ptr", smem_ptr), ("mbar_ptr", mbar_ptr)):
        if not isinstance(p, Pointer) or p.memspace is not AddressSpace.smem:
            raise TraceError(f"{name}: {what} must be a shared-memory pointer of this CTA, got {p!r}")
    values = value if isinstance(value, tuple) else (value,)
    n = len(values)
    if n not in (1, 2, 4):
        raise TraceError(f"{name}: value must be a 32-bit integer or a tuple of 2 or 4 of them, got {n} values")
    if smem_ptr.alignment % (4 * n):
        raise TraceError(f"{name}: storing {4 * n} bytes needs a {4 * n}-byte aligned smem_ptr, but it is only "
                         f"{smem_ptr.alignment}-byte aligned")
    check_mbarrier_pointer(mbar_ptr, name)
    words = []
    for i, v in enumerate(values):
        if isinstance(v, TracedFloat) or type(v) is float:
            raise TraceError(f"{name}: value {i} must be a 32-bit integer, got {v!r}")
        words.append(int_operand(v, f"{name}: value {i}"))
    rank = int_operand(peer_cta_rank, f"{name}: peer_cta_rank", 32, 0, MAX_CLUSTER_CTAS,
                       f" (a cluster has at most {MAX_CLUSTER_CTAS} CTAs)")
    addr, bar = pointer_value(smem_ptr, f"{name}: smem_ptr"), pointer_value(mbar_ptr, f"{name}: mbar_ptr")
    sync.store_async_dsmem(addr, words, bar, rank)
