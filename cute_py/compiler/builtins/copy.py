"""``cute_py.copy``: tile copies in a kernel — TMA, cp.async, or plain loads and stores.

``copy(atom_or_tiled_copy, src, dst, ...)`` picks the instructions from the atom:

- a TMA atom (``make_tiled_tma_atom``): the partitions of ``tma_partition`` have mode 0 =
  ``((TMA, TMA_Iter))`` and any number of rest modes; one TMA instruction (load, store or
  reduction) is issued per ``(TMA_Iter, rest)`` position, by one lane of each warp that runs the copy
  (as in the CuTe DSL; see ``_one_lane``), in the order ``reference.run_tma_copy``
  uses: its TMA coordinates are read from the coordinate tensor (traced ``ArithTuple`` s), and its
  shared-memory address is the tile's *unswizzled* byte offset (the TMA applies the swizzle
  itself). The descriptor is the atom's kernel parameter (128 bytes, ``__grid_constant__``).
- a copy atom, tiled copy or thread slice of ``CopyG2SOp``: cp.async, one per atom instruction,
  zero-filling where ``pred`` is false (see ``thread_copy``);
- an ``LdMatrix8x8x16bOp`` / ``StMatrix8x8x16bOp`` atom: ldmatrix / stmatrix between a shared-memory
  partition and a register fragment (see :mod:`cute_py.compiler.builtins.warp_mma`);
- any other copy atom (``CopyUniversalOp``): plain vector loads and stores, skipped where
  ``pred`` is false.

``copy(src, dst)`` (no atom) is a plain copy vectorised as widely as both layouts allow.
``async_copy(src, dst, pred=...)`` issues cp.async (no wait: close the group with
``arch.cp_async_commit_group`` and wait with ``arch.cp_async_wait_group``), and
``tma_copy(src, dst, barrier=...)`` is the producer half of a TMA load (expect the bytes on
``barrier`` and issue the load) or a TMA store, finding the atom from the TMA coordinate tensor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.coords import idx2crd
from ...core.int_tuple import product
from ...atom import CopyAtom, CopyUniversalOp, ThrCopy, TiledCopy
from ...nvgpu.cpasync.ops import CopyG2SOp, LoadCacheMode
from ...nvgpu.sync import CopyDsmemStoreOp
from ...nvgpu.tma.atom import TmaCopyAtom
from ...nvgpu.tma.ops import (CopyBulkTensorTileG2SMulticastOp, CopyBulkTensorTileG2SOp, CopyBulkTensorTileS2GOp,
                              CopyReduceBulkTensorTileS2GOp)
from ...nvgpu.warp.ops import LdMatrix8x8x16bOp, StMatrix8x8x16bOp
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.tensor import Tensor
from ...tensor.engines import ArrayEngine, CoordEngine, check_store
from ..emit import emit
from .mbar_rules import mark_election, note
from ...errors import TraceError

if TYPE_CHECKING:
    from ..emit.tma import DescriptorPointer
    from ..lang.values import TracedBool
    from ..lang.traced_int import TracedInt


__all__ = ["copy", "async_copy", "tma_copy", "L2_EVICT_NORMAL", "L2_EVICT_FIRST", "L2_EVICT_LAST"]

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


def _smem_element(t, k, j):
    # the *unswizzled* element offset of the instruction's first element (the TMA applies the swizzle)
    layout = t.layout
    outer = getattr(layout, "outer", layout)
    return getattr(layout, "offset", 0) + _first(outer, k, j)


def _check_tensor(t, role, coord):
    if not isinstance(t, Tensor):
        raise TraceError(f"copy: {role} must be a tensor from tma_partition, got {t!r}")
    if coord and not isinstance(t.engine, CoordEngine):
        raise TraceError(f"copy: {role} must be the gmem (TMA coordinate) side of tma_partition, got {t!r}")
    if not coord and not (isinstance(t.engine, Pointer) and t.engine.memspace is AddressSpace.smem):
        raise TraceError(f"copy: {role} must be a shared-memory tensor, got {t!r}")


def copy(atom: TmaCopyAtom | CopyAtom | TiledCopy | ThrCopy | Tensor, src: Tensor, dst: Tensor | None = None, *,
         pred: bool | TracedBool | Tensor | None = None, tma_bar_ptr: Pointer | None = None,
         mcast_mask: TracedInt | int | None = None, cache_hint: TracedInt | int | None = None,
         tma_desc_ptr: Pointer | DescriptorPointer | None = None, mbar_ptr: Pointer | None = None) -> None:
    """Copy ``src`` to ``dst`` with ``atom`` (a TMA atom, a copy atom, a tiled copy or a thread slice of one);
    ``copy(src, dst)`` copies with plain loads and stores.

    TMA loads (G2S) need ``tma_bar_ptr``, the shared-memory mbarrier completed by the loaded bytes;
    a multicast load takes ``mcast_mask`` (16-bit, static or traced). Stores and reductions (S2G)
    are issued into this thread's bulk group (close it with ``arch.tma_store_arrive``).
    ``cache_hint`` is a 64-bit L2 cache policy (``.L2::cache_hint``; e.g. ``L2_EVICT_FIRST``) for
    TMA and cp.async. ``tma_desc_ptr`` makes a TMA copy use the descriptor at that address (one
    updated on the device, in global memory) instead of the atom's kernel parameter.
    ``pred`` (cp.async and plain copies): see :mod:`cute_py.compiler.builtins.thread_copy`.
    A ``CopyDsmemStoreOp`` atom stores a register fragment into a peer CTA's shared memory (``dst`` a tensor
    over ``arch.map_dsmem_ptr``) and completes its bytes on the peer's mbarrier ``mbar_ptr`` (mapped the same way).
    Each instruction goes through the op's emission entry (:mod:`cute_py.compiler.emit`).
    """
    from .thread_copy import vector_copy

    if dst is None:
        if isinstance(atom, Tensor) and isinstance(src, Tensor):
            _no_tma_args(tma_bar_ptr, mcast_mask, "a plain copy")
            _no_mbar(mbar_ptr, "a plain copy")
            return vector_copy(atom, src, pred=pred, cache_hint=cache_hint)
        raise TraceError(f"copy takes (atom, src, dst) or (src, dst), got {atom!r}, {src!r}")
    if isinstance(atom, TmaCopyAtom):
        if pred is not None:
            raise TraceError("a TMA copy takes no pred (the TMA unit skips out-of-bounds elements itself)")
        _no_mbar(mbar_ptr, "a TMA copy (its mbarrier is tma_bar_ptr)")
        return _tma(atom, src, dst, tma_bar_ptr, mcast_mask, cache_hint, tma_desc_ptr)
    if tma_desc_ptr is not None:
        raise TraceError("tma_desc_ptr applies to TMA atoms only")
    if isinstance(atom, ThrCopy):
        atom = atom.tiled_copy
    if isinstance(atom, TiledCopy):
        atom = atom.atom
    if not isinstance(atom, CopyAtom):
        raise TraceError(f"copy needs a copy atom, a tiled copy or a TMA atom, got {atom!r}")
    _no_tma_args(tma_bar_ptr, mcast_mask, "a cp.async, DSMEM or plain copy")
    if isinstance(atom.op, (LdMatrix8x8x16bOp, StMatrix8x8x16bOp)):
        if pred is not None or cache_hint is not None or mbar_ptr is not None:
            raise TraceError("ldmatrix/stmatrix copies take no pred, cache_hint or mbar_ptr")
        return emit(atom.op, atom=atom, src=src, dst=dst)
    vector = atom.num_bits // atom.dtype.width
    if isinstance(atom.op, CopyDsmemStoreOp):
        if pred is not None or cache_hint is not None:
            raise TraceError("a DSMEM store takes no pred or cache_hint")
        return _dsmem_copy(atom, src, dst, mbar_ptr, vector)
    _no_mbar(mbar_ptr, "a cp.async or plain copy")
    if isinstance(atom.op, CopyG2SOp):
        modifier = "cg" if atom.op.cache_mode is LoadCacheMode.GLOBAL else "ca"
        return vector_copy(src, dst, vector=vector, cp_async=modifier, pred=pred, cache_hint=cache_hint)
    if not isinstance(atom.op, CopyUniversalOp):
        raise TraceError(f"copy does not support {type(atom.op).__name__} atoms in kernels")
    if atom.widest:  # no width asked for: the widest the tensors allow (per-element predicates included)
        return vector_copy(src, dst, pred=pred, cache_hint=cache_hint)
    return vector_copy(src, dst, vector=vector, pred=pred, cache_hint=cache_hint)


def _no_mbar(mbar_ptr, what):
    if mbar_ptr is not None:
        raise TraceError(f"{what} takes no mbar_ptr")


def _dsmem_copy(atom, src, dst, mbar_ptr, vector):
    """``st.async`` of the register fragment ``src`` into the peer CTA's tile ``dst``, one per ``vector``."""
    from ..lang.memory import element_ptr, pack

    if mbar_ptr is None:
        raise TraceError("a DSMEM store needs mbar_ptr= (the peer's mbarrier, from arch.map_dsmem_ptr)")
    if not isinstance(src, Tensor) or not isinstance(src.engine, ArrayEngine):
        raise TraceError(f"a DSMEM store copies a register fragment (make_fragment), got {src!r}")
    if not (isinstance(dst, Tensor) and isinstance(dst.engine, Pointer) and dst.engine.memspace is AddressSpace.dsmem):
        raise TraceError(f"a DSMEM store writes a tensor over a peer CTA's shared memory "
                         f"(make_tensor(arch.map_dsmem_ptr(ptr, rank), layout)), got {dst!r}")
    peer = dst.engine.peer
    other = getattr(mbar_ptr, "peer", None)
    if type(peer) is int and type(other) is int and peer != other:
        raise TraceError(f"a DSMEM store completes its bytes on the mbarrier of the CTA it writes: the tile "
                         f"is mapped to CTA {peer}, the mbarrier to CTA {other}")
    if src.element_type != dst.element_type or src.element_type != atom.dtype:
        raise TraceError(f"a DSMEM store of {atom.dtype.name} needs {atom.dtype.name} fragments and tiles, got "
                         f"{src.element_type.name} -> {dst.element_type.name}")
    check_store(dst, "a DSMEM store")
    n = product(src.layout.shape)
    if n != product(dst.layout.shape):
        raise TraceError(f"copy: {n} register elements into a tile of {product(dst.layout.shape)}")
    if type(n) is not int or n % vector:
        raise TraceError(f"copy: {n} elements are not a whole number of {vector}-element st.async stores")
    nbits, nbytes = atom.num_bits, atom.num_bits // 8
    for c in range(0, n, vector):
        ptr = element_ptr(dst, c)
        for i in range(c + 1, c + vector):  # the vector's elements are adjacent in the peer's memory
            if not _adjacent(dst, c, i):
                raise TraceError(f"copy: elements {c}..{c + vector - 1} of {dst.layout} are not adjacent: a "
                                 f"{nbytes}-byte st.async needs them contiguous")
        if ptr.alignment < nbytes:
            raise TraceError(f"a {nbytes}-byte st.async needs a {nbytes}-byte aligned address, but {ptr!r} is "
                             f"only known to be {ptr.alignment}-byte aligned")
        values = [src.engine.read(src.layout(i)) for i in range(c, c + vector)]
        emit(atom.op, dst=ptr, value=pack(values, atom.dtype, nbits), mbar=mbar_ptr, cta_id=peer)


