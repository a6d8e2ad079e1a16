"""Normalisations along the rows of a 2-D tensor: RMSNorm forward and backward, LayerNorm forward.

::

    from examples import rmsnorm_forward, rmsnorm_backward, layernorm_forward, rmsnorm_workspace_rows
    rmsnorm_forward(x, w, y, rstd, eps=1e-6)               # y = x * rsqrt(mean(x^2) + eps) * w; rstd per row
    ws = torch.empty(rmsnorm_workspace_rows(m, n), n, dtype=torch.float32, device="cuda")
    rmsnorm_backward(dy, x, w, rstd, dx, dw, ws)           # dx, and dw = sum over rows of dy * x * rstd
    layernorm_forward(x, w, b, y, mean, rstd, eps=1e-5)    # y = (x - mean) * rstd * w + b

Rows (rows, n) as in ``softmax_rows``: contiguous, any row stride, Float32/BFloat16/Float16, Float32 arithmetic,
each output rounded once to its tensor's type; ``w``, ``b``, ``dw``: 1-D contiguous of ``n``; ``rstd``, ``mean``:
1-D Float32 of ``rows``. A row is read once (one CTA, or a cluster of up to 16 exchanging partial sums through
distributed shared memory) and written once. Short rows are held in registers; a row over a cluster is staged
through shared memory (``row_stage``) where the staged bytes leave room for two CTAs an SM: RMSNorm's ``x`` and
``w`` (or ``x`` alone, ``w`` loaded into registers while ``x`` is reduced), LayerNorm's ``w`` and ``b`` (copied
from the start, while ``x`` is loaded into registers), or for 16-bit rows over CTAs of 256 threads its ``x`` alone
(``w`` and ``b`` read chunk by chunk at the store, which leaves room for more CTAs an SM). LayerNorm's 16-bit rows
of one CTA whose threads keep fewer than 8 chunks stage ``w`` and ``b`` once a CTA, shared by its rows, and ask for
3 or 4 CTAs an SM (``layernorm_shared_wb_ctas``). LayerNorm of rows that
fill every thread, Float32 or 16-bit over a cluster with ``x`` in registers, takes the mean and the squared
deviations in one exchange (Chan, Golub and LeVeque's combine); other rows take the sum, then the squared
deviations from the row's mean. Rows over a cluster whose stride is not a whole number of 16-byte chunks (odd widths)
move in 128-bit chunks as shifted rows (``row_chunks.ShiftedRow``) in RMSNorm (Float32 rows of one CTA too) and in
LayerNorm (its ``x`` staged, each chunk's deviations taken at its store), ``w`` and ``b`` then read at each row's
positions (``row_chunks.load_at``): 16-bit ones as the two 16-byte chunks that hold a chunk's positions, shifted in
registers, at the store (``store_affine``); Float32 ones element by element (``norm_parts.vector_chunks``,
``store_affine``).

``rmsnorm_backward`` and its plans: ``norm_backward``.
"""

import cute_py as cute
from cute_py import arch

from .row_chunks import pairs, window
from .row_reduce import (RowReduction, add, check_eps, check_matrix, check_same_shape, check_vector, clamped_row,
                         cluster_start, launch_rows, load_row, plan_rows, row_coords, row_reduce, row_vector,
                         store_if_row, CLUSTER_GROUP, ONE_INPUT)
from .norm_parts import (deviations, every_thread_full, mean_and_squares, mean_m2, store_affine, store_stats,
                         vector_chunks)
from .row_shift import over_cluster, plan_for, shifted_ctas_per_sm
from .norm_backward import rmsnorm_backward, rmsnorm_backward_kernel, rmsnorm_workspace_rows
from .column_sum import column_sum_kernel
from .row_stage import stage, staged_bytes, staged_rows, wait_staged
from .layernorm_loop import LoopConfig, default_loop, launch_loop

