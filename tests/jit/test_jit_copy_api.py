"""``cute.copy`` / ``cute.async_copy`` / ``cute.tma_copy`` in kernels: vector widths derived from the layouts
and the pointers' alignment, cp.async operands (size, cache mode, zero-fill), predicates, and the errors
(at the user's line) for copies that cannot be issued."""

import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError
from cute_py.compiler.builtins.copy import L2_EVICT_LAST
from cute_py.nvgpu import cpasync
from _trace_checks import assert_trace_error

F = cute.compiler.DeviceArraySpec
GLOBAL, ALWAYS = cpasync.LoadCacheMode.GLOBAL, cpasync.LoadCacheMode.ALWAYS

_EB = {"Float32": 4, "BFloat16": 2, "Int8": 1, "Float64": 8}
# one access of B bytes: its PTX type (global side) and the MLIR type cute_py loads and stores
_PTX = {16: r"v4\.b32", 8: r"b64", 4: r"b32", 2: r"b16", 1: r"b8"}
_MLIR = {16: "vector<4xi32>", 8: "i64", 4: "i32", 2: "i16", 1: "i8"}


def _count(text, pattern):
    return len(re.findall(pattern, text))


def _body(mlir):
    return re.split(r"attributes \{nvvm\.kernel[^}]*\}", mlir, maxsplit=1)[1]


def _mlir_loads(mlir, space, nbytes):
    """MLIR loads of ``nbytes`` from address space ``space`` (1 global, 3 shared), aligned to their size."""
    return _count(mlir, rf"llvm\.load %\w+ {{alignment = {nbytes} : i64}} : !llvm\.ptr<{space}> -> "
                        rf"{re.escape(_MLIR[nbytes])}\n")


def _mlir_stores(mlir, space, nbytes):
    return _count(mlir, rf"llvm\.store %\w+, %\w+ {{alignment = {nbytes} : i64}} : {re.escape(_MLIR[nbytes])}, "
                        rf"!llvm\.ptr<{space}>\n")


# -- plain copies: copy(src, dst) with no atom ------------------------------------------------------


@cute.kernel
def row_copy_kernel(g, tile, smem_stride, col0):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    s_tile = smem.allocate_tensor(g.element_type, cute.Layout(tile, smem_stride))
    g_tile = cute.domain_offset((0, col0), cute.local_tile(g, tile, (0, 0)))
    cute.copy(g_tile[tid, None], s_tile[tid, None])
    arch.sync_threads()
    cute.copy(s_tile[tid, None], g_tile[tid, None])


@cute.jit
def row_copy(g, tile, smem_stride=None, col0=0):
    stride = smem_stride if smem_stride is not None else (tile[1], 1)
    row_copy_kernel(g, tile, stride, col0).launch(grid=1, block=tile[0])


# (dtype, gmem shape, smem strides of the (8, 16) tile, column offset of the gmem tile, expected vector bytes).
# Each thread copies row `tid` of the tile: 16 contiguous elements on both sides, so the vector is bounded by
# 16 bytes and by the alignment both row pointers keep: gmem rows start at tid * cols elements from a 256-byte
# aligned argument, smem rows at tid * stride0 elements from a 128-byte aligned allocation.
ROW_CASES = [
    ("Float32", (8, 16), None, 0, 16),     # rows of 64 B on both sides
    ("Float32", (8, 18), None, 0, 8),      # gmem rows of 72 B: 8-byte aligned
    ("Float32", (8, 17), None, 0, 4),      # gmem rows of 68 B: 4-byte aligned
    ("Float32", (8, 32), None, 2, 8),      # 128 B rows, the tile starts 8 B in
    ("Float32", (8, 32), None, 1, 4),      # the tile starts 4 B in
    ("Float32", (8, 16), (18, 1), 0, 8),   # padded smem rows of 72 B
    ("Float32", (8, 16), (1, 8), 0, 4),    # column-major smem: a row has stride 8, no two elements adjacent
    ("BFloat16", (8, 16), None, 0, 16),    # 32 B rows: two 8-element vectors
    ("BFloat16", (8, 20), None, 0, 8),     # 40 B rows
    ("BFloat16", (8, 17), None, 0, 2),     # 34 B rows: single elements
    ("Int8", (8, 16), None, 0, 16),        # one 16-element vector per row
    ("Int8", (8, 18), None, 0, 2),         # 18 B rows
    ("Float64", (8, 16), None, 0, 16),     # two doubles per vector
    ("Float64", (8, 17), None, 0, 8),      # 136 B rows: one double
]


