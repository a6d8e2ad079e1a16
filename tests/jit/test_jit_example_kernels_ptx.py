"""Kernels 3-7 compile to PTX with the instructions they are about, in the expected numbers, and assemble."""

import re

import pytest

import cute_py as cute
import examples as ex

F = cute.compiler.DeviceArraySpec


def _count(ptx, pattern):
    return len(re.findall(pattern, ptx))


@pytest.mark.parametrize("dtype,shape,tile,threads,vec_bytes", [
    ("Float32", (1000, 1000), (64, 128), 128, 16), ("BFloat16", (777, 1030), (64, 128), 256, 4),
    ("Float32", (64, 6), (32, 2), 32, 8), ("Float32", (1024, 512), (64, 128), 128, 16)])
def test_cp_async_copy_cp_async_vectors_predicates_and_stores(filecheck, assemble, dtype, shape, tile, threads, vec_bytes):
    c = cute.compile(ex.cp_async_copy, F(dtype, shape), F(dtype, shape), tile, threads)
    eb = 4 if dtype == "Float32" else 2
    per_thread = tile[0] * tile[1] * eb // vec_bytes // threads
    mod = "cg" if vec_bytes == 16 else "ca"
    cp = rf"cp\.async\.{mod}\.shared\.global \[[^]]+\], \[[^]]+\], {vec_bytes}"
    st = {16: r"st\.global\.v4\.b32", 8: r"st\.global\.(v2\.b32|b64)", 4: r"st\.global\.b32"}[vec_bytes]
    if shape[0] % tile[0] == 0 and shape[1] % tile[1] == 0:
        # the tile divides the tensor: no predicates at all
        assert _count(c.ptx, cp + ";") == per_thread and _count(c.ptx, cp + r", %r\d+;") == 0
        assert _count(c.ptx, st) == per_thread
    else:
        # interior tiles copy without predicates, edge tiles with a src-size per vector (zero fill)
        assert _count(c.ptx, cp + ";") == per_thread
        assert _count(c.ptx, cp + r", %r\d+;") == per_thread
        # a store per vector on each path (LLVM may merge the paths' last store into their common tail)
        assert 2 * per_thread - 1 <= _count(c.ptx, st) <= 2 * per_thread
    filecheck(c.ptx, ["CHECK: cp.async.commit_group;", "CHECK: cp.async.wait_group", "CHECK: bar.sync"])
    assemble(c.ptx)


def test_cp_async_copy_zero_fill_uses_src_size_from_the_predicate():
    c = cute.compile(ex.cp_async_copy, F("Float32", (100, 100)), F("Float32", (128, 128)), (64, 128), 128)
    sized = [line for line in c.ptx.splitlines() if "cp.async.cg" in line and re.search(r", 16, %r\d+;$", line)]
    assert len(sized) == 16  # the edge-tile form: 16 vectors per thread, each with a run-time src-size (16 or 0)
    assert "arith.select" in c.mlir


@pytest.mark.parametrize("cluster", [2, 4])
def test_multicast_copy_multicast_ptx(filecheck, assemble, cluster):
    c = cute.compile(ex.tma_multicast_copy, F("BFloat16", (256, 512)), F("BFloat16", (cluster * 256, 512)),
                     (128, 64), cluster, "128B")
    filecheck(c.ptx, [
        "CHECK: mbarrier.init",
        "CHECK: barrier.cluster.arrive.aligned;",
        "CHECK: barrier.cluster.wait.aligned;",
        "CHECK: mbarrier.arrive.expect_tx",
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
        "CHECK: cp.async.bulk.tensor.2d.global.shared::cta",
        "CHECK: barrier.cluster.arrive.aligned;",
    ])
    assert "%cluster_ctarank;" in c.ptx
    # every CTA expects the whole tile (128 x 64 bf16 = 16384 bytes): not only its slice, not the tile per CTA
    expect = re.search(r"mov\.b32 \t(%r\d+), (\d+);\n\tmbarrier\.arrive\.expect_tx\.shared\.b64 %rd\d+, \[[^]]+\], \1;",
                       c.ptx)
    assert expect is not None and int(expect.group(2)) == 16384, expect
    assemble(c.ptx)


def test_multicast_copy_rejects_bad_shapes():
    with pytest.raises(cute.CuteValueError, match="dst must have shape"):
        cute.compile(ex.tma_multicast_copy, F("Float32", (256, 512)), F("Float32", (256, 512)), (128, 64), 2)
    with pytest.raises(cute.CuteValueError, match="cluster must be"):
        cute.compile(ex.tma_multicast_copy, F("Float32", (256, 512)), F("Float32", (768, 512)), (128, 64), 3)


