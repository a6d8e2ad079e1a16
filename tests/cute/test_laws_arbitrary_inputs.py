"""Every algebra contract over arbitrary inputs: an inadmissible input raises a CuteError, an admissible
one satisfies the law (DESIGN §7).  Inputs come from ``arbitrary_layouts``: zero extents, negative and
non-dividing strides, non-injective layouts; the ``@example``s are inputs CuTe's C++ accepts although its
result breaks the law."""

from hypothesis import example, given
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout
from cute_py.errors import CuteError
from cute_py.testing import arbitrary_layouts, arbitrary_tilers

from _laws import (
    complement_counterexample,
    composition_counterexample,
    left_inverse_counterexample,
    right_inverse_counterexample,
    values,
)

P = cute.parse_layout


def attempt(fn, *args):
    """``fn(*args)``, or ``None`` when it raises a CuteError (any other exception fails the test)."""
    try:
        return fn(*args)
    except CuteError:
        return None


def injective(layout):
    v = values(layout)
    return len(set(v)) == len(v)


def evaluable(layout):
    # a static extent 0 before the last flat mode leaves a layout without a value at any index
    flat = cute.flatten(layout.shape)
    return not (isinstance(flat, tuple) and 0 in flat[:-1])


small = arbitrary_layouts(max_size=64)


@given(small, small)
@example(P("(4,16):(16,1)"), P("4:3"))
@example(P("(3,5,7):(35,7,1)"), P("8:2"))
@example(P("(4,2):(1,5)"), P("(2,2):(1,3)"))
@example(P("(1,(2,4)):(0,(-1,512))"), P("4:-1"))
@example(P("(6,(4,8)):(19,(5,24))"), P("(6,(4,8)):(4,(1,24))"))
def test_composition_is_function_composition_or_raises(a, b):
    r = attempt(cute.composition, a, b)
    if r is not None:
        assert composition_counterexample(a, b, r) is None


@given(small, st.data())
def test_composition_with_any_tiler_composes_mode_by_mode_or_raises(a, data):
    tiler = data.draw(arbitrary_tilers(a))
    r = attempt(cute.composition, a, tiler)
    if r is not None:
        assert composition_counterexample(a, tiler, r) is None


@given(arbitrary_layouts(max_size=64, max_stride=16), st.one_of(st.none(), st.integers(0, 96),
                                                                 st.tuples(st.integers(1, 12), st.integers(1, 12))))
@example(P("(2,1,4):(6,0,1)"), 45)
@example(P("(2,5,5):(1,10,2)"), (32, 4))
@example(P("(4,6):(1,6)"), None)
def test_complement_is_ordered_disjoint_and_covering_or_raises(layout, cotarget):
    r = attempt(cute.complement, layout, cotarget) if cotarget is not None else attempt(cute.complement, layout)
    if r is not None:
        assert complement_counterexample(layout, cotarget, r) is None


@given(small)
@example(P("(3,3,3):(2,2,16)"))
@example(P("(4,2):(-1,4)"))
def test_left_inverse_law_or_raises(layout):
    r = attempt(cute.left_inverse, layout)
    if r is not None:
        assert left_inverse_counterexample(layout, r) is None


@st.composite
def layouts_with_a_negative_stride(draw):
    layout = draw(small)
    shape, stride = cute.flatten(layout.shape), cute.flatten(layout.stride)
    shape = shape if isinstance(shape, tuple) else (shape,)
    stride = list(stride) if isinstance(stride, tuple) else [stride]
    i = draw(st.integers(0, len(stride) - 1))
    stride[i] = -abs(stride[i]) - 1
    return Layout(shape, tuple(stride))


def extents(layout):
    flat = cute.flatten(layout.shape)
    return flat if isinstance(flat, tuple) else (flat,)


