"""The emission of the synchronisation unit: mbarriers (initialise, arrive, expect transaction bytes, wait), fences,
named barriers, cluster barriers, ``elect.sync``, the grid-wide barrier and programmatic dependent launch control,
and its copy: ``st.async`` of register values into a peer CTA's shared memory, completing their bytes on that CTA's
mbarrier (``CopyDsmemStoreOp``, ``store_async_dsmem``).

Every instruction is an op of the ``cute_nvgpu`` dialect (``fence.acq_rel`` an op of LLVM): arrivals with a count
or a scope, and those on a peer CTA's mbarrier (through ``mapa``), are ``mbarrier_scoped``; ``test_wait`` and the
predicated ``try_wait`` have their own ops. An mbarrier is given as the ``!llvm.ptr<3>`` of this CTA's copy; a
peer's is named by its rank in the cluster (an ``i32``).

:func:`transaction_kind` tells the ops built here and by the TMA unit that complete transaction bytes on an
mbarrier, for the rules checked on a finished kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mlir_dialects as md

from ...nvgpu.sync import CopyDsmemStoreOp
from ..lang.builder import current
from ..lang.memory import pointer_value
from ..lang.smem import check_mbarrier_pointer
from ..lang.traced_int import as_value

__all__ = ["ENTRIES", "mbarrier_init", "fence_mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_cluster",
           "mbarrier_arrive_count", "mbarrier_arrive_expect_tx", "mbarrier_arrive_expect_tx_scoped",
           "mbarrier_expect_tx", "mbarrier_expect_tx_scoped", "mbarrier_arrive_count_on_peer",
           "mbarrier_arrive_expect_tx_on_peer", "mbarrier_expect_tx_on_peer", "mbarrier_wait_parity",
           "mbarrier_try_wait_parity", "mbarrier_test_wait_parity", "mbarrier_conditional_try_wait_parity",
           "barrier_sync", "barrier_arrive", "barrier_arrive_unaligned", "bar_warp_sync", "cluster_arrive",
           "cluster_wait", "fence_proxy_async", "fence_proxy", "fence_acq_rel", "elect_sync", "elect_active_lane",
           "store_async_dsmem", "sync_grid", "griddepcontrol_wait", "griddepcontrol_launch_dependents", "trap",
           "transaction_kind"]


# -- mbarriers --------------------------------------------------------------------------------------


def mbarrier_init(ptr: Any, count: Any) -> None:
    """``mbarrier.init.shared::cta.b64 [ptr], count``."""
    with current().at_end():
        md.mbarrier_init(ptr, count)


def fence_mbarrier_init() -> None:
    """``fence.mbarrier_init.release.cluster``."""
    with current().at_end():
        md.fence_mbarrier_init()


def mbarrier_arrive(ptr: Any) -> None:
    """``mbarrier.arrive.shared::cta.b64 _, [ptr]``: one arrival on this CTA's mbarrier."""
    with current().at_end():
        md.mbarrier_arrive(ptr)


def mbarrier_arrive_cluster(ptr: Any, peer: Any) -> None:
    """One arrival, ``.release.cluster``, on the mbarrier at ``ptr``'s offset in CTA ``peer`` of the cluster."""
    with current().at_end():
        md.mbarrier_arrive_cluster(ptr, peer)


def mbarrier_arrive_count(ptr: Any, count: Any, scope: str) -> None:
    """``mbarrier.arrive.release.<scope>.shared::cta.b64``: ``count`` arrivals on this CTA's mbarrier."""
    with current().at_end():
        md.mbarrier_scoped("arrive", ptr, count, scope=scope)


def mbarrier_arrive_expect_tx(ptr: Any, nbytes: Any) -> None:
    """``mbarrier.arrive.expect_tx.shared::cta.b64 _, [ptr], nbytes``."""
    with current().at_end():
        md.mbarrier_arrive_expect_tx(ptr, nbytes)


def mbarrier_arrive_expect_tx_scoped(ptr: Any, nbytes: Any, scope: str) -> None:
    """``mbarrier.arrive.expect_tx.release.<scope>.shared::cta.b64 _, [ptr], nbytes``."""
    with current().at_end():
        md.mbarrier_scoped("arrive_expect_tx", ptr, nbytes, scope=scope)


def mbarrier_expect_tx(ptr: Any, nbytes: Any) -> None:
    """``mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [ptr], nbytes``."""
    with current().at_end():
        md.mbarrier_expect_tx(ptr, nbytes)


