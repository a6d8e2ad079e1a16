"""On a Hopper GPU: the grouped GEMM (examples.grouped_gemm) against torch's fp32 product expert by expert, for
contiguous groups (``offs``) and masked ones (``masked_m``): groups of 0, 1, 127, 128, 129 and more rows, N and K
not multiples of the tile, C poisoned with NaN around and between the rows it may write; hostile offsets that
never write outside C; and a CUDA graph replayed with new offsets copied in."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from examples.grouped_gemm import grouped_gemm, grouped_gemm_masked  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu

GUARD = 3          # rows of poison above and below C
NAN = float("nan")


def _padded(k):
    return -(-k // 8) * 8      # rows of whole 16-byte units (TMA's rule for a row stride)


def _operands(torch, rows, e, n, k, dtype, seed):
    """A (rows, K) and B (E, N, K) views of K-padded buffers whose pad columns are NaN (reading them would show)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    kp = _padded(k)
    a_store = torch.randn(rows, kp, generator=g).to(dtype).cuda()
    b_store = torch.randn(e, n, kp, generator=g).to(dtype).cuda()
    a_store[:, k:] = NAN
    b_store[:, :, k:] = NAN
    return a_store[:, :k], b_store[:, :, :k]


def _check_contiguous(torch, a, b, cv, c_store, sizes, rows_written):
    """Each expert's rows of C against torch's fp32 product; every other element of the buffer still NaN."""
    n = b.shape[1]
    start = 0
    for i, size in enumerate(sizes):
        if size:
            want = a[start:start + size].float() @ b[i].float().t()
            torch.testing.assert_close(cv[start:start + size].float(), want, rtol=1e-2, atol=5e-2,
                                       msg=lambda m: f"expert {i} (rows {start}..{start + size}): {m}")
        start += size
    assert torch.isnan(c_store[:GUARD]).all() and torch.isnan(c_store[GUARD + cv.shape[0]:]).all(), "guard rows written"
    assert torch.isnan(cv[rows_written:]).all(), "rows past the last group written"
    assert torch.isnan(c_store[:, n:]).all(), "pad columns written"


# (group sizes, N, K, dtype, options, pad columns of C, rows of A and C past the last group)
CONTIGUOUS = [
    ([0, 1, 127, 128, 129, 0, 300], 256, 128, "bfloat16", {}, 8, 5),         # TMA stores, edge rows
    ([129, 0, 1, 128, 127], 200, 100, "float16", dict(tile_n=128), 8, 0),     # N, K edge tiles (K padded to 104)
    ([1, 127, 0, 129, 128, 0], 130, 72, "bfloat16", {}, 3, 2),                # N = 130: stores one element at a time
    ([128] * 3 + [0] * 40 + [77] * 30 + [129], 768, 256, "bfloat16", dict(ctas=7), 0, 0),   # 74 groups, few CTAs
    ([0, 0, 0], 64, 64, "bfloat16", {}, 0, 40),                               # every group empty: nothing written
]


@pytest.mark.parametrize("sizes, n, k, dt, kwargs, pad, tail", CONTIGUOUS)
def test_contiguous_groups_match_torch(sizes, n, k, dt, kwargs, pad, tail):
    torch = hopper_torch()
    dtype = getattr(torch, dt)
    total = sum(sizes) + tail
    a, b = _operands(torch, total, len(sizes), n, k, dtype, seed=len(sizes) + n + k)
    a[sum(sizes):] = NAN                     # rows past the last group: loaded into edge tiles, never into C's rows
    c_store = torch.full((total + 2 * GUARD, n + pad), NAN, dtype=dtype, device="cuda")
    cv = c_store[GUARD:GUARD + total, :n]
    offs = torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(torch.int32).cuda()
    c = cute.compile(grouped_gemm, a, b, cv, offs, **kwargs)        # built first
    assert "wgmma.mma_async" in c.ptx and "cp.async.bulk.tensor.3d" in c.ptx
    tma_store = (n + pad) % 8 == 0 and n % 8 == 0
    assert ("cp.async.bulk.tensor.2d.global.shared::cta" in c.ptx) == tma_store
    grouped_gemm(a, b, cv, offs, **kwargs)
    torch.cuda.synchronize()
    _check_contiguous(torch, a, b, cv, c_store, sizes, sum(sizes))
    first = cv.clone()
    grouped_gemm(a, b, cv, offs, **kwargs)
    torch.cuda.synchronize()
    assert torch.equal(cv.nan_to_num(0.5), first.nan_to_num(0.5)), "a second run differs"


# (masked_m, max_M, N, K, dtype, options)
MASKED = [
    ([0, 1, 127, 128, 129, 300], 300, 256, 128, "bfloat16", {}),
    ([129, 0, 64, 200], 200, 200, 100, "float16", dict(tile_n=128)),
    ([5, 0, 130, 1], 130, 130, 72, "bfloat16", {}),                           # N = 130: element stores
]


