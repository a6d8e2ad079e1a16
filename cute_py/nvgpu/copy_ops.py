"""The copy operations of Hopper's async units: cp.async, TMA (load, multicast load, store, reduction) and
st.async into a peer CTA's shared memory.

Each is a frozen dataclass (a :class:`~cute_py.atom.CopyOp`); a copy atom pairs one with an element type
and a width. One instruction of each op has exactly one emission entry (the kernel compiler's table), one
CPU reference entry (``cute_py.reference.REFERENCE``) and one dialect op with its lowering rule.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING

from ..atom import CopyOp
from ..errors import CuteTypeError, CuteValueError

if TYPE_CHECKING:
    from ..tensor.dtypes import DType

__all__ = [
    "LoadCacheMode",
    "ReductionOp",
    "CopyG2SOp",
    "CopyBulkTensorTileG2SOp",
    "CopyBulkTensorTileG2SMulticastOp",
    "CopyBulkTensorIm2colG2SOp",
    "CopyBulkTensorTileS2GOp",
    "CopyReduceBulkTensorTileS2GOp",
    "CopyDsmemStoreOp",
    "TmaOp",
    "is_tma_op",
    "COPY_OP_CLASSES",
]


class LoadCacheMode(enum.Enum):
    """Cache operators of loads: ``.ca`` (ALWAYS), ``.cg`` (GLOBAL), ``.cs``, ``.lu``, none."""

    ALWAYS = "ca"
    GLOBAL = "cg"
    STREAMING = "cs"
    LAST_USE = "lu"
    NONE = ""


class ReductionOp(enum.Enum):
    """TMA reduction kinds (``cp.reduce.async.bulk.tensor.<op>``)."""

    ADD = "add"
    MIN = "min"
    MAX = "max"
    INC = "inc"
    DEC = "dec"
    AND = "and"
    OR = "or"
    XOR = "xor"


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


@dataclasses.dataclass(frozen=True)
class TmaOp(CopyOp):
    """The bulk-tensor (TMA) operations' common base."""

    def valid_bits(self, dtype: DType) -> None:
        return None

    direction = "G2S"
    multicast = False


@dataclasses.dataclass(frozen=True)
class CopyBulkTensorTileG2SOp(TmaOp):
    """TMA load: ``cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes``."""


@dataclasses.dataclass(frozen=True)
class CopyBulkTensorTileG2SMulticastOp(TmaOp):
    """TMA multicast load (``.multicast::cluster``): the box lands in every CTA of the mask."""

    multicast = True


@dataclasses.dataclass(frozen=True)
class CopyBulkTensorIm2colG2SOp(TmaOp):
    """TMA load in im2col mode: ``cp.async.bulk.tensor.Nd.shared::cluster.global.im2col.mbarrier::complete_tx::bytes``
    (``N`` = 3..5 coordinates, ``N - 2`` 16-bit im2col offsets; see :mod:`cute_py.nvgpu.im2col`)."""


@dataclasses.dataclass(frozen=True)
class CopyBulkTensorTileS2GOp(TmaOp):
    """TMA store: ``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group``."""

    direction = "S2G"


@dataclasses.dataclass(frozen=True)
class CopyReduceBulkTensorTileS2GOp(TmaOp):
    """TMA reduction into gmem: ``cp.reduce.async.bulk.tensor.Nd.global.shared::cta.<op>.tile.bulk_group``."""

    reduction_kind: ReductionOp = ReductionOp.ADD
    direction = "S2G"

    def __post_init__(self):
        if not isinstance(self.reduction_kind, ReductionOp):
            raise CuteTypeError(f"reduction_kind must be a ReductionOp, got {self.reduction_kind!r}")


@dataclasses.dataclass(frozen=True)
class CopyDsmemStoreOp(CopyOp):
    """``st.async.shared::cluster.mbarrier::complete_tx::bytes``: a store into a peer CTA's smem."""

    def valid_bits(self, dtype: DType) -> set[int]:
        return {32, 64, 128}


def is_tma_op(op: object) -> bool:
    """True for the bulk-tensor (TMA) operations."""
    return isinstance(op, TmaOp)


# every concrete copy op of this module (the op tables are checked complete against it)
COPY_OP_CLASSES = (CopyG2SOp, CopyBulkTensorTileG2SOp, CopyBulkTensorTileG2SMulticastOp, CopyBulkTensorIm2colG2SOp,
                   CopyBulkTensorTileS2GOp, CopyReduceBulkTensorTileS2GOp, CopyDsmemStoreOp)
