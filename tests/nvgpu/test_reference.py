"""The CPU reference: each instruction's semantics, and whole tiled copies round-tripping exactly."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout
from cute_py import reference as ref
from cute_py.reference import tma as ref_tma
from cute_py.nvgpu import cpasync
from cute_py.nvgpu.tma import TmaDescriptor, TmaSwizzle
from cute_py.runtime import make_fake_tensor, value_of
from cute_py.nvgpu.warpgroup.smem import SmemLayoutAtomKind as K


def test_cp_async_zero_fills_past_src_size():
    src = np.arange(64, dtype=np.uint8)
    dst = np.full(64, 0xFF, dtype=np.uint8)
    ref.cp_async(src, 16, dst, 32, 16, src_size=6)
    assert dst[32:38].tolist() == list(range(16, 22)) and dst[38:48].tolist() == [0] * 10
    assert dst[:32].tolist() == [0xFF] * 32
    with pytest.raises(cute.CuteValueError, match="aligned"):
        ref.cp_async(src, 4, dst, 0, 16)


def _desc(dtype=cute.Float32, dims=(12, 6), box=(8, 4), swizzle=TmaSwizzle.NONE):
    eb = dtype.width // 8
    return TmaDescriptor(dtype, dims, (dims[0] * eb * 4 // 4,) if len(dims) == 2 else (), box, (1,) * len(dims),
                         swizzle).validate()


def test_tma_load_zero_fills_out_of_bounds_and_store_skips_them():
    d = _desc()
    g = np.arange(72, dtype=np.float32) + 1  # a 6x12 row-major matrix: dims (12, 6)
    smem = np.zeros(256, dtype=np.uint8)
    bar = ref.MBarrier(1)
    bar.arrive_and_expect_tx(8 * 4 * 4)
    ref.tma_load(d, g, (8, 4), smem, 0, mbar=bar)
    box = smem.view(np.float32)[:32].reshape(4, 8)
    assert box[0, :4].tolist() == [57, 58, 59, 60] and box[0, 4:].tolist() == [0] * 4
    assert box[2:].tolist() == [[0] * 8] * 2  # rows 6 and 7 are outside
    assert bar.try_wait(0)
    out = np.zeros(72, dtype=np.float32)
    ref.tma_store(d, smem, 0, (8, 4), out)
    assert out.reshape(6, 12)[4:6, 8:12].tolist() == g.reshape(6, 12)[4:6, 8:12].tolist()
    assert np.count_nonzero(out) == 8


def test_tma_load_swizzles_the_smem_byte_address():
    d = TmaDescriptor(cute.Float16, (64, 8), (128,), (64, 8), (1, 1), TmaSwizzle.B128).validate()
    g = np.arange(512, dtype=np.uint16)
    smem = np.zeros(1024, dtype=np.uint8)
    ref.tma_load(d, g, (0, 0), smem, 0)
    s = smem.view(np.uint16)
    sw = cute.Swizzle(3, 3, 3)  # the same swizzle in fp16 units
    assert all(s[sw(i)] == g[i] for i in range(512))


def test_multicast_load_lands_in_every_cta():
    d = _desc(dims=(8, 4), box=(8, 4))
    g = np.arange(32, dtype=np.float32)
    smems = [np.zeros(128, dtype=np.uint8) for _ in range(3)]
    bars = [ref.MBarrier(1) for _ in range(3)]
    for b in bars:
        b.arrive_and_expect_tx(128)
    ref.tma_load(d, g, (0, 0), None, 0, mbar=bars, mcast=smems)
    assert all(np.array_equal(s.view(np.float32), g) for s in smems) and all(b.try_wait(0) for b in bars)


@pytest.mark.parametrize(
    "kind, old, new, want",
    [
        (cpasync.ReductionOp.ADD, [5, 7], [1, 2], [6, 9]),
        (cpasync.ReductionOp.MIN, [5, 7], [6, 2], [5, 2]),
        (cpasync.ReductionOp.MAX, [5, 7], [6, 2], [6, 7]),
        (cpasync.ReductionOp.INC, [5, 7], [5, 9], [0, 8]),
        (cpasync.ReductionOp.DEC, [0, 7, 3], [4, 5, 9], [4, 5, 2]),
        (cpasync.ReductionOp.AND, [0b1100, 7], [0b1010, 1], [0b1000, 1]),
        (cpasync.ReductionOp.OR, [0b1100, 7], [0b1010, 8], [0b1110, 15]),
        (cpasync.ReductionOp.XOR, [0b1100, 7], [0b1010, 7], [0b0110, 0]),
    ],
)
def test_tma_reduce_kinds(kind, old, new, want):
    n = len(old)
    d = TmaDescriptor(cute.Uint32, (4,), (), (4,), (1,)).validate()
    g = np.array(old + [0] * (4 - n), dtype=np.uint32)
    smem = np.zeros(128, dtype=np.uint8)
    smem.view(np.uint32)[:4] = new + [0] * (4 - n)
    ref.tma_reduce(d, smem, 0, (0,), g, kind)
    assert g[:n].tolist() == want


def test_float_reductions_reject_bitwise_kinds():
    d = TmaDescriptor(cute.Float32, (4,), (), (4,), (1,)).validate()
    with pytest.raises(cute.CuteValueError, match="integers only"):
        ref.tma_reduce(d, np.zeros(128, np.uint8), 0, (0,), np.zeros(4, np.float32), cpasync.ReductionOp.XOR)


def test_dsmem_store_completes_transactions_on_the_peer():
    peer = np.zeros(64, dtype=np.uint8)
    bar = ref.MBarrier(1)
    bar.arrive_and_expect_tx(8)
    ref.dsmem_store(np.array([1, 2], dtype=np.uint32).tobytes(), peer, 16, bar)
    assert peer.view(np.uint32)[4:6].tolist() == [1, 2] and bar.try_wait(0)


# -- whole tiled copies ------------------------------------------------------------------------------

DTYPES = [cute.Float16, cute.BFloat16, cute.Float32, cute.Int8, cute.Float64]


@st.composite
def tma_configs(draw):
    dtype = draw(st.sampled_from(DTYPES))
    eb = dtype.width // 8
    kind = draw(st.sampled_from([None, "K_SW32", "K_SW64", "K_SW128", "MN_SW128", "MN_SW64"]))
    if kind is None:
        inner = draw(st.sampled_from([x for x in (16, 32, 64, 128) if x * eb % 16 == 0 and x * eb <= 256]))
        outer = draw(st.sampled_from([2, 4, 8, 16]))
        k_major = draw(st.booleans())
        tile = (outer, inner) if k_major else (inner, outer)
        smem = Layout(tile, (inner, 1)) if k_major else Layout(tile, (1, inner))
    else:
        atom = cute.make_smem_layout_atom(K[kind], dtype.width)
        k_major = kind.startswith("K")
        reps = (draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2])))
        tile = tuple(a * r for a, r in zip(cute.product_each(atom.shape), reps))
        smem = cute.tile_to_shape(atom, tile)
    m = max(1, tile[0] * draw(st.integers(1, 3)) - draw(st.sampled_from([0, 0, 3])))
    n = tile[1] * draw(st.integers(1, 3))
    align = 16 // eb
    if k_major:
        n = -(-n // align) * align
        shape, stride = (m, n), (n, 1)
    else:
        m = -(-m // align) * align
        shape, stride = (m, n), (1, m)
    mc = draw(st.sampled_from([1, 1, 2, 4]))
    dynamic = draw(st.booleans())  # the gmem extents and strides as run-time values (as CuTe sees a kernel's)
    return dtype, shape, stride, smem, tile, mc, dynamic


@settings(max_examples=25)
@given(tma_configs())
def test_tma_tiled_copy_round_trips_through_swizzled_smem(cfg):
    dtype, shape, stride, smem, tile, mc, dynamic = cfg
    g = make_fake_tensor(dtype, shape, stride, dynamic=dynamic)
    op = cpasync.CopyBulkTensorTileG2SMulticastOp() if mc > 1 else cpasync.CopyBulkTensorTileG2SOp()
    try:
        load, load_t = cpasync.make_tiled_tma_atom(op, g, smem, tile, mc)
    except cpasync.TmaError as e:
        # boxes too small to split across the CTAs, or into 128-byte aligned pieces
        assert "multicast" in str(e) or "128-byte aligned" in str(e)
        return
    store, store_t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), g, smem, tile)
    gl = value_of(g.layout)
    n = cute.cosize(gl)
    rng = np.random.default_rng(n)
    src = rng.integers(1, 250, size=n).astype(dtype.storage_dtype)
    dst = np.zeros_like(src)
    tiles = ref.run_tma_copy(src, dst, load, load_t, store, store_t, smem, tile, mc, gl)
    assert tiles == cute.product(tuple(-(-a // b) for a, b in zip(shape, tile)))
    idx = np.array([gl(i) for i in range(cute.size(gl))])
    assert np.array_equal(dst[idx], src[idx])


@settings(max_examples=15)
@given(tma_configs())
def test_tma_boxes_cover_the_gmem_tensor_exactly_once(cfg):
    dtype, shape, stride, smem, tile, mc, dynamic = cfg
    g = make_fake_tensor(dtype, shape, stride, dynamic=dynamic)
    op = cpasync.CopyBulkTensorTileG2SMulticastOp() if mc > 1 else cpasync.CopyBulkTensorTileG2SOp()
    try:
        atom, tma = cpasync.make_tiled_tma_atom(op, g, smem, tile, mc)
    except cpasync.TmaError:
        return
    gl = value_of(g.layout)
    counts = np.zeros(cute.cosize(gl), dtype=np.int64)
    grid = tuple(-(-a // b) for a, b in zip(shape, tile))
    for t in range(cute.product(grid)):
        gA = cute.local_tile(tma, tile, cute.idx2crd(t, grid))
        sA = cute.make_tensor(cute.make_ptr(dtype, None, cute.AddressSpace.smem, 1024), smem)
        for cta in range(mc):  # each CTA of a multicast group loads its share of every box
            _, tAgA = cpasync.tma_partition(atom, cta, Layout(mc), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
            iters, rest = ref_tma._iters(tAgA.layout)
            for k in range(iters):
                for j in range(rest):
                    elems = ref_tma._box_elements(atom.descriptor, ref_tma._tma_coord(tAgA, k, j))
                    np.add.at(counts, elems[elems >= 0], 1)
    idx = np.array([gl(i) for i in range(cute.size(gl))])
    assert counts[idx].min() == 1 and counts[idx].max() == 1
    assert counts.sum() == len(idx)


def test_cp_async_tiled_copy_with_partial_edge_tiles():
    from cute_py.atom import make_tiled_copy_tv

    for shape, smem in [((100, 72), Layout((64, 32), (32, 1))),
                        ((70, 64), cute.tile_to_shape(cute.make_smem_layout_atom(K.K_SW128, 16), (64, 64)))]:
        g = Layout(shape, (shape[1], 1))
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(cpasync.LoadCacheMode.GLOBAL), cute.Float16, 128)
        tiler = cute.product_each(smem.shape)
        tc = make_tiled_copy_tv(atom, Layout((16, tiler[1] // 8), (tiler[1] // 8, 1)), Layout((1, 8)))
        src = (np.arange(cute.cosize(g)) % 1000).astype(np.float16)
        dst = np.zeros_like(src)
        ref.run_cp_async_copy(src, dst, tc, g, smem, tiler)
        assert np.array_equal(src, dst)
