"""GenericToSharedAsyncTileCopier on the CPU: the constructor's and the copy's rules (each one raised with its
values), the exports, and the distribution executed with ``reference.cp_async`` on numpy against an
independent expectation (row-major tile, hand-written swizzle, zeros at and past the row bound)."""

import pytest

np = pytest.importorskip("numpy")

import cute_py as cute  # noqa: E402
from cute_py import reference  # noqa: E402
from cute_py.errors import CuteError, CuteTypeError, CuteValueError, DeviceOnlyError, RankError  # noqa: E402
from cute_py.nvgpu import cpasync  # noqa: E402
from cute_py.nvgpu.cpasync.copier import EvictionPolicy, GenericToSharedAsyncTileCopier, ThreadScope  # noqa: E402
from cute_py.tensor.pointer import AddressSpace, Pointer  # noqa: E402

Copier = GenericToSharedAsyncTileCopier


def tensor(dtype, shape, stride, space=AddressSpace.smem, align=128):
    return cute.make_tensor(Pointer(dtype, space, alignment=align), cute.Layout(shape, stride))


def smem(dtype, rows, cols, stride=None, align=128):
    return tensor(dtype, (rows, cols), (cols if stride is None else stride, 1), AddressSpace.smem, align)


def gmem(dtype, rows, cols, stride=None, align=16):
    return tensor(dtype, (rows, cols), (cols if stride is None else stride, 1), AddressSpace.gmem, align)


def test_exported_from_cpasync():
    assert cpasync.GenericToSharedAsyncTileCopier is Copier
    assert cpasync.EvictionPolicy is EvictionPolicy and cpasync.ThreadScope is ThreadScope
    assert {"GenericToSharedAsyncTileCopier", "EvictionPolicy", "ThreadScope"} <= set(cpasync.__all__)
    assert [p.name for p in EvictionPolicy] == ["NORMAL", "FIRST", "LAST"]
    assert [s.name for s in ThreadScope] == ["BLOCK", "WARP"]


def test_defaults():
    c = Copier(thread_layout=cute.Layout((4, 8), (8, 1)))
    assert (c.size, c.num_threads, c.masked, c.swizzle, c.vector_bytes) == (32, 32, False, None, None)
    assert c.eviction_policy is EvictionPolicy.NORMAL and c.thread_scope is ThreadScope.BLOCK
    with pytest.raises(AttributeError):
        c.masked = True


@pytest.mark.parametrize("kw, err, match", [
    ({"thread_layout": (4, 8)}, CuteTypeError, "thread_layout must be a Layout"),
    ({"thread_layout": cute.Layout(32)}, RankError, "static rank-2 layout"),
    ({"thread_layout": cute.Layout((4, 8), (1, 2))}, CuteValueError, r"one-to-one onto the thread indices 0\.\.31"),
    ({"thread_layout": cute.Layout((64, 32), (32, 1))}, CuteValueError, "2048 threads, more than the 1024"),
    ({"thread_layout": cute.Layout((4, 16), (16, 1)), "thread_scope": ThreadScope.WARP}, CuteValueError,
     "64 threads, more than the 32 of a warp"),
    ({"num_threads": 16}, CuteValueError, r"num_threads \(16\) must be at least the thread_layout's size \(32\)"),
    ({"num_threads": 2048}, CuteValueError, r"num_threads \(2048\) exceeds the 1024"),
    ({"num_threads": 64, "thread_scope": ThreadScope.WARP}, CuteValueError, r"num_threads \(64\) exceeds the 32"),
    ({"num_threads": 40.0}, CuteTypeError, "num_threads must be a static int"),
    ({"vector_bytes": 12}, CuteValueError, "4, 8 or 16 bytes: vector_bytes must be one of them, got 12"),
    ({"vector_bytes": 32}, CuteValueError, "got 32"),
    ({"swizzle": (3, 3, 3)}, CuteTypeError, "swizzle must be None or a Swizzle"),
    ({"masked": 1}, CuteTypeError, "masked must be a bool"),
    ({"eviction_policy": "evict_first"}, CuteTypeError, "eviction_policy must be an EvictionPolicy"),
    ({"thread_scope": "warp"}, CuteTypeError, "thread_scope must be a ThreadScope"),
])
def test_constructor_rules(kw, err, match):
    kw = {"thread_layout": cute.Layout((4, 8), (8, 1)), **kw}
    with pytest.raises(err, match=match):
        Copier(**kw)


