"""The Hopper pipelines: ``PipelineAsync`` (threads produce, threads consume), ``PipelineCpAsync`` (cp.async
producers), ``PipelineTmaAsync`` (TMA loads, possibly multicast across a cluster) and ``PipelineTmaStore``
(TMA stores out of a ring of shared-memory buffers).

A pipeline of ``num_stages`` stages owns two :class:`~cute_py.pipeline.MbarrierArray` s at ``barrier_storage``
(``2 * num_stages`` mbarriers): ``full[s]`` (the producer signals that stage ``s`` holds data) and ``empty[s]``
(the consumers signal that they are done with it). Each participant walks the stages with a
:class:`~cute_py.pipeline.PipelineState`::

    producer (state from make_pipeline_state(Producer, S))     consumer (state from ...(Consumer, S))
      producer_acquire(state)   wait empty[i] (parity p)         consumer_wait(state)     wait full[i] (parity p)
      ... write stage i ...                                      ... read stage i ...
      producer_commit(state)    arrive on full[i]                consumer_release(state)  arrive on empty[i]
      state.advance()                                            state.advance()

For ``PipelineTmaAsync``, ``producer_acquire`` also makes one elected lane arrive on ``full[i]`` expecting
``tx_count`` bytes, the TMA loads (``tma_bar_ptr=producer_get_barrier(state)``) bring them, and
``producer_commit`` does nothing. With a cluster (``cta_layout_vmnk`` of more than one CTA) a producer's
multicast fills the stage in every CTA it multicasts to, so its ``empty`` barrier must hear from all of their
consumers: each consumer warp's lane ``r`` (``r`` < the cluster size) arrives on ``empty[i]`` of CTA rank ``r``
when CTA ``r`` multicasts into this one (``is_signaling_thread``), so one consumer warp gives
``mcast_size`` arrivals per stage and the consumer group counts ``mcast_size * consumer warps``
(``enable_multicast_signaling=True`` computes that count from a group of consumer threads).

The producer ends with ``producer_tail(state)``: it waits until the consumers have released every stage, so
no arrival lands on the barriers of a CTA that has exited.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import arch
from ..compiler import TraceError, TracedBool, TracedInt, if_
from ..compiler.frontend.builder import current
from ..core.normalise import is_static
from ..core.products import product
from ..core.layout import Layout
from ..tensor.pointer import Pointer
from .groups import Agent, CooperativeGroup, PipelineOp, WARP_SIZE, agent_sync, arrive_count, check_arrivals_fit
from .init_sync import cluster_size_of
from .state import PipelineState
from .sync_objects import MbarrierArray, SyncObject, TmaStoreFence, alloc_reserved_mbarrier, check_barrier_storage

__all__ = ["PipelineAsync", "PipelineCpAsync", "PipelineTmaAsync", "PipelineTmaStore"]


def _check_stages(num_stages, what):
    if type(num_stages) is not int or num_stages <= 0:
        raise TraceError(f"{what}: num_stages must be a static positive int, got {num_stages!r}")
    return num_stages


def _check_group(group, what):
    if not isinstance(group, CooperativeGroup):
        raise TraceError(f"{what} must be a CooperativeGroup, got {group!r}")
    return group


def _storage(barrier_storage, num_stages, what):
    if barrier_storage is None:
        barrier_storage = alloc_reserved_mbarrier(num_stages)
    return check_barrier_storage(barrier_storage, 2 * num_stages, what)


def _unless(token, body):
    """``body()`` unless the run-time (or static) ``token`` holds; ``body()`` without a token."""
    if token is None or (type(token) is bool and not token):
        body()
    elif isinstance(token, TracedBool):
        with if_(~token):
            body()
    elif type(token) is not bool:
        raise TraceError(f"a try-wait token is the Boolean a try_wait/try_acquire returned, got {token!r}")


@dataclass(frozen=True, eq=False)
class PipelineAsync:
    """A pipeline whose producers and consumers are threads that arrive on the mbarriers themselves (immutable;
    equal only to itself, as its fields hold run-time values).

    ``producer_commit`` makes every calling producer thread arrive on ``full`` (``producer_group`` counts them),
    ``consumer_release`` every calling consumer thread on ``empty`` (``consumer_group``); ``producer_mask`` /
    ``consumer_mask``, when given, is the cluster rank of the CTA whose barrier those arrivals go to.
    """

    sync_object_full: SyncObject
    sync_object_empty: SyncObject
    num_stages: int
    producer_mask: TracedInt | int | None
    consumer_mask: TracedInt | int | None

    @staticmethod
    def _make_sync_object(barrier_storage: Pointer, num_stages: int, agent: tuple[PipelineOp, CooperativeGroup],
                          tx_count: int = 0, name: str = "") -> SyncObject:
        """The sync object of one side: an :class:`MbarrierArray`, or a :class:`TmaStoreFence` for TMA stores."""
        if agent[0] is PipelineOp.TmaStore:
            return TmaStoreFence(num_stages)
        return MbarrierArray(barrier_storage, num_stages, agent, tx_count, name)

    @staticmethod
    def create(*, num_stages: int, producer_group: CooperativeGroup, consumer_group: CooperativeGroup,
               barrier_storage: Pointer | None = None, producer_mask: TracedInt | int | None = None,
               consumer_mask: TracedInt | int | None = None, defer_sync: bool = False,
               name: str = "") -> PipelineAsync:
        """Initialise the ``2 * num_stages`` mbarriers at ``barrier_storage`` (default: allocated here) and,
        unless ``defer_sync``, fence the initialisation and synchronise the block."""
        what = "PipelineAsync.create"
        return PipelineAsync(*_two_arrays(what, num_stages, producer_group, consumer_group, barrier_storage,
                                          PipelineOp.AsyncThread, 0, name, defer_sync, None, 1,
                                          producer_mask is not None, consumer_mask is not None),
                             num_stages, producer_mask, consumer_mask)

    # -- the producer ----------------------------------------------------------------------------------

    def _state(self, state, what):
        if not isinstance(state, PipelineState):
            raise TraceError(f"{type(self).__name__}.{what} takes a PipelineState, got {state!r}")
        if state.stages != self.num_stages:
            raise TraceError(f"{type(self).__name__}.{what}: the state walks {state.stages} stages, the pipeline "
                             f"has {self.num_stages}")
        return state

    def producer_acquire(self, state: PipelineState, try_acquire_token: TracedBool | bool | None = None) -> None:
        """Wait until stage ``state.index`` is empty (skipped where ``try_acquire_token`` holds)."""
        self._state(state, "producer_acquire")
        _unless(try_acquire_token, lambda: self.sync_object_empty.wait(state.index, state.phase))

    def producer_try_acquire(self, state: PipelineState) -> TracedBool:
        """Whether stage ``state.index`` is empty now (a run-time test; pass it to :meth:`producer_acquire`)."""
        self._state(state, "producer_try_acquire")
        return self.sync_object_empty.try_wait(state.index, state.phase)

    def producer_commit(self, state: PipelineState) -> None:
        """Signal that stage ``state.index`` holds data (every calling producer thread arrives)."""
        self._state(state, "producer_commit")
        self.sync_object_full.arrive(state.index, self.producer_mask)

    def producer_get_barrier(self, state: PipelineState) -> Pointer:
        """The ``full`` mbarrier of stage ``state.index`` (the ``tma_bar_ptr`` of a TMA load)."""
        self._state(state, "producer_get_barrier")
        return self.sync_object_full.get_barrier(state.index)

    def producer_tail(self, state: PipelineState) -> None:
        """Wait until the consumers have released every stage: ``num_stages`` waits on ``empty`` from
        ``state`` on, advancing ``state`` by ``num_stages`` (as the CuTe DSL does)."""
        self._state(state, "producer_tail")
        for _ in range(self.num_stages):
            self.sync_object_empty.wait(state.index, state.phase)
            state.advance()

    # -- the consumer ----------------------------------------------------------------------------------

    def consumer_wait(self, state: PipelineState, try_wait_token: TracedBool | bool | None = None) -> None:
        """Wait until stage ``state.index`` holds data (skipped where ``try_wait_token`` holds)."""
        self._state(state, "consumer_wait")
        _unless(try_wait_token, lambda: self.sync_object_full.wait(state.index, state.phase))

    def consumer_try_wait(self, state: PipelineState) -> TracedBool:
        """Whether stage ``state.index`` holds data now (a run-time test; pass it to :meth:`consumer_wait`)."""
        self._state(state, "consumer_try_wait")
        return self.sync_object_full.try_wait(state.index, state.phase)

    def consumer_release(self, state: PipelineState) -> None:
        """Signal that this consumer is done with stage ``state.index`` (every calling consumer thread arrives)."""
        self._state(state, "consumer_release")
        self.sync_object_empty.arrive(state.index, self.consumer_mask)

    def consumer_get_barrier(self, state: PipelineState) -> Pointer:
        """The ``empty`` mbarrier of stage ``state.index``."""
        self._state(state, "consumer_get_barrier")
        return self.sync_object_empty.get_barrier(state.index)

    # -- participants ------------------------------------------------------------------------------------

    def make_producer(self) -> Any:
        """A :class:`~cute_py.pipeline.PipelineProducer` over this pipeline, at a fresh producer state."""
        from .participants import PipelineProducer

        return PipelineProducer.fresh(self)

    def make_consumer(self) -> Any:
        """A :class:`~cute_py.pipeline.PipelineConsumer` over this pipeline, at a fresh consumer state."""
        from .participants import PipelineConsumer

        return PipelineConsumer.fresh(self)

    def make_participants(self) -> tuple[Any, Any]:
        """``(make_producer(), make_consumer())``."""
        return self.make_producer(), self.make_consumer()


def _two_arrays(what, num_stages, producer_group, consumer_group, barrier_storage, producer_op, tx_count, name,
                defer_sync, consumer_group_for_count=None, cluster=1, remote_full=False, remote_empty=False):
    """``(full, empty)``: the two mbarrier arrays of a pipeline, initialised; fenced and synchronised (the block,
    or the cluster when ``cluster > 1``) unless ``defer_sync``. The arrival counts must be reachable in the
    launch (``check_arrivals_fit``): ``remote_full``/``remote_empty``, the side arrives on peer CTAs' barriers."""
    _check_stages(num_stages, what)
    _check_group(producer_group, f"{what}: producer_group")
    _check_group(consumer_group, f"{what}: consumer_group")
    storage = _storage(barrier_storage, num_stages, what)
    full = MbarrierArray(storage, num_stages, (producer_op, producer_group), tx_count, name)
    check_arrivals_fit(what, "full", producer_group, full.arrive_count,
                       "warp" if producer_op is PipelineOp.TmaLoad else "thread", remote_full)
    empty = MbarrierArray(storage + num_stages, num_stages,
                          (PipelineOp.AsyncThread, consumer_group_for_count or consumer_group), 0, name)
    if consumer_group_for_count is None:  # PipelineTmaAsync's empty barriers: see _check_reachable
        check_arrivals_fit(what, "empty", consumer_group, empty.arrive_count, "thread", remote_empty)
    if type(defer_sync) is not bool:
        raise TraceError(f"{what}: defer_sync must be True or False, got {defer_sync!r}")
    if not defer_sync:
        arch.mbarrier_init_fence()
        if cluster == 1:
            agent_sync(Agent.ThreadBlock)
        else:
            agent_sync(Agent.ThreadBlockCluster, is_relaxed=True)
    return full, empty


