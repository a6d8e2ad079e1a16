"""DeepSeek-V3's block scaling in the consumers' main loop of kernel 13 (``examples.gemm``): 1x128 scales of A's
rows and 128x128 scales of B, applied in fp32 outside the tensor cores; and, without block scales, the same
promotion of 8-bit inputs' products into fp32 (``gemm(fast_accum=False)``), whose per-tensor scales the epilogue
applies.

Each 128-element k-tile's WGMMAs go into fresh partial accumulators; once they are done the partials are added to
the tile's accumulators as ``acc += part * scale_a[row, k] * scale_b[tn, k]`` (the promotion), so the tensor cores'
own accumulation never spans more than one scale block (without block scales: ``acc += part``). Each k-tile's scales
are loaded a k-tile ahead, so that their latency never holds up the MMAs' issue.

With ``paired`` (128 x 128 tiles) the k-tiles go in pairs: both k-tiles' MMAs are issued, the second's into a
second partial, then the first's promotion runs while the second's MMAs do. No MMA is in flight from one pair to the
next (an MMA in flight across the loop's back edge makes the assembler serialise every WGMMA, ptxas C7514). The
second partial takes 64 more registers a thread, which the consumers have with ``setmaxnreg``
(``gemm(reg_realloc=True)``; at the 168 registers of an even split ptxas spills). 128 x 192 tiles (unscaled only: a
tile's columns would span two of B's scale blocks) hold 96 accumulators and 96 partials a thread in those registers,
which leaves no room for a second partial: their k-tiles go one at a time. With ``pingpong`` the k-tiles go one at a
time and the two consumer warpgroups take turns issuing them instead.
"""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import warpgroup as wg

from .gemm_args import MMA_THREADS
from .gemm_mainloop import issue_k_tile

__all__ = ["block_scaled_tile", "TURN"]

TURN = 3            # named barriers 3 and 4: the ping-pong's turns (the epilogue's: 1, 2)


