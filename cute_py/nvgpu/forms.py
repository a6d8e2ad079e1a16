"""The low-level device forms of the TMA and cp.async units: descriptor management, TMA loads and stores,
the bulk-group commit and wait, and cp.async copies.

These run inside a kernel: while one is being traced, each call validates its arguments and hands
one instruction -- an op object and its operands -- to the active tracer, which emits it through its
table keyed by the op's class (the same entry ``cute_py.copy`` uses for a tile copy of that op).
Copies are the ops of the units (``cpasync.ops``, ``tma.ops``); the other instructions are the op classes
of :mod:`cute_py.nvgpu.sync`. Outside a kernel the arguments are still validated, then a
:class:`DeviceOnlyError` says the call needs a kernel. Their CPU semantics are in :mod:`cute_py.reference`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import device
from ..errors import CuteError, CuteTypeError, CuteValueError, DeviceOnlyError
from ..core.leaves import is_int
from ..core.normalise import is_static
from ..core.typing import Int
from ..tensor.pointer import AddressSpace, Pointer
from .cpasync.ops import CopyG2SOp, LoadCacheMode
from .sync import (BulkCommitGroupOp, BulkWaitGroupOp, CpFenceTensormapReleaseOp, FenceTensormapAcquireOp,
                   FenceTensormapReleaseOp, PrefetchTensormapOp, TensormapCopyOp, TensormapPtrOp, TensormapReplaceOp)
from .tma.desc import BYTES_PER_TENSORMAP
from .tma.ops import CopyBulkTensorTileG2SMulticastOp, CopyBulkTensorTileG2SOp, CopyBulkTensorTileS2GOp

if TYPE_CHECKING:
    from ..tensor.tensor import Tensor

__all__ = [
    "BYTES_PER_TENSORMAP",
    "BYTES_PER_POINTER",
    "DeviceOnlyError",
    "prefetch_descriptor",
    "copy_tensormap",
    "update_tma_descriptor",
    "fence_tma_desc_acquire",
    "cp_fence_tma_desc_release",
    "fence_tma_desc_release",
    "tma_load",
    "tma_store",
    "tma_store_arrive",
    "tma_store_wait",
    "cp_async_shared_global",
    "cp_async_gs",
    "cp_async_gs_conditional",
    "prefetch_tma_descriptor",
    "extract_tensormap_ptr",
]

BYTES_PER_POINTER = 8


def _emit(front, op, **operands):
    # ``front``: the function the user called (named in the error outside a kernel)
    tracer = device.active()
    if tracer is None:
        raise DeviceOnlyError(f"{front} is a device operation: call it inside a kernel (@cute_py.kernel)")
    return tracer.emit(op, **operands)


def _need_ptr(p, spaces, what):
    if isinstance(p, Pointer):
        if p.memspace not in spaces:
            names = " or ".join(s.name for s in spaces)
            raise CuteValueError(f"{what} must point to {names} memory, got a {p.memspace.name} pointer")
        return p
    if hasattr(p, "__cute_value__"):  # a traced pointer value
        return p
    raise CuteTypeError(f"{what} must be a pointer, got {p!r}")


def prefetch_descriptor(tma_atom: Any) -> None:
    """``prefetch.tensormap [desc]``: bring the TMA descriptor of ``tma_atom`` into the cache."""
    _check_tma_atom(tma_atom)
    return _emit("prefetch_descriptor", PrefetchTensormapOp(), atom=tma_atom)


def prefetch_tma_descriptor(tma_desc: Any) -> None:
    """:func:`prefetch_descriptor` under TileLang's name: ``prefetch.tensormap`` of the atom ``tma_desc``'s
    descriptor."""
    prefetch_descriptor(tma_desc)


def copy_tensormap(tma_atom: Any, tensormap_ptr: Any) -> None:
    """Copy the 128-byte descriptor of ``tma_atom`` to ``tensormap_ptr`` (global or shared, 64-byte aligned)."""
    _check_tma_atom(tma_atom)
    p = _need_ptr(tensormap_ptr, (AddressSpace.gmem, AddressSpace.smem), "the tensormap destination")
    if isinstance(p, Pointer) and p.alignment < 64:
        raise CuteValueError(f"a tensormap must be 64-byte aligned, but the destination is only {p.alignment}-byte aligned")
    return _emit("copy_tensormap", TensormapCopyOp(), atom=tma_atom, dst=tensormap_ptr)


def update_tma_descriptor(tma_atom: Any, gmem_tensor: Tensor, tma_desc_ptr: Any) -> None:
    """Rewrite the descriptor at ``tma_desc_ptr`` for ``gmem_tensor`` (address, dims, strides; same box)."""
    _check_tma_atom(tma_atom)
    _need_ptr(tma_desc_ptr, (AddressSpace.gmem, AddressSpace.smem), "tma_desc_ptr")
    if not hasattr(gmem_tensor, "layout"):
        raise CuteTypeError(f"update_tma_descriptor needs the new gmem tensor, got {gmem_tensor!r}")
    g_stride = tma_atom.g_stride
    if len(gmem_tensor.layout) != len(g_stride if isinstance(g_stride, tuple) else (g_stride,)):
        raise CuteValueError("the new gmem tensor must have the rank of the atom's tensor")
    if is_static(gmem_tensor.layout.shape) and is_static(gmem_tensor.layout.stride):
        # the rewritten descriptor keeps every rule of the atom's: exact dims, the 16-byte store granule...
        from .tma.box import make_tma_desc
        from .tma.desc import TmaError

        d = tma_atom.descriptor
        try:
            make_tma_desc(gmem_tensor.layout, tma_atom.dtype, d.dtype, None, 16, tma_atom.tma_gbasis, d.swizzle,
                          tma_atom.num_multicast, store=d.store, extents=tma_atom.tile_extents)
        except CuteError as e:
            raise TmaError(f"update_tma_descriptor: the tensor {gmem_tensor.layout} does not fit the atom's TMA "
                           f"box: {e}") from None
    return _emit("update_tma_descriptor", TensormapReplaceOp(), atom=tma_atom, tensor=gmem_tensor, desc=tma_desc_ptr)


def fence_tma_desc_acquire(tma_desc_ptr: Any) -> None:
    """``fence.proxy.tensormap::generic.acquire.gpu [desc], 128``: see descriptor writes before using it."""
    _need_ptr(tma_desc_ptr, (AddressSpace.gmem, AddressSpace.generic), "tma_desc_ptr")
    return _emit("fence_tma_desc_acquire", FenceTensormapAcquireOp(), desc=tma_desc_ptr)


def cp_fence_tma_desc_release(tma_desc_global_ptr: Any, tma_desc_shared_ptr: Any) -> None:
    """Copy a descriptor from shared to global memory and release it (``tensormap.cp_fenceproxy``)."""
    _need_ptr(tma_desc_shared_ptr, (AddressSpace.smem,), "tma_desc_shared_ptr")
    _need_ptr(tma_desc_global_ptr, (AddressSpace.gmem,), "tma_desc_global_ptr")
    return _emit("cp_fence_tma_desc_release", CpFenceTensormapReleaseOp(), src=tma_desc_shared_ptr,
                 dst=tma_desc_global_ptr)


def fence_tma_desc_release() -> None:
    """``fence.proxy.tensormap::generic.release.gpu``: publish descriptor writes."""
    return _emit("fence_tma_desc_release", FenceTensormapReleaseOp())


def extract_tensormap_ptr(tma_atom: Any) -> Any:
    """The address of the descriptor of ``tma_atom`` inside the kernel's parameters."""
    _check_tma_atom(tma_atom)
    return _emit("extract_tensormap_ptr", TensormapPtrOp(), atom=tma_atom)


