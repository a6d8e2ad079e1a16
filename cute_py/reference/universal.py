"""CPU (numpy) execution of the universal copy (``CopyUniversalOp``): a plain load and store."""

from __future__ import annotations

import numpy as np

from ..atom import CopyUniversalOp
from .common import byte_view

__all__ = ["universal_copy", "ENTRIES"]


def universal_copy(src: np.ndarray, src_byte: int, dst: np.ndarray, dst_byte: int, nbytes: int) -> None:
    """A plain load and store of ``nbytes`` (``CopyUniversalOp``): the bytes at ``src_byte`` to ``dst_byte``."""
    byte_view(dst)[dst_byte:dst_byte + nbytes] = byte_view(src)[src_byte:src_byte + nbytes]


# one instruction of each copy op of the unit: the function that executes it
ENTRIES = {CopyUniversalOp: universal_copy}
