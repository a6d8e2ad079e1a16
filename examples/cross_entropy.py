"""Cross-entropy of rows of logits against class indices, forward and backward, for 1 to 262144 classes.

::

    from examples import cross_entropy_forward, cross_entropy_backward
    cross_entropy_forward(logits, target, loss, lse, ignore_index=-100)
    cross_entropy_backward(logits, target, dloss, lse, dlogits, ignore_index=-100)

``logits`` (rows, n): Float32, BFloat16 or Float16, rows contiguous, any row stride; ``target``: 1-D Int32 or Int64 of
``rows``. The forward pass writes, per row, ``lse = log(sum(exp(logits)))`` (Float32) and ``loss = lse -
logits[target]`` (any float type), as torch's ``cross_entropy(reduction="none")``; a row whose target is
``ignore_index`` gets loss 0, and a target outside ``[0, n)`` that is not ``ignore_index`` gets a NaN loss (torch
stops with a device assertion there). Special values go as torch's do: a NaN logit makes the row's ``lse`` and
loss NaN; a ``+inf`` logit makes ``lse`` ``+inf`` (torch's ``logsumexp``) and the loss NaN (torch's
``log_softmax`` is NaN on such a row); a row of ``-inf`` has ``lse`` ``-inf`` and loss NaN. The row's ``(max,
sum of exp(v - shift(max)))`` pairs combine in one reduction (see ``row_reduce``), across a cluster for long rows,
where ``shift`` is the max, or 0 for an infinite max (torch's ``logsumexp`` shifts so too). 16-bit rows over a
cluster of 4 or more CTAs, and those of odd stride that one CTA holds, are copied into shared memory first, and
each thread takes the pair of each half of its values on its own (``staged_halves``).

The backward pass needs no reduction: ``dlogits = (exp(logits - lse) - onehot(target)) * dloss`` per row, with the
forward's ``lse`` and ``dloss`` (1-D of ``rows``, any float type); rows with ``ignore_index`` get zeros, rows with
a target outside ``[0, n)`` NaN. A row whose ``lse`` is not finite (a NaN or ``+inf`` logit, a row of ``-inf``) gets
NaN, ignored or not, as torch's gradient of ``log_softmax`` there. It reads each logit once and writes each
gradient once, except the target's: the thread whose chunk holds it reads its logit again before the row's stores
and stores ``(p - 1) * dloss`` over its gradient after them (no compare an element), so ``dlogits`` may be
``logits`` itself (the gradient in place).

Each exponential is one fused multiply-add and one ``ex2.approx.ftz`` (``row_math``); the backward's are biased by
``2 ** 64`` and scaled back, so gradients that are subnormal in Float32 are kept as torch keeps them. Rows whose
max (forward) or ``lse`` (backward) exceeds ``FLT_MAX / log2(e)`` take the plain form.
"""

import operator

import cute_py as cute

from .row_math import EXP_BIAS, LOG2E, elements, exp2_fma, fast_shift, fold
from .row_stage import halves_ctas, halves_plan, stage, staged_halves, wait_staged
from .row_chunks import matrix_row, window
from .row_reduce import (RowReduction, check_matrix, check_same_shape, check_vector, clamped_row,
                         cluster_start, launch_rows, load_row, plan_rows, row_coords, row_reduce, row_vector,
                         store_row, FLOATS, INDEX_TYPES, ONE_INPUT)
from .row_shift import over_cluster, plan_for, short_shifted_ctas

__all__ = ["cross_entropy_forward", "cross_entropy_forward_kernel", "cross_entropy_backward",
           "cross_entropy_backward_kernel"]


@cute.kernel
def cross_entropy_forward_kernel(x, target, loss, lse, ignore_index, plan):
    red = RowReduction(plan, 2)
    cluster_start(plan)
    r, t, rank = row_coords(plan)
    m = x.shape[0]
    xr = clamped_row(x, r, plan)
    halves = staged_halves(plan, x.element_type)
    if cute.const_expr(halves):
        (sx,) = stage((xr,), plan, t, rank, -float("inf"))
    else:
        es = elements(load_row(xr, plan, t, rank, -float("inf")))
    k, xk = _target_logit(xr, target, r, m, t, rank, plan.n)
    if cute.const_expr(halves):
        wait_staged(0)
        half = plan.chunks // 2
        pair = _max_sum_shifted(_staged_pair(sx, range(half)), _staged_pair(sx, range(half, plan.chunks)))
    else:
        pair = _pair(es)
    big, total = row_reduce(pair, _max_sum_shifted, red)     # (in rank order: by lanes 3% slower, H200)
    _finish(loss, lse, ignore_index, r, m, t, rank, _shift(big) + cute.math.log(total), plan.n, k, xk)


SHORT_SHIFTED_CHUNKS = 7  # the most chunks a thread of either pass's shifted rows of one CTA keeps at 4 CTAs an SM
# (forward at 8, 16001 bf16: 0.62 -> 0.53 of the copy ceiling)


