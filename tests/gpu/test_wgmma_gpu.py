"""On a Hopper GPU: one warpgroup's ``wgmma.mma_async`` products (64 x N x 16*k from shared-memory tiles in the
128B-swizzled K-major layout and in MN-major / other swizzles) against ``torch.matmul`` in fp32."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py import arch  # noqa: E402
from cute_py.core.tiling import tile_to_shape  # noqa: E402
from cute_py.nvgpu import warpgroup as wg  # noqa: E402
from cute_py.nvgpu.warpgroup.smem import SmemLayoutAtomKind as K, make_smem_layout_atom  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu
KT = 4  # k-blocks of 16: K = 64


def _major(kind):
    return wg.OperandMajorMode.K if kind.major == "K" else wg.OperandMajorMode.MN


def _program(op, kind_a, kind_b):
    m, n, _ = op.shape_mnk

    @cute.kernel
    def kernel(a, b, out):
        smem = arch.SmemAllocator()
        sA = smem.allocate_tensor(op.a_dtype, tile_to_shape(make_smem_layout_atom(kind_a, 16), (m, 16 * KT)),
                                  byte_alignment=1024)
        sB = smem.allocate_tensor(op.b_dtype, tile_to_shape(make_smem_layout_atom(kind_b, 16), (n, 16 * KT)),
                                  byte_alignment=1024)
        tid = arch.thread_idx()[0]
        # plain copies: A is (M, K) row-major in gmem, B is (N, K) row-major; the smem tensors swizzle
        for i in cute.range_constexpr(m * 16 * KT // 128):
            e = tid + 128 * i
            sA[e // (16 * KT), e % (16 * KT)] = a[e]
        for i in cute.range_constexpr(n * 16 * KT // 128):
            e = tid + 128 * i
            sB[e // (16 * KT), e % (16 * KT)] = b[e]
        arch.fence_view_async_shared()
        arch.sync_threads()
        acc = cute.make_fragment(cute.make_layout(n // 2), op.acc_dtype)
        wg.fence()
        for k in cute.range_constexpr(KT):
            da = wg.make_gmma_desc(cute.local_tile(sA, (m, 16), (0, k)), _major(kind_a))
            db = wg.make_gmma_desc(cute.local_tile(sB, (n, 16), (0, k)), _major(kind_b))
            op.mma(acc, da, db, accumulate=k > 0)
        wg.commit_group()
        wg.wait_group(0)
        # the accumulator layout, written out here from the PTX ISA's figure (not from the op)
        for v in cute.range_constexpr(n // 2):
            row = 16 * (tid // 32) + (tid % 32) // 4 + 8 * ((v // 2) % 2)
            col = 2 * (tid % 4) + v % 2 + 8 * (v // 4)
            out[row * n + col] = acc[v].to(cute.Float32)

    @cute.jit
    def host(a, b, out):
        kernel(a, b, out).launch(grid=1, block=128)

    return host


CASES = [(ab, n, ka, kb) for ab in ("bfloat16", "float16") for n in (64, 128, 256)
         for ka, kb in ((K.K_SW128, K.K_SW128), (K.MN_SW128, K.K_SW64), (K.K_INTER, K.MN_SW32))]


@pytest.mark.parametrize("ab, n, kind_a, kind_b", CASES, ids=lambda x: getattr(x, "name", str(x)))
def test_one_warpgroup_product_matches_torch(ab, n, kind_a, kind_b):
    dt = cute.BFloat16 if ab == "bfloat16" else cute.Float16
    op = wg.MmaF16BF16Op(dt, cute.Float32, (64, n, 16), a_major_mode=_major(kind_a), b_major_mode=_major(kind_b))
    host = _program(op, kind_a, kind_b)
    spec = cute.compiler.DeviceArraySpec
    c = cute.compile(host, spec(dt.name, (64 * 16 * KT,)), spec(dt.name, (n * 16 * KT,)),
                     spec("Float32", (64 * n,)))  # built first, everywhere
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{'bf16' if ab == 'bfloat16' else 'f16'}" in c.ptx
    torch = hopper_torch()
    tdt = getattr(torch, ab)
    g = torch.Generator(device="cpu").manual_seed(n)
    a = torch.randn(64, 16 * KT, generator=g).to(tdt).cuda()
    b = torch.randn(n, 16 * KT, generator=g).to(tdt).cuda()
    out = torch.full((64 * n,), float("nan"), dtype=torch.float32, device="cuda")
    host(a.reshape(-1), b.reshape(-1), out)
    torch.cuda.synchronize()
    want = torch.matmul(a.float(), b.float().t())
    torch.testing.assert_close(out.reshape(64, n), want, rtol=1e-3, atol=1e-3)
