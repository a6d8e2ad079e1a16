"""Loads and stores in kernels: tensor elements in shared and global memory (swizzled or not), what a store
accepts, register fragments, what a traced integer is known to be divisible by, the alignment a pointer
keeps after a run-time offset, and the address arithmetic of run-time offsets."""

import inspect
import math
import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.core.int_tuple import DynamicInt
from cute_py.compiler import TraceError
from cute_py.tensor.pointer import AddressSpace, Pointer
from cute_py.tensor.tensor import Tensor, recast_tensor
from _trace_checks import assert_trace_error, kernel_line

F = cute.compiler.DeviceArraySpec


def _count(text, pattern):
    return len(re.findall(pattern, text))


def _body(mlir):
    return re.split(r"attributes \{nvvm\.kernel[^}]*\}", mlir, maxsplit=1)[1]


def _ptx_body(ptx):
    return ptx.split(".entry", 1)[1]


# -- element loads and stores of shared-memory tiles ------------------------------------------------------


@cute.kernel
def transpose_kernel(dtype, n, swizzle):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    layout = cute.Layout((n, n), (n, 1))
    if swizzle is not None:
        layout = cute.make_composed_layout(swizzle, 0, layout)
    sA = smem.allocate_tensor(dtype, layout)
    sB = smem.allocate_tensor(dtype, cute.Layout((n, n), (n, 1)))
    r = tid // n
    c = tid % n
    sB[c, r] = sA[r, c]


@cute.jit
def transpose(dtype, n=8, swizzle=None):
    transpose_kernel(dtype, n, swizzle).launch(grid=1, block=n * n)


# (dtype, PTX type of one element, its register class). sA is 8 x 8 elements at offset 0; sB follows it at the
# next 128-byte boundary: 256 B (fp32), 128 B (16-bit: 128 B tile), 128 B (8-bit: 64 B tile), 512 B (fp64).
ELEMENT_CASES = [
    ("Float32", "b32", "%r", 256),
    ("Int32", "b32", "%r", 256),
    ("BFloat16", "b16", "%rs", 128),
    ("Float16", "b16", "%rs", 128),
    ("Int8", "b8", "%rs", 128),
    ("Uint8", "b8", "%rs", 128),
    ("Float64", "b64", "%rd", 512),
]


@pytest.mark.parametrize("dtype,ptx_type,reg,sb_offset", ELEMENT_CASES)
def test_element_transpose_loads_and_stores_one_element(filecheck, dtype, ptx_type, reg, sb_offset):
    c = cute.compile(transpose, getattr(cute, dtype))
    ptx = _ptx_body(c.ptx)
    filecheck(ptx, [
        f"CHECK: ld.shared.{ptx_type} [[V:{reg}[0-9]+]], [%rd{{{{[0-9]+}}}}];",
        f"CHECK: st.shared.{ptx_type} [%rd{{{{[0-9]+}}}}+{sb_offset}], [[V]];",
    ])
    assert _count(ptx, r"ld\.shared\.") == 1 and _count(ptx, r"st\.shared\.") == 1
    assert "xor.b" not in ptx


@pytest.mark.parametrize("dtype,ptx_type,reg,sb_offset", ELEMENT_CASES)
def test_swizzled_element_addresses_include_the_xor(dtype, ptx_type, reg, sb_offset):
    c = cute.compile(transpose, getattr(cute, dtype), 8, cute.Swizzle(3, 0, 3))
    ptx = _ptx_body(c.ptx)
    # only the load from the swizzled tile is swizzled: one xor
    assert _count(ptx, r"xor\.b32\s") == 1
    assert _count(_body(c.mlir), r"arith\.xori ") == 1
    assert _count(ptx, rf"ld\.shared\.{ptx_type}\s") == 1 and _count(ptx, rf"st\.shared\.{ptx_type}\s") == 1


