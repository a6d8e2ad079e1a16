"""Softmax along the rows of a 2-D tensor, forward and backward, for rows of 1 to 262144 elements.

::

    from examples import softmax_forward, softmax_backward
    softmax_forward(x, y)            # y = softmax(x) along each row
    softmax_backward(y, dy, dx)      # dx = y * (dy - sum(dy * y)) along each row

Rows are 2-D row-major tensors (rows, n) whose last dimension is contiguous and whose rows may be padded (any row stride
of at least ``n``); Float32, BFloat16 or Float16 in, Float32 arithmetic, the output in its own tensor's type (one of
those). The row is read once and written once (see ``row_reduce``): short rows several to a CTA, long rows split across
a cluster of 2..16 CTAs whose partial results meet in distributed shared memory. Between the read and the write it lives
in registers, except the backward pass's ``y`` and ``dy`` over a cluster and the forward pass's 16-bit rows over 4 or
more CTAs or of odd stride in one CTA, which are staged through shared memory (``row_stage``). The forward pass reduces
``(max, sum of exp(x - max))`` pairs in one exchange (an online softmax). Where the row is in registers, each thread's
exponentials are taken once, against its own maximum, and rescaled by ``exp(thread max - row max) / sum``; where it is
staged, each half of a thread's chunks gives its pair, and after the reduction each chunk is read again and its
exponentials taken anew against the row's maximum, just before its store: two exponentials an element, but few values
live at once, so more rows in flight (``forward_ctas_per_sm``). Results follow torch's: a NaN in a row makes the row
NaN, as does ``+inf`` or a row of ``-inf``."""

import operator

import cute_py as cute

from .row_reduce import (LOG2E, RowReduction, add, check_same_shape, check_matrix, chunk_index, clamped_row,
                         cluster_start, launch_rows, load_row, max_sum, plan_rows, row_coords, row_reduce,
                         store_if_row, FLT_MAX, TWO_INPUTS)
from .row_shift import over_cluster, plan_for, shifted_ctas_per_sm
from .row_math import EXP_BIAS, chunks, elements, exp2_fma, fast_shift, fold
from .row_chunks import matrix_row, store_chunk
from .row_stage import HALVES_WIDE, halves_ctas, halves_plan, stage, staged_halves, staged_rows, wait_staged

__all__ = ["softmax_forward", "softmax_forward_kernel", "softmax_backward", "softmax_backward_kernel",
           "forward_staged", "SHORT_HALVES_GROUP"]

@cute.kernel
def softmax_forward_kernel(x, y, spec):
    plan = spec
    red = RowReduction(plan, 2)
    cluster_start(plan)
    r, t, rank = row_coords(plan)
    xr = clamped_row(x, r, plan)
    if cute.const_expr(forward_staged(plan, x.element_type)):
        _forward_by_halves(xr, y, r, plan, t, rank, red)
    else:
        mt, safe, flat, unit, s = _pair(elements(load_row(xr, plan, t, rank, -float("inf"))))
        big, total = row_reduce((mt, s), max_sum, red)
        scale = cute.math.exp2((safe - cute.max(big, -FLT_MAX)) * LOG2E) / total
        store_if_row(y, r, plan, t, rank, [e * unit * scale for e in chunks(flat, plan.vec)])


@cute.jit
def _forward_by_halves(xr, y, r, plan, t, rank, red):
    """The forward pass of a row staged in shared memory (``staged_halves``): each half of this thread's chunks
    gives its ``(max, sum)`` pair, read from shared memory when it is needed; after the row's reduction the chunks
    are read again and each exponential taken anew against the row's max."""
    (sx,) = stage((xr,), plan, t, rank, -float("inf"))
    wait_staged(0)
    half = plan.chunks // 2
    pair = max_sum(_staged_pair(sx, range(half)), _staged_pair(sx, range(half, plan.chunks)))
    big, total = row_reduce(pair, max_sum, red)
    safe = cute.max(big, -FLT_MAX)
    shl = safe * LOG2E
    if r < y.shape[0]:
        yr = matrix_row(y, r, plan)
        if fast_shift(shl):
            scale = 2.0 ** -EXP_BIAS / total
            _store_staged(yr, plan, t, rank, sx, lambda e: exp2_fma(e, shl, EXP_BIAS) * scale)
        else:
            _store_staged(yr, plan, t, rank, sx, lambda e: cute.math.exp2((e - safe) * LOG2E) / total)


