"""The tracer the ``cute_py.nvgpu`` device operations emit into while a kernel is traced.

``cute_py.nvgpu.device_ops`` validates each call's arguments and hands it here by name
(``device_ops.set_tracer``). Descriptors are given as TMA atoms (their 128-byte kernel
parameter) or as pointers to a descriptor in global or shared memory (one updated on the
device); TMA instructions take descriptors by generic address.
"""

from ..errors import CuteError
from ..nvgpu.cpasync import LoadCacheMode, TmaCopyAtom
from ..nvgpu.tma_box import make_tma_desc
from ..pointer import AddressSpace, Pointer
from .builder import current, pointer_value
from .errors import TraceError, locate
from .smem import check_mbarrier_pointer
from .values import TracedBool, as_value, select

import mlir_dialects as md

__all__ = ["KernelTracer", "DescriptorPointer", "descriptor_value"]


class DescriptorPointer:
    """The generic address of a TMA atom's descriptor parameter (``extract_tensormap_ptr``)."""

    __slots__ = ("value",)

    def __init__(self, value):
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


def descriptor_value(b, desc, what="the descriptor"):
    if isinstance(desc, TmaCopyAtom):
        return b.descriptor_of(desc)
    return _generic(b, pointer_value(desc, what))


def _copy_descriptor(b, atom, dst):
    """Copy the 128 bytes of ``atom``'s descriptor parameter to ``dst`` (16 bytes at a time)."""
    src = b.descriptor_of(atom)
    dst_v = pointer_value(dst, "the tensormap destination")
    llvm = b.mlir.llvm
    v2 = b.ir.Type.parse("vector<2xi64>")
    i8 = b.int_type(8)
    with b.at_end():
        for k in range(8):
            s = src if k == 0 else llvm.GEPOp(src.type, src, [], [16 * k], i8, 0).result
            d = dst_v if k == 0 else llvm.GEPOp(dst_v.type, dst_v, [], [16 * k], i8, 0).result
            word = llvm.LoadOp(v2, s, alignment=16).result
            llvm.StoreOp(word, d, alignment=16)


def _replace_descriptor(b, atom, tensor, desc):
    """Rewrite the global address, dims and strides of the descriptor at ``desc`` for ``tensor``."""
    ptr = tensor.engine
    if not isinstance(ptr, Pointer) or ptr.memspace not in (AddressSpace.gmem, AddressSpace.generic):
        raise TraceError(locate(f"update_tma_descriptor needs a global-memory tensor, got {tensor!r}"))
    if ptr.dtype != atom.dtype:
        raise TraceError(locate(f"update_tma_descriptor: the tensor's {ptr.dtype.name} elements differ from the "
                                f"atom's {atom.dtype.name}"))
    old = atom.descriptor
    try:
        new, _ = make_tma_desc(tensor.layout, atom.dtype, old.dtype, None, ptr.alignment, atom.tma_gbasis, old.swizzle,
                               atom.num_multicast)
    except CuteError as e:  # a layout the atom's box cannot address
        raise TraceError(locate(f"update_tma_descriptor: the tensor {tensor.layout} does not fit the atom's TMA "
                                f"box: {e}")) from None
    if tuple(new.box_dims) != tuple(old.box_dims) or new.rank != old.rank:
        raise TraceError(locate(f"update_tma_descriptor: the tensor {tensor.layout} needs the box "
                                f"{list(new.box_dims)}, the atom's descriptor has {list(old.box_dims)}"))
    for i, d in enumerate(new.global_dims):
        if type(d) is not int:
            raise TraceError(locate(f"update_tma_descriptor: dimension {i} of {tensor.layout} is not static"))
    d = pointer_value(desc, "desc_ptr")
    addr = pointer_value(ptr, "the tensor")
    llvm = b.mlir.llvm
    with b.at_end():
        address = llvm.PtrToIntOp(b.int_type(64), addr).result
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


class KernelTracer:
    """Emits ``cute_py.nvgpu.device_ops`` calls into the kernel being traced."""

    def emit(self, name, **operands):
        b = current()
        handler = getattr(self, "_" + name, None)
        if handler is None:
            raise TraceError(locate(f"cute_py.nvgpu.{name} is not supported by the JIT yet"))
        return handler(b, **operands)

    # -- descriptors --------------------------------------------------------------------------
    def _prefetch_tensormap(self, b, atom):
        desc = b.descriptor_of(atom)
        with b.at_end():
            md.prefetch_tensormap(desc)

    def _tensormap_ptr(self, b, atom):
        return DescriptorPointer(b.descriptor_of(atom))

    def _tensormap_copy(self, b, atom, dst):
        _copy_descriptor(b, atom, dst)

    def _tensormap_replace(self, b, atom, tensor, desc):
        _replace_descriptor(b, atom, tensor, desc)

    def _fence_tensormap_acquire(self, b, desc):
        d = descriptor_value(b, desc, "desc_ptr")
        with b.at_end():
            md.fence_tensormap_acquire(d)

    def _fence_tensormap_release(self, b):
        with b.at_end():
            md.fence_tensormap_release()

    def _cp_fence_tensormap_release(self, b, src, dst):
        s, d = pointer_value(src, "src_ptr"), pointer_value(dst, "dst_ptr")
        with b.at_end():
            md.cp_fence_tensormap_release(d, s)

    # -- TMA ----------------------------------------------------------------------------------
    def _tma_load(self, b, desc, mbar, smem, crd, mcast_mask=None, cache_hint=None):
        d = descriptor_value(b, desc)
        coords = [as_value(c, 32) for c in crd]
        check_mbarrier_pointer(mbar, "tma_load: mbar")
        sp, bar = pointer_value(smem, "smem_ptr"), pointer_value(mbar, "mbar")
        mask = None if mcast_mask is None else as_value(mcast_mask, 16)
        hint = None if cache_hint is None else as_value(cache_hint, 64)
        with b.at_end():
            md.tma_load(sp, d, bar, coords, multicast_mask=mask, cache_hint=hint)

    def _tma_store(self, b, desc, smem, crd):
        d = descriptor_value(b, desc)
        coords = [as_value(c, 32) for c in crd]
        sp = pointer_value(smem, "smem_ptr")
        with b.at_end():
            md.tma_store(d, sp, coords)

    def _tma_store_arrive(self, b):
        with b.at_end():
            md.tma_store_arrive()

    def _tma_store_wait(self, b, count, read):
        with b.at_end():
            md.tma_store_wait(count, read=read)

    # -- cp.async -----------------------------------------------------------------------------
    def _cp_async(self, b, dst, src, cp_size, modifier, src_size=None):
        d, s = pointer_value(dst, "dst"), pointer_value(src, "src")
        size = None if src_size is None else as_value(src_size, 32)
        with b.at_end():
            md.cp_async(d, s, cp_size, modifier="cg" if modifier is LoadCacheMode.GLOBAL else "ca", src_size=size)

    def _cp_async_pred(self, b, dst, src, cp_size, modifier, pred):
        if not isinstance(pred, TracedBool):
            raise TraceError(locate(f"cp_async_gs_conditional needs a bool or a run-time condition, got {pred!r}"))
        return self._cp_async(b, dst, src, cp_size, modifier, select(pred, cp_size, 0))
