"""On a Hopper GPU: softmax, cross-entropy, RMSNorm and LayerNorm over rows whose stride is not a whole number of
16-byte chunks (odd vocabularies and widths), which the kernels move as shifted rows (examples/row_chunks.py): every
row of 19 starts at a different distance past a 16-byte boundary, the inputs and outputs start on one, and every
output goes into a NaN-poisoned buffer whose bytes outside it must stay unchanged. The norms read ``w`` and ``b`` at
each row's positions in its window. Against torch in double precision, with the tolerances of
test_row_kernels_gpu.py. A last test reads rows that start past 2**31 elements."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

from examples import (cross_entropy_backward, cross_entropy_forward, layernorm_forward, rmsnorm_backward,  # noqa: E402
                      rmsnorm_forward, rmsnorm_workspace_rows, softmax_backward, softmax_forward)
from _tma_copy_check import hopper_torch, torch_dtype  # noqa: E402
from test_row_kernels_gpu import _close, close_to_rmsnorm_backward, close_to_softmax_backward  # noqa: E402

pytestmark = pytest.mark.gpu

# (rows, n, row stride of the inputs, of the outputs): contiguous odd rows (a cluster of CTAs at 50257-262143,
# several rows a CTA at 9 and 1031), padded rows of strides congruent modulo 8, and strides that are not (x and y
# then start at different offsets: the narrow chunks)
CASES = [(19, 9, 9, 9), (19, 1031, 1031, 1031), (19, 50257, 50257, 50257), (11, 100003, 100003, 100003),
         (19, 32001, 32009, 32017), (19, 4097, 4097, 4103),
         (9, 262143, 262143, 262143)]      # one chunk a thread more than the largest cluster's plan (RowPlan.extra)
CONFIGS = [(d, c) for c in CASES for d in ("BFloat16", "Float32")] + [("Float16", (19, 32001, 32001, 32001))]
IDS = [f"{d}-{c[1]}-{c[2]}-{c[3]}" for d, c in CONFIGS]


class AlignedPoisoned:
    """An (m, n) view of row stride ``stride`` inside a NaN-filled buffer, starting 16 bytes in (on a 16-byte
    boundary, as a shifted row needs); :meth:`guards_intact` checks every element outside the view."""

    def __init__(self, torch, m, n, stride, dtype):
        self.torch, self.lead = torch, 16 // torch.empty((), dtype=dtype).element_size()
        size = self.lead + (m - 1) * stride + n + 64
        self.buf = torch.full((size,), float("nan"), dtype=dtype, device="cuda")
        self.view = self.buf.as_strided((m, n), (stride, 1), self.lead)
        assert self.view.data_ptr() % 16 == 0
        self.before = self.buf.clone()

    def guards_intact(self):
        torch = self.torch
        torch.cuda.synchronize()
        mask = torch.ones_like(self.buf, dtype=torch.bool)
        mask.as_strided(self.view.shape, self.view.stride(), self.lead).fill_(False)
        as_int = {2: torch.int16, 4: torch.int32}[self.buf.element_size()]
        return torch.equal(self.buf.view(as_int)[mask], self.before.view(as_int)[mask])


def _rows(torch, m, n, stride, dtype, seed, scale=1.0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    flat = (torch.randn(((m - 1) * stride + n,), generator=g, device="cuda") * scale).to(dtype)
    return flat.as_strided((m, n), (stride, 1))


def _case_rows(dtype, case, seed, scale):
    """``(torch, its dtype, x)``: the rows of ``case`` = ``(rows, n, input row stride, output row stride)``."""
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n, s_in, _ = case
    return torch, t, _rows(torch, m, n, s_in, t, seed, scale)


@pytest.mark.parametrize("dtype,case", CONFIGS, ids=IDS)
def test_softmax_of_shifted_rows_matches_torch(dtype, case):
    torch, t, x = _case_rows(dtype, case, 11, 4.0)
    m, n, s_in, s_out = case
    y = AlignedPoisoned(torch, m, n, s_out, t)
    softmax_forward(x, y.view)
    assert y.guards_intact()
    exact = torch.softmax(x.double(), dim=1)
    _close(y.view, exact, dtype)
    yin = _rows(torch, m, n, s_in, t, 0, 0.0)
    yin.copy_(exact.to(t))
    dy = _rows(torch, m, n, s_in, t, 12)
    dx = AlignedPoisoned(torch, m, n, s_out, t)
    softmax_backward(yin, dy, dx.view)
    assert dx.guards_intact()
    close_to_softmax_backward(dx.view, yin, dy, dtype)


@pytest.mark.parametrize("dtype,case", CONFIGS, ids=IDS)
def test_cross_entropy_of_shifted_rows_matches_torch(dtype, case):
    torch, t, x = _case_rows(dtype, case, 13, 3.0)
    m, n, s_in, s_out = case
    # targets at a row's first and last element (the partial chunks), ignored rows, and random ones
    target = torch.randint(0, n, (m,), device="cuda")
    target[0::4], target[1::4], target[2::7] = 0, n - 1, -100
    loss = AlignedPoisoned(torch, 1, m, m, torch.float32)
    lse = AlignedPoisoned(torch, 1, m, m, torch.float32)
    cross_entropy_forward(x, target, loss.view[0], lse.view[0])
    assert loss.guards_intact() and lse.guards_intact()
    xd = x.double()
    exact_lse = torch.logsumexp(xd, dim=1)
    exact = torch.nn.functional.cross_entropy(xd, target, reduction="none", ignore_index=-100)
    _close(lse.view[0], exact_lse, "Float32", xd.abs().amax(dim=1))
    _close(loss.view[0], exact, "Float32", exact_lse.abs() + xd.abs().amax(dim=1))
    dloss = torch.rand(m, device="cuda").to(t)
    dx = AlignedPoisoned(torch, m, n, s_out, t)
    cross_entropy_backward(x, target, dloss, lse.view[0], dx.view)
    assert dx.guards_intact()
    xr = xd.clone().requires_grad_(True)
    torch.nn.functional.cross_entropy(xr, target, reduction="none", ignore_index=-100).backward(dloss.double())
    _close(dx.view, xr.grad, dtype, dloss.double().abs()[:, None] * 1e-6)


# the norms also at the widths of one CTA a row and of a cluster with a partial end, and 7 (shorter than a chunk)
NORM_CASES = CASES + [(19, 7, 7, 7), (19, 12289, 12289, 12289)]
# ... and 16-bit w read in pairs in CTAs of 256 threads (151937), Float32 rows of one CTA (4097, 12289: shifted)
NORM_CONFIGS = [(d, c) for c in NORM_CASES for d in ("BFloat16", "Float32")] + \
    [("Float16", (19, 32001, 32001, 32001)), ("Float16", (19, 4097, 4097, 4097)),
     ("Float16", (19, 50257, 50257, 50257)), ("Float16", (9, 151937, 151937, 151937)),
     ("BFloat16", (9, 151937, 151937, 151937)), ("Float32", (19, 4097, 4097, 4097))]
NORM_IDS = [f"{d}-{c[1]}-{c[2]}-{c[3]}" for d, c in NORM_CONFIGS]


@pytest.mark.parametrize("dtype,case", NORM_CONFIGS, ids=NORM_IDS)
def test_norms_of_shifted_rows_match_torch(dtype, case):
    torch, t, x = _case_rows(dtype, case, 15, 3.0)
    _norms_match_torch(torch, x, t, case[3], dtype, True)


@pytest.mark.parametrize("x_type,w_type,n", [("Float32", "BFloat16", 32001), ("Float32", "Float16", 4097),
                                              ("BFloat16", "Float32", 50257), ("Float16", "Float32", 4097),
                                              ("BFloat16", "Float32", 1031), ("Float32", "BFloat16", 100003)])
def test_norms_with_weights_of_another_type_match_torch(x_type, w_type, n):
    """``w`` and ``b`` of another type than ``x`` and ``y`` (Float32 rows with 16-bit weights, 16-bit rows with
    Float32 weights), on shifted rows and on rows of one CTA: the same values as torch's in double precision."""
    torch = hopper_torch()
    x = _rows(torch, 19, n, n, torch_dtype(torch, x_type), 23, 2.0)
    _norms_match_torch(torch, x, torch_dtype(torch, w_type), n, x_type, False)