def _store_staged(yr, plan, t, rank, sx, f):
    """Store ``f`` of each staged element of this thread into the row ``yr``, chunk by chunk (each chunk read from
    shared memory just before its store, so that few are live at once)."""
    for k in cute.range_constexpr(plan.chunks):
        out = cute.make_rmem_tensor((plan.vec,), yr.element_type)
        out.store(sx.raw(k).to(cute.Float32).map(f).to(yr.element_type))
        store_chunk(yr, chunk_index(plan, k, t, rank), plan.vec, plan.n, out, plan.full(k))


def _staged_pair(sx, ks):
    """``(max, sum of exp(e - max))`` of this thread's staged chunks ``ks``, read from shared memory here."""
    mt, _, _, _, s = _pair(elements([sx.raw(k).to(cute.Float32) for k in ks]))
    return mt, s


def _pair(es):
    """``(max, safe, exponentials, unit, sum)`` of the elements ``es``: their max, the max clamped to ``-FLT_MAX``
    (what the exponentials are taken against), :func:`_exps`' exponentials and unit, and the sum of ``exp(e -
    safe)``."""
    mt = fold(es, cute.max)
    safe = cute.max(mt, -FLT_MAX)
    flat, s, unit = _exps(es, safe)
    return mt, safe, flat, unit, s * unit


@cute.jit
def _exps(es, safe):
    """``(exponentials, their sum, unit)``: ``exp(e - safe)`` of every element is ``exponential * unit``. Each is
    one fused multiply-add and one ``ex2.approx.ftz`` biased by ``2 ** EXP_BIAS`` (so that what would be subnormal
    is kept; ``unit`` scales it back exactly), or, for a shift too large for that (see ``row_math``), the plain
    form (``unit`` 1)."""
    shl = safe * LOG2E
    flat = [cute.Float32(0.0) for _ in es]
    unit = cute.Float32(1.0)
    if fast_shift(shl):
        flat = [exp2_fma(e, shl, EXP_BIAS) for e in es]
        unit = cute.Float32(2.0 ** -EXP_BIAS)
    else:
        flat = [cute.math.exp2((e - safe) * LOG2E) for e in es]
    return flat, fold(flat, operator.add), unit


@cute.kernel
def softmax_backward_kernel(y, dy, dx, spec):
    plan = spec
    red = RowReduction(plan, 1)
    r, t, rank = row_coords(plan)
    staged = staged_rows(plan)
    if cute.const_expr(staged):
        sy, sg = stage((clamped_row(y, r, plan), clamped_row(dy, r, plan)), plan, t, rank)
    cluster_start(plan)
    if cute.const_expr(staged):
        wait_staged(0)
        ys, gs = sy.values(), sg.values()
    else:
        ys = load_row(clamped_row(y, r, plan), plan, t, rank)
        gs = load_row(clamped_row(dy, r, plan), plan, t, rank)
    s = 0.0
    for k in cute.range_constexpr(plan.chunks):
        s = s + (ys[k] * gs[k]).reduce(cute.ReductionOp.ADD, 0.0, 0)
    (dot,) = row_reduce((s,), add, red)
    if cute.const_expr(staged):
        ys, gs = sy.values(), sg.values()
    store_if_row(dx, r, plan, t, rank, [ys[k] * (gs[k] - dot) for k in range(plan.chunks)])


def _launch(kernel, plan, m, *args, ctas_per_sm=None):
    if ctas_per_sm is None:
        ctas_per_sm = shifted_ctas_per_sm(plan)
    launch_rows(kernel(*args, plan), plan, plan.grid(m), kernel is softmax_forward_kernel, ctas_per_sm=ctas_per_sm)


HALVES_CTAS = 6  # CTAs an SM of the forward's rows staged by halves (at most 80 registers a thread)
SHORT_SHIFTED_CHUNKS = 6  # the most chunks a thread of the forward's shifted rows of one CTA keeps at 4 CTAs an SM


