"""On a Hopper GPU: the one-CTA product of 64*atom_m x N x 64 through make_tiled_mma / partitions / descriptor
fragments / cute.gemm (one or two warpgroups), against torch.matmul in fp32."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.nvgpu import warpgroup as wg  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402
from _wgmma_tiled_kernels import tiled_product_program  # noqa: E402

pytestmark = pytest.mark.gpu
KT = 4


@pytest.mark.parametrize("ab, atom_m, n, gemm_all_k", [
    ("bfloat16", 1, 64, False), ("bfloat16", 2, 128, False), ("float16", 2, 256, True), ("float16", 1, 128, True)])
def test_tiled_warpgroup_product_matches_torch(ab, atom_m, n, gemm_all_k):
    dt = cute.BFloat16 if ab == "bfloat16" else cute.Float16
    op = wg.MmaF16BF16Op(dt, cute.Float32, (64, n, 16))
    host, specs = tiled_product_program(op, atom_m, KT, gemm_all_k)
    c = cute.compile(host, *specs)  # built first, everywhere
    assert c.ptx.count("wgmma.mma_async") == KT
    torch = hopper_torch()
    tdt = getattr(torch, ab)
    m = 64 * atom_m
    g = torch.Generator(device="cpu").manual_seed(n + atom_m)
    a = torch.randn(m, 16 * KT, generator=g).to(tdt).cuda()
    b = torch.randn(n, 16 * KT, generator=g).to(tdt).cuda()
    out = torch.full((m * n,), float("nan"), dtype=torch.float32, device="cuda")
    host(a.reshape(-1), b.reshape(-1), out)
    torch.cuda.synchronize()
    want = torch.matmul(a.float(), b.float().t())
    torch.testing.assert_close(out.reshape(m, n), want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("a_t, b_t, atom_m, n, gemm_all_k", [
    ("float8_e4m3fn", "float8_e4m3fn", 1, 64, False), ("float8_e5m2", "float8_e4m3fn", 2, 128, True),
    ("float8_e4m3fn", "float8_e5m2", 2, 256, False)])
def test_tiled_8_bit_warpgroup_product_matches_torch(a_t, b_t, atom_m, n, gemm_all_k):
    """``MmaF8Op`` (K 32 per instruction): the product of 8-bit floats against torch's in float64. Each product of
    two 8-bit floats is exact; Hopper's tensor cores add them with fewer mantissa bits than fp32 (about 14, as
    DeepSeek-V3's report measured), hence the tolerance."""
    names = {"float8_e4m3fn": cute.Float8E4M3FN, "float8_e5m2": cute.Float8E5M2}
    op = wg.MmaF8Op(names[a_t], names[b_t], cute.Float32, (64, n, 32))
    host, specs = tiled_product_program(op, atom_m, KT, gemm_all_k)
    c = cute.compile(host, *specs)  # built first, everywhere
    assert c.ptx.count("wgmma.mma_async") == KT
    torch = hopper_torch()
    m = 64 * atom_m
    g = torch.Generator(device="cpu").manual_seed(n + atom_m + 8)
    a = torch.randn(m, 32 * KT, generator=g).to(getattr(torch, a_t)).cuda()
    b = torch.randn(n, 32 * KT, generator=g).to(getattr(torch, b_t)).cuda()
    out = torch.full((m * n,), float("nan"), dtype=torch.float32, device="cuda")
    host(a.reshape(-1), b.reshape(-1), out)
    torch.cuda.synchronize()
    want = torch.matmul(a.double(), b.double().t()).float()
    torch.testing.assert_close(out.reshape(m, n), want, rtol=1e-3, atol=2e-2)
