"""Kernel 2 of the JIT (persistent TMA tiled copy, pipelined over 2-4 stages with mbarrier phases) on a Hopper GPU.

Each case first builds and checks the PTX and assembles it (everywhere); the launch needs a CUDA
device (sm_90) and torch, and is skipped with the reason otherwise. On the GPU the copy is
compared with numpy (bit-exact) and with ``cute_py.reference.run_tma_copy`` of the same atoms and
tiles. The cases cover partial edge tiles, more tiles than CTAs (several rounds of the stage loop,
CTAs with different tile counts), CTAs with fewer tiles than stages, and > 48 KB of shared memory.
"""

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0)")
np = pytest.importorskip("numpy", reason="the comparison uses numpy")

import cute_py as cute  # noqa: E402
from examples import tma_copy_pipelined  # noqa: E402
from _tma_copy_check import bits, hopper_torch, reference_copy, torch_dtype  # noqa: E402

pytestmark = pytest.mark.gpu

# (dtype, shape, tile, swizzle, stages, lag, max_ctas)
CASES = [
    ("Float32", (2048, 2048), (64, 128), "none", 4, 1, 40),    # 512 tiles on 40 CTAs: 13 tiles each, 4 rounds of 4
    ("Float32", (1000, 1000), (64, 64), "none", 3, 2, 7),      # partial edge tiles, uneven tiles per CTA
    ("BFloat16", (1024, 1536), (128, 64), "128B", 2, 1, 5),    # 128B swizzle, 192 tiles on 5 CTAs
    ("Float32", (300, 200), (32, 32), "128B", 4, 3, 3),        # swizzled partial tiles, lag 3
    ("BFloat16", (777, 4096), (32, 256), "none", 4, 2, None),  # partial rows, the default persistent grid
    ("Float32", (64, 128), (64, 64), "none", 4, 1, None),      # fewer tiles than stages
    ("Float32", (1536, 1024), (128, 128), "none", 3, 1, 11),   # 192 KB of shared memory (> 48 KB opt-in)
]
IDS = [f"{d}-{s[0]}x{s[1]}-tile{t[0]}x{t[1]}-{sw}-st{st}-lag{lag}-ctas{m}" for d, s, t, sw, st, lag, m in CASES]


@pytest.mark.parametrize("dtype,shape,tile,swizzle,stages,lag,max_ctas", CASES, ids=IDS)
def test_jit_tma_copy_pipelined_matches_numpy_and_thereference_copy(dtype, shape, tile, swizzle, stages, lag, max_ctas,
                                                              assemble_ptx):
    spec = cute.compiler.DeviceArraySpec(dtype, shape)
    compiled = cute.compile(tma_copy_pipelined, spec, spec, tile, swizzle, stages, lag, None, max_ctas)
    ptx = compiled.ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group" in ptx
    assert "mbarrier.try_wait.parity" in ptx and f"cp.async.bulk.wait_group.read \t{lag};" in ptx
    assert assemble_ptx(ptx)[:4] == b"\x7fELF"

    torch = hopper_torch()
    tdt = torch_dtype(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(4321)
    src = torch.randn(shape, device="cuda", dtype=torch.float32, generator=gen).to(tdt)
    dst = torch.full(shape, -7.0, device="cuda", dtype=tdt)
    tma_copy_pipelined(src, dst, tile, swizzle, stages, lag, None, max_ctas)
    torch.cuda.synchronize()
    got, want = bits(dst), bits(src)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, reference_copy(dtype, shape, tile, swizzle, want))
    # repeated launches with new buffers of the same specialisation (the mbarriers start afresh each launch)
    for _ in range(3):
        src2 = torch.randn(shape, device="cuda", dtype=torch.float32, generator=gen).to(tdt)
        dst2 = torch.zeros(shape, device="cuda", dtype=tdt)
        tma_copy_pipelined(src2, dst2, tile, swizzle, stages, lag, None, max_ctas)
        torch.cuda.synchronize()
        np.testing.assert_array_equal(bits(dst2), bits(src2))


