"""A consumer warpgroup's steps in the attention forward (``examples.attention``): the online softmax of a key
block, the probabilities as the register operand of ``P V``, the product itself, the rescale of the output
accumulators, and the ping-pong turns of the consumer warpgroups (named barriers 1 .. warpgroups)."""

import math

import cute_py as cute
from cute_py import arch

__all__ = ["turn", "pass_turn", "pv", "to_p", "rescale", "softmax"]


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
def softmax(acc_s, cS, row_max, row_sum, corr, j, block_n, first_row, seqlen_q, seqlen_k, causal, scale_log2,
             masked, live=None):
    """The online softmax of key block ``j`` for the thread's two rows: (``masked``) mask it where it reaches past
    the keys or (causal) the diagonal, update the running maxima (over the four threads of a row) and sums, leave
    ``exp2(S * scale_log2 - max * scale_log2)`` in ``acc_s`` and the factors rescaling the earlier blocks' sums
    and outputs in ``corr``. ``live``: only the first ``live`` values of ``acc_s`` hold keys the rows may see
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
        # a row that has seen only masked keys keeps the maximum -inf: subtract 0 instead (its P is 0)
        base = cute.math.select(mx == -math.inf, 0.0, mx * scale_log2)
        corr[r] = cute.math.exp2(row_max[r] * scale_log2 - base, fastmath=True)
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
