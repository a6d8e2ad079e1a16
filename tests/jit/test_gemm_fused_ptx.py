"""Kernel 13's fused epilogue without a GPU: ``C = activation(alpha * A @ B^T + bias)`` in fp32 before the one
rounding. Its PTX for each activation, assembled; no spills where the assembler can say; the plain GEMM's PTX
untouched by the defaults; the rules of its arguments."""

import re

import numpy as np
import pytest

import cute_py as cute
from examples import gemm
from examples.gemm_epilogue import ACTIVATIONS, column_offsets
from _ptxas_report import ptxas_report

spec = cute.compiler.DeviceArraySpec


def _compile(m=1024, n=1024, k=512, out="BFloat16", **kwargs):
    return cute.compile(gemm, spec("BFloat16", (m, k)), spec("BFloat16", (n, k)), spec(out, (m, n)), **kwargs)


@pytest.mark.parametrize("activation", [None, *ACTIVATIONS])
def test_fused_epilogue_ptx(activation, assemble):
    """Each accumulator takes the scale, its column's bias (a 16-bit load, converted) and the activation before
    the conversion to C's type; the exponentials of silu and the gelus are the PTX's ``ex2``."""
    plain = _compile().ptx
    c = _compile(bias=spec("BFloat16", (1024,)), alpha=0.5, activation=activation)
    assert c.ptx != plain
    body = c.ptx[c.ptx.index(".entry"):]
    assert body.count("ld.global.b16") >= 64, "a bias load per column of a thread's accumulators"
    assert "cvt.f32.bf16" in body
    if activation in ("silu", "gelu", "gelu_tanh"):
        assert "ex2.approx" in body
    if activation in ("silu", "gelu_tanh"):
        assert "rcp.approx.ftz.f32" in body and "div.rn" not in body
    if activation is None:
        assert "ex2.approx" not in body
    assemble(c.ptx)


@pytest.mark.parametrize("kwargs", [dict(bias=spec("Float16", (4096,))), dict(alpha=3.0, activation="relu"),
                                    dict(bias=spec("Float32", (4096,)), activation="silu"),
                                    dict(bias=spec("Float32", (4096,)), activation="gelu"),
                                    dict(bias=spec("Float32", (4096,)), activation="gelu_tanh")])
def test_fused_epilogue_keeps_the_accumulators_in_registers(kwargs):
    """With 128 accumulators a thread (the 128 x 256 tile), the fused work goes a few values at a time and the
    bias is read at the thread's first column plus constant offsets: the assembler spills nothing, ``gelu``'s erf
    included (two polynomials and an ``ex2``, no division), and ``gelu_tanh`` as ``x / (1 + exp(-2 u))`` (an
    ``rcp``; through ``tanh``'s division it spilled 368 bytes). (A strided bias spills a few.)"""
    report = ptxas_report(_compile(4096, 4096, 4096, **kwargs).ptx)
    if report is None:
        pytest.skip("no ptxas to ask")
    spills = report[1]
    assert spills == [(0, 0)], f"ptxas spills: {spills}"


def test_the_defaults_leave_the_plain_gemm_untouched():
    plain = _compile(300, 260, 200).ptx
    assert _compile(300, 260, 200, alpha=1.0, bias=None, activation=None).ptx == plain
    assert _compile(300, 260, 200, alpha=1).ptx == plain
    scaled = _compile(300, 260, 200, alpha=0.5).ptx
    assert scaled != plain
    assert _compile(300, 260, 200, alpha=np.float32(0.5)).ptx == scaled       # a number: keyed by value
    assert _compile(300, 260, 200, alpha=np.int64(1)).ptx == plain


def test_column_offsets_of_the_accumulators():
    """A thread's accumulator ``i`` lies in column ``2 t0 + i % 2 + 8 (i / 4)`` of its warpgroup's tile (the
    WGMMA's C layout): relative to its first, ``i % 2 + 8 (i / 4)``."""
    from cute_py.utils import hopper_helpers as hh
    from cute_py.nvgpu import warpgroup as wg

    for bn in (64, 128, 256):
        mma = hh.make_trivial_tiled_mma(cute.BFloat16, cute.BFloat16, wg.OperandMajorMode.K, wg.OperandMajorMode.K,
                                        cute.Float32, (2, 1, 1), (64, bn))
        offsets = column_offsets(mma, (128, bn))
        assert offsets == tuple(i % 2 + 8 * (i // 4) for i in range(bn // 2))


@pytest.mark.parametrize("kwargs, match", [
    (dict(activation="tanh"), "activation must be one of"),
    (dict(activation="GELU"), "activation must be one of"),
    (dict(alpha=True), "alpha must be a real number"),
    (dict(alpha="2"), "alpha must be a real number"),
    (dict(alpha=None), "alpha must be a real number"),
    (dict(alpha=1 + 2j), "alpha must be a real number"),
    (dict(alpha=float("nan")), "alpha must be a real number other than NaN"),
    (dict(alpha=np.complex64(2)), "alpha must be a real number"),
    (dict(bias=spec("BFloat16", (261,))), "bias must be a 1-D tensor of C's 260 columns"),
    (dict(bias=spec("BFloat16", (1, 260))), "bias must be a 1-D tensor of C's 260 columns"),
    (dict(bias=spec("Int32", (260,))), "bias is Float32, BFloat16 or Float16"),
])
def test_fused_epilogue_rules(kwargs, match):
    with pytest.raises(cute.CuteValueError, match=re.escape(match)):
        _compile(300, 260, 200, **kwargs)
    with pytest.raises(cute.CuteError, match="must be on a CUDA device"):
        _compile(300, 260, 200, bias=np.zeros(260, np.float32))


def test_gelu_tanh_as_a_sigmoid_stays_within_a_few_ulps_where_torchs_formula_cancels():
    """The epilogue's ``gelu_tanh`` is ``x / (1 + exp(-2 u))``, ``u`` as the kernel computes it: emulated in fp32
    (each operation rounded once; the kernel's ``exp`` and ``rcp`` add their own few ulps) it is within 3 ulps of
    the exact value for the same ``u`` over [-12, 12], where ``(1 + tanh(u)) / 2`` in fp32 loses every digit of
    the negative tail (0 from about x = -9)."""
    np = pytest.importorskip("numpy")
    x = np.linspace(-12, 12, 200001).astype(np.float32)
    c = np.float32(0.7978845608028654)
    inner = np.float64(np.float32(0.044715) * x) * np.float64(x * x) + np.float64(x)    # an fma
    u = (c * inner.astype(np.float32)).astype(np.float32)
    e = np.exp(np.float64(np.float32(-2.0) * u)).astype(np.float32)
    ours = x * (1.0 / np.float64(np.float32(1.0) + e)).astype(np.float32)
    exact = np.float64(x) / (1.0 + np.exp(-2.0 * np.float64(u)))
    via_tanh = (np.float32(0.5) * x * (np.float32(1.0) + np.tanh(u).astype(np.float32))).astype(np.float32)
    seen = np.abs(exact) > 1e-37
    ulp = np.spacing(np.abs(exact[seen]).astype(np.float32)).astype(np.float64)
    assert (np.abs(ours[seen] - exact[seen]) / ulp).max() < 3
    assert (np.abs(via_tanh[seen] - exact[seen]) / ulp).max() > 1e6
