"""The emission table: one entry per device op class, the only place the compiler turns an op into IR.

Every instruction a kernel issues -- a copy op of :mod:`cute_py.nvgpu.copy_ops` (one instruction of a
tile copy, or a low-level form such as ``tma_load``), a non-copy instruction of
:mod:`cute_py.nvgpu.device_ops`, or a plain ``CopyUniversalOp`` vector move -- reaches :func:`emit`
as ``(op, operands)``, and ``EMIT[type(op)]`` builds the dialect op named in ``DIALECT_OP``. Adding a
copy op is: the op class, its dialect op (with its lowering rule), one ``@emits`` entry here and one
entry in ``cute_py.reference.REFERENCE``; ``tests/test_op_tables.py`` names any op missing one.

Descriptors are given as TMA atoms (their 128-byte kernel parameter) or as pointers to a descriptor
in global or shared memory (one updated on the device); TMA instructions take them by generic address.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..device import DeviceContext
from ..atom import CopyUniversalOp
from ..core.typing import Int
from ..errors import CuteError
from ..nvgpu import device_ops as dops
from ..nvgpu.copy_ops import (CopyBulkTensorIm2colG2SOp, CopyBulkTensorTileG2SMulticastOp, CopyBulkTensorTileG2SOp,
                              CopyBulkTensorTileS2GOp, CopyDsmemStoreOp, CopyG2SOp, CopyReduceBulkTensorTileS2GOp,
                              LoadCacheMode)
from ..nvgpu.cpasync import TmaCopyAtom
from ..nvgpu.tma_box import make_tma_desc
from ..tensor.pointer import AddressSpace, Pointer
from .frontend.builder import current
from .frontend.memory import load_element, make_fragment_like, move, pointer_value, store_element
from ..errors import TraceError
from .frontend.smem import check_mbarrier_pointer
from .frontend.tensor_ssa import TensorSSA, load_tensor, store_tensor
from .frontend.values import TracedBool, convert
from .frontend.traced_int import as_value, select

import mlir_dialects as md

if TYPE_CHECKING:
    from ..core.composed import ComposedLayout
    from ..core.layout import Layout
    from ..tensor.dtypes import DType, Scalar
    from ..tensor.tensor import Tensor
    from .frontend.builder import KernelBuilder
    from .frontend.values import TracedFloat
    from .frontend.traced_int import TracedInt

__all__ = ["EMIT", "DIALECT_OP", "TENSOR_COPY", "emits", "tensor_copy", "emit", "KernelContext", "DescriptorPointer", "descriptor_value"]

EMIT = {}  # op class -> entry(b, op, **operands)
TENSOR_COPY = {}  # "copy" -> the vectorised copy between registers and memory (registered by the tile copies)
DIALECT_OP = {}  # op class -> the names of the dialect ops its entry builds (their lowering rules lower it)


def emits(op_class: type, *dialect_ops: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the emission entry of ``op_class`` (exactly one), building the dialect ops ``dialect_ops``."""

    def register(fn):
        if op_class in EMIT:
            raise RuntimeError(f"{op_class.__name__} has two emission entries")
        EMIT[op_class] = fn
        DIALECT_OP[op_class] = dialect_ops
        return fn

    return register


def tensor_copy(fn: Callable[[Tensor, Tensor], None]) -> Callable[[Tensor, Tensor], None]:
    """Register ``fn(src, dst)``, the copy ``Tensor.load``/``store`` of a memory tensor go through (registers to or
    from memory, the widest vectors allowed)."""
    TENSOR_COPY["copy"] = fn
    return fn


def emit(op: object, **operands: Any) -> Any:
    """Emit one instruction of ``op`` into the kernel being traced (see the module)."""
    entry = EMIT.get(type(op))
    if entry is None:
        raise TraceError(f"{type(op).__name__} is not supported in kernels (it has no emission entry)")
    return entry(current(), op, **operands)