def _forward_plan_of(what, n, logits):
    """``row_stage.halves_plan`` for ``logits`` (at most 16 chunks a thread where staged: at 262143 bf16, 17
    chunks over 16 CTAs measured 0.75 of the copy ceiling against 0.82 for 10 over 13 CTAs of 256 threads): of
    shifted rows (``row_shift.plan_for``) for 16-bit logits; Float32 logits
    of odd stride keep their 4-byte loads (shifted measured 0.92-0.98x at 50257 and 100003, H200)."""
    dtype = logits.element_type
    if dtype.width == 16:
        return plan_for((logits,), lambda vec, shifted: halves_plan(what, n, vec, dtype, shifted))
    return halves_plan(what, n, row_vector((logits,)), dtype)


def _staged_pair(sx, chunks):
    """:func:`_pair` of this thread's staged ``chunks``, read from shared memory here (after the pair of the chunks
    before them is taken, so that they are not all live at once)."""
    return _pair(elements([sx.raw(c).to(cute.Float32) for c in chunks]))


def _pair(es):
    """``(max, sum of exp(e - shift(max)))`` of the elements ``es``."""
    mt = fold(es, cute.max)
    return mt, _sum_exp(es, _shift(mt))


def _shift(m):
    """What a row's exponentials are taken relative to: its max ``m``, or 0 where ``m`` is infinite (then a
    ``+inf`` logit gives a sum and an ``lse`` of ``+inf``, a row of ``-inf`` a sum of 0 and an ``lse`` of ``-inf``)."""
    return cute.math.select(abs(m) == float("inf"), 0.0, m)


@cute.jit
def _target_logit(xr, target, r, m, t, rank, n):
    """``(target, its logit)`` of row ``r`` for the thread that finishes the row (zeros for the others), the logit
    read at the target clamped into the row. Read after the row's loads are issued, not after the reduction: a CTA
    of short rows then no longer ends with two dependent reads (measured), and only this thread waits for them."""
    k = 0
    xk = 0.0
    if t == 0 and rank == 0:
        k = target[cute.where(r < m, r, m - 1)]
        xk = xr[cute.where((k >= 0) & (k < n), k, 0).to(cute.Int32)].to(cute.Float32)
    return k, xk


@cute.jit
def _sum_exp(es, shift):
    """The sum of ``exp(e - shift)`` over the elements ``es``: each in one fused multiply-add and one
    ``ex2.approx.ftz`` (a term below ``2 ** -126`` flushes to zero: beside the max's own term of 1 it adds nothing
    to the sum in Float32), or, for a shift too large for that (see ``row_math``), in the plain form."""
    shl = shift * LOG2E
    s = cute.Float32(0.0)
    if fast_shift(shl):
        s = fold([exp2_fma(e, shl) for e in es], operator.add)
    else:
        s = fold([cute.math.exp2((e - shift) * LOG2E) for e in es], operator.add)
    return s


def _max_sum_shifted(a, b):
    """The combine of ``(max, sum of exp(v - _shift(max)))`` pairs: each sum rescaled to the shift of the larger
    max; a sum of 0 (a part of ``-inf`` only) adds nothing, a NaN stays NaN."""
    big = cute.max(a[0], b[0])
    shift = _shift(big)
    parts = [cute.math.select(p[1] == 0.0, 0.0, p[1] * cute.math.exp2((_shift(p[0]) - shift) * LOG2E, fastmath=True))
             for p in (a, b)]
    return big, parts[0] + parts[1]


@cute.jit
def _finish(loss, lse, ignore_index, r, m, t, rank, row_lse, n, k, xk):
    """Row ``r``'s ``lse`` and loss, from one thread of the row; ``k``: its target, ``xk``: the target's logit
    (read at ``k`` clamped into the row)."""
    if r < m and t == 0 and rank == 0:
        lse[r] = row_lse
        out = float("nan")
        if k == ignore_index:
            out = 0.0
        elif k >= 0 and k < n:
            out = cute.math.select(row_lse == float("inf"), float("nan"), row_lse - xk)
        loss[r] = cute.Float32(out).to(loss.element_type)


@cute.kernel
def cross_entropy_backward_kernel(x, target, dloss, lse, dx, ignore_index, plan):
    r, t, rank = row_coords(plan, clustered=False)
    m = x.shape[0]
    _backward(x, target, dloss, lse, dx, ignore_index, plan, r, m, t, rank)


@cute.jit
def _backward(x, target, dloss, lse, dx, ignore_index, plan, r, m, t, rank):
    if r < m:
        k = target[r]
        scale = dloss[r].to(cute.Float32)
        hit = cute.Int32(-1)
        if k == ignore_index:
            scale = cute.Float32(0.0)  # zeros, or NaN where the row's lse makes its softmax NaN
        elif k >= 0 and k < plan.n:
            hit = k.to(cute.Int32)
        else:
            scale = cute.Float32(float("nan"))
        xr, dxr = matrix_row(x, r, plan), matrix_row(dx, r, plan)
        vals = load_row(xr, plan, t, rank)
        own, xk = _owned_target(xr, plan, t, rank, hit)
        row_lse = lse[r]
        shl = row_lse * LOG2E
        if fast_shift(shl):
            _gradient(dxr, plan, t, rank, vals, hit, own, xk, scale, shl, True)
        else:
            _gradient(dxr, plan, t, rank, vals, hit, own, xk, scale,
                      cute.math.select(row_lse == float("inf"), float("nan"), row_lse), False)


