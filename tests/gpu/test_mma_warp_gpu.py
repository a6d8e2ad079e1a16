"""On a Hopper GPU: warp-level MMA. A 64x64x64 GEMM of one CTA (4 warps, a 2x2x1 tiled mma.sync, operands
ldmatrix'ed from shared memory, K-major or MN-major) against torch.matmul; single ldmatrix / stmatrix
instructions against the PTX ISA's data movement (cute_py.reference.warp), every element, poisoned buffers."""

import numpy as np
import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.nvgpu import warp  # noqa: E402
from cute_py.reference.warp import ldmatrix, stmatrix  # noqa: E402
from _mma_warp_kernels import ROWS, gemm, ldmatrix_run, row_of, stmatrix_run  # noqa: E402
from _tma_copy_check import hopper_torch, torch_dtype  # noqa: E402

pytestmark = pytest.mark.gpu
F = cute.compiler.DeviceArraySpec


@pytest.mark.parametrize("dtype", ["BFloat16", "Float16"])
@pytest.mark.parametrize("a_mn,b_mn", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_64x64x64_matches_torch_matmul(dtype, a_mn, b_mn):
    spec = lambda mn: F(dtype, (64, 64), strides=(1, 64) if mn else None)  # noqa: E731
    ptx = cute.compile(gemm, spec(a_mn), spec(b_mn), F("Float32", (64, 64)), dtype, a_mn, b_mn).ptx  # built first
    assert "mma.sync.aligned.m16n8k16" in ptx
    torch = hopper_torch()
    td = torch_dtype(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(7)
    A = torch.randn(64, 64, device="cuda", generator=gen).to(td)
    B = torch.randn(64, 64, device="cuda", generator=gen).to(td)
    a = A.t().contiguous().t() if a_mn else A  # the same values, stored MN-major: strides (1, 64)
    b = B.t().contiguous().t() if b_mn else B
    assert a.stride() == ((1, 64) if a_mn else (64, 1))
    C = torch.full((64, 64), float("nan"), dtype=torch.float32, device="cuda")  # every element must be written
    gemm(a, b, C, dtype, a_mn, b_mn)
    torch.cuda.synchronize()
    want = torch.matmul(A.float(), B.float().t())
    assert not torch.isnan(C).any(), "some accumulators were not stored"
    torch.testing.assert_close(C, want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_gives_every_lane_the_isa_elements(num, trans):
    ptx = cute.compile(ldmatrix_run, F("Float16", (ROWS, 8)), F("Float16", (32, 2 * num)), num, trans).ptx
    assert "ldmatrix.sync.aligned" in ptx
    torch = hopper_torch()
    src = torch.arange(ROWS * 8, dtype=torch.float16, device="cuda").reshape(ROWS, 8)  # exact in f16
    out = torch.full((32, 2 * num), -1.0, dtype=torch.float16, device="cuda")  # poison: -1 is not in src
    ldmatrix_run(src, out, num, trans)
    torch.cuda.synchronize()
    addr = np.array([row_of(lane) * 8 for lane in range(32)])
    want = ldmatrix(warp.LdMatrix8x8x16bOp(trans, num), src.cpu().numpy().reshape(-1), addr)
    np.testing.assert_array_equal(out.cpu().numpy(), want)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_writes_the_isa_elements_and_nothing_else(num, trans):
    ptx = cute.compile(stmatrix_run, F("BFloat16", (32, 2 * num)), F("BFloat16", (ROWS, 8)),
                       F("BFloat16", (ROWS, 8)), num, trans).ptx
    assert "stmatrix.sync.aligned" in ptx
    torch = hopper_torch()
    values = torch.arange(32 * 2 * num, dtype=torch.float32, device="cuda").reshape(32, 2 * num).to(torch.bfloat16)
    poison = torch.full((ROWS, 8), -3.0, dtype=torch.bfloat16, device="cuda")
    out = torch.zeros((ROWS, 8), dtype=torch.bfloat16, device="cuda")
    stmatrix_run(values, poison, out, num, trans)
    torch.cuda.synchronize()
    want = np.full(ROWS * 8, -3.0, np.float32)
    addr = np.array([row_of(lane) * 8 for lane in range(32)])
    stmatrix(warp.StMatrix8x8x16bOp(trans, num), want, addr, values.float().cpu().numpy())
    np.testing.assert_array_equal(out.float().cpu().numpy().reshape(-1), want)