def _adjacent(t, first, i):
    a, b = t.layout(first), t.layout(i)
    return type(a) is int and type(b) is int and b - a == i - first


def _no_tma_args(tma_bar_ptr, mcast_mask, what):
    if tma_bar_ptr is not None or mcast_mask is not None:
        raise TraceError(f"{what} takes no tma_bar_ptr or mcast_mask")


def async_copy(src: Tensor, dst: Tensor, *, pred: bool | TracedBool | Tensor | None = None,
               cache_mode: LoadCacheMode = LoadCacheMode.ALWAYS, cache_hint: TracedInt | int | None = None) -> None:
    """cp.async ``src`` (gmem) into ``dst`` (smem) in the widest vectors of 4, 8 or 16 bytes both allow;
    zero-fills where ``pred`` is false. No wait: commit and wait with the ``arch.cp_async_*`` builtins."""
    from .thread_copy import vector_copy, vector_width

    if not isinstance(src, Tensor) or not isinstance(dst, Tensor):
        raise TraceError(f"async_copy takes two tensors, got {src!r}, {dst!r}")
    if cache_mode not in (LoadCacheMode.ALWAYS, LoadCacheMode.GLOBAL):
        raise TraceError(f"async_copy cache_mode must be LoadCacheMode.ALWAYS or GLOBAL, got {cache_mode!r}")
    v = vector_width(src, dst)
    modifier = "cg" if cache_mode is LoadCacheMode.GLOBAL and v * src.element_type.width == 128 else "ca"
    if cache_mode is LoadCacheMode.GLOBAL and modifier != "cg":
        raise TraceError(f"async_copy with LoadCacheMode.GLOBAL needs 16-byte vectors; these layouts allow "
                         f"{v * src.element_type.width // 8} bytes")
    return vector_copy(src, dst, vector=v, cp_async=modifier, pred=pred, cache_hint=cache_hint)


