"""Loads and stores in kernels: tensor elements in shared and global memory (swizzled or not), what a store
accepts, register fragments, stores through partly covering recasts. Pointers and run-time offsets:
``test_jit_pointers``."""

import inspect
import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError
from _trace_checks import assert_trace_error, count_matches, kernel_body, ptx_body, kernel_line

F = cute.compiler.DeviceArraySpec


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
    ptx = ptx_body(c.ptx)
    filecheck(ptx, [
        f"CHECK: ld.shared.{ptx_type} [[V:{reg}[0-9]+]], [%rd{{{{[0-9]+}}}}];",
        f"CHECK: st.shared.{ptx_type} [%rd{{{{[0-9]+}}}}+{sb_offset}], [[V]];",
    ])
    assert count_matches(ptx, r"ld\.shared\.") == 1 and count_matches(ptx, r"st\.shared\.") == 1
    assert "xor.b" not in ptx


@pytest.mark.parametrize("dtype,ptx_type,reg,sb_offset", ELEMENT_CASES)
def test_swizzled_element_addresses_include_the_xor(dtype, ptx_type, reg, sb_offset):
    c = cute.compile(transpose, getattr(cute, dtype), 8, cute.Swizzle(3, 0, 3))
    ptx = ptx_body(c.ptx)
    # only the load from the swizzled tile is swizzled: one xor
    assert count_matches(ptx, r"xor\.b32\s") == 1
    assert count_matches(kernel_body(c.mlir), r"arith\.xori ") == 1
    assert count_matches(ptx, rf"ld\.shared\.{ptx_type}\s") == 1 and count_matches(ptx, rf"st\.shared\.{ptx_type}\s") == 1


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
    ptx = ptx_body(c.ptx)
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
    filecheck(ptx_body(c.ptx), [
        "CHECK: ld.param.b64 [[G:%rd[0-9]+]], [{{.*}}_param_0];",
        "CHECK: mov.u32 [[T:%r[0-9]+]], %tid.x;",
        "CHECK: mul.wide.u32 [[O:%rd[0-9]+]], [[T]], 64;",
        "CHECK: add.s64 [[A:%rd[0-9]+]], [[G]], [[O]];",
        "CHECK: st.global.b32 [[[A]]+12], 1075838976;",
    ])
    assert count_matches(c.ptx, r"st\.global\.") == 1 and "ld.global" not in c.ptx


def test_global_element_load_and_store():
    c = cute.compile(gmem_element, F("Int32", (32, 32)), "copy")
    ptx = ptx_body(c.ptx)
    assert count_matches(ptx, r"ld\.global\.b32\s") == 1 and count_matches(ptx, r"st\.global\.b32\s") == 1
    # column tid of row 0 (4 tid bytes) and row tid (128 tid bytes): both 64-bit byte offsets
    assert count_matches(ptx, r"mul\.wide\.u32\s+%rd\d+, %r\d+, 4;") == 1
    assert count_matches(ptx, r"mul\.wide\.u32\s+%rd\d+, %r\d+, 128;") == 1


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
    filecheck(ptx_body(c.ptx), [f"CHECK: {ptx}"])
    assert count_matches(c.ptx, r"st\.shared\.") == 1


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
    assert count_matches(kernel_body(c.mlir), mlir) == 1
    assert count_matches(c.ptx, ptx) == 1


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
    body = kernel_body(c.mlir)
    loads = re.findall(r"(%\w+) = llvm\.load %\w+ {alignment = 4 : i64} : !llvm\.ptr<3> -> i32", body)
    casts = dict(re.findall(r"(%\w+) = llvm\.bitcast (%\w+) : i32 to f32", body))
    stores = re.findall(r"llvm\.store (%\w+), %\w+ {alignment = 4 : i64} : f32, !llvm\.ptr<1>", body)
    assert len(loads) == 8 and len(stores) == 8
    # g[tid, i] receives the value loaded from row[7 - i]
    assert [casts[s] for s in stores] == loads[::-1]
    assert count_matches(c.ptx, r"st\.global\.b32\s") == 8


def test_copy_from_shared_memory_through_a_fragment_to_global_memory():
    c = cute.compile(fragment, F("Float32", (32, 8)), "copy")
    _no_local_memory(c.ptx)
    body = kernel_body(c.mlir)
    assert count_matches(body, r"llvm\.load %\w+ {alignment = \d+ : i64} : !llvm\.ptr<3>") >= 1
    assert count_matches(body, r"llvm\.store %\w+, %\w+ {alignment = \d+ : i64} : [\w<>]+, !llvm\.ptr<1>") >= 1
    # every one of the row's 8 floats (32 bytes) is loaded and stored once
    ld = sum(int(b) for b in re.findall(r"llvm\.load %\w+ {alignment = (\d+) : i64} : !llvm\.ptr<3>", body))
    st = sum(int(b) for b in re.findall(r"llvm\.store %\w+, %\w+ {alignment = (\d+) : i64} : [\w<>]+, !llvm\.ptr<1>",
                                        body))
    assert ld == 32 and st == 32
    assert "ld.shared" in c.ptx and "st.global" in c.ptx


