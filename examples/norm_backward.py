"""RMSNorm's backward (``norms.rmsnorm_backward``): ``dx = rstd * (dy * w - xhat * mean(dy * w * xhat))`` with ``xhat =
x * rstd``, and ``dw`` deterministically: each of the workspace's ``P`` rows belongs to one group of threads that walks
its rows accumulating ``dy * xhat`` (in shared memory, each thread its own slots) and stores it to its workspace row; a
second kernel sums the workspace's columns in a fixed order. The same ``P`` gives the same bits. Rows over a cluster
take the cluster that keeps the most SMs busy at as many groups in flight (:func:`backward_plan`). A group's next one or
two rows of ``x`` and ``dy`` are copied into shared memory while it reduces and stores the current one, as many as fit
(:func:`prefetch_depth`).

Rows of odd stride move as shifted rows (``row_chunks.ShiftedRow``: 16-byte chunks counted from a window boundary at or
before each row, ``lo`` elements before the row's start; windows of one chunk for 16-bit rows, the widest the groups
cover for Float32: :func:`_window_chunks`). A thread's chunks then hold other columns at rows of another ``lo``, and its
``dw`` sums must keep theirs; ``lo`` is a function of the row modulo the stride's period ``p`` (:func:`shift_period`: 8
for an odd stride of 16-bit rows in 16-byte windows). So the groups are dealt the rows by classes modulo ``p``: group
``g`` takes rows ``c + p q`` of class ``c = g % p``, every ``G_c``-th of them from ``q = g // p`` (``G_c``: the groups
of class ``c``). Every row of a group has one ``lo``: its ``dw`` sums stay in the window's positions, ``w`` is staged
once at those positions (``row_chunks.load_at``), and the sums go to the workspace row at the columns they hold, element
by element, once. That needs the groups to cover the classes (:func:`_covered`: ``P >= p``, and the classes of as many
groups or of at least ``CLASS_GROUPS`` each). Where they do not and a group is a CTA or a cluster whose rows are copied
ahead, each group takes a run of the rows in class-major order instead (the rows of class 0, then of class 1, ...:
:func:`run_span`, :func:`run_place`), a few classes a run: at each change of class its sums go to its workspace row
(added to what the row holds from the run's earlier classes), ``w`` is staged at the new ``lo``, and a barrier of the
group orders those stores before the next adds at other positions. Else (several groups a CTA) the rows keep the narrow
chunks their stride allows. The chunks that hold a row's ends are copied by ``cp.async`` like the others
(``row_stage.Staged``'s ``straddle``: the start's whole, its elements before the row taken as 0 here; the end's zero-
filled past the row): loaded through registers, they held up every row (0.42 of the copy ceiling at bf16 4097 against
0.81; benchmarks/RESULTS.md)."""

from dataclasses import replace
from math import gcd

import cute_py as cute
from cute_py import arch

from .row_chunks import load_at, matrix_row, store_chunk, whole_chunks, window
from .row_reduce import (RowReduction, add, check_matrix, check_same_shape, check_vector, chunk_index,
                         chunk_inside, cluster_start, launch_rows, load_row, plan_rows, rearm, round_balance,
                         row_coords, row_reduce, row_vector, store_row, FLOATS, MAX_CLUSTER, TWO_INPUTS)
from .row_shift import plan_for
from .column_sum import COLUMN_LANES, COLUMN_SLICES, column_sum_kernel
from .row_math import dot_fma, fma_each
from .row_stage import Staged, staged_bytes, thread_slot, wait_staged
from .gemm_plan import cluster_capacity
from .tma_tiled import sm_count

__all__ = ["rmsnorm_backward", "rmsnorm_backward_kernel", "rmsnorm_workspace_rows", "backward_plan", "prefetch_depth",
           "shift_period", "class_walk", "class_row", "row_bound", "PREFETCH_SMEM", "SLAB_BALANCE"]


PREFETCH_SMEM = 225 * 1024  # shared memory a CTA of rmsnorm_backward may take with the next rows' buffers
SM_SMEM = 227 * 1024        # shared memory an SM gives its CTAs (sm_90)
CTA_SMEM_EXTRA = 3 * 1024   # a CTA's shared memory beside its buffers: the reductions' and the CTA's reserved KiB
SHORT_TWO_AHEAD_CHUNKS = 3  # short rows of 256 threads go two ahead where a thread keeps at most this many chunks


