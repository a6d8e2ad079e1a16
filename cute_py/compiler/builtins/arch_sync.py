"""Kernel builtins of barriers, fences, bulk-copy groups and register reallocation, with the CuTe DSL's
``cute.arch`` names and arguments.

=============================================================  =====================================================
call                                                           PTX
=============================================================  =====================================================
``barrier()``                                                  ``bar.sync 0`` (every thread of the block)
``barrier(barrier_id=i, number_of_threads=n)``                 ``bar.sync i, n``
``barrier_arrive(barrier_id=i, number_of_threads=n)``          ``bar.arrive i, n``
``barrier_arrive(..., aligned=False)``                         ``barrier.cta.arrive i, n`` (lanes may diverge)
``sync_warp(mask)``                                            ``bar.warp.sync mask``
``fence_proxy("async.shared", space="cta"|"cluster")``          ``fence.proxy.async.shared::{cta,cluster}``
``fence_proxy("async.global")`` / ``("async")``                ``fence.proxy.async.global`` / ``fence.proxy.async``
``fence_proxy("alias")``                                       ``fence.proxy.alias``
``fence_view_async_shared()``                                  ``fence.proxy.async.shared::cta``
``fence_acq_rel_cta()`` / ``_cluster`` / ``_gpu`` / ``_sys``   ``fence.acq_rel.{cta,cluster,gpu,sys}``
``cp_async_bulk_commit_group()``                               ``cp.async.bulk.commit_group``
``cp_async_bulk_wait_group(n, read=...)``                      ``cp.async.bulk.wait_group{.read} n``
``setmaxregister_increase(n)`` / ``_decrease(n)``              ``setmaxnreg.{inc,dec}.sync.aligned.u32 n``
``griddepcontrol_wait()`` / ``_launch_dependents()``           ``griddepcontrol.{wait,launch_dependents}``
``trap()``                                                     ``trap`` (the launch fails)
=============================================================  =====================================================

Named barriers: ``barrier_id`` is 0..15 (16 per CTA; ``None`` is barrier 0) and ``number_of_threads`` a
positive multiple of 32 up to 1024 (whole warps; ``None`` in ``barrier``: every thread of the block). Each is a
static int (checked while tracing) or a traced integer. ``warpgroup_reg_alloc``/``warpgroup_reg_dealloc`` are
the DSL's older names of ``setmaxregister_increase``/``_decrease``.
"""

from __future__ import annotations

from typing import Any

from ...errors import TraceError
from ...nvgpu import forms
from ..lang.builder import current
from ..lang.traced_int import TracedInt
from ..emit import sync, warp
from ..emit.operands import int_operand, static_int

__all__ = ["barrier", "barrier_arrive", "sync_warp", "fence_proxy", "fence_view_async_shared", "fence_acq_rel_cta",
           "fence_acq_rel_cluster", "fence_acq_rel_gpu", "fence_acq_rel_sys", "cp_async_bulk_commit_group",
           "cp_async_bulk_wait_group", "setmaxregister_increase", "setmaxregister_decrease", "warpgroup_reg_alloc",
           "warpgroup_reg_dealloc", "griddepcontrol_wait", "griddepcontrol_launch_dependents", "trap", "FULL_MASK",
           "lane_mask_value", "RegisterPlan", "register_plan", "reg_count_value"]

FULL_MASK = 0xFFFFFFFF
WARP_SIZE = 32
NAMED_BARRIERS = 16  # bar.sync / bar.arrive ids 0..15
MAX_BLOCK_THREADS = 1024


