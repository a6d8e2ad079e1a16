"""The column sums that finish :func:`norms.rmsnorm_backward`'s ``dw``: ``out[j]`` = the sum of column ``j`` of the
Float32 workspace of per-group partial sums, in a fixed order (so every run gives the same bits)."""

import cute_py as cute
from cute_py import arch

from .row_chunks import load_chunk

__all__ = ["column_sum_kernel", "COLUMN_LANES", "COLUMN_SLICES"]

COLUMN_LANES = 32
COLUMN_SLICES = 8


@cute.kernel
def column_sum_kernel(ws, out, vec):
    """``out[j] = sum over p of ws[p, j]``, the rows added in order in each of 8 slices, the slices in order."""
    tx, _, _ = arch.thread_idx()
    bx, _, _ = arch.block_idx()
    units, n = ws.shape
    part = arch.SmemAllocator().allocate_tensor(cute.Float32, cute.Layout(COLUMN_SLICES * COLUMN_LANES * vec), 16)
    lane = tx % COLUMN_LANES
    sl = tx // COLUMN_LANES
    col = (bx * COLUMN_LANES + lane) * vec
    acc = cute.make_rmem_tensor((vec,), cute.Float32)
    acc.fill(0.0)
    frag = cute.make_rmem_tensor((vec,), cute.Float32)
    if col < n:
        for p in range(sl, units, COLUMN_SLICES):
            load_chunk(ws[p, None], bx * COLUMN_LANES + lane, vec, n, frag, 0.0, False)
            acc.store(acc.load() + frag.load())
    for j in cute.range_constexpr(vec):
        part[(sl * COLUMN_LANES + lane) * vec + j] = acc[j]
    arch.sync_threads()
    if sl == 0:
        for j in cute.range_constexpr(vec):
            total = part[lane * vec + j]
            for s in cute.range_constexpr(1, COLUMN_SLICES):
                total = total + part[(s * COLUMN_LANES + lane) * vec + j]
            if col + j < n:
                out[col + j] = total.to(out.element_type)
