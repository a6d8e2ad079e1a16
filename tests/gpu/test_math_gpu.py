"""``cute.math`` on a Hopper GPU: each function's Float32 error, in units in the last place of the double-precision
result rounded to Float32, within its documented bound over its domain (random arguments of every magnitude and
the edges: zeros, subnormals, infinities, NaN, overflow and underflow thresholds); ``sqrt`` and ``fma`` correctly
rounded; special values as C's ``<math.h>``; the ``fastmath`` forms within the PTX ISA's bounds for their
instructions. Float16/BFloat16 compute in Float32 and round once. The PTX is built and assembled first
(everywhere); the launch needs a Hopper GPU and torch."""

import math

import pytest

np = pytest.importorskip("numpy", reason="the reference uses numpy")
try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.compiler import DeviceArraySpec  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu
N = 1 << 16
FUNCTIONS = ["exp", "exp2", "log", "log2", "sin", "cos", "tanh", "sqrt", "rsqrt", "erf"]
# name -> (precise bound in ulp, reference in double precision)
PRECISE = {"exp": (3, np.exp), "exp2": (3, np.exp2), "log": (2, np.log), "log2": (3, np.log2), "sin": (2, np.sin),
           "cos": (2, np.cos), "tanh": (3, np.tanh), "sqrt": (0.5, np.sqrt), "rsqrt": (2, lambda x: 1 / np.sqrt(x)),
           "erf": (3, np.vectorize(math.erf, otypes=[np.float64]))}