def test_reduce_add_reduce_ptx(assemble):
    c = cute.compile(ex.tma_reduce_add, F("Float32", (300, 200)), F("Float32", (300, 200)), (64, 64))
    assert _count(c.ptx, r"cp\.reduce\.async\.bulk\.tensor\.2d\.global\.shared::cta\.add\.tile\.bulk_group") == 1
    assert _count(c.ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global") == 1
    c2 = cute.compile(ex.tma_reduce_add, F("Int32", (256, 256)), F("Int32", (256, 256)), (64, 64), "max")
    assert ".max.tile.bulk_group" in c2.ptx
    assemble(c.ptx)
    with pytest.raises(ValueError):
        cute.compile(ex.tma_reduce_add, F("Float32", (64, 64)), F("Float32", (64, 64)), (64, 64), "mul")


@pytest.mark.parametrize("dtype,tile,threads", [("BFloat16", (64, 64), 128), ("Float32", (32, 32), 128)])
def test_transpose_transpose_moves_every_element_once(filecheck, assemble, dtype, tile, threads):
    c = cute.compile(ex.tma_transpose, F(dtype, (256, 512)), F(dtype, (512, 256)), tile, threads)
    n = tile[0] * tile[1] // threads
    kind = "b16" if dtype == "BFloat16" else "b32"
    assert _count(c.ptx, rf"ld\.shared\.(u|b){kind[1:]}") == n
    assert _count(c.ptx, rf"st\.shared\.(u|b){kind[1:]}") == n
    filecheck(c.ptx, ["CHECK: mbarrier.try_wait", "CHECK: st.shared", "CHECK: fence.proxy.async.shared::cta;",
                      "CHECK: bar.sync", "CHECK: cp.async.bulk.tensor.2d.global.shared::cta"])
    # the two shared tiles are 128B-swizzled: 1024-byte aligned, one after the other
    assert c.smem["tma_transpose_kernel_0"] >= 2 * tile[0] * tile[1] * (2 if dtype == "BFloat16" else 4)
    assemble(c.ptx)


def test_grouped_copy_descriptor_updates(filecheck, assemble):
    shapes = [(256, 512), (100, 200), (64, 64)]
    specs = [x for s in shapes for x in (F("Float32", s), F("Float32", s))]
    c = cute.compile(ex.tma_grouped_copy, F("Uint8", (768,)), (64, 64), *specs)
    ptx = c.ptx
    # tensor 0 has the template's shape: only the addresses change; the others also get dims and strides
    assert _count(ptx, r"tensormap\.replace\.tile\.global_address\.shared::cta\.b1024\.b64") == 6
    assert _count(ptx, r"tensormap\.replace\.tile\.global_dim\.shared::cta\.b1024\.b32") == 2 * 2 + 2 * 2
    assert _count(ptx, r"tensormap\.replace\.tile\.global_stride\.shared::cta\.b1024\.b64") == 2 * 2
    assert _count(ptx, r"tensormap\.cp_fenceproxy\.global\.shared::cta\.tensormap::generic\.release\.gpu\.sync"
                       r"\.aligned") == 6
    assert _count(ptx, r"fence\.proxy\.tensormap::generic\.acquire\.gpu") == 6
    filecheck(ptx, ["CHECK: bar.warp.sync", "CHECK: tensormap.cp_fenceproxy", "CHECK: fence.proxy.tensormap",
                    "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global"])
    # tiles: one run-time loop per tensor (4x8, 2x4 and 1 tiles), each loading through its updated descriptor
    assert _count(c.mlir, r"cute_nvgpu\.tma_load") == 3
    assert _count(ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global") >= 3
    assemble(ptx)


def test_grouped_copy_rejects_bad_arguments():
    a = F("Float32", (64, 64))
    with pytest.raises(cute.CuteValueError, match="pairs"):
        cute.compile(ex.tma_grouped_copy, F("Uint8", (256,)), (64, 64), a)
    with pytest.raises(cute.CuteValueError, match="workspace must hold"):
        cute.compile(ex.tma_grouped_copy, F("Uint8", (128,)), (64, 64), a, a)
    with pytest.raises(cute.CuteValueError, match="same shape"):
        cute.compile(ex.tma_grouped_copy, F("Uint8", (256,)), (64, 64), a, F("Float32", (64, 32)))


def test_cp_async_copy_keeps_predicates_when_the_grid_reaches_past_a_divisible_src():
    # src (128, 512) is a whole number of (32, 256) tiles, but the grid follows dst (192, 512): its last tiles lie
    # past src and must zero-fill, so the predicated (src-size) form must be there
    c = cute.compile(ex.cp_async_copy, F("BFloat16", (128, 512)), F("BFloat16", (192, 512)), (32, 256), 128)
    assert _count(c.ptx, r"cp\.async\.cg\.shared\.global [^;]*, 16, %r\d+;") == 8
    # and dst is covered exactly by the grid: its stores need no predicates (one unconditional store per vector)
    assert _count(c.ptx, r"st\.global\.v4\.b32") == 8
