"""Swizzles and composed layouts: laws, CuTe's golden values, errors."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cute_py as cute
from cute_py import ComposedLayout, Layout, Swizzle, make_swizzle, parse_layout as P
from cute_py.errors import CuteTypeError, CuteValueError
from cute_py.core.swizzle import compose_swizzles
from cute_py.testing import RuntimeInt, composed_layouts, swizzles, value_of


def values(layout):
    return [layout(i) for i in range(cute.size(layout))]


def test_swizzle_golden_values():
    sw = Swizzle(3, 4, 3)
    assert str(sw) == "S<3,4,3>"
    assert sw(144) == 128 and sw(1023) == 911
    assert (sw.yyy_msk, sw.zzz_msk, sw.swizzle_code) == (0b1110000000, 0b0001110000, 0b1111110000)
    assert sw.size() == 1024
    neg = Swizzle(2, 3, -3)
    assert (neg.yyy_msk, neg.zzz_msk) == (0b11000, 0b11000000)


def test_make_swizzle_recovers_bms_from_masks():
    # the examples of CuTe's swizzle.hpp
    assert make_swizzle(None, yyy_msk=0b1000, zzz_msk=0b0100) == Swizzle(1, 2, 1)
    assert make_swizzle(None, yyy_msk=0b11000000, zzz_msk=0b00000110) == Swizzle(2, 1, 5)
    assert make_swizzle(3, 4, 3) == Swizzle(3, 4, 3)
    with pytest.raises(CuteValueError, match="different numbers of bits"):
        make_swizzle(None, yyy_msk=0b1100, zzz_msk=0b0001)


@given(swizzles())
def test_make_swizzle_inverts_the_masks(sw):
    assert make_swizzle(None, yyy_msk=sw.yyy_msk, zzz_msk=sw.zzz_msk) == sw or sw.bits == 0


@given(swizzles())
def test_a_swizzle_is_a_bijection_and_an_involution(sw):
    n = sw.size()
    image = [sw(x) for x in range(n)]
    assert sorted(image) == list(range(n))
    assert all(sw(sw(x)) == x for x in range(n))


@given(swizzles(), st.integers(0, 1 << 12))
def test_a_swizzle_evaluates_runtime_values_like_ints(sw, x):
    assert value_of(sw(RuntimeInt(x))) == sw(x)


@given(swizzles(), st.lists(st.integers(0, 1 << 16), max_size=40))
def test_map_ints_is_the_swizzle_of_each_int(sw, xs):
    """``map_ints``: the swizzle of each int of the list, in order (shifts of either sign), against the
    definition ``x ^ ((x & yyy_mask) >> shift)`` (``<< -shift`` for a negative one)."""
    y = ((1 << sw.bits) - 1) << (sw.base + max(0, sw.shift))
    want = [x ^ ((x & y) >> sw.shift) if sw.shift >= 0 else x ^ ((x & y) << -sw.shift) for x in xs]
    assert sw.map_ints(xs) == want == [sw(x) for x in xs]


def test_composing_swizzles_of_the_same_shift_xors_their_masks():
    a, b = Swizzle(1, 4, 3), Swizzle(1, 5, 3)
    c = compose_swizzles(a, b)
    assert c == Swizzle(2, 4, 3)
    assert all(c(x) == a(b(x)) for x in range(1 << 10))
    with pytest.raises(CuteValueError, match="same shift"):
        compose_swizzles(Swizzle(1, 4, 3), Swizzle(1, 4, 4))


def test_bad_swizzles_are_rejected():
    with pytest.raises(CuteValueError, match=r"\|shift\| >= bits"):
        Swizzle(3, 4, 2)
    with pytest.raises(CuteValueError, match=">= 0"):
        Swizzle(-1, 4, 3)
    with pytest.raises(CuteTypeError, match="static int"):
        Swizzle(3, 4.0, 3)


@given(composed_layouts())
def test_a_composed_layout_is_inner_of_offset_plus_outer(cl):
    for i in range(cute.size(cl)):
        assert cl(i) == cl.inner(cl.offset + cl.outer(i))
    assert P(str(cl)) == cl
    assert cute.size(cl) == cute.size(cl.outer) and cute.cosize(cl) == cute.cosize(cl.outer)


def test_composed_layout_prints_and_evaluates_like_cute():
    cl = cute.composition(Swizzle(3, 4, 3), P("(8,64):(64,1)"))
    assert isinstance(cl, ComposedLayout)
    assert str(cl) == "S<3,4,3> o 0 o (8,64):(64,1)"
    assert cl((2, 16)) == Swizzle(3, 4, 3)(2 * 64 + 16)
    # an identity swizzle with offset 0 disappears, as in CuTe
    assert cute.composition(Swizzle(0, 4, 3), P("(8,64):(64,1)")) == P("(8,64):(64,1)")
    assert cute.get_swizzle_portion(cl) == Swizzle(3, 4, 3)
    assert cute.get_nonswizzle_portion(cl) == P("(8,64):(64,1)")
    assert cute.get_swizzle_portion(P("8:1")) == Swizzle(0, 4, 3)


@given(composed_layouts(offset=False), st.data())
def test_algebra_on_a_composed_layout_acts_on_its_outer_layout(cl, data):
    from cute_py.testing import tilers

    tiler = data.draw(tilers(cl.outer, allow_none=False))
    for fn in (cute.logical_divide, cute.zipped_divide, cute.tiled_divide, cute.flat_divide, cute.composition):
        r = fn(cl, tiler)
        expected = fn(cl.outer, tiler)
        got_outer = r.outer if isinstance(r, ComposedLayout) else r
        assert got_outer == expected
        assert values(r) == [cl.inner(e) for e in values(expected)]
    assert values(cute.coalesce(cl)) == values(cl)


@given(composed_layouts(), st.data())
def test_slicing_a_composed_layout_keeps_its_values(cl, data):
    outer = cl.outer
    r = cute.rank(outer)
    if r < 2:
        return
    k = data.draw(st.integers(0, r - 1))
    fixed = data.draw(st.integers(0, cute.size(outer[k]) - 1))
    coord = tuple(fixed if i == k else None for i in range(r))
    sub, off = cute.slice_and_offset(coord, cl)
    sizes = tuple(cute.size(m) for i, m in enumerate(outer) if i != k)
    for j in range(cute.product(sizes)):
        c = iter(cute.idx2crd(j, sizes))
        full = tuple(fixed if i == k else next(c) for i in range(r))
        assert sub(j) + off == cl(full)
    assert cute.slice_(cl, coord) == sub


def test_slicing_a_swizzled_tile_decays_to_a_plain_layout_where_cute_does():
    cl = cute.composition(Swizzle(3, 4, 3), P("(8,128):(128,1)"))
    sub, off = cute.slice_and_offset((None, 16), cl)
    assert isinstance(sub, Layout)
    assert [sub(i) + off for i in range(8)] == [cl((i, 16)) for i in range(8)]


def test_tile_to_shape_of_a_swizzle_atom_builds_a_staged_smem_tile():
    atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)
    tile = cute.tile_to_shape(atom, (64, 64, 3))
    assert isinstance(tile, ComposedLayout) and tile.inner == Swizzle(3, 4, 3) and cute.is_byte_swizzled(tile)
    assert cute.product_each(tile.shape) == (64, 64, 3)
    elements = cute.as_position_independent_swizzle_layout(tile)
    assert elements.inner == Swizzle(3, 3, 3)
    assert sorted(values(elements)) == list(range(64 * 64 * 3))


def test_right_inverse_of_a_swizzled_layout_inverts_it():
    cl = cute.composition(Swizzle(3, 3, 3), P("(8,64):(64,1)"))
    inv = cute.right_inverse(cl)
    assert all(cl(inv(i)) == i for i in range(cute.size(inv)))
    assert cute.size(inv) == 512


def test_a_layout_composed_with_a_swizzle_carries_the_swizzle_through_it():
    # a 16x8 column-major tile of a row of 128 elements: the swizzle bits move with the layout
    layout = P("(16,8):(8,1)")
    sw = Swizzle(1, 0, 3)
    r = cute.composition(layout, sw)
    assert isinstance(r, ComposedLayout)
    assert all(r(i) == layout(sw(i)) for i in range(cute.size(layout)))


@given(st.permutations(range(6)), swizzles(max_bits=2, max_base=1, max_extra_shift=1, allow_negative=False))
def test_layout_of_swizzle_law_for_bit_permutations(order, sw):
    # a bit permutation of [0, 64): every swizzle mask image is again a set of bits
    layout = cute.make_ordered_layout((2,) * 6, tuple(order))
    if sw.size() > 64:
        return
    try:
        r = cute.composition(layout, sw)
    except CuteValueError:
        return  # the carried masks are not a Swizzle<B,M,S> (CuTe rejects these too)
    assert all(r(i) == layout(sw(i)) for i in range(64))


def test_a_composed_layout_with_a_tuple_offset_and_basis_strides_slices_as_its_function():
    # CuTe: slice_and_offset of A o off o B slices B and adds its offset to off (an arithmetic tuple here)
    c = cute.make_composed_layout(Layout((8, 16), (16, 1)), (1, 2), cute.make_identity_layout((4, 8)))
    assert str(c) == "(8,16):(16,1) o (1,2) o (4,8):(1@0,1@1)"
    sub, off = cute.slice_and_offset((None, 1), c)
    assert str(sub) == "(8,16):(16,1) o (1,3) o (4):(1@0)" and off == 0
    assert [sub(i) for i in range(4)] == [c((i, 1)) for i in range(4)] == [16 * (1 + i) + 3 for i in range(4)]
    assert str(c((2, None))) == str(cute.slice_(c, (2, None))) == "(8,16):(16,1) o (3,2) o (8):(1@1)"


def test_a_checked_slice_of_a_swizzled_layout_is_cached_per_swizzle_and_never_another_swizzles():
    """Slicing a swizzled layout at a static coordinate checks its decayed form point by point once per
    (swizzle parameters, offset, layout, coordinate); a cached result is the one the uncached slice gives,
    for identity swizzles of different parameters (equal as functions) too."""
    from cute_py.core.modes import slice_and_offset
    from cute_py.core.memo import memoization

    outer = Layout(((8, 16), (64, 2)), ((64, 512), (1, 8192)))
    swizzles_ = [Swizzle(3, 4, 3), Swizzle(0, 4, 3), Swizzle(0, 3, 3), Swizzle(2, 4, 3), Swizzle(0, 4, 3)]
    coords = [((3, None), None), (None, (None, 1)), ((None, 2), (5, None)), ((1, 2), (None, 0))]
    with memoization(False):
        want = {(str(sw), c): slice_and_offset(c, ComposedLayout(sw, 0, outer)) for sw in swizzles_ for c in coords}
    for _ in range(2):
        for sw in swizzles_:
            layout = ComposedLayout(sw, 0, outer)
            for c in coords:
                got = slice_and_offset(c, layout)
                ref = want[(str(sw), c)]
                assert str(got[0]) == str(ref[0]) and got[1] == ref[1]
                sub, off = got
                # the slice's values are the layout's on the coordinates the slice keeps, in their order
                kept = [x for x in (cute.idx2crd(i, outer.shape) for i in range(cute.size(outer))) if _matches(c, x)]
                assert [sub(j) + off for j in range(cute.size(sub))] == [layout(x) for x in kept]


def _matches(c, x):
    if c is None:
        return True
    if type(c) is tuple:
        return all(_matches(ci, xi) for ci, xi in zip(c, x))
    return c == x


@given(st.one_of(cute.testing.layouts(max_size=512), composed_layouts(max_size=512)))
def test_the_offset_table_of_a_static_layout_is_its_values(layout):
    """The table the decay check reads (built mode by mode) is the layout's value at every index, for plain
    layouts and swizzles composed with an offset and a layout; any other layout has none (checked point by
    point instead)."""
    from cute_py.core.composed import _offset_table

    table = _offset_table(layout)
    plain = type(layout) is Layout or (type(layout.inner) is Swizzle and type(layout.offset) is int
                                       and type(layout.outer) is Layout)
    if plain:
        assert table == values(layout)
    else:
        assert table is None