@pytest.mark.parametrize("dtype,shape,smem_stride,col0,vbytes", ROW_CASES)
def test_plain_copy_vectorises_as_widely_as_layouts_and_alignment_allow(dtype, shape, smem_stride, col0, vbytes):
    c = cute.compile(row_copy, F(dtype, shape), (8, 16), smem_stride, col0)
    n = 16 * _EB[dtype] // vbytes  # vectors per row
    ptx = c.ptx
    # the global side is issued exactly as traced (nothing proves a wider alignment of a kernel argument)
    assert _count(ptx, rf"ld\.global\.{_PTX[vbytes]}\s") == n
    assert _count(ptx, rf"st\.global\.{_PTX[vbytes]}\s") == n
    assert _count(ptx, r"ld\.global\.") == n and _count(ptx, r"st\.global\.") == n
    # both directions use the same vector in shared memory
    mlir = _body(c.mlir)
    assert _mlir_loads(mlir, 1, vbytes) == n and _mlir_stores(mlir, 3, vbytes) == n
    assert _mlir_loads(mlir, 3, vbytes) == n and _mlir_stores(mlir, 1, vbytes) == n
    assert _count(mlir, r"llvm\.load ") == 2 * n and _count(mlir, r"llvm\.store ") == 2 * n
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_plain_copy_of_aligned_rows_gives_16_byte_global_and_shared_vectors(filecheck):
    c = cute.compile(row_copy, F("Float32", (8, 16)), (8, 16))
    filecheck(c.ptx, [
        "CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd[[G:[0-9]+]]];",
        "CHECK: st.shared.v4.b32 [%rd[[S:[0-9]+]]], {",
        "CHECK: ld.global.v4.b32 {{.*}}, [%rd[[G]]+16];",
        "CHECK: st.shared.v4.b32 [%rd[[S]]+16]",
        "CHECK: ld.global.v4.b32 {{.*}}, [%rd[[G]]+32];",
        "CHECK: ld.global.v4.b32 {{.*}}, [%rd[[G]]+48];",
        "CHECK: bar.sync 0;",
        "CHECK: ld.shared.v4.b32 {{.*}}, [%rd[[S]]];",
        "CHECK: st.global.v4.b32 [%rd[[G]]], {",
        "CHECK: st.global.v4.b32 [%rd[[G]]+48], {",
    ])
    assert _count(c.ptx, r"ld\.shared\.v4\.b32") == 4 and _count(c.ptx, r"st\.shared\.v4\.b32") == 4


@cute.kernel
def view_copy_kernel(g, view):
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(g.element_type, cute.Layout(cute.size(view)))
    cute.copy(cute.make_tensor(g.engine, view), cute.make_tensor(s.engine, view))


@cute.jit
def view_copy(g, view):
    view_copy_kernel(g, view).launch(grid=1, block=1)


@pytest.mark.parametrize("view,vbytes", [
    (cute.Layout((4, 8), (8, 1)), 4),     # row-major (4, 8): flat (column-major) neighbours are 8 apart
    (cute.Layout((8, 4), (1, 8)), 16),    # the same memory as (8, 4) column-major: 32 contiguous elements
    (cute.Layout((2, 16), (1, 2)), 16),   # (2, 16):(1, 2) is 32 contiguous too
    (cute.Layout((2, 16), (1, 4)), 8),    # pairs at 0, 4, 8...: 8-byte vectors, 16 of them
])
def test_plain_copy_runs_follow_the_flat_column_major_order(view, vbytes):
    c = cute.compile(view_copy, F("Float32", (64,)), view)
    n = 32 * 4 // vbytes
    assert _count(c.ptx, rf"ld\.global\.{_PTX[vbytes]}\s") == n
    assert _count(c.ptx, r"ld\.global\.") == n
    mlir = _body(c.mlir)
    assert _mlir_loads(mlir, 1, vbytes) == n and _mlir_stores(mlir, 3, vbytes) == n


@cute.kernel
def run_start_kernel(g, view):
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(g.element_type, cute.Layout(cute.size(view)))
    cute.copy(cute.make_tensor(g.engine, view), s)


@cute.jit
def run_start_copy(g, view):
    run_start_kernel(g, view).launch(grid=1, block=1)


