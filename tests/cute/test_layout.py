"""Layout construction, printing, evaluation, slicing, coalesce/filter and mode operations."""

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout, parse_layout as P
from cute_py.errors import CuteTypeError, CuteValueError, RankError
from cute_py.testing import layouts, layouts_with_degenerate_modes


def values(layout):
    return [layout(i) for i in range(cute.size(layout))]


def test_layout_prints_in_cute_notation_and_parses_back():
    layout = Layout((4, (2, 8)), (2, (1, 8)))
    assert str(layout) == "(4,(2,8)):(2,(1,8))"
    assert P(str(layout)) == layout
    assert str(Layout((4,), (1,))) == "(4):(1)"
    assert P("(4):(1)").shape == (4,)
    assert P("(_4,_2):(_2,_1)") == Layout((4, 2), (2, 1))
    assert eval(repr(layout), {"Layout": Layout}) == layout


@given(layouts_with_degenerate_modes() | layouts())
def test_print_parse_round_trip(layout):
    assert P(str(layout)) == layout
    assert pickle.loads(pickle.dumps(layout)) == layout


def test_default_stride_is_compact_column_major_with_zero_for_unit_modes():
    assert str(cute.make_layout((2, (3, 4)))) == "(2,(3,4)):(1,(2,6))"
    assert str(cute.make_layout((2, 1, 3))) == "(2,1,3):(1,0,2)"
    assert cute.make_layout(8, 2) == Layout(8, 2)
    assert cute.make_layout((4, 2), stride=(2, 1)) == P("(4,2):(2,1)")


def test_layouts_are_immutable_and_hashable():
    layout = Layout((4, 2), (1, 4))
    with pytest.raises(AttributeError, match="immutable"):
        layout.shape = (2, 2)
    assert {layout: 1}[Layout([4, 2], [1, 4])] == 1
    assert layout != (4, 2) and layout != Layout((4, 2), (2, 1))


def test_make_layout_concatenates_layouts():
    a, b = P("(2,2):(1,2)"), P("3:4")
    assert str(cute.make_layout(a, b)) == "((2,2),3):((1,2),4)"
    assert str(cute.make_layout(b)) == "(3):(4)"


def test_make_ordered_layout_and_make_layout_like_follow_cute():
    # examples from the comments of CuTe's layout.hpp
    assert str(cute.make_ordered_layout((2, 2, 2, 2), (0, 2, 3, 1))) == "(2,2,2,2):(1,4,8,2)"
    assert str(cute.make_layout_like(P("(2,2,2,2):(0,2,4,1)"))) == "(2,2,2,2):(0,2,4,1)"
    assert str(cute.make_layout_like(P("(2,3,4):(12,4,1)"))) == "(2,3,4):(12,4,1)"


def test_layout_is_called_with_an_index_a_coordinate_or_a_slice():
    layout = P("(4,(2,8)):(2,(1,8))")
    assert layout(5) == 2 * 1 + 1 * 1
    assert layout((1, (1, 3))) == 2 + 1 + 24
    assert layout(1, (1, 3)) == layout((1, (1, 3)))
    assert layout((1, 9)) == layout((1, (1, 4)))
    assert str(layout((None, (1, None)))) == "(4,8):(2,8)"
    assert str(layout((2, None))) == "((2,8)):((1,8))"
    sub, offset = cute.slice_and_offset((2, (None, 3)), layout)
    assert str(sub) == "(2):(1)" and offset == 4 + 24
    assert str(cute.dice((2, (None, 3)), layout)) == "(4,8):(2,8)"
    assert str(layout[1]) == "(2,8):(1,8)" and layout[0] == Layout(4, 2)
    assert [str(m) for m in layout] == ["4:2", "(2,8):(1,8)"]


def test_slice_keeps_the_function_on_the_free_modes():
    layout = P("(3,(4,5)):(20,(1,4))")
    sub, off = cute.slice_and_offset((2, (None, 3)), layout)
    assert [sub(i) + off for i in range(4)] == [layout((2, (i, 3))) for i in range(4)]