@pytest.mark.parametrize("masked_m, max_m, n, k, dt, kwargs", MASKED)
def test_masked_groups_match_torch_and_leave_the_other_rows(masked_m, max_m, n, k, dt, kwargs):
    torch = hopper_torch()
    dtype = getattr(torch, dt)
    e = len(masked_m)
    a2, b = _operands(torch, e * max_m, e, n, k, dtype, seed=e + n + k + 1)
    a = a2.as_strided((e, max_m, k), (max_m * a2.stride(0), a2.stride(0), 1))     # (E, max_M, K), rows padded
    for i, m in enumerate(masked_m):
        a[i, m:] = NAN                       # rows past masked_m: they feed only accumulator rows never stored
    pad = 8 if n % 8 == 0 else 3
    c_store = torch.full((e + 2, max_m, n + pad), NAN, dtype=dtype, device="cuda")
    cv = c_store[1:e + 1, :, :n]
    mm = torch.tensor(masked_m, dtype=torch.int32).cuda()
    c = cute.compile(grouped_gemm_masked, a, b, cv, mm, **kwargs)
    assert "wgmma.mma_async" in c.ptx and "cp.async.bulk.tensor.3d" in c.ptx
    grouped_gemm_masked(a, b, cv, mm, **kwargs)
    torch.cuda.synchronize()
    for i, m in enumerate(masked_m):
        if m:
            want = a[i, :m].float() @ b[i].float().t()
            torch.testing.assert_close(cv[i, :m].float(), want, rtol=1e-2, atol=5e-2,
                                       msg=lambda s: f"expert {i}: {s}")
        assert torch.isnan(cv[i, m:]).all(), f"expert {i}: rows from masked_m on written"
    assert torch.isnan(c_store[0]).all() and torch.isnan(c_store[e + 1]).all(), "guard experts written"
    assert torch.isnan(c_store[:, :, n:]).all(), "pad columns written"


def test_hostile_offsets_and_counts_never_write_outside_c():
    """Offsets that decrease, pass total_M or go negative, and masked counts past max_M or negative: the groups are
    clamped into C (the values are then not the documented product, but nothing outside C is written)."""
    torch = hopper_torch()
    dtype = torch.bfloat16
    total, n, k = 300, 128, 64
    a, b = _operands(torch, total, 4, n, k, dtype, seed=9)
    c_store = torch.full((total + 2 * GUARD, n), NAN, dtype=dtype, device="cuda")
    cv = c_store[GUARD:GUARD + total]
    offs = torch.tensor([200, 100, 5000, -7], dtype=torch.int32).cuda()
    grouped_gemm(a, b, cv, offs)
    torch.cuda.synchronize()
    assert torch.isnan(c_store[:GUARD]).all() and torch.isnan(c_store[GUARD + total:]).all()
    # clamped: expert 0 rows 0..200, expert 1 empty (100 < 200), expert 2 rows 100..300, expert 3 empty
    torch.testing.assert_close(cv[:100].float(), a[:100].float() @ b[0].float().t(), rtol=1e-2, atol=5e-2)
    assert not torch.isnan(cv).any()
    mc_store = torch.full((6, 130, n), NAN, dtype=dtype, device="cuda")
    mc = mc_store[1:5]
    am = torch.randn(4, 130, k, device="cuda").to(dtype)
    grouped_gemm_masked(am, b, mc, torch.tensor([1000, -5, 130, 7], dtype=torch.int32).cuda())
    torch.cuda.synchronize()
    assert torch.isnan(mc_store[0]).all() and torch.isnan(mc_store[5]).all(), "guard experts written"
    assert not torch.isnan(mc[0]).any() and torch.isnan(mc[1]).all() and torch.isnan(mc[3, 7:]).all()


def test_a_captured_graph_replays_with_new_offsets():
    """One launch captured in a CUDA graph; new offsets copied into ``offs`` (and new inputs into A) before each
    replay give the new groups' products: nothing about the sizes was fixed at capture."""
    torch = hopper_torch()
    dtype = torch.bfloat16
    total, e, n, k = 700, 6, 384, 192
    a, b = _operands(torch, total, e, n, k, dtype, seed=17)
    cv = torch.full((total, n), NAN, dtype=dtype, device="cuda")
    plans = [[100, 100, 100, 100, 100, 200], [0, 1, 129, 570, 0, 0], [128, 127, 0, 0, 300, 1]]
    offs = torch.tensor(plans[0], dtype=torch.int64).cumsum(0).to(torch.int32).cuda()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    for _ in range(4):      # compiled, module loaded, launch path armed: off the capture
        grouped_gemm(a, b, cv, offs, stream=stream.cuda_stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        grouped_gemm(a, b, cv, offs, stream=stream.cuda_stream)
    torch.cuda.synchronize()
    for seed, sizes in enumerate(plans[1:] + plans[:1]):
        offs.copy_(torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(torch.int32))
        a.copy_(torch.randn(total, k, device="cuda").to(dtype))
        cv.fill_(NAN)
        graph.replay()
        torch.cuda.synchronize()
        start = 0
        for i, size in enumerate(sizes):
            if size:
                torch.testing.assert_close(cv[start:start + size].float(),
                                           a[start:start + size].float() @ b[i].float().t(), rtol=1e-2, atol=5e-2)
            start += size
        assert torch.isnan(cv[start:]).all(), f"replay {seed}: rows past the last group written"
