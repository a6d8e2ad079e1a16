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
where ``shift`` is the max, or 0 for an infinite max (torch's ``logsumexp`` shifts so too).

The backward pass needs no reduction: ``dlogits = (exp(logits - lse) - onehot(target)) * dloss`` per row, with the
forward's ``lse`` and ``dloss`` (1-D of ``rows``, any float type); rows with ``ignore_index`` get zeros, rows with
a target outside ``[0, n)`` NaN. A row whose ``lse`` is not finite (a NaN or ``+inf`` logit, a row of ``-inf``) gets
NaN, ignored or not, as torch's gradient of ``log_softmax`` there. It reads each logit once and writes each
gradient once.
"""

import cute_py as cute

from .row_reduce import (LOG2E, RowReduction, check_matrix, check_same_shape, check_vector, clamped_row,
                         cluster_start, launch_rows, load_row, plan_rows, row_coords, row_reduce, row_vector, store_row,
                         FLOATS, INDEX_TYPES, ONE_INPUT)

__all__ = ["cross_entropy_forward", "cross_entropy_forward_kernel", "cross_entropy_backward",
           "cross_entropy_backward_kernel"]


@cute.kernel
def cross_entropy_forward_kernel(x, target, loss, lse, ignore_index, plan):
    red = RowReduction(plan, 2)
    cluster_start(plan)
    r, t, rank = row_coords(plan)
    m = x.shape[0]
    xr = clamped_row(x, r)
    vals = load_row(xr, plan, t, rank, -float("inf"))
    mt = -float("inf")
    for v in vals:
        mt = cute.max(mt, v.reduce(cute.ReductionOp.MAX, -float("inf"), 0))
    shift = _shift(mt)
    s = 0.0
    for v in vals:
        s = s + cute.math.exp2((v - shift) * LOG2E).reduce(cute.ReductionOp.ADD, 0.0, 0)
    big, total = row_reduce((mt, s), _max_sum_shifted, red)
    _finish(xr, target, loss, lse, ignore_index, r, m, t, rank, _shift(big) + cute.math.log(total), plan.n)


def _shift(m):
    """What a row's exponentials are taken relative to: its max ``m``, or 0 where ``m`` is infinite (then a
    ``+inf`` logit gives a sum and an ``lse`` of ``+inf``, a row of ``-inf`` a sum of 0 and an ``lse`` of ``-inf``)."""
    return cute.math.select(abs(m) == float("inf"), 0.0, m)


def _max_sum_shifted(a, b):
    """The combine of ``(max, sum of exp(v - _shift(max)))`` pairs: each sum rescaled to the shift of the larger
    max; a sum of 0 (a part of ``-inf`` only) adds nothing, a NaN stays NaN."""
    big = cute.max(a[0], b[0])
    shift = _shift(big)
    parts = [cute.math.select(p[1] == 0.0, 0.0, p[1] * cute.math.exp2((_shift(p[0]) - shift) * LOG2E)) for p in (a, b)]
    return big, parts[0] + parts[1]


@cute.jit
def _finish(xr, target, loss, lse, ignore_index, r, m, t, rank, row_lse, n):
    if r < m and t == 0 and rank == 0:
        lse[r] = row_lse
        k = target[r]
        out = float("nan")
        if k == ignore_index:
            out = 0.0
        elif k >= 0 and k < n:
            out = cute.math.select(row_lse == float("inf"), float("nan"),
                                   row_lse - xr[k.to(cute.Int32)].to(cute.Float32))
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
        keep = cute.Float32(1.0)
        hit = cute.Int32(-1)
        if k == ignore_index:
            keep = cute.Float32(0.0)
        elif k >= 0 and k < plan.n:
            hit = k.to(cute.Int32)
        else:
            scale = cute.Float32(float("nan"))
        vals = load_row(x[r, None], plan, t, rank)
        row_lse = lse[r]
        row_lse = cute.math.select(row_lse == float("inf"), float("nan"), row_lse)  # exp(v - lse) NaN there
        outs = []
        for c in cute.range_constexpr(plan.chunks):
            p = cute.math.exp2((vals[c] - row_lse) * LOG2E)
            first = ((c * plan.cluster + rank) * plan.group + t) * plan.vec
            frag = cute.make_rmem_tensor((plan.vec,), cute.Float32)
            frag.store(p)
            for j in cute.range_constexpr(plan.vec):
                kept = cute.where(first + j == hit, frag[j] - 1.0, frag[j]) * scale
                frag[j] = cute.where(keep == 0.0, frag[j] * 0.0, kept)
            outs.append(frag.load())
        store_row(dx[r, None], plan, t, rank, outs)


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
    # rows that 16 CTAs of 128 threads hold only at 128 values a thread take them so (measured faster at 262144
    # bf16: 0.66 of the copy ceiling against 0.60 with CTAs of 256 threads; benchmarks/RESULTS.md)
    plan = plan_rows(what, n, row_vector((logits,)), ONE_INPUT, wide=2 * ONE_INPUT)
    launch_rows(cross_entropy_forward_kernel(logits, target, loss, lse, _ignore(what, ignore_index), plan), plan,
                plan.grid(m), True)


@cute.jit
def cross_entropy_backward(logits, target, dloss, lse, dlogits, ignore_index=-100):
    """``dlogits = (softmax(logits) - onehot(target)) * dloss`` per row, ``softmax`` as ``exp(logits - lse)`` with the
    forward's ``lse``; zero rows where ``target == ignore_index``; ``dlogits`` of the logits' shape, any float type,
    any row stride."""
    what = "cross_entropy_backward"
    m, n = _check(what, logits, target, lse)
    check_vector(what, "dloss", dloss, m, FLOATS)
    check_same_shape(what, "dlogits", dlogits, (m, n))
    plan = plan_rows(what, n, row_vector((logits, dlogits)), ONE_INPUT)
    launch_rows(cross_entropy_backward_kernel(logits, target, dloss, lse, dlogits, _ignore(what, ignore_index), plan),
                plan, plan.grid(m), True, clustered=False)
