"""On a Hopper GPU: the elementwise examples compute, for lengths that are not multiples of a vector or a block,
into poisoned buffers whose guard elements on both sides must stay untouched. ``elementwise_add`` equals
torch's ``a + b`` bit for bit (one IEEE rounding in the element type); ``fused_silu_add`` is within one BFloat16 ulp of
the exact value (double precision) plus the Float32 rounding of its terms (its Float32 arithmetic, exp included,
errs by a few Float32 ulps of ``silu(x) * scale`` and ``y``, which a cancelling sum shows at BFloat16's scale). The
PTX (128-bit vector accesses, the scalar tail) is checked and assembled first, everywhere."""

import re

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.atom import CopyUniversalOp  # noqa: E402
from cute_py.compiler import DeviceArraySpec  # noqa: E402
from examples import elementwise_add, fused_silu_add  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu
GUARD = 64
LENGTHS = [1, 7, 1000, 4099, (1 << 20) + 3]


@pytest.mark.parametrize("dtype", ["Float32", "BFloat16", "Float16"])
def test_elementwise_add_moves_128_bit_vectors_and_finishes_the_tail_by_elements(dtype, assemble_ptx):
    c = cute.compile(elementwise_add, *[DeviceArraySpec(dtype, (4099,))] * 3)
    assert c.ptx.count("ld.global.v4.b32") == 2 and c.ptx.count("st.global.v4.b32") == 1
    assert "bra" in c.ptx  # the predicated tail
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"


def _guarded(torch, n, dtype, poison):
    buf = torch.full((n + 2 * GUARD,), poison, dtype=dtype, device="cuda")
    return buf, buf[GUARD:GUARD + n]


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_elementwise_add_equals_torch_and_touches_nothing_else(dtype, n):
    torch = hopper_torch()
    t = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(n)
    a = torch.randn(n, generator=gen, device="cuda").to(t)
    b = (torch.randn(n, generator=gen, device="cuda") * 100).to(t)
    buf, c = _guarded(torch, n, t, -7.0)
    elementwise_add(a, b, c)
    torch.cuda.synchronize()
    assert torch.equal(c.view(torch.int16 if t != torch.float32 else torch.int32),
                       (a + b).view(torch.int16 if t != torch.float32 else torch.int32))
    assert (buf[:GUARD] == -7.0).all() and (buf[GUARD + n:] == -7.0).all()


@pytest.mark.parametrize("n", LENGTHS)
def test_fused_silu_add_is_within_its_error_bound(n, assemble_ptx):
    c = cute.compile(fused_silu_add, *[DeviceArraySpec("BFloat16", (n,))] * 3, 0.5)
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    gen = torch.Generator(device="cuda").manual_seed(n + 1)
    x = (torch.randn(n, generator=gen, device="cuda") * 4).to(torch.bfloat16)
    y = torch.randn(n, generator=gen, device="cuda").to(torch.bfloat16)
    buf, out = _guarded(torch, n, torch.bfloat16, 3.0)
    fused_silu_add(x, y, out, 0.5)
    torch.cuda.synchronize()
    xd, yd = x.double(), y.double()
    term = xd / (1.0 + torch.exp(-xd)) * 0.5
    exact = term + yd
    ulp = (exact.to(torch.bfloat16).double().abs() * 2.0 ** -7).clamp(min=2.0 ** -133)  # one bf16 ulp, or more
    bound = ulp + 2.0 ** -20 * (term.abs() + yd.abs())
    err = (out.double() - exact).abs()
    assert bool((err <= bound).all()), (f"{int((err > bound).sum())} elements beyond the bound, worst "
                                        f"{float((err / bound).max())}")
    assert (buf[:GUARD] == 3.0).all() and (buf[GUARD + n:] == 3.0).all()


@cute.kernel
def printing_kernel(x):
    i, _, _ = cute.arch.thread_idx()
    with cute.compiler.if_(i < 3):
        cute.printf("thread {}: x = {}, pair = {}, {} 100%", i, x[i], (i * 2, x[i] > 1.0), x.shape)


