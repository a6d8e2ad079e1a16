"""A consumer warpgroup's steps in the attention forward (``examples.attention``): the online softmax of a key
block, the probabilities as the register operand of ``P V``, the product itself, the rescale of the output
accumulators, and the ping-pong turns of the consumer warpgroups (named barriers 1 .. warpgroups).

The running maximum a row's probabilities are taken against moves only where a key block's maximum passes it by
more than ``2**RESCALE_LOG2`` after the scale (the first block's always does): the probabilities are then at most
``2**RESCALE_LOG2`` (as exact in their 16-bit type and in the Float32 sums as those below 1), the result is the
same in exact arithmetic, and after the first blocks a row's correction factor is exactly 1, so that the output's
rescale is left out where it is 1 for every row of the warp (:func:`rescale_moved`). Measured (H200, bf16, 16k
tokens, against the maximum moved at every block): d=128 without the mask 1.025-1.037x at 1k-16k, with it
1.006-1.017x; d=256 1.008-1.010x; d=64 0.999-1.000x (benchmarks/RESULTS.md)."""

import math

import cute_py as cute
from cute_py import arch

__all__ = ["turn", "pass_turn", "pv", "to_p", "rescale", "rescale_moved", "softmax", "RESCALE_LOG2"]

RESCALE_LOG2 = 8.0  # a row's maximum moves where a block's passes it by more than this (log2, scaled)


@cute.jit
def turn(pingpong, group):
    """Ping-pong: wait until the warpgroup before has issued its MMAs (named barrier 1 + group, which that
    warpgroup arrives on: two warpgroups)."""
    if pingpong:
        arch.barrier(barrier_id=1 + group, number_of_threads=2 * 128)

@cute.jit
def pass_turn(pingpong, group, always, groups=2):
    """Ping-pong: let the next of the ``groups`` consumer warpgroups (in a ring) issue its MMAs; the last
    warpgroup's last pass is left out (warpgroup 0 waits for one turn fewer than it is given: the last warpgroup
    gave it the first)."""
    if pingpong:
        if cute.const_expr(groups == 2):
            if always or group == 0:
                arch.barrier_arrive(barrier_id=2 - group, number_of_threads=2 * 128)
        else:
            if always or group != groups - 1:
                arch.barrier_arrive(barrier_id=1 + (group + 1) % groups, number_of_threads=2 * 128)

@cute.jit
def pv(mma_pv, acc_o, tOrP, tOrV, stage, block_n):
    """``O += P V`` with P in registers and the V tile in ``stage``."""
    for kb in cute.range_constexpr(block_n // 16):
        cute.gemm(mma_pv, acc_o, tOrP[None, None, kb], tOrV[None, None, kb, stage], acc_o)

@cute.jit
def to_p(acc_s, tOrP):
    """The probabilities in ``acc_s`` as the 16-bit A operand of ``P V`` (value ``i`` of S is value ``i`` of P),
    fenced so that the conversions stay before the MMAs that read them."""
    for v in cute.range_constexpr(cute.size(acc_s)):
        tOrP[v] = acc_s[v].to(tOrP.element_type)
    arch.warpgroup_fence_operand(tOrP)

@cute.jit
def rescale(acc_o, corr):
    """Multiply the output accumulators of the thread's row ``r`` by ``corr[r]``."""
    for v in cute.range_constexpr(cute.size(acc_o)):
        acc_o[v] = acc_o[v] * corr[(v // 2) % 2]

@cute.jit
def rescale_moved(acc_o, corr):
    """:func:`rescale` where a row of the warp has a factor other than 1 (its maximum moved); else nothing (each
    product would be exact)."""
    if arch.vote_any_sync(corr[0] != 1.0 or corr[1] != 1.0):
        rescale(acc_o, corr)

@cute.jit
def softmax(acc_s, cS, row_max, row_sum, corr, j, block_n, first_row, seqlen_q, seqlen_k, causal, scale_log2,
             masked, live=None):
    """The online softmax of key block ``j`` for the thread's two rows: (``masked``) mask it where it reaches past
    the keys or (causal) the diagonal, update the running maxima (over the four threads of a row; moved only by
    more than ``RESCALE_LOG2``, see the module) and sums, leave ``exp2(S * scale_log2 - max * scale_log2)`` in
    ``acc_s`` and the factors rescaling the earlier blocks' sums and outputs in ``corr`` (1 where the maximum
    stayed). ``live``: only the first ``live`` values of ``acc_s`` hold keys the rows may see
    (the others, keys every row of the warpgroup has masked, become 0 without being read)."""
    n_vals = cute.size(acc_s) if live is None else live
    diag = seqlen_k - seqlen_q          # key k is visible from query i when k <= i + diag (causal)
    first_key = j * block_n
    if masked:
        for v in cute.range_constexpr(n_vals):
            row, col = cS[v]
            key = first_key + col
            hidden = key >= seqlen_k
            if causal:
                hidden = hidden or key > first_row + row + diag
            acc_s[v] = cute.math.select(hidden, -math.inf, acc_s[v])
    for r in cute.range_constexpr(2):
        mx = row_max[r]
        for v in cute.range_constexpr(n_vals):
            if (v // 2) % 2 == r:
                mx = arch.fmax(mx, acc_s[v])
        mx = arch.fmax(mx, arch.shuffle_sync_bfly(mx, 1))
        mx = arch.fmax(mx, arch.shuffle_sync_bfly(mx, 2))
        # the maximum moves only by more than 2**RESCALE_LOG2 (from -inf: always); a row that has seen only
        # masked keys keeps the maximum -inf: subtract 0 instead (its P is 0)
        kept = row_max[r] * scale_log2
        moved = mx * scale_log2 > kept + RESCALE_LOG2
        mx = cute.math.select(moved, mx, row_max[r])
        base = cute.math.select(mx == -math.inf, 0.0, mx * scale_log2)
        corr[r] = cute.math.select(moved, cute.math.exp2(kept - base, fastmath=True), 1.0)
        total = 0.0
        for v in cute.range_constexpr(n_vals):
            if (v // 2) % 2 == r:
                p = cute.math.exp2(cute.math.fma(acc_s[v], scale_log2, -base), fastmath=True)
                acc_s[v] = p
                total = total + p
        row_sum[r] = row_sum[r] * corr[r] + total
        row_max[r] = mx
    for v in cute.range_constexpr(n_vals, cute.size(acc_s)):
        acc_s[v] = cute.Float32(0.0)
