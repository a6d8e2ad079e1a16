"""Kernel 13's default plan (``examples.gemm_plan``) against the clusters a device holds at once: a split of K makes
each tile a cluster of ``split`` CTAs, and a cluster lies within a GPC, so an H200's 132 SMs hold 66 clusters of 2,
30 of 4 and 15 of 8 (``HardwareInfo.get_max_active_clusters``), not 132 / split. A split whose clusters take a
second wave runs at about half speed (1024x1024x16384 in clusters of 4: 358 TFLOP/s, against 503 in 64 clusters
of 2 with 128 x 128 tiles, benchmarks/RESULTS.md)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import examples.gemm_plan as plan
from examples.gemm_args import STAGES

H200 = {1: 132, 2: 66, 4: 30, 8: 15}


def at_h200(mp):
    """``mp`` (a MonkeyPatch) makes the plan see an H200: 132 SMs and the clusters of ``H200`` a wave holds."""
    mp.setattr(plan, "sm_count", lambda: 132)
    mp.setattr(plan, "_capacity", lambda size, sms: H200[size])


@pytest.fixture
def h200(monkeypatch):
    at_h200(monkeypatch)


def _choice(m, n, k):
    tn = plan.auto_tile_n(m, n, k)
    return tn, plan.auto_split(m, n, k, (128, tn, 64), STAGES[tn])


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 20000), st.integers(1, 20000), st.integers(1, 70000))
def test_the_default_split_never_asks_for_more_clusters_than_a_wave_holds(m, n, k):
    with pytest.MonkeyPatch.context() as mp:
        at_h200(mp)
        tn, split = _choice(m, n, k)
        tiles = -(-m // 128) * -(-n // tn)
        if split > 1:
            assert tiles <= H200[split] and tiles * split <= 132, (m, n, k, tn, split)
            assert -(-k // 64) >= 8 * split


@pytest.mark.parametrize("shape, want", [
    ((1024, 1024, 16384), (128, 2)),   # 128 x 256: 32 tiles, 32 clusters of 4 > 30; 128 x 128: 64 clusters of 2
    ((1024, 1024, 4096), (128, 2)),
    ((512, 512, 16384), (128, 4)),     # 64 CTAs either way: 16 clusters of 4 (16 > 15 of 8), not 8 of 8
    ((512, 512, 4096), (128, 4)),
    ((512, 1024, 8192), (128, 2)),     # 64 CTAs either way: 32 clusters of 2 (32 > 30 of 4), not 16 of 4
    ((768, 768, 16384), (128, 2)),     # 72 CTAs either way: 36 clusters of 2, not 18 of 4
    ((2048, 1024, 8192), (128, 1)),    # 128 CTAs either way: 128 tiles without a split, not 64 split by 2
    ((4096, 512, 4096), (128, 1)),
    ((4096, 1024, 4096), (256, 1)),    # 128 tiles of 128 x 256; 256 of 128 x 128 would take two waves
    ((512, 4096, 4096), (128, 1)),     # the wide shape of few tiles: 128 tiles, no split
    ((8192, 8192, 8192), (256, 1)),
])
def test_the_default_plan_at_the_clusters_of_an_h200(h200, shape, want):
    assert _choice(*shape) == want


def test_without_a_device_the_capacity_is_an_h200s_at_its_sm_count(monkeypatch):
    def no_device():
        raise RuntimeError("no CUDA device")

    monkeypatch.setattr(plan.HardwareInfo, "get_max_active_clusters", lambda self, size: no_device())
    plan._capacity.cache_clear()
    try:
        assert [plan._capacity(s, 132) for s in (2, 4, 8)] == [66, 30, 15]
        assert [plan._capacity(s, 114) for s in (2, 4, 8)] == [57, 28, 14]
    finally:
        plan._capacity.cache_clear()
