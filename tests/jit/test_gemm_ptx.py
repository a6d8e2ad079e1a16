"""Kernel 13 (examples.gemm) without a GPU: its PTX (TMA loads, the WGMMAs of the prologue and of the pipelined
main loop, one group kept in flight, predicated stores) FileChecked and assembled for sm_90a, and its rules."""

import pytest

import cute_py as cute
from examples import gemm

spec = cute.compiler.DeviceArraySpec
MMA = "wgmma.mma_async.sync.aligned.m64n128k16.f32"


def _compile(m, n, k, ab="BFloat16", out="Float32", kp=None, stages=4):
    kp = kp or k
    return cute.compile(gemm, spec(ab, (m, k), (kp, 1)), spec(ab, (n, k), (kp, 1)), spec(out, (m, n)), stages)


@pytest.mark.parametrize("ab, out, store", [("BFloat16", "Float32", "st.global.b32"),
                                            ("Float16", "BFloat16", "st.global.b16")])
def test_pipelined_gemm_ptx(ab, out, store, filecheck, assemble):
    c = _compile(1024, 1024, 1024, ab, out)
    t = "bf16" if ab == "BFloat16" else "f16"
    filecheck(c.ptx, [
        "CHECK: .target sm_90a",
        "CHECK: mbarrier.init.shared",
        # the producer: one A and one B tile per k-tile, both on the stage's full barrier
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        # the consumers: k-tile 0, then the loop
        "CHECK: wgmma.fence.sync.aligned;",
        f"CHECK-COUNT-4: {MMA}.{t}.{t}",
        "CHECK: wgmma.commit_group.sync.aligned;",
        "CHECK: mbarrier.try_wait.parity.shared.b64",
        "CHECK: wgmma.fence.sync.aligned;",
        f"CHECK-COUNT-4: {MMA}.{t}.{t}",
        "CHECK: wgmma.commit_group.sync.aligned;",
        "CHECK-NEXT: wgmma.wait_group.sync.aligned {{[ \t]*}}1;",
        "CHECK: mbarrier.arrive",
        "CHECK: wgmma.wait_group.sync.aligned {{[ \t]*}}0;",
        f"CHECK: {store}",
    ])
    assert c.ptx.count("wgmma.mma_async") == 8, "4 k-blocks in k-tile 0 and 4 in the (run-time) loop"
    assert c.ptx.count("cp.async.bulk.tensor") == 2
    assert c.ptx.count(store) == 64, "64 accumulators per thread (128x128 over 256 threads)"
    assemble(c.ptx)


@pytest.mark.parametrize("m, n, k, kp", [(200, 136, 100, 104), (64, 64, 64, None), (4096, 512, 1024, None)])
def test_edge_and_other_shapes_build_and_assemble(m, n, k, kp, assemble):
    c = _compile(m, n, k, kp=kp, stages=3)
    assert "wgmma.mma_async" in c.ptx and "cp.async.bulk.tensor" in c.ptx
    # 64 accumulators per thread; with static N = 64 the columns 64..127 of the tile are known to be outside C
    assert c.ptx.count("st.global.b32") == (32 if n == 64 else 64)
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
