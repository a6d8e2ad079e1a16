"""Every algebra contract as a hypothesis property (DESIGN §7)."""

from hypothesis import given
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout
from cute_py.core.congruence import evenly_divides
from cute_py.errors import RankError
from cute_py.testing import (
    compact_layouts,
    composable_pairs,
    injective_layouts,
    layouts,
    layouts_with_degenerate_modes,
    shapes,
    tilers,
)


def values(layout):
    return [layout(i) for i in range(cute.size(layout))]


@given(composable_pairs())
def test_composition_is_function_composition(pair):
    a, b = pair
    r = cute.composition(a, b)
    assert cute.is_compatible(b.shape, r.shape)
    for i in range(cute.size(b)):
        assert r(i) == a(b(i))


@given(layouts(max_size=128), st.data())
def test_composition_with_a_tiler_composes_mode_by_mode(a, data):
    tiler = data.draw(tilers(a))
    r = cute.composition(a, tiler)
    assert cute.rank(r) == len(tiler)
    for i, t in enumerate(tiler):
        mode = r[i]
        expected = cute.composition(a[i], t)
        assert values(mode) == values(expected)


@given(injective_layouts(max_size=128), st.integers(1, 4))
def test_complement_is_ordered_disjoint_and_covering(layout, extra):
    cotarget = cute.cosize(layout) * extra
    c = cute.complement(layout, cotarget)
    cv = values(c)
    assert cv == sorted(cv) and len(set(cv)) == len(cv)
    image = set(values(layout))
    assert not (set(cv[1:]) & image)
    # together they cover [0, cotarget) exactly once
    both = cute.make_layout(layout, c)
    got = sorted(values(both))
    assert got[: cotarget] == list(range(cotarget))
    assert cute.size(c) * cute.size(cute.filter(layout)) >= cotarget


@given(injective_layouts(max_size=64), st.data())
def test_complement_accepts_a_shape_cotarget(layout, data):
    flat = cute.flatten(cute.make_layout(layout))
    n = max(s * d for s, d in zip(flat.shape, flat.stride))  # the span of the dilated layout
    shape = data.draw(st.sampled_from([(n,), (n, 2), (2, n), ((n, 1), 3)]))
    c = cute.complement(layout, shape)
    assert cute.size(cute.make_layout(layout, c)) >= cute.size(shape)
    assert values(c) == values(cute.complement(layout, cute.size(shape)))


@given(layouts_with_degenerate_modes() | layouts() | compact_layouts())
def test_right_inverse_law(layout):
    r = cute.right_inverse(layout)
    for i in range(cute.size(r)):
        assert layout(r(i)) == i


@given(compact_layouts())
def test_right_inverse_of_a_bijection_is_its_inverse(layout):
    r = cute.right_inverse(layout)
    assert cute.size(r) == cute.size(layout)
    assert values(cute.composition(layout, r)) == list(range(cute.size(layout)))


@given(injective_layouts(max_size=128) | layouts_with_degenerate_modes())
def test_left_inverse_law(layout):
    linv = cute.left_inverse(layout)
    for i in range(cute.size(layout)):
        assert layout(linv(layout(i))) == layout(i)


@given(injective_layouts(max_size=128))
def test_left_inverse_of_an_injective_layout_recovers_the_index(layout):
    linv = cute.left_inverse(layout)
    for i in range(cute.size(layout)):
        assert linv(layout(i)) == i


@given(layouts(max_size=256), st.data())
def test_logical_divide_matches_its_definition_and_keeps_size(layout, data):
    tiler = data.draw(tilers(layout, as_layout=True))
    r = cute.logical_divide(layout, tiler)
    assert cute.size(r) == cute.size(layout)
    assert cute.logical_divide(layout, (None,) * cute.rank(layout)) == cute.make_layout(*layout)
    definition = cute.composition(
        layout, cute.make_layout(tiler, cute.complement(tiler, cute.coalesce(layout).shape))
    )
    assert r == definition
    # the first mode is the tile: layout composed with the tiler
    assert values(r[0]) == [layout(tiler(i)) for i in range(cute.size(tiler))]


@given(layouts(max_size=256), st.data())
def test_divides_by_mode_keep_size_and_function(layout, data):
    tiler = data.draw(tilers(layout, allow_none=False))
    ld = cute.logical_divide(layout, tiler)
    zd = cute.zipped_divide(layout, tiler)
    td = cute.tiled_divide(layout, tiler)
    fd = cute.flat_divide(layout, tiler)
    n = cute.size(layout)
    for r in (ld, zd, td, fd):
        assert cute.size(r) == n
    # all four are the same function up to regrouping: the same multiset of offsets
    assert sorted(values(ld)) == sorted(values(layout))
    assert sorted(values(zd)) == sorted(values(td)) == sorted(values(fd)) == sorted(values(ld))
    tile_size = cute.size(zd[0])
    assert cute.size(td[0]) == tile_size
    assert cute.rank(td) == 1 + cute.rank(zd[1])
    assert cute.rank(fd) == cute.rank(zd[0]) + cute.rank(zd[1])