@cute.kernel
def swizzled_static_kernel(coords):
    smem = arch.SmemAllocator()
    sA = smem.allocate_tensor(cute.Float32, cute.make_composed_layout(cute.Swizzle(3, 0, 3), 0,
                                                                     cute.Layout((8, 8), (8, 1))))
    sB = smem.allocate_tensor(cute.Float32, cute.Layout(8))
    for i, (r, c) in enumerate(coords):
        sB[i] = sA[r, c]


@cute.jit
def swizzled_static(coords):
    swizzled_static_kernel(coords).launch(grid=1, block=1)


@pytest.mark.parametrize("coord,offset", [
    ((0, 5), 5),             # row 0: unchanged
    ((1, 0), 8 ^ 1),         # offset 8: bits 3..5 (1) xor into bits 0..2
    ((2, 3), 19 ^ 2),        # 0b010011 -> 0b010001
    ((7, 7), 63 ^ 7),        # 63 -> 56
])
def test_a_static_coordinate_of_a_swizzled_tile_is_swizzled_at_trace_time(coord, offset):
    c = cute.compile(swizzled_static, (coord,))
    ptx = _ptx_body(c.ptx)
    where = f"+{offset * 4}" if offset else ""
    assert re.search(rf"ld\.shared\.b32 \t%r\d+, \[__cute_py_dyn_smem{re.escape(where)}\];", ptx), ptx
    assert "xor" not in ptx


@cute.kernel
def gmem_element_kernel(g, case):
    tid, _, _ = arch.thread_idx()
    if case == "store":
        g[tid, 3] = 2.5
    elif case == "copy":
        g[tid, 0] = g[0, tid]


@cute.jit
def gmem_element(g, case):
    gmem_element_kernel(g, case).launch(grid=1, block=32)


def test_global_element_store_through_a_tensor_argument(filecheck):
    c = cute.compile(gmem_element, F("Float32", (32, 16)), "store")
    # element (tid, 3) of 64-byte rows: tid * 64 + 12 bytes; 2.5f = 0x40200000 = 1075838976
    filecheck(_ptx_body(c.ptx), [
        "CHECK: ld.param.b64 [[G:%rd[0-9]+]], [{{.*}}_param_0];",
        "CHECK: mov.u32 [[T:%r[0-9]+]], %tid.x;",
        "CHECK: mul.wide.u32 [[O:%rd[0-9]+]], [[T]], 64;",
        "CHECK: add.s64 [[A:%rd[0-9]+]], [[G]], [[O]];",
        "CHECK: st.global.b32 [[[A]]+12], 1075838976;",
    ])
    assert _count(c.ptx, r"st\.global\.") == 1 and "ld.global" not in c.ptx


def test_global_element_load_and_store():
    c = cute.compile(gmem_element, F("Int32", (32, 32)), "copy")
    ptx = _ptx_body(c.ptx)
    assert _count(ptx, r"ld\.global\.b32\s") == 1 and _count(ptx, r"st\.global\.b32\s") == 1
    # column tid of row 0 (4 tid bytes) and row tid (128 tid bytes): both 64-bit byte offsets
    assert _count(ptx, r"mul\.wide\.u32\s+%rd\d+, %r\d+, 4;") == 1
    assert _count(ptx, r"mul\.wide\.u32\s+%rd\d+, %r\d+, 128;") == 1


# -- what a store accepts ------------------------------------------------------------------------------


@cute.kernel
def store_kernel(dtype, value, other, case, x):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    t = smem.allocate_tensor(dtype, cute.Layout(32), alignment=128)
    o = smem.allocate_tensor(other, cute.Layout(32), alignment=128)
    if case == "const":
        t[tid] = value
    elif case == "loaded":
        t[tid] = o[tid]
    elif case == "tid":
        t[tid] = tid
    elif case == "param":
        t[tid] = x


@cute.jit
def store(dtype, value, other=cute.Float32, case="const", x=0.0):
    store_kernel(dtype, value, other, case, x).launch(grid=1, block=32)


