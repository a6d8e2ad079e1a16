"""The emission of the TMA unit's instructions: bulk tensor loads (tile, multicast, im2col), stores and
reductions, their bulk groups, and the descriptor (tensormap) instructions, as ops of the ``cute_nvgpu`` dialect.

Descriptors are given as TMA atoms (their 128-byte kernel parameter) or as pointers to a descriptor in global or
shared memory (one updated on the device); TMA instructions take them by generic address.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mlir_dialects as md

from ...errors import CuteError, TraceError
from ...nvgpu.sync import (BulkCommitGroupOp, BulkWaitGroupOp, CpFenceTensormapReleaseOp, FenceTensormapAcquireOp,
                           FenceTensormapReleaseOp, PrefetchTensormapOp, TensormapCopyOp, TensormapPtrOp,
                           TensormapReplaceOp)
from ...nvgpu.tma.atom import TmaCopyAtom
from ...nvgpu.tma.box import make_tma_desc
from ...nvgpu.tma.ops import (CopyBulkTensorIm2colG2SOp, CopyBulkTensorTileG2SMulticastOp, CopyBulkTensorTileG2SOp,
                              CopyBulkTensorTileS2GOp, CopyReduceBulkTensorTileS2GOp)
from ...tensor.pointer import AddressSpace, Pointer
from ..lang.memory import pointer_value
from ..lang.smem import check_mbarrier_pointer
from ..lang.traced_int import as_value

if TYPE_CHECKING:
    from ..lang.builder import KernelBuilder

__all__ = ["ENTRIES", "DescriptorPointer", "descriptor_value"]


class DescriptorPointer:
    """The generic address of a TMA atom's descriptor parameter (``extract_tensormap_ptr``)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __cute_value__(self):
        return self.value

    def __repr__(self):
        return "tensormap_ptr(?)"


def _generic(b, value):
    """``value`` (an ``!llvm.ptr<N>``) as a generic ``!llvm.ptr``."""
    generic = b.ir.Type.parse("!llvm.ptr")
    if str(value.type) == "!llvm.ptr":
        return value
    with b.at_end():
        return b.mlir.llvm.AddrSpaceCastOp(generic, value).result


def descriptor_value(b: KernelBuilder, desc: TmaCopyAtom | Pointer | DescriptorPointer,
                     what: str = "the descriptor") -> Any:
    """The generic address of ``desc``: a TMA atom's parameter, or a pointer to a descriptor in memory."""
    if isinstance(desc, TmaCopyAtom):
        return b.descriptor_of(desc)
    return _generic(b, pointer_value(desc, what))


def _prefetch_tensormap(b, op, atom):
    desc = b.descriptor_of(atom)
    with b.at_end():
        md.prefetch_tensormap(desc)


def _tensormap_ptr(b, op, atom):
    return DescriptorPointer(b.descriptor_of(atom))


def _tensormap_copy(b, op, atom, dst):
    src = b.descriptor_of(atom)
    d = pointer_value(dst, "the tensormap destination")
    with b.at_end():
        md.tensormap_copy(d, src)


def _tensormap_replace(b, op, atom, tensor, desc):
    """Rewrite the global address, dims and strides of the descriptor at ``desc`` for ``tensor``."""
    ptr = tensor.engine
    if not isinstance(ptr, Pointer) or ptr.memspace not in (AddressSpace.gmem, AddressSpace.generic):
        raise TraceError(f"update_tma_descriptor needs a global-memory tensor, got {tensor!r}")
    if ptr.dtype != atom.dtype:
        raise TraceError(f"update_tma_descriptor: the tensor's {ptr.dtype.name} elements differ from the "
                         f"atom's {atom.dtype.name}")
    old = atom.descriptor
    try:
        new, _ = make_tma_desc(tensor.layout, atom.dtype, old.dtype, None, ptr.alignment, atom.tma_gbasis, old.swizzle,
                               atom.num_multicast)
    except CuteError as e:  # a layout the atom's box cannot address
        raise TraceError(f"update_tma_descriptor: the tensor {tensor.layout} does not fit the atom's TMA "
                         f"box: {e}") from None
    if tuple(new.box_dims) != tuple(old.box_dims) or new.rank != old.rank:
        raise TraceError(f"update_tma_descriptor: the tensor {tensor.layout} needs the box "
                         f"{list(new.box_dims)}, the atom's descriptor has {list(old.box_dims)}")
    for i, d in enumerate(new.global_dims):
        if type(d) is not int:
            raise TraceError(f"update_tma_descriptor: dimension {i} of {tensor.layout} is not static")
    d = pointer_value(desc, "desc_ptr")
    addr = pointer_value(ptr, "the tensor")
    with b.at_end():
        address = b.mlir.llvm.PtrToIntOp(b.int_type(64), addr).result
        md.tensormap_replace(d, "global_address", address)
    for i, dim in enumerate(new.global_dims):
        if dim != old.global_dims[i]:
            v = b.const(dim, 32)
            with b.at_end():
                md.tensormap_replace(d, "global_dim", v, i)
    for i, stride in enumerate(new.global_strides):
        if stride != old.global_strides[i]:
            v = b.const(stride, 64)
            with b.at_end():
                md.tensormap_replace(d, "global_stride", v, i)