def mbarrier_expect_tx_scoped(ptr: Any, nbytes: Any, scope: str) -> None:
    """``mbarrier.expect_tx.relaxed.<scope>.shared::cta.b64 [ptr], nbytes``."""
    with current().at_end():
        md.mbarrier_scoped("expect_tx", ptr, nbytes, scope=scope)


def _on_peer(kind, ptr, peer, value, scope):
    """``cute_nvgpu.mbarrier_scoped`` ``kind`` with ``value`` on the mbarrier at ``ptr``'s offset in CTA ``peer`` of
    the cluster (its address there mapped by ``mapa``)."""
    with current().at_end():
        md.mbarrier_scoped(kind, ptr, value, scope=scope, peer=peer)


def mbarrier_arrive_count_on_peer(ptr: Any, peer: Any, count: Any, scope: str) -> None:
    """``mbarrier.arrive.release.<scope>.shared::cluster.b64``: ``count`` arrivals on the mbarrier at ``ptr``'s
    offset in CTA ``peer``."""
    _on_peer("arrive", ptr, peer, count, scope)


def mbarrier_arrive_expect_tx_on_peer(ptr: Any, peer: Any, nbytes: Any, scope: str) -> None:
    """``mbarrier.arrive.expect_tx.release.<scope>.shared::cluster.b64`` on the mbarrier at ``ptr``'s offset in
    CTA ``peer``."""
    _on_peer("arrive_expect_tx", ptr, peer, nbytes, scope)


def mbarrier_expect_tx_on_peer(ptr: Any, peer: Any, nbytes: Any, scope: str) -> None:
    """``mbarrier.expect_tx.relaxed.<scope>.shared::cluster.b64`` on the mbarrier at ``ptr``'s offset in CTA
    ``peer``."""
    _on_peer("expect_tx", ptr, peer, nbytes, scope)


def mbarrier_wait_parity(ptr: Any, phase: Any) -> None:
    """Wait until the phase of parity ``phase`` of the mbarrier has completed (a ``try_wait.parity`` loop)."""
    with current().at_end():
        md.mbarrier_wait_parity(ptr, phase)


def mbarrier_try_wait_parity(ptr: Any, phase: Any) -> Any:
    """``mbarrier.try_wait.parity.shared::cta.b64``: the ``i1`` of whether the phase has completed."""
    with current().at_end():
        return md.mbarrier_try_wait_parity(ptr, phase).done


def mbarrier_test_wait_parity(ptr: Any, phase: Any) -> Any:
    """``mbarrier.test_wait.parity.shared::cta.b64``: the ``i1`` of whether the phase has completed (no wait)."""
    with current().at_end():
        return md.mbarrier_test_wait_parity(ptr, phase).done


def mbarrier_conditional_try_wait_parity(cond: Any, ptr: Any, phase: Any) -> Any:
    """``@cond mbarrier.try_wait.parity.shared::cta.b64``: the ``i1`` of whether the phase has completed where the
    ``i1`` ``cond`` holds, true where it does not."""
    with current().at_end():
        return md.mbarrier_try_wait_parity_if(cond, ptr, phase).done


# -- barriers ---------------------------------------------------------------------------------------


def barrier_sync(barrier_id: Any, count: Any = None) -> None:
    """``bar.sync barrier_id{, count}`` (``i32`` values)."""
    with current().at_end():
        md.barrier_sync(barrier_id, count)


def barrier_arrive(barrier_id: Any, count: Any) -> None:
    """``bar.arrive barrier_id, count``."""
    with current().at_end():
        md.barrier_arrive(barrier_id, count)


def barrier_arrive_unaligned(barrier_id: Any, count: Any) -> None:
    """``barrier.cta.arrive barrier_id, count`` (threads of a warp may diverge)."""
    with current().at_end():
        md.barrier_arrive(barrier_id, count, aligned=False)


def bar_warp_sync(mask: Any) -> None:
    """``bar.warp.sync mask``."""
    with current().at_end():
        md.bar_warp_sync(mask)


def cluster_arrive(relaxed: bool, aligned: bool) -> None:
    """``barrier.cluster.arrive{.relaxed}{.aligned}``."""
    with current().at_end():
        md.cluster_arrive(relaxed=relaxed, aligned=aligned)


def cluster_wait(aligned: bool) -> None:
    """``barrier.cluster.wait{.aligned}``."""
    with current().at_end():
        md.cluster_wait(aligned=aligned)


# -- fences -----------------------------------------------------------------------------------------


def fence_proxy_async(space: str) -> None:
    """``fence.proxy.async.<space>`` (``space`` ``"shared::cta"``, ``"shared::cluster"`` or ``"global"``)."""
    with current().at_end():
        md.fence_proxy_async(space)