@given(layouts_with_a_negative_stride())
@example(P("4:-2"))
@example(P("4:-1"))
@example(P("(2,4):(0,-3)"))
def test_left_inverse_with_negative_strides_inverts_every_index_or_raises(layout):
    # law: r(layout(i)) == i, where layout(i) must lie in r's domain [0, size(r)) (an injective layout)
    r = attempt(cute.left_inverse, layout)
    if r is None:
        return
    assert all(x >= 0 for x in extents(r)), f"left_inverse({layout}) = {r} has a negative extent"
    if injective(layout):
        for i in range(cute.size(layout)):
            y = layout(i)
            assert 0 <= y < cute.size(r), f"offset {y} of {layout} is outside the domain of {r}"
            assert r(y) == i, f"{r}({y}) = {r(y)}, not {i} (left_inverse of {layout})"
    else:
        assert left_inverse_counterexample(layout, r) is None


@given(small)
@example(P("(2,0,3):(1,5,2)"))
def test_right_inverse_law_or_raises(layout):
    r = attempt(cute.right_inverse, layout)
    if r is not None:
        assert right_inverse_counterexample(layout, r) is None


@given(small, st.data())
@example(P("(6,4):(1,7)"), P("4:1"))
def test_logical_divide_reaches_every_element_and_starts_with_the_tile_or_raises(layout, data):
    tiler = data.draw(arbitrary_tilers(layout)) if isinstance(data, st.DataObject) else data
    r = attempt(cute.logical_divide, layout, tiler)
    if r is None:
        return
    assert cute.size(r) >= cute.size(layout)
    if evaluable(layout):
        assert set(values(layout)) <= set(values(r))
    if isinstance(tiler, Layout):
        assert [r((i, 0)) for i in range(cute.size(tiler))] == [layout(tiler(i)) for i in range(cute.size(tiler))]
        for grouped in (cute.zipped_divide, cute.tiled_divide, cute.flat_divide):
            assert values(grouped(layout, tiler)) == values(r)  # a layout tiler only regroups


@given(small, st.data())
def test_divides_by_mode_are_regroupings_of_the_logical_divide_or_raise(layout, data):
    tiler = data.draw(arbitrary_tilers(layout))
    if not isinstance(tiler, tuple) or None in tiler:
        return
    ld = attempt(cute.logical_divide, layout, tiler)
    for fn in (cute.zipped_divide, cute.tiled_divide, cute.flat_divide):
        r = attempt(fn, layout, tiler)
        assert (r is None) == (ld is None)
        if r is not None:
            assert sorted(values(r)) == sorted(values(ld))


@given(arbitrary_layouts(max_size=16), arbitrary_layouts(max_rank=2, max_depth=1, max_size=8, max_stride=8))
def test_products_of_injective_layouts_are_injective_or_raise(block, tiler):
    for fn in (cute.logical_product, cute.blocked_product, cute.raked_product, cute.zipped_product):
        r = attempt(fn, block, tiler)
        if r is None:
            continue
        assert cute.size(r) == cute.size(block) * cute.size(tiler)
        if fn is cute.logical_product:
            assert r[0] == block
        if injective(block) and injective(tiler):
            assert injective(r), f"{fn.__name__}({block}, {tiler}) = {r}"


@given(small)
def test_coalesce_and_filter_keep_the_function_or_raise(layout):
    c = attempt(cute.coalesce, layout)
    if c is not None and evaluable(layout):
        assert cute.size(c) == cute.size(layout) and values(c) == values(layout)
    f = attempt(cute.filter, layout)
    if f is not None and evaluable(layout) and cute.size(layout) > 0:
        assert set(values(f)) == set(values(layout))


@given(arbitrary_layouts(max_size=64, max_stride=16), st.sampled_from([2, 3, 4, 8]))
@example(P("8:2"), 2)
@example(P("(2,2):(1,1)"), 2)
def test_upcast_and_downcast_cover_exactly_the_same_elements_or_raise(layout, n):
    up = attempt(cute.upcast, layout, n)
    if up is not None:
        # CuTe rounds; where upcast_exactness finds no reason the cover is exact (it may find one for an
        # overlapping layout whose cover happens to be exact: it judges by the strides)
        wide = set(values(up))
        exact = {w * n + k for w in wide for k in range(n)} == set(values(layout))
        reason = cute.upcast_exactness(layout, n)
        assert exact or reason is not None
        if reason is not None and cute.cosize(layout) == cute.size(layout) and cute.size(layout) > 0:
            # an injective layout onto [0, size) is judged exactly
            assert not exact or sorted(values(layout)) != list(range(cute.size(layout))), reason
    down = attempt(cute.downcast, layout, n)
    if down is not None:
        assert set(values(down)) == {n * x + k for x in values(layout) for k in range(n)}


