"""Where a pipeline participant stands in its circular buffer: ``PipelineState`` and ``make_pipeline_state``.

A state is three integers and a static stage count ``stages``:

- ``index``: the stage (buffer slot, and mbarrier of each array) the participant uses next, in ``[0, stages)``;
- ``phase``: the parity (0 or 1) to wait for on that stage's mbarrier;
- ``count``: how many times the state was advanced since it was made (or since ``reset_count``).

``advance()`` moves to the next stage and flips ``phase`` each time ``index`` wraps to 0, so after ``k``
advances from ``(index 0, phase p, count 0)``: ``index == k % stages``, ``phase == p ^ ((k // stages) & 1)``,
``count == k`` (``reverse()`` undoes one advance). A producer starts at phase 1 and a consumer at phase 0: a
freshly initialised mbarrier counts as having completed the phase of parity 1 before its first one, so the
producer's first wait on each "empty" barrier passes at once, and the consumer's first wait on a "full"
barrier blocks until the first phase completes.

The three values are Python ints while they are known while tracing (a state made in the kernel and advanced
in straight-line code or in unrolled loops: its stage index stays static, so shared-memory addresses stay
static), and traced ``Int32`` values once they depend on a run-time loop or branch. A state is carried through
run-time loops and branches like a variable (``for k in range(n): ...; state.advance()``): the carry
machinery flattens it into its values (``__extract_mlir_values__``) and rebuilds it after the construct
(``__new_from_mlir_values__``); a value the paths agree on stays static (the stage count must). ``count``
wraps around like an Int32.
"""

from __future__ import annotations

import enum
from typing import Any

from ..compiler import TraceError, TracedInt, select

__all__ = ["PipelineUserType", "PipelineState", "make_pipeline_state"]

_INT32 = (-(1 << 31), 1 << 31)


class PipelineUserType(enum.Enum):
    """Who holds a :class:`PipelineState`: the producer starts at phase 1, the consumer at phase 0."""

    Producer = enum.auto()
    Consumer = enum.auto()
    ProducerConsumer = enum.auto()


def _check_stages(stages):
    if type(stages) is not int or stages <= 0:
        raise TraceError(f"a pipeline state needs a static positive number of stages, got {stages!r}")
    return stages


def _check_value(v, what, lo=None, hi=None):
    """``v`` as a state value: a Python int (checked against ``[lo, hi)``) or a traced 32-bit integer."""
    if isinstance(v, TracedInt):
        if v.width != 32:
            raise TraceError(f"PipelineState {what} is an Int32, got a traced i{v.width} (convert it with "
                             f"cute.Int32(x))")
        return v
    if type(v) is not int:
        raise TraceError(f"PipelineState {what} must be an int or a traced Int32, got {v!r}")
    if lo is not None and not lo <= v < hi:
        raise TraceError(f"PipelineState {what} must lie in [{lo}, {hi}), got {v}")
    if not _INT32[0] <= v < _INT32[1]:
        raise TraceError(f"PipelineState {what} is an Int32, {v} does not fit")
    return v


def _wrap32(v):
    """A static count wrapped into the Int32 range, as the traced count wraps."""
    if type(v) is int:
        return (v + (1 << 31)) % (1 << 32) - (1 << 31)
    return v


class PipelineState:
    """The stage ``index``, wait ``phase`` and advance ``count`` of a pipeline participant (see the module).

    ``PipelineState(stages, count, index, phase)`` (the CuTe DSL's argument order); usually made with
    :func:`make_pipeline_state`. ``index`` (static) must lie in ``[0, stages)`` and ``phase`` in ``{0, 1}``.
    """

    __slots__ = ("_stages", "_count", "_index", "_phase")

    def __init__(self, stages: int, count: TracedInt | int, index: TracedInt | int, phase: TracedInt | int) -> None:
        self._stages = _check_stages(stages)
        self._count = _check_value(count, "count")
        self._index = _check_value(index, "index", 0, stages)
        self._phase = _check_value(phase, "phase", 0, 2)

    @property
    def stages(self) -> int:
        """The number of stages (static)."""
        return self._stages

    @property
    def index(self) -> TracedInt | int:
        """The stage this participant uses next, in ``[0, stages)``."""
        return self._index

    @property
    def phase(self) -> TracedInt | int:
        """The mbarrier phase parity (0 or 1) to wait for at ``index``."""
        return self._phase

    @property
    def count(self) -> TracedInt | int:
        """The number of advances since the state was made or its count reset (an Int32, wrapping)."""
        return self._count

    def clone(self) -> PipelineState:
        """A new state with the same values (advancing one does not move the other)."""
        return PipelineState(self._stages, self._count, self._index, self._phase)

    def reset_count(self) -> None:
        """Set ``count`` to 0 (``index`` and ``phase`` stay)."""
        self._count = 0

    def advance(self) -> None:
        """Move to the next stage: ``index + 1``, or 0 with ``phase`` flipped when ``index + 1 == stages``;
        ``count + 1``. Static values stay static; traced ones give selects (no branch)."""
        nxt = self._index + 1
        wrapped = nxt == self._stages
        self._index = select(wrapped, 0, nxt)
        self._phase = select(wrapped, self._phase ^ 1, self._phase)
        self._count = _wrap32(self._count + 1)

    def reverse(self) -> None:
        """Undo one :meth:`advance`: ``index - 1``, or ``stages - 1`` with ``phase`` flipped when ``index`` is 0;
        ``count - 1``."""
        prev = self._index - 1
        wrapped = prev == -1
        self._index = select(wrapped, self._stages - 1, prev)
        self._phase = select(wrapped, self._phase ^ 1, self._phase)
        self._count = _wrap32(self._count - 1)

    # -- carried through run-time loops and branches ---------------------------------------------------

    def __extract_mlir_values__(self) -> list[Any]:
        """The carried values: ``[count, index, phase, stages]`` (Python ints or traced Int32 values; ``stages``
        is carried too, so that paths that end with states of different stage counts are an error)."""
        return [self._count, self._index, self._phase, self._stages]

    def __new_from_mlir_values__(self, values: list[Any]) -> PipelineState:
        """A state rebuilt from the carried ``values`` (``[count, index, phase, stages]``)."""
        count, index, phase, stages = values
        if type(stages) is not int:
            raise TraceError("a PipelineState carried out of run-time control flow has different stage counts on "
                             "different paths; a state keeps the stage count of its pipeline")
        return PipelineState(stages, count, index, phase)

    def __repr__(self) -> str:
        def show(v):
            return str(v) if type(v) is int else "?"

        return (f"PipelineState(stages={self._stages}, index={show(self._index)}, phase={show(self._phase)}, "
                f"count={show(self._count)})")


def make_pipeline_state(type: PipelineUserType, stages: int) -> PipelineState:
    """A fresh state of a pipeline with ``stages`` stages: index 0, count 0, and phase 1 for a
    ``PipelineUserType.Producer`` (or ``ProducerConsumer``), phase 0 for a ``Consumer``."""
    _check_stages(stages)
    if type in (PipelineUserType.Producer, PipelineUserType.ProducerConsumer):
        return PipelineState(stages, 0, 0, 1)
    if type is PipelineUserType.Consumer:
        return PipelineState(stages, 0, 0, 0)
    raise TraceError(f"make_pipeline_state takes a PipelineUserType (Producer, Consumer or ProducerConsumer), "
                     f"got {type!r}")