def _fence_tensormap_acquire(b, op, desc):
    d = descriptor_value(b, desc, "desc_ptr")
    with b.at_end():
        md.fence_tensormap_acquire(d)


def _fence_tensormap_release(b, op):
    with b.at_end():
        md.fence_tensormap_release()


def _cp_fence_tensormap_release(b, op, src, dst):
    s, d = pointer_value(src, "src_ptr"), pointer_value(dst, "dst_ptr")
    with b.at_end():
        md.cp_fence_tensormap_release(d, s)


def _bulk_commit_group(b, op):
    with b.at_end():
        md.tma_store_arrive()


def _bulk_wait_group(b, op):
    with b.at_end():
        md.tma_store_wait(op.count, read=op.read)


def _tma_operands(b, desc, smem, crd, cache_hint):
    d = descriptor_value(b, desc)
    coords = [as_value(c, 32) for c in crd]
    sp = pointer_value(smem, "smem_ptr")
    hint = None if cache_hint is None else as_value(cache_hint, 64)
    return d, sp, coords, hint


def _tma_load(b, desc, mbar, smem, crd, mask, cache_hint):
    d, sp, coords, hint = _tma_operands(b, desc, smem, crd, cache_hint)
    check_mbarrier_pointer(mbar, "tma_load: mbar")
    bar = pointer_value(mbar, "mbar")
    with b.at_end():
        md.tma_load(sp, d, bar, coords, multicast_mask=mask, cache_hint=hint)


def _tma_load_tile(b, op, desc, mbar, smem, crd, cache_hint=None):
    _tma_load(b, desc, mbar, smem, crd, None, cache_hint)


def _tma_load_multicast(b, op, desc, mbar, smem, crd, mcast_mask, cache_hint=None):
    _tma_load(b, desc, mbar, smem, crd, as_value(mcast_mask, 16), cache_hint)


def _tma_load_im2col(b, op, desc, mbar, smem, crd, offsets, cache_hint=None):
    """One im2col TMA load: ``crd`` the 3-5 coordinates, ``offsets`` the 16-bit im2col offsets."""
    d, sp, coords, hint = _tma_operands(b, desc, smem, crd, cache_hint)
    check_mbarrier_pointer(mbar, "tma_load_im2col: mbar")
    bar = pointer_value(mbar, "mbar")
    offs = [as_value(o, 16) for o in offsets]
    with b.at_end():
        md.tma_load_im2col(sp, d, bar, coords, offs, cache_hint=hint)


def _tma_store(b, op, desc, smem, crd, cache_hint=None):
    d, sp, coords, hint = _tma_operands(b, desc, smem, crd, cache_hint)
    with b.at_end():
        md.tma_store(d, sp, coords, cache_hint=hint)


def _tma_reduce(b, op, desc, smem, crd, cache_hint=None):
    d, sp, coords, hint = _tma_operands(b, desc, smem, crd, cache_hint)
    with b.at_end():
        md.tma_reduce(d, sp, coords, op.reduction_kind.value, cache_hint=hint)


# op class -> (its entry, the dialect ops the entry builds)
ENTRIES = {
    PrefetchTensormapOp: (_prefetch_tensormap, ("prefetch_tensormap",)),
    TensormapPtrOp: (_tensormap_ptr, ()),
    TensormapCopyOp: (_tensormap_copy, ("tensormap_copy",)),
    TensormapReplaceOp: (_tensormap_replace, ("tensormap_replace",)),
    FenceTensormapAcquireOp: (_fence_tensormap_acquire, ("fence_tensormap_acquire",)),
    FenceTensormapReleaseOp: (_fence_tensormap_release, ("fence_tensormap_release",)),
    CpFenceTensormapReleaseOp: (_cp_fence_tensormap_release, ("cp_fence_tensormap_release",)),
    BulkCommitGroupOp: (_bulk_commit_group, ("tma_store_arrive",)),
    BulkWaitGroupOp: (_bulk_wait_group, ("tma_store_wait",)),
    CopyBulkTensorTileG2SOp: (_tma_load_tile, ("tma_load",)),
    CopyBulkTensorTileG2SMulticastOp: (_tma_load_multicast, ("tma_load",)),
    CopyBulkTensorIm2colG2SOp: (_tma_load_im2col, ("tma_load_im2col",)),
    CopyBulkTensorTileS2GOp: (_tma_store, ("tma_store",)),
    CopyReduceBulkTensorTileS2GOp: (_tma_reduce, ("tma_reduce",)),
}
