"""``cute_py.copy(atom, src, dst, tma_bar_ptr=...)``: TMA loads and stores of ``tma_partition`` results.

The partitions have mode 0 = ``((TMA, TMA_Iter))`` and any number of rest modes; one TMA
instruction is issued per ``(TMA_Iter, rest)`` position, in the order ``reference.run_tma_copy``
uses: its TMA coordinates are read from the coordinate tensor (traced ``ArithTuple`` s), and its
shared-memory address is the tile's *unswizzled* byte offset (the TMA applies the swizzle
itself). The descriptor is the atom's kernel parameter (128 bytes, ``__grid_constant__``).
"""

from ..int_tuple import idx2crd, product
from ..nvgpu.cpasync import (CopyBulkTensorTileG2SMulticastOp, CopyBulkTensorTileG2SOp, CopyBulkTensorTileS2GOp,
                             TmaCopyAtom)
from ..pointer import AddressSpace, Pointer
from ..tensor import CoordEngine, Tensor
from .builder import current, pointer_value
from .errors import TraceError, locate
from .values import TracedInt, as_value

import mlir_dialects as md

__all__ = ["copy", "KernelTracer", "L2_EVICT_NORMAL", "L2_EVICT_FIRST", "L2_EVICT_LAST"]

# 64-bit L2 cache policies for ``.L2::cache_hint`` (the encodings CUTLASS uses on sm_90)
L2_EVICT_NORMAL = 0x1000000000000000
L2_EVICT_FIRST = 0x12F0000000000000
L2_EVICT_LAST = 0x14F0000000000000


def _iters(layout):
    mode0 = layout.shape[0] if type(layout.shape) is tuple else layout.shape
    inner = mode0[1] if type(mode0) is tuple and len(mode0) > 1 else 1
    m0 = product(mode0)
    return product(inner), product(layout.shape) // m0


def _first(layout, k, j):
    # the offset of element (0, k) of mode 0 ((TMA, TMA_Iter)) at index j of the rest modes
    shape = layout.shape
    rest = shape[1:] if type(shape) is tuple else ()
    if rest:
        rc = idx2crd(j, rest)
        rc = rc if type(rc) is tuple else (rc,)
    else:
        rc = ()
    mode0 = shape[0] if type(shape) is tuple else shape
    c0 = (0, k) if type(mode0) is tuple and len(mode0) > 1 else 0
    coord = (c0,) + rc
    return layout(coord if type(shape) is tuple else coord[0])


def _tma_coord(t, k, j):
    v = t.engine.read(_first(t.layout, k, j))
    return tuple(v) if isinstance(v, tuple) else (v,)


def _smem_byte(t, k, j):
    layout = t.layout
    outer = getattr(layout, "outer", layout)
    off = getattr(layout, "offset", 0)
    return (off + _first(outer, k, j)) * t.engine.dtype.width // 8


def _check_tensor(t, role, coord):
    if not isinstance(t, Tensor):
        raise TraceError(locate(f"copy: {role} must be a tensor from tma_partition, got {t!r}"))
    if coord and not isinstance(t.engine, CoordEngine):
        raise TraceError(locate(f"copy: {role} must be the gmem (TMA coordinate) side of tma_partition, got {t!r}"))
    if not coord and not (isinstance(t.engine, Pointer) and t.engine.memspace is AddressSpace.smem):
        raise TraceError(locate(f"copy: {role} must be a shared-memory tensor, got {t!r}"))


