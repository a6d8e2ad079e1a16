"""The copy operations of the TMA unit (bulk tensor copies): load, multicast load, im2col load, store and
reduction, and the reduction kinds.

Each is a frozen dataclass (a :class:`~cute_py.atom.CopyOp`); a TMA atom (:mod:`cute_py.nvgpu.tma.atom`) pairs one
with its descriptor. One instruction of each op has exactly one emission entry (``cute_py.compiler.emit.tma``),
one CPU reference entry (``cute_py.reference.tma``) and one dialect op with its lowering rule.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING

from ...atom import CopyOp
from ...errors import CuteTypeError

if TYPE_CHECKING:
    from ...tensor.dtypes import DType

__all__ = [
    "ReductionOp",
    "TmaOp",
    "CopyBulkTensorTileG2SOp",
    "CopyBulkTensorTileG2SMulticastOp",
    "CopyBulkTensorIm2colG2SOp",
    "CopyBulkTensorTileS2GOp",
    "CopyReduceBulkTensorTileS2GOp",
    "is_tma_op",
    "COPY_OP_CLASSES",
]


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
    (``N`` = 3..5 coordinates, ``N - 2`` 16-bit im2col offsets; see :mod:`cute_py.nvgpu.tma.im2col`)."""


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


def is_tma_op(op: object) -> bool:
    """True for the bulk-tensor (TMA) operations."""
    return isinstance(op, TmaOp)


# the unit's concrete copy ops (the op tables are checked complete against them)
COPY_OP_CLASSES = (CopyBulkTensorTileG2SOp, CopyBulkTensorTileG2SMulticastOp, CopyBulkTensorIm2colG2SOp,
                   CopyBulkTensorTileS2GOp, CopyReduceBulkTensorTileS2GOp)