def test_plain_copy_narrows_the_vector_when_a_later_run_starts_misaligned():
    # two rows of 4 floats of a (2, 18) row-major array: (4, 2):(1, 18); the second row starts 72 B in, which is
    # 8-byte aligned only, so the copy needs 8-byte vectors: 4 of them
    c = cute.compile(run_start_copy, F("Float32", (2, 18)), cute.Layout((4, 2), (1, 18)))
    assert _count(c.ptx, r"ld\.global\.b64\s") == 4
    assert _count(c.ptx, r"ld\.global\.") == 4


# -- cp.async with a tiled copy of CopyG2SOp ----------------------------------------------------------


@cute.kernel
def g2s_kernel(g, tc, tile, pred_kind, hint):
    tid, _, _ = arch.thread_idx()
    bx, by, _ = arch.block_idx()
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(g.element_type, cute.Layout(tile, (tile[1], 1)))
    thr = tc.get_slice(tid)
    t_g = thr.partition_S(cute.local_tile(g, tile, (bx, by)))
    t_s = thr.partition_D(s)
    if pred_kind == "coords":
        t_c = thr.partition_S(cute.local_tile(cute.make_identity_tensor(g.shape), tile, (bx, by)))
        cute.copy(tc, t_g, t_s, pred=cute.predicate(t_c, g.shape), cache_hint=hint)
    elif pred_kind == "thread":
        cute.copy(thr, t_g, t_s, pred=tid < 16, cache_hint=hint)
    elif pred_kind is None:
        cute.copy(tc, t_g, t_s, cache_hint=hint)
    else:
        cute.copy(tc, t_g, t_s, pred=pred_kind, cache_hint=hint)
    arch.cp_async_commit_group()
    arch.cp_async_wait_group(0)


@cute.jit
def g2s_copy(g, vbytes, cache_mode, pred_kind=None, hint=None):
    dt = g.element_type
    v = vbytes * 8 // dt.width
    atom = cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode), dt, vbytes * 8)
    tc = cute.make_tiled_copy_tv(atom, cute.Layout((8, 4), (4, 1)), cute.Layout((1, v)))
    tile = (32, 4 * v * 4)  # 4 x 4 tiles of the tiled copy's (8, 4 v)
    g2s_kernel(g, tc, tile, pred_kind, hint).launch(grid=(2, 2), block=32)


_CP = r"cp\.async\.{mod}\.shared\.global \[%rd\d+(\+\d+)?\], \[%rd\d+(\+\d+)?\], {n}"


@pytest.mark.parametrize("dtype", ["Float32", "BFloat16"])
def test_cp_async_tiled_copy_issues_one_cp_async_per_vector(filecheck, dtype):
    c = cute.compile(g2s_copy, F(dtype, (100, 320)), 16, GLOBAL)
    ptx = c.ptx
    # 32 threads of 16 B cover (8, 4 x vector) of the (32, 16 x vector) tile: 16 vectors per thread
    assert _count(ptx, _CP.format(mod="cg", n=16) + ";") == 16
    assert _count(ptx, r"cp\.async\.") == 16 + 2  # and the commit and the wait
    filecheck(ptx, ["CHECK-COUNT-16: cp.async.cg.shared.global", "CHECK: cp.async.commit_group;",
                    "CHECK: cp.async.wait_group 0;"])
    assert "ld.global" not in ptx and "st.shared" not in ptx


def test_cp_async_shared_addresses_step_through_the_tile():
    c = cute.compile(g2s_copy, F("Float32", (100, 320)), 16, GLOBAL)
    # the tile (32, 64) fp32 has 256-byte rows; a thread's vectors are 8 rows (2048 B) and 16 columns (64 B) apart
    offs = sorted(int(m or 0) for m in re.findall(r"cp\.async\.cg\.shared\.global \[%rd\d+\+?(\d+)?\]", c.ptx))
    assert offs == sorted(r * 2048 + k * 64 for r in range(4) for k in range(4))


def test_cp_async_with_a_coordinate_predicate_takes_a_run_time_src_size():
    c = cute.compile(g2s_copy, F("Float32", (100, 320)), 16, GLOBAL, "coords")
    lines = [x for x in c.ptx.splitlines() if "cp.async.cg" in x]
    assert len(lines) == 16
    assert all(re.search(_CP.format(mod="cg", n=16) + r", %r\d+;$", x) for x in lines), lines
    # the src size counts the bytes of each vector's leading elements inside the bound (one select per element)
    assert _count(_body(c.mlir), r"arith\.select ") == 16 * 4


def test_cp_async_with_a_run_time_condition_for_the_whole_copy():
    c = cute.compile(g2s_copy, F("Float32", (100, 320)), 16, GLOBAL, "thread")
    lines = [x for x in c.ptx.splitlines() if "cp.async.cg" in x]
    assert len(lines) == 16 and all(re.search(r", 16, %r\d+;$", x) for x in lines), lines