@dataclass(frozen=True, eq=False)
class PipelineCpAsync(PipelineAsync):
    """A pipeline whose producers load with ``cp.async``: ``producer_commit`` makes each calling producer
    thread's earlier cp.async copies arrive on ``full`` when they land (``cp.async.mbarrier.arrive.noinc``), so
    ``producer_group`` counts the producer threads; the consumers arrive as in :class:`PipelineAsync`."""

    @staticmethod
    def create(*, num_stages: int, producer_group: CooperativeGroup, consumer_group: CooperativeGroup,
               barrier_storage: Pointer | None = None, producer_mask: TracedInt | int | None = None,
               consumer_mask: TracedInt | int | None = None, defer_sync: bool = False,
               name: str = "") -> PipelineCpAsync:
        """As :meth:`PipelineAsync.create`; ``producer_mask`` must be ``None`` (cp.async arrivals are local)."""
        what = "PipelineCpAsync.create"
        if producer_mask is not None:
            raise TraceError(f"{what}: cp.async arrivals go to this CTA's barriers; producer_mask must be None")
        return PipelineCpAsync(*_two_arrays(what, num_stages, producer_group, consumer_group, barrier_storage,
                                            PipelineOp.AsyncLoad, 0, name, defer_sync, None, 1, False,
                                            consumer_mask is not None),
                               num_stages, None, consumer_mask)


