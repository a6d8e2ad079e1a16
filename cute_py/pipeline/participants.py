"""Pipeline participants: a ``PipelineProducer`` / ``PipelineConsumer`` holds a pipeline and its own
:class:`~cute_py.pipeline.PipelineState`, and hands out immutable handles to the stage it acquired::

    producer, consumer = pipeline.make_participants()
    for k in range(n):                                    # the producer's warp
        handle = producer.acquire_and_advance()           # wait for an empty stage; the state moves on
        ... fill stage handle.index ...
        handle.commit()
    for k in range(n):                                    # the consumers
        handle = consumer.wait_and_advance()
        ... read stage handle.index ...
        handle.release()

A participant and a handle are carried through run-time loops and branches like their state (the pipeline is
a static part of them).
"""

from __future__ import annotations

from typing import Any

from ..compiler import TraceError, TracedBool, TracedInt
from ..tensor.pointer import Pointer
from .groups import CooperativeGroup
from .state import PipelineState, PipelineUserType, make_pipeline_state

__all__ = ["ImmutableResourceHandle", "PipelineProducer", "PipelineConsumer"]


class ImmutableResourceHandle:
    """The stage a participant acquired: its ``index`` and ``count`` at that moment (later advances of the
    participant do not move it)."""

    __slots__ = ("_origin", "_state")

    def __init__(self, origin: Any, immutable_state: PipelineState) -> None:
        self._origin = origin
        self._state = immutable_state

    @property
    def index(self) -> TracedInt | int:
        """The stage index."""
        return self._state.index

    @property
    def count(self) -> TracedInt | int:
        """The participant's count when it acquired the stage (e.g. which k-tile it loads)."""
        return self._state.count

    def get_origin(self) -> Any:
        """The pipeline the handle belongs to."""
        return self._origin

    def __extract_mlir_values__(self) -> list[Any]:
        """The carried values of the handle's state."""
        return self._state.__extract_mlir_values__()

    def __new_from_mlir_values__(self, values: list[Any]) -> ImmutableResourceHandle:
        """The same handle over a state rebuilt from ``values``."""
        return type(self)(self._origin, self._state.__new_from_mlir_values__(values))


class ProducerHandle(ImmutableResourceHandle):
    """A producer's acquired stage: ``barrier`` (the ``full`` mbarrier, a TMA load's ``tma_bar_ptr``), ``commit()``."""

    __slots__ = ()

    @property
    def barrier(self) -> Pointer:
        """The stage's ``full`` mbarrier."""
        return self._origin.producer_get_barrier(self._state)

    def commit(self) -> None:
        """Signal that the stage holds data (the pipeline's ``producer_commit``)."""
        self._origin.producer_commit(self._state)


class ConsumerHandle(ImmutableResourceHandle):
    """A consumer's acquired stage: ``barrier`` (the ``empty`` mbarrier), ``release()``."""

    __slots__ = ()

    @property
    def barrier(self) -> Pointer:
        """The stage's ``empty`` mbarrier."""
        return self._origin.consumer_get_barrier(self._state)

    def release(self) -> None:
        """Signal that the consumer is done with the stage (the pipeline's ``consumer_release``)."""
        self._origin.consumer_release(self._state)


def _own(handle, pipeline, cls, what):
    if not isinstance(handle, cls) or handle.get_origin() is not pipeline:
        raise TraceError(f"{what}: the handle does not belong to this participant's pipeline, got {handle!r}")


