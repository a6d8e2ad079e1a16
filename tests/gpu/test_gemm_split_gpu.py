"""On a Hopper GPU: kernel 13 splitting K through a workspace (``examples.gemm_split``) against torch in fp32,
into a NaN-poisoned padded C, by powers of two and by other splits (whose CTAs past the summing ones only
contribute); the same bits on every run, whatever order the CTAs finish in; the counters left zero
after each call (so the next call starts clean); and a workspace whose counters are not zero failing the launch
instead of storing a wrong sum."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from examples import gemm  # noqa: E402
from examples.gemm_split import counter_ints, workspace_elements  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu

GUARD = 3
CASES = [  # (M, N, K, C type, keyword arguments, pad of C's rows)
    (512, 512, 16384, "bfloat16", {}, 8),                              # the default with a workspace: split 8
    (640, 640, 16384, "bfloat16", {}, 8),                              # the default's split by 5
    (300, 520, 4000, "float32", dict(split_k=8, tile_n=128), 3),         # edge tiles in M, N and K
    (129, 255, 520, "bfloat16", dict(split_k=2, tile_n=256, epilogue="vector"), 1),
    (512, 1024, 8192, "float16", dict(split_k=4, tile_n=256), 8),        # 128 x 256 slots, registers reallocated
    (700, 300, 3000, "bfloat16", dict(split_k=4, tile_n=128, bias=True, activation="gelu"), 8),
    # splits that are not a power of two: the first 2, 4 or 8 CTAs of a tile sum, the others only contribute
    (768, 768, 16384, "bfloat16", dict(split_k=3, tile_n=128), 8),
    (300, 520, 4000, "float32", dict(split_k=7, tile_n=256), 3),       # edge tiles; 4 sum of 7
    (129, 255, 2600, "bfloat16", dict(split_k=5, tile_n=128, bias=True, activation="gelu"), 1),
    (200, 500, 8192, "float16", dict(split_k=15, tile_n=128), 8),     # 8 sum, 16 columns each
    # 2x1 clusters: two tiles' CTAs of one split share B's loads (multicast)
    (512, 512, 16384, "bfloat16", dict(split_k=8, tile_n=128, cluster_m=2), 8),
    (300, 520, 4000, "float32", dict(split_k=7, tile_n=256, cluster_m=2), 3),   # 3 rows of tiles: one past M
    (129, 255, 2600, "bfloat16", dict(split_k=5, tile_n=128, cluster_m=2, bias=True, activation="gelu"), 1),
    # 128 x 192 tiles: 96 columns a summing slice of 2, N taken as a multiple of 192 (the largest slots)
    (300, 520, 4000, "float32", dict(split_k=3, tile_n=192), 3),
    (512, 512, 16384, "bfloat16", dict(split_k=8, tile_n=192, cluster_m=2), 8),
]


def _run(torch, m, n, k, out, kwargs, pad, ws=None, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed + m + n + k)
    a = torch.randn(m, k, generator=g).to(torch.bfloat16).cuda()
    b = torch.randn(n, k, generator=g).to(torch.bfloat16).cuda()
    kwargs = dict(kwargs)
    bias = None
    if kwargs.pop("bias", False):
        bias = torch.randn(n, generator=g).cuda()
        kwargs["bias"] = bias
    tout = getattr(torch, out)
    store = torch.full((m + 2 * GUARD, n + pad), float("nan"), dtype=tout, device="cuda")
    c = store[GUARD:GUARD + m, :n]
    if ws is None:
        ws = torch.zeros(workspace_elements(m, n, max(8, kwargs.get("split_k") or 8)), device="cuda")
    gemm(a, b, c, workspace=ws, **kwargs)
    torch.cuda.synchronize()
    want = a.float() @ b.float().t()
    if bias is not None:
        want = torch.nn.functional.gelu(want + bias)
    return a, b, c, store, want, ws, kwargs


@pytest.mark.parametrize("m, n, k, out, kwargs, pad", CASES)
def test_split_through_the_workspace_matches_torch_bit_for_bit_on_reruns(m, n, k, out, kwargs, pad):
    torch = hopper_torch()
    a, b, c, store, want, ws, used = _run(torch, m, n, k, out, kwargs, pad)
    torch.testing.assert_close(c.float(), want, rtol=1e-2, atol=1e-2 if out == "float32" else 6e-2)
    assert torch.isnan(store[:GUARD]).all() and torch.isnan(store[GUARD + m:]).all(), "rows outside C written"
    assert torch.isnan(store[GUARD:GUARD + m, n:]).all(), "columns past N written"
    assert (ws.view(torch.int32)[:counter_ints(ws.numel())] == 0).all(), "a call leaves every tile's counter zero"
    first = c.clone()
    for _ in range(3):      # other CTAs finish last on other runs: the sum's order is the slots', not theirs
        c.fill_(float("nan"))
        gemm(a, b, c, workspace=ws, **used)
        torch.cuda.synchronize()
        assert torch.equal(c, first), "the same bits on every run"


def test_one_workspace_serves_gemms_of_other_shapes_and_tiles_in_turn():
    """A workspace sized for 768 x 768 split by 7 serves, in turn, 128 x 256 tiles split by 7, 128 x 128 tiles split
    by 3, a smaller C, and the first plan again: every plan's slots lie past the counters of every plan (their place
    depends on the workspace's size alone), so none finds a counter another left non-zero, and each gives the bits
    it gives on a workspace of its own."""
    torch = hopper_torch()
    ws = torch.zeros(workspace_elements(768, 768, 7), device="cuda")
    plans = [(768, 768, dict(split_k=7, tile_n=256)), (768, 768, dict(split_k=3, tile_n=128)),
             (300, 200, dict(split_k=5, tile_n=128)), (768, 768, dict(split_k=7, tile_n=256)),
             (129, 640, dict(split_k=2, tile_n=256))]
    for m, n, kw in plans:
        a, b, c, store, want, own, used = _run(torch, m, n, 4096, "bfloat16", kw, 8)
        shared = torch.full_like(c, float("nan"))
        gemm(a, b, shared, workspace=ws, **used)
        torch.cuda.synchronize()
        assert torch.equal(shared, c), (m, n, kw)
        assert (ws.view(torch.int32)[:counter_ints(ws.numel())] == 0).all(), (m, n, kw)


def test_the_default_with_a_workspace_splits_more_than_clusters_and_agrees_with_them():
    """512x512x16384: a workspace lets the default split by 8 over 16 tiles (128 CTAs, in 2x1 clusters sharing B);
    without it, by 4 in clusters (64 CTAs). The two split K differently, so they agree to the rounding of the
    sums."""
    torch = hopper_torch()
    spec = cute.compiler.DeviceArraySpec
    m, n, k = 512, 512, 16384
    with_ws = cute.compile(gemm, spec("BFloat16", (m, k)), spec("BFloat16", (n, k)), spec("BFloat16", (m, n)),
                           workspace=spec("Float32", (workspace_elements(m, n),)))
    (launch,) = with_ws.launches
    assert launch.grid == (128, 1, 1) and launch.cluster == (2, 1, 1)
    a, b, c, store, want, ws, _ = _run(torch, m, n, k, "bfloat16", {}, 8)
    plain = torch.empty_like(c)
    gemm(a, b, plain)
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), plain.float(), rtol=1e-2, atol=6e-2)


_BAD_COUNTERS = """
import sys, torch
sys.path.insert(0, {root!r})
from examples import gemm
from examples.gemm_split import workspace_elements
a = torch.randn(512, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(512, 4096, device="cuda", dtype=torch.bfloat16)
c = torch.empty(512, 512, device="cuda", dtype=torch.bfloat16)
ws = torch.zeros(workspace_elements(512, 512), device="cuda")
ws.view(torch.int32)[5] = {value}
gemm(a, b, c, workspace=ws, split_k=8, tile_n=128)
torch.cuda.synchronize()
print("no error")
"""


@pytest.mark.parametrize("value", [3, 8, 1 << 20, -1])
def test_a_workspace_whose_counters_are_not_zero_fails_the_launch(value, tmp_path):
    """A counter not zero before the call: the tile's CTAs would not wait for each other long enough (3), or at
    all. The 8 arrivals take it past 7, and the kernel traps (in a child process: a trap loses the CUDA
    context)."""
    import os
    import subprocess
    import sys

    hopper_torch()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = tmp_path / "bad.py"
    script.write_text(_BAD_COUNTERS.format(root=root, value=value))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "no error" not in r.stdout, r.stdout + r.stderr
