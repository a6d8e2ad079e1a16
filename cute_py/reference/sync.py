"""CPU (numpy) execution of the synchronisation a copy completes on, and of ``st.async``.

- :class:`MBarrier`: an mbarrier's pending arrivals and transaction bytes, phase by phase;
- :func:`dsmem_store`: ``st.async`` into a peer CTA's shared memory, with complete_tx.
"""

from __future__ import annotations

import numpy as np

from ..errors import CuteValueError
from ..nvgpu.sync import CopyDsmemStoreOp
from .common import byte_view

__all__ = ["MBarrier", "dsmem_store", "ENTRIES"]


class MBarrier:
    """An mbarrier: pending arrivals and transaction bytes of the current phase."""

    def __init__(self, count: int = 1) -> None:
        self.count = count
        self.pending = count
        self.tx = 0
        self.phase = 0

    def expect_tx(self, nbytes: int) -> None:
        self.tx += nbytes

    def arrive(self, n: int = 1) -> None:
        self.pending -= n
        self._maybe_flip()

    def arrive_and_expect_tx(self, nbytes: int) -> None:
        self.tx += nbytes
        self.arrive()

    def complete_tx(self, nbytes: int) -> None:
        self.tx -= nbytes
        if self.tx < 0:
            raise CuteValueError(f"mbarrier received {-self.tx} more transaction bytes than expected")
        self._maybe_flip()

    def _maybe_flip(self):
        if self.pending <= 0 and self.tx == 0:
            self.phase ^= 1
            self.pending = self.count

    def try_wait(self, parity: int) -> bool:
        """True once the phase with this parity has completed."""
        return self.phase != parity


def dsmem_store(value_bytes: bytes | bytearray | memoryview, dst_smem: np.ndarray, dst_byte: int,
                mbar: MBarrier | None = None) -> None:
    """``st.async`` of ``value_bytes`` (4, 8 or 16) into a peer CTA's smem, completing that many tx bytes."""
    data = np.frombuffer(bytes(value_bytes), dtype=np.uint8)
    if data.size not in (4, 8, 16):
        raise CuteValueError(f"st.async stores 4, 8 or 16 bytes, not {data.size}")
    if dst_byte % data.size:
        raise CuteValueError(f"st.async needs a {data.size}-byte aligned address, got byte {dst_byte}")
    byte_view(dst_smem)[dst_byte:dst_byte + data.size] = data
    if mbar is not None:
        mbar.complete_tx(data.size)


# one instruction of each copy op of the unit: the function that executes it
ENTRIES = {CopyDsmemStoreOp: dsmem_store}
