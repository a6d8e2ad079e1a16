"""On a Hopper GPU: ``softmax`` and ``row_sum`` (examples/softmax.py) against torch in double precision, for row
lengths that are not multiples of a vector or of the CTA (the predicated end of a row), into poisoned outputs
whose guard rows must stay untouched. The PTX (128-bit accesses, warp butterflies) is checked and assembled
first, everywhere."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.compiler import DeviceArraySpec  # noqa: E402
from examples import row_sum, softmax  # noqa: E402
from _tma_copy_check import hopper_torch, torch_dtype  # noqa: E402

pytestmark = pytest.mark.gpu
SHAPES = [(1, 1), (3, 77), (17, 1000), (64, 4096), (5, 4095)]
# Float32 arithmetic errs by a few ulps; the output type rounds once more
TOL = {"Float32": 4e-6, "BFloat16": 2 ** -8 + 4e-6, "Float16": 2 ** -11 + 4e-6}
# and a value below the type's smallest subnormal may round to 0 or to it
TINY = {"Float32": 2.0 ** -149, "BFloat16": 2.0 ** -133, "Float16": 2.0 ** -24}


def test_softmax_ptx_moves_vectors_and_reduces_by_butterflies(assemble_ptx):
    c = cute.compile(softmax, DeviceArraySpec("Float32", (64, 4096)), DeviceArraySpec("Float32", (64, 4096)))
    assert c.ptx.count("ld.global.v4.b32") == 4 and c.ptx.count("st.global.v4.b32") == 4
    assert c.ptx.count("shfl.sync.bfly.b32") == 10 and ".local" not in c.ptx
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"


def test_rows_longer_than_the_registers_hold_are_refused():
    with pytest.raises(cute.CuteValueError, match="keeps a row in registers"):
        cute.compile(softmax, DeviceArraySpec("Float32", (2, 1 << 15)), DeviceArraySpec("Float32", (2, 1 << 15)))


@pytest.mark.parametrize("dtype", ["Float32", "BFloat16", "Float16"])
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_matches_torch(dtype, shape):
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n = shape
    g = torch.Generator(device="cuda").manual_seed(m * 7919 + n)
    x = (torch.randn(shape, generator=g, device="cuda") * 4).to(t)
    buf = torch.full((m + 2, n), float("nan"), dtype=t, device="cuda")
    softmax(x, buf[1:m + 1])
    torch.cuda.synchronize()
    assert torch.isnan(buf[0]).all() and torch.isnan(buf[m + 1]).all()
    exact = torch.softmax(x.double(), dim=1)
    err = (buf[1:m + 1].double() - exact).abs() - TOL[dtype] * exact - TINY[dtype]
    assert float(err.max()) <= 0, float(err.max())


@pytest.mark.parametrize("dtype", ["Float32", "BFloat16"])
@pytest.mark.parametrize("shape", SHAPES)
def test_row_sum_matches_torch(dtype, shape):
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n = shape
    x = torch.rand(shape, device="cuda").to(t)
    buf = torch.full((m + 2,), float("nan"), dtype=torch.float32, device="cuda")
    row_sum(x, buf[1:m + 1])
    torch.cuda.synchronize()
    assert torch.isnan(buf[0]) and torch.isnan(buf[m + 1])
    exact = x.double().sum(dim=1)
    err = (buf[1:m + 1].double() - exact).abs()
    assert float(err.max()) <= 1e-6 * n, float(err.max())
