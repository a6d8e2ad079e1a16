"""The compiler's named stages, in order: trace -> mlir -> lowered -> ptx -> cubin.

``STAGES`` is the table: each stage's name, what it produces, and the function that produces it from what the
stages before it produced. :func:`run` runs them in order, each stage consuming the last one's product, up to the
stage asked for, and returns a :class:`StageResults` with every product and the time each stage took:

- ``trace``: the kernels traced into one MLIR module (the caller's function: it needs the launches);
- ``mlir``: that module's text;
- ``lowered``: a copy of the module with every ``cute_nvgpu`` op lowered to NVVM/LLVM (its text is kept when asked
  for), and the PTX features raised to what the module's ops need;
- ``ptx``: the lowered module compiled to PTX for the options' target (line information, optimisation level);
- ``cubin``: the PTX assembled.

The module is lowered once per compile, whatever is asked for. ``Compiled`` exposes the products as ``.mlir``,
``.lowered``, ``.ptx``, ``.cubin`` and ``.stage_times``; one loaded from the disk cache (PTX and cubin only) runs
the stages again up to ``lowered`` when a text is asked for.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from ..errors import CuteValueError
__all__ = ["STAGES", "Stage", "StageOptions", "StageResults", "run"]


@dataclasses.dataclass(frozen=True)
class StageOptions:
    """What the stages after ``trace`` need of the compile options: the target (``chip``, its NVPTX
    ``features``), ``line_info`` and ``opt_level``."""

    chip: str = "sm_90a"
    features: str = "+ptx80"
    line_info: bool = False
    opt_level: int | None = None


@dataclasses.dataclass
class StageResults:
    """What the stages produced: the traced module and the texts and binary of the later stages."""

    module: object = None  # the traced MLIR module (the ``trace`` stage)
    smem: dict[str, int] | None = None  # kernel name -> dynamic shared memory bytes (found while tracing)
    cooperative: list[str] = dataclasses.field(default_factory=list)  # kernels that sync their grid
    mlir: str | None = None
    lowered_module: object = None  # the lowered copy of ``module`` (consumed by the ``ptx`` stage)
    lowered: str | None = None  # its text, when asked for
    features: str | None = None  # the NVPTX features the lowered module is compiled with
    ptx: str | None = None
    cubin: bytes | None = None
    times: dict[str, float] = dataclasses.field(default_factory=dict)  # stage name -> seconds


class Stage(NamedTuple):
    name: str
    what: str
    produce: Callable[[StageResults, StageOptions, bool], None] | None


def _mlir(r: StageResults, o: StageOptions, text: bool) -> None:
    r.mlir = str(r.module)


def _lowered(r: StageResults, o: StageOptions, text: bool) -> None:
    import mlir_dialects as md

    r.lowered_module, r.features = md.lower_for_ptx(r.module, o.features, line_info=o.line_info, text=r.mlir)
    if text:
        r.lowered = str(r.lowered_module)


def _ptx(r: StageResults, o: StageOptions, text: bool) -> None:
    import mlir_dialects as md

    module, r.lowered_module = r.lowered_module, None  # the pipeline runs on it in place
    r.ptx = md.lowered_to_ptx(module, o.chip, r.features, line_info=o.line_info, opt_level=o.opt_level)


def _cubin(r: StageResults, o: StageOptions, text: bool) -> None:
    import mlir_dialects as md

    r.cubin = md.to_cubin(r.ptx, o.chip)


STAGES = (
    Stage("trace", "the kernels traced into one MLIR module of cute_nvgpu, llvm and arith ops", None),
    Stage("mlir", "the traced module's text", _mlir),
    Stage("lowered", "the module with every cute_nvgpu op lowered to NVVM/LLVM", _lowered),
    Stage("ptx", "PTX for the target (sm_90a by default)", _ptx),
    Stage("cubin", "the assembled cubin", _cubin),
)
_NAMES = [s.name for s in STAGES]


def run(trace: Callable[[], tuple[Any, dict[str, int]]], options: StageOptions | None = None, upto: str = "cubin",
        lowered_text: bool = False,
        on_error: Callable[[str, Exception], Exception | None] | None = None) -> StageResults:
    """Run ``trace()`` (returning ``(module, smem)``) and the stages after it, in order, up to ``upto``;
    ``lowered_text`` keeps the lowered module's text. The stages up to ``ptx`` must run inside the module's MLIR
    context (the caller enters it). ``on_error(stage name, exception)`` may turn a stage's exception into the one
    raised (``None``: the exception as it is)."""
    if upto not in _NAMES:
        raise CuteValueError(f"no stage named {upto!r}: the stages are {', '.join(_NAMES)}")
    options = options or StageOptions()
    r = StageResults()
    last = _NAMES.index(upto)
    for i, stage in enumerate(STAGES[:last + 1]):
        t0 = time.perf_counter()
        try:
            if stage.produce is None:
                r.module, r.smem = trace()
            else:
                stage.produce(r, options, lowered_text)
        except Exception as e:
            new = None if on_error is None else on_error(stage.name, e)
            if new is None:
                raise
            raise new from None
        r.times[stage.name] = time.perf_counter() - t0
    return r
