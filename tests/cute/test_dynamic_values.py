"""Layouts with run-time (dynamic) leaves: evaluation emits arithmetic, static-only decisions raise."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout
from cute_py.errors import StaticValueRequired
from cute_py.testing import RuntimeInt, layouts, value_of


@given(layouts(max_size=128), st.data())
def test_a_layout_evaluates_a_runtime_index_like_a_static_one(layout, data):
    i = data.draw(st.integers(0, cute.size(layout) - 1))
    r = layout(RuntimeInt(i))
    assert value_of(r) == layout(i)


def test_runtime_shapes_print_as_question_marks_and_evaluate():
    m, n = RuntimeInt(100), RuntimeInt(60)
    gmem = Layout((m, n), (n, 1))
    assert str(gmem) == "(?,?):(?,1)"
    assert value_of(gmem((3, 7))) == 3 * 60 + 7
    assert value_of(cute.size(gmem)) == 6000


def test_tiling_a_runtime_shaped_layout_by_a_static_tiler():
    m, n = RuntimeInt(256), RuntimeInt(96)
    gmem = Layout((m, n), (n, 1))
    tiled = cute.zipped_divide(gmem, (Layout(128, 1), Layout(32, 1)))
    assert str(tiled) == "((128,32),(?,?)):((?,1),(?{div=128},32))"   # n * 128: a multiple of 128
    assert value_of(tiled.shape[1]) == (2, 3)
    static = cute.zipped_divide(Layout((256, 96), (96, 1)), (Layout(128, 1), Layout(32, 1)))
    for i in range(0, cute.size(static), 97):
        c = cute.idx2crd(i, static.shape)
        assert value_of(tiled(c)) == static(c)


def test_complement_with_a_runtime_cotarget_keeps_it_dynamic():
    c = cute.complement(Layout(4, 1), RuntimeInt(24))
    assert str(c) == "?:4" and value_of(c.shape) == 6


def test_static_only_operations_name_the_value_that_must_be_static():
    with pytest.raises(StaticValueRequired, match="left_inverse needs static strides"):
        cute.left_inverse(Layout((4, 8), (1, RuntimeInt(4))))
    with pytest.raises(StaticValueRequired, match="complement needs static strides"):
        cute.complement(Layout((4, 8), (1, RuntimeInt(8))), 64)
    with pytest.raises(StaticValueRequired, match="must be a static int"):
        cute.make_ordered_layout((2, 3), (0, RuntimeInt(1)))


def test_runtime_values_are_never_memoised():
    x = RuntimeInt(8)
    with pytest.raises(TypeError):
        hash(x)
    a = cute.composition(Layout((4, x), (1, 4)), Layout(2, 1))
    b = cute.composition(Layout((4, x), (1, 4)), Layout(2, 1))
    assert a is not b
