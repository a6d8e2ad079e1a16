"""On a Hopper GPU: the 8-bit floats and TF32. Every E4M3 and E5M2 bit pattern widens to the Float32 its format
defines (decoded here from the format, sign, exponent and mantissa); Float32 values (every class: NaN, infinities,
subnormals, the overflow edges) narrow to E4M3/E5M2 by round-to-nearest-even with saturation to the largest finite
value, and to TF32 by rounding the 13 low mantissa bits to nearest, ties away from zero. Each test builds and
assembles its PTX first; the launch needs a Hopper GPU and torch."""

import math

import pytest

np = pytest.importorskip("numpy", reason="the model uses numpy")
try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.compiler import DeviceArraySpec  # noqa: E402
import _numbers_reference as ref  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu
N = 4096
# name -> (exponent bits, mantissa bits, bias, largest finite value, has infinities, greatest normal exponent)
FORMATS = {"Float8E4M3FN": (4, 3, 7, 448.0, False, 8), "Float8E5M2": (5, 2, 15, 57344.0, True, 15)}


def decode(bits, fmt):
    """The value of the 8-bit float with these bits, from its format."""
    e_bits, m_bits, bias, _, has_inf, _ = FORMATS[fmt]
    sign = -1.0 if bits & 0x80 else 1.0
    e, m = (bits >> m_bits) & ((1 << e_bits) - 1), bits & ((1 << m_bits) - 1)
    if e == (1 << e_bits) - 1:
        if has_inf:
            return sign * math.inf if m == 0 else math.nan
        if m == (1 << m_bits) - 1:
            return math.nan
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - m_bits)
    return sign * (1 + m / (1 << m_bits)) * 2.0 ** (e - bias)


def narrow(x, fmt):
    """Round-to-nearest-even to the format, saturating to its largest finite value (NaN stays NaN)."""
    _, m_bits, bias, biggest, _, emax = FORMATS[fmt]
    if math.isnan(x):
        return math.nan
    if math.isinf(x) or abs(x) >= biggest:
        return math.copysign(biggest, x)
    r = ref.round_to_format(x, m_bits, 1 - bias, emax)
    return math.copysign(min(abs(r), biggest), r)


def tf32(bits):
    """The TF32 rounding of the Float32 with these bits: 13 low mantissa bits to nearest, ties away from zero."""
    if (bits & 0x7F800000) == 0x7F800000:
        return bits  # inf and NaN
    return ((bits & 0x7FFFFFFF) + 0x1000 & 0xFFFFE000) | (bits & 0x80000000)


@cute.kernel
def narrow_kernel(f, e4, e5, w4, w5, t):
    tx, _, _ = cute.arch.thread_idx()
    bx, _, _ = cute.arch.block_idx()
    i = bx * 128 + tx
    x = f[i]
    e4[i] = x.to(cute.Float8E4M3FN)
    e5[i] = cute.Float8E5M2(x)
    w4[i] = e4[i].to(cute.Float32)
    w5[i] = e5[i].to(cute.Float32)
    t[i] = x.to(cute.TFloat32).to(cute.Float32)


