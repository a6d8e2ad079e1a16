"""Kernel builtins of mbarriers, with the CuTe DSL's ``cute.arch`` names and arguments: initialise, arrive
(locally or on a peer CTA of the cluster, with an arrival count), expect transaction bytes, and wait on a phase.

``mbar_ptr`` is a shared-memory pointer from ``SmemAllocator.allocate_mbarrier()`` (or 8-byte aligned raw
bytes; never a tensor's data). ``peer_cta_rank_in_cluster`` names the CTA of the cluster whose mbarrier at the
same shared-memory offset is meant (``mapa.shared::cluster``): a static int in 0..15 or a traced integer. A
pointer mapped with ``map_dsmem_ptr(ptr, rank)`` means the same as ``ptr`` with ``peer_cta_rank_in_cluster=rank``.
``scope`` is ``"cta"`` or ``"cluster"``: the threads whose accesses the arrival orders (PTX ``.cta`` /
``.cluster``). Phases are parities: 0 or 1 (static or traced).

=======================================================  =================================================
call                                                     PTX
=======================================================  =================================================
``mbarrier_init(p, cnt)``                                ``mbarrier.init.shared::cta.b64 [p], cnt``
``mbarrier_init_fence()``                                ``fence.mbarrier_init.release.cluster``
``mbarrier_arrive(p)``                                   ``mbarrier.arrive.shared::cta.b64 s, [p]``
``mbarrier_arrive(p, arrive_count=n, scope=...)``        ``mbarrier.arrive.release.<scope>.shared::cta.b64 s, [p], n``
``mbarrier_arrive(p, rank, n, scope=...)``               ``mapa.shared::cluster.u32 r, p, rank;``
                                                         ``mbarrier.arrive.release.<scope>.shared::cluster.b64 _, [r], n``
``mbarrier_arrive_and_expect_tx(p, bytes)``              ``mbarrier.arrive.expect_tx.shared::cta.b64 _, [p], bytes``
``mbarrier_arrive_and_expect_tx(p, b, rank, scope=..)``  ``... .release.<scope>.shared::cluster.b64 _, [r], b``
``mbarrier_expect_tx(p, bytes{, rank}, scope=...)``      ``mbarrier.expect_tx.relaxed.<scope>.shared::<cta|cluster>.b64``
``mbarrier_wait(p, phase)``                              a ``mbarrier.try_wait.parity`` loop
``mbarrier_try_wait(p, phase)``                          ``mbarrier.try_wait.parity.shared::cta.b64`` (a Boolean)
``mbarrier_test_wait(p, phase)``                         ``mbarrier.test_wait.parity.shared::cta.b64`` (a Boolean)
``mbarrier_conditional_try_wait(c, p, phase)``           ``@c mbarrier.try_wait.parity``; True where ``c`` is false
``cp_async_mbarrier_arrive_noinc(p)``                    ``cp.async.mbarrier.arrive.noinc.shared::cta.b64 [p]``
=======================================================  =================================================

Defaults follow the DSL: an arrival is ``.release.cta`` (a remote one too; pass ``scope="cluster"`` when the
arrival must order this CTA's writes of a peer's shared memory), ``mbarrier_expect_tx`` is ``.cta`` locally and
``.cluster`` on a peer. ``relaxed=True`` arrivals (``.relaxed``) need PTX ISA 8.6 and are rejected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import TraceError
from ...tensor.pointer import AddressSpace
from ..lang.memory import pointer_value
from ..lang.smem import check_mbarrier_pointer
from ..lang.values import TracedBool
from ..lang.traced_int import TracedInt, as_value
from ..emit import cpasync, sync
from ..emit.operands import int_operand, predicate_value
from .mbar_rules import note

if TYPE_CHECKING:
    from ...tensor.pointer import Pointer

__all__ = ["mbarrier_init", "mbarrier_init_fence", "mbarrier_arrive", "mbarrier_arrive_and_expect_tx",
           "mbarrier_expect_tx", "mbarrier_wait", "mbarrier_try_wait", "mbarrier_test_wait",
           "mbarrier_conditional_try_wait", "cp_async_mbarrier_arrive_noinc"]

MAX_CLUSTER_CTAS = 16
MBARRIER_MAX_COUNT = (1 << 20) - 1  # arrival and transaction counts are 20-bit
SCOPES = ("cta", "cluster")


def _local(mbar_ptr, name):
    """The ``!llvm.ptr<3>`` of an mbarrier of this CTA."""
    check_mbarrier_pointer(mbar_ptr, name)
    return pointer_value(mbar_ptr, f"{name}: the mbarrier")


def _target(mbar_ptr, peer, name):
    """(``!llvm.ptr<3>`` of this CTA's mbarrier, the peer rank or None) of a local or mapped mbarrier pointer."""
    mapped = getattr(mbar_ptr, "memspace", None) is AddressSpace.dsmem
    if mapped:
        if peer is not None:
            raise TraceError(f"{name}: mbar_ptr is already mapped to a peer CTA (map_dsmem_ptr); pass the CTA's own "
                             f"pointer with peer_cta_rank_in_cluster, or the mapped pointer without it")
        check_mbarrier_pointer(mbar_ptr, name, peer=True)
        peer = mbar_ptr.peer
        p = pointer_value(mbar_ptr, f"{name}: the mbarrier", peer=True)
    else:
        p = _local(mbar_ptr, name)
    if peer is not None:
        peer = int_operand(peer, f"{name}: peer_cta_rank_in_cluster", 32, 0, MAX_CLUSTER_CTAS,
                           f" (a cluster has at most {MAX_CLUSTER_CTAS} CTAs)")
    return p, peer


def _scope(scope, default, name):
    if scope is None:
        return default
    text = getattr(scope, "name", scope)
    text = text.lower() if isinstance(text, str) else text
    if text not in SCOPES:
        raise TraceError(f"{name}: scope must be 'cta' or 'cluster' (the threads whose accesses the operation "
                         f"orders), got {scope!r}")
    return text


def _count(value, name, what, lo):
    """The i32 value of an arrival or byte count, a static one checked to lie in [lo, 2^20)."""
    return int_operand(value, f"{name}: {what}", 32, lo, MBARRIER_MAX_COUNT + 1,
                       " (mbarrier counts are 20-bit)")


def mbarrier_init(mbar_ptr: Pointer, cnt: TracedInt | int) -> None:
    """``mbarrier.init.shared::cta.b64``: initialise the mbarrier at ``mbar_ptr`` for ``cnt`` arrivals per phase
    (1 .. 2^20 - 1). One thread initialises it (``with elect_one():`` in a warp)."""
    p, c = _local(mbar_ptr, "mbarrier_init"), as_value(cnt)
    note("init", mbar_ptr, cnt, name="mbarrier_init")
    sync.mbarrier_init(p, c)


def mbarrier_init_fence() -> None:
    """``fence.mbarrier_init.release.cluster``: make this thread's mbarrier initialisations visible to the
    cluster (before a ``cluster_arrive``/``cluster_wait`` that lets peers arrive on them)."""
    sync.fence_mbarrier_init()


def mbarrier_arrive(mbar_ptr: Pointer, peer_cta_rank_in_cluster: TracedInt | int | None = None,
                    arrive_count: TracedInt | int = 1, *, scope: str | None = None) -> None:
    """Arrive ``arrive_count`` times (1 .. 2^20 - 1) on the mbarrier at ``mbar_ptr``, or on the one at the same
    offset in CTA ``peer_cta_rank_in_cluster`` of the cluster; ``scope`` (default ``"cta"``) as the module says."""
    name = "mbarrier_arrive"
    p, peer = _target(mbar_ptr, peer_cta_rank_in_cluster, name)
    sc = _scope(scope, "cta", name)
    note("arrive", mbar_ptr, arrive_count, remote=peer is not None, name=name)
    if type(arrive_count) is int and arrive_count == 1 and peer is None and sc == "cta":
        sync.mbarrier_arrive(p)
        return
    if type(arrive_count) is int and arrive_count == 1 and peer is not None and sc == "cluster":
        sync.mbarrier_arrive_cluster(p, peer)
        return
    n = _count(arrive_count, name, "arrive_count", 1)
    if peer is None:
        sync.mbarrier_arrive_count(p, n, sc)
    else:
        sync.mbarrier_arrive_count_on_peer(p, peer, n, sc)


def mbarrier_arrive_and_expect_tx(mbar_ptr: Pointer, bytes: TracedInt | int,
                                  peer_cta_rank_in_cluster: TracedInt | int | None = None, relaxed: bool = False,
                                  scope: str = "cta") -> None:
    """Raise the expected transaction count of the mbarrier (this CTA's, or CTA ``peer_cta_rank_in_cluster``'s)
    by ``bytes`` (0 .. 2^20 - 1) and arrive on it once: the producer's side of a TMA load. One thread per
    phase does it (``with elect_one():``)."""
    name = "mbarrier_arrive_and_expect_tx"
    if relaxed is not False:
        raise TraceError(f"{name}: relaxed=True (mbarrier.arrive.relaxed) needs PTX ISA 8.6; kernels are emitted "
                         f"for PTX ISA 8.0, whose arrivals are .release")
    p, peer = _target(mbar_ptr, peer_cta_rank_in_cluster, name)
    sc = _scope(scope, "cta", name)
    n = _count(bytes, name, "bytes", 0)
    note("expect_arrive", mbar_ptr, bytes, remote=peer is not None, name=name)
    if peer is None and sc == "cta":
        sync.mbarrier_arrive_expect_tx(p, n)
    elif peer is None:
        sync.mbarrier_arrive_expect_tx_scoped(p, n, sc)
    else:
        sync.mbarrier_arrive_expect_tx_on_peer(p, peer, n, sc)


def mbarrier_expect_tx(mbar_ptr: Pointer, bytes: TracedInt | int,
                       peer_cta_rank_in_cluster: TracedInt | int | None = None, *, scope: str | None = None) -> None:
    """Raise the expected transaction count of the mbarrier (this CTA's, or CTA ``peer_cta_rank_in_cluster``'s)
    by ``bytes`` (0 .. 2^20 - 1) without arriving; ``scope`` defaults to ``"cta"`` locally and ``"cluster"`` on a
    peer."""
    name = "mbarrier_expect_tx"
    p, peer = _target(mbar_ptr, peer_cta_rank_in_cluster, name)
    sc = _scope(scope, "cta" if peer is None else "cluster", name)
    n = _count(bytes, name, "bytes", 0)
    note("expect", mbar_ptr, bytes, remote=peer is not None, name=name)
    if peer is None and sc == "cta":
        sync.mbarrier_expect_tx(p, n)
    elif peer is None:
        sync.mbarrier_expect_tx_scoped(p, n, sc)
    else:
        sync.mbarrier_expect_tx_on_peer(p, peer, n, sc)


def _phase(phase, name):
    if type(phase) is int and phase not in (0, 1):
        raise TraceError(f"{name}: an mbarrier phase parity is 0 or 1, got {phase}")
    if not (type(phase) is int or isinstance(phase, TracedInt)):
        raise TraceError(f"{name}: the phase must be 0, 1 or a traced integer, got {phase!r}")
    return int_operand(phase, f"{name}: phase")


def mbarrier_wait(mbar_ptr: Pointer, phase: TracedInt | int) -> None:
    """Wait until the phase of parity ``phase`` of the mbarrier at ``mbar_ptr`` has completed (a
    ``mbarrier.try_wait.parity`` loop)."""
    p, ph = _local(mbar_ptr, "mbarrier_wait"), _phase(phase, "mbarrier_wait")
    note("wait", mbar_ptr, phase, name="mbarrier_wait")
    sync.mbarrier_wait_parity(p, ph)


def mbarrier_try_wait(mbar_ptr: Pointer, phase: TracedInt | int) -> TracedBool:
    """A run-time condition: whether the phase of parity ``phase`` has completed, after waiting for it a
    bounded, hardware-chosen time (``mbarrier.try_wait.parity``)."""
    p, ph = _local(mbar_ptr, "mbarrier_try_wait"), _phase(phase, "mbarrier_try_wait")
    note("wait", mbar_ptr, phase, name="mbarrier_try_wait")
    return TracedBool(sync.mbarrier_try_wait_parity(p, ph))


def mbarrier_test_wait(mbar_ptr: Pointer, phase: TracedInt | int) -> TracedBool:
    """A run-time condition: whether the phase of parity ``phase`` has completed, tested once without waiting
    (``mbarrier.test_wait.parity``)."""
    p, ph = _local(mbar_ptr, "mbarrier_test_wait"), _phase(phase, "mbarrier_test_wait")
    note("wait", mbar_ptr, phase, name="mbarrier_test_wait")
    return TracedBool(sync.mbarrier_test_wait_parity(p, ph))


def mbarrier_conditional_try_wait(cond: TracedBool | bool, mbar_ptr: Pointer, phase: TracedInt | int) -> TracedBool:
    """``mbarrier_try_wait(mbar_ptr, phase)`` where ``cond`` holds (the instruction predicated on it), and True
    where it does not (nothing is waited for)."""
    name = "mbarrier_conditional_try_wait"
    c = predicate_value(cond, f"{name}: cond")
    p, ph = _local(mbar_ptr, name), _phase(phase, name)
    note("wait", mbar_ptr, phase, name=name)
    return TracedBool(sync.mbarrier_conditional_try_wait_parity(c, p, ph))


def cp_async_mbarrier_arrive_noinc(mbar_ptr: Pointer) -> None:
    """``cp.async.mbarrier.arrive.noinc.shared::cta.b64``: the mbarrier's arrival by this thread happens once all
    its earlier ``cp.async`` copies have completed; ``.noinc``: the arrival was counted in the mbarrier's
    initial count (it does not raise the pending count)."""
    p = _local(mbar_ptr, "cp_async_mbarrier_arrive_noinc")
    note("arrive", mbar_ptr, 1, name="cp_async_mbarrier_arrive_noinc")
    if str(p.type) != "!llvm.ptr<3>":
        raise TraceError(f"cp_async_mbarrier_arrive_noinc: the mbarrier must be a shared-memory pointer, got "
                         f"type {p.type}")
    cpasync.mbarrier_arrive_noinc(p)
