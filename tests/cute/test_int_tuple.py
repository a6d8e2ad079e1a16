"""IntTuple functions: golden values from CuTe's docs and tests, and their laws."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cute_py as cute
from cute_py.errors import CuteTypeError, DivisibilityError, RankError
from cute_py.core.coords import compact_col_major, compact_order, compact_row_major
from cute_py.core.int_tuple import flatten, unflatten
from cute_py.core.normalise import as_int_tuple
from cute_py.core.notation import fmt
from cute_py.testing import divisors, layouts, shapes


@pytest.mark.parametrize(
    "fn, args, expected",
    [
        (cute.product, ((2, (3, 4)),), 24),
        (cute.product, ((),), 1),
        (cute.product_each, ((2, (3, 4), 5),), (2, 12, 5)),
        (cute.product_each, (7,), (7,)),
        (cute.rank, ((2, (3, 4)),), 2),
        (cute.rank, (5,), 1),
        (cute.depth, (5,), 0),
        (cute.depth, ((2, (3, 4)),), 2),
        (cute.depth, ((),), 1),
        (flatten, ((2, (3, (4, 5)), 6),), (2, 3, 4, 5, 6)),
        (flatten, (4,), 4),
        # shape_div from the CuTe docs: fold 40 through (4,5,6)
        (cute.shape_div, ((4, 5, 6), 40), (1, 1, 3)),
        (cute.shape_div, ((4, 5, 6), (2, 5, 3)), (2, 1, 2)),
        (cute.shape_div, (6, 2), 3),
        (cute.shape_div, (2, 6), 1),
        (cute.shape_div, (12, (2, 3)), 2),
        (cute.ceil_div, (7, 2), 4),
        (cute.ceil_div, ((7, 9), (2, 4)), (4, 3)),
        (cute.ceil_div, ((7, 9), (2,)), (4, 9)),
        (cute.ceil_div, ((4, 5, 6), 40), (1, 1, 3)),
        (cute.ceil_div, ((2, 2), 3), (1, 1)),
        (cute.prefix_product, ((2, 3, 4),), (1, 2, 6)),
        (cute.prefix_product, ((2, (3, 4), 5),), (1, (2, 6), 24)),
        (cute.suffix_product, ((2, 3, 4),), (12, 4, 1)),
        (cute.suffix_product, ((2, (3, 4), 5),), (60, (20, 5), 1)),
        (compact_col_major, ((2, 1, 3),), (1, 0, 2)),
        (compact_row_major, ((2, 3, 4),), (12, 4, 1)),
        (compact_order, ((2, 2, 2, 2), (0, 2, 3, 1)), (1, 4, 8, 2)),
        (compact_order, ((2, (3, 4)), (1, 0)), (12, (1, 3))),
        (cute.inner_product, ((2, (3, 4)), (5, (6, 7))), 2 * 5 + 3 * 6 + 4 * 7),
        (cute.elem_scale, ((2, 3), (4, (5, 6))), (8, 90)),
        (cute.is_congruent, ((2, (3, 4)), (5, (6, 7))), True),
        (cute.is_congruent, ((2, (3, 4)), (5, 6)), False),
        (cute.is_weakly_congruent, (5, (6, 7)), True),
        (cute.is_weakly_congruent, ((2, 3), (6, (7, 8))), True),
        (cute.is_weakly_congruent, ((2, (3, 4)), (6, 7)), False),
        (cute.is_compatible, (24, (2, (3, 4))), True),
        (cute.is_compatible, ((6, 4), (2, (3, 4))), False),
        (cute.is_compatible, ((2, 12), (2, (3, 4))), True),
        (cute.elem_less, ((1, 2), (2, 3)), True),
        (cute.elem_less, ((1, 3), (2, 3)), False),
        (cute.idx2crd, (5, (2, 3)), (1, 2)),
        (cute.idx2crd, (17, (2, (3, 4))), (1, (2, 2))),
        (cute.idx2crd, ((1, 5), (2, (3, 4))), (1, (2, 1))),
        (cute.crd2idx, ((1, (2, 2)), (2, (3, 4))), 17),
        (cute.crd2idx, ((1, 5), (2, (3, 4))), 11),
        (cute.crd2idx, ((1, 2), (2, 3), (3, 1)), 5),
        (cute.crd2idx, (7, (2, 3), (3, 1)), 1 * 3 + 3 * 1),
        (cute.size, ((2, (3, 4)), (1,)), 12),
    ],
)
def test_int_tuple_golden_values(fn, args, expected):
    assert fn(*args) == expected


def test_size_rank_depth_accept_layouts_and_modes():
    layout = cute.Layout((4, (2, 8)), (2, (1, 8)))
    assert cute.size(layout) == 64
    assert cute.size(layout, mode=[1]) == 16
    assert cute.size(layout, mode=[1, 1]) == 8
    assert cute.rank(layout) == 2 and cute.depth(layout) == 2
    assert cute.rank(layout, mode=[1]) == 2


@given(shapes(max_size=512), st.data())
def test_crd2idx_inverts_idx2crd(shape, data):
    i = data.draw(st.integers(0, cute.size(shape) - 1))
    c = cute.idx2crd(i, shape)
    assert cute.is_congruent(c, shape)
    assert cute.crd2idx(c, shape) == i
    assert cute.elem_less(flatten(c), flatten(shape)) or not isinstance(c, tuple)


@given(shapes(max_size=512))
def test_prefix_product_is_the_compact_column_major_stride(shape):
    pre = cute.prefix_product(shape)
    for i in range(cute.size(shape)):
        assert cute.crd2idx(cute.idx2crd(i, shape), shape, pre) == i


@given(shapes(max_size=512))
def test_suffix_product_enumerates_row_major(shape):
    suf = cute.suffix_product(shape)
    seen = {cute.crd2idx(cute.idx2crd(i, shape), shape, suf) for i in range(cute.size(shape))}
    assert seen == set(range(cute.size(shape)))


@given(shapes(max_size=512), st.data())
def test_ceil_div_and_shape_div_by_a_prefix_divisor_keep_the_size(shape, data):
    flat = flatten(shape) if isinstance(shape, tuple) else (shape,)
    k = data.draw(st.integers(0, len(flat) - 1))
    n = cute.product(flat[:k]) * data.draw(st.sampled_from(divisors(flat[k])))
    q = cute.ceil_div(shape, n)
    assert q == cute.shape_div(shape, n)
    assert cute.is_congruent(q, shape)
    assert cute.product(q) * n == cute.product(shape)


@given(shapes(max_size=512))
def test_unflatten_inverts_flatten(shape):
    assert unflatten(flatten(shape), shape) == shape


def test_shape_div_rejects_non_divisible_ints():
    with pytest.raises(DivisibilityError, match=r"6 % 4 == 0 or 4 % 6 == 0"):
        cute.shape_div(6, 4)


def test_rank_mismatches_name_both_values():
    with pytest.raises(RankError, match=r"\(1,2,3\).*\(2,3\)"):
        cute.crd2idx((1, 2, 3), (2, 3), (1, 2))
    with pytest.raises(RankError, match="equal ranks"):
        cute.shape_div((2, 3), (1, 2, 3))


@pytest.mark.parametrize("bad", [1.5, "4", True, [1, "x"]])
def test_non_integer_leaves_are_rejected_with_a_type_error(bad):
    with pytest.raises(CuteTypeError, match="must be an int or a tuple of ints"):
        as_int_tuple(bad)


def test_lists_and_integer_like_values_are_normalised():
    np = pytest.importorskip("numpy")
    assert as_int_tuple([2, [np.int64(3), 4]]) == (2, (3, 4))
    assert fmt((4, (2, 8))) == "(4,(2,8))"


def test_int_tuple_still_offers_the_names_of_the_modules_split_from_it():
    # the IntTuple vocabulary lives by concept; int_tuple re-exports it under the names it has always had
    from cute_py.core import division, int_tuple, leaves, normalise, notation, products

    for module in (leaves, notation, normalise, products, division):
        assert set(module.__all__) <= set(int_tuple.__all__), module.__name__
        for name in module.__all__:
            assert getattr(int_tuple, name) is getattr(module, name), name


def test_already_normal_int_tuples_come_back_unchanged_and_others_are_rebuilt():
    nested = ((2, (3, (4, 5))), 6)
    assert as_int_tuple(nested) is nested
    assert as_int_tuple([2, (3, [4])]) == (2, (3, (4,)))
    with pytest.raises(CuteTypeError, match=r"got 2\.0 \(float\) in \(\(1, \(2\.0,\)\),\)"):
        as_int_tuple(((1, (2.0,)),))
    deep = 1
    for _ in range(64):
        deep = (deep,)
    assert as_int_tuple(deep) is deep
    with pytest.raises(cute.CuteValueError, match="nested more than 64 levels"):
        as_int_tuple((deep,))


def _partially_flat(coord, shape, draw):
    # a coordinate that gives some tuple modes as one int (split colexicographically by crd2idx)
    if type(shape) is not tuple:
        return coord
    if draw(st.booleans()):
        return cute.crd2idx(coord, shape)
    return tuple(_partially_flat(c, s, draw) for c, s in zip(coord, shape))


@given(layouts(max_rank=4, max_depth=3), st.data())
def test_crd2idx_of_static_ints_is_the_case_table(layout, data):
    # the one-pass evaluation of static coordinates gives what the general case table gives
    from cute_py.core.coords import crd2idx_unchecked

    shape, stride = layout.shape, layout.stride
    i = data.draw(st.integers(0, 2 * cute.size(shape)))
    crd = cute.idx2crd(i, shape)
    for coord in (i, crd, _partially_flat(crd, shape, lambda s: data.draw(s))):
        assert cute.crd2idx(coord, shape, stride) == crd2idx_unchecked(coord, shape, stride)


def _shape_div_table(a, b):
    # CuTe's shape_div case table, written plainly, for positive static ints
    if type(a) is tuple:
        if type(b) is tuple:
            if len(a) != len(b):
                raise RankError("ranks")
            return tuple(_shape_div_table(x, y) for x, y in zip(a, b))
        out = []
        for x in a:
            out.append(_shape_div_table(x, b))
            b = _shape_div_table(b, x)
        return tuple(out)
    if type(b) is tuple:
        return _shape_div_table(a, cute.product(b))
    if a % b != 0 and b % a != 0:
        raise DivisibilityError("condition")
    return (a + b - 1) // b


def _outcome(fn, *args):
    try:
        return fn(*args)
    except (DivisibilityError, RankError) as e:
        return type(e)


@given(shapes(max_rank=4, max_depth=3), st.data())
def test_shape_div_of_static_ints_is_the_case_table(shape, data):
    # divisors that meet the condition (the inline int cases) and ones that break it (refused, as before)
    leaf = st.sampled_from(divisors(cute.size(shape)) + [3, 5, 7, 12])
    divisor = data.draw(st.one_of(leaf, shapes(max_rank=4, max_depth=2),
                                  st.just(shape), st.tuples(leaf, leaf), st.tuples(st.tuples(leaf, leaf), leaf)))
    for a, b in ((shape, divisor), (divisor, shape)):
        assert _outcome(cute.shape_div, a, b) == _outcome(_shape_div_table, a, b)