@given(arbitrary_layouts(max_size=64, max_stride=16), st.sampled_from([2, 3, 4, 8]), st.sampled_from([8, 16]))
@example(P("(2,2):(1,1)"), 2, 8)
@example(P("(4,8):(-1,4)"), 2, 8)
@example(P("(3,8):(-1,4)"), 2, 8)
@example(P("(2,3):(1,1)"), 2, 8)
def test_upcast_and_recast_reach_exactly_the_wide_elements_of_the_offsets_or_raise(layout, n, old_bits):
    # the law of upcast / recast_layout (widening): the result reaches exactly the wide elements o // n of the
    # offsets o of the layout, whatever its strides (negative, zero, overlapping); where CuTe's per-mode division
    # would not, a CuteError names the rule
    for op in (lambda: cute.upcast(layout, n), lambda: cute.recast_layout(old_bits * n, old_bits, layout)):
        up = attempt(op)
        if up is not None and evaluable(layout):
            assert sorted(set(values(up))) == sorted({o // n for o in values(layout)}), (layout, n, up)


@given(arbitrary_layouts(max_size=64), arbitrary_layouts(max_size=64))
def test_max_common_vector_and_layout_are_runs_of_agreement_or_raise(a, b):
    n = attempt(cute.max_common_vector, a, b)
    if n is not None and evaluable(a) and evaluable(b) and n > 1:
        # a(b.get_1d_coord(i)) == i for i < n: each of the first n offsets of b is one a reaches at the same
        # index (a evaluated as a function, beyond its size too, as CuTe's layouts are)
        agree = {b(j) for j in range(cute.size(b)) if a(j) == b(j)}
        assert set(range(n)) <= agree
    common = attempt(cute.max_common_layout, a, b)
    if common is not None and cute.size(common) > 1:
        for i in range(cute.size(common)):
            assert a(common(i)) == i and b(common(i)) == i


@given(small)
def test_nullspace_is_mapped_to_zero_or_raises(layout):
    ns = attempt(cute.nullspace, layout)
    if ns is not None and evaluable(layout):
        for i in range(cute.size(ns)):
            assert layout(ns(i)) == 0


@given(arbitrary_layouts(max_rank=2, max_depth=1, max_size=16), st.tuples(st.integers(0, 24), st.integers(0, 24)))
def test_tile_to_shape_reaches_the_target_or_raises(atom, target):
    r = attempt(cute.tile_to_shape, atom, target)
    if r is not None:
        assert cute.is_compatible(target, r.shape) or cute.size(r) == cute.size(target)
        if injective(atom) and cute.size(target) <= 576:
            assert injective(r)


@given(arbitrary_layouts(max_rank=2, max_depth=1, max_size=16, max_stride=8),
       arbitrary_layouts(max_rank=2, max_depth=1, max_size=8, max_stride=8))
@example(P("2:0"), P("2:1"))
def test_make_layout_tv_gives_every_value_one_owner_or_raises(thr, val):
    got = attempt(cute.make_layout_tv, thr, val)
    if got is None:
        return
    tiler, tv = got
    mn = cute.raked_product(thr, val)
    for i in range(cute.size(thr) * cute.size(val)):
        assert mn(tv(i)) == i


@given(arbitrary_layouts(max_size=64), st.integers(0, 3), st.integers(0, 3), st.integers(-4, 4))
def test_a_swizzle_carried_through_a_layout_commutes_with_it_or_raises(layout, bits, base, shift):
    sw = attempt(cute.Swizzle, bits, base, shift)
    if sw is None or not evaluable(layout):
        return
    r = attempt(cute.composition, layout, sw)
    if r is not None:
        for i in range(cute.size(layout)):
            assert r(i) == layout(sw(i))
