"""Kernels 3-7 of the JIT on a Hopper GPU: cp.async zero-fill, multicast, TMA reduce-add, swizzled transpose,
per-tensor descriptor updates.

Each case first compiles the kernel and checks its PTX for the instructions it is about (and
assembles it); the launch needs a CUDA device (sm_90) and torch, and is skipped with the reason
otherwise. Results are compared with numpy and, where the CPU reference models the same copy,
with ``cute_py.reference``.
"""

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0)")
np = pytest.importorskip("numpy", reason="the comparison uses numpy")

import cute_py as cute  # noqa: E402
from cute_py import reference as ref  # noqa: E402
import examples as ex  # noqa: E402
from cute_py.nvgpu import cpasync  # noqa: E402
from cute_py.runtime import make_fake_tensor  # noqa: E402
from _tma_copy_check import bits, hopper_torch, torch_dtype  # noqa: E402

pytestmark = pytest.mark.gpu
F = cute.compiler.DeviceArraySpec


def _assembled(compiled, *needles):
    from mlir_dialects.pipeline import to_cubin

    for n in needles:
        assert n in compiled.ptx, f"{n!r} missing from the PTX"
    assert to_cubin(compiled.ptx, "sm_90a")[:4] == b"\x7fELF"


def _randn(torch, shape, dtype, seed=7):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, device="cuda", dtype=torch.float32, generator=gen).to(torch_dtype(torch, dtype))


# -- kernel 3: cp.async with zero-fill ------------------------------------------------------------
K3 = [("Float32", (1000, 1000), (1000, 1000), (64, 128), 128),
      ("Float32", (300, 200), (320, 256), (64, 128), 128),       # dst past src: the zero fill shows
      ("BFloat16", (777, 1030), (777, 1030), (64, 128), 256),    # 4-byte vectors (1030 bf16 rows)
      ("BFloat16", (128, 512), (192, 512), (32, 256), 128)]


@pytest.mark.parametrize("dtype,sshape,dshape,tile,threads", K3)
def test_cp_async_copy_cp_async_copy_zero_fills_partial_tiles(dtype, sshape, dshape, tile, threads):
    c = cute.compile(ex.cp_async_copy, F(dtype, sshape), F(dtype, dshape), tile, threads)
    _assembled(c, "cp.async.c", "cp.async.commit_group;", "cp.async.wait_group", "bar.sync")
    torch = hopper_torch()
    src = _randn(torch, sshape, dtype)
    dst = torch.full(dshape, 5.0, device="cuda", dtype=src.dtype)
    ex.cp_async_copy(src, dst, tile, threads)
    torch.cuda.synchronize()
    want = np.zeros(dshape, dtype=bits(src).dtype)
    want[:sshape[0], :sshape[1]] = bits(src)
    np.testing.assert_array_equal(bits(dst), want)
    if sshape == dshape:  # the CPU reference models same-shape copies
        g2s, _ = ex.cp_async_tiled_copies(dtype, tile, threads, sshape[1])
        layout = cute.Layout(sshape, (sshape[1], 1))
        out = np.zeros_like(bits(src))
        ref.run_cp_async_copy(bits(src).copy(), out, g2s, layout, cute.Layout(tile, (tile[1], 1)), tile)
        np.testing.assert_array_equal(bits(dst), out)


# -- kernel 4: multicast -------------------------------------------------------------------------
K4 = [("Float32", (256, 512), (128, 64), 2, "none"), ("BFloat16", (256, 512), (128, 64), 4, "128B"),
      ("Float32", (128, 200), (64, 64), 4, "none")]


