"""The device-side pieces of the grouped GEMM (:mod:`examples.grouped_gemm`): where a group's rows lie
(:func:`group_rows`, read from the device's sizes tensor and clamped), which group, M tile and N tile a CTA's
``t``-th tile of the whole problem is (:func:`find_tile`, a warp's search over the groups 32 at a time), and the
store of a consumer warpgroup's accumulators to the rows of its group (:func:`store_group_tile`).

The tiles of all groups form one sequence: group 0's ``ceil(rows_0 / BM) * tiles_n`` tiles (N fastest within an
M tile), then group 1's, and so on; an empty group has none. Persistent CTA ``j`` computes tiles ``j``,
``j + grid``, ``j + 2 grid``, ... until the sequence ends, so the grid is fixed on the host while the sizes are
read on the device.
"""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync
from cute_py.nvgpu import warp as warp_ops

from .gemm_epilogue import EPI_BUFFERS, stmatrix_subtile

__all__ = ["group_rows", "find_tile", "store_group_tile", "CHUNK_BYTES"]

CHUNK_BYTES = 16                   # the thread stores of an edge tile: 16 bytes of a row at a time


@cute.jit
def group_rows(sizes, g, masked, total_rows):
    """``(first, rows)``: group ``g``'s rows of A and C. Contiguous groups (``masked`` false: ``sizes`` holds the
    cumulative ends ``offs``) take rows ``[offs[g - 1], offs[g])`` of the ``total_rows`` (``offs[-1]`` read as
    0), each end clamped into ``[0, total_rows]`` and the start to at most the end, so that offsets that decrease
    or pass the end give empty or shorter groups inside C, never rows outside it. Masked groups (``sizes`` the
    row counts ``masked_m``) take rows ``[0, masked_m[g])`` of their own ``total_rows`` (``max_M``), clamped the
    same way."""
    end = cute.max(cute.min(sizes[g], total_rows), 0)
    first = 0
    if not masked:
        prev = sizes[cute.max(g - 1, 0)]
        if g > 0:
            first = cute.max(cute.min(prev, end), 0)
    return first, end - first


@cute.jit
def find_tile(t, g0, base, sizes, masked, total_rows, groups, bm, tiles_n, lane):
    """Locate tile ``t`` of the sequence, searching from group ``g0`` (a multiple of 32, with ``base`` tiles
    before it) on, one warp together: lane ``l`` takes group ``g0 + l``, the warp sums the lanes' tile counts
    (a shuffle scan) and the number of lanes whose groups end at or before ``t`` names the group. Returns
    ``(g, before, g0, base, first, rows)``: the group (``groups`` where the sequence ends before ``t``), the
    tiles before it, the chunk of 32 groups it lies in with the tiles before that chunk (where the search for a
    later tile resumes), and the group's rows (:func:`group_rows`). Every lane of the warp must call it."""
    g = groups
    before = base
    first = 0
    rows = 0
    searching = g0 < groups
    while searching:
        gi = g0 + lane
        f, r = group_rows(sizes, cute.min(gi, groups - 1), masked, total_rows)
        count = (r + bm - 1) // bm * tiles_n
        if gi >= groups:
            count = 0
        incl = count
        for d in cute.range_constexpr(5):
            up = arch.shuffle_sync_up(incl, 1 << d)
            if lane >= (1 << d):
                incl = incl + up
        done = arch.popc(arch.vote_ballot_sync(base + incl <= t))    # lanes whose groups end at or before t
        if done < 32:
            g = g0 + done
            before = base + arch.shuffle_sync(incl - count, done)
            first = arch.shuffle_sync(f, done)
            rows = arch.shuffle_sync(r, done)
            searching = False
        else:
            base = base + arch.shuffle_sync(incl, 31)
            g0 = g0 + 32
            searching = g0 < groups
    return g, before, g0, base, first, rows


