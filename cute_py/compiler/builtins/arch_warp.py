"""Warp-level kernel builtins with the CuTe DSL's ``cute.arch`` names: shuffles, votes, the active mask,
``match_sync`` and ``warp_redux_sync``; and cute_py's own ``warp_group_idx``, ``elect_one_sync`` and
``shuffle_elect``.

Like the other builtins, each function emits its operation into the kernel being traced (outside a kernel
it raises :class:`~cute_py.errors.TraceError`), and every static argument is checked while tracing, with an
error naming the rule and the value. Masks are 32-bit lane masks (bit ``i`` for lane ``i``): a Python int or
a traced Int32; the ``*_sync`` operations must be executed by every lane named in their mask.

Shuffles (``shfl.sync.{idx,up,down,bfly}.b32``): ``mask_and_clamp`` is PTX's ``c`` operand, as in the DSL: the
segment mask in bits 8..12 and the clamp lane in bits 0..4. A segment of ``width`` lanes (a power of two) is
``((32 - width) << 8) | 31`` (``| 0`` for ``shuffle_sync_up``, which clamps at the segment's first lane); the
keyword ``width=`` (cute_py's) builds it. The defaults are the DSL's: the whole warp. A shuffled value is of
any numeric type up to 64 bits (a Python int is an Int32): narrower ones move as 32 bits, 64-bit ones as two
32-bit halves, and the result has the value's type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import TraceError
from ...tensor.dtypes import Float32, Int32, Uint32
from ..lang.builder import current
from ..lang.tensor_ssa import maximum
from ..lang.values import TracedBool, TracedFloat, wrap
from ..lang.traced_int import TracedInt, select
from .arch_float import fmax
from ..emit import sync, warp
from ..emit.operands import int_operand, predicate_value, static_int
from .arch_sync import FULL_MASK, lane_mask_value

__all__ = ["warp_group_idx", "shuffle_sync", "shuffle_sync_up", "shuffle_sync_down", "shuffle_sync_bfly",
           "shuffle_sync_op", "warp_reduction", "warp_reduction_max", "warp_reduction_sum",
           "elect_one_sync", "shuffle_elect", "vote_ballot_sync", "vote_any_sync", "vote_all_sync",
           "vote_uni_sync", "activemask", "match_sync", "warp_redux_sync"]

WARP_SIZE = 32
WARP_GROUP_SIZE = 128
SHFL_C_BITS = 0x1F1F  # c: segment mask in bits 8..12, clamp lane in bits 0..4


# -- shuffles ---------------------------------------------------------------------------------------


def _segment_c(kind, mask_and_clamp, width, name):
    """(the MLIR value of ``c``, the segment width when static) of a shuffle."""
    default = 0 if kind == "up" else WARP_SIZE - 1
    if width is not None:
        w = static_int(width, f"{name}: width", "a power of two in 1..32")
        if w < 1 or w > WARP_SIZE or w & (w - 1):
            raise TraceError(f"{name}: width must be a power of two in 1..32, got {w}")
        if mask_and_clamp != default:
            raise TraceError(f"{name}: give width= or mask_and_clamp=, not both")
        c = ((WARP_SIZE - w) << 8) | default
        return current().const(c, 32), w
    if isinstance(mask_and_clamp, TracedInt):
        return int_operand(mask_and_clamp, f"{name}: mask_and_clamp"), None
    c = static_int(mask_and_clamp, f"{name}: mask_and_clamp", "PTX's c operand, or a traced integer")
    if c < 0 or c & ~SHFL_C_BITS:
        raise TraceError(f"{name}: mask_and_clamp packs a segment mask in bits 8..12 and a clamp lane in bits "
                         f"0..4 (((32 - width) << 8) | clamp); got {c:#x}, which sets other bits")
    seg = c >> 8
    w = (~seg & 31) + 1  # the lanes of a segment, when the segment mask is the high bits 32 - w
    return current().const(c, 32), (w if seg == WARP_SIZE - w and not w & (w - 1) else None)


def _shuffle(kind, value, offset, mask, mask_and_clamp, width, name):
    c, w = _segment_c(kind, mask_and_clamp, width, name)
    what = {"idx": "src_lane", "up": "delta", "down": "delta", "bfly": "lane_mask"}[kind]
    hi = WARP_SIZE if w is None else w
    rule = " (a lane of the warp)" if w is None else f" (less than the width {w})"
    lane_v = int_operand(offset, f"{name}: {what}", 32, 0, hi, rule)
    mask_v = lane_mask_value(mask, f"{name}: mask")
    if type(value) is int:
        if not -(1 << 31) <= value < (1 << 31):
            raise TraceError(f"{name}: a static value is shuffled as an Int32, {value} does not fit")
        value = TracedInt(current().const(value, 32), 32, value >= 0)
    if isinstance(value, TracedBool):  # a Boolean moves as an Int32 0 or 1
        return _shuffle(kind, select(value, 1, 0), offset, mask, mask_and_clamp, width, name) != 0
    if not isinstance(value, (TracedInt, TracedFloat)):
        raise TraceError(f"{name} shuffles traced numbers (Booleans, integers and floats of up to 64 bits), got "
                         f"{type(value).__name__}")
    dtype = value.dtype
    if dtype.width > 64:
        raise TraceError(f"{name} shuffles values of up to 64 bits, got a {dtype.name}")
    if dtype.width < 32:  # moves as 32 bits, converted back exactly
        wide = Float32 if dtype.is_float else (Int32 if dtype.signed else Uint32)
        moved = _shuffle(kind, value.to(wide), offset, mask, mask_and_clamp, width, name)
        return moved.to(dtype)
    if dtype.width == 32:
        res = warp.shfl_sync(kind, value.ir, lane_v, mask_v, c)
        if isinstance(value, TracedInt):
            return TracedInt(res, 32, value.nonneg, 1, dtype, value.index)
        return wrap(res, dtype)
    # 64 bits move as two 32-bit halves
    res = warp.shfl_sync_wide(kind, value.ir, lane_v, mask_v, c)
    if isinstance(value, TracedFloat):
        return wrap(res, dtype)
    return TracedInt(res, 64, value.nonneg, 1, dtype, value.index)


def shuffle_sync(value: Any, offset: TracedInt | int, mask: TracedInt | int = FULL_MASK,
                 mask_and_clamp: TracedInt | int = WARP_SIZE - 1, *, width: int | None = None) -> Any:
    """``shfl.sync.idx.b32``: ``value`` of lane ``offset`` (the source lane) of this lane's segment."""
    return _shuffle("idx", value, offset, mask, mask_and_clamp, width, "shuffle_sync")