def test_cp_async_with_a_static_true_predicate_has_no_src_size():
    c = cute.compile(g2s_copy, F("Float32", (100, 320)), 16, GLOBAL, True)
    lines = [x for x in c.ptx.splitlines() if "cp.async.cg" in x]
    assert len(lines) == 16 and all(re.search(_CP.format(mod="cg", n=16) + ";$", x) for x in lines), lines
    assert _count(_body(c.mlir), r"arith\.select") == 0


def test_cp_async_with_a_static_false_predicate_zero_fills_everything():
    c = cute.compile(g2s_copy, F("Float32", (100, 320)), 16, GLOBAL, False)
    lines = [x for x in c.ptx.splitlines() if "cp.async.cg" in x]
    assert len(lines) == 16 and all(re.search(_CP.format(mod="cg", n=16) + ", 0;$", x) for x in lines), lines


@pytest.mark.parametrize("vbytes", [16, 8, 4])
def test_cp_async_always_uses_ca_with_the_atoms_size(vbytes):
    c = cute.compile(g2s_copy, F("Float32", (100, 320)), vbytes, ALWAYS)
    assert _count(c.ptx, _CP.format(mod="ca", n=vbytes) + ";") == 16
    assert "cp.async.cg" not in c.ptx


def test_cp_async_cache_hint_is_passed_to_every_instruction():
    c = cute.compile(g2s_copy, F("Float32", (100, 320)), 16, GLOBAL, None, L2_EVICT_LAST)
    assert _count(c.ptx, r"cp\.async\.cg\.shared\.global\.L2::cache_hint \[[^]]+\], \[[^]]+\], 16, %rd\d+;") == 16
    assert str(L2_EVICT_LAST) in c.ptx


@cute.kernel
def swizzled_kernel(g, g2s, s2g, s_layout, tile):
    tid, _, _ = arch.thread_idx()
    bx, by, _ = arch.block_idx()
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(g.element_type, s_layout)
    load = g2s.get_slice(tid)
    cute.copy(g2s, load.partition_S(cute.local_tile(g, tile, (bx, by))), load.partition_D(s))
    arch.cp_async_commit_group()
    arch.cp_async_wait_group(0)
    arch.sync_threads()
    store = s2g.get_slice(tid)
    cute.copy(store.partition_S(s), store.partition_D(cute.local_tile(g, tile, (bx, by))))


@cute.jit
def swizzled_copy(g, swizzle=None, tile=(64, 64)):
    dt = g.element_type
    if swizzle is None:
        s_layout = cute.tile_to_shape(cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, dt.width), tile)
    else:
        s_layout = cute.make_composed_layout(swizzle, 0, cute.Layout(tile, (tile[1], 1)))
    thr, val = cute.Layout((16, 8), (8, 1)), cute.Layout((1, 8))
    g2s = cute.make_tiled_copy_tv(cute.make_copy_atom(cpasync.CopyG2SOp(GLOBAL), dt, 128), thr, val)
    s2g = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.CopyUniversalOp(), dt, 128), thr, val)
    swizzled_kernel(g, g2s, s2g, s_layout, tile).launch(grid=(2, 2), block=128)


def test_a_128b_swizzled_tile_keeps_16_byte_vectors():
    c = cute.compile(swizzled_copy, F("BFloat16", (128, 128)))
    ptx = c.ptx
    # 128 threads x 8 bf16 cover 16 rows of the (64, 64) tile: 4 vectors per thread, each inside one 16-byte
    # unit of the swizzle
    assert _count(ptx, _CP.format(mod="cg", n=16) + ";") == 4
    assert _count(ptx, r"ld\.shared\.v4\.b32\s") == 4 and _count(ptx, r"st\.global\.v4\.b32\s") == 4
    assert _count(ptx, r"ld\.shared\.") == 4 and _count(ptx, r"st\.global\.") == 4
    assert "xor.b32" in ptx


def test_a_swizzle_that_splits_the_atoms_vector_is_rejected():
    # Swizzle(2, 2, 3) on bf16 permutes blocks of 4 elements: an 8-element vector is not contiguous
    with pytest.raises(TraceError) as e:
        cute.compile(swizzled_copy, F("BFloat16", (128, 128)), cute.Swizzle(2, 2, 3))
    assert_trace_error(e, swizzled_kernel, "load.partition_D(s))",
                        "copy: the atom moves 8 elements per instruction, but dst")
    assert "has contiguous runs of only 4" in str(e.value)