def forward_ctas_per_sm(plan, dtype):
    """The CTAs an SM :func:`softmax_forward` asks for: ``HALVES_CTAS`` where its rows are staged by halves in CTAs
    of 128 threads (one fewer past 16 chunks a thread, where six spill), else :func:`row_stage.halves_ctas`'
    (rows of one CTA at most ``SHORT_SHIFTED_CHUNKS`` chunks a thread).
    Measured (H200, bf16, of the copy ceiling, rows in registers -> staged with the CTAs left free -> staged at six):
    151936 0.89 -> 0.95 -> 1.00, 66536 0.89 -> 0.94 -> 0.98, 262144 0.93 -> 0.87 -> 1.00, 50257 (shifted) 0.79 ->
    0.99; at 262143 (shifted, 17 chunks over 16 CTAs at five) 0.64 -> 0.97 (benchmarks/RESULTS.md)."""
    if staged_halves(plan, dtype) and plan.cluster > 1 and plan.threads == 128:
        return HALVES_CTAS if plan.chunks <= 16 else HALVES_CTAS - 1
    return halves_ctas(plan, forward_staged(plan, dtype), SHORT_SHIFTED_CHUNKS)


SHORT_HALVES_GROUP = 64  # the fewest threads a row of one CTA the forward stages by halves


def forward_staged(plan, dtype):
    """Whether :func:`softmax_forward` stages its rows by halves: ``row_stage.staged_halves``, rows of one CTA only
    where each takes ``SHORT_HALVES_GROUP`` threads or more. Measured (H200, bf16 of odd stride, of the copy
    ceiling, in registers -> staged): 2049 (64 threads a row) 0.79 -> 0.96, 4097 0.82 -> 0.95, 16001 0.71 -> 0.97,
    but 1031 (32) 0.79 -> 0.48 and 257 (8) 0.76 -> 0.43 (benchmarks/RESULTS.md)."""
    return staged_halves(plan, dtype) and (plan.cluster > 1 or plan.group >= SHORT_HALVES_GROUP)


def backward_ctas_per_sm(plan, dtype):
    """The CTAs an SM :func:`softmax_backward` asks for: 2 for 16-bit short rows of CTAs of 512 threads whose threads
    keep at most 3 chunks (at most 64 registers a thread; left free, the assembler took 70-71 and one CTA an SM),
    else ``None`` (free). Measured (H200, bf16, of the copy ceiling): 10240 0.886 -> 1.030, 12288 0.931 -> 1.022; at
    4 chunks (14336, 16384) it spills and runs 5-10% slower (benchmarks/RESULTS.md)."""
    short = plan.cluster == 1 and plan.threads == 512 and plan.chunks <= 3 and dtype.width == 16
    return 2 if short else None


@cute.jit
def softmax_forward(x, y):
    """``y = softmax(x)`` along the rows of ``x`` (rows, n): ``exp(x - max) / sum(exp(x - max))`` in Float32, rounded
    once to ``y``'s type. ``x``, ``y``: Float32, BFloat16 or Float16, rows contiguous, any row strides;
    ``CuteValueError``/``CuteTypeError`` naming the rule otherwise, or for rows longer than 16 CTAs hold."""
    m, n = check_matrix("softmax_forward", "x", x)
    check_same_shape("softmax_forward", "y", y, (m, n))
    dtype = x.element_type
    plan = plan_for((x, y), lambda vec, shifted: halves_plan("softmax_forward", n, vec, dtype, shifted, HALVES_WIDE))
    _launch(softmax_forward_kernel, plan, m, x, y, ctas_per_sm=forward_ctas_per_sm(plan, dtype))


@cute.jit
def softmax_backward(y, dy, dx):
    """``dx = y * (dy - sum(dy * y))`` along the rows (the gradient of ``y = softmax(x)``), in Float32, rounded once
    to ``dx``'s type; ``y``, ``dy``, ``dx`` of one shape (rows, n), each Float32, BFloat16 or Float16 with
    contiguous rows and any row stride."""
    m, n = check_matrix("softmax_backward", "y", y)
    check_same_shape("softmax_backward", "dy", dy, (m, n))
    check_same_shape("softmax_backward", "dx", dx, (m, n))
    # rows of one CTA keep narrow chunks where their stride allows no more: shifted, 4097 bf16 measured 0.77x
    plan = plan_for((y, dy, dx), lambda vec, shifted: plan_rows("softmax_backward", n, vec, TWO_INPUTS,
                                                                 shifted=shifted), takes=over_cluster)
    _launch(softmax_backward_kernel, plan, m, y, dy, dx, ctas_per_sm=backward_ctas_per_sm(plan, y.element_type))