class KernelContext(DeviceContext):
    """The device context of a kernel being traced (:mod:`cute_py.device`): instructions go to the emission
    table, element loads and stores and register fragments to :mod:`~cute_py.compiler.frontend.memory`."""

    def emit(self, op: object, **operands: Any) -> Any:
        return emit(op, **operands)

    def load(self, pointer: Pointer, offset: Int) -> TracedInt | TracedFloat:
        return load_element(pointer + offset)

    def store(self, pointer: Pointer, offset: Int, value: TracedInt | TracedFloat | int | float) -> None:
        store_element(pointer + offset, value)

    def make_fragment_like(self, src: Tensor | Layout | ComposedLayout,
                           dtype: DType | str | Any | None = None) -> Tensor:
        return make_fragment_like(src, dtype)

    def scalar(self, dtype: DType, value: Any) -> TracedInt | Scalar:
        return convert(dtype, value)

    def pointer_address(self, pointer: Pointer) -> TracedInt:
        from .frontend.traced_int import TracedInt

        b = current()
        with b.at_end():
            v = b.mlir.llvm.PtrToIntOp(b.int_type(64), pointer_value(pointer, "align")).result
        return TracedInt(v, 64, True)

    def load_tensor(self, tensor: Tensor) -> TensorSSA:
        return load_tensor(tensor, TENSOR_COPY.get("copy"))

    def store_tensor(self, tensor: Tensor, value: Any) -> None:
        store_tensor(tensor, value, TENSOR_COPY.get("copy"))

    def print_tensor(self, tensor: Tensor, verbose: bool = False) -> None:
        from .builtins.printing import print_tensor

        print_tensor(tensor, verbose)

    def run_time_scope(self) -> Any:
        from .frontend.builder import current

        scope = current().scope
        return None if scope.parent is None else scope

    def on_abandon(self, undo: Any) -> None:
        from .frontend.builder import current

        current().undo_log.append(undo)


# -- descriptors -------------------------------------------------------------------------------------


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


@emits(dops.PrefetchTensormapOp, "prefetch_tensormap")
def _prefetch_tensormap(b, op, atom):
    desc = b.descriptor_of(atom)
    with b.at_end():
        md.prefetch_tensormap(desc)


@emits(dops.TensormapPtrOp)
def _tensormap_ptr(b, op, atom):
    return DescriptorPointer(b.descriptor_of(atom))


@emits(dops.TensormapCopyOp, "tensormap_copy")
def _tensormap_copy(b, op, atom, dst):
    src = b.descriptor_of(atom)
    d = pointer_value(dst, "the tensormap destination")
    with b.at_end():
        md.tensormap_copy(d, src)


@emits(dops.TensormapReplaceOp, "tensormap_replace")
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


@emits(dops.FenceTensormapAcquireOp, "fence_tensormap_acquire")
def _fence_tensormap_acquire(b, op, desc):
    d = descriptor_value(b, desc, "desc_ptr")
    with b.at_end():
        md.fence_tensormap_acquire(d)


@emits(dops.FenceTensormapReleaseOp, "fence_tensormap_release")
def _fence_tensormap_release(b, op):
    with b.at_end():
        md.fence_tensormap_release()


@emits(dops.CpFenceTensormapReleaseOp, "cp_fence_tensormap_release")
def _cp_fence_tensormap_release(b, op, src, dst):
    s, d = pointer_value(src, "src_ptr"), pointer_value(dst, "dst_ptr")
    with b.at_end():
        md.cp_fence_tensormap_release(d, s)


@emits(dops.BulkCommitGroupOp, "tma_store_arrive")
def _bulk_commit_group(b, op):
    with b.at_end():
        md.tma_store_arrive()


@emits(dops.BulkWaitGroupOp, "tma_store_wait")
def _bulk_wait_group(b, op):
    with b.at_end():
        md.tma_store_wait(op.count, read=op.read)


# -- TMA ---------------------------------------------------------------------------------------------


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


