"""``GenericToSharedAsyncTileCopier``: a tile copy from global to shared memory with cp.async, optionally masked.

::

    copier = GenericToSharedAsyncTileCopier(thread_layout=cute.Layout((16, 8), (8, 1)), masked=True)
    copier.copy(s_tile, g_tile)                          # in a kernel; bound: g_tile's row extent
    copier.copy_bounded(s_tile, g_tile, valid_rows)      # an explicit run-time row count
    arch.cp_async_commit_group(); arch.cp_async_wait_group(0)   # the caller commits and waits

**The tile.**  ``dst`` is a static ``(R, C)`` shared-memory tensor with contiguous rows (strides ``(Sd, 1)``);
``src`` is a global tensor with contiguous rows (strides ``(S, 1)``, ``S`` static or run-time) and ``C``
columns. Each row is cut into vectors of ``V`` elements (``V * element bytes`` = 4, 8 or 16: the widest that
the layouts, the pointers' alignments, the thread layout and the swizzle allow, or ``vector_bytes``).

**The threads.**  ``thread_layout`` is a static rank-2 layout ``(TR, TC)`` mapping thread coordinates
one-to-one onto the thread indices ``0 .. TR*TC - 1``; the thread of index ``t`` (its linear index in the
block, or its lane with ``ThreadScope.WARP``) has the coordinate ``(tr, tc)`` with ``thread_layout(tr, tc) =
t``, and copies the vectors of rows ``tr + TR*i`` and vector columns ``tc + TC*j`` (so ``R % TR == 0`` and
``(C / V) % TC == 0``). Threads with ``t >= TR*TC`` issue nothing.

**Swizzle.**  With ``swizzle`` (a :class:`~cute_py.core.swizzle.Swizzle` on element offsets), the vector of
``dst`` element offset ``o`` (relative to ``dst``'s first element) lands at ``swizzle(o)``; a vector never
straddles a swizzle unit (``V`` divides ``2**swizzle.base``). Readers must apply the same swizzle.

**Masking.**  With ``masked=True`` a vector of row ``r`` is copied when ``r < bound`` (``src``'s row extent
for :meth:`copy`, ``src_num_valid_rows`` for :meth:`copy_bounded`), i.e. when its source offset lies below
``bound * S``; otherwise its cp.async reads no bytes (``src_size = 0``) and the hardware zero-fills it.

**Eviction.**  ``EvictionPolicy.FIRST`` / ``LAST`` add ``.L2::cache_hint`` with a policy made by
``createpolicy.fractional.L2::evict_first`` / ``evict_last`` (fraction 1.0); ``NORMAL`` adds no hint.

Every rule is checked when the copy is traced (:class:`~cute_py.errors.CuteError` subclasses naming the rule
and the values). :meth:`GenericToSharedAsyncTileCopier.thread_vectors` is the distribution itself (ints or
traced ints), used by the kernel emission and by CPU references alike.
"""

from __future__ import annotations

import enum
import operator
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import device
from ..core.leaves import DynamicInt
from ..core.layout import Layout
from ..core.swizzle import Swizzle
from ..errors import CuteTypeError, CuteValueError, DeviceOnlyError, RankError
from ..tensor.offsets import widen_value
from ..tensor.pointer import AddressSpace, Pointer
from ..tensor.tensor import Tensor
from .device_ops import CpAsyncTileCopyOp

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["GenericToSharedAsyncTileCopier", "EvictionPolicy", "ThreadScope", "TileCopyPlan", "VECTOR_BYTES"]

VECTOR_BYTES = (16, 8, 4)  # the cp.async sizes, widest first
MAX_BLOCK_THREADS = 1024
WARP_SIZE = 32


class EvictionPolicy(enum.Enum):
    """The L2 eviction priority of the copied lines (``createpolicy.fractional.L2::evict_*``)."""

    NORMAL = "evict_normal"
    FIRST = "evict_first"
    LAST = "evict_last"


class ThreadScope(enum.Enum):
    """Which index selects a thread's share: its linear index in the block, or its lane in the warp."""

    BLOCK = "block"
    WARP = "warp"


class TileCopyPlan(NamedTuple):
    """The static facts of one traced copy: tile ``(rows, cols)``, ``vector`` elements of ``vector_bytes``,
    the thread layout's extents ``(thread_rows, thread_cols)``, the source row stride (int or run-time) and
    the destination row stride (int)."""

    rows: int
    cols: int
    vector: int
    vector_bytes: int
    thread_rows: int
    thread_cols: int
    src_row_stride: Any
    dst_row_stride: int


def _static_int(x, what):
    if isinstance(x, bool) or not hasattr(type(x), "__index__") or isinstance(x, DynamicInt):
        raise CuteTypeError(f"{what} must be a static int, got {x!r}")
    return operator.index(x)


