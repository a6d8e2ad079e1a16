"""Plans of the row kernels (examples/norms.py, softmax_rows.py) that follow from how many CTAs share an SM or a
GPC:

- LayerNorm's 16-bit rows of one CTA whose threads keep fewer than 8 chunks stage ``w`` and ``b`` once a CTA and
  ask for 3 or 4 CTAs an SM (``layernorm_shared_wb_ctas``). Loaded after the reductions, ``w`` and ``b`` held the
  kernel at 96-128 registers, two CTAs an SM: 0.75-0.86 of the copy ceiling at 2560-14336 against 0.95-0.98 staged
  (H200, benchmarks/RESULTS.md).
- RMSNorm's backward widens its cluster to the one that keeps the most SMs busy at as many groups in flight
  (``backward_plan``): a cluster lies within a GPC, and an H200 holds 15 clusters of 7 or of 8, 7 of 10 or of 16;
  its short rows are copied two rows ahead where its CTAs still fit an SM (``prefetch_depth``), and a row whose
  rounds of chunks would load the cluster's CTAs unevenly is split into even slabs (``SLAB_BALANCE``).
- RMSNorm's forward and the softmax backward ask for 3 (2) CTAs an SM at short 16-bit rows of few chunks a thread
  (``rmsnorm_ctas_per_sm``, ``softmax_rows.backward_ctas_per_sm``), where the bounded registers do not spill.
"""

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
import examples as ex
import examples.gemm_plan as gp
from examples.norms import LAYERNORM_SHARED_CHUNKS, layernorm_shared_wb_ctas
from examples.norm_backward import SLAB_BALANCE, backward_plan
from examples.row_reduce import MAX_CLUSTER, ONE_INPUT, TWO_INPUTS, RowPlan, chunk_index, plan_rows, round_balance
from _cubin_report import cubin_resources

F = cute.compiler.DeviceArraySpec


def _layernorm(dtype, n, m=64):
    x, v, s = F(dtype, (m, n), (n, 1)), F(dtype, (n,)), F("Float32", (m,))
    return cute.compile(ex.layernorm_forward, x, v, v, x, s, s, 1e-5)


@pytest.mark.parametrize("n, chunks, ctas", [(640, 5, 4), (2560, 5, 4), (5120, 5, 4), (6144, 6, 3), (7168, 7, 3),
                                             (12288, 6, 3), (14336, 7, 3)])
def test_layernorm_stages_w_and_b_once_a_cta_where_threads_keep_fewer_than_8_chunks(n, chunks, ctas, assemble):
    plan = plan_rows("t", n, 8, ONE_INPUT)
    assert plan.cluster == 1 and plan.chunks == chunks
    c = _layernorm("BFloat16", n)
    ptx = c.ptx
    # each chunk of w and b copied by cp.async (by one row group where a CTA holds several rows: the compiler may
    # merge two groups' copies into one with selected addresses), before the row's first reduction
    copies = len(re.findall(r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16;", ptx))
    assert chunks <= copies <= 2 * chunks, copies
    assert ptx.index("cp.async.cg") < ptx.index("shfl.sync") < ptx.index("cp.async.wait_group")
    assert f".minnctapersm {ctas}" in ptx and c.launches[0].block == (256, 1, 1)
    regs, frame = cubin_resources(c.cubin)[c.launches[0].name]
    assert regs * 256 * ctas <= 65536   # the CTAs asked for fit the SM's registers
    # (at 4 CTAs ptxas spills a few registers at some lengths: measured faster all the same)
    assert frame <= (16 if ctas == 4 else 8), frame
    assemble(ptx)


@pytest.mark.parametrize("dtype, n", [("BFloat16", 4096), ("BFloat16", 16384), ("BFloat16", 1024),
                                      ("BFloat16", 256), ("Float32", 5120), ("Float32", 12288)])
def test_layernorm_keeps_w_and_b_out_of_shared_memory_at_8_chunks_and_in_float32(dtype, n):
    c = _layernorm(dtype, n)
    assert "cp.async" not in c.ptx and ".minnctapersm 2" in c.ptx


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 262144), st.sampled_from([1, 2, 4, 8]), st.sampled_from(["BFloat16", "Float16", "Float32"]))
def test_the_shared_w_and_b_rule_holds_for_every_plan(n, vec, dtype):
    plan = plan_rows("t", n, vec, ONE_INPUT)
    ctas = layernorm_shared_wb_ctas(plan, getattr(cute, dtype))
    shared = plan.cluster == 1 and dtype != "Float32" and plan.chunks < LAYERNORM_SHARED_CHUNKS
    assert ctas == ((4 if plan.chunks <= 5 else 3) if shared else 0), (plan, dtype, ctas)