class PipelineProducer:
    """The producer side of ``pipeline`` at ``state`` (``group``: the producer's cooperative group)."""

    ImmutableResourceHandle = ProducerHandle

    def __init__(self, pipeline: Any, state: PipelineState, group: CooperativeGroup | None = None) -> None:
        self._pipeline, self._state, self._group = pipeline, state, group

    @staticmethod
    def fresh(pipeline: Any) -> PipelineProducer:
        """A producer of ``pipeline`` at a fresh producer state."""
        return PipelineProducer(pipeline, make_pipeline_state(PipelineUserType.Producer, pipeline.num_stages),
                                getattr(pipeline.sync_object_full, "cg", None))

    def clone(self) -> PipelineProducer:
        """A producer at a copy of this one's state."""
        return PipelineProducer(self._pipeline, self._state.clone(), self._group)

    def reset(self) -> None:
        """Reset the state's count to 0."""
        self._state.reset_count()

    def current_handle(self) -> ProducerHandle:
        """A handle to the current stage (without waiting)."""
        return ProducerHandle(self._pipeline, self._state)

    def acquire(self, try_acquire_token: TracedBool | bool | None = None) -> ProducerHandle:
        """Wait until the current stage is empty (``producer_acquire``); a handle to it."""
        self._pipeline.producer_acquire(self._state, try_acquire_token)
        return ProducerHandle(self._pipeline, self._state.clone())

    def advance(self) -> None:
        """Move to the next stage."""
        self._state.advance()

    def acquire_and_advance(self, try_acquire_token: TracedBool | bool | None = None) -> ProducerHandle:
        """:meth:`acquire`, then :meth:`advance`; the handle is to the acquired stage."""
        handle = self.acquire(try_acquire_token)
        self.advance()
        return handle

    def try_acquire(self) -> TracedBool:
        """Whether the current stage is empty now (a run-time test)."""
        return self._pipeline.producer_try_acquire(self._state)

    def commit(self, handle: ProducerHandle | None = None) -> None:
        """Commit ``handle``'s stage, or the current one."""
        if handle is not None:
            _own(handle, self._pipeline, ProducerHandle, "PipelineProducer.commit")
            handle.commit()
        else:
            self._pipeline.producer_commit(self._state)

    def tail(self) -> None:
        """The pipeline's ``producer_tail`` from the current state."""
        self._pipeline.producer_tail(self._state)

    def __extract_mlir_values__(self) -> list[Any]:
        """The carried values of the producer's state."""
        return self._state.__extract_mlir_values__()

    def __new_from_mlir_values__(self, values: list[Any]) -> PipelineProducer:
        """The same producer over a state rebuilt from ``values``."""
        return PipelineProducer(self._pipeline, self._state.__new_from_mlir_values__(values), self._group)


class PipelineConsumer:
    """The consumer side of ``pipeline`` at ``state`` (``group``: the consumers' cooperative group)."""

    ImmutableResourceHandle = ConsumerHandle

    def __init__(self, pipeline: Any, state: PipelineState, group: CooperativeGroup | None = None) -> None:
        self._pipeline, self._state, self._group = pipeline, state, group

    @staticmethod
    def fresh(pipeline: Any) -> PipelineConsumer:
        """A consumer of ``pipeline`` at a fresh consumer state."""
        return PipelineConsumer(pipeline, make_pipeline_state(PipelineUserType.Consumer, pipeline.num_stages),
                                getattr(pipeline.sync_object_empty, "cg", None))

    def clone(self) -> PipelineConsumer:
        """A consumer at a copy of this one's state."""
        return PipelineConsumer(self._pipeline, self._state.clone(), self._group)

    def reset(self) -> None:
        """Reset the state's count to 0."""
        self._state.reset_count()

    def current_handle(self) -> ConsumerHandle:
        """A handle to the current stage (without waiting)."""
        return ConsumerHandle(self._pipeline, self._state)

    def wait(self, try_wait_token: TracedBool | bool | None = None) -> ConsumerHandle:
        """Wait until the current stage holds data (``consumer_wait``); a handle to it."""
        self._pipeline.consumer_wait(self._state, try_wait_token)
        return ConsumerHandle(self._pipeline, self._state.clone())

    def advance(self) -> None:
        """Move to the next stage."""
        self._state.advance()

    def wait_and_advance(self, try_wait_token: TracedBool | bool | None = None) -> ConsumerHandle:
        """:meth:`wait`, then :meth:`advance`; the handle is to the stage waited for."""
        handle = self.wait(try_wait_token)
        self.advance()
        return handle

    def try_wait(self) -> TracedBool:
        """Whether the current stage holds data now (a run-time test)."""
        return self._pipeline.consumer_try_wait(self._state)

    def release(self, handle: ConsumerHandle | None = None) -> None:
        """Release ``handle``'s stage, or the current one."""
        if handle is not None:
            _own(handle, self._pipeline, ConsumerHandle, "PipelineConsumer.release")
            handle.release()
        else:
            self._pipeline.consumer_release(self._state)

    def __extract_mlir_values__(self) -> list[Any]:
        """The carried values of the consumer's state."""
        return self._state.__extract_mlir_values__()

    def __new_from_mlir_values__(self, values: list[Any]) -> PipelineConsumer:
        """The same consumer over a state rebuilt from ``values``."""
        return PipelineConsumer(self._pipeline, self._state.__new_from_mlir_values__(values), self._group)