def copy(atom, src, dst, *, tma_bar_ptr=None, mcast_mask=None, cache_hint=None):
    """Copy ``src`` to ``dst`` with ``atom`` (a TMA atom; the partitions come from ``tma_partition``).

    Loads (G2S) need ``tma_bar_ptr``, the shared-memory mbarrier completed by the loaded bytes;
    a multicast load takes ``mcast_mask`` (16-bit, static or traced). Stores (S2G) are issued
    into this thread's bulk group (close it with ``arch.tma_store_arrive``). ``cache_hint`` is a
    64-bit L2 cache policy (``.L2::cache_hint``; e.g. ``L2_EVICT_FIRST``), static or traced.
    """
    b = current()
    if not isinstance(atom, TmaCopyAtom):
        raise TraceError(locate(f"copy supports TMA atoms (make_tiled_tma_atom) so far, got {atom!r}"))
    desc = b.descriptor_of(atom)
    is_load = isinstance(atom.op, (CopyBulkTensorTileG2SOp, CopyBulkTensorTileG2SMulticastOp))
    if is_load:
        _check_tensor(src, "src", True)
        _check_tensor(dst, "dst", False)
        if tma_bar_ptr is None:
            raise TraceError(locate("a TMA load needs tma_bar_ptr= (the mbarrier its bytes complete)"))
        gmem, smem = src, dst
        bar = pointer_value(tma_bar_ptr, "tma_bar_ptr")
        mask = None
        if mcast_mask is not None:
            if not isinstance(atom.op, CopyBulkTensorTileG2SMulticastOp):
                raise TraceError(locate("mcast_mask needs an atom of CopyBulkTensorTileG2SMulticastOp"))
            mask = as_value(mcast_mask, 16)
    elif isinstance(atom.op, CopyBulkTensorTileS2GOp):
        _check_tensor(src, "src", False)
        _check_tensor(dst, "dst", True)
        if tma_bar_ptr is not None or mcast_mask is not None:
            raise TraceError(locate("a TMA store takes no tma_bar_ptr or mcast_mask"))
        gmem, smem = dst, src
    else:
        raise TraceError(locate(f"copy does not support {type(atom.op).__name__} yet"))
    hint = None if cache_hint is None else as_value(cache_hint, 64)
    iters, rest = _iters(gmem.layout)
    s_iters, s_rest = _iters(smem.layout)
    if (iters, rest) != (s_iters, s_rest):
        raise TraceError(locate(f"copy: the smem and gmem partitions differ: {iters}x{rest} TMA instructions vs "
                                f"{s_iters}x{s_rest} (smem {smem.layout}, gmem {gmem.layout})"))
    base = smem.engine.address
    if base is None:
        raise TraceError(locate(f"copy: the shared-memory tensor {smem!r} is at a run-time offset; only static "
                                f"offsets into shared memory are supported so far"))
    for k in range(iters):
        for j in range(rest):
            crd = [as_value(c, 32) for c in _tma_coord(gmem, k, j)]
            byte = _smem_byte(smem, k, j)
            if isinstance(byte, TracedInt):
                sp = b.smem_ptr(as_value(base + byte, 32))
            else:
                sp = b.smem_ptr(base + byte)
            with b.at_end():
                if is_load:
                    md.tma_load(sp, desc, bar, crd, multicast_mask=mask, cache_hint=hint)
                else:
                    md.tma_store(desc, sp, crd, cache_hint=hint)


class KernelTracer:
    """The tracer ``cute_py.nvgpu`` device operations emit into (``device_ops.set_tracer``)."""

    def emit(self, name, **operands):
        b = current()
        if name == "prefetch_tensormap":
            desc = b.descriptor_of(operands["atom"])
            with b.at_end():
                md.prefetch_tensormap(desc)
            return None
        if name in ("tma_load", "tma_store"):
            desc = operands["desc"]
            desc = b.descriptor_of(desc) if isinstance(desc, TmaCopyAtom) else desc
            crd = [as_value(c, 32) for c in operands["crd"]]
            sp = pointer_value(operands["smem"], "smem_ptr")
            with b.at_end():
                if name == "tma_load":
                    bar = pointer_value(operands["mbar"], "mbar")
                    mask = operands.get("mcast_mask")
                    md.tma_load(sp, desc, bar, crd, multicast_mask=None if mask is None else as_value(mask, 16))
                else:
                    md.tma_store(desc, sp, crd)
            return None
        if name == "tma_store_arrive":
            with b.at_end():
                md.tma_store_arrive()
            return None
        if name == "tma_store_wait":
            with b.at_end():
                md.tma_store_wait(operands["count"], read=operands["read"])
            return None
        raise TraceError(locate(f"cute_py.nvgpu.{name} is not supported by the JIT yet"))