# -- async_copy(src, dst): the widest cp.async both sides allow -------------------------------------------


@cute.kernel
def async_row_kernel(g, tile, cache_mode):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    s_tile = smem.allocate_tensor(g.element_type, cute.Layout(tile, (tile[1], 1)))
    g_row = cute.local_tile(g, tile, (0, 0))[tid, None]
    cute.async_copy(g_row, s_tile[tid, None], cache_mode=cache_mode)
    arch.cp_async_commit_group()


@cute.jit
def async_row(g, cache_mode=ALWAYS):
    async_row_kernel(g, (8, 16), cache_mode).launch(grid=1, block=8)


@pytest.mark.parametrize("dtype,cols,vbytes", [
    ("Float32", 16, 16), ("Float32", 18, 8), ("Float32", 17, 4), ("BFloat16", 16, 16), ("BFloat16", 18, 4),
    ("Int8", 16, 16), ("Int8", 20, 4),
])
def test_async_copy_picks_the_widest_vector(dtype, cols, vbytes):
    c = cute.compile(async_row, F(dtype, (8, cols)))
    n = 16 * _EB[dtype] // vbytes
    assert _count(c.ptx, _CP.format(mod="ca", n=vbytes) + ";") == n
    assert _count(c.ptx, r"cp\.async\.c[ag]\.") == n


def test_async_copy_global_uses_cg_for_16_byte_vectors():
    c = cute.compile(async_row, F("Float32", (8, 16)), GLOBAL)
    assert _count(c.ptx, _CP.format(mod="cg", n=16) + ";") == 4
    assert "cp.async.ca" not in c.ptx


def test_async_copy_global_needs_16_byte_vectors():
    with pytest.raises(TraceError) as e:
        cute.compile(async_row, F("Float32", (8, 18)), GLOBAL)
    assert_trace_error(e, async_row_kernel, "cute.async_copy(",
                        "async_copy with LoadCacheMode.GLOBAL needs 16-byte vectors; these layouts allow 8 bytes")


def test_async_copy_of_two_byte_vectors_is_rejected():
    # bf16 rows of 17 elements (34 B): only single elements are aligned, and cp.async moves at least 4 bytes
    with pytest.raises(TraceError) as e:
        cute.compile(async_row, F("BFloat16", (8, 17)))
    assert_trace_error(e, async_row_kernel, "cute.async_copy(", "cp.async copies 4, 8 or 16 bytes per instruction")


# -- predicate(coords, bound): static parts fold ----------------------------------------------------------


@cute.kernel
def predicate_kernel(g, tc, tile, tile_coord, bound, seen):
    tid, _, _ = arch.thread_idx()
    bx, by, _ = arch.block_idx()
    coord = {"both": (bx, by), "rows": (0, by), "cols": (bx, 0)}[tile_coord]
    thr = tc.get_slice(tid)
    t_c = thr.partition_S(cute.local_tile(cute.make_identity_tensor(g.shape), tile, coord))
    p = cute.predicate(t_c, bound)
    seen.extend(p[i] for i in range(cute.size(p)))


def predicate_host(g, tile, tile_coord, thr, val, bound, seen):
    tc = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.CopyUniversalOp(), g.element_type, 32), thr, val)
    predicate_kernel(g, tc, tile, tile_coord, bound, seen).launch(grid=(4, 4), block=32)


def _predicate(tile_coord, tile, thr, val, bound):
    seen = []
    c = cute.compile(predicate_host, F("Float32", (100, 100)), tile, tile_coord, thr, val, bound, seen)
    return seen, _count(_body(c.mlir), r"arith\.cmpi ")


def test_predicate_compares_both_modes_of_traced_coordinates():
    # thread (r, c) of (8, 4) holds 4 elements of a tile at a traced block: 2 comparisons each
    seen, cmps = _predicate("both", (8, 16), cute.Layout((8, 4), (4, 1)), cute.Layout((1, 4)), (100, 100))
    assert len(seen) == 4 and all(isinstance(p, cute.compiler.TracedBool) for p in seen)
    assert cmps == 8


@pytest.mark.parametrize("rows,expect", [(100, 8), (8, 8), (6, 6), (0, 0)])
def test_predicate_folds_a_static_mode(rows, expect):
    # 32 threads along the columns, 8 rows each; the tile is at row 0: the row coordinates are static 0..7
    seen, cmps = _predicate("rows", (8, 32), cute.Layout((1, 32), (32, 1)), cute.Layout((8, 1)), (rows, 100))
    assert cmps == expect
    assert len(seen) == 8
    assert [p is False for p in seen] == [i >= rows for i in range(8)]
    assert all(isinstance(p, cute.compiler.TracedBool) for p in seen[:min(rows, 8)])