def _cluster_layout(cta_layout_vmnk, what):
    """The static rank-4 (V, M, N, K) cluster layout (coordinate -> CTA rank), checked to be a bijection onto
    the ranks ``0 .. size - 1`` and to match the launch's cluster."""
    if cta_layout_vmnk is None:
        return Layout((1, 1, 1, 1))
    if (not isinstance(cta_layout_vmnk, Layout) or not is_static(cta_layout_vmnk.shape)
            or not is_static(cta_layout_vmnk.stride)):
        raise TraceError(f"{what}: cta_layout_vmnk must be a static Layout (CTA coordinate -> rank in the "
                         f"cluster), got {cta_layout_vmnk!r}")
    shape = cta_layout_vmnk.shape
    if type(shape) is not tuple or len(shape) != 4 or not all(type(s) is int for s in shape):
        raise TraceError(f"{what}: cta_layout_vmnk has four flat modes (V, M, N, K), got {cta_layout_vmnk}")
    n = product(shape)
    if n > 16:
        raise TraceError(f"{what}: the cluster layout {cta_layout_vmnk} has {n} CTAs; a cluster holds at most 16")
    if sorted(cta_layout_vmnk(i) for i in range(n)) != list(range(n)):
        raise TraceError(f"{what}: cta_layout_vmnk {cta_layout_vmnk} must map its coordinates one to one onto "
                         f"the CTA ranks 0..{n - 1}")
    cluster_size_of(shape, what)
    return cta_layout_vmnk


