"""On a Hopper GPU: ``cute.recast_tensor`` of register fragments (``cute_py.compiler.lang.register_view``). A
fragment seen as wider elements packs the elements each spans, the first in the lowest bits; seen as narrower ones,
each element's bits split the same way; writes through a view change the fragment, and a view of a view sees the
same bits. Every output is compared bit for bit with torch's ``view`` of the inputs (a reinterpretation of the same
bytes, which these kernels must agree with), into buffers filled with a poison pattern first. The PTX is built and
assembled first; the launch needs a Hopper GPU and torch."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.compiler import DeviceArraySpec  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu


@cute.kernel
def recast_kernel(x16, words, rotated, f32, halves, patched, b8, i32, again):
    f = cute.make_rmem_tensor((8,), cute.BFloat16)
    for j in cute.range_constexpr(8):
        f[j] = x16[j]
    w = cute.recast_tensor(f, cute.Int32)                  # widening: two bf16 a word
    for i in cute.range_constexpr(4):
        words[i] = w[i]
    g = cute.make_rmem_tensor((8,), cute.BFloat16)
    gw = cute.recast_tensor(g, cute.Int32)                 # written through the view, read as bf16
    for i in cute.range_constexpr(4):
        gw[i] = w[(i + 1) % 4]
    for j in cute.range_constexpr(8):
        rotated[j] = g[j]
    h = cute.make_rmem_tensor((2,), cute.Float32)
    h[0] = f32[0]
    h[1] = f32[1]
    hv = cute.recast_tensor(h, cute.Uint16)                # narrowing: a Float32's halves, low first
    for j in cute.range_constexpr(4):
        halves[j] = hv[j]
    hv[1] = hv[2]                                          # h[0]'s high half becomes h[1]'s low half
    patched[0] = h[0]
    patched[1] = h[1]
    b = cute.make_rmem_tensor((8,), cute.Int8)
    for j in cute.range_constexpr(8):
        b[j] = b8[j]
    bw = cute.recast_tensor(b, cute.Int32)                 # four bytes a word
    for i in cute.range_constexpr(2):
        i32[i] = bw[i]
    back = cute.recast_tensor(cute.recast_tensor(f, cute.Int32), cute.Uint16)  # a view of a view: f's bits
    for j in cute.range_constexpr(8):
        again[j] = back[j]


@cute.jit
def recast_host(x16, words, rotated, f32, halves, patched, b8, i32, again):
    recast_kernel(x16, words, rotated, f32, halves, patched, b8, i32, again).launch(grid=1, block=32)


SPECS = [("BFloat16", 8), ("Int32", 4), ("BFloat16", 8), ("Float32", 2), ("Uint16", 4), ("Float32", 2),
         ("Int8", 8), ("Int32", 2), ("Uint16", 8)]


def test_register_fragments_recast_bit_for_bit():
    c = cute.compile(recast_host, *[DeviceArraySpec(d, (n,)) for d, n in SPECS])
    assert ".local" not in c.ptx
    torch = hopper_torch()
    g = torch.Generator(device="cuda").manual_seed(3)
    x16 = torch.randn(8, generator=g, device="cuda").to(torch.bfloat16)
    f32 = torch.tensor([-1.7e-3, 3.25e4], device="cuda")
    b8 = torch.tensor([-128, -1, 0, 1, 127, 42, -77, 5], dtype=torch.int8, device="cuda")
    outs = {}
    for name, (dtype, n) in zip(("words", "rotated", "halves", "patched", "i32", "again"),
                                (SPECS[1], SPECS[2], SPECS[4], SPECS[5], SPECS[7], SPECS[8])):
        t = {"Int32": torch.int32, "BFloat16": torch.bfloat16, "Uint16": torch.uint16, "Float32": torch.float32}[dtype]
        outs[name] = _poisoned(torch, n, t)
    c(x16, outs["words"], outs["rotated"], f32, outs["halves"], outs["patched"], b8, outs["i32"], outs["again"])
    torch.cuda.synchronize()
    u16 = x16.view(torch.int16)
    assert torch.equal(outs["words"], x16.view(torch.int32))
    assert torch.equal(outs["rotated"].view(torch.int16), torch.roll(u16, -2))
    assert torch.equal(outs["halves"].view(torch.int16), f32.view(torch.int16))
    f16 = f32.view(torch.int16).clone()
    f16[1] = f16[2]
    assert torch.equal(outs["patched"].view(torch.int32), f16.view(torch.int32))
    assert torch.equal(outs["i32"], b8.view(torch.int32))
    assert torch.equal(outs["again"].view(torch.int16), u16)


def _poisoned(torch, n, dtype):
    return torch.full((n * dtype.itemsize,), 0xA5, dtype=torch.uint8, device="cuda").view(dtype)