def _check_tma_atom(atom):
    if getattr(atom, "descriptor", None) is None:
        raise CuteTypeError(f"expected a TMA atom from make_tiled_tma_atom, got {atom!r}")


def _check_crd(crd):
    crd = tuple(crd) if isinstance(crd, (tuple, list)) else (crd,)
    if not 1 <= len(crd) <= 5:
        raise CuteValueError(f"TMA coordinates have 1..5 entries, got {len(crd)}")
    for c in crd:
        if not is_int(c):
            raise CuteTypeError(f"TMA coordinates are integers, got {c!r}")
    return crd


def tma_load(tma_desc: Any, mbar: Any, smem_ptr: Any, crd: Int | tuple[Int, ...] | list[Int],
             mcast_mask: Int | None = None, cache_hint: Int | None = None) -> None:
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes`` (+ multicast)."""
    crd = _check_crd(crd)
    _need_ptr(smem_ptr, (AddressSpace.smem, AddressSpace.dsmem), "smem_ptr")
    _need_ptr(mbar, (AddressSpace.smem,), "mbar")
    if mcast_mask is not None and type(mcast_mask) is int and not 0 < mcast_mask < 1 << 16:
        raise CuteValueError(f"a multicast mask is a non-zero 16-bit mask, got {mcast_mask:#x}")
    if mcast_mask is None:
        return _emit("tma_load", CopyBulkTensorTileG2SOp(), desc=tma_desc, mbar=mbar, smem=smem_ptr, crd=crd,
                     cache_hint=cache_hint)
    return _emit("tma_load", CopyBulkTensorTileG2SMulticastOp(), desc=tma_desc, mbar=mbar, smem=smem_ptr, crd=crd,
                 mcast_mask=mcast_mask, cache_hint=cache_hint)


def tma_store(tma_desc: Any, smem_ptr: Any, crd: Int | tuple[Int, ...] | list[Int]) -> None:
    """``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group``."""
    crd = _check_crd(crd)
    _need_ptr(smem_ptr, (AddressSpace.smem,), "smem_ptr")
    return _emit("tma_store", CopyBulkTensorTileS2GOp(), desc=tma_desc, smem=smem_ptr, crd=crd)


def tma_store_arrive() -> None:
    """``cp.async.bulk.commit_group``: close the group of TMA stores issued so far."""
    return _emit("tma_store_arrive", BulkCommitGroupOp())


def tma_store_wait(count: int = 0, read: bool = False) -> None:
    """``cp.async.bulk.wait_group[.read] count``: wait until at most ``count`` store groups are pending."""
    if type(count) is not int or not 0 <= count <= 63:
        raise CuteValueError(f"tma_store_wait takes a static count in 0..63, got {count!r}")
    return _emit("tma_store_wait", BulkWaitGroupOp(count, bool(read)))


def cp_async_shared_global(dst: Any, src: Any, cp_size: int, modifier: LoadCacheMode,
                           src_size: Int | None = None) -> None:
    """``cp.async.{ca,cg}.shared.global [dst], [src], cp_size[, src_size]``: bytes beyond ``src_size`` are zeroed."""
    _need_ptr(dst, (AddressSpace.smem,), "dst")
    _need_ptr(src, (AddressSpace.gmem,), "src")
    if cp_size not in (4, 8, 16):
        raise CuteValueError(f"cp.async copies 4, 8 or 16 bytes, not {cp_size}")
    if not isinstance(modifier, LoadCacheMode) or modifier not in (LoadCacheMode.ALWAYS, LoadCacheMode.GLOBAL):
        raise CuteValueError(f"cp.async takes LoadCacheMode.ALWAYS (.ca) or GLOBAL (.cg), got {modifier!r}")
    if modifier is LoadCacheMode.GLOBAL and cp_size != 16:
        raise CuteValueError(f"cp.async.cg copies 16 bytes only, not {cp_size}")
    if src_size is not None and type(src_size) is int and not 0 <= src_size <= cp_size:
        raise CuteValueError(f"src_size must be in 0..{cp_size}, got {src_size}")
    return _emit("cp_async_shared_global", CopyG2SOp(modifier), dst=dst, src=src, cp_size=cp_size, src_size=src_size)


def cp_async_gs(size: int, dst: Any, src: Any) -> None:
    """``cp.async.cg`` (``size`` 16 bytes) or ``.ca`` (4 or 8) of ``size`` bytes from global ``src`` to shared
    ``dst``."""
    mode = LoadCacheMode.GLOBAL if size == 16 else LoadCacheMode.ALWAYS
    return cp_async_shared_global(dst, src, size, mode)


def cp_async_gs_conditional(size: int, dst: Any, src: Any, cond: Any) -> None:
    """Like :func:`cp_async_gs`, but copies zeros (``src_size = 0``) where ``cond`` is false."""
    mode = LoadCacheMode.GLOBAL if size == 16 else LoadCacheMode.ALWAYS
    if type(cond) is bool:
        return cp_async_shared_global(dst, src, size, mode, size if cond else 0)
    return _emit("cp_async_gs_conditional", CopyG2SOp(mode), dst=dst, src=src, cp_size=size, pred=cond)