@pytest.mark.parametrize("dtype,value,ptx", [
    ("Float32", 1.5, "st.shared.b32 \t[%rd{{[0-9]+}}], 1069547520;"),   # 0x3FC00000
    ("Float32", 2, "st.shared.b32 \t[%rd{{[0-9]+}}], 1073741824;"),     # an int becomes 2.0f = 0x40000000
    ("Float32", -0.0, "st.shared.b32 \t[%rd{{[0-9]+}}], -2147483648;"),
    ("BFloat16", 1.5, "st.shared.b16 \t[%rd{{[0-9]+}}], 0x3FC0;"),
    ("Float16", -2.0, "st.shared.b16 \t[%rd{{[0-9]+}}], 0xC000;"),
    ("Float64", 1.5, "st.shared.b64 \t[%rd{{[0-9]+}}], 4609434218613702656;"),   # 0x3FF8000000000000
    ("Int8", 5, "st.shared.b8 \t[%rd{{[0-9]+}}], 5;"),
    ("Int8", -1, "st.shared.b8 \t[%rd{{[0-9]+}}], 255;"),
    ("Int32", True, "st.shared.b32 \t[%rd{{[0-9]+}}], 1;"),
    ("Int64", 1 << 40, "st.shared.b64 \t[%rd{{[0-9]+}}], 1099511627776;"),
])
def test_python_constants_are_stored_as_the_element_type(filecheck, dtype, value, ptx):
    c = cute.compile(store, getattr(cute, dtype), value)
    filecheck(_ptx_body(c.ptx), [f"CHECK: {ptx}"])
    assert _count(c.ptx, r"st\.shared\.") == 1


@pytest.mark.parametrize("dtype,case,other,mlir,ptx", [
    # a traced i32 is truncated into an 8-bit element and zero-extended (tid >= 0) into a 64-bit one
    ("Int8", "tid", "Float32", r"arith\.trunci %\w+ : i32 to i8", r"st\.shared\.b8\s"),
    ("Int64", "tid", "Float32", r"arith\.extui %\w+ : i32 to i64", r"st\.shared\.b64\s"),
    # a loaded Int8 is sign-extended, a loaded Uint8 zero-extended
    ("Int32", "loaded", "Int8", r"arith\.extsi %\w+ : i8 to i32", r"ld\.shared\.s8\s"),
    ("Int32", "loaded", "Uint8", r"arith\.extui %\w+ : i8 to i32", r"ld\.shared\.b8\s"),
    # floats of the same type, loaded or a Float32 parameter
    ("Float32", "loaded", "Float32", r"llvm\.store %\w+, %\w+ {alignment = 4 : i64} : f32, !llvm\.ptr<3>",
     r"st\.shared\.b32\s"),
    ("Float32", "param", "Float32", r"llvm\.store %arg0, %\w+ {alignment = 4 : i64} : f32, !llvm\.ptr<3>",
     r"st\.shared\.b32\s"),
])
def test_traced_values_are_converted_between_integer_widths(dtype, case, other, mlir, ptx):
    c = cute.compile(store, getattr(cute, dtype), 0, getattr(cute, other), case, cute.Float32(1.25))
    assert _count(_body(c.mlir), mlir) == 1
    assert _count(c.ptx, ptx) == 1


@pytest.mark.parametrize("dtype,value,other,case,fragment", [
    ("Int32", 1.5, "Float32", "const", "tensor store: a Int32 element takes an integer value, got 1.5"),
    ("Float32", True, "Float32", "const", "tensor store: a Float32 element takes a float value, got True"),
    ("Float32", 0, "Float32", "tid", "tensor store: the Int32 value cannot be stored as Float32 (convert it first: "
                                     "x.to(cute.Float32))"),
    ("Float32", 0, "Int32", "loaded", "tensor store: the Int32 value cannot be stored as Float32"),
    ("Int32", 0, "Float32", "loaded", "tensor store: the Float32 value cannot be stored as Int32"),
    ("BFloat16", 0, "Float32", "loaded", "tensor store: the Float32 value cannot be stored as BFloat16 (convert it "
                                         "first: x.to(cute.BFloat16))"),
    ("Float64", 0, "Float32", "param", "tensor store: the Float32 value cannot be stored as Float64"),
    ("Float16", 0, "BFloat16", "loaded", "tensor store: the BFloat16 value cannot be stored as Float16"),
    ("Boolean", 2, "Float32", "const", "tensor store: a Boolean element takes a bool, got 2"),
])
def test_stores_that_need_a_conversion_are_rejected(dtype, value, other, case, fragment):
    with pytest.raises(TraceError) as e:
        cute.compile(store, getattr(cute, dtype), value, getattr(cute, other), case, cute.Float32(1.25))
    text = {"const": "t[tid] = value", "tid": "t[tid] = tid", "loaded": "t[tid] = o[tid]", "param": "t[tid] = x"}
    assert_trace_error(e, store_kernel, text[case], fragment)