@cute.jit
def narrow_all(f, e4, e5, w4, w5, t):
    narrow_kernel(f, e4, e5, w4, w5, t).launch(grid=N // 128, block=128)


def _floats(rng):
    """Float32 inputs of every class: random bits, small normals, the formats' edges and their neighbours."""
    bits = rng.integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)
    xs = bits.view(np.float32).copy()
    edges = [448.0, 464.0, 463.99, 480.0, 57344.0, 61440.0, 2.0 ** -9, 2.0 ** -10, 1.5 * 2.0 ** -10, 2.0 ** -16,
             2.0 ** -17, 3 * 2.0 ** -18, 0.0, -0.0, math.inf, -math.inf, math.nan, 3.4028235e38, 1e-45]
    xs[: len(edges)] = edges
    xs[len(edges): N // 2] = (rng.standard_normal(N // 2 - len(edges)) * 64).astype(np.float32)
    return xs


def test_8_bit_floats_and_tf32_convert_as_their_formats_define(assemble_ptx):
    specs = [DeviceArraySpec(t, (N,)) for t in ("Float32", "Float8E4M3FN", "Float8E5M2", "Float32", "Float32",
                                                "Float32")]
    compiled = cute.compile(narrow_all, *specs)
    for instruction in ("cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f32", "cvt.rn.f16x2.e4m3x2",
                        "cvt.rn.f16x2.e5m2x2", "cvt.rna.tf32.f32"):
        assert instruction in compiled.ptx, instruction
    assert assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"

    torch = hopper_torch()
    xs = _floats(np.random.default_rng(7))
    f = torch.from_numpy(xs).cuda()
    e4 = torch.zeros(N, dtype=torch.uint8, device="cuda").view(torch.float8_e4m3fn)
    e5 = torch.zeros(N, dtype=torch.uint8, device="cuda").view(torch.float8_e5m2)
    w4, w5, t = (torch.zeros(N, dtype=torch.float32, device="cuda") for _ in range(3))
    narrow_all(f, e4, e5, w4, w5, t)
    torch.cuda.synchronize()
    b4, b5 = e4.view(torch.uint8).cpu().numpy(), e5.view(torch.uint8).cpu().numpy()
    wrong = []
    for k, x in enumerate(xs.tolist()):
        for fmt, got_bits, widened in (("Float8E4M3FN", b4, w4), ("Float8E5M2", b5, w5)):
            want, got = narrow(x, fmt), decode(int(got_bits[k]), fmt)
            same = (math.isnan(want) and math.isnan(got)) or (want == got and math.copysign(1, want) ==
                                                              math.copysign(1, got))
            if not same:
                wrong.append(f"{fmt}({x!r}): got {got!r} (bits {int(got_bits[k]):#04x}), want {want!r}")
    got_w4, got_w5 = w4.cpu().numpy(), w5.cpu().numpy()
    for k in range(N):
        for fmt, bits, got in (("Float8E4M3FN", b4, got_w4), ("Float8E5M2", b5, got_w5)):
            want = decode(int(bits[k]), fmt)
            if not ((math.isnan(want) and math.isnan(got[k])) or want == got[k]):
                wrong.append(f"{fmt} bits {int(bits[k]):#04x} widened to {got[k]!r}, want {want!r}")
    got_t = t.cpu().numpy().view(np.uint32)
    for k, b in enumerate(xs.view(np.uint32).tolist()):
        want = tf32(b)
        if got_t[k] != want and not (math.isnan(xs[k])):
            wrong.append(f"tf32 of {xs[k]!r} ({b:#010x}): got {int(got_t[k]):#010x}, want {want:#010x}")
    assert not wrong, f"{len(wrong)} wrong, e.g.:\n" + "\n".join(wrong[:8])


@cute.kernel
def widen_kernel(e4, e5, w4, w5):
    i, _, _ = cute.arch.thread_idx()
    w4[i] = e4[i].to(cute.Float32)
    w5[i] = e5[i].to(cute.Float16).to(cute.Float32)


@cute.jit
def widen_all(e4, e5, w4, w5):
    widen_kernel(e4, e5, w4, w5).launch(grid=1, block=256)


def test_every_8_bit_float_bit_pattern_widens_exactly(assemble_ptx):
    specs = [DeviceArraySpec(t, (256,)) for t in ("Float8E4M3FN", "Float8E5M2", "Float32", "Float32")]
    assert assemble_ptx(cute.compile(widen_all, *specs).ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).cuda()
    w4, w5 = torch.zeros(256, device="cuda"), torch.zeros(256, device="cuda")
    widen_all(codes.view(torch.float8_e4m3fn), codes.view(torch.float8_e5m2), w4, w5)
    torch.cuda.synchronize()
    for fmt, got in (("Float8E4M3FN", w4.cpu().numpy()), ("Float8E5M2", w5.cpu().numpy())):
        for b in range(256):
            want = decode(b, fmt)
            assert (math.isnan(want) and math.isnan(got[b])) or (want == got[b] and math.copysign(1, want) ==
                                                                  math.copysign(1, got[b])), (fmt, b, got[b], want)