def tma_copy(src: Tensor, dst: Tensor, *, barrier: Pointer | None = None, mcast_mask: TracedInt | int | None = None,
             cache_hint: TracedInt | int | None = None, expect_bytes: TracedInt | int | None = None,
             tma_desc_ptr: Pointer | DescriptorPointer | None = None, eviction_policy: str | None = None) -> None:
    """The producer half of a TMA copy of ``tma_partition`` results, the atom found from the coordinate side.

    A load (``src`` the gmem coordinate partition) expects its bytes on ``barrier`` (``expect_bytes``;
    default: the bytes of the whole smem tile of the partition — with multicast every CTA of the
    group receives every CTA's slice, so each expects the whole tile) and issues its load; the consumer waits
    on ``barrier``. A store or reduction (``dst`` the coordinate partition) is issued into the bulk group.
    ``eviction_policy`` (TileLang's: ``"evict_normal"``, ``"evict_first"``, ``"evict_last"``) is the L2 cache
    policy of that name as ``cache_hint``.
    """
    if eviction_policy is not None:
        policies = {"evict_normal": L2_EVICT_NORMAL, "evict_first": L2_EVICT_FIRST, "evict_last": L2_EVICT_LAST}
        if eviction_policy not in policies:
            raise TraceError(f"tma_copy: eviction_policy must be one of {sorted(policies)} or None, got "
                             f"{eviction_policy!r}")
        if cache_hint is not None:
            raise TraceError("tma_copy: give eviction_policy= or cache_hint=, not both")
        cache_hint = policies[eviction_policy]
    coord, smem = (src, dst) if isinstance(getattr(src, "engine", None), CoordEngine) else (dst, src)
    atom = getattr(getattr(coord, "engine", None), "source", None)
    if not isinstance(atom, TmaCopyAtom):
        raise TraceError("tma_copy needs the partitions of a TMA coordinate tensor (from make_tiled_tma_atom "
                         f"and tma_partition), got {src!r} -> {dst!r}")
    if coord is src:
        if barrier is None:
            raise TraceError("a TMA load needs barrier= (the mbarrier its bytes complete)")
        from .arch_mbar import mbarrier_arrive_and_expect_tx

        if expect_bytes is None:  # the whole tile (with multicast, every CTA receives every slice)
            expect_bytes = product(smem.layout.shape) * smem.engine.dtype.width // 8
        mbarrier_arrive_and_expect_tx(barrier, expect_bytes)
        return _tma(atom, src, dst, barrier, mcast_mask, cache_hint, tma_desc_ptr)
    if barrier is not None or expect_bytes is not None:
        raise TraceError("a TMA store takes no barrier or expect_bytes")
    return _tma(atom, src, dst, None, mcast_mask, cache_hint, tma_desc_ptr)


