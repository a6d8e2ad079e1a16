"""Pointers and run-time offsets in kernels: what a traced integer is known to be divisible by, the alignment a
pointer keeps after a run-time offset, ``Pointer.base`` on the host, the address arithmetic of run-time offsets
(32-bit in shared memory, 64-bit in global memory) and pointers without a known base."""

import math
import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.core.leaves import DynamicInt
from cute_py.compiler import TraceError
from cute_py.tensor.pointer import AddressSpace, Pointer
from cute_py.tensor.tensor import Tensor, recast_tensor
from _trace_checks import assert_trace_error, count_matches, kernel_body, ptx_body

F = cute.compiler.DeviceArraySpec


# -- TracedInt.known_divisor ---------------------------------------------------------------------------------

# (text, expression of (tid, bx, n) with n a signed Int32 parameter, the divisor it is known to have)
DIVISOR_CASES = [
    ("t * 8 + 16", lambda t, b, n: t * 8 + 16, 8),
    ("t * 12", lambda t, b, n: t * 12, 12),
    ("(t * 8) ^ 4", lambda t, b, n: (t * 8) ^ 4, 4),
    ("(t * 16) >> 2", lambda t, b, n: (t * 16) >> 2, 4),
    ("select(t < 3, t * 8, t * 12)", lambda t, b, n: cute.compiler.select(t < 3, t * 8, t * 12), 4),
    ("select(t < 3, t * 8, 0)", lambda t, b, n: cute.compiler.select(t < 3, t * 8, 0), 8),
    ("t * 8 // 4", lambda t, b, n: t * 8 // 4, 2),
    ("t * 8 // 16", lambda t, b, n: t * 8 // 16, 1),
    ("(t * 3) << 2", lambda t, b, n: (t * 3) << 2, 12),
    ("(t * 8) | 4", lambda t, b, n: (t * 8) | 4, 4),
    ("(t * 8) & 0xFF0", lambda t, b, n: (t * 8) & 0xFF0, 16),
    ("16 - t * 8", lambda t, b, n: 16 - t * 8, 8),
    ("t * 8 - 4", lambda t, b, n: t * 8 - 4, 4),
    ("(t * 4) * (b * 2)", lambda t, b, n: (t * 4) * (b * 2), 8),
    ("b * 128 + 64", lambda t, b, n: b * 128 + 64, 64),
    ("t * 16 + b * 32", lambda t, b, n: t * 16 + b * 32, 16),
    ("(t * 6) * 2", lambda t, b, n: (t * 6) * 2, 12),
    ("t", lambda t, b, n: t, 1),
    ("t * 1 + 0", lambda t, b, n: t * 1 + 0, 1),
    ("n * 32", lambda t, b, n: n * 32, 32),
    ("(n * 16) >> 2", lambda t, b, n: (n * 16) >> 2, 4),
    ("n * -8", lambda t, b, n: n * -8, 8),
    ("t * 8 + n * 4", lambda t, b, n: t * 8 + n * 4, 4),
    ("(t * 12) // 4", lambda t, b, n: (t * 12) // 4, 1),
]


@cute.kernel
def divisor_kernel(n, seen):
    tid, _, _ = arch.thread_idx()
    bx, _, _ = arch.block_idx()
    for text, fn, _ in DIVISOR_CASES:
        v = fn(tid, bx, n)
        seen[text] = (type(v).__name__, v.known_divisor)
    seen["int64"] = cute.Int64(tid * 16).known_divisor


def divisor_host(seen, n: cute.Int32):
    divisor_kernel(n, seen).launch(grid=4, block=64)


def _traced(tmp_path_factory, compile_with):
    """What a kernel recorded in ``seen`` while ``compile_with(seen)`` traced it, with a cache of its own."""
    seen = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUTE_PY_CACHE_DIR", str(tmp_path_factory.mktemp("traced_cache")))
        compile_with(seen)
    return seen


@pytest.fixture(scope="module")
def divisors(tmp_path_factory):
    return _traced(tmp_path_factory, lambda seen: cute.compile(divisor_host, seen, cute.Int32(1)))


@pytest.mark.parametrize("text,fn,expect", DIVISOR_CASES, ids=[c[0] for c in DIVISOR_CASES])
def test_known_divisor_of_traced_arithmetic(divisors, text, fn, expect):
    kind, got = divisors[text]
    assert kind == "TracedInt"
    assert got == expect
    # and it is true: every value the expression takes is divisible by it
    for t in range(0, 64):
        for b in range(0, 4):
            for n in range(-9, 10):
                assert fn(t, b, n) % got == 0, (t, b, n)


def test_widening_to_64_bits_keeps_the_known_divisor(divisors):
    assert divisors["int64"] == 16


# -- the alignment a pointer keeps across run-time offsets -----------------------------------------------------


@cute.kernel
def alignment_kernel(g, seen):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    smem.allocate(64, 128)
    f32 = smem.allocate_tensor(cute.Float32, cute.Layout(64), alignment=128).engine
    f64 = smem.allocate_tensor(cute.Float64, cute.Layout(64), alignment=128).engine
    h16 = smem.allocate_tensor(cute.BFloat16, cute.Layout(64), alignment=128).engine
    u8 = smem.allocate(256, 128)
    seen["f32 base"] = f32.address
    seen["f32 + t*4"] = f32 + tid * 4
    seen["f32 + t*2"] = f32 + tid * 2
    seen["f32 + t"] = f32 + tid
    seen["f32 + t*64"] = f32 + tid * 64
    seen["f32 + t*64, + 1"] = (f32 + tid * 64) + 1
    seen["f32 + 2, + t*64"] = (f32 + 2) + tid * 64
    seen["f32 + (t*8 + 4)"] = f32 + (tid * 8 + 4)
    seen["f64 + t"] = f64 + tid
    seen["f64 + t*2"] = f64 + tid * 2
    seen["h16 + t*3"] = h16 + tid * 3
    seen["h16 + t*4"] = h16 + tid * 4
    seen["u8 + t*3"] = u8 + tid * 3
    seen["u8 + t*6"] = u8 + tid * 6
    seen["u8 + t*16"] = u8 + tid * 16
    seen["g base"] = g.engine.address
    seen["g + t*16"] = g.engine + tid * 16
    seen["g + t*128"] = g.engine + tid * 128
    seen["row t of g"] = g[tid, None].engine


def alignment_host(g, seen):
    alignment_kernel(g, seen).launch(grid=1, block=32)


@pytest.fixture(scope="module")
def pointers(tmp_path_factory):
    return _traced(tmp_path_factory, lambda seen: cute.compile(alignment_host, F("Float32", (32, 6)), seen))


@pytest.mark.parametrize("name,alignment", [
    ("f32 + t*4", 16), ("f32 + t*2", 8), ("f32 + t", 4), ("f32 + t*64", 128), ("f32 + t*64, + 1", 4),
    ("f32 + 2, + t*64", 8), ("f32 + (t*8 + 4)", 16), ("f64 + t", 8), ("f64 + t*2", 16), ("h16 + t*3", 2),
    ("h16 + t*4", 8), ("u8 + t*3", 1), ("u8 + t*6", 2), ("u8 + t*16", 16),
    ("g + t*16", 64), ("g + t*128", 256),   # a DeviceArraySpec at 1 << 24: 256-byte aligned
    ("row t of g", 8),                      # rows of 6 floats: 24 bytes
])
def test_pointer_alignment_after_a_run_time_offset(pointers, name, alignment):
    p = pointers[name]
    assert p.alignment == alignment
    assert p.address is None


def test_a_run_time_offset_keeps_the_base_address(pointers):
    assert pointers["f32 base"] == 128                 # after the 64 bytes allocated first, 128-byte aligned
    assert pointers["g base"] == 1 << 40               # the tagged address of tensor argument 0
    for name in ("f32 + t*4", "f32 + t*64, + 1", "f32 + (t*8 + 4)"):
        assert pointers[name].base == pointers["f32 base"]
    assert pointers["f32 + 2, + t*64"].base == pointers["f32 base"]
    assert pointers["g + t*16"].base == pointers["g base"] and pointers["row t of g"].base == pointers["g base"]
    assert pointers["f32 + t*64, + 1"].memspace is AddressSpace.smem
    assert pointers["g + t*16"].memspace is AddressSpace.gmem


# -- Pointer.base on the host ------------------------------------------------------------------------------------


class _Runtime(DynamicInt):
    """A stand-in for a run-time element offset: only what divides it is known."""

    def __init__(self, known_divisor):
        self.known_divisor = known_divisor

    def __add__(self, o):
        if type(o) is int:
            return _Runtime(math.gcd(self.known_divisor, o) if o else self.known_divisor)
        return _Runtime(math.gcd(self.known_divisor, o.known_divisor))

    __radd__ = __add__


def test_pointer_base_is_the_address_at_offset_zero():
    p = Pointer("Float32", AddressSpace.smem, 128, 256)
    assert p.base == 256 and p.offset == 0
    q = p + 3
    assert (q.address, q.base, q.offset, q.alignment) == (268, 256, 3, 4)
    r = q + 5
    assert (r.address, r.base, r.offset, r.alignment) == (288, 256, 8, 4)
    assert (p + 0) is p
    # a pointer made at an offset: the base is computed back from the address
    s = Pointer("Float32", AddressSpace.gmem, 16, 1024, offset=4)
    assert s.base == 1008
    # a pointer with no address has no base, and its offsets keep none
    f = Pointer("Float32", AddressSpace.smem, 16)
    assert f.base is None and (f + 4).base is None


def test_pointer_base_survives_a_run_time_offset():
    p = Pointer("Float32", AddressSpace.smem, 128, 256)
    q = p + _Runtime(8)
    assert q.address is None and q.base == 256 and q.alignment == 32
    r = q + 3
    assert r.address is None and r.base == 256 and r.alignment == 4 and r.offset.known_divisor == 1
    assert (p + _Runtime(1)).alignment == 4 and (p + _Runtime(64)).alignment == 128


def test_recasting_keeps_the_base():
    p = Pointer("Float32", AddressSpace.smem, 128, 256) + 4
    for dtype, offset in (("Float16", 8), ("Uint8", 16), ("Float64", 2)):
        e = recast_tensor(Tensor(p, cute.Layout(8)), dtype).engine
        assert (e.dtype.name, e.address, e.offset, e.base) == (dtype, 272, offset, 256)


# -- the address of a run-time offset: 32-bit in shared memory, 64-bit in global memory --------------------------


@cute.kernel
def offset_kernel(g, n, case):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(cute.Float32, cute.Layout(64), alignment=128)
    if case == "smem":
        s[n] = 3.0
    elif case == "gmem":
        g[n] = 3.0
    elif case == "gmem_tid":
        g[tid] = 3.0
    elif case == "smem_tid":
        s[tid + 8] = 3.0


@cute.jit
def offset(g, case, n=0):
    offset_kernel(g, n, case).launch(grid=1, block=32)


def test_shared_memory_run_time_offsets_are_32_bit(filecheck):
    c = cute.compile(offset, F("Float32", (64,)), "smem", cute.Int32(5))
    body = kernel_body(c.mlir)
    assert count_matches(body, r"llvm\.getelementptr %\w+\[%\w+\] : \(!llvm\.ptr<3>, i32\) -> !llvm\.ptr<3>, i8") == 1
    assert "arith.extsi" not in body and "arith.extui" not in body and not re.search(r"arith\.\w+ .*: i64", body)
    # the byte offset 4 n (the tile is the first allocation) is computed in 32 bits, then sign-extended
    filecheck(ptx_body(c.ptx), [
        "CHECK: ld.param.b32 [[N:%r[0-9]+]], [{{.*}}_param_1];",
        "CHECK: shl.b32 [[B:%r[0-9]+]], [[N]], 2;",
        "CHECK: cvt.s64.s32 %rd{{[0-9]+}}, [[B]];",
        "CHECK: st.shared.b32 [%rd{{[0-9]+}}], 1077936128;",
    ])


def test_global_memory_run_time_offsets_are_64_bit(filecheck):
    c = cute.compile(offset, F("Float32", (64,)), "gmem", cute.Int32(5))
    body = kernel_body(c.mlir)
    assert count_matches(body, r"arith\.extsi %arg1 : i32 to i64") == 1      # the signed Int32 element offset
    assert count_matches(body, r"arith\.muli %\w+, %\w+ : i64") == 1           # times 4 bytes, in 64 bits
    assert count_matches(body, r"llvm\.getelementptr %arg0\[%\w+\] : \(!llvm\.ptr<1>, i64\) -> !llvm\.ptr<1>, i8") == 1
    filecheck(ptx_body(c.ptx), [
        "CHECK: ld.param.b32 [[N:%r[0-9]+]], [{{.*}}_param_1];",
        "CHECK: mul.wide.s32 [[O:%rd[0-9]+]], [[N]], 4;",
        "CHECK: st.global.b32 [%rd{{[0-9]+}}], 1077936128;",
    ])


def test_a_thread_index_offset_is_widened_unsigned():
    c = cute.compile(offset, F("Float32", (64,)), "gmem_tid")
    assert count_matches(kernel_body(c.mlir), r"arith\.extui %\w+ : i32 to i64") == 1
    assert count_matches(c.ptx, r"mul\.wide\.u32\s+%rd\d+, %r\d+, 4;") == 1


def test_a_shared_memory_offset_adds_the_static_part_in_32_bits():
    c = cute.compile(offset, F("Float32", (64,)), "smem_tid")
    body = kernel_body(c.mlir)
    assert count_matches(body, r"llvm\.getelementptr %\w+\[%\w+\] : \(!llvm\.ptr<3>, i32\) -> !llvm\.ptr<3>, i8") == 1
    assert "arith.extui" not in body and "arith.extsi" not in body
    assert count_matches(c.ptx, r"st\.shared\.b32 \t\[%rd\d+\+32\], 1077936128;") == 1   # element 8: 32 bytes


@cute.kernel
def no_base_kernel(case):
    tid, _, _ = arch.thread_idx()
    if case == "smem":
        fake = cute.make_tensor(cute.make_ptr(cute.Float32, None, AddressSpace.smem, 16), cute.Layout(32))
        fake[tid] = 1.0
    else:
        other = cute.make_tensor(cute.make_ptr(cute.Float32, 4096, AddressSpace.gmem, 16), cute.Layout(32))
        other[tid] = 1.0


@cute.jit
def no_base(case):
    no_base_kernel(case).launch(grid=1, block=32)


def test_a_pointer_without_a_known_base_is_rejected():
    with pytest.raises(TraceError) as e:
        cute.compile(no_base, "smem")
    assert_trace_error(e, no_base_kernel, "fake[tid] = 1.0", "has no known base address")
    with pytest.raises(TraceError) as e:
        cute.compile(no_base, "gmem")
    assert_trace_error(e, no_base_kernel, "other[tid] = 1.0", "does not come from a tensor argument of this kernel")