def _norms_match_torch(torch, x, w_type, s_out, dtype, stats):
    """RMSNorm and LayerNorm of ``x + 1.5`` (``x`` rewritten) with ``w`` and ``b`` of ``w_type`` that vary along the
    row (a value read at another position would show), into poisoned outputs of row stride ``s_out``: every guard
    intact, ``y`` (of ``dtype``) as torch's in double precision, and with ``stats`` the rows' mean and rstd too."""
    m, n = x.shape
    t = x.dtype
    x.copy_(x + 1.5)
    w = (torch.rand(n, device="cuda") * 2.0 + 0.25).to(w_type)
    b = torch.randn(n, device="cuda").to(w_type)
    xd, wd, bd = x.double(), w.double(), b.double()
    y, rstd = AlignedPoisoned(torch, m, n, s_out, t), AlignedPoisoned(torch, 1, m, m, torch.float32)
    rmsnorm_forward(x, w, y.view, rstd.view[0], 1e-6)
    assert y.guards_intact() and rstd.guards_intact()
    r = torch.rsqrt((xd * xd).mean(dim=1, keepdim=True) + 1e-6)
    if stats:
        _close(rstd.view[0], r[:, 0], "Float32")
    _close(y.view, xd * r * wd, dtype)
    y = AlignedPoisoned(torch, m, n, s_out, t)
    mean, rstd = AlignedPoisoned(torch, 1, m, m, torch.float32), AlignedPoisoned(torch, 1, m, m, torch.float32)
    layernorm_forward(x, w, b, y.view, mean.view[0], rstd.view[0], 1e-5)
    assert y.guards_intact() and mean.guards_intact() and rstd.guards_intact()
    mu = xd.mean(dim=1, keepdim=True)
    r = torch.rsqrt(((xd - mu) ** 2).mean(dim=1, keepdim=True) + 1e-5)
    if stats:
        _close(mean.view[0], mu[:, 0], "Float32", xd.abs().mean(dim=1))
        _close(rstd.view[0], r[:, 0], "Float32")
    norm = (xd - mu) * r * wd
    _close(y.view, norm + bd, dtype, norm.abs() + bd.abs() + (mu.abs() + 1) * r * wd.abs())


