"""The arithmetic of a thread's part of a row (examples/row_math.py): folds cover every value once in a fixed
order; the row kernels take each exponential in one ``fma`` and one ``ex2.approx.ftz`` on their fast path, and keep
the plain form for shifts whose product with ``log2(e)`` overflows."""

import math
import random
import re

import pytest

import cute_py as cute
import examples as ex
from examples.row_math import fast_shift, fold

F = cute.compiler.DeviceArraySpec


@pytest.mark.parametrize("ways", [1, 2, 4, 8])
def test_a_fold_combines_every_value_once_in_a_fixed_order(ways):
    rng = random.Random(ways)
    for _ in range(200):
        vals = [(rng.randrange(1000),) for _ in range(rng.randint(1, 70))]
        got = fold(vals, lambda a, b: a + b, ways)
        assert sorted(got) == sorted(v[0] for v in vals)  # each value exactly once
        assert got == fold(vals, lambda a, b: a + b, ways)  # the same order every time
        assert fold([v[0] for v in vals], max, ways) == max(v[0] for v in vals)
    assert fold([(1,), (2,), (3,)], lambda a, b: a + b, 1) == (1, 2, 3)  # one chain: left to right


def test_a_fold_of_nothing_or_of_no_chains_is_refused():
    with pytest.raises(cute.CuteValueError, match="at least one value"):
        fold([], max)
    for ways in (0, -1, 2.0, True, None):
        with pytest.raises(cute.CuteValueError, match="ways must be an int >= 1"):
            fold([1, 2, 3], max, ways)


def test_the_fast_form_is_taken_only_where_the_shift_times_log2e_is_finite():
    log2e = 1.4426950408889634
    for shift in (0.0, 1.0, -87.5, 1e30, 2.3e38, -2.3e38):
        assert fast_shift(shift * log2e)
    for shl in (math.inf, -math.inf, math.nan):
        assert not fast_shift(shl)


def _rows(dtype, m, n):
    return F(dtype, (m, n), (n, 1))


def _count(ptx, pattern):
    return len(re.findall(pattern, ptx))


@pytest.mark.parametrize("n", [4096, 32768])
def test_cross_entropy_takes_one_fma_and_one_ftz_exponential_an_element(n, assemble):
    x = _rows("BFloat16", 64, n)
    per_thread = 64  # the plans' values a thread at these lengths
    fwd = cute.compile(ex.cross_entropy_forward, x, F("Int64", (64,)), F("Float32", (64,)), F("Float32", (64,))).ptx
    # the fast path: one ex2.approx.ftz an element; the plain form (shift beyond FLT_MAX / log2(e)) one ex2.approx
    assert _count(fwd, r"ex2\.approx\.ftz\.f32") >= per_thread
    assert _count(fwd, r"fma\.rn\.f32") >= per_thread
    assert _count(fwd, r"ex2\.approx\.f32") >= per_thread
    bwd = cute.compile(ex.cross_entropy_backward, x, F("Int64", (64,)), F("Float32", (64,)), F("Float32", (64,)),
                       x).ptx
    # every element, and the target's element again (its gradient stored once more by the thread that owns it)
    assert _count(bwd, r"ex2\.approx\.ftz\.f32") == per_thread + 1
    assert _count(bwd, r"ex2\.approx\.f32") == per_thread + 1
    assert ".local" not in fwd and ".local" not in bwd
    assemble(fwd)
    assemble(bwd)


def test_softmax_forward_takes_one_fma_and_one_ftz_exponential_an_element(assemble):
    x = _rows("BFloat16", 64, 262144)
    ptx = cute.compile(ex.softmax_forward, x, x).ptx
    assert _count(ptx, r"ex2\.approx\.ftz\.f32") >= 128 and _count(ptx, r"fma\.rn\.f32") >= 128
    assert ".local" not in ptx
    assemble(ptx)


