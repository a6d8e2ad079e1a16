"""On a Hopper GPU: the row kernels (examples/softmax_rows.py, norms.py, cross_entropy.py) against torch in double
precision, for row lengths from 1 to 262143 (odd lengths: the predicated end of a row; long rows: a cluster of CTAs
exchanging partials through distributed shared memory), inputs and outputs with padded rows, every output written
into a NaN-poisoned buffer whose bytes outside the output must stay unchanged; NaN and infinities propagate as in
torch; cross-entropy rows with ``ignore_index``."""

import math

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

from examples import (cross_entropy_backward, cross_entropy_forward, layernorm_forward, rmsnorm_backward,  # noqa: E402
                      rmsnorm_forward, rmsnorm_workspace_rows, softmax_backward, softmax_forward)
import cute_py as cute  # noqa: E402
from examples.layernorm_loop import LoopConfig  # noqa: E402
from examples.row_stage import HALVES_CLUSTER, HALVES_WIDE, halves_plan  # noqa: E402
from examples.row_reduce import plan_rows  # noqa: E402
from _tma_copy_check import hopper_torch, torch_dtype  # noqa: E402

pytestmark = pytest.mark.gpu
# (rows, n, padding of each row): odd lengths, strides that allow narrower vectors only (65534: chunks of 2, staged
# by 4- and 8-byte cp.async), clusters of 4 and 16, and of sizes that are no power of two (70000: 9 CTAs with one row
# input, 5 with two; 100000 in single elements: 13 and 7)
CASES = [(3, 1, 3), (5, 7, 1), (33, 4097, 7), (4, 65536, 8), (3, 65534, 0), (2, 262143, 1), (5, 70000, 8),
         (3, 100000, 3)]
# (and 16-bit rows of 262144: whole chunks over 16 CTAs of 256 threads, where LayerNorm stages x)
CONFIGS = [(d, c) for c in CASES for d in ("Float32", "BFloat16")] + [("Float16", (33, 4097, 7))] + [
    (d, (3, 262144, 8)) for d in ("BFloat16", "Float16")]
IDS = [f"{d}-{c[0]}x{c[1]}" for d, c in CONFIGS]
# Float32 arithmetic errs by a few ulps relative to the magnitudes involved; the output type rounds once more
REL = {"Float32": 1e-5, "BFloat16": 2 ** -8 + 1e-5, "Float16": 2 ** -11 + 1e-5}
TINY = {"Float32": 2.0 ** -149, "BFloat16": 2.0 ** -133, "Float16": 2.0 ** -24}


class Poisoned:
    """An output view inside a NaN-filled buffer with a guard row above and below and ``pad`` guard elements after
    each row; :meth:`guards_intact` checks every byte outside the view."""

    def __init__(self, torch, shape, dtype, pad=0):
        self.torch = torch
        if len(shape) == 1:
            self.buf = torch.full((shape[0] + 2,), float("nan"), dtype=dtype, device="cuda")
            self.view = self.buf[1:shape[0] + 1]
        else:
            m, n = shape
            self.buf = torch.full((m + 2, n + pad), float("nan"), dtype=dtype, device="cuda")
            self.view = self.buf[1:m + 1, :n]
        self.before = self.buf.clone()

    def guards_intact(self):
        torch = self.torch
        torch.cuda.synchronize()
        mask = torch.ones_like(self.buf, dtype=torch.bool)
        if self.buf.dim() == 1:
            mask[1:self.view.shape[0] + 1] = False
        else:
            mask[1:self.view.shape[0] + 1, :self.view.shape[1]] = False
        as_int = {1: torch.int8, 2: torch.int16, 4: torch.int32}[self.buf.element_size()]
        return torch.equal(self.buf.view(as_int)[mask], self.before.view(as_int)[mask])