@pytest.mark.parametrize("cols,expect", [(100, 8), (6, 6)])
def test_predicate_folds_a_static_mode_after_a_traced_one(cols, expect):
    # 32 threads along the rows, 8 columns each; the tile is at column 0: the column coordinates are static 0..7
    seen, cmps = _predicate("cols", (32, 8), cute.Layout((32, 1), (1, 32)), cute.Layout((1, 8)), (100, cols))
    assert cmps == expect
    assert [p is False for p in seen] == [j >= cols for j in range(8)]


# -- errors, at the user's line ------------------------------------------------------------------------


@cute.kernel
def bad_copy_kernel(g, g2s, plain, case):
    tid, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    s16 = smem.allocate_tensor(cute.Float32, cute.Layout(16))
    s8 = smem.allocate_tensor(cute.Float32, cute.Layout(8))
    h16 = smem.allocate_tensor(cute.BFloat16, cute.Layout(16))
    s_row = smem.allocate_tensor(cute.Float32, cute.Layout((8, 16), (16, 1)))
    s_col = smem.allocate_tensor(cute.Float32, cute.Layout((8, 16), (1, 8)))
    g_tile = cute.local_tile(g, (8, 16), (0, 0))
    thr = g2s.get_slice(tid)
    pthr = plain.get_slice(tid)
    if case == "count":
        cute.copy(s16, s8)
    elif case == "width":
        cute.copy(s16, h16)
    elif case == "pred_size":
        three = cute.make_fragment(cute.Layout(3), cute.Boolean)
        cute.copy(g2s, thr.partition_S(g_tile), thr.partition_D(s_row), pred=three)
    elif case == "not_contiguous":
        cute.copy(plain, pthr.partition_S(g_tile), pthr.partition_D(s_col))
    elif case == "s2g":
        cute.copy(g2s, thr.partition_S(s_row), thr.partition_D(g_tile))
    elif case == "misaligned":
        shifted = cute.domain_offset((0, 1), cute.local_tile(g, (8, 16), (0, 0)))
        cute.copy(g2s, thr.partition_S(shifted), thr.partition_D(s_row))
    elif case == "desc_ptr":
        cute.copy(g2s, thr.partition_S(g_tile), thr.partition_D(s_row), tma_desc_ptr=g.engine)
    elif case == "tma_copy":
        cute.tma_copy(g_tile, s_row, barrier=smem.allocate_mbarrier())
    elif case == "bar_on_plain":
        cute.copy(s16, g_tile[0, None], tma_bar_ptr=smem.allocate_mbarrier())
    elif case == "hint_on_plain":
        cute.copy(s16, g_tile[0, None], cache_hint=L2_EVICT_LAST)
    elif case == "not_an_atom":
        cute.copy(g_tile, s16, s_row)


@cute.jit
def bad_copy(g, case):
    dt = g.element_type
    g2s = cute.make_tiled_copy_tv(cute.make_copy_atom(cpasync.CopyG2SOp(GLOBAL), dt, 128),
                                  cute.Layout((8, 4), (4, 1)), cute.Layout((1, 4)))
    plain = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.CopyUniversalOp(), dt, 128),
                                    cute.Layout((8, 4), (4, 1)), cute.Layout((1, 4)))
    bad_copy_kernel(g, g2s, plain, case).launch(grid=1, block=32)


@pytest.mark.parametrize("case,text,fragment", [
    ("count", "cute.copy(s16, s8)", "copy: src has 16 elements but dst has 8"),
    ("width", "cute.copy(s16, h16)", "copy: src and dst element widths differ (Float32 -> BFloat16)"),
    ("pred_size", "pred=three", "copy: pred has 3 conditions; expected one per vector (1) or per element (4)"),
    ("not_contiguous", "pthr.partition_D(s_col)",
     "copy: the atom moves 4 elements per instruction, but dst"),
    ("s2g", "thr.partition_D(g_tile))", "cp.async copies global to shared memory: src must be a gmem tensor"),
    ("misaligned", "thr.partition_S(shifted)",
     "cp.async of 16 bytes needs 16-byte aligned addresses, but the src"),
    ("desc_ptr", "tma_desc_ptr=g.engine", "tma_desc_ptr applies to TMA atoms only"),
    ("tma_copy", "cute.tma_copy(g_tile, s_row", "tma_copy needs the partitions of a TMA coordinate tensor"),
    ("bar_on_plain", "tma_bar_ptr=smem.allocate_mbarrier()", "a plain copy takes no tma_bar_ptr or mcast_mask"),
    ("hint_on_plain", "cache_hint=L2_EVICT_LAST)", "copy: cache_hint applies to cp.async and TMA copies"),
    ("not_an_atom", "cute.copy(g_tile, s16, s_row)", "copy needs a copy atom, a tiled copy or a TMA atom"),
])
def test_copy_errors_name_the_userskernel_line(case, text, fragment):
    with pytest.raises(TraceError) as e:
        cute.compile(bad_copy, F("Float32", (64, 64)), case)
    assert_trace_error(e, bad_copy_kernel, text, fragment)