def prefetch_depth(plan, x, dy, w):
    """How many rows ahead :func:`rmsnorm_backward_kernel` copies each group's rows of ``x`` and ``dy`` into shared
    memory (``row_stage``) while it reduces and stores the current one: 2 where two buffers of both fit beside ``w``
    (kept in its own type) and the Float32 dw sums: for rows over a cluster in ``PREFETCH_SMEM``; for short rows
    of CTAs of 512 threads or whose threads keep at most 3 chunks, where the CTAs an SM (two of 256 threads, one of
    512) still fit an SM; else 1 where one buffer fits beside ``w`` and the sums in Float32; else 0 (loaded into
    registers at each row; Float32 rows of 512 threads). Measured (H200, bf16): two rows ahead 1.11x at 262144 and
    1.02x at 32768; short rows 1.09-1.13x at 2560, 5120 and 10240 (a last round half past the row's end), 1.04-1.06x
    at 12288, 1.02-1.03x at 16384, 0.99-1.01x at 1536, 3072 and 6144; at 4 chunks of 256 threads 0.96-0.99x (4096,
    7168) (benchmarks/RESULTS.md)."""
    row = staged_bytes(plan, x.element_type) + staged_bytes(plan, dy.element_type)
    acc = staged_bytes(plan, cute.Float32)
    two = staged_bytes(plan, w.element_type) + acc + 2 * row
    if plan.cluster > 1 and two <= PREFETCH_SMEM:
        return 2
    wide = plan.threads >= 512  # one CTA an SM
    if (plan.cluster == 1 and (plan.chunks <= SHORT_TWO_AHEAD_CHUNKS or wide) and
            (1 if wide else 2) * (two + CTA_SMEM_EXTRA) <= SM_SMEM):
        return 2
    return 1 if 2 * acc + row <= PREFETCH_SMEM else 0