def test_the_copy_is_a_device_operation_but_checks_first():
    c = Copier(thread_layout=cute.Layout((4, 8), (8, 1)))
    with pytest.raises(DeviceOnlyError, match="GenericToSharedAsyncTileCopier.copy is a device operation"):
        c.copy(smem("Float16", 16, 64), gmem("Float16", 16, 64))
    with pytest.raises(CuteValueError, match="dst must be in shared memory, got a gmem tensor"):
        c.copy(gmem("Float16", 16, 64), gmem("Float16", 16, 64))


F16, F32 = "Float16", "Float32"
L48 = cute.Layout((4, 8), (8, 1))


@pytest.mark.parametrize("kw, dst, src, match", [
    ({}, gmem(F16, 16, 64), gmem(F16, 16, 64), "dst must be in shared memory, got a gmem tensor"),
    ({}, smem(F16, 16, 64), smem(F16, 16, 64), "src must be in global memory, got a smem tensor"),
    ({}, smem(F16, 16, 64), gmem(F32, 16, 64), "element widths differ: Float32 -> Float16"),
    ({}, tensor(F16, 64, 1), gmem(F16, 16, 64), "dst must be a rank-2"),
    ({}, tensor(F16, (16, 64), (1, 16)), gmem(F16, 16, 64), r"dst rows must be contiguous \(column stride 1\)"),
    ({}, smem(F16, 16, 64, stride=32), gmem(F16, 16, 64), "dst rows overlap: row stride 32 < 64 columns"),
    ({}, smem(F16, 16, 64), gmem(F16, 16, 32), "src must have the tile's 64 columns"),
    ({}, smem(F16, 16, 64), tensor(F16, (16, 64), (1, 16), AddressSpace.gmem), "src rows must be contiguous"),
    ({}, smem(F16, 16, 64), gmem(F16, 8, 64), r"an unmasked copy reads every row: .*: src has 8 rows, the tile 16"),
    ({"masked": True}, smem(F16, 16, 64), gmem(F16, 32, 64), "src has 32 rows, more than the tile's 16"),
    # coverage: 16 rows over 4 thread rows fine, but 64 / 8 = 8 vectors per row is not a multiple of 16 columns
    ({"thread_layout": cute.Layout((2, 16), (16, 1)), "vector_bytes": 16}, smem(F16, 16, 64), gmem(F16, 16, 64),
     r"16 bytes: the tile \(16, 64\) is not covered by the thread layout \(2, 16\) x vector \(1, 8\)"),
    ({"vector_bytes": 16}, smem(F16, 6, 64), gmem(F16, 6, 64), r"needs 6 % 4 == 0"),
    ({"vector_bytes": 16}, smem(F16, 16, 64), gmem(F16, 16, 64, align=8), "src is only known to be 8-byte aligned"),
    ({"vector_bytes": 16}, smem(F16, 16, 64, align=4), gmem(F16, 16, 64), "dst is only known to be 4-byte aligned"),
    ({"vector_bytes": 16}, smem(F16, 16, 64), gmem(F16, 16, 64, stride=68),
     r"src row stride 68 \(136 bytes\) is not a multiple of the vector"),
    ({"vector_bytes": 16}, smem(F16, 16, 64, stride=68), gmem(F16, 16, 64),
     "dst row stride 68 is not a multiple of 8 elements"),
    ({"vector_bytes": 16, "swizzle": cute.make_swizzle(3, 2, 3)}, smem(F16, 16, 64), gmem(F16, 16, 64),
     r"S<3,2,3> keeps blocks of 4 elements together, so it would split a 8-element vector"),
    ({"vector_bytes": 4}, smem("Float64", 16, 64), gmem("Float64", 16, 64), "64-bit elements do not fill a 4-byte"),
    # auto: every width fails -> every reason named
    ({}, smem(F16, 16, 66), gmem(F16, 16, 66), r"no cp.async vector fits this copy \(16 bytes: .*; 8 bytes: .*; "
                                               r"4 bytes: the tile \(16, 66\) is not covered .* 33 vectors per row % 8 == 0\)"),
])
def test_copy_rules(kw, dst, src, match):
    c = Copier(**{"thread_layout": L48, **kw})
    with pytest.raises(CuteError, match=match):
        c.copy(dst, src)


def test_copy_bounded_rules():
    with pytest.raises(CuteValueError, match="construct the copier with masked=True"):
        Copier(thread_layout=L48).copy_bounded(smem(F16, 16, 64), gmem(F16, 16, 64), 3)
    c = Copier(thread_layout=L48, masked=True)
    with pytest.raises(CuteValueError, match="src_num_valid_rows must be >= 0, got -1"):
        c.copy_bounded(smem(F16, 16, 64), gmem(F16, 16, 64), -1)
    with pytest.raises(CuteValueError, match="copy_bounded takes src with the tile's full static row extent: src "
                                             "has 8 rows, the tile 16"):
        c.copy_bounded(smem(F16, 16, 64), gmem(F16, 8, 64), 3)