def shuffle_sync_up(value: Any, offset: TracedInt | int, mask: TracedInt | int = FULL_MASK,
                    mask_and_clamp: TracedInt | int = 0, *, width: int | None = None) -> Any:
    """``shfl.sync.up.b32``: ``value`` of lane ``lane - offset``; the lanes whose source would lie before their
    segment's first lane keep their own value."""
    return _shuffle("up", value, offset, mask, mask_and_clamp, width, "shuffle_sync_up")


def shuffle_sync_down(value: Any, offset: TracedInt | int, mask: TracedInt | int = FULL_MASK,
                      mask_and_clamp: TracedInt | int = WARP_SIZE - 1, *, width: int | None = None) -> Any:
    """``shfl.sync.down.b32``: ``value`` of lane ``lane + offset``; the lanes whose source would lie past
    their segment's last lane keep their own value."""
    return _shuffle("down", value, offset, mask, mask_and_clamp, width, "shuffle_sync_down")


def shuffle_sync_bfly(value: Any, offset: TracedInt | int, mask: TracedInt | int = FULL_MASK,
                      mask_and_clamp: TracedInt | int = WARP_SIZE - 1, *, width: int | None = None) -> Any:
    """``shfl.sync.bfly.b32``: ``value`` of lane ``lane ^ offset`` (a butterfly, for reductions)."""
    return _shuffle("bfly", value, offset, mask, mask_and_clamp, width, "shuffle_sync_bfly")


SHFL_KINDS = ("idx", "up", "down", "bfly")


def shuffle_sync_op(value: Any, offset: TracedInt | int, mask: TracedInt | int = FULL_MASK,
                    mask_and_clamp: TracedInt | int = WARP_SIZE - 1, kind: str = "idx") -> Any:
    """``shfl.sync.<kind>.b32`` of ``value``, ``kind`` one of ``"idx"``, ``"up"``, ``"down"``, ``"bfly"`` (the
    DSL's ``nvvm.ShflKind``; an object whose ``name`` is one of them is read by its name): the function behind
    ``shuffle_sync`` and its ``_up``/``_down``/``_bfly`` forms."""
    k = getattr(kind, "name", kind)
    if k not in SHFL_KINDS:
        raise TraceError(f"shuffle_sync_op: kind must be one of {', '.join(SHFL_KINDS)}, got {kind!r}")
    return _shuffle(k, value, offset, mask, mask_and_clamp, None, "shuffle_sync_op")