# RMSNorm backward's shifted rows (norm_backward): several rows a CTA (1031), one CTA (4097, 12289), clusters (50257;
# 151937 over 16 CTAs; 262143, one chunk a thread more), strides congruent modulo 8 (32001 in rows of 32009, out into
# rows of 32017), Float32 rows (4 classes), w of another type than the rows, and rows shorter than a chunk or two
# (1, 7, 9: a chunk that holds both ends) and than a CTA's chunks (255)
BACKWARD_CONFIGS = [("BFloat16", (19, 1031, 1031, 1031), None), ("BFloat16", (19, 4097, 4097, 4097), None),
                    ("Float16", (19, 12289, 12289, 12289), None), ("BFloat16", (11, 50257, 50257, 50257), None),
                    ("Float16", (9, 151937, 151937, 151937), None), ("BFloat16", (5, 262143, 262143, 262143), None),
                    ("BFloat16", (19, 32001, 32009, 32017), None), ("BFloat16", (19, 4097, 4097, 4097), "Float32"),
                    ("Float16", (9, 100003, 100003, 100003), "Float32"), ("Float32", (19, 4097, 4097, 4097), None),
                    ("Float32", (9, 100003, 100003, 100003), "BFloat16"), ("BFloat16", (19, 7, 7, 7), None),
                    ("Float16", (19, 1, 1, 1), None), ("Float32", (19, 9, 9, 9), None),
                    ("BFloat16", (19, 255, 255, 255), None)]


@pytest.mark.parametrize("dtype,case,w_type", BACKWARD_CONFIGS,
                         ids=[f"{d}-{c[1]}-{c[2]}-{c[3]}-w{w or d}" for d, c, w in BACKWARD_CONFIGS])
def test_rmsnorm_backward_of_shifted_rows_matches_torch(dtype, case, w_type):
    """Every row starts at another distance past a 16-byte boundary (8 classes of rows by their start): with one
    workspace row (the narrow chunks), 8 and 24 (the classes' groups even), 73 (uneven: 10 and 9 groups a class),
    the default and more workspace rows than rows; ``dx`` and ``dw`` into poisoned buffers, and ``dx`` in place of
    ``dy``. ``w`` varies along the row (a value read at another position would show)."""
    torch, t, x = _case_rows(dtype, case, 17, 2.0)
    m, n, s_in, s_out = case
    w = (torch.rand(n, device="cuda") * 2.0 + 0.25).to(torch_dtype(torch, w_type) if w_type else t)
    dy = _rows(torch, m, n, s_in, t, 18)
    rstd = torch.rsqrt(x.double().pow(2).mean(dim=1) + 1e-6).float()
    for units in sorted({1, 8, 24, 73, rmsnorm_workspace_rows(m, n), m + 3}):
        dx, dw = AlignedPoisoned(torch, m, n, s_out, t), AlignedPoisoned(torch, 1, n, n, t)
        ws = torch.empty((units, n), dtype=torch.float32, device="cuda")
        rmsnorm_backward(dy, x, w, rstd, dx.view, dw.view[0], ws)
        assert dx.guards_intact() and dw.guards_intact()
        close_to_rmsnorm_backward(dx.view, dw.view[0], dy, x, w, rstd, dtype)
    inplace = _rows(torch, m, n, s_in, t, 0, 0.0)
    inplace.copy_(dy)
    dw = torch.full((n,), float("nan"), dtype=t, device="cuda")
    rmsnorm_backward(inplace, x, w, rstd, inplace, dw, torch.empty((16, n), dtype=torch.float32, device="cuda"))
    close_to_rmsnorm_backward(inplace, dw, dy, x, w, rstd, dtype)