def fence_proxy(kind: str) -> None:
    """``fence.proxy.<kind>`` (``"alias"``, ``"async"``: every state space)."""
    with current().at_end():
        md.fence_proxy(kind)


def fence_acq_rel(syncscope: str | None) -> None:
    """``fence.acq_rel`` at LLVM's ``syncscope`` (``"block"``, ``"cluster"``, ``"device"``, None: the system)."""
    b = current()
    llvm = b.mlir.llvm
    with b.at_end():
        llvm.FenceOp(llvm.AtomicOrdering.acq_rel, syncscope=syncscope)


# -- election ---------------------------------------------------------------------------------------


def elect_sync(mask: Any = None) -> Any:
    """``elect.sync _|p, mask`` (the full warp without ``mask``): the ``i1`` true in the elected lane."""
    with current().at_end():
        return md.elect_sync(mask).is_leader


def elect_active_lane() -> Any:
    """``elect.sync`` among the lanes executing it (``activemask.b32``): the ``i1`` true in the elected lane."""
    with current().at_end():
        return md.elect_sync(md.activemask().mask).is_leader


# -- stores into a peer CTA's shared memory -------------------------------------------------------------


def store_async_dsmem(addr: Any, words: Sequence[Any], mbar: Any, rank: Any) -> None:
    """``st.async.shared::cluster.mbarrier::complete_tx::bytes{.v2,.v4}.b32`` of the ``i32`` values ``words`` (1,
    2 or 4) at ``addr``'s offset in CTA ``rank``, completing their bytes on that CTA's mbarrier at ``mbar``'s."""
    b = current()
    n = len(words)
    lanes = [b.const(k, 32) for k in range(n)]
    with b.at_end():
        if n == 1:
            data = words[0]
        else:
            data = b.mlir.llvm.UndefOp(b.ir.VectorType.get([n], b.int_type(32))).result
            for k, w in zip(lanes, words):
                data = b.mlir.llvm.InsertElementOp(data, w, k).result
        md.dsmem_store(addr, data, mbar, rank)


def _dsmem_store(b, op, dst, value, mbar, cta_id):
    """``st.async`` of ``value`` (an MLIR value of 32, 64 or 128 bits) to ``dst`` (this CTA's address of the
    element) in CTA ``cta_id``, completing its bytes on that CTA's ``mbar``."""
    check_mbarrier_pointer(mbar, "copy: mbar_ptr", peer=True)
    d, bar = pointer_value(dst, "the peer's shared-memory tile", peer=True), pointer_value(mbar, "mbar_ptr", peer=True)
    rank = as_value(cta_id, 32)
    with b.at_end():
        md.dsmem_store(d, value, bar, rank)


# -- the grid ---------------------------------------------------------------------------------------


def sync_grid() -> None:
    """The grid-wide barrier of a cooperative launch: thread (0, 0, 0) of each block arrives on the barrier word of
    the grid's workspace (its address in ``%envreg2`` (low) and ``%envreg1`` (high), the word at byte 4): every
    block adds 1 except block (0, 0, 0), which adds 2^31 - (blocks - 1), so the word's top bit flips once all have
    arrived, and each arriving thread waits for the flip from the value its own atomic saw (the low bits are the
    same after each barrier: any number of them may follow)."""
    with current().at_end():
        md.grid_sync()


def trap() -> None:
    """``trap``."""
    with current().at_end():
        md.trap()


def griddepcontrol_wait() -> None:
    """``griddepcontrol.wait``."""
    with current().at_end():
        md.griddepcontrol("wait")


def griddepcontrol_launch_dependents() -> None:
    """``griddepcontrol.launch_dependents``."""
    with current().at_end():
        md.griddepcontrol("launch_dependents")


# -- transaction bytes ------------------------------------------------------------------------------

_TMA_LOAD_OPS = ("cute_nvgpu.tma_load",)
_OTHER_TX_OPS = ("cute_nvgpu.tma_load_im2col", "cute_nvgpu.dsmem_store")


def transaction_kind(op: Any) -> str | None:
    """How the built operation ``op`` completes transaction bytes on an mbarrier: ``"load"`` for a TMA tile load,
    ``"other"`` for another op that does (an im2col load, a DSMEM store), None when it does not."""
    name = op.name
    if name in _TMA_LOAD_OPS:
        return "load"
    if name in _OTHER_TX_OPS:
        return "other"
    return None


# op class -> (its entry, the dialect ops the entry builds)
ENTRIES = {
    CopyDsmemStoreOp: (_dsmem_store, ("dsmem_store",)),
}