# -- register fragments ------------------------------------------------------------------------------------


@cute.kernel
def fragment_kernel(g, case):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(g.element_type, cute.Layout((32, 8), (8, 1)))
    row = s[tid, None]
    if case == "static":
        frag = cute.make_fragment(cute.Layout(8), g.element_type)
        for i in range(8):
            frag[i] = row[i]
        for i in range(8):
            g[tid, i] = frag[7 - i]
    elif case == "copy":
        frag = cute.compiler.make_fragment_like(row)
        cute.copy(row, frag)
        cute.copy(frag, g[tid, None])
    elif case == "traced_index":
        frag = cute.make_fragment(cute.Layout(8), g.element_type)
        g[tid, 0] = frag[tid % 8]
    elif case == "zeros":
        frag = cute.make_fragment(cute.Layout(8), g.element_type)
        frag[2] = row[2]
        cute.copy(frag, g[tid, None])


@cute.jit
def fragment(g, case):
    fragment_kernel(g, case).launch(grid=1, block=32)


def _no_local_memory(ptx):
    assert "ld.local" not in ptx and "st.local" not in ptx and ".local" not in ptx


def test_fragment_elements_live_in_registers_and_are_indexed_statically():
    c = cute.compile(fragment, F("Float32", (32, 8)), "static")
    _no_local_memory(c.ptx)
    body = _body(c.mlir)
    loads = re.findall(r"(%\w+) = llvm\.load %\w+ {alignment = 4 : i64} : !llvm\.ptr<3> -> i32", body)
    casts = dict(re.findall(r"(%\w+) = llvm\.bitcast (%\w+) : i32 to f32", body))
    stores = re.findall(r"llvm\.store (%\w+), %\w+ {alignment = 4 : i64} : f32, !llvm\.ptr<1>", body)
    assert len(loads) == 8 and len(stores) == 8
    # g[tid, i] receives the value loaded from row[7 - i]
    assert [casts[s] for s in stores] == loads[::-1]
    assert _count(c.ptx, r"st\.global\.b32\s") == 8


def test_copy_from_shared_memory_through_a_fragment_to_global_memory():
    c = cute.compile(fragment, F("Float32", (32, 8)), "copy")
    _no_local_memory(c.ptx)
    body = _body(c.mlir)
    assert _count(body, r"llvm\.load %\w+ {alignment = \d+ : i64} : !llvm\.ptr<3>") >= 1
    assert _count(body, r"llvm\.store %\w+, %\w+ {alignment = \d+ : i64} : [\w<>]+, !llvm\.ptr<1>") >= 1
    # every one of the row's 8 floats (32 bytes) is loaded and stored once
    ld = sum(int(b) for b in re.findall(r"llvm\.load %\w+ {alignment = (\d+) : i64} : !llvm\.ptr<3>", body))
    st = sum(int(b) for b in re.findall(r"llvm\.store %\w+, %\w+ {alignment = (\d+) : i64} : [\w<>]+, !llvm\.ptr<1>",
                                        body))
    assert ld == 32 and st == 32
    assert "ld.shared" in c.ptx and "st.global" in c.ptx