@cute.jit
def block_scaled_tile(tiled_mma, acc, tCrA, tCrB, cC, block_scales, loads, read, release, k_lo, k_hi, tn, m,
                      pingpong=False, paired=False):
    """A tile's k-tiles ``k_lo .. k_hi - 1`` (at least one) into ``acc``, promoted by the block scales (see the
    module; ``block_scales`` None: unscaled), one at a time or (``paired``) in pairs, the last alone when their
    count is odd. A row past M reads the last row's scale (its value is not stored).

    With ``pingpong`` the two consumer warpgroups take turns issuing a k-tile's MMAs (named barriers ``TURN`` and
    ``TURN + 1``), so that one's promotion runs while the other's MMAs do: warpgroup 1 gives warpgroup 0 the
    first turn, and gives it one turn fewer than it takes (the last k-tile is peeled: its pass comes after its
    MMAs are done, a branch on the warpgroup with no MMA in flight), so both barriers are balanced per tile."""
    part = cute.make_fragment(acc.layout, cute.Float32)
    acc.fill(0.0)
    rows = scales = None
    if cute.const_expr(block_scales is not None):
        rows = cute.make_fragment(2, cute.Int32)      # a thread's accumulators lie in two rows (C layout)
        for r in cute.range_constexpr(2):
            row, _ = cC[2 * r]
            rows[r] = cute.min(row, m - 1)
        scales = cute.make_fragment(3, cute.Float32)  # the next k-tile's scales: A's two rows, B's block
        _load_scales(scales, block_scales, rows, tn, k_lo)
    last = (k_hi - 1, tn, scales)
    if cute.const_expr(pingpong):
        group = arch.make_warp_uniform(arch.warp_idx()) // 4
        if group == 1:
            arch.barrier_arrive(barrier_id=TURN, number_of_threads=MMA_THREADS)    # warpgroup 0 issues first
        for k in range(k_lo, k_hi - 1):
            _scaled_k_tile(tiled_mma, acc, part, tCrA, tCrB, rows, block_scales, loads, read, release, k, last,
                           (group, False))
        _scaled_k_tile(tiled_mma, acc, part, tCrA, tCrB, rows, block_scales, loads, read, release, k_hi - 1, last,
                       (group, True))
    elif cute.const_expr(paired):
        second = cute.make_fragment(acc.layout, cute.Float32)
        for p in range((k_hi - k_lo) // 2):
            _scaled_k_pair(tiled_mma, acc, (part, second), tCrA, tCrB, rows, block_scales, loads, read, release,
                           k_lo + 2 * p, last)
        if (k_hi - k_lo) % 2 == 1:
            _scaled_k_tile(tiled_mma, acc, part, tCrA, tCrB, rows, block_scales, loads, read, release, k_hi - 1,
                           last, None)
    else:
        for k in range(k_lo, k_hi):
            _scaled_k_tile(tiled_mma, acc, part, tCrA, tCrB, rows, block_scales, loads, read, release, k, last, None)


@cute.jit
def _scaled_k_tile(tiled_mma, acc, part, tCrA, tCrB, rows, block_scales, loads, read, release, k, last, turn):
    """One k-tile: its MMAs into ``part``, waited for, then promoted into ``acc``; ``last``: ``(the last k-tile,
    the tile's column of B's scales, the scales fragment)``, whose scales are this k-tile's on entry and the next
    one's on return; ``turn``: ``None``, or ``(warpgroup, last)`` of the ping-pong."""
    k_last, tn, scales = last
    s0, s1 = _products(scales)
    _load_scales(scales, block_scales, rows, tn, cute.min(k + 1, k_last))
    loads.consumer_wait(read)
    if cute.const_expr(turn is not None):
        arch.barrier(barrier_id=TURN + turn[0], number_of_threads=MMA_THREADS)      # this warpgroup's turn
    arch.warpgroup_fence_operand(part)
    wg.fence()
    issue_k_tile(tiled_mma, part, tCrA, tCrB, read.index, True)
    wg.commit_group()
    if cute.const_expr(turn is not None and not turn[1]):
        arch.barrier_arrive(barrier_id=TURN + 1 - turn[0], number_of_threads=MMA_THREADS)     # the other's turn
    wg.wait_group(0)
    arch.warpgroup_fence_operand(part)
    if cute.const_expr(turn is not None and turn[1]):
        if turn[0] == 0:
            arch.barrier_arrive(barrier_id=TURN + 1, number_of_threads=MMA_THREADS)
    loads.consumer_release(read)
    read.advance()
    release.advance()
    _promote(acc, part, s0, s1)


@cute.jit
def _scaled_k_pair(tiled_mma, acc, parts, tCrA, tCrB, rows, block_scales, loads, read, release, k, last):
    """k-tiles ``k`` and ``k + 1`` (both at most the last): both issued, into ``parts[0]`` and ``parts[1]``, then
    the first promoted while the second's MMAs run, then the second; none in flight on return. ``last`` as for
    :func:`_scaled_k_tile`: the scales fragment holds k-tile ``k``'s on entry and ``k + 2``'s on return."""
    k_last, tn, scales = last
    first, second = parts
    s0, s1 = _products(scales)
    _load_scales(scales, block_scales, rows, tn, k + 1)
    for j in cute.range_constexpr(2):
        loads.consumer_wait(read)
        arch.warpgroup_fence_operand(parts[j])
        wg.fence()
        issue_k_tile(tiled_mma, parts[j], tCrA, tCrB, read.index, True)
        wg.commit_group()
        read.advance()
    wg.wait_group(1)
    arch.warpgroup_fence_operand(first)
    loads.consumer_release(release)
    release.advance()
    _promote(acc, first, s0, s1)
    t0, t1 = _products(scales)
    _load_scales(scales, block_scales, rows, tn, cute.min(k + 2, k_last))
    wg.wait_group(0)
    arch.warpgroup_fence_operand(second)
    loads.consumer_release(release)
    release.advance()
    _promote(acc, second, t0, t1)


@cute.jit
def _promote(acc, part, s0, s1):
    """``acc += part * s`` with ``s`` the scale of each value's row: ``s0`` for the thread's first row, ``s1`` for
    its second (C layout: values ``4 i``, ``4 i + 1`` in the first row, ``4 i + 2``, ``4 i + 3`` in the second);
    ``acc += part`` where both are None (no block scales)."""
    for i in cute.range_constexpr(cute.size(acc)):
        if cute.const_expr(s0 is None):
            acc[i] = acc[i] + part[i]
        else:
            acc[i] = cute.math.fma(part[i], s0 if (i // 2) % 2 == 0 else s1, acc[i])


@cute.jit
def _products(scales):
    """The scales of a thread's two rows: A's row scale times B's block scale, from ``_load_scales``'s fragment
    (``None, None`` without block scales)."""
    if cute.const_expr(scales is None):
        return None, None
    return scales[0] * scales[2], scales[1] * scales[2]


@cute.jit
def _load_scales(scales, block_scales, rows, tn, k):
    """``scales`` <- k-tile ``k``'s block scales of a thread's two rows of A and of the tile's column of B (nothing
    without block scales)."""
    if cute.const_expr(block_scales is None):
        return
    scale_a, scale_b = block_scales
    scales[0], scales[1] = scale_a[rows[0], k], scale_a[rows[1], k]
    scales[2] = scale_b[tn, k]