def _mcast_size(shape, mcast_mode_mn, what):
    """How many CTAs a CTA's consumers signal per stage (itself included): those sharing its A tile (the M
    mode, varying N) and/or its B tile (varying M), as ``mcast_mode_mn`` selects."""
    if (not isinstance(mcast_mode_mn, tuple) or len(mcast_mode_mn) != 2
            or any(m not in (0, 1) or type(m) not in (int, bool) for m in mcast_mode_mn)
            or not any(mcast_mode_mn)):
        raise TraceError(f"{what}: mcast_mode_mn is (m, n) with each 0 or 1, not both 0, got {mcast_mode_mn!r}")
    m_mode, n_mode = mcast_mode_mn
    return (shape[2] if m_mode else 0) + (shape[1] if n_mode else 0) - (1 if m_mode and n_mode else 0)


@dataclass(frozen=True, eq=False)
class PipelineTmaAsync(PipelineAsync):
    """A pipeline whose producer issues TMA loads (possibly multicast) and whose consumers are threads.

    ``is_signaling_thread`` is the run-time condition under which a consumer thread arrives on an ``empty``
    barrier, and ``consumer_mask`` the rank of the CTA whose barrier it arrives on (``None`` without a
    cluster: lane 0 of each consumer warp arrives on this CTA's). Consumers are whole warps.
    """

    is_signaling_thread: TracedBool | bool

    @staticmethod
    def init_empty_barrier_arrive_signal(cta_layout_vmnk: Layout, tidx: TracedInt | int,
                                         mcast_mode_mn: tuple[int, int] = (1, 1)) -> tuple[Any, Any]:
        """``(dst_rank, is_signaling_thread)`` of the consumer thread ``tidx``: lane ``r`` of a warp signals CTA
        ``r % cluster size``, and does so where ``r`` < the cluster size and CTA ``r`` shares this CTA's M
        (resp. N) row of the cluster with the same V and K coordinates, for the modes ``mcast_mode_mn`` turns
        on (the CTAs whose multicast lands here)."""
        what = "PipelineTmaAsync.init_empty_barrier_arrive_signal"
        layout = _cluster_layout(cta_layout_vmnk, what)
        _mcast_size(layout.shape, mcast_mode_mn, what)
        m_mode, n_mode = mcast_mode_mn
        n = product(layout.shape)
        rank = arch.make_warp_uniform(arch.block_idx_in_cluster())
        lane = tidx % WARP_SIZE
        signals = lane < n
        dst_rank = lane % n
        dst, cur = layout.get_hier_coord(dst_rank), layout.get_hier_coord(rank)
        same = [d == c for d, c in zip(dst, cur)]
        along_n = same[0] & same[1] & same[3]  # same V, M, K: the CTAs that share this CTA's M row
        along_m = same[0] & same[2] & same[3]  # same V, N, K
        if m_mode and n_mode:
            signals = signals & (along_n | along_m)
        elif m_mode:
            signals = signals & along_n
        else:
            signals = signals & along_m
        return dst_rank, signals

    @staticmethod
    def create(*, num_stages: int, producer_group: CooperativeGroup, consumer_group: CooperativeGroup,
               tx_count: int, barrier_storage: Pointer | None = None, cta_layout_vmnk: Layout | None = None,
               tidx: TracedInt | int | None = None, mcast_mode_mn: tuple[int, int] = (1, 1),
               enable_multicast_signaling: bool = False, defer_sync: bool = False,
               name: str = "") -> PipelineTmaAsync:
        """Initialise the barriers: ``full`` for ``producer_group`` (usually ``CooperativeGroup(Agent.Thread)``:
        one elected lane arrives per stage) expecting ``tx_count`` bytes per stage, ``empty`` for
        ``consumer_group`` arrivals (``mcast_size * consumer warps``; see the module), or, with
        ``enable_multicast_signaling``, for the arrivals of the consumer threads ``consumer_group`` counts.
        ``cta_layout_vmnk``: the cluster (default one CTA); ``tidx``: the thread index that picks the signalling
        lanes (default: the thread's lane, ``lane_idx()``, which is ``thread_idx()[0] % 32`` in a
        1-D block). Unless ``defer_sync``, fences and synchronises the block or cluster.
        """
        what = "PipelineTmaAsync.create"
        _check_stages(num_stages, what)
        _check_group(consumer_group, f"{what}: consumer_group")
        layout = _cluster_layout(cta_layout_vmnk, what)
        n = product(layout.shape)
        mcast = _mcast_size(layout.shape, mcast_mode_mn, what)
        if type(tx_count) is not int or tx_count <= 0:
            raise TraceError(f"{what}: tx_count (the bytes the TMA loads of one stage bring to this CTA) must be a "
                             f"static positive int, got {tx_count!r}")
        counted = consumer_group
        threads = arrive_count(consumer_group)
        if enable_multicast_signaling:
            if type(threads) is not int or threads % WARP_SIZE:
                raise TraceError(f"{what}: with enable_multicast_signaling the consumer group counts whole warps of "
                                 f"consumer threads (a static multiple of 32), got {consumer_group!r}")
            counted = CooperativeGroup(Agent.Thread, mcast * (threads // WARP_SIZE))
        elif type(threads) is int and threads % mcast:
            raise TraceError(f"{what}: each consumer warp arrives on {mcast} CTAs' empty barriers per stage, so the "
                             f"consumer group's count must be a multiple of {mcast}, got {threads} ({consumer_group!r})"
                             f"; give mcast_size * consumer warps, or enable_multicast_signaling=True")
        _check_reachable(arrive_count(counted), mcast, what)
        full, empty = _two_arrays(what, num_stages, producer_group, consumer_group, barrier_storage,
                                  PipelineOp.TmaLoad, tx_count, name, defer_sync, counted, n)
        if tidx is None:  # the lane picks the signalling threads (tidx.x % 32 in a 1-D block)
            tidx = arch.lane_idx()
        dst_rank, signals = PipelineTmaAsync.init_empty_barrier_arrive_signal(layout, tidx, mcast_mode_mn)
        return PipelineTmaAsync(full, empty, num_stages, None, dst_rank if n > 1 else None, signals)

    def producer_acquire(self, state: PipelineState, try_acquire_token: TracedBool | bool | None = None) -> None:
        """Wait until stage ``state.index`` is empty (skipped where ``try_acquire_token`` holds), then one
        elected lane of the calling warp arrives on its ``full`` barrier expecting ``tx_count`` bytes. Every
        lane of the producer warp calls it."""
        self._state(state, "producer_acquire")
        _unless(try_acquire_token, lambda: self.sync_object_empty.wait(state.index, state.phase))
        self.sync_object_full.arrive(state.index, self.producer_mask)

    def producer_commit(self, state: PipelineState) -> None:
        """Nothing: the TMA loads themselves complete the ``full`` barrier's bytes."""
        self._state(state, "producer_commit")

    def consumer_release(self, state: PipelineState) -> None:
        """The signalling lanes of each calling consumer warp arrive on ``empty[state.index]`` of the CTAs
        whose multicast lands here (this CTA's without a cluster)."""
        self._state(state, "consumer_release")
        signals = self.is_signaling_thread
        if isinstance(signals, TracedBool):
            with if_(signals):
                self.sync_object_empty.arrive(state.index, self.consumer_mask)
        elif signals:
            self.sync_object_empty.arrive(state.index, self.consumer_mask)


def _check_reachable(count, mcast, what):
    """An ``empty`` barrier expecting more arrivals than the block's warps can give would never complete."""
    launch = current().launch
    if launch is None or type(count) is not int:
        return
    bx, by, bz = launch.block
    warps = -(-(bx * by * bz) // WARP_SIZE)
    if count > mcast * warps:
        raise TraceError(f"{what}: the empty barriers expect {count} arrivals per stage, but the {warps} warps of "
                         f"a block give at most {mcast} each ({mcast * warps}); the consumer group counts "
                         f"mcast_size * consumer warps")


@dataclass(frozen=True, eq=False)
class PipelineTmaStore(PipelineAsync):
    """TMA stores out of ``num_stages`` shared-memory buffers, synchronised by bulk async-groups (no mbarrier).

    The thread that issues a buffer's TMA store then calls ``producer_commit()`` (closing its group) and
    ``producer_acquire()`` (waiting until at most ``num_stages - 1`` groups still read shared memory, so the
    buffer written next is free); ``producer_tail()`` before the kernel ends waits for all of them.
    """

    @staticmethod
    def create(*, num_stages: int, producer_group: CooperativeGroup) -> PipelineTmaStore:
        """A store pipeline of ``num_stages`` buffers for ``producer_group``."""
        what = "PipelineTmaStore.create"
        _check_stages(num_stages, what)
        _check_group(producer_group, f"{what}: producer_group")
        return PipelineTmaStore(TmaStoreFence(num_stages), None, num_stages, None, None)

    def producer_acquire(self) -> None:
        """Wait until at most ``num_stages - 1`` of the calling thread's store groups still read shared memory."""
        self.sync_object_full.wait()

    def producer_commit(self) -> None:
        """Close the calling thread's TMA stores issued so far as one group."""
        self.sync_object_full.arrive()

    def producer_tail(self) -> None:
        """Wait until every store group of the calling thread has read shared memory."""
        self.sync_object_full.tail()

    def consumer_wait(self, *args: Any, **kwargs: Any) -> None:
        """A store pipeline has no consumer: raises ``TraceError``."""
        raise TraceError("PipelineTmaStore has no consumer agent (the TMA unit consumes the buffers)")

    def consumer_release(self, *args: Any, **kwargs: Any) -> None:
        """A store pipeline has no consumer: raises ``TraceError``."""
        raise TraceError("PipelineTmaStore has no consumer agent (the TMA unit consumes the buffers)")