def test_copy_from_a_fragment_to_global_memory_is_vectorised():
    # row tid of a (32, 8) fp32 array: 32-byte aligned, 8 contiguous floats: two 16-byte stores
    c = cute.compile(fragment, F("Float32", (32, 8)), "copy")
    assert _count(c.ptx, r"st\.global\.v4\.b32\s") == 2
    assert _count(c.ptx, r"st\.global\.") == 2


def test_a_fragment_starts_as_zeros():
    c = cute.compile(fragment, F("Int32", (32, 8)), "zeros")
    _no_local_memory(c.ptx)
    # element 2 was loaded; the 7 others are the constant 0: two 16-byte stores of the row
    stores = re.findall(r"st\.global\.v4\.b32 \t\[%rd\d+(\+\d+)?\], \{([^}]*)\};", c.ptx)
    assert [(off, [x.strip() for x in vals.split(",")]) for off, vals in stores] == [
        ("", ["0", "0", stores[0][1].split(",")[2].strip(), "0"]), ("+16", ["0", "0", "0", "0"])]
    assert re.fullmatch(r"%r\d+", stores[0][1].split(",")[2].strip())
    assert _count(c.ptx, r"st\.global\.") == 2


def test_a_traced_index_into_a_fragment_is_rejected():
    with pytest.raises(TraceError) as e:
        cute.compile(fragment, F("Float32", (32, 8)), "traced_index")
    assert_trace_error(e, fragment_kernel, "frag[tid % 8]", "a register fragment is indexed with static coordinates")


@cute.kernel
def fragment_like_kernel(g, tc, seen):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(g.element_type, cute.Layout((16, 32), (32, 1)))
    part = tc.get_slice(tid).partition_S(s)
    frag = cute.compiler.make_fragment_like(part)
    seen["part"] = part.layout
    seen["frag"] = frag.layout
    seen["dtype"] = frag.element_type
    seen["bf16"] = cute.compiler.make_fragment_like(part, cute.BFloat16).element_type
    seen["of_layout"] = cute.compiler.make_fragment_like(cute.Layout((2, 3), (3, 1)), cute.Int8).layout
    swz = smem.allocate_tensor(g.element_type, cute.make_composed_layout(cute.Swizzle(2, 0, 3), 0,
                                                                        cute.Layout((4, 8), (8, 1))))
    seen["swizzled"] = cute.compiler.make_fragment_like(swz).layout
    seen["of_layout_shape"] = cute.compiler.make_fragment_like(cute.Layout((4, 8, 2), (8, 1, 32)), cute.Int8).layout.shape
    try:
        cute.compiler.make_fragment_like(cute.Layout(4))
    except cute.CuteValueError as e:
        seen["error"] = str(e)


def fragment_like_host(g, seen):
    tc = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.CopyUniversalOp(), g.element_type, 128),
                                 cute.Layout((8, 4), (4, 1)), cute.Layout((1, 4)))
    fragment_like_kernel(g, tc, seen).launch(grid=1, block=32)


def test_make_fragment_like_is_compact_in_the_partitions_stride_order():
    seen = {}
    cute.compile(fragment_like_host, F("Float32", (16, 32)), seen)
    part, frag = seen["part"], seen["frag"]
    # the thread's partition of the (16, 32) row-major tile: a 4-float vector, then 2 x 2 copies of it, 8 rows
    # and 16 columns apart
    assert cute.product_each(part.shape) == (4, 2, 2)
    assert [part(((v, 0), 0, 0)) for v in range(4)] == [0, 1, 2, 3]
    assert part(((0, 0), 1, 0)) == 8 * 32 and part(((0, 0), 0, 1)) == 16
    # the fragment: the vector first, then the column mode (smaller stride), then the row mode
    assert cute.product_each(frag.shape) == (4, 2, 2)
    assert [[[frag(((v, 0), m, n)) for n in range(2)] for m in range(2)] for v in range(4)] == \
        [[[v + 4 * n + 8 * m for n in range(2)] for m in range(2)] for v in range(4)]
    assert seen["dtype"] == cute.Float32 and seen["bf16"] == cute.BFloat16
    assert seen["of_layout"](1, 0) == 1 and seen["of_layout"](0, 1) == 2   # column-major, compact
    # of a swizzled tile: its outer (4, 8) row-major layout, compact and column-major
    assert cute.size(seen["swizzled"]) == 32
    assert [[seen["swizzled"]((i, j)) for j in range(8)] for i in range(4)] == \
        [[i + 4 * j for j in range(8)] for i in range(4)]
    assert "needs a dtype" in seen["error"]
    assert seen["of_layout_shape"] == (4, 8, 2)