@cute.jit
def printing(x):
    printing_kernel(x).launch(grid=1, block=32)


def test_printf_prints_run_time_values_from_the_device(capfd, assemble_ptx):
    assert assemble_ptx(cute.compile(printing, DeviceArraySpec("Float32", (32,))).ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    x = torch.tensor([0.5, 1.25, -3.0] + [0.0] * 29, device="cuda")
    capfd.readouterr()
    printing(x)
    torch.cuda.synchronize()
    lines = sorted(capfd.readouterr().out.splitlines())
    assert lines == ["thread 0: x = 0.5, pair = (0, 0), 32 100%", "thread 1: x = 1.25, pair = (2, 1), 32 100%",
                     "thread 2: x = -3, pair = (4, 0), 32 100%"]


@cute.kernel
def tensor_printing_kernel(x):
    i, _, _ = cute.arch.thread_idx()
    frag = cute.make_rmem_tensor((2, 2), cute.Float32)
    for k in cute.range_constexpr(4):
        frag[k] = x[k] * 2.0
    if i == 0:
        cute.print_tensor(frag)


@cute.jit
def tensor_printing(x):
    tensor_printing_kernel(x).launch(grid=1, block=32)


def test_print_tensor_prints_a_fragment_from_the_device_in_the_dsls_text(capfd):
    torch = hopper_torch()
    x = torch.tensor([0.5, -1.25, 3.0, 0.0] + [0.0] * 28, device="cuda")
    capfd.readouterr()
    tensor_printing(x)
    torch.cuda.synchronize()
    assert capfd.readouterr().out.splitlines() == [
        "tensor(raw_ptr(?: f32, rmem) o (2,2):(1,2), data=",
        "       [[ 1.000000,  6.000000, ],",
        "        [-2.500000,  0.000000, ]])"]


@cute.kernel
def bounded_copy_kernel(src, dst, n):
    tidx, _, _ = cute.arch.thread_idx()
    atom = cute.make_copy_atom(CopyUniversalOp(), src.element_type, 128)
    tiled = cute.make_tiled_copy_tv(atom, cute.make_layout(8), cute.make_layout(4))
    thr = tiled.get_slice(tidx)
    s, d = thr.partition_S(src), thr.partition_D(dst)
    crd = thr.partition_S(cute.make_identity_tensor(src.shape))
    pred = cute.predicate(crd, (n,))
    frag = cute.make_fragment_like(s)
    cute.copy(tiled, s, frag, pred=pred)
    cute.copy(tiled, frag, d, pred=pred)


@cute.jit
def bounded_copy(src, dst, n):
    bounded_copy_kernel(src, dst, n).launch(grid=1, block=8)


@pytest.mark.parametrize("n", [30, 29, 32, 1])
def test_a_per_element_predicate_inside_a_vector_touches_only_the_elements_it_admits(n, assemble_ptx):
    # 8 threads x 4-element (128-bit) vectors over 32 elements, bound n: a vector split by the bound is copied
    # element by element, whole vectors with one access
    c = cute.compile(bounded_copy, DeviceArraySpec("Float32", (32,)), DeviceArraySpec("Float32", (32,)), n)
    stores = set(re.findall(r"llvm\.store %\w+, %\w+ \{alignment = \d+ : i64\} : ([^,]+),", c.mlir))
    assert stores == {"i32", "vector<4xi32>"}  # a whole-vector store and the element-by-element fallback
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    src = torch.arange(32, dtype=torch.float32, device="cuda") + 1
    dst = torch.full((32,), -5.0, device="cuda")
    bounded_copy(src, dst, n)
    torch.cuda.synchronize()
    want = torch.cat([src[:n], torch.full((32 - n,), -5.0, device="cuda")])
    assert torch.equal(dst, want), dst.tolist()