@pytest.fixture
def h200(monkeypatch):
    monkeypatch.setattr(gp, "_capacity", lambda size, sms: gp.H200_CLUSTERS[size])


@pytest.mark.parametrize("n, smallest, cluster", [
    (4096, 1, 1), (32768, 2, 2), (65536, 4, 4), (70000, 5, 5),     # 22 clusters of 5 held: none larger holds as many
    (100000, 7, 8), (110000, 7, 8), (120000, 8, 8),                 # 15 of 7 or 8: 105 -> 120 SMs
    (135000, 9, 9),                                                  # 9 of 9; 7 of anything larger
    (151936, 10, 16), (200000, 13, 16), (262144, 16, 16)])          # 7 of 10..16: 70 -> 112 SMs
def test_rmsnorm_backward_widens_its_cluster_at_an_h200s_capacities(h200, n, smallest, cluster):
    for vec in (8, 4, 1):
        base, plan = plan_rows("t", n, vec, TWO_INPUTS), backward_plan("t", n, vec)
        assert base.cluster == smallest and plan.cluster == cluster, (vec, base, plan)
        assert plan.chunks * plan.vec * plan.group * plan.cluster >= n
    assert ex.rmsnorm_workspace_rows(10 ** 6, n) == (gp.H200_CLUSTERS[cluster] if cluster > 1 else
                                                     ex.rmsnorm_workspace_rows(10 ** 6, n))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 262144), st.sampled_from([1, 2, 4, 8]),
       st.lists(st.integers(1, 132), min_size=MAX_CLUSTER, max_size=MAX_CLUSTER))
