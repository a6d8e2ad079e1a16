"""Kernel 13 (examples.gemm) without a GPU: its PTX (TMA loads, the WGMMAs of the prologue and of the pipelined
main loop, one group kept in flight, predicated stores) FileChecked and assembled for sm_90a, in each of its
configurations (CTA tile, register reallocation, epilogue, 2x1 cluster, persistent CTAs), and its rules."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cute_py as cute
from examples import gemm
from mlir_dialects import assembler

spec = cute.compiler.DeviceArraySpec
ORIGINAL = dict(tile_n=128, reg_realloc=False, epilogue="scalar", cluster_m=1, persistent=False, split_k=1)
# the register epilogues' configuration of the earlier default: one CTA per 128 x 256 tile, pairs stored
VECTOR = dict(epilogue="vector", cluster_m=1, persistent=False, split_k=1)


def _mma(tile_n):
    return f"wgmma.mma_async.sync.aligned.m64n{tile_n}k16.f32"


def _compile(m, n, k, ab="BFloat16", out="Float32", kp=None, stages=4, ldc=None, c_address=1 << 24, **kwargs):
    kp = kp or k
    return cute.compile(gemm, spec(ab, (m, k), (kp, 1)), spec(ab, (n, k), (kp, 1)),
                        spec(out, (m, n), (ldc or n, 1), address=c_address), stages, **kwargs)


# (options, N of the CTA tile, the store instruction, stores per thread for a 1024 x 1024 C)
# 128 x N accumulators over 256 threads: 64 (N = 128) or 128 (N = 256) per thread, one store each, or one per
# pair of adjacent columns with the vector epilogue (2 x 32 bits for fp32, 32 bits for a 16-bit pair)
PTX_CASES = [
    (ORIGINAL, "BFloat16", "Float32", 128, r"st.global.b32", 64),
    (ORIGINAL, "Float16", "BFloat16", 128, r"st.global.b16", 64),
    (VECTOR, "BFloat16", "Float32", 256, r"st.global.v2.b32", 64),
    (dict(VECTOR, tile_n=128), "BFloat16", "Float32", 128, r"st.global.v2.b32", 32),
    (dict(VECTOR, tile_n=256, epilogue="scalar"), "Float16", "Float32", 256, r"st.global.b32", 128),
    (dict(VECTOR, reg_realloc=True), "Float16", "BFloat16", 256, None, 64),
    # 128 x 192: 96 accumulators per thread, 48 pairs
    (dict(VECTOR, tile_n=192), "BFloat16", "Float32", 192, r"st.global.v2.b32", 48),
    (dict(ORIGINAL, tile_n=192), "Float16", "BFloat16", 192, r"st.global.b16", 96),
]


@pytest.mark.parametrize("kwargs, ab, out, tile_n, store, stores", PTX_CASES)
def test_pipelined_gemm_ptx(kwargs, ab, out, tile_n, store, stores, filecheck, assemble):
    c = _compile(1024, 1024, 1024, ab, out, **kwargs)
    t = "bf16" if ab == "BFloat16" else "f16"
    mma = _mma(tile_n)
    realloc = kwargs.get("reg_realloc", False)
    filecheck(c.ptx, [
        "CHECK: .target sm_90a",
        "CHECK: mbarrier.init.shared",
        *(["CHECK: setmaxnreg.dec.sync.aligned.u32 {{[ \t]*}}40;"] if realloc else []),
        # the producer: one A and one B tile per k-tile, both on the stage's full barrier
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        *(["CHECK: setmaxnreg.inc.sync.aligned.u32 {{[ \t]*}}232;"] if realloc else []),
        # the consumers: k-tile 0, then the loop
        "CHECK: wgmma.fence.sync.aligned;",
        f"CHECK-COUNT-4: {mma}.{t}.{t}",
        "CHECK: wgmma.commit_group.sync.aligned;",
        "CHECK: mbarrier.try_wait.parity.shared.b64",
        "CHECK: wgmma.fence.sync.aligned;",
        f"CHECK-COUNT-4: {mma}.{t}.{t}",
        "CHECK: wgmma.commit_group.sync.aligned;",
        "CHECK-NEXT: wgmma.wait_group.sync.aligned {{[ \t]*}}1;",
        "CHECK: mbarrier.arrive",
        "CHECK: wgmma.wait_group.sync.aligned {{[ \t]*}}0;",
        "CHECK: st.global",
    ])
    assert c.ptx.count("wgmma.mma_async") == 8, "4 k-blocks in k-tile 0 and 4 in the (run-time) loop"
    assert c.ptx.count("cp.async.bulk.tensor") == 2
    assert c.ptx.count("setmaxnreg") == (2 if realloc else 0)
    # setmaxnreg needs the registers at entry fixed (one CTA per SM) and a whole-program assembler
    assert (".minnctapersm 1" in c.ptx) == realloc
    if realloc and assembler.find_ptxas() is not None:
        assert assembler.assembler_for(c.ptx) == "ptxas"
    if store is not None:
        assert c.ptx.count(store) == stores
    else:   # a 16-bit pair: 32 bits, however the backend spells it
        assert c.ptx.count("st.global.b32") + c.ptx.count("st.global.v2.b16") == stores
        assert "st.global.b16" not in c.ptx
    assemble(c.ptx)


@pytest.mark.parametrize("ldc, c_offset, pairs", [
    (258, 0, 64),            # even row stride, aligned C: pairs, and the odd N's last column alone
    (258, 3 * 258 * 4, 64),  # C starting 3 rows into an aligned buffer: still 8-byte aligned
    (258, 4, 0),             # C 4 bytes past an aligned address: no pair is 8-byte aligned
    (259, 0, 0),             # odd row stride: the odd rows' pairs are misaligned
])
def test_vector_epilogue_stores_pairs_only_where_c_aligns_them(ldc, c_offset, pairs, assemble):
    c = _compile(129, 255, 8, ldc=ldc, c_address=(1 << 24) + c_offset, **VECTOR)
    assert c.ptx.count("st.global.v2.b32") == pairs
    # 128 accumulators per thread: 64 pairs, or 128 single stores; with pairs, N = 255 is odd and the pair
    # at columns (254, 255) stores its first element alone (one per row of the thread: 2)
    assert c.ptx.count("st.global.b32") == (2 if pairs else 128)
    assemble(c.ptx)


@pytest.mark.parametrize("m, n, k, kp", [(200, 136, 100, 104), (64, 64, 64, None), (4096, 512, 1024, None)])
@pytest.mark.parametrize("kwargs, per_thread", [(ORIGINAL, 64), (VECTOR, 128)])
def test_edge_and_other_shapes_build_and_assemble(m, n, k, kp, kwargs, per_thread, assemble):
    c = _compile(m, n, k, kp=kp, stages=3, **kwargs)
    assert "wgmma.mma_async" in c.ptx and "cp.async.bulk.tensor" in c.ptx
    if kwargs.get("epilogue") == "scalar":
        # with static N = 64 the columns 64..127 of the tile are known to be outside C
        assert c.ptx.count("st.global.b32") == (32 if n == 64 else per_thread)
    else:
        # a thread's pairs: 2 rows x 32 groups of 8 columns (pair at 8g + 2 (lane % 4)); static N drops the
        # groups known to start at or past N; an even N leaves no single store
        assert c.ptx.count("st.global.v2.b32") == 2 * min(32, -(-n // 8))
        assert c.ptx.count("st.global.b32") == 0
    assemble(c.ptx)


@pytest.mark.parametrize("args, match", [
    (((64, 64), (64, 32), (64, 64)), r"C \(M, N\) = A \(M, K\) @ B \(N, K\)\^T"),
    (((64, 64), (64, 64), (64, 32)), r"C \(M, N\) = A \(M, K\) @ B \(N, K\)\^T"),
])
def test_shape_rules(args, match):
    a, b, c = args
    with pytest.raises(cute.CuteValueError, match=match):
        cute.compile(gemm, spec("BFloat16", a), spec("BFloat16", b), spec("Float32", c))


def test_type_and_layout_rules():
    with pytest.raises(cute.CuteValueError,
                       match="both BFloat16, both Float16, or 8-bit floats .*got BFloat16 and Float16"):
        cute.compile(gemm, spec("BFloat16", (64, 64)), spec("Float16", (64, 64)), spec("Float32", (64, 64)))
    with pytest.raises(cute.CuteValueError, match="C is Float32, BFloat16 or Float16, got Int32"):
        cute.compile(gemm, spec("BFloat16", (64, 64)), spec("BFloat16", (64, 64)), spec("Int32", (64, 64)))
    with pytest.raises(cute.CuteValueError, match="a must be row-major"):
        cute.compile(gemm, spec("BFloat16", (64, 64), (1, 64)), spec("BFloat16", (64, 64)), spec("Float32", (64, 64)))
    with pytest.raises(cute.CuteValueError, match="stages must be an int in 2..6, got 7"):
        _compile(64, 64, 64, stages=7)
    # K of 100 bf16: rows of 200 bytes, which TMA cannot load (its row strides are multiples of 16 bytes)
    for ab, k, kp in (("BFloat16", 100, None), ("Float16", 64, 68)):
        with pytest.raises(cute.CuteValueError, match=r"a's rows must start on 16-byte boundaries .* a row stride "
                                                      rf"of a multiple of 8 elements .* got {kp or k}"):
            _compile(300, 260, k, ab=ab, kp=kp)
    _compile(300, 260, 100, kp=104)                      # padded rows: fine


@pytest.mark.parametrize("m, k, kwargs, match", [
    (0, 4096, {}, r"M, N, K >= 1, got \(0, 4096, 4096\)"),          # the chosen tile sees the zero first
    (512, 0, {}, r"M, N, K >= 1, got \(512, 4096, 0\)"),
    (512, 4096, dict(tile_n=np.int64(128)), r"tile_n must be one of \(128, 192, 256\), got np.int64\(128\)"),
    (512, 4096, dict(tile_n="128"), r"tile_n must be one of \(128, 192, 256\), got '128'"),
    (512, 4096, dict(stages=np.int64(6)), r"stages must be an int in 2..6, got np.int64\(6\)"),
])
def test_the_chosen_tile_and_stages_leave_hostile_values_to_the_rules(m, k, kwargs, match):
    with pytest.raises(cute.CuteValueError, match=match):
        cute.compile(gemm, spec("BFloat16", (m, k)), spec("BFloat16", (4096, k)), spec("Float32", (m, 4096)), **kwargs)


def test_option_rules():
    for tn in (64, 160, 512):
        with pytest.raises(cute.CuteValueError, match=rf"tile_n must be one of \(128, 192, 256\), got {tn}"):
            _compile(64, 64, 64, tile_n=tn)
    with pytest.raises(cute.CuteValueError, match="reg_realloc must be a bool, got 1"):
        _compile(64, 64, 64, reg_realloc=1)
    with pytest.raises(cute.CuteValueError, match=r"epilogue must be one of \('scalar', 'vector', 'tma'\), "
                                                  r"got 'smem'"):
        _compile(64, 64, 64, epilogue="smem")
    # 128 x 256 x 64 tiles of 16-bit A and B: 48 KiB a stage; 5 stages (240 KiB + barriers) exceed 227 KiB
    with pytest.raises(cute.CuteValueError, match=r"5 stages of 128x256x64 tiles need 247888 bytes of shared "
                                                  r"memory, more than 232448"):
        _compile(64, 64, 64, stages=5, epilogue="vector")
    _compile(64, 64, 64, stages=5, tile_n=128)   # 160 KiB + the TMA epilogue's 32 KiB: fits
    _compile(64, 64, 64, stages=6, tile_n=128)   # 192 + 32 KiB: fits
    _compile(64, 64, 64, stages=4)               # 192 + 32 KiB: fits


def test_cluster_and_persistent_rules():
    with pytest.raises(cute.CuteValueError, match=r"cluster_m must be one of \(1, 2\) or None, got 4"):
        _compile(64, 64, 64, cluster_m=4)
    with pytest.raises(cute.CuteValueError, match=r"persistent is a bool or a number of CTAs >= cluster_m \(2\), "
                                                  r"got 1"):
        _compile(64, 64, 64, cluster_m=2, persistent=1)
    with pytest.raises(cute.CuteValueError, match=r"persistent is None, a bool or a number of CTAs, got 'yes'"):
        _compile(64, 64, 64, persistent="yes")
    import numpy as np

    for bad in (0, -3, np.int64(8), 8.0, "8"):
        with pytest.raises(cute.CuteValueError, match=r"persistent is None, a bool or a number of CTAs"):
            _compile(64, 64, 64, persistent=bad)
    for bad in (True, 0, -1, np.int32(2)):
        with pytest.raises(cute.CuteValueError, match=r"cluster_m must be one of \(1, 2\) or None"):
            _compile(64, 64, 64, cluster_m=bad)


def test_split_rules():
    import numpy as np

    for bad in (0, 3, 16, True, 2.0, np.int64(2), "2"):
        with pytest.raises(cute.CuteValueError, match=r"split_k must be one of \(1, 2, 4, 8\) or None"):
            _compile(512, 512, 4096, split_k=bad)
    for other in (dict(cluster_m=2), dict(persistent=True), dict(persistent=4)):
        with pytest.raises(cute.CuteValueError, match=r"split_k=2 makes a cluster of 2 CTAs per tile, one tile each: "
                                                      r"it needs cluster_m 1 and persistent False"):
            _compile(512, 512, 4096, split_k=2, **other)
    # 200 k-tiles of 64: a split of 4 needs 4
    with pytest.raises(cute.CuteValueError, match=r"split_k=4 needs a static K of at least 4 k-tiles of 64, got K=192"):
        _compile(512, 512, 192, split_k=4)
    # a 128 x 256 fp32 partial (128 KiB) does not fit over 2 stages of 48 KiB
    with pytest.raises(cute.CuteValueError, match=r"split_k=2 sums the 128x256 fp32 partial products over the stages' "
                                                  r"shared memory: 2 stages of 128x256x64 tiles are too few "
                                                  r"\(at least 3\)"):
        _compile(512, 512, 4096, split_k=2, stages=2)
    _compile(512, 512, 4096, split_k=2, stages=2, tile_n=128)     # 64 KiB over 2 x 32 KiB: fits


def _expected_split(m, n, k, sms, tile_n=256):
    """The default's split of K, by its documented rule: the largest power of two up to 8 whose CTAs fit one wave
    of the SMs, whose clusters (a tile's splits) fit the clusters the device holds at once, and that leaves each
    split at least 8 k-tiles."""
    from examples.gemm_plan import cluster_capacity

    tiles, k_tiles = -(-m // 128) * -(-n // tile_n), -(-k // 64)
    return next(s for s in (8, 4, 2, 1)
                if s == 1 or (tiles * s <= sms and k_tiles >= 8 * s and tiles <= cluster_capacity(s)))


def _expected_tile_n(m, n, k, sms):
    """The default's tile N, by its documented rule: with 64 k-tiles or more, 128 where M < N and 128 x 256 tiles
    would split K by exactly 2, or where 128 x 128 tiles (with their split) fill one wave with at least as many
    CTAs as 128 x 256 ones; else 256."""
    if -(-k // 64) < 64:
        return 256
    if m < n and _expected_split(m, n, k, sms) == 2:
        return 128
    ctas = {}
    for tn in (128, 256):
        c = -(-m // 128) * -(-n // tn) * _expected_split(m, n, k, sms, tn)
        ctas[tn] = c if c <= sms else 0
    return 128 if ctas[128] and ctas[256] <= ctas[128] else 256


@pytest.mark.parametrize("m, n, k", [(512, 512, 16384), (512, 4096, 16384), (4096, 512, 4096), (512, 512, 4096),
                                     (512, 512, 512), (4096, 4096, 4096), (300, 520, 1000), (64, 64, 64),
                                     (512, 4096, 4096), (512, 4096, 2048), (4096, 512, 16384)])
def test_the_default_splits_k_for_few_tiles(m, n, k):
    from examples.tma_tiled import sm_count

    sms = sm_count()
    tile_n = _expected_tile_n(m, n, k, sms)
    split = _expected_split(m, n, k, sms, tile_n)
    c = _compile(m, n, k)
    (launch,) = c.launches
    assert _mma(tile_n) in c.ptx
    tiles = -(-m // 128) * -(-n // tile_n)
    if split > 1:       # a cluster of split CTAs per tile, one tile each
        assert launch.cluster == (split, 1, 1) and launch.grid == (tiles * split, 1, 1)
        assert c.ptx.count("st.async") > 0
    else:               # persistent 2x1 clusters
        clusters = -(-m // 256) * -(-n // tile_n)
        assert launch.cluster == (2, 1, 1) and launch.grid == (2 * min(sms // 2, clusters), 1, 1)
        assert "st.async" not in c.ptx
    if sms == 132:      # the shapes' tiles and splits on a 132-SM device (and without one)
        assert (tile_n, split) == {(512, 512, 16384): (128, 4), (512, 4096, 16384): (128, 1),
                                   (4096, 512, 4096): (128, 1), (512, 512, 4096): (128, 4), (300, 520, 1000): (256, 2),
                                   (512, 4096, 4096): (128, 1), (512, 4096, 2048): (256, 2),
                                   (4096, 512, 16384): (128, 1)}.get((m, n, k), (256, 1))
    # anything asked for keeps the 128 x 256 tiles
    if tile_n == 128:
        assert _mma(256) in _compile(m, n, k, cluster_m=2).ptx and _mma(256) in _compile(m, n, k, split_k=2).ptx


@pytest.mark.parametrize("out, split, tile_n, slot_stores, tma", [
    ("BFloat16", 2, 256, 16, True),      # 128 values per thread: 64 per slice, 16 bytes (4 values) a store
    ("Float32", 4, 256, 8, True),        # 32 values per slice; 64-column slices: two fp32 subtiles
    ("BFloat16", 8, 128, 2, False),      # 8 values per slice; 16-column slices: narrower than a subtile
])
def test_split_k_ptx_sends_slices_to_peers_and_sums_them(out, split, tile_n, slot_stores, tma, filecheck, assemble):
    c = _compile(512, 512, 4096, "BFloat16", out, split_k=split, tile_n=tile_n)
    (launch,) = c.launches
    assert launch.cluster == (split, 1, 1) and launch.grid == (4 * (512 // tile_n) * split, 1, 1)
    filecheck(c.ptx, [
        "CHECK: mbarrier.init.shared",
        "CHECK: fence.mbarrier_init.release.cluster;",
        "CHECK: mbarrier.arrive.expect_tx.shared",
        "CHECK: wgmma.wait_group.sync.aligned {{[ 	]*}}0;",
        # every CTA has read its stages; the slices go to the peers; the sum once this CTA's have landed
        "CHECK: barrier.cluster.arrive",
        "CHECK: barrier.cluster.wait",
        "CHECK: mapa.shared::cluster",
        "CHECK: st.async.shared::cluster.mbarrier::complete_tx::bytes.v4",
        "CHECK: mbarrier.try_wait.parity.shared",
        "CHECK: add.rn.f32",                # .rn: never contracted into an FMA
        "CHECK: cp.async.bulk.tensor.2d.global.shared::cta" if tma else "CHECK: st.global",
    ])
    # every slice q has its code (sent when q is not this CTA's split): slot_stores 16-byte stores each
    assert c.ptx.count("st.async.shared::cluster") == split * slot_stores
    assert c.ptx.count("wgmma.mma_async") == 8
    assemble(c.ptx)


@pytest.mark.parametrize("m, n, kwargs, grid, cluster", [
    (1024, 1024, dict(cluster_m=1, persistent=False), 32, 1),    # 8 x 4 tiles of 128 x 256
    (1024, 1024, dict(cluster_m=2, persistent=False), 32, 2),    # 4 x 4 cluster tiles, 2 CTAs each
    (1152, 1024, dict(cluster_m=2, persistent=False), 40, 2),    # 9 tiles along M: 5 cluster tiles
    (1024, 1024, dict(persistent=7, cluster_m=1), 7, 1),         # 7 CTAs walk 32 tiles
    (1024, 1024, dict(persistent=7, cluster_m=2), 6, 2),         # 3 clusters
    (1024, 1024, dict(persistent=132, cluster_m=1), 32, 1),      # never more CTAs than tiles
    (1024, 1024, dict(persistent=132, cluster_m=2), 32, 2),
    (1024, 1024, dict(), 32, 2),                                 # the default: persistent, 2x1 clusters
    (8192, 8192, dict(), "sms", 2),                              # 1024 cluster tiles: a cluster per 2 SMs
])
def test_grid_of_clusters_and_persistent_ctas(m, n, kwargs, grid, cluster):
    c = _compile(m, n, 128, **kwargs)
    (launch,) = c.launches
    if grid == "sms":
        from examples.tma_tiled import sm_count

        grid = sm_count() // 2 * 2
    assert launch.grid == (grid, 1, 1) and launch.cluster == (cluster, 1, 1)


def test_cluster_ptx_multicasts_b_and_releases_both_ctas_stages(filecheck, assemble):
    c = _compile(1024, 1024, 1024, out="BFloat16", cluster_m=2, persistent=66)
    filecheck(c.ptx, [
        "CHECK: .target sm_90a",
        "CHECK: fence.mbarrier_init.release.cluster;",
        "CHECK: barrier.cluster.arrive",
        "CHECK: barrier.cluster.wait",
        # A for this CTA alone, B's half multicast to both CTAs of the cluster
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [",
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
        # a consumer warp releases the stage on both CTAs' empty barriers
        "CHECK: mapa.shared::cluster.u32",
        "CHECK-NEXT: mbarrier.arrive.release.cta.shared::cluster.b64",
    ])
    assert c.ptx.count("multicast::cluster") == 1 and c.ptx.count("wgmma.mma_async") == 8
    assemble(c.ptx)


# (C's type, TMA stores of a 128 x 256 tile: 64-row subtiles of 128 bytes per warpgroup, the instruction that
# writes a subtile to shared memory, and how many of them a thread issues per tile)
@pytest.mark.parametrize("out, subtiles, smem_store, per_thread", [
    ("BFloat16", 4, "stmatrix.sync.aligned.m8n8.x4.shared.b16", 16),    # 128 accumulators, 8 per stmatrix
    ("Float16", 4, "stmatrix.sync.aligned.m8n8.x4.shared.b16", 16),
    ("Float32", 8, "st.shared.v2.b32", 64),                              # a pair of columns per store
])
def test_tma_epilogue_goes_through_shared_memory(out, subtiles, smem_store, per_thread, filecheck, assemble):
    c = _compile(1024, 1024, 1024, "BFloat16", out, split_k=1)      # the default epilogue, without a split of K
    filecheck(c.ptx, [
        "CHECK: wgmma.wait_group.sync.aligned {{[ \t]*}}0;",
        # a subtile: written to shared memory, fenced for the async proxy; the store before it has read its
        # buffer; the warpgroup's barrier; the TMA store of the subtile, committed as a bulk group
        f"CHECK: {smem_store}",
        "CHECK: fence.proxy.async.shared::cta;",
        "CHECK: cp.async.bulk.wait_group.read {{[ \t]*}}0;",
        "CHECK: bar.sync {{[ \t]*}}{{%r[0-9]+}}, 128;",
        "CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
        "CHECK: cp.async.bulk.commit_group;",
        f"CHECK: {smem_store}",
    ])
    assert c.ptx.count(smem_store) == per_thread
    assert c.ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == subtiles
    assert c.ptx.count("cp.async.bulk.commit_group") == subtiles
    assert c.ptx.count("fence.proxy.async.shared::cta") == subtiles
    assert c.ptx.count("cp.async.bulk.wait_group.read") == subtiles + 1     # + the last, before the CTA exits
    assert "st.global" not in c.ptx
    assemble(c.ptx)


@pytest.mark.parametrize("n, ldc, c_offset, tma", [
    (1024, 1024, 0, True),
    (1020, 1024, 0, True),      # rows of 255 granules
    (1022, 1024, 0, False),     # rows of 4088 bytes: a box at the end of a row would write past it
    (1024, 1026, 0, False),     # a row stride of 4104 bytes: not whole granules
    (1024, 1024, 8, False),     # C 8 bytes past a 16-byte boundary
])
def test_tma_epilogue_only_where_tma_can_store_to_c(n, ldc, c_offset, tma, assemble):
    c = _compile(512, n, 256, ldc=ldc, c_address=(1 << 24) + c_offset)
    assert ("cp.async.bulk.tensor.2d.global.shared::cta" in c.ptx) == tma
    # otherwise the vector epilogue's pairs (C's pairs are 8-byte aligned in every case)
    assert ("st.global.v2.b32" in c.ptx) == (not tma)
    assemble(c.ptx)


def test_group_rules():
    import numpy as np

    for bad in (0, -1, True, 2.0, np.int64(8), "8", 2 ** 31, 2 ** 70):
        with pytest.raises(cute.CuteValueError, match=r"group_m is None or a positive int below 2\*\*31"):
            _compile(64, 64, 64, group_m=bad)
    # the largest group builds (its products of tile counts are 64-bit), as None does
    big, none = _compile(1024, 8192, 1024, group_m=2 ** 31 - 1), _compile(1024, 8192, 1024, group_m=None)
    assert big.launches[0].grid == none.launches[0].grid and "wgmma.mma_async" in big.ptx


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 20), st.integers(1, 20), st.integers(1, 25), st.sampled_from([1, 2]))
def test_the_tile_order_visits_every_tile_once_a_group_at_a_time(cluster_tiles_m, tiles_n, group_m, cluster_m):
    from examples.gemm import _tile_of

    num = cluster_tiles_m * tiles_n
    for rank in range(cluster_m):
        seen = [_tile_of(t, cluster_tiles_m, tiles_n, group_m, cluster_m, rank) for t in range(num)]
        assert sorted(seen) == [(cm * cluster_m + rank, tn) for cm in range(cluster_tiles_m)
                                for tn in range(tiles_n)]
        # the tiles of one group span at most group_m rows of cluster tiles, and M is fastest within it
        for start in range(0, num, group_m * tiles_n):
            rows = {tm // cluster_m for tm, _ in seen[start:start + group_m * tiles_n]}
            assert len(rows) <= group_m and max(rows) - min(rows) < group_m
        assert seen[0] == (rank, 0)
        if num > 1:     # M fastest: the second tile is the next row's, unless the group has one row
            one_row = min(group_m, cluster_tiles_m) == 1 and tiles_n > 1
            assert seen[1] == ((rank, 1) if one_row else (cluster_m + rank, 0))


def _between_mmas(ptx):
    """The instructions between consecutive ``wgmma.mma_async`` of the kernel, inline-assembly blocks but the MMAs'
    counted by name (``add_lo32`` for a descriptor's offset added to its low word)."""
    body = ptx[ptx.index(".entry"):]

    def name(block):
        text = block.group(0)
        return "MMA" if "wgmma.mma_async" in text else "add_lo32" if "add.u32 lo, lo," in text else "asm"
    body = re.sub(r"// begin inline asm.*?// end inline asm", name, body, flags=re.S)
    return [[line.strip() for line in gap.splitlines() if line.strip() and not line.strip().startswith(("//", "$"))]
            for gap in body.split("MMA")[1:-1]]


@pytest.mark.parametrize("kwargs", [{}, dict(tile_n=128, persistent=False), dict(split_k=2)])
def test_a_k_blocks_descriptors_are_the_stages_plus_a_constant(kwargs):
    """Inside a k-tile, each k-block's two descriptors are their stage's descriptors plus a constant added to the
    low word (one ``add_lo32`` each): no address is shifted, masked or converted between the MMAs (the
    descriptors used to be rebuilt from the tile's address for every k-block)."""
    ptx = _compile(512, 4096, 4096, out="BFloat16", stages=None, **kwargs).ptx
    inside = [gap for gap in _between_mmas(ptx) if not any("commit_group" in line for line in gap)]
    assert len(inside) >= 6, "three gaps inside each of the prologue's and the loop's k-tiles"
    for gap in inside:
        assert gap.count("add_lo32") == 2, gap
        arithmetic = [line for line in gap if line not in ("add_lo32", "asm") and not line.startswith("mov.b32")]
        assert not arithmetic, f"instructions between a k-tile's MMAs: {arithmetic}"
