"""The grid-wide barrier: ``sync_grid`` / ``sync_global`` (TileLang's names), for kernels launched cooperatively.

Thread (0, 0, 0) of each block arrives on the barrier word of the grid's workspace, which the driver provides to a
cooperative launch (its address in %envreg2 (low) and %envreg1 (high), the word at byte 4). Every block adds 1
except block (0, 0, 0), which adds 2^31 - (blocks - 1): once all have arrived the word has grown by exactly 2^31,
so its top bit flips, and each arriving thread waits for the flip from the value its own atomic saw. The word
keeps the same low bits after each barrier, so a kernel may sync the grid any number of times. A kernel that uses
it is marked cooperative (``KernelBuilder.cooperative``): ``Compiled`` launches it with the cooperative attribute
after checking that every block of the grid can be resident (``runtime.launch.resident_blocks``).
"""

from __future__ import annotations

from ...errors import TraceError
from ..lang.builder import current
from ..emit import sync

__all__ = ["sync_grid", "sync_global"]


def sync_grid() -> None:
    """Wait until every thread of the grid has reached this barrier; memory accesses before it (of any block) are
    visible to every thread after it (a grid-wide ``__syncthreads``).

    The kernel is then launched cooperatively (``CU_LAUNCH_ATTRIBUTE_COOPERATIVE``): every block of its grid must
    be resident at once, which is checked before each launch against the device's occupancy for the kernel
    (``LaunchError`` naming both counts). Every thread of every block must reach each ``sync_grid`` (as for
    ``sync_threads``); kernels launched in clusters cannot use it.
    """
    b = current()
    if b.launch is not None and tuple(b.launch.cluster) != (1, 1, 1):
        raise TraceError(f"sync_grid: the kernel {b.launch.name} is launched in clusters of {b.launch.cluster}; a "
                         f"grid-wide barrier needs a cooperative launch without clusters")
    b.cooperative = True
    sync.sync_grid()


def sync_global() -> None:
    """:func:`sync_grid`: every thread of the grid waits for all the others."""
    sync_grid()