def _tma(atom, src, dst, tma_bar_ptr, mcast_mask, cache_hint, tma_desc_ptr=None):
    op = atom.op
    is_load = isinstance(op, (CopyBulkTensorTileG2SOp, CopyBulkTensorTileG2SMulticastOp))
    operands = {"desc": atom if tma_desc_ptr is None else tma_desc_ptr, "cache_hint": cache_hint}
    if is_load:
        _check_tensor(src, "src", True)
        _check_tensor(dst, "dst", False)
        check_store(dst, "a TMA load")
        if tma_bar_ptr is None:
            raise TraceError("a TMA load needs tma_bar_ptr= (the mbarrier its bytes complete)")
        gmem, smem = src, dst
        from ..lang.smem import check_mbarrier_pointer

        check_mbarrier_pointer(tma_bar_ptr, "copy: tma_bar_ptr")
        operands["mbar"] = tma_bar_ptr
        static_mask = _static_int(mcast_mask)
        if static_mask == 0 and not isinstance(op, CopyBulkTensorTileG2SMulticastOp):
            mcast_mask = None  # "no multicast", as the DSL's GEMMs pass to the atom of a cluster mode of size 1
        if mcast_mask is not None:
            if not isinstance(op, CopyBulkTensorTileG2SMulticastOp):
                raise TraceError(f"mcast_mask={mcast_mask!r} needs an atom of CopyBulkTensorTileG2SMulticastOp (only "
                                 f"a static 0, no multicast, goes with {type(op).__name__})")
            if static_mask == 0:
                raise TraceError("mcast_mask=0 multicasts to no CTA: the load would never complete (pass None, or "
                                 "the mask of the CTAs that receive the tile)")
            operands["mcast_mask"] = mcast_mask
        else:
            op = CopyBulkTensorTileG2SOp()  # a multicast atom without a mask loads into this CTA only
    elif isinstance(atom.op, (CopyBulkTensorTileS2GOp, CopyReduceBulkTensorTileS2GOp)):
        _check_tensor(src, "src", False)
        _check_tensor(dst, "dst", True)
        if tma_bar_ptr is not None or mcast_mask is not None:
            raise TraceError("a TMA store or reduction takes no tma_bar_ptr or mcast_mask")
        gmem, smem = dst, src
    else:
        raise TraceError(f"copy does not support {type(atom.op).__name__} yet")
    iters, rest = _iters(gmem.layout)
    s_iters, s_rest = _iters(smem.layout)
    if (iters, rest) != (s_iters, s_rest):
        raise TraceError(f"copy: the smem and gmem partitions differ: {iters}x{rest} TMA instructions vs "
                         f"{s_iters}x{s_rest} (smem {smem.layout}, gmem {gmem.layout})")
    box = atom.descriptor.box_bytes if tma_desc_ptr is None else None  # what one instruction brings
    with _one_lane():
        mark_election()
        for k in range(iters):
            for j in range(rest):
                emit(op, smem=smem.engine + _smem_element(smem, k, j), crd=_tma_coord(gmem, k, j), **operands)
                if is_load:
                    note("load", tma_bar_ptr, box, mask=operands.get("mcast_mask"), name="copy")


def _static_int(x):
    """``x`` as a Python int when it is a static integer (an int or a numeric constant), else None."""
    if type(x) is int:
        return x
    known = getattr(x, "constant_value", None)
    value = known() if known is not None else getattr(x, "value", None)
    return value if type(value) is int else None


def _one_lane():
    """The TMA instructions are issued by one lane of each warp, as in the CuTe DSL: the lane ``elect.sync``
    picks among the lanes executing the copy (``activemask``), so a copy under ``elect_one()`` or
    ``if tidx == 0`` (where the DSL's full-warp election would hang) is issued once too."""
    from ..emit.sync import elect_active_lane
    from ..flow.control import if_
    from ..lang.values import TracedBool

    return if_(TracedBool(elect_active_lane()))