def lane_mask_value(mask: TracedInt | int, what: str = "mask") -> object:
    """The i32 value of a lane mask: a static int with at least one lane, in [0, 2^32) or an Int32's bits in
    [-2^31, 0) (the DSL's ``mask=-1``), or a traced 32-bit int."""
    if isinstance(mask, TracedInt):
        if mask.width != 32:
            raise TraceError(f"{what} is a 32-bit lane mask: pass an Int32, got a traced i{mask.width}")
        return mask.ir
    if type(mask) is not int:
        raise TraceError(f"{what} must be a 32-bit lane mask (an int or a traced Int32), got {mask!r}")
    if not -(1 << 31) <= mask <= FULL_MASK:
        raise TraceError(f"{what} must be a 32-bit lane mask in [-2^31, 0xFFFFFFFF] (a negative one is an Int32's "
                         f"bits: -1 is every lane), got {mask:#x}")
    mask &= FULL_MASK
    if mask == 0:
        raise TraceError(f"{what} names no lane (0): a lane mask needs at least one lane")
    return current().const(mask - (1 << 32) if mask >= 1 << 31 else mask, 32)


# -- named barriers ------------------------------------------------------------------------------


def _barrier_operands(name, barrier_id, number_of_threads):
    bid = int_operand(0 if barrier_id is None else barrier_id, f"{name}: barrier_id", 32, 0, NAMED_BARRIERS,
                      f" (the hardware has {NAMED_BARRIERS} named barriers per CTA)")
    if number_of_threads is None:
        return bid, None
    if type(number_of_threads) is int and (number_of_threads <= 0 or number_of_threads % WARP_SIZE
                                           or number_of_threads > MAX_BLOCK_THREADS):
        raise TraceError(f"{name}: number_of_threads must be a positive multiple of the warp size ({WARP_SIZE}) "
                         f"of at most {MAX_BLOCK_THREADS}, got {number_of_threads}")
    return bid, int_operand(number_of_threads, f"{name}: number_of_threads")


def barrier(*, barrier_id: TracedInt | int | None = None, number_of_threads: TracedInt | int | None = None) -> None:
    """``bar.sync barrier_id{, number_of_threads}``: wait on a named barrier until ``number_of_threads`` threads
    (default: every thread of the block) have arrived on it (by ``barrier`` or ``barrier_arrive``); orders
    their memory accesses as ``__syncthreads`` does."""
    bid, cnt = _barrier_operands("barrier", barrier_id, number_of_threads)
    sync.barrier_sync(bid, cnt)


def barrier_arrive(mbarrier: Any = None, *, barrier_id: TracedInt | int | None = None,
                   number_of_threads: TracedInt | int | None = None, aligned: bool = True) -> None:
    """Arrive on a named barrier without waiting (a producer's side): ``number_of_threads`` (required) is the
    count the barrier waits for, as in the consumers' ``barrier(...)``.

    ``barrier_arrive(mbarrier)`` (a positional shared-memory pointer, TileLang's form) arrives on that mbarrier
    instead (``mbarrier_arrive``); the named-barrier form takes keywords only, so the two cannot be confused.

    ``aligned=True``: ``bar.arrive`` (every thread of the warp executes the same instruction);
    ``aligned=False``: ``barrier.cta.arrive``, for threads that may diverge.
    """
    if mbarrier is not None:
        if barrier_id is not None or number_of_threads is not None:
            raise TraceError("barrier_arrive: an mbarrier (positional) or barrier_id=/number_of_threads= (a named "
                             "barrier), not both")
        from .arch_mbar import mbarrier_arrive

        mbarrier_arrive(mbarrier)
        return
    if number_of_threads is None:
        raise TraceError("barrier_arrive needs number_of_threads: the count of threads the barrier waits for")
    if type(aligned) is not bool:
        raise TraceError(f"barrier_arrive: aligned must be True or False, got {aligned!r}")
    bid, cnt = _barrier_operands("barrier_arrive", barrier_id, number_of_threads)
    if aligned:
        sync.barrier_arrive(bid, cnt)
    else:
        sync.barrier_arrive_unaligned(bid, cnt)