@pytest.mark.parametrize("dtype,shape,tile,cluster,swizzle", K4)
def test_multicast_copy_multicast_every_cta_receives_the_tile(dtype, shape, tile, cluster, swizzle):
    out_shape = (cluster * shape[0], shape[1])
    c = cute.compile(ex.tma_multicast_copy, F(dtype, shape), F(dtype, out_shape), tile, cluster, swizzle)
    _assembled(c, ".multicast::cluster", "barrier.cluster.arrive", "barrier.cluster.wait", "%cluster_ctarank")
    # the CPU reference: each CTA of the multicast group receives the whole tile
    dt = cute.dtypes.dtype_of(dtype)
    g = make_fake_tensor(dt, shape, (shape[1], 1))
    smem = ex.smem_tile_layout(dt, tile, swizzle)
    load, load_t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), g, smem, tile,
                                               num_multicast=cluster)
    store, store_t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), g, smem, tile)
    torch = hopper_torch()
    src = _randn(torch, shape, dtype)
    dst = torch.zeros(out_shape, device="cuda", dtype=src.dtype)
    ex.tma_multicast_copy(src, dst, tile, cluster, swizzle)
    torch.cuda.synchronize()
    got, want = bits(dst), bits(src)
    for r in range(cluster):
        np.testing.assert_array_equal(got[r * shape[0]:(r + 1) * shape[0]], want, err_msg=f"CTA rank {r}")
    flat = np.zeros(want.size, dtype=want.dtype)
    ref.run_tma_copy(want.reshape(-1).copy(), flat, load, load_t, store, store_t, smem, tile, num_multicast=cluster)
    np.testing.assert_array_equal(flat.reshape(shape), got[:shape[0]])


# -- kernel 5: TMA reduce-add --------------------------------------------------------------------
K5 = [("Float32", (512, 384), (128, 64)), ("Float32", (300, 200), (64, 64)), ("Int32", (256, 256), (64, 64))]


@pytest.mark.parametrize("dtype,shape,tile", K5)
def test_reduce_add_tma_reduce_add(dtype, shape, tile):
    c = cute.compile(ex.tma_reduce_add, F(dtype, shape), F(dtype, shape), tile)
    _assembled(c, "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group")
    torch = hopper_torch()
    if dtype == "Int32":
        gen = torch.Generator(device="cuda").manual_seed(3)
        src = torch.randint(-1000, 1000, shape, device="cuda", dtype=torch.int32, generator=gen)
        dst = torch.randint(-1000, 1000, shape, device="cuda", dtype=torch.int32, generator=gen)
    else:
        src, dst = _randn(torch, shape, dtype, 1), _randn(torch, shape, dtype, 2)
    before = dst.cpu().numpy().copy()
    ex.tma_reduce_add(src, dst, tile)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(dst.cpu().numpy(), before + src.cpu().numpy())
    # the CPU reference of the same atoms
    dt = cute.dtypes.dtype_of(dtype)
    g = make_fake_tensor(dt, shape, (shape[1], 1))
    smem = ex.smem_tile_layout(dt, tile, "none")
    load, load_t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), g, smem, tile)
    red, red_t = cpasync.make_tiled_tma_atom(cpasync.CopyReduceBulkTensorTileS2GOp(), g, smem, tile)
    out = before.reshape(-1).copy()
    ref.run_tma_copy(src.cpu().numpy().reshape(-1).copy(), out, load, load_t, red, red_t, smem, tile)
    np.testing.assert_array_equal(dst.cpu().numpy(), out.reshape(shape))


# -- kernel 6: transpose through 128B-swizzled smem -----------------------------------------------
K6 = [("BFloat16", (256, 512), (64, 64), 128), ("Float32", (256, 512), (32, 32), 128),
      ("BFloat16", (200, 136), (64, 64), 256), ("Float32", (512, 256), (32, 32), 64)]


@pytest.mark.parametrize("dtype,shape,tile,threads", K6)
def test_transpose_transpose_through_swizzled_smem(dtype, shape, tile, threads):
    c = cute.compile(ex.tma_transpose, F(dtype, shape), F(dtype, shape[::-1]), tile, threads)
    _assembled(c, "fence.proxy.async.shared::cta", "cp.async.bulk.tensor.2d.global.shared::cta")
    torch = hopper_torch()
    src = _randn(torch, shape, dtype)
    dst = torch.zeros(shape[::-1], device="cuda", dtype=src.dtype)
    ex.tma_transpose(src, dst, tile, threads)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(bits(dst), bits(src).T)


