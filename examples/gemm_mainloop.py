"""The consumers' main loop of kernel 13 (``examples.gemm``) and of the grouped GEMM: a tile's k-tiles of
warpgroup MMAs, fed by a ``PipelineTmaAsync``."""

import cute_py as cute
from cute_py.nvgpu import warpgroup as wg

__all__ = ["mma_k_tiles", "issue_k_tile"]


@cute.jit
def issue_k_tile(tiled_mma, acc, tCrA, tCrB, stage, fresh):
    """Issue the k-blocks of stage ``stage``'s k-tile into ``acc`` (the first overwriting it when ``fresh``,
    ``ACCUMULATE`` false); the fences and the commit are the caller's."""
    if fresh:
        tiled_mma.set(wg.Field.ACCUMULATE, False)
    for kb in cute.range_constexpr(cute.size(tCrA, mode=[2])):
        cute.gemm(tiled_mma, acc, tCrA[None, None, kb, stage], tCrB[None, None, kb, stage], acc)
        tiled_mma.set(wg.Field.ACCUMULATE, True)


@cute.jit
def mma_k_tiles(tiled_mma, acc, tCrA, tCrB, loads, read, release, k_lo, k_hi):
    """``acc = A B^T`` over k-tiles ``k_lo .. k_hi - 1`` (at least one): each stage's k-blocks issued as one
    group, one group kept in flight, the stage of the previous k-tile released once its group has completed; the
    first k-block writes the accumulators (``ACCUMULATE`` false). On return every group is done and every stage
    this tile read is released (``read`` and ``release`` advanced past them)."""
    loads.consumer_wait(read)
    wg.fence()
    issue_k_tile(tiled_mma, acc, tCrA, tCrB, read.index, True)
    wg.commit_group()
    read.advance()
    for k in range(k_lo + 1, k_hi):
        loads.consumer_wait(read)
        wg.fence()
        issue_k_tile(tiled_mma, acc, tCrA, tCrB, read.index, False)
        wg.commit_group()
        wg.wait_group(1)             # the previous k-tile's group is done: its stage may be refilled
        loads.consumer_release(release)
        release.advance()
        read.advance()
    wg.wait_group(0)
    loads.consumer_release(release)
    release.advance()