def test_make_fragment_like_of_a_rank_2_tile_follows_cute():
    # CuTe builds it as tiled_product(mode 0, make_ordered_layout(take<1,R>(shape), ...)): the modes after the
    # first stay a tuple, as in CuTe's tiled_product('(8,2):(1,24)', '(5):(0)') -> '((8,2),(5)):((1,24),(0))'
    # (tests/cute/golden/algebra/product.json); coordinates (i, j) address it like (4, 8)
    seen = {}
    cute.compile(fragment_like_host, F("Float32", (16, 32)), seen)
    assert seen["swizzled"].shape == (4, (8,)) and seen["swizzled"].stride == (1, (4,))
    assert seen["of_layout"].shape == (2, (3,))
    assert [seen["swizzled"]((i, j)) for i in range(4) for j in range(8)] == [i + 4 * j for i in range(4)
                                                                               for j in range(8)]


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


@pytest.fixture(scope="module")
def divisors(tmp_path_factory):
    seen = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUTE_PY_CACHE_DIR", str(tmp_path_factory.mktemp("divisor_cache")))
        cute.compile(divisor_host, seen, cute.Int32(1))
    return seen


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
    seen = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUTE_PY_CACHE_DIR", str(tmp_path_factory.mktemp("pointer_cache")))
        cute.compile(alignment_host, F("Float32", (32, 6)), seen)
    return seen


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
    body = _body(c.mlir)
    assert _count(body, r"llvm\.getelementptr %\w+\[%\w+\] : \(!llvm\.ptr<3>, i32\) -> !llvm\.ptr<3>, i8") == 1
    assert "arith.extsi" not in body and "arith.extui" not in body and not re.search(r"arith\.\w+ .*: i64", body)
    # the byte offset 4 n (the tile is the first allocation) is computed in 32 bits, then sign-extended
    filecheck(_ptx_body(c.ptx), [
        "CHECK: ld.param.b32 [[N:%r[0-9]+]], [{{.*}}_param_1];",
        "CHECK: shl.b32 [[B:%r[0-9]+]], [[N]], 2;",
        "CHECK: cvt.s64.s32 %rd{{[0-9]+}}, [[B]];",
        "CHECK: st.shared.b32 [%rd{{[0-9]+}}], 1077936128;",
    ])


def test_global_memory_run_time_offsets_are_64_bit(filecheck):
    c = cute.compile(offset, F("Float32", (64,)), "gmem", cute.Int32(5))
    body = _body(c.mlir)
    assert _count(body, r"arith\.extsi %arg1 : i32 to i64") == 1      # the signed Int32 element offset
    assert _count(body, r"arith\.muli %\w+, %\w+ : i64") == 1           # times 4 bytes, in 64 bits
    assert _count(body, r"llvm\.getelementptr %arg0\[%\w+\] : \(!llvm\.ptr<1>, i64\) -> !llvm\.ptr<1>, i8") == 1
    filecheck(_ptx_body(c.ptx), [
        "CHECK: ld.param.b32 [[N:%r[0-9]+]], [{{.*}}_param_1];",
        "CHECK: mul.wide.s32 [[O:%rd[0-9]+]], [[N]], 4;",
        "CHECK: st.global.b32 [%rd{{[0-9]+}}], 1077936128;",
    ])


def test_a_thread_index_offset_is_widened_unsigned():
    c = cute.compile(offset, F("Float32", (64,)), "gmem_tid")
    assert _count(_body(c.mlir), r"arith\.extui %\w+ : i32 to i64") == 1
    assert _count(c.ptx, r"mul\.wide\.u32\s+%rd\d+, %r\d+, 4;") == 1