@given(compact_layouts(max_size=32), compact_layouts(max_size=16) | layouts(max_size=16))
def test_logical_product_matches_its_definition(block, tiler):
    r = cute.logical_product(block, tiler)
    assert cute.size(r) == cute.size(block) * cute.size(tiler)
    assert r[0] == block
    rest = cute.composition(cute.complement(block, cute.size(block) * cute.cosize(tiler)), tiler)
    assert r[1] == rest
    assert values(r[0]) == values(block)


@given(compact_layouts(max_rank=2, max_depth=1, max_size=16), compact_layouts(max_rank=2, max_depth=1, max_size=16))
def test_blocked_and_raked_products_of_compact_layouts_are_bijections(block, tiler):
    n = cute.size(block) * cute.size(tiler)
    one_mode = max(cute.rank(block), cute.rank(tiler)) == 1
    product = cute.logical_product(block, tiler)
    for fn in (cute.blocked_product, cute.raked_product):
        # CuTe zips (block, tile part) for blocked and (tile part, block) for raked: a leaf first wraps the
        # pair, a tuple first needs a tuple partner of its rank (with two or more modes both are such tuples)
        first, second = (product[0], product[1]) if fn is cute.blocked_product else (product[1], product[0])
        zips = type(first.shape) is not tuple or (type(second.shape) is tuple and len(second.shape) == len(first.shape))
        try:
            r = fn(block, tiler)
        except RankError as e:
            assert one_mode and not zips, e
            assert "cannot zip" in str(e)
            continue
        assert zips or not one_mode
        assert cute.rank(r) == max(cute.rank(block), cute.rank(tiler))
        assert sorted(values(r)) == list(range(n))
    first, second = product[0], product[1]
    if one_mode and type(first.shape) is tuple and not (type(second.shape) is tuple and len(second.shape) == len(first.shape)):
        return  # blocked_product is undefined here (as in CuTe)
    # blocked: the block is contiguous in the first coordinates
    blocked = cute.blocked_product(block, tiler)
    zipped = cute.zipped_product(block, tiler)
    assert sorted(values(zipped)) == sorted(values(blocked))


@given(compact_layouts(max_rank=2, max_depth=1, max_size=16), st.data())
def test_tile_to_shape_reaches_the_target_shape(atom, data):
    block = cute.product_each(atom.shape)
    r = len(block)
    mult = tuple(data.draw(st.integers(1, 3)) for _ in range(r))
    target = tuple(b * m for b, m in zip(block, mult))
    t = cute.tile_to_shape(atom, target)
    assert cute.is_compatible(target, t.shape)
    assert sorted(values(t)) == list(range(cute.size(target)))
    # the atom is the first tile
    first = [t(tuple(cute.idx2crd(i, block)) if r > 1 else i) for i in range(cute.size(atom))]
    assert first == values(atom)


@given(layouts(max_size=128) | compact_layouts())
def test_max_common_layout_is_a_common_identity(layout):
    other = cute.coalesce(layout)
    common = cute.max_common_layout(layout, other)
    n = cute.max_common_vector(layout, other)
    assert cute.size(common) == n >= 1
    for i in range(cute.size(common)):
        if n > 1:
            assert layout(common(i)) == i and other(common(i)) == i


@given(compact_layouts(), st.data())
def test_max_common_vector_is_a_run_of_agreement(a, data):
    flat = cute.flatten(a.shape) if isinstance(a.shape, tuple) else (a.shape,)
    order = data.draw(st.permutations(range(len(flat))))
    b = cute.make_ordered_layout(flat, tuple(order))
    n = cute.max_common_vector(a, b)
    inv_b = cute.right_inverse(b)
    for i in range(n):
        assert a(inv_b(i)) == i


@given(layouts_with_degenerate_modes() | layouts())
def test_nullspace_is_mapped_to_zero_and_has_the_right_size(layout):
    ns = cute.nullspace(layout)
    flat = cute.flatten(layout)
    for i in range(cute.size(ns)):
        assert flat(ns(i)) == 0
    assert cute.size(ns) * cute.size(cute.filter_zeros(layout)) == cute.size(layout)
    assert cute.size(cute.nullspace(ns)) == 1


@given(shapes(max_size=256))
def test_identity_composition_laws(shape):
    layout = cute.make_layout(shape)
    ident = Layout(cute.size(shape), 1)
    assert values(cute.composition(layout, ident)) == values(layout)
    assert values(cute.composition(ident, layout)) == values(layout)


@given(st.one_of(st.integers(1, 64), st.lists(st.integers(1, 64), min_size=1, max_size=3).map(tuple)),
       st.lists(st.integers(1, 16), min_size=1, max_size=3).map(tuple))
def test_evenly_divides_is_divisibility_mode_by_mode_and_a_leaf_is_its_own_mode(shape, tiler):
    modes = shape if type(shape) is tuple else (shape,)
    want = len(tiler) <= len(modes) and all(m % t == 0 for m, t in zip(modes, tiler))
    assert evenly_divides(shape, tiler) == want
