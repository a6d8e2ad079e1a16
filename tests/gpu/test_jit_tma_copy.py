"""Kernel 1 of the JIT (TMA tiled copy, gmem -> smem -> gmem, one tile per CTA) on a Hopper GPU.

Each case first builds and checks the PTX and assembles it (everywhere); the launch needs a CUDA
device (sm_90) and torch, and is skipped with the reason otherwise. On the GPU the copy is
compared with numpy (bit-exact) and with ``cute_py.reference.run_tma_copy`` of the same atoms.
"""

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0)")
np = pytest.importorskip("numpy", reason="the comparison uses numpy")

import cute_py as cute  # noqa: E402
from examples import tma_copy  # noqa: E402
from _tma_copy_check import bits, hopper_torch, reference_copy, torch_dtype  # noqa: E402

pytestmark = pytest.mark.gpu

# (dtype, shape, tile, swizzle, cluster)
CASES = [
    ("Float32", (256, 512), (128, 64), "none", (1, 1, 1)),
    ("Float32", (256, 512), (128, 32), "128B", (1, 1, 1)),
    ("BFloat16", (256, 512), (64, 128), "none", (1, 1, 1)),
    ("BFloat16", (256, 512), (128, 64), "128B", (1, 1, 1)),
    ("Float32", (512, 256), (128, 128), "none", (1, 1, 1)),   # 64 KB of shared memory (> 48 KB opt-in)
    ("Float32", (300, 200), (64, 64), "none", (1, 1, 1)),     # partial edge tiles (TMA bounds)
    ("BFloat16", (256, 512), (128, 64), "128B", (2, 1, 1)),   # launched in clusters (cuLaunchKernelEx)
]
IDS = [f"{d}-{s[0]}x{s[1]}-tile{t[0]}x{t[1]}-{sw}-cluster{c[0]}" for d, s, t, sw, c in CASES]


@pytest.mark.parametrize("dtype,shape,tile,swizzle,cluster", CASES, ids=IDS)
def test_jit_tma_copy_matches_numpy_and_thereference_copy(dtype, shape, tile, swizzle, cluster, assemble_ptx):
    spec = cute.compiler.DeviceArraySpec(dtype, shape)
    compiled = cute.compile(tma_copy, spec, spec, tile, swizzle, cluster)
    ptx = compiled.ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group" in ptx
    assert assemble_ptx(ptx)[:4] == b"\x7fELF"

    torch = hopper_torch()
    tdt = torch_dtype(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(1234)
    src = torch.randn(shape, device="cuda", dtype=torch.float32, generator=gen).to(tdt)
    dst = torch.full(shape, -7.0, device="cuda", dtype=tdt)
    tma_copy(src, dst, tile, swizzle, cluster)
    torch.cuda.synchronize()
    got, want = bits(dst), bits(src)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, reference_copy(dtype, shape, tile, swizzle, want))
    # a second call with new buffers of the same specialisation reuses the compiled kernel
    src2 = torch.randn(shape, device="cuda", dtype=torch.float32, generator=gen).to(tdt)
    dst2 = torch.zeros(shape, device="cuda", dtype=tdt)
    tma_copy(src2, dst2, tile, swizzle, cluster)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(bits(dst2), bits(src2))


