"""Golden values from CuTe's documentation (media/docs/cpp/cute/02_layout_algebra.md, layout.hpp),
the C++ rejections, and regressions against pycute's known wrong answers."""

import pytest

import cute_py as cute
from cute_py import parse_layout as P
from cute_py.errors import CuteTypeError, DivisibilityError, NotInjectiveError, RankError

L = P


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("(6,2):(8,2)", "(4,3):(3,1)", "((2,2),3):((24,2),8)"),
        ("20:2", "(5,4):(4,1)", "(5,4):(8,2)"),
        ("(10,2):(16,4)", "(5,4):(1,5)", "(5,(2,2)):(16,(80,4))"),
        ("(4,3):(1,5)", "2:3", "2:3"),  # accepted by the C++ (pycute asserts)
        ("(6,2):(8,2)", "4:3", "(2,2):(24,2)"),
        ("(6,2):(8,2)", "3:1", "3:8"),
    ],
)
def test_composition_doc_examples(a, b, expected):
    assert str(cute.composition(L(a), L(b))) == expected


def test_composition_with_tilers_doc_examples():
    a = L("(12,(4,8)):(59,(13,1))")
    assert str(cute.composition(a, (L("3:4"), L("8:2")))) == "(3,(2,4)):(236,(26,1))"
    assert str(cute.composition(a, (3, 8))) == "(3,(4,2)):(59,(13,1))"
    # modes of lhs beyond the tiler are dropped, as in the C++
    assert str(cute.composition(L("(4,6,8):(1,4,24)"), (2,))) == "(2):(1)"
    assert cute.composition(a, None) == a


@pytest.mark.parametrize(
    "layout, cotarget, expected",
    [
        ("4:1", 24, "6:4"),
        ("6:4", 24, "4:1"),
        ("(4,6):(1,4)", 24, "1:0"),
        ("4:2", 24, "(2,3):(1,8)"),
        ("(2,4):(1,6)", 24, "3:2"),
        ("(2,2):(1,6)", 24, "(3,2):(2,12)"),
    ],
)
def test_complement_doc_examples(layout, cotarget, expected):
    assert str(cute.complement(L(layout), cotarget)) == expected


def test_divide_doc_examples():
    assert str(cute.logical_divide(L("(4,2,3):(2,1,8)"), L("4:2"))) == "((2,2),(2,3)):((4,1),(2,8))"
    a = L("(9,(4,8)):(59,(13,1))")
    tiler = (L("3:3"), L("(2,4):(1,8)"))
    ld = cute.logical_divide(a, tiler)
    zd = cute.zipped_divide(a, tiler)
    assert cute.product_each(ld.shape) == (9, 32)
    assert tuple(cute.product_each(m) for m in ld.shape) == ((3, 3), (8, 4))
    assert tuple(cute.product_each(m) for m in zd.shape) == ((3, 8), (3, 4))
    # the tile mode is exactly the composition
    assert str(zd[0]) == "(3,(2,4)):(177,(13,2))"
    assert zd[0] == cute.composition(a, tiler)


def test_product_doc_examples():
    assert str(cute.logical_product(L("(2,2):(4,1)"), L("6:1"))) == "((2,2),(2,3)):((4,1),(2,8))"
    assert str(cute.complement(L("(2,2):(4,1)"), 24)) == "(2,3):(2,8)"
    # 2x5 row-major block over a 3x4 column-major arrangement
    block, tiles = L("(2,5):(5,1)"), L("(3,4):(1,3)")
    blocked = cute.blocked_product(block, tiles)
    raked = cute.raked_product(block, tiles)
    assert str(blocked) == "((2,3),(5,4)):((5,10),(1,30))"
    assert str(raked) == "((3,2),(4,5)):((10,5),(30,1))"


