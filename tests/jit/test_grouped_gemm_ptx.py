"""The grouped GEMM (examples.grouped_gemm) without a GPU: the PTX of its contiguous and masked variants (TMA loads
of A at a group's first row and of B from a 3-D view, the pipelined WGMMAs, the warp's search for a tile over the
group sizes, stmatrix and the TMA or chunked stores of the epilogue) FileChecked and assembled for sm_90a, and its
rules for hostile arguments."""

import pytest

import cute_py as cute
from examples.grouped_gemm import grouped_gemm, grouped_gemm_masked
from _ptxas_report import ptxas_report

spec = cute.compiler.DeviceArraySpec


def _contiguous(total=4096, e=8, n=768, k=2048, ab="BFloat16", out="BFloat16", kp=None, ldc=None, offs="Int32",
                **kwargs):
    kp = kp or k
    return cute.compile(grouped_gemm, spec(ab, (total, k), (kp, 1)), spec(ab, (e, n, k), (n * kp, kp, 1)),
                        spec(out, (total, n), (ldc or n, 1)), spec(offs, (e,)), **kwargs)


def _masked(e=4, max_m=300, n=256, k=1024, ab="Float16", out="Float16", sizes="Int32", **kwargs):
    return cute.compile(grouped_gemm_masked, spec(ab, (e, max_m, k)), spec(ab, (e, n, k)), spec(out, (e, max_m, n)),
                        spec(sizes, (e,)), **kwargs)


def _pipeline_checks(mma, loads, store):
    return [
        "CHECK: .target sm_90a",
        "CHECK: mbarrier.init.shared",
        # the search for a warp's first tile: a shuffle scan and a ballot over 32 groups
        "CHECK: shfl.sync.up.b32",
        "CHECK: vote.sync.ballot.b32",
        # the consumers: k-tile 0, then the pipelined loop keeping one group in flight
        "CHECK: wgmma.fence.sync.aligned;",
        f"CHECK-COUNT-4: {mma}",
        "CHECK: wgmma.commit_group.sync.aligned;",
        "CHECK: wgmma.fence.sync.aligned;",
        f"CHECK-COUNT-4: {mma}",
        "CHECK: wgmma.commit_group.sync.aligned;",
        "CHECK-NEXT: wgmma.wait_group.sync.aligned {{[ \t]*}}1;",
        "CHECK: wgmma.wait_group.sync.aligned {{[ \t]*}}0;",
        # the epilogue: stmatrix into shared memory, then a TMA store or the threads' stores of a group's last rows
        "CHECK: stmatrix.sync.aligned.m8n8.x4.shared.b16",
        *([f"CHECK: cp.async.bulk.tensor.{store}d.global.shared::cta"] if store else []),
        "CHECK: st.global",
        # the producer warp (after the consumers' code): A's and B's loads
        *[f"CHECK: cp.async.bulk.tensor.{d}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" for d in loads],
    ]


def _no_serialised_mma_or_spills(ptx):
    report = ptxas_report(ptx)
    if report is not None:
        notes, spills = report
        assert notes == [], f"ptxas: {notes}"
        assert all(s == (0, 0) for s in spills), f"spills: {spills}"