__all__ = ["rmsnorm_forward", "rmsnorm_forward_kernel", "rmsnorm_backward", "rmsnorm_backward_kernel",
           "layernorm_forward", "layernorm_forward_kernel", "column_sum_kernel", "rmsnorm_workspace_rows"]


@cute.kernel
def rmsnorm_forward_kernel(x, w, y, rstd, eps, plan):
    red = RowReduction(plan, 1)
    r, t, rank = row_coords(plan)
    m = x.shape[0]
    row = clamped_row(x, r, plan)
    lo = window(row)[1]        # a shifted row's start in its window: w is read at its positions (not staged)
    staged = _staged_prefix(plan, (x,) if plan.shifted else (x, w))  # x, then w, through shared memory where they fit
    if cute.const_expr(staged >= 1):
        (sx,) = stage((row,), plan, t, rank)
    if cute.const_expr(staged == 2):
        (sw,) = stage((w,), plan, t, rank)
    cluster_start(plan)
    if cute.const_expr(staged >= 1):
        wait_staged(staged - 1)
        xs = sx.values()
    else:
        xs = load_row(row, plan, t, rank)
    late = plan.shifted and pairs(w, plan.vec)  # 16-bit w in pairs of words: read at the store, chunk by chunk
    if cute.const_expr(staged == 1 and not late):
        ws = vector_chunks(w, lo, plan, t, rank)  # into registers, in flight while x is reduced
    s = 0.0
    for v in xs:
        s = s + (v * v).reduce(cute.ReductionOp.ADD, 0.0, 0)
    (ss,) = row_reduce((s,), add, red)
    inv = cute.math.rsqrt(ss / plan.n + eps)
    if cute.const_expr(staged == 2):
        wait_staged(0)
        ws = sw.values()
    elif cute.const_expr(staged == 0):
        ws = vector_chunks(w, lo, plan, t, rank)
    if cute.const_expr(staged >= 1):
        xs = sx.values()
    if cute.const_expr(late):
        store_affine(y, w, None, lambda k: xs[k], inv, r, plan, t, rank, lo)
    else:
        store_if_row(y, r, plan, t, rank, [xs[k] * inv * ws[k] for k in range(plan.chunks)])
    store_stats(r, m, t, rank, ((rstd, inv),))


@cute.kernel
def layernorm_forward_kernel(x, w, b, y, mean, rstd, eps, stage_x, plan):
    # one exchange of (sum, M2) pairs for rows that fill every thread, Float32 or 16-bit over a cluster with x in
    # registers; else the sum, then the squared deviations. Measured (H200) one exchange: Float32 1.17x at 32768 and
    # 1.03x at 262144; 16-bit 1.01x at 32768, 1.02-1.03x at 65536, 1.00x (bf16) and 1.19x (fp16) at 131072, but
    # 0.99x at 4096 (one CTA) and 0.70x with x staged at 262144 (benchmarks/RESULTS.md)
    whole = every_thread_full(plan) and (x.element_type.width == 32 or (plan.cluster > 1 and not stage_x))
    red = RowReduction(plan, 2, rounds=1) if cute.const_expr(whole) else RowReduction(plan, 1, rounds=2)
    r, t, rank = row_coords(plan)
    m = x.shape[0]
    # x through shared memory (read again at each pass; w and b at the store), or w and b, copied from the start,
    # where they fit (x in registers)
    # (a shifted row's x staged, its w and b read at its positions, lo on, chunk by chunk at the store)
    staged = not stage_x and not plan.shifted and _stages(plan, (w, b))
    shared = not plan.shifted and layernorm_shared_wb_ctas(plan, x.element_type) > 0
    if cute.const_expr(stage_x):
        row = clamped_row(x, r, plan)
        lo = window(row)[1]
        (sx,) = stage((row,), plan, t, rank)
    if cute.const_expr(staged or shared):
        sw, sb = stage((w, b), plan, t, rank, shared=shared)
    cluster_start(plan)
    if cute.const_expr(stage_x):
        wait_staged(0)
        xs = sx.values()
    else:
        row = clamped_row(x, r, plan)
        lo = window(row)[1]
        xs = load_row(row, plan, t, rank)
    if cute.const_expr(whole):
        mu, sq = mean_m2(xs, plan, red)
    else:
        mu, sq = mean_and_squares(lambda again: sx.values() if stage_x and again else xs, plan, red, t, rank,
                                  lo=lo)
    inv = cute.math.rsqrt(sq / plan.n + eps)
    if cute.const_expr(plan.shifted):  # each chunk's deviations at its store, from shared memory
        store_affine(y, w, b, lambda k: sx.slot(k).load().to(cute.Float32) - mu, inv, r, plan, t, rank, lo)
    elif cute.const_expr(stage_x):
        ds = deviations(sx.values(), mu, plan, t, rank, lo)
        store_affine(y, w, b, lambda k: ds[k], inv, r, plan, t, rank, lo)
    else:
        ds = deviations(xs, mu, plan, t, rank, lo)
        if cute.const_expr(staged or shared):
            wait_staged(0)
            if cute.const_expr(shared):
                arch.sync_threads()  # the CTA's copies of w and b, each thread's by its group's turn
            ws, bs = sw.values(), sb.values()
        else:
            ws, bs = load_row(w, plan, t, rank), load_row(b, plan, t, rank)
        store_if_row(y, r, plan, t, rank, [ds[k] * inv * ws[k] + bs[k] for k in range(plan.chunks)])
    store_stats(r, m, t, rank, ((mean, mu), (rstd, inv)))