class GenericToSharedAsyncTileCopier:
    """A masked cp.async tile copier from global ("generic") to shared memory (see the module for the law).

    Keyword arguments: ``thread_layout`` (static rank-2 Layout, one-to-one onto ``0..size-1``), ``swizzle``
    (``None`` or a Swizzle on the destination's element offsets), ``masked`` (bool), ``eviction_policy``
    (:class:`EvictionPolicy`), ``num_threads`` (threads in the block, or in the warp with
    ``ThreadScope.WARP``; default the layout's size, never below it), ``thread_scope`` (:class:`ThreadScope`),
    ``vector_bytes`` (``None``: the widest allowed; else 4, 8 or 16).
    """

    __slots__ = ("thread_layout", "swizzle", "masked", "eviction_policy", "num_threads", "thread_scope",
                 "vector_bytes", "size")

    def __init__(self, *, thread_layout: Layout, swizzle: Swizzle | None = None, masked: bool = False,
                 eviction_policy: EvictionPolicy = EvictionPolicy.NORMAL, num_threads: int | None = None,
                 thread_scope: ThreadScope = ThreadScope.BLOCK, vector_bytes: int | None = None) -> None:
        if type(thread_layout) is not Layout:
            raise CuteTypeError(f"thread_layout must be a Layout, got {thread_layout!r}")
        shape, stride = thread_layout.shape, thread_layout.stride
        if type(shape) is not tuple or len(shape) != 2 or not all(type(s) is int for s in shape) \
                or not all(type(d) is int for d in stride):
            raise RankError(f"thread_layout must be a static rank-2 layout (thread rows, thread columns) of ints, "
                            f"got {thread_layout}")
        size = shape[0] * shape[1]
        if sorted(thread_layout(i) for i in range(size)) != list(range(size)):
            raise CuteValueError(f"thread_layout must map its {size} coordinates one-to-one onto the thread "
                                 f"indices 0..{size - 1}, got {thread_layout}")
        if not isinstance(thread_scope, ThreadScope):
            raise CuteTypeError(f"thread_scope must be a ThreadScope (BLOCK or WARP), got {thread_scope!r}")
        limit = WARP_SIZE if thread_scope is ThreadScope.WARP else MAX_BLOCK_THREADS
        if size > limit:
            raise CuteValueError(f"thread_layout {thread_layout} has {size} threads, more than the {limit} of a "
                                 f"{thread_scope.name.lower()}")
        num_threads = size if num_threads is None else _static_int(num_threads, "num_threads")
        if num_threads < size:
            raise CuteValueError(f"num_threads ({num_threads}) must be at least the thread_layout's size ({size}): "
                                 f"every thread of the layout must exist")
        if num_threads > limit:
            raise CuteValueError(f"num_threads ({num_threads}) exceeds the {limit} threads of a "
                                 f"{thread_scope.name.lower()}")
        if swizzle is not None and type(swizzle) is not Swizzle:
            raise CuteTypeError(f"swizzle must be None or a Swizzle (cute.make_swizzle(b, m, s)), got {swizzle!r}")
        if type(masked) is not bool:
            raise CuteTypeError(f"masked must be a bool, got {masked!r}")
        if not isinstance(eviction_policy, EvictionPolicy):
            raise CuteTypeError(f"eviction_policy must be an EvictionPolicy (NORMAL, FIRST or LAST), got "
                                f"{eviction_policy!r}")
        if vector_bytes is not None:
            vector_bytes = _static_int(vector_bytes, "vector_bytes")
            if vector_bytes not in VECTOR_BYTES:
                raise CuteValueError(f"cp.async copies 4, 8 or 16 bytes: vector_bytes must be one of them, got "
                                     f"{vector_bytes}")
        for name, v in (("thread_layout", thread_layout), ("swizzle", swizzle), ("masked", masked),
                        ("eviction_policy", eviction_policy), ("num_threads", num_threads),
                        ("thread_scope", thread_scope), ("vector_bytes", vector_bytes), ("size", size)):
            object.__setattr__(self, name, v)

    def __setattr__(self, name, value):
        raise AttributeError("GenericToSharedAsyncTileCopier is immutable")

    def __repr__(self):
        return (f"GenericToSharedAsyncTileCopier(thread_layout={self.thread_layout}, swizzle={self.swizzle}, "
                f"masked={self.masked}, eviction_policy={self.eviction_policy.name}, "
                f"num_threads={self.num_threads}, thread_scope={self.thread_scope.name}, "
                f"vector_bytes={self.vector_bytes})")

    # -- the copies ------------------------------------------------------------------------------------

    def copy(self, dst: Tensor, src: Tensor) -> None:
        """Issue this thread's cp.async copies of ``src`` into ``dst`` (masked: rows past ``src``'s row extent
        are zero-filled). No commit, no wait."""
        self._issue(dst, src, None, "copy")

    def copy_bounded(self, dst: Tensor, src: Tensor, src_num_valid_rows: Any) -> None:
        """Like :meth:`copy` with the row bound given explicitly (an int or a run-time integer): rows
        ``>= src_num_valid_rows`` are zero-filled. ``src`` has the tile's full static shape."""
        if not self.masked:
            raise CuteValueError("copy_bounded bounds the rows of a masked copy: construct the copier with "
                                 "masked=True")
        if not isinstance(src_num_valid_rows, DynamicInt):
            n = _static_int(src_num_valid_rows, "src_num_valid_rows")
            if n < 0:
                raise CuteValueError(f"src_num_valid_rows must be >= 0, got {n}")
            src_num_valid_rows = n
        self._issue(dst, src, src_num_valid_rows, "copy_bounded")

    def _issue(self, dst, src, bound, what):
        plan = self.plan(dst, src, bounded=bound is not None)
        if bound is None and self.masked:
            bound = src.shape[0]
        if type(bound) is int and bound >= plan.rows:
            bound = None  # every row of the tile is valid: nothing to mask
        ctx = device.active()
        if ctx is None:
            raise DeviceOnlyError(f"GenericToSharedAsyncTileCopier.{what} is a device operation: call it inside "
                                  f"a kernel (@cute_py.kernel)")
        ctx.emit(CpAsyncTileCopyOp(self), dst=dst, src=src, plan=plan, num_valid_rows=bound)

    # -- the static rules ------------------------------------------------------------------------------

    def plan(self, dst: Tensor, src: Tensor, bounded: bool = False) -> TileCopyPlan:
        """Check ``dst`` and ``src`` against every rule and choose the vector; raises naming the rule."""
        for role, t, spaces in (("dst", dst, (AddressSpace.smem,)),
                                ("src", src, (AddressSpace.gmem, AddressSpace.generic))):
            if not isinstance(t, Tensor) or not isinstance(t.engine, Pointer):
                raise CuteTypeError(f"{role} must be a tensor over memory (a Pointer), got {t!r}")
            if t.engine.memspace not in spaces:
                where = "shared" if role == "dst" else "global"
                raise CuteValueError(f"{role} must be in {where} memory, got a {t.engine.memspace.name} tensor")
        if type(dst.layout) is not Layout:
            raise CuteTypeError(f"dst must have a plain Layout (pass the swizzle as swizzle=), got {dst.layout}")
        if dst.element_type.width != src.element_type.width:
            raise CuteValueError(f"src and dst element widths differ: {src.element_type.name} -> "
                                 f"{dst.element_type.name}")
        rows, cols, dst_row_stride = self._dst_tile(dst)
        src_row_stride = self._src_rows(src, rows, cols, bounded)
        width = dst.element_type.width
        candidates = (self.vector_bytes,) if self.vector_bytes is not None else VECTOR_BYTES
        reasons = []
        for vbytes in candidates:
            why = self._vector_rule(vbytes, width, rows, cols, src, dst, src_row_stride, dst_row_stride)
            if why is None:
                tr, tc = self.thread_layout.shape
                return TileCopyPlan(rows, cols, vbytes * 8 // width, vbytes, tr, tc, src_row_stride, dst_row_stride)
            reasons.append(f"{vbytes} bytes: {why}")
        raise CuteValueError("no cp.async vector fits this copy (" + "; ".join(reasons) + ")")

    @staticmethod
    def _dst_tile(dst):
        shape, stride = dst.layout.shape, dst.layout.stride
        if type(shape) is not tuple or len(shape) != 2:
            raise RankError(f"dst must be a rank-2 (rows, columns) tile, got the layout {dst.layout}")
        if not all(type(x) is int for x in shape + stride):
            raise CuteValueError(f"dst must have a static layout (the tile shape), got {dst.layout}")
        rows, cols = shape
        if stride[1] != 1 and cols > 1:
            raise CuteValueError(f"dst rows must be contiguous (column stride 1), got the layout {dst.layout}")
        if rows > 1 and stride[0] < cols:
            raise CuteValueError(f"dst rows overlap: row stride {stride[0]} < {cols} columns in {dst.layout}")
        return rows, cols, stride[0]

    def _src_rows(self, src, rows, cols, bounded):
        shape, stride = src.layout.shape, src.layout.stride
        if type(shape) is not tuple or len(shape) != 2 or type(shape[0]) is tuple or type(shape[1]) is tuple:
            raise RankError(f"src must be a rank-2 (rows, columns) tensor, got the layout {src.layout}")
        if shape[1] != cols or type(shape[1]) is not int:
            raise CuteValueError(f"src must have the tile's {cols} columns (a static extent), got {shape[1]}")
        if stride[1] != 1 and cols > 1:
            raise CuteValueError(f"src rows must be contiguous (column stride 1), got the stride {stride[1]} in "
                                 f"{src.layout}")
        r = shape[0]
        if not self.masked or bounded:
            if type(r) is not int or r != rows:
                rule = ("copy_bounded takes src with the tile's full static row extent" if bounded else
                        "an unmasked copy reads every row: src needs the tile's static row extent "
                        "(use masked=True for a partial tile)")
                raise CuteValueError(f"{rule}: src has {r} rows, the tile {rows}")
        elif type(r) is int and r > rows:
            raise CuteValueError(f"src has {r} rows, more than the tile's {rows}: tile it first")
        return stride[0]

    def _vector_rule(self, vbytes, width, rows, cols, src, dst, src_row_stride, dst_row_stride):
        """``None`` when vectors of ``vbytes`` bytes satisfy every rule, else the broken rule with its values."""
        if (vbytes * 8) % width:
            return f"{width}-bit elements do not fill a {vbytes}-byte vector"
        v = vbytes * 8 // width
        tr, tc = self.thread_layout.shape
        if cols % v:
            return f"rows of {cols} elements are not a whole number of {v}-element vectors"
        if rows % tr or (cols // v) % tc:
            return (f"the tile ({rows}, {cols}) is not covered by the thread layout ({tr}, {tc}) x vector (1, {v}): "
                    f"needs {rows} % {tr} == 0 and {cols // v} vectors per row % {tc} == 0")
        for role, t in (("src", src), ("dst", dst)):
            if t.engine.alignment < vbytes:
                return f"{role} is only known to be {t.engine.alignment}-byte aligned"
        if rows > 1:
            if type(src_row_stride) is int:
                if (src_row_stride * width) % (vbytes * 8):
                    return (f"the src row stride {src_row_stride} ({src_row_stride * width // 8} bytes) is not a "
                            f"multiple of the vector")
            elif (getattr(src_row_stride, "known_divisor", 1) * width) % (vbytes * 8):
                return (f"the src row stride is a run-time value known only to be a multiple of "
                        f"{getattr(src_row_stride, 'known_divisor', 1)} elements")
            if dst_row_stride % v:
                return f"the dst row stride {dst_row_stride} is not a multiple of {v} elements"
        if self.swizzle is not None and self.swizzle.bits and (1 << self.swizzle.base) % v:
            s = self.swizzle
            return (f"the swizzle S<{s.bits},{s.base},{s.shift}> keeps blocks of {1 << s.base} elements together, "
                    f"so it would split a {v}-element vector")
        return None

    # -- the distribution ------------------------------------------------------------------------------

    def thread_coord(self, thread: Any) -> tuple[Any, Any]:
        """``(tr, tc)`` with ``thread_layout(tr, tc) == thread`` (``thread`` an int below the size, or traced)."""
        out = []
        for n, d in zip(self.thread_layout.shape, self.thread_layout.stride):
            out.append(0 if n == 1 else (thread // d) % n if d != 1 else thread % n)
        return out[0], out[1]

    def thread_vectors(self, plan: TileCopyPlan, thread: Any) -> Iterator[tuple[Any, Any, Any]]:
        """``(row, src_offset, dst_offset)`` of each vector that ``thread`` copies: element offsets from the
        first element of ``src`` and of ``dst`` (the latter through the swizzle)."""
        tr, tc = self.thread_coord(thread)
        v = plan.vector
        per_row = plan.dst_row_stride // v if plan.rows > 1 else 0
        swz = None
        if self.swizzle is not None and self.swizzle.bits:
            s = self.swizzle
            swz = Swizzle(s.bits, s.base - (v.bit_length() - 1), s.shift)  # the same swizzle on vector units
        stride = plan.src_row_stride
        # the source offsets in 64 bits where a row times the row stride may pass 2**31 (see tensor.offsets)
        wide = (isinstance(stride, DynamicInt) and getattr(stride, "width", 64) < 64) or \
            (type(stride) is int and abs(stride) * max(plan.rows - 1, 0) >= 1 << 31)
        stride = widen_value(stride) if wide else stride
        for i in range(plan.rows // plan.thread_rows):
            row = tr + plan.thread_rows * i
            for j in range(plan.cols // v // plan.thread_cols):
                vcol = tc + plan.thread_cols * j
                src_off = (widen_value(row) if wide else row) * stride + vcol * v
                k = row * per_row + vcol
                yield row, src_off, v * (swz(k) if swz is not None else k)