def test_the_layernorm_combine_of_sum_and_m2_pairs_is_the_pair_of_the_whole_row():
    from examples.norm_parts import sum_m2
    rng = random.Random(3)
    for trial in range(200):
        c = rng.choice([1, 4, 8, 64])
        combine = sum_m2(c)
        threads = rng.choice([2, 4, 16, 64])
        mean, dev = rng.choice([(0.0, 1.0), (100.0, 3.0), (-1e4, 0.5)])
        row = [rng.gauss(mean, dev) for _ in range(threads * c)]
        parts = []
        for i in range(threads):  # each thread: its sum and its own values' squared deviations
            p = row[i * c:(i + 1) * c]
            mt = sum(p) / c
            parts.append((sum(p), sum((e - mt) ** 2 for e in p), 1))
        while len(parts) > 1:  # any tree of combines, with each side's thread count
            i = rng.randrange(len(parts) - 1)
            a, b = parts[i], parts[i + 1]
            parts[i:i + 2] = [combine(a[:2], b[:2], a[2], b[2]) + (a[2] + b[2],)]
        mu = sum(row) / len(row)
        m2 = sum((e - mu) ** 2 for e in row)
        assert math.isclose(parts[0][0] / len(row), mu, rel_tol=1e-12, abs_tol=1e-12), trial
        assert math.isclose(parts[0][1], m2, rel_tol=1e-9), (trial, parts[0][1], m2)
    # two lanes of a butterfly (equal counts) get the same bits either way round
    combine = sum_m2(8)
    a, b = (812.25, 3.5), (790.125, 7.25)
    assert combine(a, b, 4, 4) == combine(b, a, 4, 4)


def test_layernorm_of_rows_that_fill_every_thread_exchanges_once(assemble):
    """One exchange of (sum, M2) pairs for rows that fill every thread: Float32, and 16-bit rows over a cluster with
    x in registers; two (the sum, then the squared deviations) for 16-bit rows in one CTA, 16-bit rows with x staged
    (CTAs of 256 threads) and rows with a tail."""
    def build(dtype, n, m=8):
        return cute.compile(ex.layernorm_forward, _rows(dtype, m, n), F(dtype, (n,)), F(dtype, (n,)),
                            _rows(dtype, m, n), F("Float32", (m,)), F("Float32", (m,)), 1e-5, False).ptx
    exchange = r"st\.async\.shared::cluster\.mbarrier::complete_tx::bytes"
    for dtype, n, count in (("Float32", 32768, 1), ("BFloat16", 32768, 1), ("Float16", 131072, 1),
                            ("BFloat16", 262144, 2), ("Float32", 32767, 2), ("BFloat16", 32760, 2)):
        ptx = build(dtype, n)
        assert _count(ptx, exchange) == count and _count(ptx, r"mbarrier\.try_wait\.parity") == count, (dtype, n)
        assert ".local" not in ptx
    one_cta = build("BFloat16", 4096, 64)
    assert "st.async" not in one_cta and one_cta.count("bar.sync") == 2        # the warps' partials, twice
    assemble(build("BFloat16", 65536))


def test_norms_stage_rows_only_where_two_ctas_still_share_an_sm():
    def norms(dtype, n):
        rms = cute.compile(ex.rmsnorm_forward, _rows(dtype, 4, n), F(dtype, (n,)), _rows(dtype, 4, n),
                           F("Float32", (4,)), 1e-6).ptx
        ln = cute.compile(ex.layernorm_forward, _rows(dtype, 4, n), F(dtype, (n,)), F(dtype, (n,)),
                          _rows(dtype, 4, n), F("Float32", (4,)), F("Float32", (4,)), 1e-5, False).ptx
        return rms, ln
    # Float32 rows of 262144 over 16 CTAs of 256 threads: 64 KiB a CTA an input. RMSNorm stages x alone (x and w:
    # 128 KiB); LayerNorm's w and b (128 KiB) stay out, its x in registers
    rms, ln = norms("Float32", 262144)
    assert "cp.async" in rms and "cp.async" not in ln
    assert ".local" not in rms and ".local" not in ln
    # 64 KiB a CTA: staged
    for dtype, n in (("BFloat16", 262144), ("Float32", 65536)):
        for ptx in norms(dtype, n):
            assert "cp.async" in ptx and ".local" not in ptx


