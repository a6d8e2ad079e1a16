"""Kernel 13 splitting K through a workspace (``examples.gemm_split``) without a GPU: the plan a workspace allows
(its split never more CTAs than a wave, filling it at least as well as the clusters' plan), the kernel's form (no
cluster, each CTA's slot written in 16-byte stores, counted in, a bounded wait for the tile's other CTAs, counted
out, its slice summed over the slots in order), no spills, the plain kernel unchanged where no split goes through
the workspace, and the workspace's rules."""

import hashlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
import examples.gemm_plan as plan
from examples import gemm
from examples.gemm_args import STAGES, TILE_NS
from examples.gemm_split import counter_ints, workspace_elements
from _ptxas_report import ptxas_report
from test_gemm_plan import at_h200, h200  # noqa: F401 (the fixture)

spec = cute.compiler.DeviceArraySpec


def _compile(m, n, k, out="BFloat16", ws=True, ab="BFloat16", **kw):
    extra = dict(workspace=spec("Float32", (workspace_elements(m, n),))) if ws is True else (
        {} if ws is None else dict(workspace=ws))
    return cute.compile(gemm, spec(ab, (m, k)), spec(ab, (n, k)), spec(out, (m, n)), **extra, **kw)


def test_workspace_elements_by_hand():
    # 512 x 512: 16 tiles of 128 x 128, 8 of 128 x 256, or 12 of 128 x 192 (N taken as 576, the most): 8 slots of
    # 128 x 192 per tile, 2359296 elements, then the counters of a workspace of that size: one per 32768 elements
    # (73 at 2359392), padded to 96
    assert workspace_elements(512, 512) == 96 + 8 * 12 * 128 * 192 and counter_ints(2359392) == 96
    assert workspace_elements(512, 512, 2) == 32 + 2 * 12 * 128 * 192
    # 300 x 300: 3 x 3 tiles of 128 x 128 or 3 x 2 of 128 x 256, their 3 rows taken as 4 in 2x1 clusters (the
    # second CTA of the last cluster computes a tile past M): 4 x 2 tiles of 128 x 256 (8 * 32768), the most
    assert workspace_elements(300, 300, 4) == 64 + 4 * 8 * 128 * 256
    assert counter_ints(1) == 32 and counter_ints(32 * 32768) == 32 and counter_ints(32 * 32768 + 1) == 64
    # 768 x 768 split by 3: 36 tiles of 128 x 128 or 18 of 128 x 256, either way 3 * 589824 elements of slots (24
    # of 128 x 192: 3 * 589824 too)
    assert workspace_elements(768, 768, 3) == 64 + 3 * 36 * 128 * 128


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 2 ** 31), st.integers(1, 3000), st.integers(1, 3000), st.sampled_from(TILE_NS),
       st.integers(2, 16))