# -- kernel 7: per-tensor descriptor updates ------------------------------------------------------
K7 = [("Float32", [(256, 512), (100, 200), (64, 64), (1000, 36)], (64, 64)),
      ("BFloat16", [(128, 128), (300, 72), (8, 1024)], (32, 64))]


@pytest.mark.parametrize("dtype,shapes,tile", K7)
def test_grouped_copy_grouped_copy_updates_descriptors_on_device(dtype, shapes, tile):
    specs = [x for s in shapes for x in (F(dtype, s), F(dtype, s))]
    c = cute.compile(ex.tma_grouped_copy, F("Uint8", (256 * len(shapes),)), tile, *specs)
    _assembled(c, "tensormap.replace.tile.global_address.shared::cta.b1024.b64",
               "tensormap.replace.tile.global_dim", "tensormap.cp_fenceproxy.global.shared::cta",
               "fence.proxy.tensormap::generic.acquire.gpu")
    torch = hopper_torch()
    srcs = [_randn(torch, s, dtype, 10 + i) for i, s in enumerate(shapes)]
    dsts = [torch.zeros_like(s) for s in srcs]
    workspace = torch.zeros(256 * len(shapes), device="cuda", dtype=torch.uint8)
    ex.tma_grouped_copy(workspace, tile, *[x for p in zip(srcs, dsts) for x in p])
    torch.cuda.synchronize()
    for i, (s, d) in enumerate(zip(srcs, dsts)):
        np.testing.assert_array_equal(bits(d), bits(s), err_msg=f"tensor {i} {tuple(s.shape)}")


# -- kernel 8: st.async into the next CTA's shared memory -------------------------------------------------
K8 = [("Float32", 2, 4, 256), ("Float32", 4, 1, 64), ("Float16", 2, 8, 512), ("Int32", 8, 2, 128),
      ("BFloat16", 4, 2, 128)]


@pytest.mark.parametrize("dtype,cluster,vector,n", K8)
def test_dsmem_exchange_dsmem_stores_rotate_rows_around_the_cluster(dtype, cluster, vector, n, filecheck):
    blocks = 2 * cluster
    c = cute.compile(ex.dsmem_exchange, F(dtype, (blocks, n)), F(dtype, (blocks, n)), cluster, vector)
    bits_per = vector * {"Float32": 32, "Float16": 16, "BFloat16": 16, "Int32": 32}[dtype]
    suffix = {32: ".b32", 64: ".b64", 128: ".v4.b32"}[bits_per]
    stores = n // 32 // vector
    filecheck(c.ptx, ["CHECK: barrier.cluster.arrive", "CHECK: barrier.cluster.wait",
                      "CHECK: mbarrier.arrive.expect_tx",
                      *[f"CHECK: mapa.shared::cluster.u32\nCHECK: mapa.shared::cluster.u32\n"
                        f"CHECK: st.async.shared::cluster.mbarrier::complete_tx::bytes{suffix}"] * stores,
                      "CHECK-NOT: st.async", "CHECK: mbarrier.try_wait.parity"])
    _assembled(c)
    torch = hopper_torch()
    src = _randn(torch, (blocks, n), dtype) if dtype != "Int32" else torch.arange(
        blocks * n, device="cuda", dtype=torch.int32).reshape(blocks, n)
    dst = torch.zeros_like(src)
    ex.dsmem_exchange(src, dst, cluster, vector)
    torch.cuda.synchronize()
    s, d = bits(src), bits(dst)
    for b in range(blocks):
        sender = (b // cluster) * cluster + (b % cluster - 1) % cluster
        np.testing.assert_array_equal(d[b], s[sender], err_msg=f"row {b} should hold row {sender}")