@cute.jit
def store_group_tile(acc, store_c, box_c, gC, sC, epi_mma, tidx, tm, tn, bm, bn, rows, n, tma_store):
    """Write a consumer warpgroup's ``64 x bn`` accumulators of tile ``(tm, tn)`` of a group to C, one ``64 x 64``
    subtile at a time through shared memory. ``gC`` is the group's ``(rows.., N)`` view of C (its row 0 the
    group's first row), ``box_c`` the TMA coordinate tensor of the same rows (or ``None``), ``rows`` the group's
    row count: only rows ``< rows`` and columns ``< n`` are written.

    Every thread writes its values of the subtile, converted to C's 16-bit type, into one of the warpgroup's two
    buffers (``stmatrix``), unconditionally; after the warpgroup's named barrier either one thread TMA-stores the
    subtile (``tma_store``, and all 64 rows inside the group: the box clips only at C's N), or each thread copies
    16-byte chunks (one element at a time where ``tma_store`` is false, C's rows then not being whole chunks) of
    the rows inside the group from the buffer to ``gC``. A warpgroup whose rows all lie past the group skips the
    tile; the buffers alternate in a fixed order, two per tile's even number of subtiles, so a buffer is free
    again once the barrier of the subtile after it has passed (its TMA store waited for before that barrier, its
    thread copies done before it)."""
    epi_m, epi_n = cute.size(sC, mode=[0]), cute.size(sC, mode=[1])
    subtiles = bn // epi_n
    per = cute.size(acc) // subtiles
    dtype = gC.element_type
    g = tidx // 128
    wtid = tidx % 128
    issuer = wtid == 0
    stm = cute.make_copy_atom(warp_ops.StMatrix8x8x16bOp(False, 4), dtype)
    chunk = CHUNK_BYTES * 8 // dtype.width
    wide = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=CHUNK_BYTES * 8)
    lane, warp = tidx % 32, wtid // 32
    row0 = tm * bm + g * epi_m                      # the warpgroup's first row, in the group
    if row0 < rows:
        whole = row0 + epi_m <= rows
        for s in cute.range_constexpr(subtiles):
            buf = sC[None, None, EPI_BUFFERS * g + s % EPI_BUFFERS]
            stmatrix_subtile(acc, per * s, buf, epi_n, stm, lane, warp)
            arch.fence_proxy("async.shared", space="cta")     # the writes, before a TMA store reads them
            if issuer:
                arch.tma_store_wait(0, read=True)              # the other buffer's store has read it
            arch.barrier(barrier_id=1 + g, number_of_threads=128)
            col0 = (subtiles * tn + s) * epi_n
            if col0 < n:
                if tma_store and whole:
                    if issuer:
                        box = cute.local_tile(box_c, (epi_m, epi_n), ((tm * bm) // epi_m + g, subtiles * tn + s))
                        tsC, tgC = cpasync.tma_partition(store_c, 0, cute.Layout(1), cute.group_modes(buf, 0, 2),
                                                         cute.group_modes(box, 0, 2))
                        cute.copy(store_c, tsC, tgC)
                        arch.tma_store_arrive()
                else:
                    per_row = epi_n // chunk
                    if tma_store:                              # whole 16-byte chunks inside N
                        for i in cute.range_constexpr(epi_m * per_row // 128):
                            c = wtid + 128 * i
                            r, j = c // per_row, c % per_row
                            if row0 + r < rows and col0 + j * chunk < n:     # (n a multiple of chunk here)
                                frag = cute.make_fragment(chunk, dtype)
                                cute.copy(wide, cute.local_tile(buf[r, None], (chunk,), (j,)), frag)
                                cute.copy(wide, frag, cute.local_tile(gC[row0 + r, None], (chunk,),
                                                                      ((col0 + j * chunk) // chunk,)))
                    else:
                        # one element at a time, a run-time loop (few registers while accumulators stay live)
                        for i in range(epi_m * epi_n // 128):
                            c = wtid + 128 * i
                            r, j = c // epi_n, c % epi_n
                            if row0 + r < rows and col0 + j < n:
                                gC[row0 + r, col0 + j] = buf[r, j]
