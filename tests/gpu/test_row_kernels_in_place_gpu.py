"""On a Hopper GPU: the row kernels with an output written over one of their inputs (the same memory), as a caller
saving memory does: ``softmax_forward(x, x)``, ``softmax_backward(y, dy, dy)``, ``cross_entropy_backward(...,
dlogits=logits)``, ``rmsnorm_forward(x, w, x, ...)``, ``rmsnorm_backward(dy, x, w, rstd, dy, ...)``,
``layernorm_forward(x, w, b, x, ...)``. Each thread reads every element it writes before the row's first store
(through its reduction, or, in the cross-entropy backward, the target's logit read before the row's stores), so the
results equal those into separate outputs; against torch in double precision on copies of the inputs. Rows of one
CTA, of a cluster, shifted rows of odd stride, and a row with a padded stride."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

from examples import (cross_entropy_backward, layernorm_forward, rmsnorm_backward, rmsnorm_forward,  # noqa: E402
                      rmsnorm_workspace_rows, softmax_backward, softmax_forward)
from _tma_copy_check import hopper_torch, torch_dtype  # noqa: E402
from test_row_kernels_gpu import _close, _rows, close_to_rmsnorm_backward, close_to_softmax_backward  # noqa: E402

pytestmark = pytest.mark.gpu

# (rows, n, padding of each row): several rows a CTA, a cluster, odd strides (shifted rows for softmax and
# cross-entropy), a padded stride
CASES = [(33, 4096, 0), (5, 70000, 8), (19, 50257, 0), (7, 4097, 0), (3, 1031, 5)]
CONFIGS = [(d, c) for c in CASES for d in ("BFloat16", "Float32")]
IDS = [f"{d}-{c[0]}x{c[1]}+{c[2]}" for d, c in CONFIGS]


@pytest.mark.parametrize("dtype,case", CONFIGS, ids=IDS)
def test_softmax_in_place_matches_torch(dtype, case):
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n, pad = case
    x = _rows(torch, m, n, pad, t, 21, 4.0)
    exact = torch.softmax(x.double(), dim=1)
    softmax_forward(x, x)
    _close(x, exact, dtype)
    y = _rows(torch, m, n, pad, t, 0, 0.0)
    y.copy_(exact.to(t))
    dy = _rows(torch, m, n, pad, t, 22)
    before = dy.clone()
    softmax_backward(y, dy, dy)
    close_to_softmax_backward(dy, y, before, dtype)


@pytest.mark.parametrize("dtype,case", CONFIGS, ids=IDS)
def test_cross_entropy_backward_in_place_matches_torch(dtype, case):
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n, pad = case
    x = _rows(torch, m, n, pad, t, 23, 3.0)
    target = torch.randint(0, n, (m,), device="cuda")
    target[0::4], target[1::4], target[2::7] = 0, n - 1, -100   # a row's first and last element, ignored rows
    xd = x.double()
    lse = torch.logsumexp(xd, dim=1).float()
    dloss = torch.rand(m, device="cuda").to(t)
    xr = xd.clone().requires_grad_(True)
    torch.nn.functional.cross_entropy(xr, target, reduction="none", ignore_index=-100).backward(dloss.double())
    cross_entropy_backward(x, target, dloss, lse, x)
    _close(x, xr.grad, dtype, dloss.double().abs()[:, None] * 1e-6)


@pytest.mark.parametrize("dtype,case", CONFIGS, ids=IDS)
def test_norms_in_place_match_torch(dtype, case):
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n, pad = case
    eps = 1e-6
    x = _rows(torch, m, n, pad, t, 24)
    w = (torch.rand(n, device="cuda") + 0.5).to(t)
    b = torch.randn(n, device="cuda").to(t)
    xd, wd, bd = x.double(), w.double(), b.double()
    r = torch.rsqrt((xd * xd).mean(dim=1, keepdim=True) + eps)
    y, rstd = x.clone(), torch.empty(m, device="cuda")
    rmsnorm_forward(y, w, y, rstd, eps)
    _close(y, xd * r * wd, dtype)
    # the backward's dx over its dy
    dy = _rows(torch, m, n, pad, t, 25)
    before = dy.clone()
    dw = torch.empty(n, dtype=t, device="cuda")
    ws = torch.empty((rmsnorm_workspace_rows(m, n), n), dtype=torch.float32, device="cuda")
    rmsnorm_backward(dy, x, w, rstd, dy, dw, ws)
    close_to_rmsnorm_backward(dy, dw, before, x, w, rstd, dtype)
    # LayerNorm over its x
    mean, lrstd = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
    mu = xd.mean(dim=1, keepdim=True)
    lr = torch.rsqrt(((xd - mu) ** 2).mean(dim=1, keepdim=True) + 1e-5)
    norm = (xd - mu) * lr * wd
    layernorm_forward(x, w, b, x, mean, lrstd, 1e-5)
    _close(x, norm + bd, dtype, norm.abs() + bd.abs() + (mu.abs() + 1) * lr * wd.abs())
