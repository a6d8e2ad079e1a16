"""The copy operation of the cp.async unit, :class:`CopyG2SOp` (``cp.async.{ca,cg}.shared.global``), and the
cache modes of loads.

One instruction of the op has exactly one emission entry (``cute_py.compiler.emit.cpasync``), one CPU reference
entry (``cute_py.reference.cpasync``) and one dialect op with its lowering rule. The instruction a tile copier
issues (``CpAsyncTileCopyOp``) is with the other non-copy instructions in :mod:`cute_py.nvgpu.sync`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING

from ...atom import CopyOp
from ...errors import CuteTypeError, CuteValueError

if TYPE_CHECKING:
    from ...tensor.dtypes import DType

__all__ = ["LoadCacheMode", "CopyG2SOp", "COPY_OP_CLASSES"]


class LoadCacheMode(enum.Enum):
    """Cache operators of loads: ``.ca`` (ALWAYS), ``.cg`` (GLOBAL), ``.cs``, ``.lu``, none."""

    ALWAYS = "ca"
    GLOBAL = "cg"
    STREAMING = "cs"
    LAST_USE = "lu"
    NONE = ""


@dataclasses.dataclass(frozen=True)
class CopyG2SOp(CopyOp):
    """``cp.async.{ca,cg}.shared.global``: 4, 8 or 16 bytes with ``.ca``, 16 only with ``.cg``;
    a ``src_size`` below the copy size zero-fills the rest (predication)."""

    cache_mode: LoadCacheMode = LoadCacheMode.ALWAYS

    def __post_init__(self):
        if not isinstance(self.cache_mode, LoadCacheMode):
            raise CuteTypeError(f"cache_mode must be a LoadCacheMode, got {self.cache_mode!r}")
        if self.cache_mode not in (LoadCacheMode.ALWAYS, LoadCacheMode.GLOBAL):
            raise CuteValueError(f"cp.async supports the .ca (ALWAYS) and .cg (GLOBAL) cache modes, not {self.cache_mode.name}")

    def valid_bits(self, dtype: DType) -> set[int]:
        return {128} if self.cache_mode is LoadCacheMode.GLOBAL else {32, 64, 128}

    def default_bits(self, dtype: DType) -> int:
        return 128

    def check(self, dtype: DType, num_bits: int) -> None:
        if self.cache_mode is LoadCacheMode.GLOBAL and num_bits != 128:
            raise CuteValueError(f"cp.async.cg copies 16 bytes only, not {num_bits // 8} ({num_bits} bits)")
        if num_bits not in (32, 64, 128):
            raise CuteValueError(f"cp.async copies 4, 8 or 16 bytes, not {num_bits / 8:g} ({num_bits} bits)")
        super().check(dtype, num_bits)


# the unit's concrete copy ops (the op tables are checked complete against them)
COPY_OP_CLASSES = (CopyG2SOp,)