def warp_reduction(val: Any, op: Callable[[Any, Any], Any], *, threads_in_group: int = WARP_SIZE) -> Any:
    """``val`` folded with ``op`` over each group of ``threads_in_group`` consecutive lanes (a static power of two
    in 1..32), by butterfly shuffles: every lane of a group gets the group's result. ``op`` must be associative
    and commutative for the lanes to agree."""
    n = static_int(threads_in_group, "warp_reduction: threads_in_group", "a power of two in 1..32")
    if n < 1 or n > WARP_SIZE or n & (n - 1):
        raise TraceError(f"warp_reduction: threads_in_group must be a power of two in 1..32, got {n}")
    offset = n // 2
    while offset > 0:
        val = op(val, shuffle_sync_bfly(val, offset))
        offset //= 2
    return val


def warp_reduction_max(val: Any, *, threads_in_group: int = WARP_SIZE) -> Any:
    """:func:`warp_reduction` with the maximum (``fmax`` for a Float32, ``max`` otherwise)."""

    def larger(a, b):
        return fmax(a, b) if isinstance(a, TracedFloat) and a.dtype is Float32 else maximum(a, b)

    return warp_reduction(val, larger, threads_in_group=threads_in_group)


def warp_reduction_sum(val: Any, *, threads_in_group: int = WARP_SIZE) -> Any:
    """:func:`warp_reduction` with ``+``."""
    return warp_reduction(val, lambda a, b: a + b, threads_in_group=threads_in_group)


# -- indices, election -----------------------------------------------------------------------------