def rmsnorm_ctas_per_sm(plan, dtype, w_pairs=False):
    """The CTAs an SM :func:`rmsnorm_forward` asks for: 3 for 16-bit short rows of CTAs of 256 threads whose threads
    keep at most 6 chunks (at most 80 registers a thread, no spills; left free, the assembler took 91-128 at 3072,
    6144, 7168 and 12288: two CTAs an SM), else ``None`` (two for one-input kernels of 256 threads). Measured (H200,
    bf16, of the copy ceiling): 3072 0.944 -> 0.989, 6144 0.940 -> 0.981, 12288 0.943 -> 0.973; at 7 or 8 chunks
    it spills: 14336 0.974 -> 0.969, 16384 0.995 -> 0.955 (benchmarks/RESULTS.md). A ``shifted`` plan takes
    ``row_shift.shifted_ctas_per_sm``'s, and 4 for CTAs of 256 threads where ``w`` moves in pairs (``w_pairs``,
    ``row_chunks.pairs``): 64 registers a thread; left free, 72 (3 CTAs an SM) ran 0.86-0.89x as fast."""
    if plan.shifted:
        return 4 if plan.threads == 256 and w_pairs else shifted_ctas_per_sm(plan)
    short = plan.cluster == 1 and plan.threads == 256 and plan.chunks <= 6 and dtype.width == 16
    return 3 if short else None


def layernorm_shared_wb_ctas(plan, dtype):
    """The CTAs an SM that :func:`layernorm_forward_kernel` asks for where it stages ``w`` and ``b`` through shared
    memory once a CTA for all its rows (``row_stage.Staged(shared=True)``, copied from the start while ``x`` is
    loaded), else 0: for 16-bit rows of one CTA whose threads keep fewer than 8 chunks; 4 CTAs where they keep at
    most 5, else 3. Loaded after the reductions (else), ``w`` and ``b`` take registers beside ``x``'s values and
    the rows wait on L2 with nothing in flight; staged, the kernel fits 80 registers (64 at 5 chunks), so 3 (4)
    CTAs of 256 threads share an SM instead of 2. At 8 chunks it would spill. Measured (H200, bf16, of the copy
    ceiling): 2560 0.75 -> 0.97, 5120 0.78 -> 0.98, 6144 0.83 -> 0.98, 10240 0.76 -> 0.98, 12288 0.85 -> 0.95,
    14336 0.86 -> 0.98; 4 CTAs at 6 or 7 chunks 0.65-0.83; staged at 8 chunks (2 CTAs) 4096 0.96 -> 0.92, 1024
    0.98 -> 0.86 (benchmarks/RESULTS.md)."""
    if plan.cluster > 1 or dtype.width != 16 or plan.chunks >= LAYERNORM_SHARED_CHUNKS:
        return 0
    return 4 if plan.chunks <= 5 else 3