def test_a_non_contiguous_atom_vector_names_the_run_it_found():
    with pytest.raises(TraceError, match=r"has contiguous runs of only 1 \(or its swizzle/alignment splits them\)"):
        cute.compile(bad_copy, F("Float32", (64, 64)), "not_contiguous")


def test_a_misaligned_cp_async_names_the_alignment_it_knows():
    # the tile starts one float (4 B) into a 256-byte aligned argument with 256-byte rows
    with pytest.raises(TraceError, match=r"is only known to be 4-byte aligned"):
        cute.compile(bad_copy, F("Float32", (64, 64)), "misaligned")


@cute.kernel
def bad_tma_kernel(load_atom, load_tensor, store_atom, store_tensor, tile, case):
    bx, by, _ = arch.block_idx()
    smem = arch.SmemAllocator()
    s_tile = smem.allocate_tensor(load_atom.dtype, cute.Layout(tile, (tile[1], 1)))
    bar = smem.allocate_mbarrier()
    s_grouped = cute.group_modes(s_tile, 0, 2)
    tAsA, tAgA = cpasync.tma_partition(load_atom, 0, cute.Layout(1), s_grouped,
                                       cute.group_modes(cute.local_tile(load_tensor, tile, (bx, by)), 0, 2))
    tBsB, tBgB = cpasync.tma_partition(store_atom, 0, cute.Layout(1), s_grouped,
                                       cute.group_modes(cute.local_tile(store_tensor, tile, (bx, by)), 0, 2))
    if case == "load_no_barrier":
        cute.tma_copy(tAgA, tAsA)
    elif case == "pred":
        cute.copy(load_atom, tAgA, tAsA, tma_bar_ptr=bar, pred=True)
    elif case == "copy_no_barrier":
        cute.copy(load_atom, tAgA, tAsA)
    elif case == "store_with_barrier":
        cute.tma_copy(tBsB, tBgB, barrier=bar)
    elif case == "mask_on_plain":
        cute.copy(load_atom, tAgA, tAsA, tma_bar_ptr=bar, mcast_mask=3)
    elif case == "traced_mask_on_plain":
        cute.copy(load_atom, tAgA, tAsA, tma_bar_ptr=bar, mcast_mask=cute.Int16(bx))
    elif case == "ok":
        cute.tma_copy(tAgA, tAsA, barrier=bar)
        cute.tma_copy(tBsB, tBgB)
    elif case == "evict":       # TileLang's eviction_policy: the L2 policy of that name as cache_hint
        cute.tma_copy(tAgA, tAsA, barrier=bar, eviction_policy="evict_first")
        cute.tma_copy(tBsB, tBgB, eviction_policy="evict_last")
    elif case == "evict_bad":
        cute.tma_copy(tAgA, tAsA, barrier=bar, eviction_policy="evict_sometimes")
    elif case == "evict_both":
        cute.tma_copy(tAgA, tAsA, barrier=bar, eviction_policy="evict_first", cache_hint=L2_EVICT_LAST)
    elif case == "zero_mask":   # "no multicast", as the DSL's GEMMs pass when a cluster mode has one CTA
        cute.copy(load_atom, tAgA, tAsA, tma_bar_ptr=bar, mcast_mask=0)
        cute.copy(load_atom, tAgA, tAsA, tma_bar_ptr=bar, mcast_mask=cute.Int16(0))


@cute.jit
def bad_tma(src, case, tile=(32, 32)):
    layout = cute.Layout(tile, (tile[1], 1))
    load = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, layout, tile)
    store = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), src, layout, tile)
    bad_tma_kernel(*load, *store, tile, case).launch(grid=(2, 2), block=32)


