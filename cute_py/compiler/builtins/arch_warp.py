"""Kernel builtins of warps and warp groups: shuffles, votes, named barriers, register reallocation,
vector global loads/stores, and the cp.async / cluster mbarrier arrivals.

Like the builtins of :mod:`cute_py.compiler.builtins.arch`, each function emits its operation into the kernel
being traced (outside a kernel it raises :class:`~cute_py.errors.TraceError`), and every
static argument is checked while tracing, with an error naming the rule and the value.

Masks are 32-bit lane masks (bit ``i`` for lane ``i``): a Python int or a traced ``Int32``. The
``*_sync`` operations must be executed by every lane named in their mask.

Each instruction is an op of the ``cute_nvgpu`` dialect (:mod:`mlir_dialects.ops_warp` and its
neighbours), whose verifier checks it again and whose lowering gives its PTX.

Vector global accesses (``ldg``/``stg``) move 32-bit words: a load returns a tuple of traced
``Int32`` words, a store takes such a tuple. The address is a global-memory pointer at a static
offset (``tensor.engine + k`` of a kernel's tensor argument), plus ``index`` accesses of the same
size, so a per-thread address such as ``stg128(out.engine, words, index=tid)`` keeps the
alignment that the pointer guarantees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mlir_dialects as md

from ...tensor.pointer import AddressSpace, Pointer
from ..frontend.builder import current
from ..frontend.memory import pointer_value
from ...errors import TraceError
from ..frontend.values import TracedBool, TracedFloat, TracedInt, as_value

__all__ = [
    "warp_group_idx", "sync_warp", "barrier_sync", "barrier_arrive",
    "shuffle_sync", "shuffle_up_sync", "shuffle_down_sync", "shuffle_xor_sync",
    "elect_one_sync", "shuffle_elect", "vote_any", "vote_all", "vote_uni", "vote_ballot", "active_mask",
    "set_max_nreg",
    "ldg", "stg", "ldg32", "ldg64", "ldg128", "ldg256", "stg32", "stg64", "stg128", "stg256",
    "cp_async_barrier_noinc", "mbarrier_remote_arrive",
]

FULL_MASK = 0xFFFFFFFF
WARP_SIZE = 32
WARP_GROUP_SIZE = 128
NAMED_BARRIERS = 16          # bar.sync / bar.arrive ids 0..15
MAX_BLOCK_THREADS = 1024
MAX_CLUSTER_CTAS = 16        # the largest (non-portable) cluster on sm_90
ACCESS_BITS = (32, 64, 128, 256)
LOAD_CACHE_MODIFIERS = ("ca", "cg", "cs", "lu", "cv", "nc")
STORE_CACHE_MODIFIERS = ("wb", "cg", "cs", "wt")


# -- argument checks ------------------------------------------------------------------------------


def _is_int(x):
    return type(x) is int


def _static_int(x, what, rule):
    """``x`` as a static Python int; ``TraceError`` naming ``rule`` when it is traced or not an int."""
    if not _is_int(x):
        kind = "a traced value" if isinstance(x, (TracedInt, TracedBool, TracedFloat)) else repr(x)
        raise TraceError(f"{what} must be a static Python int ({rule}), got {kind}")
    return x


def _mask_value(mask, what="mask"):
    """The i32 value of a lane mask: a static int in [0, 2^32) with at least one lane, or a traced Int32."""
    if isinstance(mask, TracedInt):
        if mask.width != 32:
            raise TraceError(f"{what} is a 32-bit lane mask: pass an Int32, got a traced i{mask.width}")
        return mask.ir
    if not _is_int(mask):
        raise TraceError(f"{what} must be a 32-bit lane mask (an int or a traced Int32), got {mask!r}")
    if not 0 <= mask <= FULL_MASK:
        raise TraceError(f"{what} must be a 32-bit lane mask in [0, 0xFFFFFFFF], got {mask:#x}")
    if mask == 0:
        raise TraceError(f"{what} names no lane (0): a lane mask needs at least one lane")
    return current().const(mask - (1 << 32) if mask >= 1 << 31 else mask, 32)


def _i32_operand(x, what, lo=None, hi=None, rule=""):
    """The i32 value of a lane/offset/id operand: a static int (checked against [lo, hi)) or a traced int."""
    if isinstance(x, TracedInt):
        return as_value(x, 32)
    if not _is_int(x):
        raise TraceError(f"{what} must be an int or a traced integer, got {x!r}")
    if lo is not None and not lo <= x < hi:
        raise TraceError(f"{what} must lie in [{lo}, {hi}){rule}, got {x}")
    return current().const(x, 32)


def _predicate(pred, what):
    if isinstance(pred, TracedBool):
        return pred.ir
    if type(pred) is bool:
        return current().const(int(pred), 1)
    raise TraceError(f"{what} must be a run-time condition (a comparison of traced values) or a bool, "
                     f"got {pred!r}")


# -- indices and barriers ---------------------------------------------------------------------------


def warp_group_idx() -> TracedInt:
    """The warp group's index in the block: ``tid.x // 128`` for a 1-D block.

    The value is broadcast from lane 0 (``shfl.sync.idx.b32 ... 0, 0x1f, 0xffffffff``) so that it is
    warp-uniform for the compiler too (as CUTLASS's ``canonical_warp_group_idx``); every lane of the
    warp must execute it.
    """
    with current().at_end():
        tid = TracedInt(md.read_sreg("tid.x").value, 32, True)
    wg = tid // WARP_GROUP_SIZE
    return _shuffle("idx", wg, 0, FULL_MASK, WARP_SIZE, "warp_group_idx")


def sync_warp(mask: TracedInt | int = FULL_MASK) -> None:
    """``bar.warp.sync mask``: wait until every lane of ``mask`` reached it (and order their memory accesses)."""
    m = _mask_value(mask)
    with current().at_end():
        md.bar_warp_sync(m)


def _barrier_operands(name, barrier_id, count, need_count):
    bid = _i32_operand(barrier_id, f"{name}: the barrier id", 0, NAMED_BARRIERS,
                       " (the hardware has 16 named barriers per CTA)")
    if count is None:
        if need_count:
            raise TraceError(f"{name} needs a thread count")
        return bid, None
    if _is_int(count):
        if count <= 0 or count % WARP_SIZE or count > MAX_BLOCK_THREADS:
            raise TraceError(f"{name}: the thread count must be a positive multiple of the warp size "
                             f"({WARP_SIZE}) of at most {MAX_BLOCK_THREADS}, got {count}")
    return bid, _i32_operand(count, f"{name}: the thread count")


def barrier_sync(barrier_id: TracedInt | int, count: TracedInt | int | None = None) -> None:
    """``bar.sync id{, count}``: wait on named barrier ``id`` (0..15) until ``count`` threads arrived.

    ``count`` is a multiple of 32 (whole warps); without it, every thread of the block takes part.
    """
    bid, cnt = _barrier_operands("barrier_sync", barrier_id, count, False)
    with current().at_end():
        md.barrier_sync(bid, cnt)


def barrier_arrive(barrier_id: TracedInt | int, count: TracedInt | int) -> None:
    """``bar.arrive id, count``: arrive on named barrier ``id`` (0..15) without waiting (producer side).

    ``count`` (a multiple of 32) is the number of threads the barrier waits for, as in the
    matching ``barrier_sync(id, count)`` of the consumers.
    """
    bid, cnt = _barrier_operands("barrier_arrive", barrier_id, count, True)
    with current().at_end():
        md.barrier_arrive(bid, cnt)


# -- shuffles ---------------------------------------------------------------------------------------


def _check_width(width, name):
    w = _static_int(width, f"{name}: width", "a power of two in 1..32")
    if w < 1 or w > WARP_SIZE or w & (w - 1):
        raise TraceError(f"{name}: width must be a power of two in 1..32, got {w}")
    return w


def _shfl32(kind, value, lane, mask, clamp):
    """One ``shfl.sync.<kind>.b32`` of an i32 or f32 MLIR value."""
    b = current()
    c = b.const(clamp, 32)
    with b.at_end():
        return md.shfl_sync(kind, value, lane, c, mask).res


def _shuffle(kind, value, lane, mask, width, name):
    w = _check_width(width, name)
    what = {"idx": "src_lane", "up": "delta", "down": "delta", "bfly": "lane_mask"}[kind]
    lane_v = _i32_operand(lane, f"{name}: {what}", 0, w, f" (less than the width {w})")
    mask_v = _mask_value(mask, f"{name}: mask")
    # c = segmask << 8 | clamp: up clamps at the segment's first lane, the others at its last
    clamp = ((WARP_SIZE - w) << 8) | (0 if kind == "up" else WARP_SIZE - 1)
    b = current()
    if isinstance(value, TracedFloat):
        if str(value.ir.type) != "f32":
            raise TraceError(f"{name} shuffles f32 floats, got {value.ir.type}")
        return TracedFloat(_shfl32(kind, value.ir, lane_v, mask_v, clamp))
    if _is_int(value):
        if not -(1 << 31) <= value < (1 << 31):
            raise TraceError(f"{name}: a static value is shuffled as an Int32, {value} does not fit")
        value = TracedInt(b.const(value, 32), 32, value >= 0)
    if not isinstance(value, TracedInt):
        raise TraceError(f"{name} shuffles traced Int32/Int64 integers and Float32 floats, got {value!r}")
    if value.width == 32:
        return TracedInt(_shfl32(kind, value.ir, lane_v, mask_v, clamp), 32, value.nonneg)
    if value.width != 64:
        raise TraceError(f"{name} shuffles 32- or 64-bit integers, got i{value.width}")
    # an i64 moves as its two 32-bit halves
    arith = b.mlir.arith
    i32, i64 = b.int_type(32), b.int_type(64)
    shift = b.const(32, 64)
    with b.at_end():
        lo = arith.TruncIOp(i32, value.ir).result
        hi = arith.TruncIOp(i32, arith.ShRUIOp(value.ir, shift).result).result
    lo = _shfl32(kind, lo, lane_v, mask_v, clamp)
    hi = _shfl32(kind, hi, lane_v, mask_v, clamp)
    with b.at_end():
        lo64 = arith.ExtUIOp(i64, lo).result
        hi64 = arith.ShLIOp(arith.ExtUIOp(i64, hi).result, shift).result
        return TracedInt(arith.OrIOp(hi64, lo64).result, 64, value.nonneg)


def shuffle_sync(value: TracedInt | TracedFloat | int, offset: TracedInt | int, mask: TracedInt | int = FULL_MASK,
                 mask_and_clamp: int = WARP_SIZE - 1, *, width: int | None = None) -> TracedInt | TracedFloat:
    """``shfl.sync.idx.b32``: ``value`` of lane ``offset`` (the source lane) of this lane's ``width``-lane segment.

    ``value`` is a traced Int32/Int64 (an i64 moves as two 32-bit shuffles), a Float32, or a static
    int (shuffled as an Int32); ``width`` (keyword) is a static power of two in 1..32 and a static
    ``offset`` lies in [0, width). The result has ``value``'s type. ``mask_and_clamp`` is the CuTe
    DSL's packed form of the segment, ``((32 - width) << 8) | 31``; give one of the two.
    """
    if width is None:
        width = _width_of_clamp(mask_and_clamp, "shuffle_sync")
    elif mask_and_clamp != WARP_SIZE - 1:
        raise TraceError("shuffle_sync: give width= or mask_and_clamp=, not both")
    return _shuffle("idx", value, offset, mask, width, "shuffle_sync")


def _width_of_clamp(mask_and_clamp, name):
    """The segment width that ``mask_and_clamp`` (``((32 - width) << 8) | 31``) packs; ``TraceError`` otherwise."""
    c = _static_int(mask_and_clamp, f"{name}: mask_and_clamp", "((32 - width) << 8) | 31")
    width = WARP_SIZE - (c >> 8)
    if c & 0xFF != WARP_SIZE - 1 or c >> 8 > WARP_SIZE - 1 or width & (width - 1):
        raise TraceError(f"{name}: mask_and_clamp must be ((32 - width) << 8) | 31 for a power-of-two width "
                         f"in 1..32, got {c:#x}")
    return width


def shuffle_up_sync(value: TracedInt | TracedFloat | int, delta: TracedInt | int, mask: TracedInt | int = FULL_MASK,
                    width: int = WARP_SIZE) -> TracedInt | TracedFloat:
    """``shfl.sync.up.b32``: ``value`` of lane ``lane - delta``; lanes below ``delta`` in their segment keep
    their own value."""
    return _shuffle("up", value, delta, mask, width, "shuffle_up_sync")


def shuffle_down_sync(value: TracedInt | TracedFloat | int, delta: TracedInt | int,
                      mask: TracedInt | int = FULL_MASK, width: int = WARP_SIZE) -> TracedInt | TracedFloat:
    """``shfl.sync.down.b32``: ``value`` of lane ``lane + delta``; lanes whose source is past the end of their
    segment keep their own value."""
    return _shuffle("down", value, delta, mask, width, "shuffle_down_sync")


def shuffle_xor_sync(value: TracedInt | TracedFloat | int, lane_mask: TracedInt | int,
                     mask: TracedInt | int = FULL_MASK, width: int = WARP_SIZE) -> TracedInt | TracedFloat:
    """``shfl.sync.bfly.b32``: ``value`` of lane ``lane ^ lane_mask`` (butterfly, for reductions)."""
    return _shuffle("bfly", value, lane_mask, mask, width, "shuffle_xor_sync")


# -- election and votes -----------------------------------------------------------------------------


def elect_one_sync(mask: TracedInt | int = FULL_MASK) -> TracedBool:
    """``elect.sync _|p, mask``: a run-time condition true in exactly one lane of ``mask``.

    (``with arch.elect_one():`` is the block form for a full warp.)
    """
    m = None if _is_int(mask) and mask == FULL_MASK else _mask_value(mask, "elect_one_sync: mask")
    with current().at_end():
        return TracedBool(md.elect_sync(m).is_leader)


def shuffle_elect(mask: TracedInt | int | None = None) -> TracedBool:
    """A run-time condition true in one lane: the lowest lane of ``mask`` (default: the active lanes,
    ``activemask.b32``).

    The lowest lane (``ctz`` of the mask) is broadcast with ``shfl.sync.idx.b32`` from itself, so every
    lane compares its ``%laneid`` with the same, warp-uniform leader. Unlike ``elect.sync`` it works in
    partially active warps; every lane of ``mask`` must execute it.
    """
    b = current()
    m = active_mask().ir if mask is None else _mask_value(mask, "shuffle_elect: mask")
    llvm, arith = b.mlir.llvm, b.mlir.arith
    with b.at_end():
        lane = md.read_sreg("laneid").value
        first = llvm.intr_cttz(m, True, results=[b.int_type(32)])
    leader = _shfl32("idx", lane, first, m, WARP_SIZE - 1)
    with b.at_end():
        return TracedBool(arith.CmpIOp(arith.CmpIPredicate.eq, lane, leader).result)


def _vote(kind, pred, mask, name):
    p = _predicate(pred, f"{name}: the predicate")
    m = _mask_value(mask, f"{name}: mask")
    with current().at_end():
        return md.vote_sync(kind, p, m).res


def vote_any(pred: TracedBool | bool, mask: TracedInt | int = FULL_MASK) -> TracedBool:
    """``vote.sync.any.pred``: whether ``pred`` holds in any lane of ``mask`` (the same in every lane)."""
    return TracedBool(_vote("any", pred, mask, "vote_any"))


def vote_all(pred: TracedBool | bool, mask: TracedInt | int = FULL_MASK) -> TracedBool:
    """``vote.sync.all.pred``: whether ``pred`` holds in every lane of ``mask``."""
    return TracedBool(_vote("all", pred, mask, "vote_all"))


def vote_uni(pred: TracedBool | bool, mask: TracedInt | int = FULL_MASK) -> TracedBool:
    """``vote.sync.uni.pred``: whether ``pred`` has the same value in every lane of ``mask``."""
    return TracedBool(_vote("uni", pred, mask, "vote_uni"))


def vote_ballot(pred: TracedBool | bool, mask: TracedInt | int = FULL_MASK) -> TracedInt:
    """``vote.sync.ballot.b32``: an Int32 whose bit ``i`` is ``pred`` of lane ``i`` (0 for lanes not in ``mask``)."""
    return TracedInt(_vote("ballot", pred, mask, "vote_ballot"), 32, False)


def active_mask() -> TracedInt:
    """``activemask.b32``: an Int32 with a bit set for each lane of the warp executing it now."""
    with current().at_end():
        return TracedInt(md.activemask().mask, 32, False)


# -- register reallocation -----------------------------------------------------------------------


_NREG_ACTIONS = ("inc", "dec")


def set_max_nreg(n: int, action: str) -> None:
    """``setmaxnreg.{inc,dec}.sync.aligned.u32 n``: raise (``"inc"``) or lower (``"dec"``) the per-thread
    register budget of this warp group to ``n`` (sm_90a).

    ``n`` is a static multiple of 8 in 24..256; every warp of the warp group must execute the same
    instruction.
    """
    if not isinstance(action, str) or action not in _NREG_ACTIONS:
        raise TraceError(f"set_max_nreg: action must be 'inc' or 'dec', got {action!r}")
    n = _static_int(n, "set_max_nreg: the register count", "a multiple of 8 in 24..256")
    if not 24 <= n <= 256 or n % 8:
        raise TraceError(f"set_max_nreg: the register count must be a multiple of 8 in 24..256, got {n}")
    with current().at_end():
        md.setmaxnreg(action, n)


# -- vector global loads and stores ---------------------------------------------------------------


def _check_bits(bits, name):
    if not _is_int(bits) or bits not in ACCESS_BITS:
        raise TraceError(f"{name}: the access width must be one of {ACCESS_BITS} bits, got {bits!r}")
    return bits


def _cache_modifier(cache, allowed, name):
    """The cache operator named by ``cache`` (``"cg"`` or ``".cg"``), or None."""
    if cache is None:
        return None
    c = cache[1:] if isinstance(cache, str) and cache.startswith(".") else cache
    if c not in allowed:
        raise TraceError(f"{name}: cache modifier must be one of {', '.join(allowed)} (or None), "
                         f"got {cache!r}")
    return c


def _global_address(ptr, bits, index, name):
    """The ``!llvm.ptr<1>`` of access ``index`` (in units of ``bits``) from ``ptr``, its alignment checked."""
    nbytes = bits // 8
    if isinstance(ptr, Pointer):
        if ptr.memspace is not AddressSpace.gmem:
            raise TraceError(f"{name} accesses global memory, got a {ptr.memspace.name} pointer {ptr!r}")
        if ptr.address is None:
            raise TraceError(f"{name}: the pointer {ptr!r} has a run-time offset; pass the pointer at a "
                             f"static offset and the run-time part as index= (in {bits}-bit units)")
        align = ptr.alignment
    elif hasattr(ptr, "__cute_value__"):
        align = getattr(ptr, "alignment", None)
        if type(align) is not int:
            raise TraceError(f"{name}: the alignment of {ptr!r} is not known; a {bits}-bit access needs a "
                             f"pointer known to be {nbytes}-byte aligned")
    else:
        raise TraceError(f"{name} needs a global-memory pointer (e.g. tensor.engine of a kernel's tensor "
                         f"argument), got {ptr!r}")
    if align < nbytes:
        raise TraceError(f"{name}: a {bits}-bit access needs a {nbytes}-byte aligned address, but the "
                         f"pointer {ptr!r} is only {align}-byte aligned")
    base = pointer_value(ptr, f"{name}: the pointer")
    if str(base.type) != "!llvm.ptr<1>":
        raise TraceError(f"{name} accesses global memory, got a pointer of type {base.type}")
    if _is_int(index) and index == 0:
        return base
    b = current()
    llvm = b.mlir.llvm
    step = b.ir.Type.parse(f"!llvm.array<{bits // 32} x i32>")
    if _is_int(index) and -(1 << 31) <= index < (1 << 31):
        with b.at_end():
            return llvm.GEPOp(base.type, base, [], [index], step, 0).result
    if not (_is_int(index) or isinstance(index, TracedInt)):
        raise TraceError(f"{name}: index must be an int or a traced integer, got {index!r}")
    idx = as_value(index, 64)
    with b.at_end():
        return llvm.GEPOp(base.type, base, [idx], [-2147483648], step, 0).result


def _word(w, name, i):
    b = current()
    if isinstance(w, TracedInt):
        if w.width != 32:
            raise TraceError(f"{name}: word {i} must be 32 bits wide, got a traced i{w.width} "
                             f"(convert it with Int32(x))")
        return w.ir
    if isinstance(w, TracedFloat):
        if str(w.ir.type) != "f32":
            raise TraceError(f"{name}: word {i} must be 32 bits wide, got {w.ir.type}")
        with b.at_end():
            return b.mlir.arith.BitcastOp(b.int_type(32), w.ir).result
    if _is_int(w):
        if not -(1 << 31) <= w <= FULL_MASK:
            raise TraceError(f"{name}: word {i} must fit in 32 bits, got {w}")
        return b.const(w - (1 << 32) if w >= 1 << 31 else w, 32)
    raise TraceError(f"{name}: word {i} must be an int, a traced Int32 or a Float32, got {w!r}")


def ldg(ptr: Pointer | Any, bits: int, cache: str | None = None, *,
        index: TracedInt | int = 0) -> tuple[TracedInt, ...]:
    """``ld.global{.cache}{.vN}.b32``: load ``bits`` (32, 64, 128 or 256) bits from global memory at ``ptr``
    plus ``index`` accesses of ``bits // 8`` bytes; a tuple of ``bits // 32`` traced Int32 words.

    ``ptr`` is a global-memory pointer at a static offset, aligned to the access (``bits // 8`` bytes,
    checked on its static alignment); ``index`` is an int or a traced integer. ``cache`` is ``None``
    or one of ``"ca"``, ``"cg"``, ``"cs"``, ``"lu"``, ``"cv"`` (``ld.global.<cop>``) or ``"nc"`` (the
    read-only path ``ld.global.nc``: only for memory that no thread writes while the kernel runs).
    sm_90 has no 256-bit global load: 256 bits are two ``ld.global.v4.b32`` of 128 bits, at the
    address and 16 bytes after it.
    """
    name = f"ldg{bits}" if _is_int(bits) and bits in ACCESS_BITS else "ldg"
    bits = _check_bits(bits, name)
    cop = _cache_modifier(cache, LOAD_CACHE_MODIFIERS, name)
    addr = _global_address(ptr, bits, index, name)
    with current().at_end():
        words = md.ld_global(addr, bits, cop).words
    return tuple(TracedInt(w, 32, False) for w in words)


def stg(ptr: Pointer | Any, words: Sequence[TracedInt | TracedFloat | int] | TracedInt | TracedFloat | int,
        cache: str | None = None, *, index: TracedInt | int = 0) -> None:
    """``st.global{.cache}{.vN}.b32``: store ``len(words) * 32`` bits (32, 64, 128 or 256) to global memory
    at ``ptr`` plus ``index`` accesses of that size.

    ``words`` is a tuple of 32-bit words: ints, traced Int32 values or Float32 values (stored as their
    bits). ``ptr``/``index`` are as for :func:`ldg`; ``cache`` is ``None`` or one of ``"wb"``, ``"cg"``,
    ``"cs"``, ``"wt"``. sm_90 has no 256-bit global store: 256 bits are two ``st.global.v4.b32`` of
    128 bits, at the address and 16 bytes after it.
    """
    if isinstance(words, (TracedInt, TracedFloat)) or _is_int(words):
        words = (words,)
    if not isinstance(words, (tuple, list)):
        raise TraceError(f"stg takes a tuple of 32-bit words, got {words!r}")
    bits = len(words) * 32
    name = f"stg{bits}" if bits in ACCESS_BITS else "stg"
    if bits not in ACCESS_BITS:
        raise TraceError(f"stg stores 1, 2, 4 or 8 words of 32 bits (an access of {ACCESS_BITS} bits), "
                         f"got {len(words)} words")
    cop = _cache_modifier(cache, STORE_CACHE_MODIFIERS, name)
    vals = [_word(w, name, i) for i, w in enumerate(words)]
    addr = _global_address(ptr, bits, index, name)
    with current().at_end():
        md.st_global(addr, vals, cop)


def _sized_ldg(bits):
    def load(ptr: Pointer | Any, cache: str | None = None, *, index: TracedInt | int = 0) -> tuple[TracedInt, ...]:
        return ldg(ptr, bits, cache, index=index)

    load.__name__ = load.__qualname__ = f"ldg{bits}"
    load.__doc__ = f"``ldg(ptr, {bits}, cache, index=index)``: {bits // 32} traced Int32 word(s) from global memory."
    return load


def _sized_stg(bits):
    def store(ptr: Pointer | Any, words: Sequence[TracedInt | TracedFloat | int] | TracedInt | TracedFloat | int,
              cache: str | None = None, *, index: TracedInt | int = 0) -> None:
        ws = (words,) if isinstance(words, (TracedInt, TracedFloat)) or _is_int(words) else words
        if not isinstance(ws, (tuple, list)) or len(ws) != bits // 32:
            got = f"{len(ws)} words" if isinstance(ws, (tuple, list)) else repr(words)
            raise TraceError(f"stg{bits} stores {bits // 32} words of 32 bits, got {got}")
        stg(ptr, ws, cache, index=index)

    store.__name__ = store.__qualname__ = f"stg{bits}"
    store.__doc__ = f"``stg(ptr, words, cache, index=index)`` of {bits // 32} 32-bit word(s) to global memory."
    return store


ldg32, ldg64, ldg128, ldg256 = (_sized_ldg(n) for n in ACCESS_BITS)
stg32, stg64, stg128, stg256 = (_sized_stg(n) for n in ACCESS_BITS)


# -- cp.async and cluster mbarrier arrivals ---------------------------------------------------------


def _smem_bar(mbar, name):
    from ..frontend.smem import check_mbarrier_pointer

    check_mbarrier_pointer(mbar, name)
    p = pointer_value(mbar, f"{name}: the mbarrier")
    if str(p.type) != "!llvm.ptr<3>":
        raise TraceError(f"{name}: the mbarrier must be a shared-memory pointer, got type {p.type}")
    return p


def cp_async_barrier_noinc(mbar: Pointer) -> None:
    """``cp.async.mbarrier.arrive.noinc.shared::cta.b64 [mbar]``: the mbarrier's arrival by this thread
    happens once all its prior ``cp.async`` copies completed; ``.noinc``: the arrival was counted in the
    mbarrier's initial count (it does not raise the pending count)."""
    p = _smem_bar(mbar, "cp_async_barrier_noinc")
    with current().at_end():
        md.cp_async_mbarrier_arrive(p, noinc=True)


def mbarrier_remote_arrive(mbar: Pointer, cta_rank: TracedInt | int) -> None:
    """Arrive on the mbarrier at ``mbar``'s shared-memory offset in CTA ``cta_rank`` of the cluster:
    ``mapa.shared::cluster.u32 r, mbar, cta_rank; mbarrier.arrive.release.cluster.shared::cluster.b64 _, [r]``.

    ``cta_rank`` is the CTA's rank in the cluster (``%cluster_ctarank``): a static int in 0..15 or a
    traced integer.
    """
    p = _smem_bar(mbar, "mbarrier_remote_arrive")
    rank = _i32_operand(cta_rank, "mbarrier_remote_arrive: cta_rank", 0, MAX_CLUSTER_CTAS,
                        f" (a cluster has at most {MAX_CLUSTER_CTAS} CTAs)")
    with current().at_end():
        md.mbarrier_arrive_cluster(p, rank)