LAYERNORM_SHARED_CHUNKS = 8  # LayerNorm's 16-bit rows of one CTA stage w and b where threads keep fewer chunks


def layernorm_stages_x(plan, dtype):
    """Whether :func:`layernorm_forward_kernel` stages ``x`` (of ``dtype``) through shared memory, reading ``w`` and
    ``b`` chunk by chunk at the store: for 16-bit rows over a cluster of CTAs of 256 threads or more. Holding ``x`` in registers
    there takes 95 registers a thread, two CTAs an SM; staged, 40, and three or more CTAs an SM (32 KiB of shared
    memory a CTA at 262144). Measured (H200, bf16 rows of 262144): 0.85 of the copy ceiling against 0.71; with
    CTAs of 128 threads (32768, 65536) 0.85 against 0.94-0.96, and for Float32 rows of 262144 (64 KiB a CTA) 0.61
    against 0.65 (benchmarks/RESULTS.md). And for shifted rows, which take each chunk's deviations at its store:
    40-64 registers a thread, against 108-128 with ``x`` in registers (0.99-1.45x at 32001-100003, 1.7x at bf16
    151937-200003)."""
    return bool(plan.shifted) or (staged_rows(plan) and plan.threads >= 256 and dtype.width == 16)


# CTAs an SM that LayerNorm asks for on clusters of CTAs of 128 threads, 16-bit x in registers: left free, the
# assembler took 102-122 registers a thread on rows with a partial end (four CTAs an SM). Measured (H200, bf16): 0.66
# -> 0.76 of the copy ceiling at 70000, 0.60 -> 0.75 at 100000, 0.75 -> 0.89 at 40000 (benchmarks/RESULTS.md). Not
# Float32 rows: shared memory holds them to three CTAs an SM anyway (0.797 -> 0.800 at 40000), and bounded they spill
LAYERNORM_CTAS_PER_SM = 5

NORM_STAGE_SMEM = 100 * 1024  # staged bytes a CTA of a norm may take: two CTAs still share an SM


def _stages(plan, inputs):
    """Whether a norm's kernel stages all of ``inputs`` through shared memory (:func:`_staged_prefix`)."""
    return _staged_prefix(plan, inputs) == len(inputs)


def _staged_prefix(plan, inputs):
    """How many of ``inputs``, taken in order, a norm's kernel stages through shared memory: on rows over a cluster
    (``staged_rows``), as many as let two CTAs share an SM (``NORM_STAGE_SMEM``). Measured (H200, Float32 rows of
    262144, 64 KiB a CTA an input): both inputs staged (one CTA an SM), RMSNorm 0.73 and LayerNorm 0.56 of the copy
    ceiling; both in registers, 0.85 and 0.72; RMSNorm's ``x`` alone staged, with ``w`` loaded into registers while
    ``x`` is reduced, 0.97. Staging stays ahead at 65536 and below and for 16-bit rows of 262144
    (benchmarks/RESULTS.md)."""
    if not staged_rows(plan):
        return 0
    total = count = 0
    for t in inputs:
        total += staged_bytes(plan, t.element_type)
        if total > NORM_STAGE_SMEM:
            break
        count += 1
    return count


def _rmsnorm_shifts(x, y):
    """The shifted plans :func:`rmsnorm_forward` takes (``row_shift.plan_for``'s ``takes``): rows over a cluster;
    Float32 rows also where a CTA holds one (4097-12289: 1.01-1.06x; 7 and 2049, several a CTA: 0.20x and 0.99x;
    16-bit rows of one CTA: 0.53-0.68x; RESULTS.md)."""
    alone = min(x.element_type.width, y.element_type.width) == 32
    return lambda plan: plan.cluster > 1 or (alone and plan.rows == 1)


