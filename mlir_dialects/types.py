"""The memory-space types of the ``cute_nvgpu`` dialect and the checks its verifiers share.

The dialect's operands are LLVM pointers tagged with NVPTX address spaces, so the values
flow straight from ``llvm.func`` kernel arguments and ``llvm.mlir.global`` shared buffers:

==================  ==================  =====================================================
name                type                holds
==================  ==================  =====================================================
``smem_ptr``        ``!llvm.ptr<3>``    shared::cta memory (tiles, mbarriers, descriptors)
``cluster_ptr``     ``!llvm.ptr<7>``    shared::cluster memory (a peer CTA's shared memory)
``gmem_ptr``        ``!llvm.ptr<1>``    global memory
``generic_ptr``     ``!llvm.ptr``       generic addresses (a TMA descriptor, 128 bytes)
==================  ==================  =====================================================

An mbarrier is a 64-bit word in shared::cta memory (``mbarrier_type``), a TMA descriptor a
generic pointer to the 128-byte tensor map, 64-byte aligned (``tma_desc_type``).
"""

import enum

from ._backend import ir, llvm

__all__ = [
    "AddressSpace",
    "pointer_type",
    "smem_ptr_type",
    "cluster_ptr_type",
    "gmem_ptr_type",
    "generic_ptr_type",
    "mbarrier_type",
    "tma_desc_type",
    "address_space_of",
    "integer_width_of",
    "constant_int_of",
    "BYTES_PER_TENSORMAP",
]

BYTES_PER_TENSORMAP = 128


class AddressSpace(enum.IntEnum):
    """NVPTX address spaces, as numbered by LLVM."""

    GENERIC = 0
    GLOBAL = 1
    SHARED = 3  # shared::cta
    CONST = 4
    LOCAL = 5
    SHARED_CLUSTER = 7

    @property
    def ptx(self):
        return {0: "generic", 1: "global", 3: "shared::cta", 4: "const", 5: "local", 7: "shared::cluster"}[self]


def pointer_type(space=AddressSpace.GENERIC):
    """``!llvm.ptr<space>`` in the current context."""
    return llvm.PointerType.get(int(space))


def smem_ptr_type():
    """``!llvm.ptr<3>``: a pointer into this CTA's shared memory."""
    return pointer_type(AddressSpace.SHARED)


def cluster_ptr_type():
    """``!llvm.ptr<7>``: a pointer into the shared memory of a CTA of the cluster."""
    return pointer_type(AddressSpace.SHARED_CLUSTER)


def gmem_ptr_type():
    """``!llvm.ptr<1>``: a pointer into global memory."""
    return pointer_type(AddressSpace.GLOBAL)


def generic_ptr_type():
    """``!llvm.ptr``: a generic address."""
    return pointer_type(AddressSpace.GENERIC)


def mbarrier_type():
    """The type of an mbarrier operand: its 8-byte word in shared::cta memory."""
    return smem_ptr_type()


def tma_desc_type():
    """The type of a TMA descriptor operand: a generic pointer to the 128-byte tensor map."""
    return generic_ptr_type()


def address_space_of(value):
    """The address space of a pointer-typed value, or None when it is not an LLVM pointer."""
    t = value.type
    if not isinstance(t, llvm.PointerType):
        return None
    return t.address_space


def integer_width_of(value):
    """The bit width of an integer-typed value, or None."""
    t = value.type
    if not isinstance(t, ir.IntegerType):
        return None
    return t.width


def constant_int_of(value):
    """The integer a value is known to hold when an ``llvm.mlir.constant``/``arith.constant`` made it, else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name not in ("llvm.mlir.constant", "arith.constant"):
        return None
    attr = owner.attributes["value"]
    return attr.value if isinstance(attr, ir.IntegerAttr) else None
