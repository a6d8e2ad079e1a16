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

__all__ = ["Agent", "CooperativeGroup", "PipelineOp", "arrive_count", "agent_sync", "WARP_SIZE", "check_arrivals_fit"]

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


def check_arrivals_fit(what: str, role: str, group: CooperativeGroup, count: TracedInt | int, per: str,
                       cluster_wide: bool) -> None:
    """``TraceError`` when the barriers of ``role`` (``"full"``/``"empty"``), expecting ``count`` arrivals per
    phase for ``group``, can never complete in the launch being traced: each arrival comes from one ``per``
    (``"thread"``, or ``"warp"``: one elected lane per warp) of the block, or of the cluster when
    ``cluster_wide`` (arrivals on a peer CTA's barrier). Skipped when ``count`` is a run-time value or no launch
    is known (block and cluster are static at every ``launch``, so this is only the case outside one)."""
    from ..compiler.builtins.mbar_rules import threads_of_launch
    from ..compiler.lang.builder import current

    launch = current().launch
    if launch is None:
        return
    block, cluster_threads, ctas = threads_of_launch(launch)
    if type(count) is not int and type(group.size) is int:  # read at run time, but the launch's extents are static
        count = group.size * {Agent.ThreadBlock: block, Agent.ThreadBlockCluster: cluster_threads}.get(group.agent, 0)
    if type(count) is not int or not count:
        return
    threads = cluster_threads if cluster_wide else block
    most = threads if per == "thread" else -(-block // WARP_SIZE) * (ctas if cluster_wide else 1)
    if count > most:
        unit = "threads" if per == "thread" else "warps (one elected lane of each arrives)"
        where = f"the cluster of {ctas} blocks" if cluster_wide else "the block"
        raise TraceError(f"{what}: the {role} barriers expect {count} arrivals per phase ({group!r}, "
                         f"Agent.{group.agent.name}), but {where} of {tuple(launch.block)} = {block} threads per "
                         f"block has only {most} {unit} to arrive: the phase never completes and the pipeline "
                         f"hangs; give the group the number of {per}s that arrive")