@cute.jit
def rmsnorm_forward(x, w, y, rstd, eps=1e-6):
    """``y = x * rstd * w`` with ``rstd = 1 / sqrt(mean(x^2) + eps)`` per row of ``x`` (rows, n), in Float32;
    ``y`` of ``x``'s shape, ``w`` 1-D of ``n``, ``rstd`` 1-D Float32 of ``rows`` (written)."""
    m, n = check_matrix("rmsnorm_forward", "x", x)
    check_same_shape("rmsnorm_forward", "y", y, (m, n))
    check_vector("rmsnorm_forward", "w", w, n)
    check_vector("rmsnorm_forward", "rstd", rstd, m, ("Float32",))
    plan = plan_for((x, y), lambda vec, shifted: plan_rows("rmsnorm_forward", n, vec, ONE_INPUT, shifted=shifted),
                    takes=_rmsnorm_shifts(x, y), narrow=(x, y, w))
    ctas = rmsnorm_ctas_per_sm(plan, x.element_type, pairs(w, plan.vec))
    launch_rows(rmsnorm_forward_kernel(x, w, y, rstd, check_eps("rmsnorm_forward", eps), plan), plan, plan.grid(m),
                True, ctas_per_sm=ctas)


@cute.jit
def layernorm_forward(x, w, b, y, mean, rstd, eps=1e-5, loop=None):
    """``y = (x - mean) * rstd * w + b`` with the row's ``mean`` and ``rstd = 1 / sqrt(var + eps)`` (the biased
    variance, computed from the row in registers as ``mean((x - mean)^2)``), in Float32; ``w``, ``b`` 1-D of
    ``n``; ``mean``, ``rstd`` 1-D Float32 of ``rows`` (written). ``loop``: a ``layernorm_loop.LoopConfig`` runs
    the rows on a persistent grid of clusters, each walking its rows (``layernorm_loop``); ``False``, a cluster (or
    a CTA) a row; ``None`` (the default), the measured choice (``layernorm_loop.default_loop``). The choices
    agree up to Float32 rounding (the loop fuses its products and sums); each gives the same bits on every run."""
    m, n = check_matrix("layernorm_forward", "x", x)
    check_same_shape("layernorm_forward", "y", y, (m, n))
    check_vector("layernorm_forward", "w", w, n)
    check_vector("layernorm_forward", "b", b, n)
    check_vector("layernorm_forward", "mean", mean, m, ("Float32",))
    check_vector("layernorm_forward", "rstd", rstd, m, ("Float32",))
    vec = row_vector((x, y, w, b))
    if loop is None:
        loop = default_loop(n, vec, x.element_type)
    if loop is not False:
        if not isinstance(loop, LoopConfig):
            raise cute.CuteValueError(f"layernorm_forward: loop must be None, False or a LoopConfig, got {loop!r}")
        launch_loop(loop, vec, x, w, b, y, mean, rstd, check_eps("layernorm_forward", eps))
        return
    # shifted rows over a cluster only (one CTA's were slower, RESULTS.md), x staged (layernorm_stages_x)
    plan = plan_for((x, y), lambda v, s: plan_rows("layernorm_forward", n, v, ONE_INPUT, shifted=s),
                    takes=over_cluster, narrow=(x, y, w, b))
    stage_x = layernorm_stages_x(plan, x.element_type)
    bound = plan.threads == CLUSTER_GROUP and x.element_type.width == 16 and not plan.shifted
    ctas = None if plan.shifted else layernorm_shared_wb_ctas(plan, x.element_type) or None
    launch_rows(layernorm_forward_kernel(x, w, b, y, mean, rstd, check_eps("layernorm_forward", eps), stage_x, plan),
                plan, plan.grid(m), True, ctas_per_sm=LAYERNORM_CTAS_PER_SM if bound else ctas)