def _rows(torch, m, n, pad, dtype, seed, scale=1.0):
    """A (m, n) tensor of random values with rows padded by ``pad`` elements."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    full = (torch.randn((m, n + pad), generator=g, device="cuda") * scale).to(dtype)
    return full[:, :n]


def _close(got, exact, dtype, scale=None):
    """``|got - exact| <= REL * (|exact| + scale)`` elementwise (NaN where exact is NaN, equal infinities)."""
    torch = hopper_torch()
    got = got.double()
    assert torch.equal(torch.isnan(got), torch.isnan(exact)), "NaN in different places"
    fin = torch.isfinite(exact)
    assert torch.equal(got[~fin & ~torch.isnan(exact)], exact[~fin & ~torch.isnan(exact)])
    bound = exact.abs() if scale is None else exact.abs() + scale
    err = (got - exact).abs() - REL[dtype] * bound - TINY[dtype]
    err = err[fin]
    assert err.numel() == 0 or float(err.max()) <= 0, float(err.max())


@pytest.mark.parametrize("dtype,case", CONFIGS, ids=IDS)
def test_softmax_forward_and_backward_match_torch(dtype, case):
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n, pad = case
    x = _rows(torch, m, n, pad, t, 1, 4.0)
    y = Poisoned(torch, (m, n), t, pad + 1)
    softmax_forward(x, y.view)
    assert y.guards_intact()
    exact = torch.softmax(x.double(), dim=1)
    _close(y.view, exact, dtype)
    dy = _rows(torch, m, n, pad + 2, t, 2)
    yin = exact.to(t)
    dx = Poisoned(torch, (m, n), t, pad)
    softmax_backward(yin, dy, dx.view)
    assert dx.guards_intact()
    close_to_softmax_backward(dx.view, yin, dy, dtype)


def close_to_softmax_backward(dx, y, dy, dtype):
    """``dx`` is ``y * (dy - sum(dy * y))`` per row, within the bound of :func:`_close`."""
    yd, gd = y.double(), dy.double()
    dot = (yd * gd).sum(dim=1, keepdim=True)
    # the dot product may cancel: its rounding error scales with the sum of the terms' magnitudes
    _close(dx, yd * (gd - dot), dtype, yd * (gd.abs() + (yd * gd).abs().sum(dim=1, keepdim=True)))


@pytest.mark.parametrize("dtype,case", CONFIGS, ids=IDS)
def test_rmsnorm_forward_and_backward_match_torch(dtype, case):
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n, pad = case
    eps = 1e-6
    x = _rows(torch, m, n, pad, t, 3)
    w = (torch.rand(n, device="cuda") + 0.5).to(t)
    y, rstd = Poisoned(torch, (m, n), t, 3), Poisoned(torch, (m,), torch.float32)
    rmsnorm_forward(x, w, y.view, rstd.view, eps)
    assert y.guards_intact() and rstd.guards_intact()
    xd, wd = x.double(), w.double()
    r = torch.rsqrt((xd * xd).mean(dim=1, keepdim=True) + eps)
    _close(rstd.view, r[:, 0], "Float32")
    _close(y.view, xd * r * wd, dtype)
    _check_rmsnorm_backward(dtype, x, w, rstd.view, 5, 2)


def _check_rmsnorm_backward(dtype, x, w, rstd, dy_pad, dx_pad):
    """RMSNorm's backward of ``x`` (with ``w`` and the forward's ``rstd``) for a random ``dy`` padded by ``dy_pad``
    into a ``dx`` padded by ``dx_pad``, against float64, with 1, the default and more workspace rows than rows."""
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n = x.shape
    dy = _rows(torch, m, n, dy_pad, t, 4)
    for units in sorted({1, rmsnorm_workspace_rows(m, n), m + 3}):  # m + 3: groups with no row at all
        dx, dw = Poisoned(torch, (m, n), t, dx_pad), Poisoned(torch, (n,), t)
        ws = torch.empty((units, n), dtype=torch.float32, device="cuda")
        rmsnorm_backward(dy, x, w, rstd, dx.view, dw.view, ws)
        assert dx.guards_intact() and dw.guards_intact()
        close_to_rmsnorm_backward(dx.view, dw.view, dy, x, w, rstd, dtype)


def close_to_rmsnorm_backward(dx, dw, dy, x, w, rstd, dtype):
    """``dx`` and ``dw`` are RMSNorm's gradients for ``dy`` (of ``x``, ``w`` and the forward's ``rstd``), within
    the bound of :func:`_close`."""
    xd, wd = x.double(), w.double()
    rr = rstd.double()[:, None]
    gd, xh = dy.double(), xd * rr
    c = (gd * wd * xh).mean(dim=1, keepdim=True)
    # c is a mean that may cancel: its rounding error scales with the mean of the terms' magnitudes
    c_scale = (gd * wd * xh).abs().mean(dim=1, keepdim=True)
    _close(dx, rr * (gd * wd - xh * c), dtype, rr * ((gd * wd).abs() + xh.abs() * c_scale))
    _close(dw, (gd * xh).sum(dim=0), dtype, (gd * xh).abs().sum(dim=0))


# rows of 16-bit chunks of 8 over the clusters backward_plan widens: 100000 over 8 CTAs (7 hold it), 151936 over 16
# (10 hold it; 3 chunks a thread, the last round mostly past the row's end), 100003 with its end inside a chunk; and
# short rows copied two rows ahead (prefetch_depth): a last round half past the row's end, 2 rows a CTA, 512 threads
BACKWARD = [("BFloat16", (3, 100000, 8), "widened"), ("Float16", (4, 151936, 8), "widened"),
            ("BFloat16", (2, 100003, 5), "widened"), ("BFloat16", (37, 5120, 8), "two ahead"),
            ("Float16", (301, 3072, 8), "two ahead"), ("BFloat16", (5, 12288, 0), "two ahead"),
            ("BFloat16", (6, 16384, 8), "two ahead")]


@pytest.mark.parametrize("dtype,case,plan", BACKWARD, ids=[f"{d}-{c[0]}x{c[1]}" for d, c, _ in BACKWARD])
def test_rmsnorm_backward_on_its_plans_matches_torch(dtype, case, plan):
    from examples.norm_backward import backward_plan, prefetch_depth
    from examples.row_reduce import TWO_INPUTS
    torch = hopper_torch()
    m, n, pad = case
    x = _rows(torch, m, n, pad, torch_dtype(torch, dtype), 3)
    w = (torch.rand(n, device="cuda") + 0.5).to(x.dtype)
    p = backward_plan("t", n, 8)
    if plan == "widened":
        assert p.cluster > plan_rows("t", n, 8, TWO_INPUTS).cluster
    else:
        t = type("T", (), {"element_type": getattr(cute, dtype)})
        assert p.cluster == 1 and prefetch_depth(p, t, t, t) == 2
    rstd = torch.rsqrt(x.double().pow(2).mean(dim=1) + 1e-6).float()
    _check_rmsnorm_backward(dtype, x, w, rstd, pad, pad)


@pytest.mark.parametrize("dtype,case", CONFIGS, ids=IDS)
def test_layernorm_forward_matches_torch(dtype, case):
    _check_layernorm(dtype, case, None, 1)


# short 16-bit rows whose kernels ask for more CTAs an SM than the registers left free allow: RMSNorm's forward at
# 6144 (6 chunks, 2 rows a CTA, 3 CTAs an SM) and the softmax backward at 12288 and 10240 (512 threads, 2 CTAs an SM;
# 10240: a last round half past the row's end)
BOUNDED = [("rmsnorm", (37, 6144, 8)), ("softmax", (9, 12288, 8)), ("softmax", (5, 10240, 0))]


@pytest.mark.parametrize("kernel,case", BOUNDED, ids=[f"{k}-{c[0]}x{c[1]}" for k, c in BOUNDED])
def test_short_rows_at_more_ctas_an_sm_match_torch(kernel, case):
    torch = hopper_torch()
    m, n, pad = case
    t = torch.bfloat16
    x = _rows(torch, m, n, pad, t, 7, 2.0)
    if kernel == "rmsnorm":
        w = (torch.rand(n, device="cuda") + 0.5).to(t)
        y, rstd = Poisoned(torch, (m, n), t, pad), Poisoned(torch, (m,), torch.float32)
        c = cute.compile(rmsnorm_forward, x, w, y.view, rstd.view, 1e-6)
        assert ".minnctapersm 3" in c.ptx
        c(x, w, y.view, rstd.view, 1e-6)
        assert y.guards_intact() and rstd.guards_intact()
        xd = x.double()
        r = torch.rsqrt((xd * xd).mean(dim=1, keepdim=True) + 1e-6)
        _close(rstd.view, r[:, 0], "Float32")
        _close(y.view, xd * r * w.double(), "BFloat16")
        return
    yin = torch.softmax(x.double(), dim=1).to(t)
    dy = _rows(torch, m, n, pad, t, 8)
    dx = Poisoned(torch, (m, n), t, pad)
    c = cute.compile(softmax_backward, yin, dy, dx.view)
    assert ".minnctapersm 2" in c.ptx and c.launches[0].block == (512, 1, 1)
    c(yin, dy, dx.view)
    assert dx.guards_intact()
    yd, gd = yin.double(), dy.double()
    dot = (yd * gd).sum(dim=1, keepdim=True)
    _close(dx.view, yd * (gd - dot), "BFloat16", yd * (gd.abs() + (yd * gd).abs().sum(dim=1, keepdim=True)))


# 16-bit rows of one CTA whose threads keep fewer than 8 chunks: w and b staged once a CTA, each row group copying
# its turn of the chunks (layernorm_shared_wb_ctas): 4 rows a CTA (37 rows: the last CTA's past the matrix), 16 rows
# a CTA, a last round of chunks partly past the row's end, an end inside a chunk, 7 chunks of one row a CTA
SHARED_WB = [("BFloat16", (37, 2560, 8)), ("Float16", (19, 640, 8)), ("BFloat16", (5, 5000, 0)),
             ("BFloat16", (7, 5004, 4)), ("Float16", (9, 6143, 1)), ("BFloat16", (3, 14336, 8))]


@pytest.mark.parametrize("dtype,case", SHARED_WB, ids=[f"{d}-{c[0]}x{c[1]}" for d, c in SHARED_WB])
def test_layernorm_with_w_and_b_shared_by_a_ctas_rows_matches_torch(dtype, case):
    _check_layernorm(dtype, case, None, case[2] or 8, False, shared=True)


# a persistent grid of clusters, each walking its rows (examples/layernorm_loop.py): clusters with several rows,
# odd and even counts, one to four buffers, w and b staged once, a partial last chunk with one-element chunks, short
# rows, and more clusters asked for than rows; w and b in registers and one exchange (a partial row: two); the
# default's loop (rows longer than 65536 in whole 128-bit chunks), with Float32 partial rows; clusters of 5 and 3
LOOPS = [("BFloat16", (37, 131072, 8), LoopConfig(8, 256, 2, clusters=5)),
         ("Float32", (9, 262144, 4), LoopConfig(16, 512, 2, clusters=2)),
         ("BFloat16", (11, 262143, 1), LoopConfig(16, 256, 3, clusters=3)),
         ("Float16", (7, 65536, 8), LoopConfig(4, 256, 2, wb="smem", clusters=2)),
         ("BFloat16", (3, 262144, 8), LoopConfig(16, 256, 2)),
         ("Float32", (5, 4097, 3), LoopConfig(2, 128, 4, clusters=2)),
         ("BFloat16", (6, 32768, 0), LoopConfig(2, 256, 1, clusters=4)),
         ("BFloat16", (37, 131072, 8), LoopConfig(8, 256, 2, "registers", True, clusters=5)),
         ("Float32", (9, 262144, 4), LoopConfig(16, 512, 3, "registers", True, clusters=2)),
         ("Float16", (5, 4097, 3), LoopConfig(2, 128, 2, "registers", True, clusters=2)),
         ("BFloat16", (7, 70000, 8), LoopConfig(5, 256, 2, "registers", True, clusters=3)),
         ("Float32", (6, 70000, 4), LoopConfig(3, 512, 2, "registers", True)),
         ("Float32", (5, 100003, 5), None), ("Float32", (4, 131071, 1), None), ("Float16", (2, 131072, 8), None),
         ("Float16", (4, 262144, 16), None)]


@pytest.mark.parametrize("dtype,case,loop", LOOPS, ids=[f"{d}-{c[0]}x{c[1]}-{lp!r}" for d, c, lp in LOOPS])
def test_layernorm_on_a_loop_of_rows_matches_torch(dtype, case, loop):
    # y padded as x (whole 128-bit chunks where x has them): the default takes the loop on those rows
    _check_layernorm(dtype, case, loop, case[2] or 1, True)


def _check_layernorm(dtype, case, loop, ypad, on_loop=None, shared=None):
    """LayerNorm of a (m, n) case with ``loop`` into a y padded by ``ypad`` (``on_loop``: whether the loop's kernel
    runs, ``shared``: whether w and b are staged once a CTA; ``None``: either)."""
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n, pad = case
    eps = 1e-5
    x = _rows(torch, m, n, pad, t, 5, 3.0)
    x.copy_(x + 1.5)      # in place: x keeps its padded rows
    w = (torch.rand(n, device="cuda") + 0.5).to(t)
    b = torch.randn(n, device="cuda").to(t)
    y, mean, rstd = Poisoned(torch, (m, n), t, ypad), Poisoned(torch, (m,), torch.float32), \
        Poisoned(torch, (m,), torch.float32)
    c = cute.compile(layernorm_forward, x, w, b, y.view, mean.view, rstd.view, eps, loop)
    assert on_loop is None or ("layernorm_loop_kernel" in c.ptx) == on_loop
    assert shared is None or ("cp.async" in c.ptx and c.launches[0].cluster == (1, 1, 1)) == shared
    c(x, w, b, y.view, mean.view, rstd.view, eps, loop)
    assert y.guards_intact() and mean.guards_intact() and rstd.guards_intact()
    xd = x.double()
    mu = xd.mean(dim=1, keepdim=True)
    r = torch.rsqrt(((xd - mu) ** 2).mean(dim=1, keepdim=True) + eps)
    _close(mean.view, mu[:, 0], "Float32", xd.abs().mean(dim=1))
    _close(rstd.view, r[:, 0], "Float32")
    norm = (xd - mu) * r * w.double()
    # the Float32 mean errs relative to |mean|, which (x - mean) carries into y
    _close(y.view, norm + b.double(), dtype, norm.abs() + b.double().abs() + (mu.abs() + 1) * r * w.double().abs())


# Int64 targets with every configuration, Int32 targets with the BFloat16 ones (one element type is enough)
CE_CONFIGS = [(d, c, "Int64") for d, c in CONFIGS] + [(d, c, "Int32") for d, c in CONFIGS if d == "BFloat16"]


@pytest.mark.parametrize("dtype,case,index", CE_CONFIGS, ids=[f"{d}-{c[0]}x{c[1]}-{i}" for d, c, i in CE_CONFIGS])
def test_cross_entropy_forward_and_backward_match_torch(dtype, case, index):
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n, pad = case
    x = _rows(torch, m, n, pad, t, 6, 3.0)
    target = torch.randint(0, n, (m,), device="cuda")
    target[1::3] = -100  # ignored rows
    target = target.to(torch.int64 if index == "Int64" else torch.int32)
    loss, lse = Poisoned(torch, (m,), torch.float32), Poisoned(torch, (m,), torch.float32)
    cross_entropy_forward(x, target, loss.view, lse.view)
    assert loss.guards_intact() and lse.guards_intact()
    xd = x.double()
    exact_lse = torch.logsumexp(xd, dim=1)
    exact = torch.nn.functional.cross_entropy(xd, target.long(), reduction="none", ignore_index=-100)
    _close(lse.view, exact_lse, "Float32", xd.abs().amax(dim=1))
    _close(loss.view, exact, "Float32", exact_lse.abs() + xd.abs().amax(dim=1))
    dloss = torch.rand(m, device="cuda").to(t)
    dx = Poisoned(torch, (m, n), t, 4)
    cross_entropy_backward(x, target, dloss, lse.view, dx.view)
    assert dx.guards_intact()
    xr = xd.clone().requires_grad_(True)
    torch.nn.functional.cross_entropy(xr, target.long(), reduction="none", ignore_index=-100).backward(
        dloss.double())
    _close(dx.view, xr.grad, dtype, dloss.double().abs()[:, None] * 1e-6)


def _specials(torch, m, n, t):
    """Rows of random values with a NaN (row 0), a +inf (row 1), a -inf (row 2) and all -inf (row 3)."""
    x = _rows(torch, m, n, 0, t, 7)
    x[0, n // 2] = float("nan")
    x[1, n // 3] = float("inf")
    x[2, n - 1] = float("-inf")
    x[3] = float("-inf")
    return x


@pytest.mark.parametrize("n", [7, 65536])
def test_nan_and_infinities_propagate_as_in_torch(n):
    torch = hopper_torch()
    t = torch.float32
    x = _specials(torch, 5, n, t)
    y = torch.empty_like(x)
    softmax_forward(x, y)
    torch.cuda.synchronize()
    _close(y, torch.softmax(x.double(), dim=1), "Float32")
    w = torch.ones(n, device="cuda")
    rstd = torch.empty(5, device="cuda")
    rmsnorm_forward(x, w, y, rstd, 1e-6)
    torch.cuda.synchronize()
    xd = x.double()
    r = torch.rsqrt((xd * xd).mean(dim=1, keepdim=True) + 1e-6)
    _close(y, xd * r, "Float32")
    mean = torch.empty(5, device="cuda")
    layernorm_forward(x, w, torch.zeros(n, device="cuda"), y, mean, rstd, 1e-5)
    torch.cuda.synchronize()
    _close(y, torch.nn.functional.layer_norm(xd, (n,), eps=1e-5), "Float32", 1.0)   # NaN rows where torch's are
    target = torch.tensor([1, 2, n - 1, 0, -100], device="cuda")
    loss, lse = torch.empty(5, device="cuda"), torch.empty(5, device="cuda")
    cross_entropy_forward(x, target, loss, lse)
    torch.cuda.synchronize()
    exact = torch.nn.functional.cross_entropy(xd, target, reduction="none")
    # a NaN, a +inf (lse +inf, loss NaN: torch's log_softmax is NaN there), a -inf (the target: loss +inf), a row of
    # -inf (lse -inf, loss NaN), an ignored row
    _close(lse, torch.logsumexp(xd, dim=1), "Float32", 1.0)
    _close(loss, exact, "Float32", 1.0)
    assert float(lse[1]) == math.inf and float(lse[3]) == -math.inf and float(loss[2]) == math.inf
    assert math.isnan(float(loss[1]))
    # the gradients against torch's, the same rows ignored too (NaN where the row's log_softmax is NaN)
    for tg in (target, torch.full((5,), -100, device="cuda")):
        xg = xd.clone().requires_grad_(True)
        dloss = torch.rand(5, device="cuda", dtype=torch.float64) + 0.5
        torch.nn.functional.cross_entropy(xg, tg, reduction="none").backward(dloss)
        lse = torch.empty(5, device="cuda")
        cross_entropy_forward(x, tg, loss, lse)
        dx = torch.empty_like(x)
        cross_entropy_backward(x, tg, dloss.float(), lse, dx)
        torch.cuda.synchronize()
        _close(dx, xg.grad, "Float32", 1.0)


@pytest.mark.parametrize("dtype", ["BFloat16", "Float16"])
@pytest.mark.parametrize("n, pad", [(40000, 8), (65536, 8), (262143, 1)])
def test_cross_entropy_of_16_bit_rows_reduced_by_halves_matches_torch_on_special_values(dtype, n, pad):
    """16-bit rows over 4, 7 and 16 CTAs (10, 10 and 16 chunks a thread): each thread takes the pair of each half of
    its values on its own (``staged_halves``). Special values in one half or both: thread 0's first half holds
    element 1, its second half element ``b`` (the first chunk of the second half of the rounds, plus 2)."""
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    p = halves_plan("t", n, 8, getattr(cute, dtype))
    half = p.chunks // 2 * p.cluster * p.group * p.vec
    a, b = 1, half + 2
    big = 3e38 if dtype == "BFloat16" else 6e4     # near the type's largest (bf16: the plain form in one half)
    x = _rows(torch, 9, n, pad, t, 9, 3.0)
    x[0, a] = big
    x[1, a], x[1, b] = float("inf"), float("nan")
    x[2, b] = float("inf")
    x[3, :half] = float("-inf")                     # the first halves only -inf (a pair (-inf, 0) combined)
    x[4] = float("-inf")
    x[5, b] = 80.0                                  # the max in the second half, far above the first half's
    x[6, a], x[6, b] = -big, big
    x[7, :] = float("-inf")
    x[7, b] = 2.0                                   # one finite logit
    target = torch.tensor([a, 0, b, b, 0, b, b, b, -100], device="cuda")
    loss, lse = Poisoned(torch, (9,), torch.float32), Poisoned(torch, (9,), torch.float32)
    c = cute.compile(cross_entropy_forward, x, target, loss.view, lse.view)
    assert c.launches[0].cluster == (p.cluster, 1, 1) and p.cluster >= HALVES_CLUSTER and "cp.async" in c.ptx
    c(x, target, loss.view, lse.view)
    assert loss.guards_intact() and lse.guards_intact()
    xd = x.double()
    exact_lse = torch.logsumexp(xd, dim=1)
    exact = torch.nn.functional.cross_entropy(xd, target, reduction="none", ignore_index=-100)
    _close(lse.view, exact_lse, "Float32", 1.0)
    _close(loss.view, exact, "Float32", 1.0)
    assert math.isnan(float(lse.view[1])) and float(lse.view[2]) == math.inf and float(lse.view[4]) == -math.inf
    assert float(lse.view[7]) == 2.0 and float(loss.view[7]) == 0.0 and float(loss.view[8]) == 0.0


@pytest.mark.parametrize("dtype", ["BFloat16", "Float16"])
@pytest.mark.parametrize("n, pad", [(40000, 8), (151936, 8), (262143, 1)])
def test_softmax_forward_of_16_bit_rows_staged_by_halves_matches_torch_on_special_values(dtype, n, pad):
    """16-bit rows over 4, 15 and 16 CTAs (10, 10 and 16 chunks a thread), staged by halves: each half of a
    thread's chunks gives its pair, and the stores read the chunks again. Special values in one half or both (as
    the cross-entropy test above places them), a row whose probabilities fall through the subnormals to zero, and
    outputs into NaN-poisoned padded rows."""
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    p = halves_plan("t", n, 8, getattr(cute, dtype), 0, HALVES_WIDE)
    half = p.chunks // 2 * p.cluster * p.group * p.vec
    a, b = 1, half + 2
    big = 3e38 if dtype == "BFloat16" else 6e4     # bf16: past FLT_MAX / log2(e), the plain form
    x = _rows(torch, 10, n, pad, t, 21, 3.0)
    x[0, a] = big
    x[1, a], x[1, b] = float("inf"), float("nan")
    x[2, b] = float("inf")
    x[3, :half] = float("-inf")
    x[4] = float("-inf")
    x[5, b] = 80.0
    x[6, a], x[6, b] = -big, big
    x[7, :] = float("-inf")
    x[7, b] = 2.0                                   # one finite value: 1 there, 0 elsewhere
    x[8] = (-torch.arange(n, device="cuda", dtype=torch.float32) / (40.0 if dtype == "BFloat16" else 2.0)).to(t)
    y = Poisoned(torch, (10, n), t, pad)            # (the strides agree modulo 8: chunks of 8 elements)
    c = cute.compile(softmax_forward, x, y.view)
    assert c.launches[0].cluster == (p.cluster, 1, 1) and p.cluster >= HALVES_CLUSTER and "cp.async" in c.ptx
    c(x, y.view)
    assert y.guards_intact()
    exact = torch.softmax(x.double(), dim=1)
    _close(y.view, exact, dtype)
    assert float(y.view[7, b]) == 1.0 and int((y.view[7] != 0).sum()) == 1
    assert bool(torch.isnan(y.view[1]).all() and torch.isnan(y.view[4]).all())
    if dtype == "BFloat16":                         # probabilities below 2**-126 kept, as torch keeps them
        assert bool(((y.view[8] > 0) & (y.view[8] < 2.0 ** -126)).any())


@pytest.mark.parametrize("x_type, y_type, n, pad", [("BFloat16", "Float32", 151936, 8),
                                                   ("Float16", "BFloat16", 40000, 8),
                                                   ("BFloat16", "Float32", 262143, 1)])
def test_softmax_forward_staged_by_halves_stores_any_output_type(x_type, y_type, n, pad):
    """The staged forward's output in another type than its input (a Float32 chunk of 8 elements stores in two
    128-bit accesses): rounded once from Float32, into NaN-poisoned padded rows with every guard checked."""
    torch = hopper_torch()
    x = _rows(torch, 7, n, pad, torch_dtype(torch, x_type), 23, 3.0)
    y = Poisoned(torch, (7, n), torch_dtype(torch, y_type), pad)
    c = cute.compile(softmax_forward, x, y.view)
    assert c.launches[0].cluster[0] >= HALVES_CLUSTER and "cp.async" in c.ptx
    c(x, y.view)
    assert y.guards_intact()
    _close(y.view, torch.softmax(x.double(), dim=1), y_type)


def test_a_target_outside_the_classes_gives_a_nan_loss():
    torch = hopper_torch()
    x = torch.randn(4, 100, device="cuda")
    target = torch.tensor([0, 100, -1, -100], device="cuda")
    loss, lse = torch.empty(4, device="cuda"), torch.empty(4, device="cuda")
    cross_entropy_forward(x, target, loss, lse)
    torch.cuda.synchronize()
    assert math.isnan(float(loss[1])) and math.isnan(float(loss[2])) and float(loss[3]) == 0.0
    assert abs(float(loss[0]) - float(torch.logsumexp(x[0].double(), 0) - x[0, 0])) < 1e-5
    dx = torch.empty_like(x)
    cross_entropy_backward(x, target, torch.ones(4, device="cuda"), lse, dx)
    torch.cuda.synchronize()
    assert torch.isnan(dx[1:3]).all() and not torch.isnan(dx[0]).any() and bool((dx[3] == 0).all())


def test_logits_near_the_float32_limit_and_subnormal_results_as_in_torch():
    """Rows whose max times log2(e) overflows Float32 (the kernels' plain form), and rows whose exponentials are
    subnormal (kept on the fast path by a biased exponent): softmax, cross-entropy forward and backward against
    torch in double precision."""
    torch = hopper_torch()
    n = 4097
    x = _rows(torch, 4, n, 0, torch.float32, 8)
    x[0, :4] = torch.tensor([3e38, -3e38, 2.9e38, 3.4e38])  # the max 3.4e38: 3.4e38 * log2(e) overflows
    x[1, 5] = -3.3e38
    x[1, 7] = 2.5e38
    x[2] = -torch.arange(n, device="cuda", dtype=torch.float32) / 40.0  # exp(0 .. -102.4): subnormal from -87.3
    x[3, 9] = 95.0  # every other exp(v - 95) is below 2**-126
    xd = x.double()
    y = torch.empty_like(x)
    softmax_forward(x, y)
    torch.cuda.synchronize()
    exact = torch.softmax(xd, dim=1)
    assert (exact[2:] < 2.0 ** -126).any() and (y[2:] > 0).logical_and(y[2:] < 2.0 ** -126).any()
    err = (y.double() - exact).abs() - 1e-5 * exact.abs() - 2.0 ** -148  # two roundings on the subnormal grid
    assert float(err.max()) <= 0, float(err.max())
    target = torch.tensor([3, 2, 4000, 0], device="cuda")
    loss, lse = torch.empty(4, device="cuda"), torch.empty(4, device="cuda")
    cross_entropy_forward(x, target, loss, lse)
    torch.cuda.synchronize()
    want_lse = torch.logsumexp(xd, dim=1)
    _close(lse, want_lse, "Float32", 1.0)
    _close(loss, torch.nn.functional.cross_entropy(xd, target, reduction="none"), "Float32",
           want_lse.abs() + xd.abs().amax(dim=1))
    xg = xd.clone().requires_grad_(True)
    dloss = torch.rand(4, device="cuda", dtype=torch.float64) + 0.5
    torch.nn.functional.cross_entropy(xg, target, reduction="none").backward(dloss)
    dx = torch.empty_like(x)
    cross_entropy_backward(x, target, dloss.float(), lse, dx)
    torch.cuda.synchronize()
    assert (dx[2:].abs() < 2.0 ** -126).logical_and(dx[2:] != 0).any()
    err = (dx.double() - xg.grad).abs() - 1e-5 * xg.grad.abs() - 2.0 ** -148
    assert float(err.max()) <= 0, float(err.max())