def test_rmsnorm_backward_copies_two_rows_ahead_over_a_cluster_where_they_fit(assemble):
    def build(n, dtype, wtype):
        units = ex.rmsnorm_workspace_rows(64, n)
        return cute.compile(ex.rmsnorm_backward, _rows(dtype, 64, n), _rows(dtype, 64, n), F(wtype, (n,)),
                            F("Float32", (64,)), _rows(dtype, 64, n), F(wtype, (n,)),
                            F("Float32", (units, n))).ptx
    from examples.norm_backward import PREFETCH_SMEM, prefetch_depth
    from examples.row_reduce import TWO_INPUTS, plan_rows
    from examples.row_stage import staged_bytes
    # bf16 rows and weights over a cluster: w kept in bf16 (32 KiB), the dw sums in Float32 (64 KiB) and two
    # buffers of x and dy (2 x 64 KiB) fit; each row waits for its own copies only (wait_group 1)
    two = build(262144, "BFloat16", "BFloat16")
    assert "cp.async.wait_group \t1;" in two and "cp.async.wait_group \t0;" not in two
    plan = plan_rows("t", 262144, 8, TWO_INPUTS)
    bf16, f32 = cute.BFloat16, cute.Float32
    assert staged_bytes(plan, bf16) + 3 * staged_bytes(plan, f32) <= PREFETCH_SMEM
    # Float32 weights (kept in Float32: one buffer fits), and short rows (one row ahead: measured faster there)
    for ptx in (build(262144, "BFloat16", "Float32"), build(4096, "BFloat16", "BFloat16")):
        assert "cp.async.wait_group \t0;" in ptx and "cp.async.wait_group \t1;" not in ptx
    assert ".local" not in two
    assemble(two)

    class T:
        def __init__(self, name):
            self.element_type = getattr(cute, name)
    depths = {(d, w): prefetch_depth(plan, T(d), T(d), T(w)) for d in ("BFloat16", "Float32")
              for w in ("BFloat16", "Float32")}
    assert depths == {("BFloat16", "BFloat16"): 2, ("BFloat16", "Float32"): 1, ("Float32", "BFloat16"): 0,
                      ("Float32", "Float32"): 0}


def test_rmsnorm_workspace_rows_are_one_wave_of_clusters_for_rows_over_a_cluster(monkeypatch):
    """Rows over a cluster: as many groups as clusters of CTAs of 512 threads (one an SM) of the backward's plan run
    at once, so that no second wave runs a few clusters alone (an H200's capacities); short rows: about two CTAs an
    SM; never more groups than rows."""
    import examples.gemm_plan as gp
    from examples.norm_backward import backward_plan
    from examples.row_reduce import TWO_INPUTS, plan_rows
    from examples.tma_tiled import sm_count

    held = gp.H200_CLUSTERS
    monkeypatch.setattr(gp, "_capacity", lambda size, sms: held[size])
    for n, size in ((262144, 16), (200000, 16), (131072, 8), (100000, 8), (70000, 5), (65536, 4), (32768, 2),
                    (20000, 2)):
        plan = backward_plan("t", n, 4)
        assert plan.threads == 512 and plan.cluster == size
        assert ex.rmsnorm_workspace_rows(100000, n) == held[size]
        assert ex.rmsnorm_workspace_rows(3, n) == 3
    short = plan_rows("t", 4096, 4, TWO_INPUTS)
    assert short.cluster == 1 and backward_plan("t", 4096, 4) == short
    assert ex.rmsnorm_workspace_rows(100000, 4096) == sm_count() * 2 * short.rows
    assert ex.rmsnorm_workspace_rows(100000, 4096, sms=10, ctas_per_sm=1) == 10 * short.rows


@pytest.mark.parametrize("ways", [1, 2, 4, 8])
def test_a_dot_by_fused_multiply_adds_takes_every_product_once(ways):
    from examples.row_math import dot_fma

    rng = random.Random(ways + 10)
    for _ in range(200):
        pairs = [([rng.randrange(-50, 50) for _ in range(4)], [rng.randrange(-50, 50) for _ in range(4)])
                 for _ in range(rng.randint(1, 9))]
        exact = sum(x * y for a, b in pairs for x, y in zip(a, b))
        assert dot_fma(pairs, ways) == exact    # integers: exact whatever the order


def test_rmsnorm_backward_and_the_layernorm_loop_fuse_their_products_and_sums():
    """Each element's product-and-sum is one fused multiply-add: RMSNorm backward's dot, ``dx`` and ``dw`` sums (no
    separate subtraction left), the LayerNorm loop's squares and affine output (64 values a thread, two rows a step)."""
    x, w, s = _rows("BFloat16", 64, 32768), F("BFloat16", (32768,)), F("Float32", (64,))
    units = ex.rmsnorm_workspace_rows(64, 32768)
    ptx = cute.compile(ex.rmsnorm_backward, x, x, w, s, x, w, F("Float32", (units, 32768))).ptx
    assert _count(ptx, r"fma\.rn\.f32") >= 3 * 32 and _count(ptx, r"sub\.rn\.f32") == 0
    x, w, s = _rows("BFloat16", 2048, 262144), F("BFloat16", (262144,)), F("Float32", (2048,))
    ln = cute.compile(ex.layernorm_forward, x, w, w, x, s, s, 1e-5).ptx
    assert "layernorm_loop_kernel" in ln and _count(ln, r"fma\.rn\.f32") >= 2 * (64 + 32)
