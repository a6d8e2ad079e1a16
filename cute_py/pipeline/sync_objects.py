"""The synchronisation objects a pipeline is built of: an array of mbarriers (``MbarrierArray``) and the
bulk async-group fence of TMA stores (``TmaStoreFence``), behind the ``SyncObject`` interface.

An :class:`MbarrierArray` is ``num_stages`` consecutive 8-byte mbarriers in shared memory, one per stage,
each initialised (by one elected lane of warp 0) for ``arrive_count(group)`` arrivals per phase. How one side
*arrives* depends on its :class:`~cute_py.pipeline.PipelineOp`:

==============  ===================================================================================
``AsyncThread`` every calling thread arrives (``mbarrier.arrive``), on this CTA's barrier or, with a
                destination rank, on the same barrier of that CTA of the cluster (``mapa`` + remote arrive)
``TmaLoad``     one elected lane of the calling warp arrives and expects ``tx_count`` bytes
                (``mbarrier.arrive.expect_tx``); the TMA loads complete those bytes
``AsyncLoad``   every calling thread's earlier ``cp.async`` copies arrive when they land
                (``cp.async.mbarrier.arrive.noinc``, counted in the initial count)
==============  ===================================================================================

Waits test a phase parity: ``wait(index, phase)`` returns once the phase of parity ``phase`` of barrier
``index`` has completed (a ``try_wait`` loop).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from .. import arch
from ..compiler import TraceError, TracedBool, TracedInt, if_
from ..compiler.builtins.mbar_rules import name_barrier
from ..compiler.lang.smem import MBARRIER_BYTES, check_mbarrier_pointer
from ..tensor.pointer import AddressSpace, Pointer
from .groups import CooperativeGroup, PipelineOp, arrive_count

__all__ = ["SyncObject", "MbarrierArray", "TmaStoreFence", "alloc_reserved_mbarrier", "MAX_ARRIVE_COUNT",
           "MAX_TX_COUNT", "check_barrier_storage"]

MAX_ARRIVE_COUNT = (1 << 20) - 1  # an mbarrier's expected arrival count
MAX_TX_COUNT = (1 << 20) - 1      # the transaction bytes one phase may expect


class SyncObject(ABC):
    """A hardware synchronisation object of a pipeline: arrive, wait, and the barrier it uses."""

    @abstractmethod
    def arrive(self, *args: Any, **kwargs: Any) -> None:
        """Signal this object."""

    @abstractmethod
    def wait(self, *args: Any, **kwargs: Any) -> None:
        """Wait on this object."""

    @abstractmethod
    def arrive_and_wait(self, *args: Any, **kwargs: Any) -> None:
        """Signal, then wait."""

    def arrive_and_drop(self, *args: Any, **kwargs: Any) -> None:
        """Not supported by the sm_90 objects (as in the CuTe DSL): raises ``TraceError``."""
        raise TraceError(f"{type(self).__name__}.arrive_and_drop is not supported")

    @abstractmethod
    def get_barrier(self, *args: Any, **kwargs: Any) -> Any:
        """The barrier (an mbarrier pointer, a named-barrier id) this object signals."""

    @abstractmethod
    def max(self) -> int | None:
        """The largest arrival count the object supports."""


def alloc_reserved_mbarrier(num_stages: int, *, multiplier: int = 2) -> Pointer:
    """Shared memory for ``num_stages * multiplier`` mbarriers (8-byte Int64 words), from this kernel's
    :class:`~cute_py.arch.SmemAllocator`: the storage a pipeline allocates when given no ``barrier_storage``.

    cute_py's shared memory is one region with no reserved partition: the barriers are an ordinary
    allocation (the CuTe DSL places them at a reserved low address)."""
    for name, v in (("num_stages", num_stages), ("multiplier", multiplier)):
        if type(v) is not int or v <= 0:
            raise TraceError(f"alloc_reserved_mbarrier: {name} must be a static positive int, got {v!r}")
    return arch.SmemAllocator().allocate_mbarrier(num_stages * multiplier)


def check_barrier_storage(storage: Any, count: int, what: str) -> Pointer:
    """``storage`` if it can hold ``count`` consecutive mbarriers: a shared-memory pointer to 64-bit words
    (``SmemAllocator.allocate_mbarrier``), 8-byte aligned, whose first and last words lie in mbarrier (or raw
    byte) allocations of this kernel; ``TraceError`` naming the rule otherwise."""
    if not isinstance(storage, Pointer) or storage.memspace is not AddressSpace.smem:
        raise TraceError(f"{what}: barrier_storage must be a shared-memory pointer from "
                         f"SmemAllocator.allocate_mbarrier({count}), got {storage!r}")
    if storage.dtype.width != 8 * MBARRIER_BYTES:
        raise TraceError(f"{what}: barrier_storage must point to 64-bit mbarrier words (Int64, as "
                         f"SmemAllocator.allocate_mbarrier gives), got a pointer to {storage.dtype.name}")
    check_mbarrier_pointer(storage, what)
    check_mbarrier_pointer(storage + (count - 1), f"{what} (mbarrier {count - 1} of the {count} it needs)")
    return storage


def _check_index(index, num_stages, what):
    if isinstance(index, TracedInt):
        return index
    if type(index) is not int:
        raise TraceError(f"{what}: a stage index is an int or a traced Int32, got {index!r}")
    if not 0 <= index < num_stages:
        raise TraceError(f"{what}: stage index {index} is outside the {num_stages} stages")
    return index


def _check_phase(phase, what):
    if isinstance(phase, TracedInt):
        return phase
    if type(phase) is not int or phase not in (0, 1):
        raise TraceError(f"{what}: a phase parity is 0, 1 or a traced Int32, got {phase!r}")
    return phase


class MbarrierArray(SyncObject):
    """``num_stages`` mbarriers at ``barrier_storage``, initialised when made (see the module).

    ``agent`` is ``(PipelineOp, CooperativeGroup)``: the op says how the group arrives, the group how many
    arrivals a phase expects. ``tx_count`` is the bytes a ``TmaLoad`` phase expects. ``name`` labels the
    barriers (the CuTe DSL's profiling name; unused here).
    """

    def __init__(self, barrier_storage: Pointer, num_stages: int, agent: tuple[PipelineOp, CooperativeGroup],
                 tx_count: int = 0, name: str = "") -> None:
        if type(num_stages) is not int or num_stages <= 0:
            raise TraceError(f"MbarrierArray: the stage count must be a static positive int, got {num_stages!r}")
        if (not isinstance(agent, tuple) or len(agent) != 2 or not isinstance(agent[0], PipelineOp)
                or not isinstance(agent[1], CooperativeGroup)):
            raise TraceError(f"MbarrierArray: agent must be (PipelineOp, CooperativeGroup), got {agent!r}")
        self.op_type, self.cg = agent
        if self.op_type not in (PipelineOp.AsyncThread, PipelineOp.TmaLoad, PipelineOp.AsyncLoad,
                                PipelineOp.Composite):
            raise TraceError(f"MbarrierArray: {self.op_type} has no mbarrier arrival on sm_90 (AsyncThread, "
                             f"TmaLoad, AsyncLoad)")
        self.barrier_storage = check_barrier_storage(barrier_storage, num_stages, "MbarrierArray")
        self.mbarrier_base = self.barrier_storage
        self.num_stages = num_stages
        self.name = name
        if type(tx_count) is not int or not 0 <= tx_count <= MAX_TX_COUNT:
            raise TraceError(f"MbarrierArray: tx_count (the bytes a phase expects) must be a static int in "
                             f"0..{MAX_TX_COUNT}, got {tx_count!r}")
        if self.op_type is PipelineOp.TmaLoad and tx_count == 0:
            raise TraceError("MbarrierArray: a TmaLoad barrier needs the bytes each phase's TMA loads bring "
                             "(tx_count > 0); with 0 the phase completes before the data lands")
        self.tx_count = tx_count
        self.arrive_count = arrive_count(self.cg)
        if type(self.arrive_count) is int and not 0 < self.arrive_count <= MAX_ARRIVE_COUNT:
            raise TraceError(f"MbarrierArray: an mbarrier expects 1..{MAX_ARRIVE_COUNT} arrivals per phase, the "
                             f"group {self.cg!r} stands for {self.arrive_count}")
        self.mbarrier_init()

    def mbarrier_init(self) -> None:
        """One elected lane of warp 0 initialises every barrier of the array for ``arrive_count`` arrivals
        (make the initialisation visible with ``mbarrier_init_fence`` and a block or cluster barrier)."""
        with if_(arch.warp_idx() == 0):
            with arch.elect_one():
                for i in range(self.num_stages):
                    arch.mbarrier_init(self.get_barrier(i), self.arrive_count)

    def get_barrier(self, index: TracedInt | int) -> Pointer:
        """The mbarrier of stage ``index``."""
        return name_barrier(self.mbarrier_base + _check_index(index, self.num_stages, "MbarrierArray.get_barrier"),
                            self.mbarrier_base, index)

    def recast_to_new_op_type(self, new_op_type: PipelineOp) -> MbarrierArray:
        """The same barriers (not initialised again), arrived on as ``new_op_type``."""
        new = object.__new__(MbarrierArray)
        new.__dict__.update(self.__dict__)
        new.op_type = new_op_type
        return new

    def arrive(self, index: TracedInt | int, dst: TracedInt | int | None = None, cta_group: Any = None) -> None:
        """Arrive on stage ``index`` as the array's op does (see the module); ``dst`` is, for ``AsyncThread``,
        the rank in the cluster of the CTA whose barrier to arrive on (``None``: this CTA's)."""
        if cta_group is not None:
            raise TraceError("MbarrierArray.arrive: cta_group is for tcgen05 (sm_100) arrivals")
        if self.op_type is PipelineOp.AsyncThread:
            self.arrive_mbarrier(index, dst)
        elif self.op_type is PipelineOp.TmaLoad:
            if dst is not None:
                raise TraceError("MbarrierArray.arrive: a TmaLoad arrival is on this CTA's barrier (no dst)")
            self.arrive_and_expect_tx(index, self.tx_count)
        elif self.op_type is PipelineOp.AsyncLoad:
            if dst is not None:
                raise TraceError("MbarrierArray.arrive: a cp.async arrival is on this CTA's barrier (no dst)")
            self.arrive_cp_async_mbarrier(index)
        else:
            raise TraceError(f"MbarrierArray.arrive: no arrival for {self.op_type}")

    def arrive_mbarrier(self, index: TracedInt | int, dst_rank: TracedInt | int | None = None) -> None:
        """Every calling thread arrives on stage ``index``'s barrier: this CTA's, or CTA ``dst_rank``'s."""
        bar = self.get_barrier(index)
        if dst_rank is None:
            arch.mbarrier_arrive(bar)
        else:  # .release.cta, as CuTe C++'s ClusterBarrier::arrive(cta_id) (see the package's differences)
            arch.mbarrier_arrive(bar, dst_rank, scope="cta")

    def arrive_cp_async_mbarrier(self, index: TracedInt | int) -> None:
        """Every calling thread's earlier cp.async copies arrive on stage ``index``'s barrier when they land."""
        arch.cp_async_mbarrier_arrive_noinc(self.get_barrier(index))

    def arrive_and_expect_tx(self, index: TracedInt | int, tx_count: TracedInt | int) -> None:
        """One elected lane of the calling warp (every lane must call it) arrives on stage ``index``'s barrier
        and expects ``tx_count`` more bytes in its phase."""
        bar = self.get_barrier(index)
        with arch.elect_one():
            arch.mbarrier_arrive_and_expect_tx(bar, tx_count)

    def try_wait(self, index: TracedInt | int, phase: TracedInt | int) -> TracedBool:
        """Whether the phase of parity ``phase`` of stage ``index``'s barrier has completed (a run-time test)."""
        return arch.mbarrier_try_wait(self.get_barrier(index), _check_phase(phase, "MbarrierArray.try_wait"))

    def test_wait(self, index: TracedInt | int, phase: TracedInt | int) -> TracedBool:
        """Whether the phase of parity ``phase`` of stage ``index``'s barrier has completed, tested once without
        waiting (``mbarrier.test_wait``)."""
        return arch.mbarrier_test_wait(self.get_barrier(index), _check_phase(phase, "MbarrierArray.test_wait"))

    def wait(self, index: TracedInt | int, phase: TracedInt | int) -> None:
        """Wait until the phase of parity ``phase`` of stage ``index``'s barrier has completed."""
        arch.mbarrier_wait(self.get_barrier(index), _check_phase(phase, "MbarrierArray.wait"))

    def arrive_and_wait(self, index: TracedInt | int, phase: TracedInt | int,
                        dst: TracedInt | int | None = None, cta_group: Any = None) -> None:
        """:meth:`arrive`, then :meth:`wait`."""
        self.arrive(index, dst, cta_group)
        self.wait(index, phase)

    def max(self) -> int:
        """The largest arrival count of an mbarrier, ``2**20 - 1``."""
        return MAX_ARRIVE_COUNT

    def __repr__(self) -> str:
        return f"MbarrierArray({self.op_type.name}, {self.cg!r}, stages={self.num_stages}, tx={self.tx_count})"


class TmaStoreFence(SyncObject):
    """The bulk async-groups of TMA stores from ``num_stages`` shared-memory buffers (no mbarrier).

    ``arrive`` closes the calling thread's group of stores issued so far (``cp.async.bulk.commit_group``);
    ``wait`` returns once at most ``num_stages - 1`` of its groups still read shared memory
    (``cp.async.bulk.wait_group.read``), so the buffer of the oldest may be written again; ``tail`` waits for
    all of them. Groups are per thread: the thread that issued the stores commits and waits.
    """

    def __init__(self, num_stages: int = 0) -> None:
        if type(num_stages) is not int or not 1 <= num_stages <= 64:
            raise TraceError(f"TmaStoreFence: the stage count must be a static int in 1..64, got {num_stages!r}")
        self.num_stages = num_stages

    def arrive(self) -> None:
        """Commit the calling thread's TMA stores issued so far as one bulk async-group."""
        arch.cp_async_bulk_commit_group()

    def wait(self) -> None:
        """Wait until at most ``num_stages - 1`` of the calling thread's groups still read shared memory."""
        arch.cp_async_bulk_wait_group(self.num_stages - 1, read=True)

    def arrive_and_wait(self) -> None:
        """:meth:`arrive`, then :meth:`wait`."""
        self.arrive()
        self.wait()

    def tail(self) -> None:
        """Wait until every group of the calling thread has read shared memory."""
        arch.cp_async_bulk_wait_group(0, read=True)

    def get_barrier(self) -> None:
        """A store fence has no barrier: raises ``TraceError``."""
        raise TraceError("TmaStoreFence uses bulk async-groups, not mbarriers: it has no barrier")

    def max(self) -> None:
        """A store fence has no arrival count: raises ``TraceError``."""
        raise TraceError("TmaStoreFence has no arrival count")

    def __repr__(self) -> str:
        return f"TmaStoreFence(stages={self.num_stages})"
