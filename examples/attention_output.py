"""The output of a consumer warpgroup of the attention forward (``examples.attention``): its rows' sums over the
four threads of a row, ``out = acc / sum`` stored through shared memory (one TMA store, or 16-byte chunks in a
packed batch) and each row's log-sum-exp."""

import math

import cute_py as cute
from cute_py import arch

from .attention_steps import rescale
from .attention_tiles import store_box, store_rows

__all__ = ["LN2", "finish", "store_out", "store_lse"]

LN2 = 0.6931471805599453


@cute.jit
def finish(acc_o, row_max, row_sum, corr, cS, sO, gO, lse, tidx, group, first_row, seqlen_q, q_start, q_batch,
            head, packed, scale_log2, d, tma_out):
    """The row sums over the four threads of a row; ``out = acc / sum`` and ``lse = log(sum) + max * scale``
    stored for the rows in the sequence. (Traced on both sides of ``n_blocks > 0``, so that no accumulator is
    live across the branch's join: that would make the assembler serialise the kernel's WGMMAs.)"""
    lane = tidx % 32
    for r in cute.range_constexpr(2):
        s = row_sum[r]
        s = s + arch.shuffle_sync_bfly(s, 1)
        s = s + arch.shuffle_sync_bfly(s, 2)
        inv = cute.math.select(s == 0.0, 0.0, 1.0 / s)
        corr[r] = inv
        row, _ = cS[2 * r]
        q_row = first_row + row
        if lane % 4 == 0 and q_row < seqlen_q:
            value = cute.math.select(s == 0.0, -math.inf, (row_max[r] * scale_log2 + cute.math.log2(s)) * LN2)
            store_lse(lse, value, packed, head, q_start, q_batch, q_row)
    rescale(acc_o, corr)
    store_out(acc_o, sO, gO, group, tidx % 128, seqlen_q - first_row, d, tma_out)


@cute.jit
def store_out(acc_o, sO, gO, group, wtid, rows, d, tma_out):
    """A consumer warpgroup's 64 output rows through shared memory: by one TMA store (``tma_out``: the atom, the
    warpgroup's box and whether ``sO`` lies over ``sQ``; :func:`attention_tiles.store_box`), or, in a packed batch,
    in 16-byte chunks (:func:`attention_tiles.store_rows`)."""
    store_o, box, shared = tma_out
    if cute.const_expr(store_o is not None):
        store_box(acc_o, sO, group, wtid, rows, (store_o, box), shared)
    else:
        store_rows(acc_o, sO, gO, group, wtid, rows, d)


@cute.jit
def store_lse(lse, value, packed, head, q_start, q_batch, q_row):
    """``lse`` of query row ``q_row`` of the sequence that starts at ``q_start`` (packed) or is batch ``q_batch``."""
    if packed:
        lse[head, q_start + q_row] = value
    else:
        lse[q_batch, head, q_row] = value