def sync_warp(mask: TracedInt | int = FULL_MASK) -> None:
    """``bar.warp.sync mask``: wait until every lane of ``mask`` has reached it, and order their memory
    accesses."""
    m = lane_mask_value(mask)
    sync.bar_warp_sync(m)


# -- fences ----------------------------------------------------------------------------------------

PROXY_KINDS = ("alias", "async", "async.global", "async.shared", "tensormap", "generic")
SHARED_SPACES = ("cta", "cluster")


def fence_proxy(kind: str, *, space: str | None = None, use_intrinsic: bool | None = None) -> None:
    """``fence.proxy.<kind>``: order this thread's memory accesses through the generic proxy with those through
    proxy ``kind`` (``"async.shared"`` with ``space="cta"`` or ``"cluster"``, ``"async.global"``, ``"async"``
    for every state space, ``"alias"`` for accesses through aliased virtual addresses).

    ``space`` goes with ``"async.shared"`` only (and is required there). ``"tensormap"`` and ``"generic"`` are
    not kinds of this fence: the tensormap proxy's fences are ``cpasync.fence_tma_desc_acquire`` /
    ``fence_tma_desc_release``. ``use_intrinsic`` (how the DSL emits the fence) changes nothing here.
    """
    if not isinstance(kind, str) or kind not in PROXY_KINDS:
        raise TraceError(f"fence_proxy: kind must be one of {', '.join(PROXY_KINDS)}, got {kind!r}")
    if kind in ("tensormap", "generic"):
        raise TraceError(f"fence_proxy: {kind!r} is not a proxy kind of fence.proxy (the tensormap proxy is fenced "
                         f"by cpasync.fence_tma_desc_acquire / fence_tma_desc_release)")
    if use_intrinsic is not None and type(use_intrinsic) is not bool:
        raise TraceError(f"fence_proxy: use_intrinsic must be None, True or False, got {use_intrinsic!r}")
    if kind == "async.shared":
        if space not in SHARED_SPACES:
            raise TraceError(f"fence_proxy: kind 'async.shared' needs space='cta' or space='cluster', got "
                             f"space={space!r}")
        sync.fence_proxy_async(f"shared::{space}")
        return
    if space is not None:
        raise TraceError(f"fence_proxy: only kind 'async.shared' takes a space, got space={space!r} with "
                         f"kind {kind!r}")
    if kind == "async.global":
        sync.fence_proxy_async("global")
    else:
        sync.fence_proxy(kind)


def fence_view_async_shared() -> None:
    """``fence.proxy.async.shared::cta``: make this thread's shared-memory writes visible to later async-proxy
    (TMA, WGMMA) reads of them, and its reads ordered before later async-proxy writes."""
    fence_proxy("async.shared", space="cta")


def fence_acq_rel_cta() -> None:
    """``fence.acq_rel.cta``: an acquire-release fence among the threads of the block."""
    sync.fence_acq_rel("block")


def fence_acq_rel_cluster() -> None:
    """``fence.acq_rel.cluster``: an acquire-release fence among the threads of the cluster."""
    sync.fence_acq_rel("cluster")


def fence_acq_rel_gpu() -> None:
    """``fence.acq_rel.gpu``: an acquire-release fence among the threads of the device."""
    sync.fence_acq_rel("device")


def fence_acq_rel_sys() -> None:
    """``fence.acq_rel.sys``: an acquire-release fence at system scope (host and peer devices too)."""
    sync.fence_acq_rel(None)


# -- bulk-copy groups -----------------------------------------------------------------------------


def cp_async_bulk_commit_group() -> None:
    """``cp.async.bulk.commit_group``: close the group of this thread's bulk copies (TMA stores) issued so far."""
    forms.tma_store_arrive()