def test_a_shared_memory_offset_adds_the_static_part_in_32_bits():
    c = cute.compile(offset, F("Float32", (64,)), "smem_tid")
    body = _body(c.mlir)
    assert _count(body, r"llvm\.getelementptr %\w+\[%\w+\] : \(!llvm\.ptr<3>, i32\) -> !llvm\.ptr<3>, i8") == 1
    assert "arith.extui" not in body and "arith.extsi" not in body
    assert _count(c.ptx, r"st\.shared\.b32 \t\[%rd\d+\+32\], 1077936128;") == 1   # element 8: 32 bytes


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


@cute.kernel
def _constant_store_kernel(dtype, value):
    s = arch.SmemAllocator().allocate_tensor(dtype, cute.Layout(4))
    s[0] = value


@pytest.mark.parametrize("dtype,value,ok", [("Int8", 127, True), ("Int8", 300, False), ("Int8", -129, False),
                                            ("Uint8", 255, True), ("Uint8", -1, False), ("Int32", 1 << 31, False)])
def test_a_python_int_must_fit_the_element_type(dtype, value, ok):
    def host():
        _constant_store_kernel(cute.dtypes.dtype_of(dtype), value).launch(grid=1, block=32)

    if ok:
        assert "st.shared" in cute.compile(host).ptx
    else:
        with pytest.raises(TraceError, match=f"{value} does not fit in {dtype}"):
            cute.compile(host)


@cute.kernel
def _fragment_like_kernel(seen):
    s = arch.SmemAllocator().allocate_tensor(cute.Float32, cute.Layout((4, 2), (2, 1)))
    frag = cute.make_fragment_like(s)  # the top-level name, inside a kernel: a register fragment
    seen["engine"] = type(frag.engine).__name__
    seen["layout"] = frag.layout


def test_top_level_make_fragment_like_inside_a_kernel_makes_registers():
    seen = {}

    def host():
        _fragment_like_kernel(seen).launch(grid=1, block=32)

    cute.compile(host)
    assert seen["engine"] == "RegisterEngine"
    assert seen["layout"].shape == (4, (2,))


# -- stores through a tensor recast to wider elements that only partly cover it ------------------------------


@cute.kernel
def partial_recast_kernel(g, how):
    tid, _, _ = arch.thread_idx()
    pair = cute.local_tile(g, (2,), (tid,))  # two fp16 elements: a quarter of a 64-bit element
    wide = cute.recast_tensor(pair, cute.Uint64)
    if how == "read":  # reading the partly covering view is allowed; a store through an exact one too
        cute.recast_tensor(cute.local_tile(g, (4,), (tid + 32,)), cute.Uint64)[0] = wide[0]
    elif how == "store":
        wide[0] = 0
    else:
        cute.copy(wide, wide)


@cute.jit
def partial_recast(g, how):
    partial_recast_kernel(g, how).launch(grid=1, block=32)


@pytest.mark.parametrize("how, line, fragment", [
    ("store", "wide[0] = 0", "a store through this tensor is refused"),
    ("copy", "cute.copy(wide, wide)", "a copy through this tensor is refused"),
])
def test_a_store_through_a_partly_covering_recast_is_rejected(how, line, fragment):
    with pytest.raises(cute.DivisibilityError) as e:
        cute.compile(partial_recast, F("Float16", (256,)), how)
    path = inspect.getsourcefile(partial_recast_kernel.fn)
    assert str(e.value).startswith(f"{path}:{kernel_line(partial_recast_kernel, line)}: {fragment}"), str(e.value)
    assert "covers Uint64 elements only partly" in str(e.value)


def test_reading_a_partly_covering_recast_compiles():
    c = cute.compile(partial_recast, F("Float16", (256,)), "read")
    assert _count(c.ptx, r"ld\.global\.(u|b)64") == 1 and _count(c.ptx, r"st\.global\.(u|b)64") == 1