def warp_group_idx() -> TracedInt:
    """The warp group's index in the block: ``tid.x // 128`` for a 1-D block.

    The value is broadcast from lane 0 (``shfl.sync.idx.b32 ... 0, 0x1f, 0xffffffff``) so that it is
    warp-uniform for the compiler too (as CUTLASS's ``canonical_warp_group_idx``); every lane of the
    warp must execute it.
    """
    tid = warp.read_sreg("tid.x")
    return shuffle_sync(tid // WARP_GROUP_SIZE, 0)


def elect_one_sync(mask: TracedInt | int = FULL_MASK) -> TracedBool:
    """``elect.sync _|p, mask``: a run-time condition true in exactly one lane of ``mask``.

    (``with arch.elect_one():`` is the block form for a full warp.)
    """
    m = None if type(mask) is int and mask == FULL_MASK else lane_mask_value(mask, "elect_one_sync: mask")
    return TracedBool(sync.elect_sync(m))


def activemask() -> TracedInt:
    """``activemask.b32``: a Uint32 with a bit set for each lane of the warp executing it now."""
    return wrap(warp.activemask(), Uint32)


def shuffle_elect(thread_extent: int | None = None, *, mask: TracedInt | int | None = None) -> TracedBool:
    """A run-time condition true in one thread of each group of ``thread_extent`` consecutive threads of the block
    (linear thread index; TileLang's ``shuffle_elect``):

    - ``thread_extent`` 0: one thread of the whole block (in warp 0);
    - a multiple of 32: one thread in the first warp of each group of ``thread_extent // 32`` warps;
    - a power of two below 32: the first lane of each group of that many lanes;
    - ``None`` (the default): one lane of each warp, the lowest lane of ``mask`` (default: the active lanes,
      ``activemask.b32``).

    In a warp that elects, the lowest lane of ``mask`` is broadcast with ``shfl.sync.idx.b32`` from itself, so
    every lane compares its ``%laneid`` with the same, warp-uniform leader; unlike ``elect.sync`` this works in
    partially active warps. Every lane of ``mask`` must execute it.
    """
    if thread_extent is None:
        return _lowest_lane(mask)
    n = static_int(thread_extent, "shuffle_elect: thread_extent", "0, a multiple of 32 or a power of two below 32")
    if n < 0 or not (n == 0 or n % WARP_SIZE == 0 or (n < WARP_SIZE and n & (n - 1) == 0)):
        raise TraceError(f"shuffle_elect: thread_extent must be 0 (the block), a multiple of 32 (warps) or a power "
                         f"of two below 32 (lanes), got {n}")
    if 0 < n < WARP_SIZE:
        if mask is not None:
            raise TraceError("shuffle_elect: a thread_extent below 32 elects fixed lanes; it takes no mask")
        from .arch import lane_idx

        return lane_idx() % n == 0
    from .arch import warp_idx

    w = warp_idx()
    in_group = (w == 0) if n == 0 else (w % (n // WARP_SIZE) == 0)
    return in_group & _lowest_lane(mask)


def _lowest_lane(mask):
    """True in the lowest lane of ``mask`` (default: the active lanes) of this warp."""
    m = activemask().ir if mask is None else lane_mask_value(mask, "shuffle_elect: mask")
    return TracedBool(warp.lowest_lane(m))


# -- votes -------------------------------------------------------------------------------------------


def _vote(kind, pred, mask, name):
    p = predicate_value(pred, f"{name}: the predicate")
    m = lane_mask_value(mask, f"{name}: mask")
    return warp.vote_sync(kind, p, m)


def vote_ballot_sync(pred: TracedBool | bool, mask: TracedInt | int = FULL_MASK) -> TracedInt:
    """``vote.sync.ballot.b32``: an Int32 whose bit ``i`` is ``pred`` of lane ``i`` (0 for lanes not in ``mask``)."""
    return TracedInt(_vote("ballot", pred, mask, "vote_ballot_sync"), 32, False)


def vote_any_sync(pred: TracedBool | bool, mask: TracedInt | int = FULL_MASK) -> TracedBool:
    """``vote.sync.any.pred``: whether ``pred`` holds in any lane of ``mask`` (the same in every lane)."""
    return TracedBool(_vote("any", pred, mask, "vote_any_sync"))


def vote_all_sync(pred: TracedBool | bool, mask: TracedInt | int = FULL_MASK) -> TracedBool:
    """``vote.sync.all.pred``: whether ``pred`` holds in every lane of ``mask``."""
    return TracedBool(_vote("all", pred, mask, "vote_all_sync"))


def vote_uni_sync(pred: TracedBool | bool, mask: TracedInt | int = FULL_MASK) -> TracedBool:
    """``vote.sync.uni.pred``: whether ``pred`` has the same value in every lane of ``mask``."""
    return TracedBool(_vote("uni", pred, mask, "vote_uni_sync"))


# -- match and reduce ------------------------------------------------------------------------------


def _int_value(value, name, widths=(32, 64)):
    """(MLIR value, dtype) of an integer operand of 32 or 64 bits (a static int is an Int32)."""
    if type(value) is int:
        return int_operand(value, f"{name}: value"), Int32
    if not isinstance(value, TracedInt) or value.width not in widths:
        got = f"a traced {value.dtype.name}" if isinstance(value, (TracedInt, TracedFloat)) else repr(value)
        raise TraceError(f"{name}: value must be an integer of {' or '.join(map(str, widths))} bits, got {got}")
    return value.ir, value.dtype


def match_sync(mask: TracedInt | int, value: TracedInt | int, kind: str = "any") -> TracedInt:
    """``match.{any,all}.sync.b32/b64``: a Uint32 lane mask. ``"any"``: the lanes of ``mask`` whose ``value``
    equals this lane's; ``"all"``: ``mask`` itself when every lane of it holds the same ``value``, else 0."""
    name = "match_sync"
    if kind not in ("any", "all"):
        raise TraceError(f"{name}: kind must be 'any' or 'all', got {kind!r}")
    m = lane_mask_value(mask, f"{name}: mask")
    v, _ = _int_value(value, name)
    return wrap(warp.match_sync(kind, v, m), Uint32)


REDUX_KINDS = ("fmax", "fmin", "max", "min", "umax", "umin", "add", "xor", "or", "and")


def warp_redux_sync(value: TracedInt | int, kind: str, mask_and_clamp: TracedInt | int = FULL_MASK, *,
                    abs: bool | None = None, nan: bool | None = None) -> TracedInt:
    """``redux.sync.<kind>``: ``value`` reduced over the lanes of the lane mask ``mask_and_clamp`` (the DSL's
    name for it), the same result in each of them; of the value's 32-bit integer type.

    ``kind``: ``"add"``, ``"and"``, ``"or"``, ``"xor"``, ``"max"``, ``"min"`` (unsigned for a Uint32),
    ``"umax"``, ``"umin"``. The floating-point kinds (``"fmax"``, ``"fmin"``, and ``abs``/``nan``) are
    sm_100a instructions and are rejected on sm_90a.
    """
    name = "warp_redux_sync"
    if kind not in REDUX_KINDS:
        raise TraceError(f"{name}: kind must be one of {', '.join(REDUX_KINDS)}, got {kind!r}")
    if kind in ("fmax", "fmin") or isinstance(value, TracedFloat) or abs or nan:
        raise TraceError(f"{name}: floating-point reductions (redux.sync.{{min,max}}.f32, abs, nan) need sm_100a; "
                         f"kernels here target sm_90a, which reduces 32-bit integers only")
    m = lane_mask_value(mask_and_clamp, f"{name}: mask_and_clamp")
    v, dtype = _int_value(value, name, widths=(32,))
    return wrap(warp.redux_sync(kind, dtype.signed, v, m), dtype)