def cp_async_bulk_wait_group(group: int, *, read: bool | None = None) -> None:
    """``cp.async.bulk.wait_group{.read} group``: wait until at most ``group`` (a static int, 0..63) of this
    thread's bulk-copy groups are pending; ``read=True``: only until they have finished reading their
    source (shared memory may be reused)."""
    static_int(group, "cp_async_bulk_wait_group: group", "a count of pending groups in 0..63")
    if read is not None and type(read) is not bool:
        raise TraceError(f"cp_async_bulk_wait_group: read must be None, True or False, got {read!r}")
    if not 0 <= group <= 63:
        raise TraceError(f"cp_async_bulk_wait_group: group must be a count of pending groups in 0..63, got {group}")
    forms.tma_store_wait(group, read=bool(read))


# -- programmatic dependent launch -----------------------------------------------------------------


def griddepcontrol_wait() -> None:
    """``griddepcontrol.wait``: wait until the grids this one depends on (a programmatic dependent launch) have
    completed and their memory operations are visible; without such a dependency it returns at once."""
    sync.griddepcontrol_wait()


def griddepcontrol_launch_dependents() -> None:
    """``griddepcontrol.launch_dependents``: let the grids that depend on this one start launching (a scheduling
    hint; what they may read is still ordered by their ``griddepcontrol_wait``)."""
    sync.griddepcontrol_launch_dependents()


# -- aborting -------------------------------------------------------------------------------------


def trap() -> None:
    """``trap``: abort the kernel. Every thread of the grid stops and the launch fails: the next synchronisation
    with the device raises (an illegal-instruction error), and the CUDA context is lost with it, as after a
    device-side assertion. For a broken precondition that only the device can see (values in device memory):
    print the rule and the values with ``cute.printf`` first, then trap, rather than compute something wrong."""
    sync.trap()


# -- register reallocation -----------------------------------------------------------------------


def reg_count_value(reg_count: object, name: str) -> int:
    """``reg_count`` as setmaxnreg takes it: a static multiple of 8 in 24..256."""
    n = static_int(reg_count, f"{name}: reg_count", "a multiple of 8 in 24..256")
    if not 24 <= n <= 256 or n % 8:
        raise TraceError(f"{name}: reg_count must be a multiple of 8 in 24..256, got {n}")
    return n


