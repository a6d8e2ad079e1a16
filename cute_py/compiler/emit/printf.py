"""The emission of device printing: one ``cute_nvgpu.printf`` (the driver's ``vprintf``) of a C format and its
arguments, each a 64-bit value (integers extended to 64 bits, floats passed as the bits of a double)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mlir_dialects as md

from ..lang.builder import current

__all__ = ["ENTRIES", "double_argument", "vprintf"]


def double_argument(value: Any) -> Any:
    """The ``f64`` value ``value`` as the ``i64`` argument of a ``%g``/``%f`` conversion (its bits)."""
    b = current()
    with b.at_end():
        return b.mlir.arith.BitcastOp(b.int_type(64), value).result


def vprintf(c_format: str, values: Sequence[Any]) -> None:
    """Print the C format ``c_format`` with the 64-bit argument values ``values`` from every thread that runs it."""
    with current().at_end():
        md.printf(c_format, values)


# op class -> (its entry, the dialect ops the entry builds): printing has no op class
ENTRIES: dict[type, tuple[Any, tuple[str, ...]]] = {}