@given(layouts_with_degenerate_modes() | layouts())
def test_coalesce_keeps_the_function_and_size(layout):
    c = cute.coalesce(layout)
    assert cute.size(c) == cute.size(layout)
    assert cute.depth(c) <= 1
    assert values(c) == values(layout)


@given(layouts())
def test_coalesce_by_profile_keeps_the_rank_and_each_mode(layout):
    profile = (1,) * cute.rank(layout)
    c = cute.coalesce(layout, profile)
    assert cute.rank(c) == cute.rank(layout)
    assert values(c) == values(layout)
    for i in range(cute.rank(layout)):
        assert values(c[i]) == values(layout[i])


@given(layouts_with_degenerate_modes() | layouts())
def test_filter_keeps_the_distinct_values_in_order(layout):
    f = cute.filter(layout)
    zeros = cute.filter_zeros(layout)
    assert set(values(zeros)) == set(values(layout))
    assert values(f) == values(zeros)
    # filter drops exactly the stride-0 and size-1 modes
    kept = [(s, d) for s, d in zip(cute.flatten((layout.shape,)), cute.flatten((layout.stride,))) if s != 1 and d != 0]
    assert cute.size(f) == cute.product(tuple(s for s, _ in kept))


def test_coalesce_golden_values():
    assert str(cute.coalesce(P("(2,(1,6)):(1,(6,2))"))) == "12:1"
    assert str(cute.coalesce(P("(2,(1,6)):(1,(6,2))"), (1, 1))) == "(2,6):(1,2)"
    assert str(cute.coalesce(P("(4,1):(1,0)"))) == "4:1"
    assert str(cute.coalesce(P("(1,1):(3,5)"))) == "1:0"
    assert str(cute.coalesce(P("(2,4):(4,1)"))) == "(2,4):(4,1)"
    assert str(cute.filter(P("(4,2,3):(0,1,2)"))) == "6:1"


def test_mode_operations():
    layout = P("(2,3,4,5):(1,2,6,24)")
    assert str(cute.select(layout, [2, 0])) == "(4,2):(6,1)"
    assert str(cute.group_modes(layout, 1, 3)) == "(2,(3,4),5):(1,(2,6),24)"
    assert cute.group_modes((2, 3, 4), 0, 2) == ((2, 3), 4)
    assert str(cute.append(P("4:1"), P("3:4"))) == "(4,3):(1,4)"
    assert str(cute.prepend(P("4:1"), P("3:4"))) == "(3,4):(4,1)"
    assert str(cute.append(P("(4,3):(1,4)"), up_to_rank=4)) == "(4,3,1,1):(1,4,0,0)"
    assert cute.append((2, 3), 4) == (2, 3, 4)
    assert str(cute.flatten(P("((2,2),(3,4)):((1,2),(4,12))"))) == "(2,2,3,4):(1,2,4,12)"
    assert cute.cosize(P("(4,2):(2,1)")) == 8
    assert cute.cosize(P("((4,2),3):((3,1),12)"), mode=[0]) == 11


def test_bad_layouts_are_rejected_with_the_rule():
    with pytest.raises(RankError, match=r"stride \(1,2,3\) is not congruent to shape \(2,3\)"):
        Layout((2, 3), (1, 2, 3))
    with pytest.raises(CuteValueError, match=r"shape extents must be >= 0, got -2"):
        Layout((4, -2))
    with pytest.raises(CuteTypeError, match="must be an int"):
        Layout((4, 2.0))
    with pytest.raises(RankError, match="out of range"):
        P("(4,2):(1,4)")[2]
    with pytest.raises(RankError, match="does not match the rank"):
        P("(4,2):(1,4)")((1, 1, 1))
    with pytest.raises(RankError, match="cannot pad"):
        cute.append(P("(4,3):(1,4)"), up_to_rank=1)
    with pytest.raises(CuteValueError, match="cannot parse"):
        P("(4,2:(1,4)")