def test_contiguous_variant_ptx(filecheck, assemble):
    c = _contiguous()
    filecheck(c.ptx, _pipeline_checks("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", (2, 3), 2))
    assert c.ptx.count("wgmma.mma_async") == 8
    # loads: A (2-D, at the group's row) and B (3-D, the expert's matrix); 4 TMA stores of 64 x 64 per warpgroup
    assert c.ptx.count("cp.async.bulk.tensor.2d.shared::cluster") == 1
    assert c.ptx.count("cp.async.bulk.tensor.3d.shared::cluster") == 1
    assert c.ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == 4
    # a group's last rows: 16-byte chunks from shared memory to C, 4 per thread per subtile
    assert c.ptx.count("st.global.v4.b32") == 16 and c.ptx.count("ld.shared.v4.b32") == 16
    assert "tensormap.replace" not in c.ptx      # one descriptor per operand: none is rewritten on the device
    (launch,) = c.launches
    assert launch.block == (384, 1, 1) and launch.cluster in (None, (1, 1, 1))
    assert launch.grid[0] <= (4096 // 128 + 8) * 3
    assemble(c.ptx)
    _no_serialised_mma_or_spills(c.ptx)


def test_masked_variant_ptx(filecheck, assemble):
    c = _masked(tile_n=128)
    filecheck(c.ptx, _pipeline_checks("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", (3, 3), 3))
    assert c.ptx.count("cp.async.bulk.tensor.3d.shared::cluster") == 2     # A and C of expert g: 3-D views
    assert c.ptx.count("cp.async.bulk.tensor.3d.global.shared::cta") == 2
    (launch,) = c.launches
    assert launch.grid[0] <= 4 * 3 * 2
    assemble(c.ptx)
    _no_serialised_mma_or_spills(c.ptx)


@pytest.mark.parametrize("n, k, kp, ldc", [(130, 72, None, 133), (200, 100, 104, 200), (64, 8, None, 64)])
def test_edge_shapes_build_and_assemble(n, k, kp, ldc, assemble):
    c = _contiguous(total=333, e=3, n=n, k=k, kp=kp, ldc=ldc)
    tma_store = n % 8 == 0 and ldc % 8 == 0
    assert ("cp.async.bulk.tensor.2d.global.shared::cta" in c.ptx) == tma_store
    # C's rows not of whole 16-byte chunks: every row stored by the threads, one element at a time
    assert ("st.global.b16" in c.ptx) == (not tma_store)
    assemble(c.ptx)
    _no_serialised_mma_or_spills(c.ptx)


@pytest.mark.parametrize("kwargs, match", [
    (dict(ab="Float32"), r"A and B are both BFloat16 or both Float16, got Float32 and Float32"),
    (dict(out="Float32"), r"C is BFloat16 or Float16 .*got Float32"),
    (dict(offs="Int64"), r"offs must be Int32, got Int64"),
    (dict(k=100), r"a's rows must start on 16-byte boundaries .*multiples of 8 elements .*got the strides \(100, 1\)"),
    (dict(tile_n=192), r"tile_n must be one of \(128, 256\), got 192"),
    (dict(stages=7), r"stages must be an int in 2..6, got 7"),
    (dict(stages=5), r"5 stages of 128x256x64 tiles need \d+ bytes of shared memory, more than 232448"),
    (dict(ctas=0), r"ctas is None \(one per SM\) or a positive int, got 0"),
    (dict(total=0), r"needs E, N, K and total_M >= 1, got E=8, N=768, K=2048, total_M=0"),
])
def test_contiguous_rules(kwargs, match):
    with pytest.raises(cute.CuteValueError, match=match):
        _contiguous(**kwargs)


def test_mismatched_and_misshapen_arguments_are_refused():
    a, b, c = spec("BFloat16", (512, 256)), spec("BFloat16", (8, 128, 256)), spec("BFloat16", (512, 128))
    offs = spec("Int32", (8,))
    rule = r"grouped_gemm computes C\(total_M, N\) = A\(total_M, K\) @ B\(E, N, K\)\^T per group"
    for args in ((a, b, c, spec("Int32", (7,))),                                 # E of offs != E of B
                 (a, b, spec("BFloat16", (512, 136)), offs),                     # N of C != N of B
                 (spec("BFloat16", (512, 264)), b, c, offs),                     # K of A != K of B
                 (a, b, spec("BFloat16", (500, 128)), offs)):                    # rows of C != rows of A
        with pytest.raises(cute.CuteValueError, match=rule + r".*got A"):
            cute.compile(grouped_gemm, *args)
    with pytest.raises(cute.CuteValueError, match=r"offs must be 1-D, got the shape \(8, 1\)"):
        cute.compile(grouped_gemm, a, b, c, spec("Int32", (8, 1)))
    with pytest.raises(cute.CuteValueError, match=r"b must be 3-D, got the shape \(128, 256\)"):
        cute.compile(grouped_gemm, a, spec("BFloat16", (128, 256)), c, offs)
    with pytest.raises(cute.CuteValueError, match=r"A and B are both BFloat16 or both Float16, got BFloat16 and "
                                                  r"Float16"):
        cute.compile(grouped_gemm, a, spec("Float16", (8, 128, 256)), c, offs)
    with pytest.raises(cute.CuteValueError, match=r"b must be K-major"):
        cute.compile(grouped_gemm, a, spec("BFloat16", (8, 128, 256), (128 * 256, 1, 128)), c, offs)
    with pytest.raises(cute.CuteValueError, match=r"b's rows must start on 16-byte boundaries .*got the strides "
                                                  r"\(32772, 256, 1\)"):
        cute.compile(grouped_gemm, a, spec("BFloat16", (8, 128, 256), (128 * 256 + 4, 256, 1)), c, offs)
    with pytest.raises(cute.CuteValueError, match=r"c must be row-major"):
        cute.compile(grouped_gemm, a, b, spec("BFloat16", (512, 128), (1, 512)), offs)
    with pytest.raises(cute.CuteValueError, match=r"offs must be a tensor, got 8"):
        cute.compile(grouped_gemm, a, b, c, 8)


def test_masked_rules():
    with pytest.raises(cute.CuteValueError, match=r"a must be 3-D, got the shape \(1200, 128\)"):
        cute.compile(grouped_gemm_masked, spec("Float16", (1200, 128)), spec("Float16", (4, 256, 128)),
                     spec("Float16", (4, 300, 256)), spec("Int32", (4,)))
    with pytest.raises(cute.CuteValueError, match=r"grouped_gemm_masked computes C\(E, max_M, N\) = A\(E, max_M, K\)"
                                                  r" @ B\(E, N, K\)\^T .*got A \(4, 300, 128\), B \(4, 256, 128\), C "
                                                  r"\(4, 299, 256\)"):
        cute.compile(grouped_gemm_masked, spec("Float16", (4, 300, 128)), spec("Float16", (4, 256, 128)),
                     spec("Float16", (4, 299, 256)), spec("Int32", (4,)))
    with pytest.raises(cute.CuteValueError, match=r"masked_m must be Int32, got Uint32"):
        _masked(sizes="Uint32")
    with pytest.raises(cute.CuteValueError, match=r"a's rows must start on 16-byte boundaries"):
        cute.compile(grouped_gemm_masked, spec("Float16", (4, 300, 128), (300 * 136 + 3, 136, 1)),
                     spec("Float16", (4, 256, 128)), spec("Float16", (4, 300, 256)), spec("Int32", (4,)))