def test_inverse_examples():
    assert str(cute.right_inverse(L("(4,8):(1,5)"))) == "4:1"
    assert str(cute.right_inverse(L("(2,4):(4,1)"))) == "(4,2):(2,1)"
    assert str(cute.left_inverse(L("(2,4):(4,1)"))) == "(4,2):(2,1)"
    assert str(cute.right_inverse(L("(4,2):(0,1)"))) == "2:4"


@pytest.mark.parametrize(
    "a, b",
    [
        ("(4,3):(1,5)", "2:6"),  # stride 6 neither divides by nor is less than 4
        ("(4,3):(1,5)", "6:1"),  # shape 6 not divisible by the 4 taken from the first mode
        ("(3,5):(1,7)", "2:4"),
    ],
)
def test_composition_rejects_what_the_cpp_rejects(a, b):
    with pytest.raises(DivisibilityError, match="composition (stride|shape) divisibility condition"):
        cute.composition(L(a), L(b))


def test_complement_rejects_non_injective_layouts():
    with pytest.raises(NotInjectiveError, match=r"injective layout, got \(2,2\):\(1,1\)"):
        cute.complement(L("(2,2):(1,1)"), 8)


def test_tiler_with_too_many_modes_is_rejected():
    with pytest.raises(RankError, match="too many modes in tiler"):
        cute.logical_divide(L("(4,4):(1,4)"), (2, 2, 2))
    with pytest.raises(RankError, match="has more modes than the layout"):
        cute.composition(L("(4,4):(1,4)"), (2, 2, 2))
    # a `_` tiler mode keeps its mode and regroups it as (first, second): a leaf mode has no such split
    with pytest.raises(RankError, match="must have rank 2"):
        cute.zipped_divide(L("(4,4):(1,4)"), (None, 2))


def test_tile_to_shape_rejects_non_dividing_blocks():
    with pytest.raises(DivisibilityError, match=r"block shape \(3,4\) does not divide the target shape \(8,8\)"):
        cute.tile_to_shape(L("(3,4):(1,3)"), (8, 8))
    with pytest.raises(RankError, match="more modes than the target shape"):
        cute.tile_to_shape(L("(2,2,2):(1,2,4)"), (8, 8))


def test_tile_to_shape_examples():
    # an 8x8 K-major atom tiled to 32x64 and to 64x32 with the second mode first
    atom = L("(8,8):(8,1)")
    assert str(cute.tile_to_shape(atom, (32, 64))) == "((8,4),(8,8)):((8,64),(1,256))"
    assert str(cute.tile_to_shape(atom, (32, 64), (1, 0))) == "((8,4),(8,8)):((8,512),(1,64))"


# -- pycute's known wrong answers, kept as regressions ------------------------------------


def test_logical_product_with_an_int_tiler_is_a_product_not_a_divide():
    # pycute's logical_product(A, 6) calls logical_divide and returns ((2,3),1):((4,1),0)
    a = L("(2,2):(4,1)")
    assert cute.logical_product(a, 6) == cute.logical_product(a, L("6:1"))
    assert str(cute.logical_product(a, 6)) == "((2,2),(2,3)):((4,1),(2,8))"


def test_left_inverse_with_non_divisible_strides_is_rejected_not_wrong():
    # pycute returns (2,3):(6,1) for (3,2):(2,3), which is not a left inverse
    with pytest.raises(DivisibilityError, match="left_inverse divisibility condition: stride 3 must be divisible by 2"):
        cute.left_inverse(L("(3,2):(2,3)"))
    with pytest.raises(DivisibilityError, match="left_inverse divisibility"):
        cute.left_inverse(L("(2,5):(5,2)"))


def test_wrong_argument_types_are_type_errors():
    with pytest.raises(CuteTypeError, match="composition: lhs must be a Layout"):
        cute.composition((4, 2), L("2:1"))
    with pytest.raises(CuteTypeError, match="must be an int or a tuple of ints"):
        cute.composition(L("4:1"), "2:1")
    with pytest.raises(CuteTypeError, match="complement: layout must be a Layout"):
        cute.complement(4, 8)