@pytest.mark.parametrize("case,text,fragment", [
    ("load_no_barrier", "cute.tma_copy(tAgA, tAsA)", "a TMA load needs barrier= (the mbarrier its bytes complete)"),
    ("pred", "pred=True", "a TMA copy takes no pred"),
    ("copy_no_barrier", "cute.copy(load_atom, tAgA, tAsA)", "a TMA load needs tma_bar_ptr="),
    ("store_with_barrier", "cute.tma_copy(tBsB, tBgB, barrier=bar)", "a TMA store takes no barrier or expect_bytes"),
    ("mask_on_plain", "mcast_mask=3)", "mcast_mask=3 needs an atom of CopyBulkTensorTileG2SMulticastOp (only a static "
     "0, no multicast, goes with CopyBulkTensorTileG2SOp)"),
    ("traced_mask_on_plain", "mcast_mask=cute.Int16(bx))", "needs an atom of CopyBulkTensorTileG2SMulticastOp"),
    ("evict_bad", 'eviction_policy="evict_sometimes")', "tma_copy: eviction_policy must be one of ['evict_first', "
     "'evict_last', 'evict_normal'] or None, got 'evict_sometimes'"),
    ("evict_both", "cache_hint=L2_EVICT_LAST)", "tma_copy: give eviction_policy= or cache_hint=, not both"),
])
def test_tma_copy_errors_name_the_userskernel_line(case, text, fragment):
    with pytest.raises(TraceError) as e:
        cute.compile(bad_tma, F("Float32", (64, 64)), case)
    assert_trace_error(e, bad_tma_kernel, text, fragment)


def test_tma_copy_expects_the_tiles_bytes_and_issues_the_load_and_the_store(filecheck):
    c = cute.compile(bad_tma, F("Float32", (64, 64)), "ok")
    filecheck(c.ptx, [
        # 32 x 32 fp32 = 4096 bytes expected on the barrier, then the load on it
        "CHECK: mov.b32 [[N:%r[0-9]+]], 4096;",
        "CHECK: mbarrier.arrive.expect_tx.shared{{(::cta)?}}.b64 %rd{{[0-9]+}}, [{{.+}}], [[N]];",
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
    ])
    assert _count(c.ptx, r"cp\.async\.bulk\.tensor") == 2


def test_a_static_zero_mask_on_a_plain_tma_load_means_no_multicast():
    c = cute.compile(bad_tma, F("Float32", (64, 64)), "zero_mask")
    assert _count(c.ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes \[") == 2
    assert "multicast" not in c.ptx


@cute.kernel
def zero_mask_multicast_kernel(load_atom, load_tensor, tile):
    smem = arch.SmemAllocator()
    s_tile = smem.allocate_tensor(load_atom.dtype, cute.Layout(tile, (tile[1], 1)))
    bar = smem.allocate_mbarrier()
    tAsA, tAgA = cpasync.tma_partition(load_atom, 0, cute.Layout(2), cute.group_modes(s_tile, 0, 2),
                                       cute.group_modes(cute.local_tile(load_tensor, tile, (0, 0)), 0, 2))
    cute.copy(load_atom, tAgA, tAsA, tma_bar_ptr=bar, mcast_mask=0)


@cute.jit
def zero_mask_multicast(src, tile=(32, 32)):
    load = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), src,
                                       cute.Layout(tile, (tile[1], 1)), tile, num_multicast=2)
    zero_mask_multicast_kernel(*load, tile).launch(grid=2, block=32, cluster=(2, 1, 1))


def test_a_zero_mask_on_a_multicast_load_is_an_error():
    # no CTA would receive the tile, and its mbarrier would wait forever
    with pytest.raises(TraceError) as e:
        cute.compile(zero_mask_multicast, F("Float32", (64, 64)))
    assert_trace_error(e, zero_mask_multicast_kernel, "mcast_mask=0)", "mcast_mask=0 multicasts to no CTA")


def test_tma_copy_eviction_policies_are_l2_cache_hints(filecheck):
    from cute_py.compiler.builtins.copy import L2_EVICT_FIRST

    c = cute.compile(bad_tma, F("Float32", (64, 64)), "evict")
    filecheck(c.ptx, [
        f"CHECK: mov.b64 [[P:%rd[0-9]+]], {L2_EVICT_FIRST};",
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint "
        "{{.*}}, [[P]];",
        f"CHECK: mov.b64 [[Q:%rd[0-9]+]], {L2_EVICT_LAST};",
        "CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group.L2::cache_hint {{.*}}, [[Q]];",
    ])
