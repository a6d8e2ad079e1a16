"""Kernel 12 on a Hopper GPU: the im2col matrix of NHWC fp16/bf16 images, gathered by im2col TMA into shared
memory and TMA-stored into a poisoned output, equals ``torch.nn.functional.unfold`` (columns permuted from
(c, kh, kw) to (kh, kw, c)) at every element, for kernels 1/3/5, strides 1/2, dilations 1/2, paddings 0/1/2;
the poison around the output is untouched.

Each test builds and assembles its PTX first (everywhere); the launches need a CUDA device (sm_90) and torch."""

import itertools

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0)")

import cute_py as cute  # noqa: E402
from examples.im2col import conv_output_size, im2col  # noqa: E402
from _tma_copy_check import hopper_torch, torch_dtype  # noqa: E402

pytestmark = pytest.mark.gpu
POISON = -7.0
GUARD = 4096  # poison elements on each side of the output

SHAPE = (2, 11, 10, 64)  # N, H, W, C
CASES = [(dt, k, s, d, p) for dt, (k, s, d, p) in itertools.product(
    ("Float16", "BFloat16"), itertools.product((1, 3, 5), (1, 2), (1, 2), (0, 1, 2)))
    if min(SHAPE[1], SHAPE[2]) + 2 * p >= d * (k - 1) + 1]


def _out_shape(k, s, d, p):
    n, h, w, c = SHAPE
    return (n * conv_output_size(h, k, s, d, p) * conv_output_size(w, k, s, d, p), k * k * c)


@pytest.mark.parametrize("dtype,k,s,d,p", CASES)
def test_im2col_equals_unfold(dtype, k, s, d, p, assemble_ptx):
    img_spec = cute.compiler.DeviceArraySpec(dtype, SHAPE)
    out_spec = cute.compiler.DeviceArraySpec(dtype, _out_shape(k, s, d, p))
    compiled = cute.compile(im2col, img_spec, out_spec, k, s, d, p, (64, 64))
    assert ".im2col." in compiled.ptx and assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    tdt = torch_dtype(torch, dtype)
    gen = torch.Generator(device="cpu").manual_seed(k * 1000 + s * 100 + d * 10 + p)
    img = torch.randn(SHAPE, generator=gen).to(tdt).cuda()
    m, kk = _out_shape(k, s, d, p)
    buf = torch.full((GUARD + m * kk + GUARD,), POISON, dtype=tdt, device="cuda")
    out = buf[GUARD:GUARD + m * kk].view(m, kk)
    compiled(img, out)
    torch.cuda.synchronize()
    x = img.permute(0, 3, 1, 2).float()  # NCHW
    cols = torch.nn.functional.unfold(x, k, dilation=d, padding=p, stride=s)  # (N, C*k*k, L): rows (c, kh, kw)
    n, c = SHAPE[0], SHAPE[3]
    want = cols.view(n, c, k, k, -1).permute(0, 4, 2, 3, 1).reshape(m, kk).to(tdt)
    got = out.cpu()
    assert torch.equal(got.view(torch.int16), want.cpu().view(torch.int16)), \
        f"{int((got != want.cpu()).sum())} of {m * kk} elements differ"
    guard = torch.cat([buf[:GUARD], buf[GUARD + m * kk:]]).cpu().float()
    assert (guard == POISON).all(), "the kernel wrote outside the output"


def test_im2col_with_a_128b_swizzled_tile_and_an_eviction_policy(assemble_ptx):
    k, s, d, p = 3, 2, 1, 1
    img_spec = cute.compiler.DeviceArraySpec("Float16", SHAPE)
    out_spec = cute.compiler.DeviceArraySpec("Float16", _out_shape(k, s, d, p))
    compiled = cute.compile(im2col, img_spec, out_spec, k, s, d, p, (128, 64), "128B", "evict_first")
    assert ".im2col." in compiled.ptx and assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    img = torch.randn(SHAPE, generator=torch.Generator().manual_seed(5)).half().cuda()
    m, kk = _out_shape(k, s, d, p)
    out = torch.full((m, kk), POISON, dtype=torch.float16, device="cuda")
    compiled(img, out)
    torch.cuda.synchronize()
    cols = torch.nn.functional.unfold(img.permute(0, 3, 1, 2).float(), k, dilation=d, padding=p, stride=s)
    want = cols.view(SHAPE[0], SHAPE[3], k, k, -1).permute(0, 4, 2, 3, 1).reshape(m, kk).half()
    assert torch.equal(out.cpu(), want.cpu())