def entry_registers(threads: int) -> int:
    """The most registers per thread a CTA of ``threads`` threads can start with in a kernel that reallocates
    them: ptxas gives such a kernel (``.maxntid`` the block, ``.minnctapersm 1``) at most what one CTA may hold,
    64K registers over its threads in whole units of 8, and never more than 255 (it gives the highest count the
    kernel increases to when that is less)."""
    return min(255, 65536 // threads // 8 * 8)


def _check_register_pool(b):
    """A CTA's warp groups share the registers it started with (:func:`entry_registers` per thread):
    ``setmaxnreg.dec`` returns some to that pool and ``setmaxnreg.inc`` waits until the pool holds enough, so
    counts the pool cannot hold hang the kernel. Checked when a kernel of a static block is finished: a
    ``TraceError`` where the highest increase cannot be met even with every other warp group of the block at the
    lowest count the kernel decreases to (which warp groups run which ``setmaxnreg`` is the kernel's run-time
    choice, so a plan that fits only some assignments is the kernel's to get right: one producer warp group at
    ``d`` and ``n - 1`` consumers at ``i`` need ``d + (n - 1) * i <= n * entry``, 40 + 2 * 232 = 3 * 168 for 384
    threads)."""
    counts = b.setmaxnreg_counts
    if b.threads % 128 or not counts.get("inc"):
        return
    groups, entry = b.threads // 128, entry_registers(b.threads)
    low = min(counts.get("dec", []) + [entry])
    high = max(counts["inc"])
    need = high + (groups - 1) * low
    if need > groups * entry:
        others = f" and the other {groups - 1} at {low} (the least any is left with)" if groups > 1 else ""
        raise TraceError(f"setmaxnreg.inc to {high} would wait for registers forever: a {b.threads}-thread block "
                         f"starts with {entry} registers per thread, {groups} warp group(s) x {entry} = "
                         f"{groups * entry}, and one warp group at {high}{others} needs {need} (the rule: the "
                         f"highest increase + (warp groups - 1) x the lowest count <= warp groups x {entry})")


def _setmaxnreg(action, reg_count, name):
    n = reg_count_value(reg_count, name)
    b = current()
    asked = b.setmaxnreg_counts.setdefault(action, [])
    asked.append(n)
    b.undo_log.append(asked.pop)  # a trace abandoned past this point asked for nothing
    if b.threads is not None and _check_register_pool not in b.finish_checks:
        b.finish_checks.append(_check_register_pool)
        # ptxas keeps setmaxnreg only where it knows the registers the kernel starts with: one CTA per SM fixes
        # them at what the block may hold (entry_registers)
        warp.one_cta_per_sm()
    warp.setmaxnreg(action, n)


class RegisterPlan:
    """A kernel's register reallocation for warp specialisation: the producers' count (``dealloc``, default 24),
    the consumers' (``alloc``, default 240), and whether reallocation is on (``enabled``). One per traced
    kernel: ``annotate_producer_reg_dealloc``, ``annotate_consumer_reg_alloc``, ``no_set_max_nreg`` and
    ``disable_warp_group_reg_alloc`` set it; ``warpgroup_reg_alloc()`` / ``warpgroup_reg_dealloc()`` called
    without a count follow it."""

    __slots__ = ("dealloc", "alloc", "enabled")

    def __init__(self) -> None:
        self.dealloc, self.alloc, self.enabled = 24, 240, True


def register_plan() -> RegisterPlan:
    """The register plan of the kernel being traced."""
    b = current()
    if b.reg_plan is None:
        b.reg_plan = RegisterPlan()
    return b.reg_plan


def setmaxregister_increase(reg_count: int) -> None:
    """``setmaxnreg.inc.sync.aligned.u32 reg_count``: raise this warp group's per-thread register budget to
    ``reg_count`` (a static multiple of 8 in 24..256; sm_90a). Every warp of the warp group executes it.

    The registers come from those the CTA started with (:func:`entry_registers` per thread) that other warp
    groups returned; it waits until they are there (see :func:`_check_register_pool` for the rule checked while
    tracing). The kernel gets ``.minnctapersm 1``, and its PTX is assembled by a whole-program ptxas, without
    which setmaxnreg is dropped (``mlir_dialects.assembler``)."""
    _setmaxnreg("inc", reg_count, "setmaxregister_increase")


def setmaxregister_decrease(reg_count: int) -> None:
    """``setmaxnreg.dec.sync.aligned.u32 reg_count``: lower this warp group's per-thread register budget to
    ``reg_count`` (a static multiple of 8 in 24..256; sm_90a), releasing registers to the other warp groups."""
    _setmaxnreg("dec", reg_count, "setmaxregister_decrease")


def _planned(action, reg_count, name):
    """``setmaxnreg`` of ``reg_count``, or without one the kernel's register plan (nothing when it is off)."""
    if reg_count is None:
        plan = register_plan()
        if not plan.enabled:
            return
        reg_count = plan.alloc if action == "inc" else plan.dealloc
    _setmaxnreg(action, reg_count, name)


def warpgroup_reg_alloc(reg_count: int | None = None) -> None:
    """The DSL's older name of :func:`setmaxregister_increase`. Without ``reg_count``: the kernel's register plan
    (:class:`RegisterPlan`: 240 unless annotated; nothing when the plan is off)."""
    _planned("inc", reg_count, "warpgroup_reg_alloc")


def warpgroup_reg_dealloc(reg_count: int | None = None) -> None:
    """The DSL's older name of :func:`setmaxregister_decrease`. Without ``reg_count``: the kernel's register plan
    (:class:`RegisterPlan`: 24 unless annotated; nothing when the plan is off)."""
    _planned("dec", reg_count, "warpgroup_reg_dealloc")
