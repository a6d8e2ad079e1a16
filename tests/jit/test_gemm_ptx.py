"""Kernel 13 (examples.gemm) without a GPU: its PTX (TMA loads, the WGMMAs of the prologue and of the pipelined
main loop, one group kept in flight, predicated stores) FileChecked and assembled for sm_90a, in each of its
configurations (CTA tile, register reallocation, epilogue, 2x1 cluster, persistent CTAs), and its rules."""

import pytest

import cute_py as cute
from examples import gemm

spec = cute.compiler.DeviceArraySpec
ORIGINAL = dict(tile_n=128, reg_realloc=False, epilogue="scalar")


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
    (dict(), "BFloat16", "Float32", 256, r"st.global.v2.b32", 64),
    (dict(tile_n=128, epilogue="vector"), "BFloat16", "Float32", 128, r"st.global.v2.b32", 32),
    (dict(tile_n=256, epilogue="scalar"), "Float16", "Float32", 256, r"st.global.b32", 128),
    (dict(reg_realloc=True), "Float16", "BFloat16", 256, None, 64),
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
    c = _compile(129, 255, 8, ldc=ldc, c_address=(1 << 24) + c_offset)
    assert c.ptx.count("st.global.v2.b32") == pairs
    # 128 accumulators per thread: 64 pairs, or 128 single stores; with pairs, N = 255 is odd and the pair
    # at columns (254, 255) stores its first element alone (one per row of the thread: 2)
    assert c.ptx.count("st.global.b32") == (2 if pairs else 128)
    assemble(c.ptx)


@pytest.mark.parametrize("m, n, k, kp", [(200, 136, 100, 104), (64, 64, 64, None), (4096, 512, 1024, None)])
@pytest.mark.parametrize("kwargs, per_thread", [(ORIGINAL, 64), (dict(), 128)])
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
    with pytest.raises(cute.CuteValueError, match="both BFloat16 or both Float16, got BFloat16 and Float16"):
        cute.compile(gemm, spec("BFloat16", (64, 64)), spec("Float16", (64, 64)), spec("Float32", (64, 64)))
    with pytest.raises(cute.CuteValueError, match="C is Float32, BFloat16 or Float16, got Int32"):
        cute.compile(gemm, spec("BFloat16", (64, 64)), spec("BFloat16", (64, 64)), spec("Int32", (64, 64)))
    with pytest.raises(cute.CuteValueError, match="a must be row-major"):
        cute.compile(gemm, spec("BFloat16", (64, 64), (1, 64)), spec("BFloat16", (64, 64)), spec("Float32", (64, 64)))
    with pytest.raises(cute.CuteValueError, match="stages must be an int in 2..6, got 7"):
        _compile(64, 64, 64, stages=7)


def test_option_rules():
    with pytest.raises(cute.CuteValueError, match=r"tile_n must be one of \(128, 256\), got 192"):
        _compile(64, 64, 64, tile_n=192)
    with pytest.raises(cute.CuteValueError, match="reg_realloc must be a bool, got 1"):
        _compile(64, 64, 64, reg_realloc=1)
    with pytest.raises(cute.CuteValueError, match=r"epilogue must be one of \('scalar', 'vector'\), got 'tma'"):
        _compile(64, 64, 64, epilogue="tma")
    # 128 x 256 x 64 tiles of 16-bit A and B: 48 KiB a stage; 5 stages (240 KiB + barriers) exceed 227 KiB
    with pytest.raises(cute.CuteValueError, match=r"5 stages of 128x256x64 tiles need 247888 bytes of shared "
                                                  r"memory, more than 232448"):
        _compile(64, 64, 64, stages=5)
    _compile(64, 64, 64, stages=5, tile_n=128)   # 160 KiB: fits


def test_cluster_and_persistent_rules():
    with pytest.raises(cute.CuteValueError, match=r"cluster_m must be one of \(1, 2\), got 4"):
        _compile(64, 64, 64, cluster_m=4)
    with pytest.raises(cute.CuteValueError, match=r"persistent is a bool or a number of CTAs >= cluster_m \(2\), "
                                                  r"got 1"):
        _compile(64, 64, 64, cluster_m=2, persistent=1)
    with pytest.raises(cute.CuteValueError, match=r"persistent is a bool or a number of CTAs >= cluster_m \(1\), "
                                                  r"got 'yes'"):
        _compile(64, 64, 64, persistent="yes")
    import numpy as np

    for bad in (0, -3, np.int64(8), 8.0, None):
        with pytest.raises(cute.CuteValueError, match=r"persistent is a bool or a number of CTAs"):
            _compile(64, 64, 64, persistent=bad)
    for bad in (True, 0, -1, np.int32(2)):
        with pytest.raises(cute.CuteValueError, match=r"cluster_m must be one of \(1, 2\)"):
            _compile(64, 64, 64, cluster_m=bad)


@pytest.mark.parametrize("m, n, kwargs, grid, cluster", [
    (1024, 1024, dict(), 32, 1),                                 # 8 x 4 tiles of 128 x 256
    (1024, 1024, dict(cluster_m=2), 32, 2),                      # 4 x 4 cluster tiles, 2 CTAs each
    (1152, 1024, dict(cluster_m=2), 40, 2),                      # 9 tiles along M: 5 cluster tiles
    (1024, 1024, dict(persistent=7), 7, 1),                      # 7 CTAs walk 32 tiles
    (1024, 1024, dict(persistent=7, cluster_m=2), 6, 2),         # 3 clusters
    (1024, 1024, dict(persistent=132), 32, 1),                   # never more CTAs than tiles
    (1024, 1024, dict(persistent=132, cluster_m=2), 32, 2),
])
def test_grid_of_clusters_and_persistent_ctas(m, n, kwargs, grid, cluster):
    c = _compile(m, n, 128, **kwargs)
    (launch,) = c.launches
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
