"""The emission of the cp.async unit: one ``cp.async`` (``CopyG2SOp``, zero-filled through ``src_size`` or a
predicate), the kernel side of ``GenericToSharedAsyncTileCopier`` (``CpAsyncTileCopyOp``), and for the builtins
the groups of copies (``cp.async.commit_group``, ``wait_group``) and the mbarrier arrival that tracks them
(``cp.async.mbarrier.arrive.noinc``).

For the thread of index ``t`` (``%tid`` linearised over the block, or ``%laneid`` with ``ThreadScope.WARP``):
threads with ``t`` past the thread layout's size branch around everything; the others (with an eviction
policy other than NORMAL) make one L2 policy, ``createpolicy.fractional.L2::evict_{first,last}.b64 p, 1.0``,
then issue one ``cp.async`` per vector of ``copier.thread_vectors(plan, t)``: ``.cg`` for 16 bytes, ``.ca``
for 4 and 8, with ``.L2::cache_hint p`` under a policy, and -- where the vector's row may lie at or past the
bound -- the run-time ``src_size`` ``row < bound ? size : 0`` (zero-fill). The alignment of every address is
checked on the traced offsets (what is known to divide them) before it is emitted.
"""

from __future__ import annotations

import contextlib
from typing import Any

import mlir_dialects as md

from ...errors import TraceError
from ...nvgpu.cpasync.copier import EvictionPolicy, ThreadScope
from ...nvgpu.cpasync.ops import CopyG2SOp, LoadCacheMode
from ...nvgpu.sync import CpAsyncTileCopyOp
from ...tensor.dtypes import dtype_of
from ..flow.control import if_
from ..lang.builder import current
from ..lang.memory import pointer_value
from ..lang.values import TracedBool, wrap
from ..lang.traced_int import as_value, select
from .warp import read_sreg, read_sregs

__all__ = ["ENTRIES", "thread_index", "l2_policy", "commit_group", "wait_group", "mbarrier_arrive_noinc"]

_INT64 = dtype_of("Int64")


def thread_index(scope: ThreadScope, block: tuple[int, int, int] | None) -> Any:
    """The thread's index for ``scope``: its lane, or ``x + y * bx + z * bx * by`` over the launch's block
    ``block`` (read from ``%ntid`` when the launch is not known)."""
    if scope is ThreadScope.WARP:
        return read_sreg("laneid")
    tx, ty, tz = read_sregs("tid")
    if block is None:
        nx, ny, _ = read_sregs("ntid")
        return tx + ty * nx + tz * (nx * ny)
    bx, by, bz = block
    linear = tx
    if by > 1:
        linear = linear + ty * bx
    if bz > 1:
        linear = linear + tz * (bx * by)
    return linear


def l2_policy(policy: EvictionPolicy) -> Any:
    """A 64-bit L2 cache policy giving every line ``policy``'s eviction priority (``None`` for NORMAL)."""
    if policy is EvictionPolicy.NORMAL:
        return None
    with current().at_end():
        return wrap(md.createpolicy(policy.value).policy, _INT64)


def commit_group() -> None:
    """``cp.async.commit_group``: close the group of this thread's cp.async copies issued so far."""
    with current().at_end():
        md.cp_async_commit_group()


def wait_group(n: int) -> None:
    """``cp.async.wait_group n``: wait until at most ``n`` of this thread's cp.async groups are pending."""
    with current().at_end():
        md.cp_async_wait_group(n)


def mbarrier_arrive_noinc(ptr: Any) -> None:
    """``cp.async.mbarrier.arrive.noinc.shared::cta.b64 [ptr]``: an arrival on the mbarrier at ``ptr`` once this
    thread's earlier cp.async copies have completed, counted in its initial count."""
    with current().at_end():
        md.cp_async_mbarrier_arrive(ptr, noinc=True)


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


def _launch_block(b):
    launch = getattr(b, "launch", None)
    return None if launch is None else tuple(launch.block)


def _tile_copy(b, op, dst, src, plan, num_valid_rows=None):
    copier = op.copier
    block = _launch_block(b)
    threads = 32 if copier.thread_scope is ThreadScope.WARP else None
    if block is not None and copier.thread_scope is ThreadScope.BLOCK:
        threads = block[0] * block[1] * block[2]
        if threads != copier.num_threads:
            raise TraceError(f"GenericToSharedAsyncTileCopier: num_threads={copier.num_threads}, but the kernel "
                             f"is launched with {threads} threads per block {block}")
    t = thread_index(copier.thread_scope, block)
    guard = contextlib.nullcontext() if threads == copier.size else if_(t < copier.size)
    nbytes = plan.vector_bytes
    cg = CopyG2SOp(LoadCacheMode.GLOBAL if nbytes == 16 else LoadCacheMode.ALWAYS)
    with guard:
        hint = l2_policy(copier.eviction_policy)
        for row, src_off, dst_off in copier.thread_vectors(plan, t):
            sp, gp = dst.engine + dst_off, src.engine + src_off
            for role, ptr in (("dst", sp), ("src", gp)):
                if ptr.alignment < nbytes:
                    raise TraceError(f"GenericToSharedAsyncTileCopier: a {nbytes}-byte cp.async needs "
                                     f"{nbytes}-byte aligned addresses, but the {role} address is only known to be "
                                     f"{ptr.alignment}-byte aligned")
            pred = None if num_valid_rows is None else row < num_valid_rows
            if pred is True:
                pred = None
            if pred is False:
                _cp_async(b, cg, dst=sp, src=gp, cp_size=nbytes, src_size=0, cache_hint=hint)
            else:
                _cp_async(b, cg, dst=sp, src=gp, cp_size=nbytes, pred=pred, cache_hint=hint)


# op class -> (its entry, the dialect ops the entry builds)
ENTRIES = {
    CopyG2SOp: (_cp_async, ("cp_async",)),
    CpAsyncTileCopyOp: (_tile_copy, ("cp_async",)),
}