@cute.kernel
def rmsnorm_backward_kernel(dy, x, w, rstd, dx, ws, plan, period, runs):
    red = RowReduction(plan, 1, stages=2)
    smem = arch.SmemAllocator()
    depth = prefetch_depth(plan, x, dy, w)
    # this thread's elements of w (in its own type two rows ahead, else in Float32; at its rows' positions where they
    # are shifted) and of its dw partial sums, in shared memory (each thread its own)
    keep = cute.Layout(plan.chunks * plan.threads * plan.vec)
    w_s = smem.allocate_tensor(w.element_type if depth == 2 else cute.Float32, keep, 16)
    acc_s = smem.allocate_tensor(cute.Float32, keep, 16)
    g, t, rank = row_coords(plan)  # g: this group's workspace row
    m = x.shape[0]
    units = ws.shape[0]
    mine = g < units
    if cute.const_expr(runs):
        first, end = run_span(g, units, m)  # the group's run of rows in class-major order
    else:
        walk = class_walk(g, units, period)  # the group's class of rows, its place and the class's groups

    def row_of(q):                       # the group's row q (past the matrix after its last)
        if cute.const_expr(runs):
            return cute.where(first + q < end, run_place(first + q, m, period)[0], m)
        if cute.const_expr(period == 1):
            return g + q * units
        return class_row(walk, q, period)

    def lo_of(r):                        # where row r starts past its window's boundary
        return window(matrix_row(x, cute.min(r, m - 1), plan))[1]
    bufs = []
    for d in cute.range_constexpr(depth):  # the group's first rows, copied while w is stored
        head = cute.where(mine and row_of(d) < m, row_of(d), m - 1)
        bufs.append((Staged(plan, x.element_type, straddle=True).load(matrix_row(x, head, plan), t, rank),
                     Staged(plan, dy.element_type, straddle=True).load(matrix_row(dy, head, plan), t, rank)))
        arch.cp_async_commit_group()
    cluster_start(plan)
    tx, _, _ = arch.thread_idx()
    # every row of the group's class (of its run's first class) starts lo elements past its window's boundary (0 for
    # rows that are not shifted)
    lo = lo_of(row_of(0) if cute.const_expr(runs) else walk[0])
    if cute.const_expr(plan.shifted):
        _stage_w(w, w_s, acc_s, plan, t, rank, tx, lo)
    else:
        wv = load_row(w, plan, t, rank)
        for k in cute.range_constexpr(plan.chunks):
            thread_slot(w_s, plan, k, tx).store(wv[k].to(w_s.element_type))  # exact: w's own values
            thread_slot(acc_s, plan, k, tx).fill(0.0)
    if cute.const_expr(plan.cluster > 1):
        arch.cluster_wait()
    if cute.const_expr(runs):  # (class, its first place, the next class's) of the row and of the row depth ahead
        c0 = run_place(first, m, period)[1]
        here = class_places(c0, m, period)
        there = class_places(run_place(first + depth, m, period)[1], m, period)
    most = -(-m // units) if cute.const_expr(runs) else _most_rows(m, units, period)
    for i in range(-(-most // 2)):
        for half in cute.range_constexpr(2):
            q = 2 * i + half
            nxt = bufs[half % depth] if cute.const_expr(depth > 0) else None
            if cute.const_expr(not runs):
                ahead = None if cute.const_expr(period == 1) else row_of(q + depth)
                r, row_lo = row_of(q), lo
            else:  # a row of the next class: the sums so far to the workspace, w at its lo
                was = here[0]
                here, r = next_place(here, first + q, end, m, period)
                there, ahead = next_place(there, first + q + depth, end, m, period)
                row_lo = lo_of(r)
                if was != here[0] and r < m:
                    _store_sums(ws, g, acc_s, plan, t, rank, tx, lo_of(was), was != c0)
                    _stage_w(w, w_s, acc_s, plan, t, rank, tx, row_lo, True)
                    _sync_group(plan)  # every thread's sums stored before any adds to them at other positions
            _backward_row(dy, x, rstd, dx, w_s, acc_s, red, nxt, depth, (r, ahead, row_lo, units), mine, t, rank,
                          half, i % 2)
    if g < units:
        if cute.const_expr(runs):
            last = run_place(cute.max(end - 1, first), m, period)[1]
            _store_sums(ws, g, acc_s, plan, t, rank, tx, lo_of(last), last != c0)
        else:
            _store_sums(ws, g, acc_s, plan, t, rank, tx, lo)


def _sync_group(plan):
    """A barrier of the group's threads (a cluster's, or a CTA's of one group), ordering their memory accesses."""
    if cute.const_expr(plan.cluster > 1):
        arch.cluster_sync()
    else:
        arch.sync_threads()


def _stage_w(w, w_s, acc_s, plan, t, rank, tx, lo, narrow=False):
    """This thread's chunks of ``w`` at the positions of rows that start ``lo`` past their window's boundary into
    its slots of ``w_s``, and its ``dw`` sums to 0; ``narrow``: ``w`` read element by element (``load_at``'s)."""
    for k in cute.range_constexpr(plan.chunks):
        frag = cute.make_rmem_tensor((plan.vec,), w.element_type)
        load_at(w, lo, chunk_index(plan, k, t, rank), plan.vec, plan.n, frag, 0.0, plan.full(k), narrow)
        thread_slot(w_s, plan, k, tx).store(frag.load().to(w_s.element_type))
        thread_slot(acc_s, plan, k, tx).fill(0.0)


def class_walk(g, units, period):
    """``(c, j, G_c)`` of group ``g`` of ``units``: its class of rows ``c = g % period``, its place ``j = g //
    period`` among the ``G_c`` groups of the class (see the module); ints, or Int32 in a kernel."""
    cls, j = g % period, g // period
    return cls, j, (units - 1 - cls) // period + 1


def class_row(walk, q, period):
    """Row ``q`` (from 0; past the matrix after its last) of the group of :func:`class_walk` ``walk``: ``c + period *
    (j + G_c * q)``."""
    cls, j, groups = walk
    return cls + period * (j + groups * q)


def run_span(g, units, m):
    """``(first, end)``: group ``g``'s run of the ``m`` rows in class-major order (see the module), ``ceil(m /
    units)`` or ``floor(m / units)`` of them; ints, or Int32 in a kernel."""
    a, b = m // units, m % units
    first = g * a + cute.min(g, b)
    return first, first + a + cute.where(g < b, 1, 0)


def run_place(s, m, period):
    """``(row, class)`` of place ``s`` of the ``m`` rows in class-major order: the rows of class ``c`` (``r %
    period == c``) in turn, each class's in increasing order (``m // period`` rows a class, one more for the first
    ``m % period``)."""
    a, b = m // period, m % period
    big = b * (a + 1)  # the places of the classes of a + 1 rows
    cls = cute.min(s, big) // (a + 1) + cute.max(s - big, 0) // cute.max(a, 1)
    return cls + period * (s - cls * a - cute.min(cls, b)), cls


def class_places(cls, m, period):
    """``(cls, the place of its first row, the place of the next class's first row)`` in the class-major order of
    :func:`run_place` (multiplications only)."""
    a, b = m // period, m % period
    return cls, cls * a + cute.min(cls, b), (cls + 1) * a + cute.min(cls + 1, b)


def next_place(state, s, end, m, period):
    """``(state, row)`` at place ``s``, one past the place of ``state`` (:func:`class_places`), or at it: the next
    class where ``s`` is its first place; the row at ``s`` (``m`` from ``end`` on). A kernel's walk along its run
    without a division a row (:func:`run_place`'s two)."""
    cls, base, nxt = state
    a, b = m // period, m % period
    moved = s >= nxt
    state = (cute.where(moved, cls + 1, cls), cute.where(moved, nxt, base),
             cute.where(moved, nxt + a + cute.where(cls + 1 < b, 1, 0), nxt))
    return state, cute.where(s < end, state[0] + period * (s - state[1]), m)


def _most_rows(m, units, period):
    """The most rows of ``m`` a group of ``units`` takes (``units >= period``)."""
    return -(-(-(-m // period)) // (units // period))


def row_bound(m, units, period, runs=False):
    """An upper bound of every row number the groups compute (their rows, two a step, and those copied up to two
    ahead; with ``runs``, of every place in class-major order too): the kernel's Int32 row numbers hold below
    ``2**31`` where this does."""
    if runs:
        return m + 4 * period + 4
    return period * (-(-units // period)) * (_most_rows(m, units, period) + 3) + period


@cute.jit
def _store_sums(ws, g, acc_s, plan, t, rank, tx, lo, add=False):
    """The group's ``dw`` sums into its workspace row ``g``: by :func:`row_reduce.store_row`, or for shifted rows
    (sums at the window's positions, ``lo`` past each column) element by element, each at its column, added to the
    row's values where ``add`` (a run's later class: the row holds its earlier classes' sums)."""
    sums = [thread_slot(acc_s, plan, k, tx) for k in range(plan.chunks)]
    if cute.const_expr(not plan.shifted):
        store_row(ws[g, None], plan, t, rank, [a.load() for a in sums])
    else:
        for k in cute.range_constexpr(plan.chunks):
            first = chunk_index(plan, k, t, rank) * plan.vec - lo
            for e in cute.range_constexpr(plan.vec):
                if first + e >= 0 and first + e < plan.n:
                    if add:
                        ws[g, first + e] = ws[g, first + e] + sums[k][e]
                    else:
                        ws[g, first + e] = sums[k][e]


@cute.jit
def _backward_row(dy, x, rstd, dx, w_s, acc_s, red, nxt, depth, rows, mine, t, rank, slot, phase):
    """Row ``r`` of the group (``rows``: ``(r, the group's row depth rows ahead or None for r + depth * units, lo,
    units)``; ``mine``: the group has a workspace row); ``nxt``: the shared-memory buffers holding this row's ``x``
    and ``dy``, loaded here with the row ahead once this row's are read (``None``: loaded into registers from global
    memory). A chunk that may lie past the row's end (``plan.full``) is reduced, stored and summed into ``dw`` only
    where it holds elements of the row: a row just past a power of two leaves most of its last round of chunks
    empty, and the kernel's time goes with the instructions of the chunks it works on."""
    plan = red.plan
    r, ahead, lo, units = rows
    m = x.shape[0]
    tx, _, _ = arch.thread_idx()
    valid = mine and r < m
    rr = cute.where(valid, r, m - 1)
    full = [k for k in range(plan.chunks) if plan.full(k)]
    if cute.const_expr(nxt is not None):
        wait_staged(depth - 1)  # this row's copies; the next rows' may still be in flight
        # chunks inside the row as Float32 now, the others in their own type until known to hold elements
        xs, gs = ([b.raw(k).to(cute.Float32) if k in full else b.raw(k) for k in range(plan.chunks)] for b in nxt)
    else:
        xs = load_row(matrix_row(x, rr, plan), plan, t, rank)
        gs = load_row(matrix_row(dy, rr, plan), plan, t, rank)
    inv = rstd[rr]
    def part(v, k):  # a chunk that may hold one of the row's ends, as Float32 (0 outside the row)
        if cute.const_expr(nxt is None or k * plan.group >= plan.shifted):  # no chunk of the window's first
            return v[k].to(cute.Float32)  # (0 outside the row: filled, or zero-filled past its end as copied)
        return _from_start(v[k], chunk_index(plan, k, t, rank), lo, plan)
    s = dot_fma([(gs[k] * _w(w_s, plan, k, tx), xs[k]) for k in full]) if full else cute.Float32(0.0)
    for k in cute.range_constexpr(plan.chunks):
        if cute.const_expr(not plan.full(k)):
            if chunk_inside(plan, k, t, rank, lo):
                s = s + dot_fma([(part(gs, k) * _w(w_s, plan, k, tx), part(xs, k))])
    if cute.const_expr(nxt is not None):  # the buffers are read (xs and gs hold every value): copy the next rows in
        if cute.const_expr(ahead is None):  # (every group's rows P apart)
            ahead = r + depth * units
        ar = cute.where(mine and ahead < m, ahead, m - 1)
        nxt[0].load(matrix_row(x, ar, plan), t, rank)
        nxt[1].load(matrix_row(dy, ar, plan), t, rank)
        arch.cp_async_commit_group()
    (dot,) = row_reduce((s,), add, red, slot, phase, False)
    if cute.const_expr(plan.cluster > 1):
        rearm(red, slot)
    c = dot * inv * inv / plan.n
    if valid:
        _backward_chunks(matrix_row(dx, r, plan), plan, full, t, rank, tx, w_s, acc_s, xs, gs, c, inv)
    for k in cute.range_constexpr(plan.chunks):
        if cute.const_expr(not plan.full(k)):
            if valid and chunk_inside(plan, k, t, rank, lo):
                _backward_chunks(matrix_row(dx, r, plan), plan, [k], t, rank, tx, w_s, acc_s, {k: part(xs, k)},
                                 {k: part(gs, k)}, c, inv)


def _from_start(v, chunk, lo, plan):
    """A chunk that may hold a shifted row's start as Float32 TensorSSA, 0 before the row (``Staged``'s ``straddle``
    copies the elements before it whole)."""
    v = v.to(cute.Float32)
    if cute.const_expr(not plan.shifted):
        return v
    frag = cute.make_rmem_tensor((plan.vec,), cute.Float32)
    for e in cute.range_constexpr(plan.vec):
        frag[e] = cute.where(chunk * plan.vec + e >= lo, v[e], 0.0)
    return frag.load()


def _backward_chunks(row, plan, ks, t, rank, tx, w_s, acc_s, xs, gs, c, inv):
    """Chunks ``ks`` of ``row`` (of ``dx``, as ``row_chunks.matrix_row`` gives it) stored (each inside the row), then
    their products added into the thread's ``dw`` sums."""
    vals = {k: fma_each(xs[k], -c, gs[k] * _w(w_s, plan, k, tx)) * inv for k in ks}
    for k in ks:
        out = cute.make_rmem_tensor((plan.vec,), row.element_type)
        out.store(vals[k].to(row.element_type))
        store_chunk(row, chunk_index(plan, k, t, rank), plan.vec, plan.n, out,
                    plan.full(k) or whole_chunks(plan.n, plan.vec, row))
    for k in ks:
        a = thread_slot(acc_s, plan, k, tx)
        a.store(fma_each(gs[k] * xs[k], inv, a.load()))


def _w(w_s, plan, k, tx):
    """This thread's chunk ``k`` of ``w`` from its shared-memory slots, as Float32 TensorSSA."""
    return thread_slot(w_s, plan, k, tx).load().to(cute.Float32)


def rmsnorm_workspace_rows(m, n, sms=None, ctas_per_sm=2):
    """A good number of workspace rows ``P`` for :func:`rmsnorm_backward` on ``m`` rows of ``n``: the groups that
    run at once. For rows over a cluster, the clusters of CTAs of 512 threads (one an SM) the device holds at once
    (``gemm_plan.cluster_capacity``; an H200 holds 66 clusters of 2, 30 of 4, 15 of 8 and 7 of 16): a group more
    would start a second wave for a few clusters. Else about ``ctas_per_sm`` CTAs on each of ``sms`` SMs (the
    device's by default), at most one row each. Any ``P >= 1`` is correct (rows of odd stride move in wide chunks
    where ``P`` covers the classes of their starts, or a group is a CTA or a cluster: see the module). Measured
    (H200), one wave of clusters against two CTAs an SM's worth: bf16 0.68 -> 0.89 of the copy ceiling at 262144,
    0.63 -> 0.83 at 131072, 0.64 -> 0.84 at 65536, 0.85 -> 0.88 at 32768; Float32 0.77 -> 0.82 at 262144
    (benchmarks/RESULTS.md)."""
    plan = backward_plan("rmsnorm_workspace_rows", n, 4)
    if plan.cluster > 1:
        return max(1, min(m, cluster_capacity(plan.cluster)))
    sms = sm_count() if sms is None else sms
    return max(1, min(m, sms * ctas_per_sm * plan.rows))


# RMSNorm backward's rows over a cluster split into even slabs (``RowPlan.slabs``) where the rounds of chunks load
# the most loaded CTA with more than 1 / SLAB_BALANCE times the mean (a partial last round falls on the first CTAs
# alone). Measured (H200, bf16, slabs over rounds, by the rounds' balance): 151936 (0.77) 1.077x, 110000 (0.84)
# 1.029x, 70000 (0.85) 1.111x; 40000 (0.86) 0.975x, 230000 (0.88) 0.999x, 100000 (0.89) 0.939x, 120000 (0.92)
# 0.941x, Float32 151936 (0.93) 0.971x (every CTA then works on a partial chunk; benchmarks/RESULTS.md)
SLAB_BALANCE = 0.86


def shift_period(window, stride):
    """Rows of a matrix of row stride ``stride`` start ``lo = (r * stride) % window`` elements past a boundary of
    ``window`` elements (``row_chunks.matrix_row``): ``lo`` repeats every ``window / gcd(stride, window)`` rows."""
    return window // gcd(stride % window, window)


def _window_chunks(shifted, vec, stride, units):
    """The chunks of the window boundary of shifted rows (``RowPlan.shifted``) for ``units`` groups: one for 16-bit
    rows (chunks of 8); else the most, up to ``shifted`` (``row_shift.shift_chunks``'), whose classes of rows
    (:func:`shift_period`) the groups cover as :func:`_takes_shifted` asks, or ``shifted`` where they cover none
    (the groups then take runs of rows: :func:`run_span`). Measured (H200, of the copy ceiling, the most against
    one): bf16 0.79 against 0.84 at 1031, 0.80 / 0.87 at 4097, 0.72 / 0.79 at 8193, equal at 12289 and 32001, in
    runs 0.66 / 0.68 at 50257, 0.53 / 0.58 at 151937; Float32 0.94 against 0.85 at 4097, equal at 32001, in runs
    0.91 / 0.86 at 50257 and 100003 (benchmarks/RESULTS.md)."""
    if vec == 8 or not shifted:
        return min(shifted, 1)  # (0: not shifted)
    least = shifted
    while least > 1 and not _covered(shift_period(least * vec, stride), units):
        least //= 2
    return least if _covered(shift_period(least * vec, stride), units) else shifted


def _covered(period, units):
    """Whether ``units`` groups cover ``period`` classes of rows: each a group, and each as many or at least
    ``CLASS_GROUPS``."""
    return period <= units and (units % period == 0 or units // period >= CLASS_GROUPS)


def _takes_shifted(plan, stride, units, depth):
    """Whether :func:`rmsnorm_backward` takes the shifted ``plan`` for ``units`` groups (``row_shift.plan_for``'s
    ``takes``): where the groups cover the classes of rows (:func:`_covered`), each group its class; else where a group
    is a CTA or a cluster (``plan.rows == 1``, whose threads meet at a barrier) and its rows are copied ahead
    (``depth``: :func:`prefetch_depth`; in registers, bf16 262143 ran 0.35 against 0.40 narrow), each group its run of
    rows in class-major order (:func:`run_span`). Dealt by class where the groups do not cover the classes, a class of
    fewer groups than others held up the kernel (100003 bf16, 15 groups of 8 classes, 0.41 of the copy ceiling against
    0.44 narrow; 50257, 30 groups, 0.40 against 0.45; 32001, 66 groups, 0.92 against 0.50; RESULTS.md)."""
    return _covered(shift_period(plan.window, stride), units) or (plan.rows == 1 and depth > 0)


CLASS_GROUPS = 8  # the fewest groups of a class of shifted rows where the classes have not as many


def backward_plan(what, n, vec, shifted=0):
    """The plan of :func:`rmsnorm_backward_kernel` for rows of ``n`` elements in chunks of ``vec``: ``plan_rows``'s
    at ``TWO_INPUTS`` values a thread; over a cluster (CTAs of 512 threads, one an SM), the cluster of the sizes
    from that plan's to 16 that keeps the most SMs busy (clusters held at once times their CTAs,
    ``gemm_plan.cluster_capacity``) among those the device holds as many of as of that plan's (the groups in
    flight), the smaller on ties; each thread then takes fewer chunks, and where the rounds of chunks would load the
    CTAs unevenly (``SLAB_BALANCE``), each CTA takes an even slab of the row. A cluster lies within a GPC, so
    clusters of 7 or 10 leave SMs idle that 8 or 16 keep busy. Measured (H200, bf16, of the copy ceiling): 100000
    7 -> 8 CTAs 0.78 -> 0.87; 151936 10 -> 16 0.57 -> 0.70; at 70000 (5 CTAs, 22 held) 6 and 8 (17 and 15 held) 0.77
    and 0.68 against 0.79 (benchmarks/RESULTS.md). ``shifted``: the plan of shifted rows (``RowPlan.shifted``)."""
    plan = plan_rows(what, n, vec, TWO_INPUTS, shifted=shifted)
    if plan.cluster == 1:
        return plan
    held = cluster_capacity(plan.cluster)
    sizes = [c for c in range(plan.cluster, MAX_CLUSTER + 1) if cluster_capacity(c) >= held]
    best = max(sizes, key=lambda c: c * cluster_capacity(c))  # the first of the largest: the smaller on ties
    nv = -(-plan.span // vec)
    rounds = replace(plan, cluster=best, chunks=-(-nv // (plan.group * best)))
    return replace(rounds, slabs=round_balance(rounds) < SLAB_BALANCE)


@cute.jit
def rmsnorm_backward(dy, x, w, rstd, dx, dw, workspace):
    """The gradients of :func:`rmsnorm_forward`: ``dx`` (``x``'s shape) and ``dw`` (1-D of ``n``, any float type)
    from ``dy``, ``x``, ``w`` and the forward's ``rstd``; ``workspace``: Float32 (P, n), P >= 1 (see
    :func:`rmsnorm_workspace_rows`), overwritten with per-group partial sums of ``dw``."""
    what = "rmsnorm_backward"
    m, n = check_matrix(what, "x", x)
    check_same_shape(what, "dy", dy, (m, n))
    check_same_shape(what, "dx", dx, (m, n))
    check_vector(what, "w", w, n)
    check_vector(what, "dw", dw, n, FLOATS)
    check_vector(what, "rstd", rstd, m, ("Float32",))
    units, wn = check_matrix(what, "workspace", workspace, ("Float32",))
    if wn != n:
        raise cute.CuteValueError(f"{what}: workspace must have {n} columns (P, {n}), got the shape {(units, wn)}")
    # rows of odd stride as shifted rows, where every class of their starts has a group (see the module)
    stride = x.layout.stride[0]
    plan = plan_for((dy, x, dx), lambda vec, shifted: backward_plan(what, n, vec, _window_chunks(shifted, vec, stride,
                                                                                                   units)),
                    takes=lambda p: _takes_shifted(p, stride, units, prefetch_depth(p, x, dy, w)),
                    narrow=(dy, x, dx, w, workspace))
    period = shift_period(plan.window, stride) if plan.shifted else 1
    runs = period > 1 and not _covered(period, units)
    if row_bound(m, units, period, runs) >= 2 ** 31:
        raise cute.CuteValueError(f"{what}: the groups number their rows in Int32, up to about rows + 3 x workspace "
                                  f"rows (two a step and two copied ahead; norm_backward.row_bound): {m} rows and "
                                  f"{units} workspace rows pass 2**31 - 1")
    launch_rows(rmsnorm_backward_kernel(dy, x, w, rstd, dx, workspace, plan, period, runs), plan,
                -(-units // plan.rows) * plan.cluster, False)
    vec = row_vector((workspace, dw))
    column_sum_kernel(workspace, dw, vec).launch(grid=-(-n // (COLUMN_LANES * vec)),
                                                 block=COLUMN_LANES * COLUMN_SLICES)

