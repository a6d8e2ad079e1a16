"""What porting CuTe C++ and CuTe DSL code needs from the algebra: index-to-coordinate methods of a layout,
elem_less on arithmetic tuples and run-time coordinates, local_tile with a projection and more coordinate
modes than the tiler (batched GEMMs), max_alignment, run-time coordinates into a TMA tensor's stride-0 mode,
and the identity swizzles."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout, Swizzle
from cute_py.errors import CuteValueError
from cute_py.nvgpu import cpasync
from cute_py.runtime import make_fake_tensor
from cute_py.testing import RuntimeBool, RuntimeInt, compact_layouts, value_of


@given(compact_layouts(max_size=64), st.data())
def test_get_coord_methods_invert_a_compact_layout(layout, data):
    idx = data.draw(st.integers(0, cute.size(layout) - 1))
    hier = layout.get_hier_coord(idx)
    flat = layout.get_flat_coord(idx)
    assert cute.is_congruent(hier, layout.shape)
    assert layout(hier) == layout(flat) == idx
    assert layout(layout.get_1d_coord(idx)) == idx
    if isinstance(layout.shape, tuple) and len(layout.shape) > 1:
        assert len(flat) == len(layout.shape) and all(isinstance(x, int) for x in flat)


def test_get_coord_of_an_index_the_layout_does_not_reach_is_an_error():
    with pytest.raises(CuteValueError, match=r"the index 40 splits into the coordinate \(1,0\) of \(4,8\):\(8,1\), "
                                             r"which maps to 8"):
        Layout((4, 8), (8, 1)).get_hier_coord(40)


def test_elem_less_takes_arithmetic_tuples_bases_and_run_time_coordinates():
    assert cute.elem_less(cute.ArithTuple((1, 2)), (3, 4)) is True
    assert cute.elem_less(cute.E(1) * 3, (3, 4)) is True  # the coordinate (0,3)
    assert cute.elem_less(cute.E(1) * 4, (3, 4)) is False
    r = cute.elem_less((RuntimeInt(1), 2), (3, 4))
    assert isinstance(r, RuntimeBool) and value_of(r) is True
    assert value_of(cute.elem_less((RuntimeInt(1), RuntimeInt(7)), (3, 4))) is False
    assert cute.elem_less((RuntimeInt(1), 5), (3, 4)) is False  # a static False decides alone
    with pytest.raises(cute.StaticValueRequired):
        bool(r)


def test_local_tile_of_a_batched_gemm_projects_the_tiler_and_keeps_the_batch_mode():
    # the line of every batched GEMM: A is (M,K,L); the tile of (m, k-rest, l)
    mA = cute.make_identity_tensor((256, 128, 3))
    gA = cute.local_tile(mA, (64, 32, 16), (1, 2, None, 2), proj=(1, None, 1))
    assert str(gA.layout) == "(64,16,8):(1@0,1@1,16@1)"
    assert tuple(gA.engine.origin) == (64, 0, 2)
    assert gA[(3, 5, 7)] == (64 + 3, 5 + 16 * 7, 2)


def test_max_alignment_of_layouts_and_swizzled_layouts():
    assert cute.max_alignment(Layout((4, 8), (8, 1))) == 32 == Layout((4, 8), (8, 1)).max_alignment
    assert cute.max_alignment(Layout((8, 8), (1, 16))) == 8
    assert cute.max_alignment(Layout(0, 1)) == 1
    sw = cute.parse_layout("S<3,4,3> o 0 o (8,64):(64,1)")
    assert cute.max_alignment(sw) == 16


def test_a_run_time_coordinate_into_a_tma_tensors_stride_0_mode():
    g = make_fake_tensor(cute.Float16, (64, 8, 4), (1, 64, 0))
    _, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), g, Layout((64, 8)), (64, 8))
    assert str(t.layout) == "(64,8,4):(1@0,1@1,0)"
    assert t[(0, 0, RuntimeInt(2))] == (0, 0)
    assert value_of(t[(RuntimeInt(5), RuntimeInt(1), RuntimeInt(2))]) == (5, 1)
    assert str(cute.local_tile(t, (64, 8), (0, 0, RuntimeInt(2))).layout) == "(64,8):(1@0,1@1)"


@given(st.integers(1, 6), st.integers(0, 6), st.integers(1, 6), st.integers(0, 6))
def test_every_swizzle_of_no_bits_is_the_identity(m1, s1, m2, s2):
    a, b = Swizzle(0, m1, s1), Swizzle(0, m2, s2)
    assert a == b and hash(a) == hash(b) and a.is_identity
    assert all(a(x) == x for x in range(256))
    assert Swizzle(1, m1, max(s1, 1)) != a
    assert Swizzle(1, m1, max(s1, 1)).is_identity is False and a.is_identity is True
