"""The emission layer: the only place the compiler turns an instruction into IR.

Every instruction a kernel issues -- a copy op of a unit's ``ops`` module in :mod:`cute_py.nvgpu` (one
instruction of a tile copy, or a low-level form such as ``tma_load``), a non-copy instruction of
:mod:`cute_py.nvgpu.sync`, an MMA op, or a plain ``CopyUniversalOp`` vector move -- reaches :func:`emit` as
``(op, operands)``, and ``EMIT[type(op)]`` builds the dialect ops named in ``DIALECT_OP``.

One module per hardware unit (``cpasync``, ``tma``, ``sync``, ``warp``, ``warpgroup``, ``universal``, and the
units whose instructions only the kernel builtins issue: ``memory``, ``numeric``, ``printf``, ``tcgen05``) declares
its entries in a table, ``ENTRIES = {op class: (entry, dialect ops)}``; the tables below are the union of the
units' (an op class in two units is an error). Nothing registers itself when it is imported. Each unit also holds
the functions that build its instructions for the builtins (:mod:`cute_py.compiler.builtins`), which check and
convert the user's arguments and leave the IR to them; ``operands`` holds the argument checks they share. Every
instruction is an op of the ``cute_nvgpu`` dialect (or of LLVM): no inline PTX is written here, the dialect's
lowering writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import TraceError
from ..lang.builder import current
from . import cpasync, memory, numeric, printf, sync, tcgen05, tma, universal, warp, warpgroup

__all__ = ["UNITS", "EMIT", "DIALECT_OP", "emit"]

UNITS = (cpasync, tma, sync, warp, warpgroup, universal, memory, numeric, printf, tcgen05)


def _union() -> dict[type, tuple[Callable[..., Any], tuple[str, ...]]]:
    table: dict[type, tuple[Callable[..., Any], tuple[str, ...]]] = {}
    for unit in UNITS:
        for op_class, entry in unit.ENTRIES.items():
            if op_class in table:
                raise RuntimeError(f"{op_class.__name__} has an emission entry in two units")
            table[op_class] = entry
    return table


_TABLE = _union()
EMIT = {op_class: fn for op_class, (fn, _) in _TABLE.items()}  # op class -> entry(b, op, **operands)
DIALECT_OP = {op_class: ops for op_class, (_, ops) in _TABLE.items()}  # op class -> the dialect ops it builds


def emit(op: object, **operands: Any) -> Any:
    """Emit one instruction of ``op`` into the kernel being traced (see the module)."""
    entry = EMIT.get(type(op))
    if entry is None:
        raise TraceError(f"{type(op).__name__} is not supported in kernels (it has no emission entry)")
    return entry(current(), op, **operands)
