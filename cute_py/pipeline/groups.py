"""Who takes part in a pipeline: ``Agent`` kinds, ``CooperativeGroup`` sizes, the ``PipelineOp`` each side runs,
and ``agent_sync``.

A :class:`CooperativeGroup` says how many threads arrive on a pipeline's mbarrier per phase:
``arrive_count(group)`` is ``size`` threads for ``Agent.Thread``, ``size * 32`` for ``Agent.Warp``,
``size`` blocks' threads for ``Agent.ThreadBlock`` and ``size`` clusters' threads for
``Agent.ThreadBlockCluster`` (the last two read the block and cluster extents at run time).
"""

from __future__ import annotations

import enum
import warnings

from .. import arch
from ..compiler import TraceError, TracedInt

__all__ = ["Agent", "CooperativeGroup", "PipelineOp", "arrive_count", "agent_sync", "WARP_SIZE"]

WARP_SIZE = 32


class Agent(enum.Enum):
    """What a :class:`CooperativeGroup` counts: threads, warps, thread blocks or clusters of thread blocks."""

    Thread = enum.auto()
    Warp = enum.auto()
    ThreadBlock = enum.auto()
    ThreadBlockCluster = enum.auto()


class CooperativeGroup:
    """``size`` agents of kind ``agent`` (a static positive int, or a traced Int32 known only at run time).

    ``alignment`` is accepted for the CuTe DSL's signature and ignored with a ``DeprecationWarning``, as there.
    """

    def __init__(self, agent: Agent, size: TracedInt | int = 1, alignment: int | None = None) -> None:
        if alignment is not None:
            warnings.warn("CooperativeGroup's alignment argument is deprecated and ignored", DeprecationWarning,
                          stacklevel=2)
        if not isinstance(agent, Agent):
            raise TraceError(f"CooperativeGroup takes an Agent (Thread, Warp, ThreadBlock, ThreadBlockCluster), "
                             f"got {agent!r}")
        if isinstance(size, TracedInt):
            pass
        elif type(size) is not int:
            raise TraceError(f"CooperativeGroup size must be an int or a traced Int32, got {size!r}")
        elif size <= 0:
            raise TraceError(f"CooperativeGroup size must be positive (the number of agents taking part), got {size}")
        self.agent = agent
        self.size = size

    def __repr__(self) -> str:
        size = self.size if type(self.size) is int else "?"
        return f"CooperativeGroup({self.agent.name}, {size})"


class PipelineOp(enum.Enum):
    """The kind of operation one side of a pipeline signals with: plain thread arrivals, TMA loads (bytes
    counted on the mbarrier), TMA stores (bulk async-groups), cp.async loads (``.noinc`` arrivals), and the
    Blackwell kinds the CuTe DSL names (unsupported here, as sm_90a has no tcgen05 or cluster launch control)."""

    AsyncThread = enum.auto()
    TCGen05Mma = enum.auto()
    TmaLoad = enum.auto()
    ClcLoad = enum.auto()
    TmaStore = enum.auto()
    Composite = enum.auto()
    AsyncLoad = enum.auto()


def arrive_count(group: CooperativeGroup) -> TracedInt | int:
    """The number of threads ``group`` stands for: the arrivals an mbarrier of that group expects per phase.

    Static for ``Agent.Thread`` and ``Agent.Warp`` groups of static size; ``ThreadBlock`` and
    ``ThreadBlockCluster`` groups multiply by the block (and cluster) extents read at run time.
    """
    if not isinstance(group, CooperativeGroup):
        raise TraceError(f"expected a CooperativeGroup, got {group!r}")
    if group.agent is Agent.Thread:
        return group.size
    if group.agent is Agent.Warp:
        return group.size * WARP_SIZE
    bx, by, bz = arch.block_dim()
    threads = group.size * bx * by * bz
    if group.agent is Agent.ThreadBlock:
        return threads
    return threads * arch.cluster_size()


def agent_sync(group: Agent, is_relaxed: bool = False) -> None:
    """Synchronise every thread of ``group``: ``Agent.ThreadBlock`` with ``bar.sync 0`` (``sync_threads``),
    ``Agent.ThreadBlockCluster`` with a cluster arrive (relaxed if ``is_relaxed``) and wait. Threads and warps
    have no such barrier: use a :class:`~cute_py.pipeline.NamedBarrier` or an mbarrier."""
    if group is Agent.ThreadBlock:
        arch.sync_threads()
    elif group is Agent.ThreadBlockCluster:
        if is_relaxed:
            arch.cluster_arrive_relaxed()
        else:
            arch.cluster_arrive()
        arch.cluster_wait()
    else:
        raise TraceError(f"agent_sync synchronises Agent.ThreadBlock or Agent.ThreadBlockCluster, got {group!r} "
                         f"(threads and warps synchronise through a NamedBarrier or an mbarrier)")
