"""On a Hopper GPU: kernel 13, the pipelined TMA + WGMMA GEMM ``C = A @ B^T``, against ``torch.matmul`` in fp32
for tile multiples and partial edge tiles in M, N and K, into a NaN-poisoned, padded C whose padding must stay
untouched, in each of its configurations (CTA tile, register reallocation, epilogue, cluster, persistent CTAs, tile
order)."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from examples import gemm  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu

SHAPES = [(200, 136, 100), (1024, 1024, 1024), (64, 64, 64), (4096, 512, 1024), (129, 255, 8), (300, 72, 520),
          (500, 4000, 4096)]   # the last: wide and of few tiles, the default takes 128 x 128 tiles (_auto_tile_n)
TYPES = [("bfloat16", "float32"), ("float16", "float32"), ("bfloat16", "bfloat16")]
GUARD = 3          # rows of poison above and below C
ALIGNED = "16B"    # a pad making C's row stride the first multiple of 16 bytes past N
# (gemm's keyword arguments, columns of poison after each row of C). An odd row stride (N + 3 for an even N)
# leaves pairs of adjacent columns misaligned, so the vector epilogue stores one element at a time; an even one
# (N + 4) aligns them (C starts GUARD rows into its buffer) and it stores pairs.
CONFIGS = {
    "128x128-scalar": (dict(tile_n=128, reg_realloc=False, epilogue="scalar", cluster_m=1, persistent=False,
                            split_k=1), 3),
    # the default: persistent CTAs in 2x1 clusters, tiles in groups of 8 rows, the epilogue through shared
    # memory and TMA stores (stmatrix for 16-bit C) into a C whose rows start on 16-byte boundaries (ALIGNED: a
    # row stride of N + 1 rounded up to 16 bytes), whose extent the stores clip at; with a row stride TMA cannot
    # take (N + 3), or rows not a multiple of 16 bytes (N = 255), it stores from registers instead
    "default": (dict(), ALIGNED),
    "default-odd-ldc": (dict(), 3),
    "vector-even-ldc": (dict(epilogue="vector", cluster_m=1, persistent=False, split_k=1), 4),
    "128x256-realloc-3-stages": (dict(tile_n=256, reg_realloc=True, stages=3, epilogue="vector", cluster_m=1,
                                      persistent=False, split_k=1), 4),
    "128x128-vector": (dict(tile_n=128, epilogue="vector", cluster_m=1, persistent=False, split_k=1), 4),
    # a 2x1 cluster multicasting B; persistent CTAs (few, so that each walks several tiles, with and without
    # a cluster; 5 CTAs make 2 clusters of 2); the TMA epilogue with tile_n = 128 and groups of one row
    "2x1-cluster": (dict(cluster_m=2, persistent=False, epilogue="vector"), 4),
    "persistent": (dict(persistent=3, cluster_m=1, epilogue="vector", group_m=None), 4),
    "persistent-2x1-cluster": (dict(persistent=5, cluster_m=2, epilogue="scalar", group_m=None), 3),
    "tma-128-5-ctas-group-1": (dict(tile_n=128, persistent=5, group_m=1), ALIGNED),
    # 128 x 192 tiles: persistent 2x1 clusters and the TMA epilogue in three 64-column subtiles, and a CTA per
    # tile storing from registers
    "128x192": (dict(tile_n=192), ALIGNED),
    "128x192-vector": (dict(tile_n=192, epilogue="vector", cluster_m=1, persistent=False), 4),
}
# the default runs with every pair of types on every shape (splitting K on 1024^3 and 4096x512x1024), the other
# configurations with one pair on the shapes of SOME_SHAPES (edge tiles, and several tiles per persistent CTA)
ONE_TYPE = {"2x1-cluster": ("bfloat16", "float32"), "persistent": ("float16", "bfloat16"),
            "persistent-2x1-cluster": ("bfloat16", "float32"), "tma-128-5-ctas-group-1": ("bfloat16", "bfloat16"),
            "default-odd-ldc": ("float16", "float32"), "vector-even-ldc": ("float16", "bfloat16"),
            "128x256-realloc-3-stages": ("bfloat16", "float32"), "128x128-vector": ("bfloat16", "bfloat16"),
            "128x128-scalar": ("float16", "float32"), "128x192": ("bfloat16", "bfloat16"),
            "128x192-vector": ("float16", "float32")}
SIZES = {"bfloat16": 2, "float16": 2, "float32": 4}
# the default's tile N where it is not 256 (gemm's documented rule: wide, few tiles, K split by 2, 64+ k-tiles)
DEFAULT_TILE_N = {(500, 4000, 4096): 128, (512, 512, 4096): 128}


def _padded_k(k):
    return -(-k // 8) * 8   # rows of 16-byte multiples (TMA's row-stride rule)


SOME_SHAPES = [(200, 136, 100), (1024, 1024, 1024), (300, 72, 520)]
CASES = [(m, n, k, ab, out, config) for config in CONFIGS
         for (m, n, k) in (SHAPES if config.startswith("default") else SOME_SHAPES)
         for (ab, out) in ([ONE_TYPE[config]] if config in ONE_TYPE else TYPES)]


@pytest.mark.parametrize("m, n, k, ab, out, config", CASES)
def test_gemm_matches_torch(m, n, k, ab, out, config):
    kwargs, pad = CONFIGS[config]
    _check_gemm(m, n, k, ab, out, kwargs, pad)


# a split of K across a cluster: (M, N, K, types, options, pad of C). TMA-stored slices (fp32 subtiles are 32
# columns wide), slices too narrow for a subtile (stored from registers), an odd row stride (one element per
# store), the default's own split on a shape of few tiles, a single tile whose slices lie partly past N
SPLIT_CASES = [
    (300, 520, 1000, "bfloat16", "float32", dict(split_k=4, tile_n=128), ALIGNED),
    (300, 520, 1000, "bfloat16", "bfloat16", dict(split_k=8, tile_n=128), ALIGNED),
    (129, 255, 520, "float16", "float32", dict(split_k=2), 3),
    (512, 512, 4096, "bfloat16", "bfloat16", dict(), ALIGNED),          # the default: 128 x 128 tiles split by 4
    (512, 512, 4096, "bfloat16", "bfloat16", dict(split_k=8, tile_n=256), ALIGNED),
    (64, 200, 256, "float16", "bfloat16", dict(split_k=4), ALIGNED),
    (1000, 136, 2048, "bfloat16", "float32", dict(split_k=2, epilogue="scalar"), 4),
    (300, 520, 1000, "bfloat16", "float32", dict(split_k=2, tile_n=192), ALIGNED),    # slices of 96 columns
]


@pytest.mark.parametrize("m, n, k, ab, out, kwargs, pad", SPLIT_CASES)
def test_split_k_matches_torch_and_repeats_bit_for_bit(m, n, k, ab, out, kwargs, pad):
    """Each CTA of a cluster multiplies its K range; the slices of the partial products are summed in a fixed
    order, so a second run gives the same bits."""
    c1 = _check_gemm(m, n, k, ab, out, kwargs, pad)
    assert "st.async.shared::cluster" in c1["ptx"]
    c2 = _check_gemm(m, n, k, ab, out, kwargs, pad)
    assert hopper_torch().equal(c1["c"], c2["c"])


def _check_gemm(m, n, k, ab, out, kwargs, pad):
    """Build, check the PTX's form, run into a NaN-poisoned padded C, compare with torch; the PTX and C."""
    cdt = {"bfloat16": "BFloat16", "float16": "Float16", "float32": "Float32"}
    kp = _padded_k(k)
    per_16_bytes = 16 // SIZES[out]
    ldc = (n // per_16_bytes + 1) * per_16_bytes if pad == ALIGNED else n + pad
    spec = cute.compiler.DeviceArraySpec
    c_address = (1 << 24) + GUARD * ldc * SIZES[out]      # where C starts in its buffer, as the call sees it
    c = cute.compile(gemm, spec(cdt[ab], (m, k), (kp, 1)), spec(cdt[ab], (n, k), (kp, 1)),
                     spec(cdt[out], (m, n), (ldc, 1), address=c_address), **kwargs)      # built first, everywhere
    tile_n = kwargs.get("tile_n") or DEFAULT_TILE_N.get((m, n, k), 256)
    (launch,) = c.launches
    split = "st.async" in c.ptx          # a cluster along K (explicit, or the default's for few tiles)
    assert ("multicast::cluster" in c.ptx) == (launch.cluster == (2, 1, 1) and not split)
    assert f"wgmma.mma_async.sync.aligned.m64n{tile_n}k16.f32" in c.ptx and "cp.async.bulk.tensor" in c.ptx
    slice_n = tile_n // (launch.cluster[0] if split else 1)
    tma_store = (kwargs.get("epilogue", "tma") == "tma" and pad == ALIGNED and n % per_16_bytes == 0
                 and slice_n % (128 // SIZES[out]) == 0)
    assert ("cp.async.bulk.tensor.2d.global.shared::cta" in c.ptx) == tma_store
    assert ("stmatrix.sync.aligned.m8n8.x4.shared.b16" in c.ptx) == (tma_store and out != "float32")
    if out == "float32":
        pairs = kwargs.get("epilogue", "tma") in ("vector", "tma") and ldc % 2 == 0
        assert ("st.global.v2.b32" in c.ptx) == (pairs and not tma_store)
    torch = hopper_torch()
    tab, tout = getattr(torch, ab), getattr(torch, out)
    g = torch.Generator(device="cpu").manual_seed(m * 7 + n * 3 + k)
    a_store = torch.randn(m, kp, generator=g).to(tab).cuda()
    b_store = torch.randn(n, kp, generator=g).to(tab).cuda()
    a, b = a_store[:, :k], b_store[:, :k]
    # the pad columns of A and B hold data the GEMM must not read: make any read show
    a_store[:, k:] = float("nan")
    b_store[:, k:] = float("nan")
    c_store = torch.full((m + 2 * GUARD, ldc), float("nan"), dtype=tout, device="cuda")
    cv = c_store[GUARD:GUARD + m, :n]
    gemm(a, b, cv, **kwargs)
    torch.cuda.synchronize()
    want = torch.matmul(a.float(), b.float().t())
    atol = 1e-2 if out == "float32" else 5e-2
    torch.testing.assert_close(cv.float(), want, rtol=1e-2, atol=atol)
    assert torch.isnan(c_store[:GUARD]).all() and torch.isnan(c_store[GUARD + m:]).all(), "rows outside C written"
    assert torch.isnan(c_store[GUARD:GUARD + m, n:]).all(), "columns past C's N written"
    return {"ptx": c.ptx, "c": cv.clone()}


@pytest.mark.parametrize("config", ["128x128-scalar", "vector-even-ldc", "default"])
def test_gemm_is_deterministic_and_reruns_on_the_same_buffers(config):
    kwargs, _ = CONFIGS[config]
    spec = cute.compiler.DeviceArraySpec
    cute.compile(gemm, spec("BFloat16", (256, 192)), spec("BFloat16", (384, 192)), spec("Float32", (256, 384)),
                 **kwargs)
    torch = hopper_torch()
    g = torch.Generator(device="cpu").manual_seed(5)
    a = torch.randn(256, 192, generator=g).to(torch.bfloat16).cuda()
    b = torch.randn(384, 192, generator=g).to(torch.bfloat16).cuda()
    c1 = torch.full((256, 384), float("nan"), device="cuda")
    c2 = torch.full((256, 384), float("nan"), device="cuda")
    gemm(a, b, c1, **kwargs)
    gemm(a, b, c2, **kwargs)
    torch.cuda.synchronize()
    assert torch.equal(c1, c2)


@pytest.mark.parametrize("configs", [
    [dict(), dict(epilogue="scalar"), dict(epilogue="vector", stages=3, reg_realloc=True),
     dict(cluster_m=1, persistent=False), dict(cluster_m=1, persistent=2, group_m=1), dict(persistent=4),
     dict(persistent=2, group_m=None), dict(cluster_m=1, persistent=1, epilogue="vector")],
    [dict(tile_n=128, epilogue="scalar"), dict(tile_n=128, epilogue="vector", stages=6),
     dict(tile_n=128, stages=6)],
])
def test_gemm_options_of_one_tile_agree_bit_for_bit(configs):
    """With one CTA tile, the pipeline's depth, the register budget, the store width, the cluster and the CTA
    that computes a tile (persistent or not) change no value: every element is the same fp32 sum of the same
    instructions, rounded once."""
    torch = hopper_torch()
    g = torch.Generator(device="cpu").manual_seed(11)
    a = torch.randn(300, 520, generator=g).to(torch.bfloat16).cuda()
    b = torch.randn(392, 520, generator=g).to(torch.bfloat16).cuda()
    outs = []
    for kwargs in configs:
        c = torch.full((300, 392), float("nan"), device="cuda")
        gemm(a, b, c, **kwargs)
        outs.append(c)
    torch.cuda.synchronize()
    assert not torch.isnan(outs[0]).any()
    for c in outs[1:]:
        assert torch.equal(c, outs[0])


# the fused epilogue: (M, N, K, A/B type, C type, gemm options, pad of C, bias type or None, bias stride, alpha,
# activation). Edge tiles in M and N, the TMA store and the register stores, a split of K (the epilogue runs on
# each CTA's slice after the sum), a strided bias of each float type.
FUSED_CASES = [
    (300, 520, 1000, "bfloat16", "bfloat16", dict(), ALIGNED, "float32", 1, 0.5, "gelu"),
    (300, 520, 1000, "bfloat16", "float32", dict(), ALIGNED, "bfloat16", 3, 1.0, "silu"),
    (129, 255, 200, "float16", "float16", dict(epilogue="vector"), 3, "float16", 1, -2.0, "relu"),
    (1024, 1024, 1024, "bfloat16", "bfloat16", dict(), ALIGNED, "bfloat16", 1, 1.0, "gelu_tanh"),
    (200, 136, 100, "bfloat16", "float32", dict(tile_n=128, epilogue="scalar", cluster_m=1, persistent=False,
                                                split_k=1), 3, None, 1, 0.125, None),
    (300, 520, 1000, "bfloat16", "bfloat16", dict(split_k=4, tile_n=128), ALIGNED, "float32", 2, 0.5, "silu"),
    (500, 4000, 4096, "bfloat16", "bfloat16", dict(), ALIGNED, "bfloat16", 1, 1.0, "gelu"),
]


@pytest.mark.parametrize("m, n, k, ab, out, kwargs, pad, bias_t, bias_stride, alpha, activation", FUSED_CASES)
def test_fused_epilogue_matches_torch(m, n, k, ab, out, kwargs, pad, bias_t, bias_stride, alpha, activation):
    """``C = activation(alpha * A @ B^T + bias)`` computed in fp32 before the one rounding, against torch's
    functions on the fp32 product, into a NaN-poisoned padded C; a second run gives the same bits."""
    cdt = {"bfloat16": "BFloat16", "float16": "Float16", "float32": "Float32"}
    kp = _padded_k(k)
    per_16_bytes = 16 // SIZES[out]
    ldc = (n // per_16_bytes + 1) * per_16_bytes if pad == ALIGNED else n + pad
    spec = cute.compiler.DeviceArraySpec
    fused = dict(alpha=alpha, activation=activation)
    if bias_t is not None:
        fused["bias"] = spec(cdt[bias_t], (n,), (bias_stride,))
    c = cute.compile(gemm, spec(cdt[ab], (m, k), (kp, 1)), spec(cdt[ab], (n, k), (kp, 1)),
                     spec(cdt[out], (m, n), (ldc, 1), address=(1 << 24) + GUARD * ldc * SIZES[out]), **kwargs,
                     **fused)
    if activation in ("silu", "gelu", "gelu_tanh"):
        assert "ex2.approx" in c.ptx
    torch = hopper_torch()
    F = torch.nn.functional
    tab, tout = getattr(torch, ab), getattr(torch, out)
    g = torch.Generator(device="cpu").manual_seed(m + 5 * n + 11 * k)
    a_store = torch.randn(m, kp, generator=g).to(tab).cuda()
    b_store = torch.randn(n, kp, generator=g).to(tab).cuda()
    a, b = a_store[:, :k], b_store[:, :k]
    a_store[:, k:] = float("nan")
    b_store[:, k:] = float("nan")
    if bias_t is not None:
        bias_store = torch.full((n * bias_stride + 7,), float("nan"), dtype=getattr(torch, bias_t))
        bias_store[:n * bias_stride:bias_stride] = 4 * torch.randn(n, generator=g).to(getattr(torch, bias_t))
        bias_store = bias_store.cuda()
        fused["bias"] = bias_store[:n * bias_stride:bias_stride]
    want = alpha * torch.matmul(a.float(), b.float().t())
    if bias_t is not None:
        want = want + fused["bias"].float()
    want = {None: lambda x: x, "relu": F.relu, "silu": F.silu, "gelu": F.gelu,
            "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}[activation](want)
    outs = []
    for _ in range(2):
        c_store = torch.full((m + 2 * GUARD, ldc), float("nan"), dtype=tout, device="cuda")
        cv = c_store[GUARD:GUARD + m, :n]
        gemm(a, b, cv, **kwargs, **fused)
        torch.cuda.synchronize()
        atol = 2e-2 * abs(alpha) if out == "float32" else 1e-1 * max(1.0, abs(alpha))
        torch.testing.assert_close(cv.float(), want, rtol=1e-2, atol=atol)
        assert torch.isnan(c_store[:GUARD]).all() and torch.isnan(c_store[GUARD + m:]).all(), "rows outside C"
        assert torch.isnan(c_store[GUARD:GUARD + m, n:]).all(), "columns past C's N written"
        outs.append(cv.clone())
    assert torch.equal(outs[0], outs[1])


# 8-bit floats: (M, N, K, A type, B type, C type, gemm options, per-tensor scales). Edge tiles in M, N and K
# (K padded to rows of 16 bytes), the TMA and the register stores, a split of K, mixed E4M3/E5M2.
FP8_CASES = [
    (300, 520, 1000, "float8_e4m3fn", "float8_e4m3fn", "bfloat16", dict(), None),
    (1024, 1024, 1024, "float8_e4m3fn", "float8_e4m3fn", "bfloat16", dict(), (0.5, 4.0)),
    (129, 255, 520, "float8_e5m2", "float8_e4m3fn", "float32", dict(epilogue="vector"), (2.0, 0.25)),
    (300, 520, 4096, "float8_e4m3fn", "float8_e5m2", "bfloat16", dict(split_k=4, tile_n=128), None),
    # the tensor cores' own accumulation over all of K
    (300, 520, 1000, "float8_e4m3fn", "float8_e4m3fn", "bfloat16", dict(fast_accum=True), None),
    (1024, 1024, 1024, "float8_e4m3fn", "float8_e4m3fn", "bfloat16", dict(fast_accum=True), (0.5, 4.0)),
    (300, 520, 4096, "float8_e4m3fn", "float8_e5m2", "float32", dict(split_k=4, tile_n=128, fast_accum=True), None),
    # 128 x 192 tiles: promoted (persistent 2x1 clusters, many tiles), with the turns, and the fast accumulation
    (2048, 6144, 1024, "float8_e4m3fn", "float8_e4m3fn", "bfloat16", dict(tile_n=192), (0.5, 4.0)),
    (300, 520, 1000, "float8_e4m3fn", "float8_e4m3fn", "float32", dict(tile_n=192, pingpong=True), None),
    (129, 255, 520, "float8_e5m2", "float8_e4m3fn", "bfloat16", dict(tile_n=192, fast_accum=True), (2.0, 0.25)),
]


@pytest.mark.parametrize("m, n, k, a_t, b_t, out, kwargs, scales", FP8_CASES)
def test_fp8_gemm_matches_torch(m, n, k, a_t, b_t, out, kwargs, scales):
    """``C = scale_a * scale_b * A @ B^T`` of 8-bit floats against torch's float64 product of the same values,
    into a NaN-poisoned padded C. With ``fast_accum`` Hopper adds the 8-bit products with fewer mantissa bits
    than fp32 (about 14, as DeepSeek-V3's report measured): the tolerance grows with sqrt(K)."""
    cdt = {"bfloat16": "BFloat16", "float32": "Float32", "float8_e4m3fn": "Float8E4M3FN",
           "float8_e5m2": "Float8E5M2"}
    kp = -(-k // 16) * 16
    ldc = n + 8
    spec = cute.compiler.DeviceArraySpec
    extra = {}
    if scales is not None:
        extra = dict(scale_a=spec("Float32", (1,)), scale_b=spec("Float32", (1,)))
    c = cute.compile(gemm, spec(cdt[a_t], (m, k), (kp, 1)), spec(cdt[b_t], (n, k), (kp, 1)),
                     spec(cdt[out], (m, n), (ldc, 1), address=(1 << 24) + GUARD * ldc * SIZES[out]), **kwargs,
                     **extra)
    assert "k32.f32" in c.ptx
    torch = hopper_torch()
    g = torch.Generator(device="cpu").manual_seed(m + n + k)
    a_store = torch.randn(m, kp, generator=g).to(getattr(torch, a_t)).cuda()
    b_store = torch.randn(n, kp, generator=g).to(getattr(torch, b_t)).cuda()
    a, b = a_store[:, :k], b_store[:, :k]
    want = torch.matmul(a.double(), b.double().t())
    if scales is not None:
        extra = dict(scale_a=torch.tensor([scales[0]], device="cuda"), scale_b=torch.tensor([scales[1]], device="cuda"))
        want = want * scales[0] * scales[1]
    c_store = torch.full((m + 2 * GUARD, ldc), float("nan"), dtype=getattr(torch, out), device="cuda")
    cv = c_store[GUARD:GUARD + m, :n]
    gemm(a, b, cv, **kwargs, **extra)
    torch.cuda.synchronize()
    scale = 1.0 if scales is None else scales[0] * scales[1]
    torch.testing.assert_close(cv.double(), want, rtol=2e-2, atol=2e-2 * k ** 0.5 * scale)
    assert torch.isnan(c_store[:GUARD]).all() and torch.isnan(c_store[GUARD + m:]).all(), "rows outside C written"
    assert torch.isnan(c_store[GUARD:GUARD + m, n:]).all(), "columns past C's N written"


def test_fp8_products_are_promoted_into_fp32_unless_fast_accum():
    """K = 16384 of unit normal E4M3 inputs (sums of a few hundred): by default each k-tile's products leave the
    tensor cores for fp32 accumulators, and C stays within 0.25 of the float64 sum (fp32's rounding of it is
    about 0.01); with ``fast_accum=True`` the tensor cores' own accumulation errs by more than 0.5 somewhere
    (0.84 on an H200: the same inputs give the same bits). The per-tensor scales multiply both."""
    torch = hopper_torch()
    m, n, k = 256, 384, 16384
    g = torch.Generator(device="cpu").manual_seed(11)
    a = torch.randn(m, k, generator=g).to(torch.float8_e4m3fn).cuda()
    b = torch.randn(n, k, generator=g).to(torch.float8_e4m3fn).cuda()
    want = torch.matmul(a.double(), b.double().t()) * (0.5 * 4.0)
    scales = dict(scale_a=torch.tensor([0.5], device="cuda"), scale_b=torch.tensor([4.0], device="cuda"))
    errors = []
    for fast in (False, True):
        c = torch.full((m, n), float("nan"), dtype=torch.float32, device="cuda")
        gemm(a, b, c, fast_accum=fast, **scales)
        torch.cuda.synchronize()
        errors.append((c.double() - want).abs().max().item() / 2.0)
    assert errors[0] <= 0.25, f"promoted: {errors[0]}"
    assert errors[1] > 0.5, f"fast_accum: {errors[1]} (the tensor cores' accumulation)"


def _blockwise(torch, a, b, sa, sb):
    """DeepSeek-V3's block-scaled product in float64, ``sum_t scale_a[i, t] * scale_b[j / 128, t] * A[i, 128t..] .
    B[j, 128t..]``, and the same sum of the products' magnitudes (an error bound's scale)."""
    (m, k), n = a.shape, b.shape[0]
    want = torch.zeros(m, n, dtype=torch.float64, device="cuda")
    size = torch.zeros_like(want)
    for t in range(-(-k // 128)):
        at, bt = a[:, 128 * t:128 * t + 128].double(), b[:, 128 * t:128 * t + 128].double()
        row, col = sa[:, t:t + 1].double(), sb[:, t].double().repeat_interleave(128)[:n][None, :]
        want += (at @ bt.t()) * row * col
        size += (at.abs() @ bt.abs().t()) * row * col
    return want, size


@pytest.mark.parametrize("m, n, k, kwargs", [
    (300, 520, 1000, dict()),                                 # edge tiles in M, N and a partial last k-tile
    (128, 2112, 7168, dict()),                                # DeepGEMM's small-M shape, scaled down in M
    (256, 384, 4096, dict(split_k=4, cluster_m=1, persistent=False)),
    (2048, 2176, 640, dict()),                                # 272 tiles: a persistent CTA takes two or three
    # k-tiles in pairs (the default): one k-tile (only the odd last one), 3 and 4 k-tiles a split; one at a time
    (200, 300, 100, dict()),
    (256, 384, 896, dict(split_k=2, cluster_m=1, persistent=False)),
    (300, 520, 1000, dict(reg_realloc=False)),
    # the warpgroups taking turns: one k-tile (only the peeled step), odd and even counts, splits, persistent CTAs
    (200, 300, 100, dict(pingpong=True)),
    (300, 520, 1000, dict(pingpong=True)),
    (256, 384, 4096, dict(split_k=4, cluster_m=1, persistent=False, pingpong=True)),
    (2048, 2176, 640, dict(pingpong=True)),
])
def test_fp8_block_scaled_gemm_matches_the_blockwise_reference(m, n, k, kwargs):
    """DeepSeek-V3's block scaling: ``C[i, j] = sum_t scale_a[i, t] * scale_b[j / 128, t] * A[i, 128t..] .
    B[j, 128t..]``, against the same sum in float64, into a NaN-poisoned padded C."""
    kp = -(-k // 16) * 16
    kt, nt = -(-k // 128), -(-n // 128)
    ldc = n + 8
    spec = cute.compiler.DeviceArraySpec
    c = cute.compile(gemm, spec("Float8E4M3FN", (m, k), (kp, 1)), spec("Float8E4M3FN", (n, k), (kp, 1)),
                     spec("BFloat16", (m, n), (ldc, 1), address=(1 << 24) + GUARD * ldc * 2), **kwargs,
                     scale_a=spec("Float32", (m, kt)), scale_b=spec("Float32", (nt, kt)))
    assert "m64n128k32.f32.e4m3.e4m3" in c.ptx
    torch = hopper_torch()
    g = torch.Generator(device="cpu").manual_seed(m + n + k + 1)
    a_store = torch.randn(m, kp, generator=g).to(torch.float8_e4m3fn).cuda()
    b_store = torch.randn(n, kp, generator=g).to(torch.float8_e4m3fn).cuda()
    a, b = a_store[:, :k], b_store[:, :k]
    sa = (torch.rand(m, kt, generator=g) + 0.5).cuda()
    sb = (torch.rand(nt, kt, generator=g) + 0.5).cuda()
    want, _ = _blockwise(torch, a, b, sa, sb)
    c_store = torch.full((m + 2 * GUARD, ldc), float("nan"), dtype=torch.bfloat16, device="cuda")
    cv = c_store[GUARD:GUARD + m, :n]
    gemm(a, b, cv, **kwargs, scale_a=sa, scale_b=sb)
    torch.cuda.synchronize()
    torch.testing.assert_close(cv.double(), want, rtol=2e-2, atol=4e-2 * k ** 0.5)
    assert torch.isnan(c_store[:GUARD]).all() and torch.isnan(c_store[GUARD + m:]).all(), "rows outside C written"
    assert torch.isnan(c_store[GUARD:GUARD + m, n:]).all(), "columns past C's N written"
    if kwargs.get("reg_realloc") is not False:
        # in pairs or taking turns: the same sums in the same order as one k-tile at a time, the same bits
        plain = torch.empty_like(cv)
        gemm(a, b, plain, **dict(kwargs, pingpong=False, reg_realloc=False), scale_a=sa, scale_b=sb)
        torch.cuda.synchronize()
        assert torch.equal(cv, plain), "pairs or turns changed the result"


@pytest.mark.parametrize("m, n, k, kwargs", [
    (300, 520, 1000, dict()),                                 # edge tiles; the default 2x1 clusters
    (2048, 2176, 640, dict()),                                # persistent CTAs taking two or three tiles
    (256, 384, 4096, dict(split_k=4, cluster_m=1, persistent=False)),
    (300, 520, 1000, dict(pingpong=True)),
    (200, 300, 100, dict(reg_realloc=False, stages=3)),
])
def test_block_scales_of_any_layout_reach_their_rows_and_k_tiles(m, n, k, kwargs):
    """Every row's and k-tile's scale is applied to its own products: scales that differ by powers of two from
    row to row, block to block and k-tile to k-tile (a scale taken from a neighbour errs by at least half its
    term), given column-major (scale_a as DeepGEMM stores it: each k-tile's scales of M contiguous) and as a
    strided view, against the float64 sum: each element within bf16's rounding plus the tensor cores' and fp32's
    accumulation error (2^-9 of the sum of its products' magnitudes); C NaN-poisoned and padded."""
    kt, nt, ldc, kp = -(-k // 128), -(-n // 128), n + 8, -(-k // 16) * 16
    spec = cute.compiler.DeviceArraySpec
    c = cute.compile(gemm, spec("Float8E4M3FN", (m, k), (kp, 1)), spec("Float8E4M3FN", (n, k), (kp, 1)),
                     spec("BFloat16", (m, n), (ldc, 1), address=(1 << 24) + GUARD * ldc * 2), **kwargs,
                     scale_a=spec("Float32", (m, kt), (1, m)), scale_b=spec("Float32", (nt, kt), (2 * kt, 2)))
    assert "m64n128k32.f32.e4m3.e4m3" in c.ptx
    torch = hopper_torch()
    g = torch.Generator(device="cpu").manual_seed(7 * m + n + k)
    a = torch.randn(m, kp, generator=g).to(torch.float8_e4m3fn).cuda()[:, :k]
    b = torch.randn(n, kp, generator=g).to(torch.float8_e4m3fn).cuda()[:, :k]
    sa = (2.0 ** torch.randint(-6, 7, (kt, m), generator=g)).cuda().t()          # (m, kt), M contiguous
    sb = (2.0 ** torch.randint(-6, 7, (nt, 2 * kt), generator=g)).cuda()[:, ::2]  # (nt, kt), every other column
    want, size = _blockwise(torch, a, b, sa, sb)
    c_store = torch.full((m + 2 * GUARD, ldc), float("nan"), dtype=torch.bfloat16, device="cuda")
    cv = c_store[GUARD:GUARD + m, :n]
    gemm(a, b, cv, **kwargs, scale_a=sa, scale_b=sb)
    torch.cuda.synchronize()
    err = (cv.double() - want).abs().nan_to_num(float("inf"))
    bound = 2.0 ** -8 * want.abs() + 2.0 ** -9 * size
    worst = int((err - bound).argmax())
    assert bool((err <= bound).all()), (f"element {divmod(worst, n)}: {float(cv.flatten()[worst])} against "
                                        f"{float(want.flatten()[worst])}")
    assert torch.isnan(c_store[:GUARD]).all() and torch.isnan(c_store[GUARD + m:]).all(), "rows outside C written"
    assert torch.isnan(c_store[GUARD:GUARD + m, n:]).all(), "columns past C's N written"