def _softmax(e, shift, fast):
    """``exp(e - lse)``: with ``fast``, ``shift`` is ``lse * log2(e)``, and the exponent is biased by
    ``EXP_BIAS`` so that ``ex2.approx.ftz`` keeps what would be subnormal, then scaled back exactly; else ``shift``
    is the lse (NaN for a ``+inf`` lse: its softmax is NaN)."""
    if cute.const_expr(fast):
        return exp2_fma(e, shift, EXP_BIAS) * 2.0 ** -EXP_BIAS
    return cute.math.exp2((e - shift) * LOG2E)


@cute.jit
def _owned_target(xr, plan, t, rank, hit):
    """``(1, the logit at hit)`` for the thread whose chunks hold the target ``hit`` (the chunk counts from the row's
    window: ``row_chunks.window``), ``(0, 0.0)`` for the others and for ``hit < 0``. Read before the row's gradient
    is stored, so that the gradient may go over the logits themselves (``dlogits`` the same memory as ``logits``)."""
    own = cute.Int32(0)
    xk = cute.Float32(0.0)
    if hit >= 0:
        c = (hit + window(xr)[1]) // plan.vec
        if c % plan.group == t and (c // plan.group) % plan.cluster == rank:
            own = cute.Int32(1)
            xk = xr[hit].to(cute.Float32)
    return own, xk


@cute.jit
def _gradient(dxr, plan, t, rank, vals, hit, own, xk, scale, shift, fast):
    """Store ``softmax * scale`` into the row ``dxr``, then, from the thread that stored it (``own``), ``(softmax -
    1) * scale`` at the target ``hit`` from its logit ``xk``: the same thread's later store to the address wins."""
    store_row(dxr, plan, t, rank, [v.map(lambda e: _softmax(e, shift, fast) * scale) for v in vals])
    if own == 1:
        dxr[hit] = ((_softmax(xk, shift, fast) - 1.0) * scale).to(dxr.element_type)


def _check(what, logits, target, lse):
    m, n = check_matrix(what, "logits", logits)
    check_vector(what, "target", target, m, INDEX_TYPES)
    check_vector(what, "lse", lse, m, ("Float32",))
    return m, n


def _ignore(what, ignore_index):
    if type(ignore_index) is not int or not -(1 << 31) <= ignore_index < (1 << 31):
        raise cute.CuteValueError(f"{what}: ignore_index must be an int in [-2**31, 2**31), got {ignore_index!r}")
    return ignore_index


@cute.jit
def cross_entropy_forward(logits, target, loss, lse, ignore_index=-100):
    """Per row: ``lse = logsumexp(logits)`` (Float32) and ``loss = lse - logits[target]`` (``loss`` 1-D of rows,
    any float type), 0 where ``target == ignore_index``, NaN for a target outside ``[0, n)``."""
    what = "cross_entropy_forward"
    m, n = _check(what, logits, target, lse)
    check_vector(what, "loss", loss, m, FLOATS)
    plan = _forward_plan_of(what, n, logits)
    launch_rows(cross_entropy_forward_kernel(logits, target, loss, lse, _ignore(what, ignore_index), plan), plan,
                plan.grid(m), True, ctas_per_sm=halves_ctas(plan, staged_halves(plan, logits.element_type),
                                                          SHORT_SHIFTED_CHUNKS))


@cute.jit
def cross_entropy_backward(logits, target, dloss, lse, dlogits, ignore_index=-100):
    """``dlogits = (softmax(logits) - onehot(target)) * dloss`` per row, ``softmax`` as ``exp(logits - lse)`` with the
    forward's ``lse``; zero rows where ``target == ignore_index``; ``dlogits`` of the logits' shape, any float type,
    any row stride."""
    what = "cross_entropy_backward"
    m, n = _check(what, logits, target, lse)
    check_vector(what, "dloss", dloss, m, FLOATS)
    check_same_shape(what, "dlogits", dlogits, (m, n))
    # Float32 rows of one CTA keep narrow chunks where their stride allows no more; 16-bit ones take shifted rows at
    # four CTAs an SM (short_shifted_ctas): bf16 4097 0.77 -> 0.85, 8193 0.70 -> 0.85, 12289 0.74 -> 0.89 of the
    # copy ceiling (left free 0.76-0.85; benchmarks/RESULTS.md)
    wide16 = logits.element_type.width == 16 and dlogits.element_type.width == 16
    plan = plan_for((logits, dlogits), lambda vec, shifted: plan_rows(what, n, vec, ONE_INPUT, shifted=shifted),
                    takes=lambda p: wide16 or over_cluster(p))
    launch_rows(cross_entropy_backward_kernel(logits, target, dloss, lse, dlogits, _ignore(what, ignore_index), plan),
                plan, plan.grid(m), True, clustered=False, ctas_per_sm=short_shifted_ctas(plan, SHORT_SHIFTED_CHUNKS))