@pytest.mark.parametrize("n", [4097, 50257])
def test_rmsnorm_backward_of_shifted_rows_reads_nothing_of_the_row_before(n):
    """The chunk that holds a shifted row's start is copied whole, the previous row's last elements with it: rows
    whose last ``x`` is ``inf`` (their own gradients NaN, as torch's) leave the rows after them as torch's."""
    torch = hopper_torch()
    m = 19
    x = _rows(torch, m, n, n, torch.bfloat16, 19, 2.0)
    x[::3, -1] = float("inf")
    w = (torch.rand(n, device="cuda") * 2.0 + 0.25).to(torch.bfloat16)
    dy = _rows(torch, m, n, n, torch.bfloat16, 20)
    rstd = torch.rsqrt(x.double().pow(2).mean(dim=1) + 1e-6).float()
    dx, dw = AlignedPoisoned(torch, m, n, n, torch.bfloat16), AlignedPoisoned(torch, 1, n, n, torch.bfloat16)
    rmsnorm_backward(dy, x, w, rstd, dx.view, dw.view[0], torch.empty((16, n), dtype=torch.float32, device="cuda"))
    assert dx.guards_intact() and dw.guards_intact()
    assert torch.isnan(dx.view[::3]).all() and not torch.isnan(dx.view[1::3]).any()
    close_to_rmsnorm_backward(dx.view, dw.view[0], dy, x, w, rstd, "BFloat16")


@pytest.mark.parametrize("dtype", ["BFloat16", "Float16", "Float32"])
@pytest.mark.parametrize("offset", [1, 3, 8])
def test_rmsnorm_reads_w_at_any_start(dtype, offset):
    """``w`` that starts ``offset`` elements into a buffer: 16-byte aligned (8 16-bit elements), where 16-bit ``w``
    moves in pairs of 16-byte chunks, or not, where it is read element by element; the same rows either way."""
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n = 19, 32001
    x = _rows(torch, m, n, n, t, 21, 2.0)
    buf = (torch.rand(n + 16, device="cuda") * 2.0 + 0.25).to(t)
    w = buf[offset:offset + n]
    y, rstd = AlignedPoisoned(torch, m, n, n, t), AlignedPoisoned(torch, 1, m, m, torch.float32)
    rmsnorm_forward(x, w, y.view, rstd.view[0], 1e-6)
    assert y.guards_intact() and rstd.guards_intact()
    xd = x.double()
    r = torch.rsqrt((xd * xd).mean(dim=1, keepdim=True) + 1e-6)
    _close(y.view, xd * r * w.double(), dtype)


def test_shifted_rows_past_2_31_elements():
    """43000 bf16 rows of 50257 (2.16e9 elements, 4.3 GB): the rows from 42731 on start past 2**31 elements. The
    cross-entropy's lse of every row; the softmax of every row into a poisoned buffer, its first and last rows
    checked, and every element outside it."""
    torch = hopper_torch()
    m, n = 43000, 50257
    if torch.cuda.mem_get_info()[0] < 24 * 2 ** 30:
        pytest.skip("needs 24 GiB of free device memory")
    x = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
    for i in range(0, m, 4096):
        g = torch.Generator(device="cuda").manual_seed(i)
        x[i:i + 4096] = torch.randn(x[i:i + 4096].shape, generator=g, device="cuda") * 3.0
    assert (m - 1) * n > 2 ** 31
    target = torch.randint(0, n, (m,), device="cuda")
    loss = torch.full((m,), float("nan"), device="cuda")
    lse = torch.full((m,), float("nan"), device="cuda")
    cross_entropy_forward(x, target, loss, lse)
    torch.cuda.synchronize()
    for i in range(0, m, 4096):
        part = x[i:i + 4096].double()
        _close(lse[i:i + 4096], torch.logsumexp(part, dim=1), "Float32", part.abs().amax(dim=1))
    y = AlignedPoisoned(torch, m, n, n, torch.bfloat16)
    softmax_forward(x, y.view)
    assert y.guards_intact()
    for rows in (slice(0, 8), slice(m - 300, m)):
        _close(y.view[rows], torch.softmax(x[rows].double(), dim=1), "BFloat16")