def test_the_widest_vector_is_chosen():
    c = Copier(thread_layout=cute.Layout((8, 4), (4, 1)))
    assert c.plan(smem(F16, 16, 32), gmem(F16, 16, 32)).vector_bytes == 16     # 32 cols / 8 = 4 vectors
    assert c.plan(smem(F16, 16, 16), gmem(F16, 16, 16)).vector_bytes == 8      # 16 / 4 = 4 vectors
    assert c.plan(smem(F16, 16, 8), gmem(F16, 16, 8)).vector_bytes == 4        # 8 / 2 = 4
    assert c.plan(smem(F16, 16, 32), gmem(F16, 16, 32, stride=36)).vector_bytes == 8   # 72-byte rows
    assert c.plan(smem(F32, 16, 16), gmem(F32, 16, 16)).vector_bytes == 16
    # 16-byte vectors leave 8 per row, not a multiple of 16 thread columns: 8-byte vectors cover it
    c = Copier(thread_layout=cute.Layout((2, 16), (16, 1)))
    assert c.plan(smem(F16, 16, 64), gmem(F16, 16, 64)).vector_bytes == 8


# -- the distribution, executed on the CPU ------------------------------------------------------------------


def _swizzle(bits, base, shift):
    """An independent S<bits,base,shift> on element offsets (shift >= 0)."""
    def f(o):
        return o ^ ((o >> shift) & (((1 << bits) - 1) << base))
    return f


def _run(copier, dtype, rows, cols, src_stride, bound, swz):
    np_dtype = {"Float16": np.float16, "Float32": np.float32}[dtype]
    rng = np.random.default_rng(rows * 1000 + cols)
    src = rng.standard_normal(rows * src_stride + 64).astype(np_dtype)
    dst = np.full(rows * cols + 64, -7, dtype=np_dtype)   # poison, and a guard past the tile
    plan = copier.plan(smem(dtype, rows, cols), gmem(dtype, rows, cols, stride=src_stride),
                       bounded=copier.masked)
    eb = np.dtype(np_dtype).itemsize
    for t in range(copier.num_threads):
        if t >= copier.size:
            continue
        for row, so, do in copier.thread_vectors(plan, t):
            valid = bound is None or row < bound
            reference.cp_async(src, so * eb, dst, do * eb, plan.vector_bytes, None if valid else 0)
    expect = np.full_like(dst, -7)
    for r in range(rows):
        for c in range(cols):
            o = r * cols + c
            expect[swz(o) if swz else o] = src[r * src_stride + c] if bound is None or r < bound else 0
    return dst, expect


@pytest.mark.parametrize("dtype, rows, cols, layout, swz, bound, stride", [
    ("Float16", 16, 64, cute.Layout((16, 8), (8, 1)), None, None, 64),
    ("Float16", 16, 64, cute.Layout((16, 8), (8, 1)), (3, 3, 3), 5, 64),       # 128B swizzle, fp16
    ("Float16", 32, 32, cute.Layout((8, 4), (4, 1)), (2, 3, 3), 0, 40),         # 64B, padded src rows
    ("Float16", 8, 16, cute.Layout((8, 2), (1, 8)), (1, 3, 3), 8, 16),          # 32B, column-major threads
    ("Float32", 16, 32, cute.Layout((4, 8), (8, 1)), (3, 2, 3), 11, 32),        # 128B swizzle, fp32
    ("Float32", 8, 32, cute.Layout((2, 8), (8, 1)), (2, 2, 3), 3, 36),
])
def test_the_distribution_copies_each_vector_once_into_its_swizzled_place(dtype, rows, cols, layout, swz, bound,
                                                                           stride):
    c = Copier(thread_layout=layout, swizzle=cute.make_swizzle(*swz) if swz else None, masked=bound is not None,
               num_threads=layout.size() + 7 if hasattr(layout, "size") else None)
    dst, expect = _run(c, dtype, rows, cols, stride, bound, _swizzle(*swz) if swz else None)
    np.testing.assert_array_equal(dst, expect)


def test_every_vector_is_owned_by_exactly_one_thread():
    c = Copier(thread_layout=cute.Layout((4, 8), (1, 4)), vector_bytes=8)
    plan = c.plan(smem(F16, 16, 64), gmem(F16, 16, 64))
    owners = {}
    for t in range(c.size):
        for row, so, do in c.thread_vectors(plan, t):
            assert do not in owners, (t, owners.get(do))
            owners[do] = t
    assert sorted(owners) == list(range(0, 16 * 64, 4))