def test_the_widened_cluster_holds_the_row_and_keeps_at_least_as_many_sms_and_groups(n, vec, held):
    """Over any device's capacities: the widened plan still holds the row in no more chunks a thread, keeps as many
    groups in flight and at least as many SMs busy, and no cluster of the allowed sizes keeps more busy."""
    cap = {size: held[size - 1] for size in range(1, MAX_CLUSTER + 1)}
    real = gp._capacity
    gp._capacity = lambda size, sms: cap[size]
    try:
        base, plan = plan_rows("t", n, vec, TWO_INPUTS), backward_plan("t", n, vec)
    finally:
        gp._capacity = real
    assert (plan.n, plan.vec, plan.group, plan.rows) == (base.n, base.vec, base.group, base.rows)
    assert plan.chunks * plan.vec * plan.group * plan.cluster >= n and plan.chunks <= base.chunks
    if base.cluster == 1:
        assert plan == base
        return
    assert base.cluster <= plan.cluster <= MAX_CLUSTER and cap[plan.cluster] >= cap[base.cluster]
    allowed = [c for c in range(base.cluster, MAX_CLUSTER + 1) if cap[c] >= cap[base.cluster]]
    assert plan.cluster * cap[plan.cluster] == max(c * cap[c] for c in allowed)
    assert plan.cluster == min(c for c in allowed if c * cap[c] == plan.cluster * cap[plan.cluster])
    nv = -(-n // vec)
    rounds = RowPlan(n, vec, base.group, base.rows, plan.cluster, -(-nv // (base.group * plan.cluster)))
    assert plan == replace(rounds, slabs=round_balance(rounds) < SLAB_BALANCE)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 100000), st.sampled_from([2, 4, 8]), st.sampled_from([128, 512]), st.integers(2, 16))
def test_the_round_balance_counts_each_ctas_chunks_of_the_row(n, vec, group, cluster):
    """``round_balance``: the mean over the most of the chunks inside the row each CTA takes, counted by
    ``chunk_index`` (rounds of chunks, no slabs); 1.0 exactly where the last round is whole."""
    nv = -(-n // vec)
    plan = RowPlan(n, vec, group, 1, cluster, -(-nv // (group * cluster)))
    per = [sum(1 for k in range(plan.chunks) for t in range(group) if chunk_index(plan, k, t, r) < nv)
           for r in range(cluster)]
    assert round_balance(plan) == pytest.approx(sum(per) / cluster / max(per), rel=1e-12)
    assert (round_balance(plan) == 1.0) == (len(set(per)) == 1)


@pytest.mark.parametrize("n, slabs", [(151936, True), (110000, True), (70000, True), (40000, False),
                                      (100000, False), (120000, False), (230000, False), (262144, False)])
def test_rmsnorm_backward_splits_a_row_into_even_slabs_where_its_rounds_load_the_ctas_unevenly(h200, n, slabs):
    """bf16 rows over a cluster: even slabs where the rounds of chunks give the most loaded CTA more than 1 / 0.86
    times the mean (measured faster at 151936, 110000 and 70000; slower at 40000 and 100000-151936 Float32)."""
    plan = backward_plan("t", n, 8)
    assert plan.cluster > 1 and plan.slabs is slabs and SLAB_BALANCE == 0.86


def test_rmsnorm_backward_launches_the_widened_cluster(h200, assemble):
    n, m = 151936, 8
    x, v = F("BFloat16", (m, n), (n, 1)), F("BFloat16", (n,))
    c = cute.compile(ex.rmsnorm_backward, x, x, v, F("Float32", (m,)), x, v, F("Float32", (7, n)))
    main = c.launches[0]
    assert main.cluster == (16, 1, 1) and main.non_portable_cluster and main.block == (512, 1, 1)
    assert main.grid == (7 * 16, 1, 1)
    assert cubin_resources(c.cubin)[main.name][1] == 0
    assemble(c.ptx)


SM_SHARED = 228 * 1024   # an SM's shared memory; each CTA reserves 1 KiB of it


@pytest.mark.parametrize("n, depth", [(2560, 2), (3072, 2), (4096, 1), (5120, 2), (7168, 1), (8192, 1), (10240, 2),
                                      (12288, 2), (16384, 2)])
def test_rmsnorm_backward_copies_short_rows_two_ahead_where_its_ctas_still_fit_an_sm(n, depth):
    """Short rows (one CTA a row) of CTAs of 512 threads or whose threads keep at most 3 chunks are copied two rows
    ahead, where the kernel's shared memory with two buffers still lets its CTAs share an SM (two of 256 threads,
    one of 512): measured 1.09-1.13x at 2560, 5120 and 10240, 1.02-1.06x at 12288 and 16384; at 4 chunks of 256
    threads 0.96-0.99x (4096, 7168)."""
    import examples.norm_backward as norms

    def build():
        m = 64
        x, v = F("BFloat16", (m, n), (n, 1)), F("BFloat16", (n,))
        return cute.compile(ex.rmsnorm_backward, x, x, v, F("Float32", (m,)), x, v, F("Float32", (8, n)))
    c = build()
    main = c.launches[0]
    assert main.cluster == (1, 1, 1)
    ctas = 1 if main.block[0] >= 512 else 2
    plan = norms.backward_plan("t", n, 8)
    assert ("cp.async.wait_group \t1;" in c.ptx) == (depth == 2) == (plan.chunks <= 3 or plan.threads == 512)
    if depth == 2:   # the CTAs an SM still fit with two buffers
        assert ctas * (c.smem[main.name] + 1024) <= SM_SHARED, (c.smem, ctas)


@pytest.mark.parametrize("n, rms, soft", [(3072, 3, None), (6144, 3, None), (7168, 2, None), (10240, 3, 2),
                                          (12288, 3, 2), (14336, 2, None), (16384, 2, None), (4096, 2, None)])
def test_short_16_bit_rows_ask_for_more_ctas_an_sm_where_they_fit_without_spilling(n, rms, soft):
    """RMSNorm's forward (256 threads) at 6 chunks or fewer asks for 3 CTAs an SM, the softmax backward (512
    threads) at 3 chunks or fewer for 2: each fits the registers it is then given without spilling; at more chunks
    they are left as they were (measured slower bounded: they spill)."""
    from examples.norms import rmsnorm_ctas_per_sm
    from examples.softmax_rows import backward_ctas_per_sm
    m = 64
    x, v = F("BFloat16", (m, n), (n, 1)), F("BFloat16", (n,))
    c = cute.compile(ex.rmsnorm_forward, x, v, x, F("Float32", (m,)))
    d = cute.compile(ex.softmax_backward, x, x, x)
    assert f".minnctapersm {rms}" in c.ptx
    assert (f".minnctapersm {soft}" in d.ptx) if soft else ".minnctapersm" not in d.ptx
    for k, ctas in ((c, rms), (d, soft or 1)):
        regs, frame = cubin_resources(k.cubin)[k.launches[0].name]
        assert regs * k.launches[0].block[0] * ctas <= 65536 and frame == 0, (regs, frame)
    bf, f32 = cute.BFloat16, cute.Float32
    assert rmsnorm_ctas_per_sm(plan_rows("t", n, 4, ONE_INPUT), f32) is None
    assert backward_ctas_per_sm(plan_rows("t", n, 4, TWO_INPUTS), f32) is None
    assert (rmsnorm_ctas_per_sm(plan_rows("t", n, 8, ONE_INPUT), bf) or 2) == rms


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300000), st.sampled_from([1, 2, 4, 8]), st.sampled_from(["BFloat16", "Float16", "Float32"]),
       st.sampled_from([0, 8]), st.sampled_from([128, 160]))
def test_the_halves_plan_holds_every_row_or_refuses_it_as_plan_rows_does(n, vec, dtype, shifted, wide):
    """Over arbitrary lengths (past the longest row too), vectors, types, shifted rows and ``wide`` (cross-entropy's
    128, softmax's 160): ``halves_plan`` refuses exactly the rows ``plan_rows`` refuses, with its message; else its
    plan holds the row (its span) in at most 16 CTAs, and it is the plan at 80 values a thread (at most ``wide``)
    only where both plans stage by halves (never a plan that stages by halves from one that did not)."""
    from examples.row_stage import HALVES_VALUES, halves_plan, staged_halves
    t = getattr(cute, dtype)
    try:
        first = plan_rows("ce", n, vec, ONE_INPUT, wide=2 * ONE_INPUT, shifted=shifted)
    except cute.CuteValueError as e:
        with pytest.raises(cute.CuteValueError, match=re.escape(str(e))):
            halves_plan("ce", n, vec, t, shifted, wide)
        return
    plan = halves_plan("ce", n, vec, t, shifted, wide)
    assert plan.chunks * plan.vec * plan.group * plan.cluster >= plan.span >= n and plan.cluster <= MAX_CLUSTER
    more = plan_rows("ce", n, vec, HALVES_VALUES, wide=wide, shifted=shifted)
    assert plan == (more if staged_halves(first, t) and staged_halves(more, t) else first)
    assert staged_halves(plan, t) == staged_halves(first, t)
    if staged_halves(plan, t):  # a staged thread takes at most ``wide`` values, in CTAs of 128 threads past 10 chunks
        assert plan.chunks * vec <= wide and (plan.chunks * vec <= HALVES_VALUES or plan.group == 128)


@settings(max_examples=300, deadline=None)
@given(stride=st.integers(1, 10 ** 6), units=st.integers(1, 2000), vec=st.sampled_from([4, 8]),
       chunks=st.sampled_from([1, 2, 4, 8]))
def test_the_backwards_window_gives_every_class_of_row_starts_its_groups(stride, units, vec, chunks):
    """Rows of stride ``stride`` start ``(r * stride) % window`` past a window's boundary, a function of ``r`` modulo
    ``shift_period``; the window ``_window_chunks`` picks is one chunk of 8 (16-bit rows), else the largest up to
    ``chunks`` whose classes the groups cover (``_covered``), or ``chunks`` where they cover none."""
    from examples.norm_backward import _covered, _window_chunks, shift_period
    window = chunks * vec
    period = shift_period(window, stride)
    assert all((r * stride) % window == ((r + period) * stride) % window for r in range(3 * period))
    assert period == 1 or len({(r * stride) % window for r in range(period)}) == period  # the least such period
    s = _window_chunks(chunks, vec, stride, units)
    covered = [c for c in (1, 2, 4, 8) if c <= chunks and _covered(shift_period(c * vec, stride), units)]
    if vec == 8:
        assert s == 1
    elif not covered:
        assert s == chunks  # (the groups' runs of rows: the widest window)
    else:
        assert s == max(covered)
    assert _window_chunks(0, vec, stride, units) == 0  # rows that are not shifted stay so
    p = shift_period(s * vec, stride)
    assert _covered(p, units) == (p <= units and (units % p == 0 or units // p >= 8))


@pytest.mark.parametrize("dtype, n, units, shifted", [
    ("BFloat16", 4097, 1, True), ("BFloat16", 4097, 7, True), ("BFloat16", 4097, 8, True),
    ("BFloat16", 4097, 30, True), ("BFloat16", 4097, 73, True), ("BFloat16", 4097, 264, True),
    ("BFloat16", 32001, 66, True), ("BFloat16", 50257, 30, True), ("Float32", 4097, 4, True),
    ("Float32", 4097, 3, True), ("BFloat16", 1031, 7, False), ("BFloat16", 2049, 30, False),
    ("BFloat16", 2049, 32, True)])
def test_rmsnorm_backward_takes_shifted_rows_where_its_groups_cover_or_run_through_the_classes(dtype, n, units,
                                                                                               shifted, assemble):
    """Rows of odd stride move as shifted rows (16-byte ``cp.async`` copies, 16-byte stores of ``dx``, the chunk
    that holds a row's end copied with its bytes past the end zero-filled) where the workspace's groups cover the
    classes of row starts (8 for 16-bit rows, 4 for Float32, each as many or at least 8 groups), or where a group is
    a CTA or a cluster (rows of 4097 and more: each group's run of rows in class-major order); else (several groups
    a CTA: 1031 and 2049) the narrow chunks of their stride (no 16-byte access)."""
    m = 64
    x, v = F(dtype, (m, n), (n, 1)), F(dtype, (n,))
    c = cute.compile(ex.rmsnorm_backward, x, x, v, F("Float32", (m,)), x, v, F("Float32", (units, n)))
    wide = len(re.findall(r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16", c.ptx))
    zero_filled = len(re.findall(r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16, %r", c.ptx))
    assert (wide > 0) == (zero_filled > 0) == ("st.global.v4" in c.ptx) == shifted
    assert all(res[1] == 0 for res in cubin_resources(c.cubin).values())  # no stack: no spills
    assemble(c.ptx)


@settings(max_examples=200, deadline=None)
@given(m=st.integers(1, 3000), period=st.sampled_from([1, 2, 4, 8, 16, 32]), extra=st.integers(0, 300))
def test_the_groups_take_every_row_once_and_one_class_of_row_starts_each(m, period, extra):
    """``class_walk`` and ``class_row``: the ``units >= period`` groups, each walking ``_most_rows`` rows, take
    every row of ``m`` once, each group rows of its one class (``r % period``); every row number they compute (two a
    step, two copied ahead) lies below ``row_bound`` (the Int32 rule of ``rmsnorm_backward``)."""
    from examples.norm_backward import _most_rows, class_row, class_walk, row_bound
    units = period + extra
    most = _most_rows(m, units, period)
    steps = 2 * -(-most // 2)  # the kernel's loop: two rows a step
    seen = []
    for g in range(units):
        rows = [class_row(class_walk(g, units, period), q, period) for q in range(steps + 2)]
        assert max(rows) < row_bound(m, units, period)
        inside = [r for r in rows[:steps] if r < m]
        assert inside == [r for r in rows if r < m]  # the rows copied ahead past the steps lie past the matrix
        assert all(r % period == g % period for r in inside)
        seen += inside
    assert sorted(seen) == list(range(m))


@settings(max_examples=200, deadline=None)
@given(m=st.integers(1, 3000), period=st.sampled_from([2, 4, 8, 16, 32]), units=st.integers(1, 300))
def test_the_groups_runs_take_every_row_once_in_class_major_order(m, period, units):
    """``run_span`` and ``run_place``: the ``units`` groups' runs cut the places ``0 .. m`` into consecutive runs of
    ``floor`` or ``ceil(m / units)``; place ``s`` is row ``c + period * q`` of class ``c``, the classes in turn, each
    class's rows in increasing order, so every row once and a run's classes increasing; every place the kernel
    computes (its rows, two a step, two copied ahead) lies below ``row_bound``; ``next_place``'s walk from
    ``class_places`` gives ``run_place``'s rows, and ``m`` past the run."""
    from examples.norm_backward import class_places, next_place, row_bound, run_place, run_span
    spans = [run_span(g, units, m) for g in range(units)]
    assert spans[0][0] == 0 and spans[-1][1] == m
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert all(m // units <= end - first <= -(-m // units) for first, end in spans)
    order = [r for c in range(period) for r in range(c, m, period)]  # class-major order, written out
    assert [run_place(s, m, period) for s in range(m)] == [(r, r % period) for r in order]
    steps = 2 * -(-(-(-m // units)) // 2)
    for first, end in spans:
        places = [run_place(first + q, m, period)[0] for q in range(steps + 2)]
        assert max(places) < row_bound(m, units, period, runs=True)
        for ahead in range(3):  # the kernel's walk along the run, at its rows and at those copied ahead
            state = class_places(run_place(first + ahead, m, period)[1], m, period)
            for q in range(ahead, steps + 2):
                state, row = next_place(state, first + q, end, m, period)
                assert row == (places[q] if first + q < end else m)