def _kernel(fn, fastmath):
    f = getattr(cute.math, fn)

    @cute.kernel
    def math_kernel(x, out):
        tx, _, _ = cute.arch.thread_idx()
        bx, _, _ = cute.arch.block_idx()
        i = bx * 256 + tx
        out[i] = f(x[i], fastmath=fastmath)

    @cute.jit
    def run(x, out):
        math_kernel(x, out).launch(grid=N // 256, block=256)

    return run


def _arguments(fn, rng):
    """Arguments over the function's domain: every magnitude, and the edges."""
    if fn in ("sin", "cos"):
        xs = np.concatenate([rng.uniform(-4, 4, N // 4), rng.uniform(-105615, 105615, N // 4),
                             np.exp(rng.uniform(-80, 11.5, N // 2)) * rng.choice([-1, 1], N // 2)])
        edges = [0.0, -0.0, math.pi / 2, math.pi, 105615.0, -105615.0, 1e-30, math.inf, math.nan]
    elif fn == "erf":
        xs = np.concatenate([rng.uniform(-5, 5, N // 2), np.exp(rng.uniform(-90, 1.7, N // 2))
                             * rng.choice([-1, 1], N // 2)])
        edges = [0.0, -0.0, 1.0, 0.921875, 0.92187494, 0.9218751, -0.921875, 3.92, 3.9199998, -1.0, 1e-30, 1e-45,
                 math.inf, -math.inf, math.nan]
    elif fn in ("exp", "exp2", "tanh"):
        lim = 128 if fn == "exp2" else 90
        xs = np.concatenate([rng.uniform(-lim, lim, N // 2), np.exp(rng.uniform(-90, 4, N // 2))
                             * rng.choice([-1, 1], N // 2)])
        edges = [0.0, -0.0, 88.72, 88.73, -87.3, -103.0, -104.0, 127.9, 128.0, -149.0, -150.0, 1e-30, math.inf,
                 -math.inf, math.nan, 9.0, 0.55, 0.549]
    else:  # log, log2, sqrt, rsqrt: every positive Float32, and the rest
        bits = rng.integers(1, 0x7F800000, N, dtype=np.int64).astype(np.uint32)
        xs = bits.view(np.float32).astype(np.float64)
        edges = [0.0, -0.0, 1.0, 2.0, 0.5, 1.0000001, 0.99999994, 1e-45, 1.1754942e-38, math.inf, -1.0, math.nan]
    xs = xs.astype(np.float32)
    xs[: len(edges)] = edges
    return xs


def _ulps(got, want):
    """|got - want| in units in the last place of ``want`` rounded to Float32 (exact matches of inf/NaN: 0)."""
    with np.errstate(over="ignore"):
        want32 = want.astype(np.float32)
    both_nan = np.isnan(got) & np.isnan(want32)
    same_inf = np.isinf(got) & np.isinf(want32) & (np.sign(got) == np.sign(want32))
    ulp = np.spacing(np.abs(want32).astype(np.float32)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - want) / ulp
    err[both_nan | same_inf] = 0
    err[np.isnan(err)] = np.inf  # one NaN, the other not
    return err


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_each_function_within_its_documented_bound(fn, assemble_ptx):
    run = _kernel(fn, False)
    compiled = cute.compile(run, DeviceArraySpec("Float32", (N,)), DeviceArraySpec("Float32", (N,)))
    assert assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    xs = _arguments(fn, np.random.default_rng(FUNCTIONS.index(fn)))
    out = torch.full((N,), 7.0, device="cuda")
    run(torch.from_numpy(xs).cuda(), out)
    torch.cuda.synchronize()
    got = out.cpu().numpy()
    bound, reference = PRECISE[fn]
    with np.errstate(all="ignore"):
        want = reference(xs.astype(np.float64))
    err = _ulps(got, want)
    worst = int(np.argmax(err))
    print(f"{fn}: max error {err[worst]:.3f} ulp over {N} arguments (at {xs[worst]!r})")
    assert err[worst] <= bound, (f"{fn}({xs[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: "
                                 f"{err[worst]:.3f} ulp > {bound}")


FAST = {  # name -> (kind, bound): relative error, or absolute error (on the stated range)
    "exp2": ("rel", 2.0 ** -21), "log2": ("abs", 2.0 ** -21), "sin": ("abs", 2.0 ** -20), "cos": ("abs", 2.0 ** -20),
    "tanh": ("rel", 2.0 ** -10), "sqrt": ("rel", 2.0 ** -22), "rsqrt": ("rel", 2.0 ** -22)}


@pytest.mark.parametrize("fn", sorted(FAST))
def test_fastmath_forms_within_the_bounds_of_their_instructions(fn, assemble_ptx):
    run = _kernel(fn, True)
    compiled = cute.compile(run, DeviceArraySpec("Float32", (N,)), DeviceArraySpec("Float32", (N,)))
    assert ".approx" in compiled.ptx and assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    rng = np.random.default_rng(100 + len(fn))
    if fn in ("sin", "cos"):
        xs = rng.uniform(-math.pi, math.pi, N)
    elif fn == "log2":
        xs = rng.uniform(0.5, 2.0, N)
    elif fn == "exp2":
        xs = rng.uniform(-100, 100, N)
    elif fn == "tanh":
        xs = rng.uniform(-10, 10, N)
    else:
        xs = np.exp(rng.uniform(-80, 80, N))
    xs = xs.astype(np.float32)
    out = torch.zeros((N,), device="cuda")
    run(torch.from_numpy(xs).cuda(), out)
    torch.cuda.synchronize()
    got = out.cpu().numpy().astype(np.float64)
    want = PRECISE[fn][1](xs.astype(np.float64))
    kind, bound = FAST[fn]
    err = np.abs(got - want) / (np.abs(want) if kind == "rel" else 1.0)
    print(f"{fn} fastmath: max {kind} error {err.max():.3g} (bound {bound:.3g})")
    assert err.max() <= bound


@cute.kernel
def fma_kernel(a, b, c, out, h, hout):
    i, _, _ = cute.arch.thread_idx()
    out[i] = cute.math.fma(a[i], b[i], c[i])
    hout[i] = cute.math.exp(h[i])


@cute.jit
def fma_run(a, b, c, out, h, hout):
    fma_kernel(a, b, c, out, h, hout).launch(grid=1, block=1024)


def test_fma_rounds_once_and_half_precision_rounds_once_from_float32(assemble_ptx):
    specs = [DeviceArraySpec(t, (1024,)) for t in ("Float32",) * 4 + ("Float16", "Float16")]
    compiled = cute.compile(fma_run, *specs)
    assert "fma.rn.f32" in compiled.ptx and assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(1024).astype(np.float32) * 1e3 for _ in range(3))
    h = rng.uniform(-10, 10, 1024).astype(np.float16)
    out, hout = torch.zeros(1024, device="cuda"), torch.zeros(1024, dtype=torch.float16, device="cuda")
    fma_run(*(torch.from_numpy(v).cuda() for v in (a, b, c)), out, torch.from_numpy(h).cuda(), hout)
    torch.cuda.synchronize()
    want = (a.astype(np.float64) * b + c).astype(np.float32)  # the product is exact in double, one rounding
    assert np.array_equal(out.cpu().numpy(), want)
    # Float16: exp in Float32 (<= 2 ulp there) then one rounding: within 1 Float16 ulp of the true value
    got_h = hout.cpu().numpy().astype(np.float64)
    want_h = np.exp(h.astype(np.float64))
    assert (np.abs(got_h - want_h) <= np.spacing(want_h.astype(np.float16)).astype(np.float64)).all()


def test_host_numbers_are_computed_by_python():
    assert cute.math.exp(1.0) == math.e and cute.math.log(0.0) == -math.inf and math.isnan(cute.math.sqrt(-1.0))
    assert cute.math.fma(2, 3, 4) == 10 and cute.math.tanh(0.5) == math.tanh(0.5)
    # an overflow is +inf, as on the device (Python's own ** and exp raise OverflowError)
    assert cute.math.exp2(5000.0) == math.inf and cute.math.exp(1000.0) == math.inf and cute.math.exp2(-5000.0) == 0