def test_a_workspace_holds_the_counters_of_any_plan_that_fits_in_it_before_every_plan_s_slots(size, m, n, tn, split):
    """The counters lie at the start and depend on the workspace's size alone; any plan whose slots fit after them
    has no more tiles than there are counters. So no plan's slots lie over any plan's counters, whatever the shapes
    that share the workspace. ``workspace_elements`` is the fewest elements that fit, and fits every smaller C."""
    def rows(m, cluster_m):         # rows of tiles, in whole 2x1 clusters where cluster_m is 2
        return -(-(-(-m // 128)) // cluster_m) * cluster_m
    for cm in (1, 2):
        tiles = rows(m, cm) * -(-n // tn)
        slots = split * tiles * 128 * tn
        if slots + counter_ints(size) <= size:
            assert tiles <= counter_ints(size) and counter_ints(size) % 32 == 0
    need = workspace_elements(m, n, split)
    assert need >= slots + counter_ints(need)
    assert need - 1 < max(split * rows(m, 2) * -(-n // t) * 128 * t for t in TILE_NS) + counter_ints(need - 1)
    for smaller in ((m // 2 or 1, n), (m, n // 3 or 1), (1, 1)):
        small = split * rows(smaller[0], 2) * -(-smaller[1] // tn) * 128 * tn
        assert small + counter_ints(need) <= need


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 20000), st.integers(1, 20000), st.integers(1, 70000))
def test_a_split_through_the_workspace_fills_a_wave_at_least_as_well_as_clusters_and_no_more(m, n, k):
    with pytest.MonkeyPatch.context() as mp:
        at_h200(mp)
        tn, split, cluster_m = plan.through_workspace(m, n, k)
        tc = plan.auto_tile_n(m, n, k)
        cs = plan.auto_split(m, n, k, (128, tc, 64), STAGES[tc])
        k_tiles, clusters = -(-k // 64), -(-m // 128) * -(-n // tc) * cs
        in_clusters = min(clusters, 132) * -(-k_tiles // cs) / (-(-k_tiles // cs) + 12)
        # every plan the default may take through a workspace (128 x 128 or 128 x 256 tiles), and how much of a
        # wave each keeps busy
        fills = {(t, s): -(-m // 128) * -(-n // t) * s * -(-k_tiles // s) / (-(-k_tiles // s) + 12)
                 for t in (128, 256) for s in range(2, 9) if -(-m // 128) * -(-n // t) * s <= 132 and k_tiles >= 16 * s}
        ties_go_through = tc == 256 and cs > 1      # 128 x 256 tiles split in clusters are the slower
        if tn is None:
            assert not fills or max(fills.values()) < in_clusters or (
                max(fills.values()) == in_clusters and not ties_go_through), (m, n, k)
            assert split is None and cluster_m is None
            return
        rows = -(-m // 128)     # in 2x1 clusters: 128 x 128 tiles, an even number of rows, split by 4 or more
        assert cluster_m == (2 if tn == 128 and split >= 4 and rows % 2 == 0 else 1), (m, n, k)
        assert (tn, split) in fills and fills[tn, split] == max(fills.values()), (m, n, k)
        assert fills[tn, split] > in_clusters or (fills[tn, split] == in_clusters and ties_go_through), (m, n, k)


@pytest.mark.parametrize("shape, want", [
    # measured on an H200 (TFLOP/s, the default in clusters against the plan through a workspace)
    ((512, 512, 16384), (128, 8, 2)),  # 16 tiles x 8 = 128 CTAs; in clusters 16 x 4: 329 -> 356; 2x1: 406
    ((512, 512, 8192), (128, 8, 2)),   # 16 k-tiles a split: 271 -> 301; 2x1: 310
    ((640, 640, 16384), (128, 5, 1)),  # 25 x 5 = 125 CTAs; in clusters 15 x 8 of 128 x 256: 332 -> 452
    ((768, 768, 16384), (256, 7, 1)),  # 18 x 7 = 126; 36 x 3 = 108 fills a little less; clusters 72: 409 -> 514
    ((768, 768, 8192), (128, 3, 1)),   # 126 CTAs of 19 k-tiles fill less than 108 of 43: 376 -> 416 (383)
    ((896, 896, 16384), (256, 4, 1)),  # 112 CTAs either way, 128 x 256 tiles slow in clusters: 425 -> 519
    ((512, 1024, 16384), (128, 4, 2)),  # 32 x 4 = 128 (128 x 256: 16 x 8, fills less): 382 -> 489; 2x1: 535
    ((1024, 1024, 8192), (None, None, None)),  # 128 CTAs either way, 128 x 128 tiles
    ((384, 384, 16384), (None, None, None)),   # 72 either way: 273 in clusters, 261 through a workspace
    ((512, 512, 4096), (None, None, None)),
    ((4096, 4096, 4096), (None, None, None)),
    ((512, 4096, 4096), (None, None, None)),   # 128 tiles unsplit: 667 against 523 split by 2
])
def test_the_plan_with_a_workspace_at_an_h200(h200, shape, want):
    assert plan.through_workspace(*shape) == want


def test_the_kernel_of_a_split_through_the_workspace(filecheck, assemble):
    c = _compile(512, 512, 16384, split_k=8, tile_n=128, cluster_m=1)
    (launch,) = c.launches
    assert launch.grid == (128, 1, 1) and launch.cluster == (1, 1, 1)
    ptx = c.ptx
    assert "st.async" not in ptx and "multicast::cluster" not in ptx and ptx.count("m64n128k16") == 8
    filecheck(ptx, ["CHECK: bar.sync 5, 256;", "CHECK: fence.acq_rel.gpu;", "CHECK: atom.acq_rel.gpu.global.add",
                    "CHECK: trap;", "CHECK: ld.acquire.gpu.global", "CHECK: globaltimer", "CHECK: trap;",
                    "CHECK: atom.relaxed.gpu.global.add", "CHECK: bar.sync 5, 256;", "CHECK: fence.acq_rel.gpu;",
                    "CHECK: ld.global.v4"])
    body = ptx[ptx.index(".entry"):]
    assert len(re.findall(r"st\.global\.v4\.b32", body)) == 16, "a thread's 64 products, 16 bytes a store"
    # its slice: 64 / 8 = 8 values of each of the 8 slots, two 16-byte loads a slot
    assert len(re.findall(r"ld\.global\.v4\.b32", body)) == 2 * 8
    assemble(ptx)
    report = ptxas_report(ptx)
    if report is not None:
        assert report == ([], [(0, 0)]), report


def test_the_default_split_through_the_workspace_in_2x1_clusters(filecheck, assemble):
    """512x512x16384: 4 x 4 tiles split by 8 in 64 clusters of 2 (two vertically adjacent tiles' CTAs of one split),
    each CTA loading half of their B tile and multicasting it to both; each tile's counter is its own."""
    c = _compile(512, 512, 16384)
    (launch,) = c.launches
    assert launch.grid == (128, 1, 1) and launch.cluster == (2, 1, 1)
    ptx = c.ptx
    assert "st.async" not in ptx and ptx.count("m64n128k16") == 8
    filecheck(ptx, ["CHECK: multicast::cluster", "CHECK: atom.acq_rel.gpu.global.add", "CHECK: ld.acquire.gpu.global",
                    "CHECK: ld.global.v4"])
    assemble(ptx)
    report = ptxas_report(ptx)
    if report is not None:
        assert report == ([], [(0, 0)]), report


@pytest.mark.parametrize("m, n, tile_n, split, cluster_m, what", [
    (640, 640, 128, 5, 2, "75 clusters of 2"),      # 5 rows of tiles taken as 6: 30 tiles x 5
    (512, 512, 128, 9, 2, "72 clusters of 2"),
    (512, 512, 128, 9, 1, "144 CTAs"),
])
def test_a_split_in_clusters_the_device_does_not_hold_at_once_is_refused(h200, m, n, tile_n, split, cluster_m, what):
    with pytest.raises(cute.CuteValueError, match=what):
        _compile(m, n, 16384, ws=spec("Float32", (workspace_elements(m, n, 16),)), split_k=split, tile_n=tile_n,
                 cluster_m=cluster_m)


def test_a_2x1_split_over_odd_rows_of_tiles_needs_the_slots_of_the_tile_past_m():
    """300 x 520 in 128 x 256 tiles: 3 rows of tiles, taken as 4 in 2x1 clusters (the last cluster's second CTA
    computes a tile past M and sums it through its own slots). A workspace with the slots of 3 x 3 tiles split by
    7 serves the 1x1 plan and is refused for the 2x1 one, naming the size it needs."""
    from examples.gemm_split import counter_ints
    slots = 7 * 3 * 3 * 128 * 256
    size = slots + counter_ints(slots + 64)
    _compile(300, 520, 4000, ws=spec("Float32", (size,)), split_k=7, tile_n=256, cluster_m=1)
    with pytest.raises(cute.CuteValueError, match=f"is at least {7 * 4 * 3 * 128 * 256 + 96} contiguous elements"):
        _compile(300, 520, 4000, ws=spec("Float32", (size,)), split_k=7, tile_n=256, cluster_m=2)


def test_a_split_through_the_workspace_is_not_persistent():
    with pytest.raises(cute.CuteValueError, match="through a workspace takes one tile a CTA"):
        _compile(512, 512, 16384, split_k=8, tile_n=128, persistent=True)


@pytest.mark.parametrize("m, n, k, out, kwargs", [
    (300, 520, 4000, "Float32", dict(split_k=8, tile_n=128)),
    (129, 255, 520, "BFloat16", dict(split_k=2, tile_n=256, epilogue="vector")),
    (512, 1024, 8192, "Float16", dict(split_k=4, tile_n=256)),
    (700, 300, 3000, "BFloat16", dict(split_k=4, tile_n=128, bias=spec("Float32", (300,)), activation="gelu")),
    (512, 512, 4096, "BFloat16", dict(split_k=8, tile_n=128)),
    (512, 512, 16384, "BFloat16", dict(ab="Float8E4M3FN", scale_a=spec("Float32", (1,)),
                                       scale_b=spec("Float32", (1,)), split_k=8, tile_n=128)),
    (768, 768, 16384, "BFloat16", dict(split_k=3, tile_n=128)),
    (300, 520, 4000, "BFloat16", dict(split_k=7, tile_n=256)),    # (a Float32 C spills 24 bytes there)
    (129, 255, 2600, "BFloat16", dict(split_k=5, tile_n=128, bias=spec("Float32", (255,)), activation="gelu")),
    (200, 500, 8192, "Float16", dict(split_k=15, tile_n=128)),
    (512, 512, 16384, "BFloat16", dict(split_k=8, tile_n=128, cluster_m=2)),
    (300, 520, 4000, "BFloat16", dict(split_k=7, tile_n=256, cluster_m=2)),
    (129, 255, 2600, "BFloat16", dict(split_k=5, tile_n=128, cluster_m=2, bias=spec("Float32", (255,)),
                                      activation="gelu")),
])
def test_the_gpu_cases_build_without_spills(m, n, k, out, kwargs, assemble):
    """The configurations of the GPU tests, assembled with no spills."""
    ws = spec("Float32", (workspace_elements(m, n, max(8, kwargs.get("split_k", 8))),))
    c = _compile(m, n, k, out, ws=ws, **kwargs)
    (launch,) = c.launches
    promoted = kwargs.get("ab", "BFloat16").startswith("Float8") and not kwargs.get("fast_accum")
    assert launch.cluster == (kwargs.get("cluster_m", 1), 1, 1) and ("setmaxnreg" in c.ptx) == promoted
    assemble(c.ptx)
    report = ptxas_report(c.ptx)
    if report is not None:
        assert report[1] == [(0, 0)], report


@pytest.mark.parametrize("m, n, k", [(4096, 4096, 4096), (512, 4096, 4096), (384, 384, 16384)])
def test_a_workspace_the_plan_does_not_use_leaves_the_kernel_as_it_is(m, n, k):
    def sha(c):
        return hashlib.sha1(c.ptx.encode()).hexdigest()
    assert sha(_compile(m, n, k)) == sha(_compile(m, n, k, ws=None))


@pytest.mark.parametrize("ws", [spec("BFloat16", (16,)), 5, "ws", True, 2.5])
def test_a_workspace_the_plan_does_not_use_is_still_of_its_type(ws):
    abc = (spec("BFloat16", (4096, 4096)),) * 3
    with pytest.raises(cute.CuteValueError, match="workspace is a 1-D Float32 tensor"):
        cute.compile(gemm, *abc, workspace=ws)

def test_an_unused_workspace_of_any_size_is_fine():
    c = _compile(4096, 4096, 4096, ws=spec("Float32", (16,)))      # unused: its size does not matter
    assert c.ptx == _compile(4096, 4096, 4096, ws=None).ptx


@pytest.mark.parametrize("ws, kwargs, match", [
    (spec("Float16", (workspace_elements(512, 512),)), {}, "workspace is a 1-D Float32 tensor"),
    (spec("Float32", (1024, 2048)), {}, "workspace is a 1-D Float32 tensor"),
    # the default's plan: 128 x 128 tiles split by 8, 2097152 elements of slots after 96 of counters
    (spec("Float32", (2097248 - 1,)), {}, "at least 2097248 contiguous elements"),
    # 128 x 192 tiles split by 8 (N taken as 576) need the most: workspace_elements(512, 512)
    (spec("Float32", (2097248,)), dict(split_k=8, tile_n=192), "at least 2359392 contiguous elements"),
    (spec("Float32", (workspace_elements(512, 512), ), (2,)), {}, "with the stride 2"),
    (spec("Float32", (workspace_elements(512, 512),), address=(1 << 24) + 4), {}, "16-byte aligned"),
    (spec("Float32", (workspace_elements(512, 512, 2),)), dict(split_k=4, tile_n=128), "at least"),
    (spec("Float32", (workspace_elements(512, 1024),)), dict(split_k=8, tile_n=128), "are more than the device"),
])
def test_workspace_rules(ws, kwargs, match):
    with pytest.raises(cute.CuteValueError, match=match):
        _compile(512, 1024 if "device" in match else 512, 16384, ws=ws, **kwargs)


def test_the_summing_slices_of_a_split_are_the_largest_power_of_two_up_to_8_within_it():
    from examples.gemm_split import summing_slices

    for split in range(1, 17):
        s = summing_slices(split)
        assert s in (1, 2, 4, 8) and s <= split and (s == 8 or 2 * s > split), split


@pytest.mark.parametrize("m, n, k, tile_n, split, sums", [
    (768, 768, 16384, 128, 3, 2),      # 36 tiles x 3 = 108 CTAs, 2 of each tile's 3 sum
    (768, 768, 16384, 256, 7, 4),      # 18 x 7 = 126
    (640, 640, 8192, 128, 5, 4),       # 25 x 5 = 125
    (300, 200, 4096, 128, 16, 8),
])
def test_a_split_that_is_not_a_power_of_two_goes_through_the_workspace(m, n, k, tile_n, split, sums, assemble):
    """Its first ``summing_slices(split)`` CTAs of a tile sum slices of ``tile_n / sums`` columns; the others write
    their slot and count themselves in. The same kernel form as a split by a power of two, plus the branch."""
    ws = spec("Float32", (workspace_elements(m, n, split),))
    c = _compile(m, n, k, ws=ws, split_k=split, tile_n=tile_n)
    (launch,) = c.launches
    tiles = -(-m // 128) * -(-n // tile_n)
    assert launch.grid == (tiles * split, 1, 1) and launch.cluster == (1, 1, 1)
    body = c.ptx[c.ptx.index(".entry"):]
    assert body.count("atom.acq_rel.gpu.global.add") == 1 and body.count("atom.relaxed.gpu.global.add") == 1
    assert "ld.acquire.gpu.global" in body and body.count("trap;") == 2
    per = 128 * tile_n // 256 // sums      # a thread's values of its slice: two 16-byte loads per 8 of them
    assert len(re.findall(r"ld\.global\.v4\.b32", body)) == split * per // 4
    assemble(c.ptx)


@pytest.mark.parametrize("kwargs, ws, match", [
    (dict(split_k=3), False,
     r"split_k must be one of \(1, 2, 4, 8\) or None \(through a workspace: 1 to 16\), got 3"),
    (dict(split_k=17), True, r"through a workspace: 1 to 16\), got 17"),
    (dict(split_k=0), True, r"got 0"),
    (dict(split_k=12, tile_n=128), "small", r"split by 12 .* at least"),
])
def test_splits_outside_the_rules_are_refused(kwargs, ws, match):
    m, n, k = 512, 512, 16384
    w = {False: None, True: spec("Float32", (workspace_elements(m, n, 16),)),
         "small": spec("Float32", (workspace_elements(m, n),))}[ws]
    with pytest.raises(cute.CuteValueError, match=match):
        _compile(m, n, k, ws=w, **kwargs)
