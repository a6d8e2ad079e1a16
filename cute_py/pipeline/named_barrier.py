"""Named barriers: ``NamedBarrier(barrier_id, num_threads)`` and the free functions of the same operations.

A CTA has 16 hardware barriers, ids 0..15 (``bar.sync``/``bar.arrive``); id 0 is the one ``sync_threads``
uses. A named barrier completes once ``num_threads`` threads (whole warps: a multiple of 32) have arrived on
it; ``arrive`` signals without waiting (a producer), ``arrive_and_wait`` signals and waits (a consumer, or
all the threads of a group that synchronise). Unlike an mbarrier every thread counts, the waiting ones too:
a producer warp and a consumer warp that meet on a named barrier make ``num_threads = 64``.

``arrive`` and ``arrive_and_wait`` are the ``.aligned`` forms (every thread of a warp executes the same barrier
instruction); ``arrive_unaligned`` is ``barrier.cta.arrive``, for threads of a warp that may diverge.
``wait_unaligned`` raises :class:`~cute_py.errors.TraceError`: the CuTe DSL emits the aligned ``bar.sync``
for it, which a diverged warp would make undefined.
"""

from __future__ import annotations

import warnings

from .. import arch
from ..compiler import TraceError, TracedInt
from .sync_objects import SyncObject

__all__ = ["NamedBarrier", "arrive", "arrive_unaligned", "wait", "wait_unaligned", "arrive_and_wait", "sync",
           "NUM_NAMED_BARRIERS", "MAX_BLOCK_THREADS"]

NUM_NAMED_BARRIERS = 16
MAX_BLOCK_THREADS = 1024


def _check_id(barrier_id):
    if isinstance(barrier_id, TracedInt):
        return
    if type(barrier_id) is not int or not 0 <= barrier_id < NUM_NAMED_BARRIERS:
        raise TraceError(f"a named barrier id is an int in 0..{NUM_NAMED_BARRIERS - 1} (the CTA's hardware "
                         f"barriers) or a traced Int32, got {barrier_id!r}")


def _check_threads(num_threads):
    if isinstance(num_threads, TracedInt):
        return
    if type(num_threads) is not int or num_threads <= 0 or num_threads % 32 or num_threads > MAX_BLOCK_THREADS:
        raise TraceError(f"a named barrier's thread count is a positive multiple of 32 (whole warps) of at most "
                         f"{MAX_BLOCK_THREADS}, got {num_threads!r}")


def _unaligned(name):
    raise TraceError(f"{name}: only the aligned form of a named-barrier wait (every thread of a warp executes it) "
                     f"is supported; call arrive_and_wait from whole warps")


class NamedBarrier(SyncObject):
    """Hardware barrier ``barrier_id`` (0..15) for ``num_threads`` threads (a multiple of 32); immutable, and
    equal to another of the same id and count (the CuTe DSL's frozen dataclass).

    Id 0 is the barrier of ``sync_threads``: using it for a subset of the block warns, as in the CuTe DSL.
    """

    __slots__ = ("barrier_id", "num_threads")

    def __init__(self, barrier_id: TracedInt | int, num_threads: TracedInt | int) -> None:
        _check_id(barrier_id)
        _check_threads(num_threads)
        if type(barrier_id) is int and barrier_id == 0:
            warnings.warn("NamedBarrier id 0 is the barrier of sync_threads; give a named barrier another id",
                          stacklevel=2)
        object.__setattr__(self, "barrier_id", barrier_id)
        object.__setattr__(self, "num_threads", num_threads)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("NamedBarrier is immutable")

    def _key(self):
        return tuple(v if type(v) is int else ("traced", id(v)) for v in (self.barrier_id, self.num_threads))

    def __eq__(self, other: object) -> bool:
        return type(other) is NamedBarrier and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((NamedBarrier, self._key()))

    def __repr__(self) -> str:
        def show(v):
            return str(v) if type(v) is int else "?"

        return f"NamedBarrier(barrier_id={show(self.barrier_id)}, num_threads={show(self.num_threads)})"

    def arrive(self) -> None:
        """``bar.arrive id, num_threads``: count the calling warp's threads, do not wait."""
        arch.barrier_arrive(barrier_id=self.barrier_id, number_of_threads=self.num_threads)

    def arrive_unaligned(self) -> None:
        """``barrier.cta.arrive id, num_threads``: count the calling threads (of a possibly diverged warp)."""
        arch.barrier_arrive(barrier_id=self.barrier_id, number_of_threads=self.num_threads, aligned=False)

    def wait(self) -> None:
        """A named barrier has no wait without an arrival: this is :meth:`arrive_and_wait` (with a warning,
        as in the CuTe DSL) — the calling threads count towards ``num_threads``."""
        warnings.warn("NamedBarrier.wait arrives on the barrier too: it is arrive_and_wait", stacklevel=2)
        self.arrive_and_wait()

    def wait_unaligned(self) -> None:
        """Not supported (see the module): raises ``TraceError``."""
        _unaligned("NamedBarrier.wait_unaligned")

    def arrive_and_wait(self) -> None:
        """``bar.sync id, num_threads``: count the calling warp's threads and wait until ``num_threads`` did."""
        arch.barrier(barrier_id=self.barrier_id, number_of_threads=self.num_threads)

    def sync(self) -> None:
        """:meth:`arrive_and_wait`."""
        self.arrive_and_wait()

    def get_barrier(self) -> TracedInt | int:
        """The barrier id."""
        return self.barrier_id

    def max(self) -> int:
        """The most threads a named barrier can count (a block's 1024)."""
        return MAX_BLOCK_THREADS


def arrive(barrier_id: TracedInt | int, num_threads: TracedInt | int) -> None:
    """``NamedBarrier(barrier_id, num_threads).arrive()``."""
    _check_id(barrier_id)
    _check_threads(num_threads)
    arch.barrier_arrive(barrier_id=barrier_id, number_of_threads=num_threads)


def arrive_unaligned(barrier_id: TracedInt | int, num_threads: TracedInt | int) -> None:
    """``NamedBarrier(barrier_id, num_threads).arrive_unaligned()``."""
    _check_id(barrier_id)
    _check_threads(num_threads)
    arch.barrier_arrive(barrier_id=barrier_id, number_of_threads=num_threads, aligned=False)


def wait(barrier_id: TracedInt | int, num_threads: TracedInt | int) -> None:
    """``arrive_and_wait(barrier_id, num_threads)``, with a warning that it arrives too.

    (The CuTe DSL's free ``wait()`` takes no barrier and cannot name one; this one takes the barrier.)"""
    warnings.warn("named-barrier wait arrives on the barrier too: it is arrive_and_wait", stacklevel=2)
    arrive_and_wait(barrier_id, num_threads)


def wait_unaligned(barrier_id: TracedInt | int, num_threads: TracedInt | int) -> None:
    """Not supported (see the module): raises ``TraceError``."""
    _unaligned("wait_unaligned")


def arrive_and_wait(barrier_id: TracedInt | int, num_threads: TracedInt | int) -> None:
    """``NamedBarrier(barrier_id, num_threads).arrive_and_wait()``."""
    _check_id(barrier_id)
    _check_threads(num_threads)
    arch.barrier(barrier_id=barrier_id, number_of_threads=num_threads)


def sync(barrier_id: TracedInt | int = 0) -> None:
    """``bar.sync barrier_id``: wait until every thread of the block arrived on barrier ``barrier_id``."""
    _check_id(barrier_id)
    arch.barrier(barrier_id=barrier_id)
