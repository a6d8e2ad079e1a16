"""The compiler's named stages, in order: trace -> mlir -> lowered -> ptx -> cubin.

``STAGES`` is the table: each stage's name, what it produces and the function that produces it from
the previous stage's result. :func:`run` runs them (``lowered`` only when asked for: ``to_ptx``
lowers a copy of the module itself) and returns a :class:`StageResults` with every product and the
time each stage took; ``Compiled`` exposes them as ``.mlir``, ``.lowered``, ``.ptx``, ``.cubin`` and
``.stage_times``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

__all__ = ["STAGES", "StageResults", "run"]


@dataclasses.dataclass
class StageResults:
    """What the stages produced: the traced module and the texts and binary of the later stages."""

    module: object = None  # the traced MLIR module (the ``trace`` stage)
    smem: dict[str, int] | None = None  # kernel name -> dynamic shared memory bytes (found while tracing)
    cooperative: list[str] = dataclasses.field(default_factory=list)  # kernels that sync their grid
    mlir: str | None = None
    lowered: str | None = None
    ptx: str | None = None
    cubin: bytes | None = None
    times: dict[str, float] = dataclasses.field(default_factory=dict)  # stage name -> seconds


def _mlir(r):
    return str(r.module)


def _lowered(r):
    import mlir_dialects as md

    return str(md.lower_copy(r.module))


def _ptx(r):
    import mlir_dialects as md

    return md.to_ptx(r.module)


def _cubin(r):
    import mlir_dialects as md

    return md.to_cubin(r.ptx)


# (name, what it is, producer); ``trace`` is given by the caller (it needs the launches and the tracer)
STAGES = (
    ("trace", "the kernels traced into one MLIR module of cute_nvgpu, llvm and arith ops", None),
    ("mlir", "the traced module's text", _mlir),
    ("lowered", "the module with every cute_nvgpu op lowered to NVVM/LLVM (text)", _lowered),
    ("ptx", "PTX for sm_90a", _ptx),
    ("cubin", "the assembled cubin", _cubin),
)


def run(trace: Callable[[], tuple[Any, dict[str, int]]], upto: str = "cubin", lowered: bool = False) -> StageResults:
    """Run ``trace()`` (returning ``(module, smem)``) and the stages after it up to ``upto``; ``lowered`` adds the
    ``lowered`` text. The trace stage must run inside the module's MLIR context, as must every stage but
    ``cubin`` (the caller enters it)."""
    r = StageResults()
    t0 = time.perf_counter()
    r.module, r.smem = trace()
    r.times["trace"] = time.perf_counter() - t0
    for name, _, produce in STAGES[1:]:
        if name == "lowered" and not lowered:
            continue
        t0 = time.perf_counter()
        setattr(r, name, produce(r))
        r.times[name] = time.perf_counter() - t0
        if name == upto:
            break
    return r