def test_copy_from_a_fragment_to_global_memory_is_vectorised():
    # row tid of a (32, 8) fp32 array: 32-byte aligned, 8 contiguous floats: two 16-byte stores
    c = cute.compile(fragment, F("Float32", (32, 8)), "copy")
    assert count_matches(c.ptx, r"st\.global\.v4\.b32\s") == 2
    assert count_matches(c.ptx, r"st\.global\.") == 2


def test_a_fragment_starts_as_zeros():
    c = cute.compile(fragment, F("Int32", (32, 8)), "zeros")
    _no_local_memory(c.ptx)
    # element 2 was loaded; the 7 others are the constant 0: two 16-byte stores of the row
    stores = re.findall(r"st\.global\.v4\.b32 \t\[%rd\d+(\+\d+)?\], \{([^}]*)\};", c.ptx)
    assert [(off, [x.strip() for x in vals.split(",")]) for off, vals in stores] == [
        ("", ["0", "0", stores[0][1].split(",")[2].strip(), "0"]), ("+16", ["0", "0", "0", "0"])]
    assert re.fullmatch(r"%r\d+", stores[0][1].split(",")[2].strip())
    assert count_matches(c.ptx, r"st\.global\.") == 2


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
    assert count_matches(c.ptx, r"ld\.global\.(u|b)64") == 1 and count_matches(c.ptx, r"st\.global\.(u|b)64") == 1


# -- typed constants (host Scalars) stored into tensors of every element type --------------------------------

_INT_TYPES = ["Int8", "Int16", "Int32", "Int64", "Uint8", "Uint16", "Uint32", "Uint64"]
_FLOAT_TYPES = ["Float16", "BFloat16", "TFloat32", "Float32", "Float64", "Float8E4M3FN", "Float8E5M2"]


def _scalar_store(dtype, captured, made):
    """A kernel storing ``captured`` (a Scalar made on the host, captured by the kernel) at element 0 and
    ``made()`` (made while tracing) at element 1 of a gmem tensor of ``dtype``."""

    @cute.kernel
    def k(t):
        t[0] = captured
        t[1] = made()

    @cute.jit
    def f(t):
        k(t).launch(grid=1, block=1)

    return cute.compile(f, F(dtype, (4,)))


def _bounds(name):
    dtype = getattr(cute, name)
    if dtype.signed:
        return -(1 << (dtype.width - 1)), (1 << (dtype.width - 1)) - 1
    return 0, (1 << dtype.width) - 1


@pytest.mark.parametrize("name", _INT_TYPES)
@pytest.mark.parametrize("end", [0, 1])
def test_typed_int_constant_stores_into_tensor_of_its_type(name, end):
    """cute.Uint8(255) (captured from the host or made in the kernel) stores as that i8 constant: every integer
    type, at both ends of its range."""
    dtype = getattr(cute, name)
    value = _bounds(name)[end]
    c = _scalar_store(dtype, dtype(value), lambda: dtype(value))
    w = dtype.width
    as_signed = value - (1 << w) if value >= 1 << (w - 1) else value
    body = kernel_body(c.mlir)
    assert count_matches(body, rf"arith\.constant {as_signed} : i{w}\b") == 2, body
    assert count_matches(body, rf"llvm\.store %\S+, %\S+ \{{alignment = {w // 8} : i64\}} : i{w}, !llvm\.ptr<1>") == 2


@pytest.mark.parametrize("name", _FLOAT_TYPES)
def test_typed_float_constant_stores_into_tensor_of_its_type(name):
    dtype = getattr(cute, name)
    c = _scalar_store(dtype, dtype(1.5), lambda: dtype(-2.0))
    ptx = ptx_body(c.ptx)
    assert count_matches(ptx, rf"st\.global\.b{dtype.width}\b") == 2, ptx


def test_typed_bool_constant_stores_into_boolean_tensor():
    c = _scalar_store(cute.Boolean, cute.Boolean(True), lambda: cute.Boolean(False))
    body = kernel_body(c.mlir)
    # the host's Boolean is a constant byte; the kernel's Boolean(False) a run-time i1 value (as in the DSL) stored
    # as a byte
    assert count_matches(body, r"arith\.constant 1 : i8") == 1
    assert count_matches(body, r"arith\.constant (0 : i8|false)") == 1, body


@pytest.mark.parametrize("src,dst,rule", [
    ("Float32", "Float16", "cannot be stored as Float16"),
    ("Int32", "Float32", "cannot be stored as Float32"),
    ("Float16", "Int16", "cannot be stored as Int16"),
    ("Int32", "Boolean", "cannot be stored as Boolean"),
])
def test_typed_constant_of_another_kind_is_a_trace_error(src, dst, rule):
    value = cute.Int32(1) if src == "Int32" else getattr(cute, src)(1.0)
    with pytest.raises(TraceError, match=rule):
        _scalar_store(getattr(cute, dst), value, lambda: 0)


def test_typed_int_constant_that_does_not_fit_the_element_is_a_trace_error():
    with pytest.raises(TraceError, match=r"300 does not fit in Uint8"):
        _scalar_store(cute.Uint8, cute.Int32(300), lambda: 0)
    c = _scalar_store(cute.Uint8, cute.Int32(7), lambda: cute.Int64(9))  # integers that fit convert
    body = kernel_body(c.mlir)
    assert count_matches(body, r"arith\.constant 7 : i8") == 1  # the host's constant, converted while tracing
    assert count_matches(body, r"arith\.constant 9 : i64") == 1, body  # the kernel's Int64, converted at run time