@emits(CopyBulkTensorTileG2SOp, "tma_load")
def _tma_load_tile(b, op, desc, mbar, smem, crd, cache_hint=None):
    _tma_load(b, desc, mbar, smem, crd, None, cache_hint)


@emits(CopyBulkTensorTileG2SMulticastOp, "tma_load")
def _tma_load_multicast(b, op, desc, mbar, smem, crd, mcast_mask, cache_hint=None):
    _tma_load(b, desc, mbar, smem, crd, as_value(mcast_mask, 16), cache_hint)


@emits(CopyBulkTensorIm2colG2SOp, "tma_load_im2col")
def _tma_load_im2col(b, op, desc, mbar, smem, crd, offsets, cache_hint=None):
    """One im2col TMA load: ``crd`` the 3-5 coordinates, ``offsets`` the 16-bit im2col offsets."""
    d, sp, coords, hint = _tma_operands(b, desc, smem, crd, cache_hint)
    check_mbarrier_pointer(mbar, "tma_load_im2col: mbar")
    bar = pointer_value(mbar, "mbar")
    offs = [as_value(o, 16) for o in offsets]
    with b.at_end():
        md.tma_load_im2col(sp, d, bar, coords, offs, cache_hint=hint)


@emits(CopyBulkTensorTileS2GOp, "tma_store")
def _tma_store(b, op, desc, smem, crd, cache_hint=None):
    d, sp, coords, hint = _tma_operands(b, desc, smem, crd, cache_hint)
    with b.at_end():
        md.tma_store(d, sp, coords, cache_hint=hint)


@emits(CopyReduceBulkTensorTileS2GOp, "tma_reduce")
def _tma_reduce(b, op, desc, smem, crd, cache_hint=None):
    d, sp, coords, hint = _tma_operands(b, desc, smem, crd, cache_hint)
    with b.at_end():
        md.tma_reduce(d, sp, coords, op.reduction_kind.value, cache_hint=hint)


# -- cp.async, st.async, plain moves -----------------------------------------------------------------


@emits(CopyG2SOp, "cp_async")
def _cp_async(b, op, dst, src, cp_size, src_size=None, pred=None, cache_hint=None):
    """``cp.async`` of ``cp_size`` bytes; ``src_size`` (or ``pred``: all or nothing) zero-fills the rest."""
    if pred is not None:
        if not isinstance(pred, TracedBool):
            raise TraceError(f"cp_async_gs_conditional needs a bool or a run-time condition, got {pred!r}")
        src_size = select(pred, cp_size, 0)
    d, s = pointer_value(dst, "dst"), pointer_value(src, "src")
    size = None if src_size is None else as_value(src_size, 32)
    hint = None if cache_hint is None else as_value(cache_hint, 64)
    modifier = "cg" if op.cache_mode is LoadCacheMode.GLOBAL else "ca"
    with b.at_end():
        md.cp_async(d, s, cp_size, modifier=modifier, src_size=size, cache_hint=hint)


@emits(CopyDsmemStoreOp, "dsmem_store")
def _dsmem_store(b, op, dst, value, mbar, cta_id):
    """``st.async`` of ``value`` (an MLIR value of 32, 64 or 128 bits) to ``dst`` (this CTA's address of the
    element) in CTA ``cta_id``, completing its bytes on that CTA's ``mbar``."""
    check_mbarrier_pointer(mbar, "copy: mbar_ptr", peer=True)
    d, bar = pointer_value(dst, "the peer's shared-memory tile", peer=True), pointer_value(mbar, "mbar_ptr", peer=True)
    rank = as_value(cta_id, 32)
    with b.at_end():
        md.dsmem_store(d, value, bar, rank)


@emits(CopyUniversalOp)
def _universal_move(b, op, src, dst, first, vector, nbits):
    """Plain loads and stores of elements ``first .. first + vector`` of ``src`` into ``dst`` (``nbits`` each
    vector): LLVM loads and stores, no dialect op."""
    move(src, dst, first, vector, nbits)

