"""LayerNorm on a persistent grid of clusters (examples/layernorm_loop.py): the default's rule as laws over arbitrary
row lengths, vector widths and types; configurations out of range refused with the rule; the kernel's copies ahead,
exchanges, grid and registers in its PTX."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
import examples as ex
from examples.layernorm_loop import (LOOP_CHUNKS, LOOP_FROM, LOOP_SMEM, LOOP_THREADS, LoopConfig,
                                     default_loop, loop_clusters, loop_ctas_per_sm, loop_plan, loop_smem)
from examples.row_reduce import MAX_CLUSTER
from _ptxas_report import ptxas_report

F = cute.compiler.DeviceArraySpec
TYPES = {"Float32": cute.Float32, "BFloat16": cute.BFloat16, "Float16": cute.Float16}
CP_ASYNC_16 = r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16;"
EXCHANGE = r"st\.async\.shared::cluster\.mbarrier::complete_tx::bytes"


@settings(max_examples=400, deadline=None)
@given(n=st.integers(1, 1 << 20), vec=st.sampled_from([1, 2, 4, 8]), name=st.sampled_from(sorted(TYPES)))
def test_the_default_loop_takes_the_smallest_cluster_that_keeps_its_chunks_and_fits_an_sm(n, vec, name):
    dtype = TYPES[name]
    config = default_loop(n, vec, dtype)
    if vec * dtype.width < 128 or n <= LOOP_FROM:
        assert config is False
        return
    def fits(cluster):   # the cluster keeps at most LOOP_CHUNKS chunks a thread and two buffers fit an SM
        c = LoopConfig(cluster, LOOP_THREADS[dtype.width], 2, "registers", True, None, 1)
        plan = loop_plan(n, vec, c)
        return plan.chunks <= LOOP_CHUNKS and loop_smem(plan, c, dtype, dtype, dtype) <= LOOP_SMEM

    clusters = [2, 4, 8, MAX_CLUSTER]
    if config is False:   # only where no cluster up to the largest does, or 16-bit rows whose end is partial there
        first = next((c for c in clusters if fits(c)), None)
        if first is not None:
            plan = loop_plan(n, vec, LoopConfig(first, LOOP_THREADS[dtype.width]))
            assert dtype.width == 16 and plan.chunks * plan.cluster * plan.group * vec != n
        return
    plan = loop_plan(n, vec, config)
    assert plan.chunks <= LOOP_CHUNKS and plan.chunks * plan.cluster * plan.group * vec >= n
    assert dtype.width == 32 or plan.chunks * plan.cluster * plan.group * vec == n
    assert plan.cluster == config.cluster in clusters and fits(config.cluster)
    assert not any(fits(c) for c in clusters if c < config.cluster)
    assert loop_ctas_per_sm(plan, config, dtype, dtype, dtype) == 1
    assert loop_smem(plan, config, dtype, dtype, dtype) <= LOOP_SMEM
    assert (config.threads, config.depth, config.wb, config.one_exchange) == \
        (LOOP_THREADS[dtype.width], 2, "registers", True)


@settings(max_examples=200, deadline=None)
@given(m=st.integers(1, 1 << 20), per_sm=st.integers(1, 8), cluster=st.integers(2, 16))
def test_a_loop_launches_at_most_a_cluster_a_row_and_at_least_one(m, per_sm, cluster):
    units = loop_clusters(m, per_sm, cluster)
    assert 1 <= units <= m
    assert units == min(m, loop_clusters(1 << 30, per_sm, cluster))
    assert loop_clusters(1 << 30, per_sm, cluster) == per_sm * loop_clusters(1 << 30, 1, cluster)


@pytest.mark.parametrize("kwargs,rule", [
    (dict(cluster=1, threads=256), "clusters of 2..16"), (dict(cluster=17, threads=256), "clusters of 2..16"),
    (dict(cluster=32, threads=256), "clusters of 2..16"),
    (dict(cluster=2.0, threads=256), "clusters of 2..16"), (dict(cluster=True, threads=256), "clusters of 2..16"),
    (dict(cluster=8, threads=256.0), "128..1024 threads"), (dict(cluster=8, threads=256, depth=True), "1..4 buffers"),
    (dict(cluster=np.int64(8), threads=256), "clusters of 2..16"),
    (dict(cluster=8, threads=256, clusters=np.int32(3)), "clusters must be"),
    (dict(cluster=8, threads=96), "128..1024 threads"), (dict(cluster=8, threads=256, depth=5), "1..4 buffers"),
    (dict(cluster=8, threads=256, depth=0), "1..4 buffers"), (dict(cluster=8, threads=256, wb="l2"), "wb must be"),
    (dict(cluster=8, threads=256, one_exchange=1), "one_exchange a bool"),
    (dict(cluster=8, threads=256, clusters=0), "clusters must be"),
    (dict(cluster=8, threads=256, clusters=True), "clusters must be"),
    (dict(cluster=8, threads=256, ctas_per_sm=0), "ctas_per_sm must be"),
    (dict(cluster=8, threads=256, ctas_per_sm=1.0), "ctas_per_sm must be")])
def test_loop_configurations_out_of_range_are_refused_with_the_rule(kwargs, rule):
    with pytest.raises(cute.CuteValueError, match=re.escape(rule)):
        LoopConfig(**kwargs)


def _ln(dtype, m, n, loop=None, stride=None):
    x = F(dtype, (m, n), (stride or n, 1))
    w, s = F(dtype, (n,)), F("Float32", (m,))
    return cute.compile(ex.layernorm_forward, x, w, w, x, s, s, 1e-5, loop)


def test_a_loop_that_is_not_a_config_or_whose_buffers_do_not_fit_is_refused():
    with pytest.raises(cute.CuteValueError, match="loop must be None, False or a LoopConfig"):
        _ln("BFloat16", 8, 131072, "yes")
    with pytest.raises(cute.CuteValueError, match=f"more than the {227 * 1024} of an SM") as refused:
        _ln("BFloat16", 8, 262144, LoopConfig(2, 128, 4))
    staged = int(re.search(r"stages (\d+) bytes a CTA for rows of 262144", str(refused.value)).group(1))
    assert 4 * (262144 // 2) * 2 <= staged <= 4 * (262144 // 2) * 2 + 4096   # four buffers of half a bf16 row


@pytest.mark.parametrize("dtype,m,n,cluster,threads", [("Float32", 1024, 262144, 16, 512),
                                                        ("BFloat16", 4096, 131072, 8, 256),
                                                        ("Float16", 3, 131072, 8, 256)])
def test_the_default_loop_copies_the_next_row_while_it_reduces_this_one(assemble, dtype, m, n, cluster, threads):
    c = _ln(dtype, m, n)
    (launch,) = c.launches
    units = min(m, loop_clusters(1 << 30, 1, cluster))
    assert launch.grid == (units * cluster, 1, 1) and launch.cluster == (cluster, 1, 1)
    assert launch.block == (threads, 1, 1)
    ptx = c.ptx
    # 8 chunks a thread, copied for the first two rows and after each of the two rows of a loop step; each row waits
    # for its own copies only, and exchanges (sum, M2) once. With a cluster a row (fewer rows than clusters) only the
    # first row's copies are left: the others lie past the rows for every cluster
    assert len(re.findall(CP_ASYNC_16, ptx)) == (8 * 4 if m > units else 8)
    assert re.findall(r"cp\.async\.wait_group\s+(\d+)", ptx) == ["1", "1"]
    assert len(re.findall(EXCHANGE, ptx)) == 2 and ".local" not in ptx
    report = ptxas_report(ptx)
    assert report is None or all(s == (0, 0) for s in report[1]), report
    assemble(ptx)


def test_a_partial_row_on_the_loop_exchanges_twice_and_the_rest_stay_on_a_cluster_a_row():
    """Float32 rows with a partial end take the loop (two exchanges); 16-bit ones, rows of 65536 or less and rows
    in chunks narrower than 128 bits keep a cluster (or a CTA) a row."""
    ptx = _ln("Float32", 4, 131071, stride=131072).ptx
    assert "layernorm_loop_kernel" in ptx and len(re.findall(EXCHANGE, ptx)) == 4
    for dtype, n, stride in (("Float32", 65536, None), ("BFloat16", 65536, None), ("BFloat16", 131072, 131073),
                             ("BFloat16", 70000, None), ("Float16", 200000, None)):
        assert "layernorm_forward_kernel" in _ln(dtype, 4, n, stride=stride).ptx, (dtype, n)
    assert "layernorm_forward_kernel" in _ln("Float32", 4, 131072, False).ptx


def test_rows_whose_numbers_would_pass_int32_are_refused_with_the_rule():
    # the loop numbers rows in Int32 up to rows + 2 x buffers x clusters (its copies ahead); rmsnorm_backward's
    # groups up to rows + 4 x workspace rows
    m = 2 ** 31 - 5
    with pytest.raises(cute.CuteValueError, match=r"2147483643 rows, 2 buffers and 8 clusters pass 2\*\*31 - 1"):
        _ln("Float32", m, 1, LoopConfig(2, 128, 2, clusters=8))
    ok = _ln("Float32", 2 ** 31 - 1 - 2 * 2 * 8, 1, LoopConfig(2, 128, 2, clusters=8))
    assert ok.launches[0].grid == (16, 1, 1)
    x, w, s = F("Float32", (m, 1)), F("Float32", (1,)), F("Float32", (m,))
    with pytest.raises(cute.CuteValueError, match=r"2147483643 rows and 4 workspace rows pass 2\*\*31 - 1"):
        cute.compile(ex.rmsnorm_backward, x, x, w, s, x, w, F("Float32", (4, 1)))


@pytest.mark.parametrize("n,straddles", [(70000, False), (69998, True), (69999, True)])
def test_the_chunks_of_a_partial_last_round_inside_the_row_are_copied_by_cp_async(n, straddles):
    # bf16 rows of about 70000 (in rows of 70000) over 8 CTAs of 256 threads: 5 chunks of 8 a thread, the fifth
    # reaching past the row's end. Every chunk goes by cp.async at each of the 4 copy sites (the first two rows,
    # then after each row of a step); only a chunk straddling the end is loaded element by element, and where the
    # row is whole chunks (70000) none is: a chunk past the end is filled, not loaded
    ptx = _ln("BFloat16", 4096, n, LoopConfig(8, 256, 2), stride=70000).ptx
    assert len(re.findall(CP_ASYNC_16, ptx)) == 5 * 4
    elements = len(re.findall(r"ld\.global(\.nc)?\.b16", ptx))
    assert elements >= 8 * 4 if straddles else elements == 0


@pytest.mark.parametrize("dtype,n,config", [("Float32", 4097, LoopConfig(2, 1024, 4, "smem")),
                                            ("BFloat16", 262144, LoopConfig(16, 256, 2, "registers", True)),
                                            ("BFloat16", 131072, LoopConfig(8, 256, 2, "smem", True)),
                                            ("Float16", 100003, LoopConfig(4, 128, 3))])
def test_the_shared_memory_a_loop_counts_on_bounds_what_its_kernel_takes(dtype, n, config):
    # the CTAs an SM (and so the grid) are sized from loop_smem: it must not undercount
    c = _ln(dtype, 64, n, config)
    (taken,) = c.smem.values()
    plan = loop_plan(n, 1 if n % 2 else 128 // TYPES[dtype].width, config)
    counted = loop_smem(plan, config, TYPES[dtype], TYPES[dtype], TYPES[dtype])
    assert taken <= counted <= taken + 4096, (taken, counted)


ANY = st.one_of(st.integers(-3, 2048), st.floats(allow_nan=True), st.booleans(), st.none(), st.text(max_size=3),
                st.integers(0, 64).map(np.int64), st.sampled_from([2, 4, 8, 16, 128, 256, 512, 1024, "smem"]))


@settings(max_examples=300, deadline=None)
@given(cluster=ANY, threads=ANY, depth=ANY, wb=st.one_of(ANY, st.sampled_from(["global", "smem", "registers"])),
       one=st.one_of(ANY, st.booleans()), clusters=ANY, per_sm=ANY)
def test_a_loop_configuration_is_taken_exactly_when_every_field_is_in_range(cluster, threads, depth, wb, one,
                                                                             clusters, per_sm):
    def count(v):   # None, or a plain int >= 1
        return v is None or (type(v) is int and v >= 1)
    valid = (type(cluster) is int and 2 <= cluster <= 16 and type(threads) is int
             and threads in (128, 256, 512, 1024) and type(depth) is int and 1 <= depth <= 4
             and isinstance(wb, str) and wb in ("global", "smem", "registers") and type(one) is bool
             and count(clusters) and count(per_sm))
    try:
        LoopConfig(cluster, threads, depth, wb, one, clusters, per_sm)
    except cute.CuteValueError:
        assert not valid
    else:
        assert valid
