"""Tensors, pointers, dtypes, copy atoms, tiled copies and their partitions."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout, parse_layout as P
from cute_py.errors import CuteTypeError, CuteValueError
from cute_py.runtime import make_fake_tensor
from cute_py.testing import compact_layouts


def test_dtypes_have_widths_and_numpy_types():
    assert cute.Float16.width == 16 and cute.BFloat16.width == 16 and cute.Float8E4M3FN.width == 8
    assert cute.Float32.numpy_dtype == np.float32 and cute.BFloat16.numpy_dtype is None
    assert cute.BFloat16.storage_dtype == np.uint16 and cute.Int64.signed and not cute.Uint8.signed
    assert cute.dtypes.dtype_of("bfloat16") is cute.BFloat16
    with pytest.raises(CuteTypeError, match="unknown element type"):
        cute.dtypes.dtype_of("float7")


def test_pointers_track_alignment_through_offsets():
    p = cute.make_ptr(cute.Float16, 0x1000, assumed_align=128)
    assert (p + 8).alignment == 16 and (p + 64).alignment == 128 and (p + 1).alignment == 2
    assert (p + 8).address == 0x1010
    with pytest.raises(CuteValueError, match="not 64-byte aligned"):
        cute.make_ptr(cute.Float32, 0x1010, assumed_align=64)
    with pytest.raises(CuteValueError, match="power of two"):
        cute.make_ptr(cute.Float32, None, assumed_align=24)


def test_fake_tensors_describe_gmem_without_storage():
    t = make_fake_tensor(cute.Float16, (512, 256), (256, 1), assumed_align=16)
    assert t.shape == (512, 256) and t.element_type is cute.Float16 and t.memspace is cute.AddressSpace.gmem
    assert t.iterator.address is None
    with pytest.raises(CuteValueError, match="cannot be read on the host"):
        t[(0, 0)]


def test_host_tensor_indexing_slicing_and_tiling():
    a = np.arange(96, dtype=np.float32)
    t = cute.make_tensor(a, Layout((8, 12), (12, 1)))
    assert t[(2, 3)] == 27 and t(2, 3) == 27
    col = t[(None, 3)]
    assert list(col.to_numpy()) == [3 + 12 * i for i in range(8)]
    tile = cute.local_tile(t, (4, 4), (1, 2))
    assert tile.to_numpy().tolist() == a.reshape(8, 12)[4:8, 8:12].tolist()
    part = cute.local_partition(t, Layout((2, 4)), 5)  # thread (1, 2) of a 2x4 thread grid
    assert part.to_numpy().tolist() == a.reshape(8, 12)[1::2, 2::4].tolist()
    t[(0, 0)] = -1
    assert a[0] == -1
    with pytest.raises(CuteValueError, match="beyond the 96 elements"):
        cute.make_tensor(a, Layout((8, 13), (13, 1)))


def test_local_tile_with_projection_drops_modes():
    a = np.arange(64 * 32, dtype=np.float32)
    mA = cute.make_tensor(a, Layout((64, 32), (32, 1)))  # (M, K)
    gA = cute.local_tile(mA, (16, 8, 4), (1, 2, None), proj=(1, None, 1))  # (BM, BK, k)
    assert gA.shape == (16, 4, 8)
    assert gA[(0, 0, 0)] == a[16 * 32]


@given(st.lists(st.integers(1, 6), min_size=1, max_size=3), st.data())
def test_identity_tensor_returns_its_coordinates(shape, data):
    shape = tuple(shape)
    ident = cute.make_identity_tensor(shape)
    i = data.draw(st.integers(0, cute.product(shape) - 1))
    c = cute.idx2crd(i, shape)
    assert ident[c] == c and ident[i] == c


def test_recast_tensor_reinterprets_the_same_bytes():
    a = np.arange(16, dtype=np.uint16)
    t = cute.make_tensor(a, Layout((4, 4), (4, 1)))
    r = cute.recast_tensor(t, cute.Uint32)
    assert r.shape == (4, 2)
    assert r[(1, 0)] == int(a[4]) | (int(a[5]) << 16)
    g = make_fake_tensor(cute.Float16, (64, 64), (64, 1))
    assert cute.recast_tensor(g, cute.Uint8).layout == P("(64,128):(128,1)")


def test_make_fragment_like_and_domain_offset():
    frag = cute.make_fragment_like(P("((4,2),3,5):((1,0),40,8)"), cute.Float32)
    assert frag.layout == P("((4,2),3,5):((1,0),20,4)")
    a = np.arange(32, dtype=np.int32)
    t = cute.make_tensor(a, Layout((4, 8), (8, 1)))
    moved = cute.domain_offset((1, 2), t)
    assert moved[(0, 0)] == 10 and moved[(1, 1)] == 19


# -- copy atoms and tiled copies ------------------------------------------------------------------


def _universal(dtype, bits):
    return cute.make_copy_atom(cute.CopyUniversalOp(), dtype, bits)


def test_copy_atom_tv_layouts_are_cutes():
    atom = _universal(cute.Float16, 128)
    assert str(atom.thr_id) == "1:0"
    assert str(atom.layout_src_tv) == "(1,8):(0,1)" and atom.layout_dst_tv == atom.layout_src_tv
    assert atom.num_values == 8
    with pytest.raises(CuteValueError, match="not a whole number of Float32"):
        _universal(cute.Float32, 48)


@given(compact_layouts(max_rank=2, max_depth=1, max_size=32), st.sampled_from([1, 2, 4]))
def test_a_tiled_copy_partitions_the_tile_exactly_once(thr, vec):
    atom = _universal(cute.Float32, 32 * vec)
    val = Layout((vec, 1)) if len(thr) == 2 else Layout(vec)
    tc = cute.make_tiled_copy_tv(atom, thr, val)
    tile = tc.tiler_mn
    data = np.arange(cute.product(tile), dtype=np.float32)
    t = cute.make_tensor(data, Layout(tile))
    seen = []
    for i in range(tc.size):
        p = tc.get_slice(i).partition_S(t)
        seen.extend(int(p[j]) for j in range(cute.size(p)))
        assert cute.size(p.layout[0]) == vec  # the atom's vector first
    assert sorted(seen) == list(range(cute.product(tile)))


def test_thread_partition_of_a_row_major_tile_reads_contiguous_vectors():
    atom = _universal(cute.Float32, 128)
    tc = cute.make_tiled_copy_tv(atom, Layout((32, 8), (8, 1)), Layout((1, 4)))
    assert tc.tiler_mn == (32, 32)
    g = cute.make_tensor(np.arange(64 * 64, dtype=np.float32), Layout((64, 64), (64, 1)))
    p = tc.get_slice(9).partition_S(g)
    assert str(p.layout) == "((4,1),2,2):((1,0),2048,32)"
    assert [p[(i, 0, 0)] for i in range(4)] == [68, 69, 70, 71]
    frag = cute.make_fragment_like(p)
    assert tc.get_slice(9).retile_S(frag).shape == frag.shape


def test_partition_errors_name_the_shapes():
    atom = _universal(cute.Float32, 32)
    tc = cute.make_tiled_copy_tv(atom, Layout((16, 4), (4, 1)), Layout((1, 1)))
    t = cute.make_tensor(np.zeros(64 * 6, np.float32), Layout((64, 6), (6, 1)))
    with pytest.raises(CuteValueError, match=r"tile \(16,4\) does not divide the tensor's shape \(64,6\)"):
        tc.get_slice(0).partition_S(t)
    with pytest.raises(CuteValueError, match="out of range"):
        tc.get_slice(64)


def test_a_recast_to_wider_elements_rounds_and_refuses_stores_where_it_covers_more():
    a = np.arange(16, dtype=np.float16)
    pair = cute.make_tensor(a, Layout(2))  # two fp16 elements: half of a 64-bit element's bits
    wide = cute.recast_tensor(pair, cute.Uint64)
    assert wide.layout == Layout(1, 1)  # CuTe's rounding
    assert wide[0] == a[:4].view(np.uint64)[0]  # reading is allowed
    for store in (lambda: wide.__setitem__(0, 7), lambda: wide[None].__setitem__(0, 7),
                  lambda: cute.recast_tensor(wide, cute.Float16).__setitem__(0, 7)):
        with pytest.raises(cute.DivisibilityError, match=r"store through this tensor is refused: the Float16 tensor "
                           r"with layout 2:1 seen as Uint64 \(1:1\) covers Uint64 elements only partly"):
            store()
    assert list(a) == list(range(16))  # nothing was written
    # an exact widening stores
    quad = cute.recast_tensor(cute.make_tensor(a, Layout((4, 2), (1, 8))), cute.Uint64)
    assert quad.layout == Layout((1, 2), (1, 2))
    quad[(0, 1)] = 0
    assert list(a[8:12]) == [0, 0, 0, 0] and list(a[:8]) == list(range(8))
