"""The algebra on run-time leaves, as a law over arbitrary inputs: take a static computation, make any subset of the
leaves of its arguments run-time values (``RuntimeInt``, holding the same values, with none, all or part of their
divisibility known), and compute again. The result is either

- a ``CuteError`` naming a rule: ``StaticValueRequired`` where a decision needs a static value, or a rule judged
  for every value the run-time leaves could take (so it may refuse what these particular values would allow), or
- a layout that, with its run-time leaves evaluated, is the static result: the same size, the same size of each
  top-level mode where the grouping can match, and the same value at every index.

Each operation must reach the second outcome. When the static computation raises (a rule the arguments break), the
run-time one raises too: a rule that run-time values could break is never assumed to hold.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout
from cute_py.core.leaves import DynamicInt
from cute_py.errors import CuteError, StaticValueRequired
from cute_py.testing import RuntimeInt, composable_pairs, layouts, value_of
from cute_py.testing.strategies import tilers

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def _leaves(t):
    if isinstance(t, tuple):
        for x in t:
            yield from _leaves(x)
    else:
        yield t


def _replace(t, picks, it):
    if isinstance(t, tuple):
        return tuple(_replace(x, picks, it) for x in t)
    k = next(it)
    if k in picks and type(t) is int:
        return RuntimeInt(t, picks[k](t))
    return t


def dynamic(layout, picks_shape, picks_stride):
    """``layout`` with the shape leaves at ``picks_shape`` and the stride leaves at ``picks_stride`` run-time
    (each pick maps a leaf index to a function giving the known divisor of the value)."""
    return Layout(_replace(layout.shape, picks_shape, iter(range(10 ** 6))),
                  _replace(layout.stride, picks_stride, iter(range(10 ** 6))))


def _divisor_choice(draw):
    """How much is known of a run-time value: nothing, all of it (its own value divides it), or a divisor."""
    how = draw(st.sampled_from(["none", "all", "part"]))
    if how == "none":
        return lambda v: 1
    if how == "all":
        return lambda v: abs(v) or 1
    k = draw(st.integers(1, 8))
    return lambda v: max(d for d in range(1, k + 1) if v % d == 0)


@st.composite
def dynamised(draw, layout):
    """``layout`` with some shape leaves, some stride leaves, or some of both made run-time values, each with
    nothing, all or part of its divisibility known."""
    n = len(list(_leaves(layout.shape)))
    kind = draw(st.sampled_from(["shapes", "strides", "both"]))
    picks_shape = draw(st.sets(st.integers(0, n - 1), min_size=1)) if kind != "strides" else set()
    picks_stride = draw(st.sets(st.integers(0, n - 1), min_size=1)) if kind != "shapes" else set()
    return dynamic(layout, {k: _divisor_choice(draw) for k in picks_shape},
                   {k: _divisor_choice(draw) for k in picks_stride})


def _is_dynamic(x):
    return any(isinstance(v, DynamicInt) for v in _leaves(x))


def same_function(got, want, modes=True):
    """``got`` (run-time leaves evaluated) is ``want``: sizes of the whole and (``modes``) of each top-level mode,
    and values."""
    assert isinstance(got, Layout), got
    size = value_of(cute.size(got))
    assert size == cute.size(want), (got, want)
    g_modes = got.shape if isinstance(got.shape, tuple) else (got.shape,)
    w_modes = want.shape if isinstance(want.shape, tuple) else (want.shape,)
    if modes and len(g_modes) == len(w_modes):   # a static 1 the run-time form cannot merge may add a mode
        assert [value_of(cute.size(m)) for m in g_modes] == [cute.size(m) for m in w_modes], (got, want)
    step = max(1, size // 4096) | 1   # every index of a small layout, about 4096 spread over a large one
    for i in list(range(0, size, step)) + [size - 1]:
        assert value_of(got(RuntimeInt(i) if i % 2 else i)) == want(i), (got, want, i)


def check(op, static_args, dynamic_args, law=same_function, modes=True):
    # a run-time extent of 1 is kept where the static form drops the mode, which may regroup the result's modes
    ones = [v for a in dynamic_args if isinstance(a, Layout) for v in _leaves(a.shape)
            if isinstance(v, DynamicInt) and value_of(v) == 1]
    try:
        want = op(*static_args)
    except CuteError:
        want = None
    try:
        got = op(*dynamic_args)
    except StaticValueRequired as e:
        assert str(e), "a StaticValueRequired names what must be static"
        return "static required"
    except CuteError as e:
        if want is not None:
            # the run-time form may refuse what these particular values allow: it judges the layout for every value
            # its run-time leaves could take (an extent of 1 or a stride-0 mode the static form coalesces away),
            # and names the rule; it never returns another function
            assert str(e)
            return "refused what the values allow"
        return "raised"
    assert want is not None, f"the static form raised where the run-time one returned {got}"
    if law is same_function:
        same_function(got, want, modes=modes and not ones)
    else:
        law(got, want)
    return "same"


SEEN = {}


def _record(name, outcome):
    SEEN.setdefault(name, set()).add(outcome)


@SETTINGS
@given(composable_pairs(), st.data())
def test_composition_with_run_time_leaves_on_either_side(pair, data):
    a, b = pair
    which = data.draw(st.sampled_from(["lhs", "rhs", "both"]))
    da = data.draw(dynamised(a)) if which != "rhs" else a
    db = data.draw(dynamised(b)) if which != "lhs" else b
    _record(f"composition {which}", check(cute.composition, (a, b), (da, db)))


@SETTINGS
@given(layouts(max_size=128), st.data())
def test_one_layout_operations_with_run_time_leaves(layout, data):
    name, op = data.draw(st.sampled_from([("right_inverse", cute.right_inverse), ("left_inverse", cute.left_inverse),
                                          ("coalesce", cute.coalesce), ("filter", cute.filter),
                                          ("filter_zeros", cute.filter_zeros)]))
    d = data.draw(dynamised(layout))

    def right_inverse_law(got, want):
        # a right inverse, layout(got(i)) == i. CuTe follows the strides only while the extent reached is static
        # (a run-time extent or stride ends the run, as in C++'s inverse_seq), and among equal strides its order
        # depends on which are static, so the size may differ from the static one's (the full size for
        # (16, N):(1, 16) is tested below)
        for i in range(value_of(cute.size(got))):
            assert layout(value_of(got(i))) == i, (got, i)

    def filter_law(got, want):
        # a mode whose stride is a run-time value is kept (it cannot be known to be 0, as in C++'s filter_zeros):
        # once the values are known, filtering again gives the static result
        known = Layout(value_of(got.shape), value_of(got.stride))
        assert op(known) == want, (got, want)

    def left_inverse_law(got, want):
        # a left inverse wherever the static one is: got(layout(i)) == i (a run-time extent of 1 cannot be
        # dropped as the static one is, so the two may differ in size past the image)
        for i in range(cute.size(layout)):
            if want(layout(i)) == i:     # where the static one inverts (all of a compact injective layout)
                assert value_of(got(layout(i))) == i, (got, i)

    law = {"right_inverse": right_inverse_law, "left_inverse": left_inverse_law, "filter": filter_law,
           "filter_zeros": filter_law}.get(name, same_function)
    _record(name, check(op, (layout,), (d,), law))


@SETTINGS
@given(layouts(max_size=128), st.data())
def test_divides_and_products_with_run_time_leaves(layout, data):
    name, op = data.draw(st.sampled_from([("logical_divide", cute.logical_divide),
                                          ("zipped_divide", cute.zipped_divide),
                                          ("tiled_divide", cute.tiled_divide),
                                          ("logical_product", cute.logical_product),
                                          ("blocked_product", cute.blocked_product)]))
    d = data.draw(dynamised(layout))
    if "divide" in name:
        tiler = data.draw(tilers(layout, allow_none=False, as_layout=True))
    else:
        tiler = data.draw(layouts(max_rank=len(layout.shape) if isinstance(layout.shape, tuple) else 1,
                                  max_size=16))
    # the static form coalesces modes the run-time one cannot (stride-0 neighbours, extents of 1), which regroups
    # the rest modes of a divide or product: the sizes and values are compared, not the grouping
    _record(name, check(op, (layout, tiler), (d, tiler), modes=False))


def test_the_outcomes_the_laws_saw():
    # run after the laws above (file order): every operation had results to compare, not only refusals
    if not SEEN:
        pytest.skip("run with the laws above")
    # (blocked_product of random strides is mostly refused; its run-time shapes are compared in the test below)
    missing = [name for name, outcomes in SEEN.items() if "same" not in outcomes and name != "blocked_product"]
    assert not missing, f"no run-time result was compared for {missing}: {SEEN}"


@pytest.mark.parametrize("name", ["logical_divide", "zipped_divide", "tiled_divide", "logical_product",
                                  "blocked_product"])
@pytest.mark.parametrize("m", [1, 4, 12])
def test_each_divide_and_product_of_a_run_time_shaped_layout(name, m):
    # a compact (M, 6) layout with a run-time M: the divides by a tile inside the static mode, the products by a
    # static block
    op = getattr(cute, name)
    static, dyn = Layout((6, m), (1, 6)), Layout((6, RuntimeInt(m)), (1, 6))
    other = (Layout(3, 1),) if "divide" in name else Layout((2, 3), (1, 2))
    assert check(op, (static, other), (dyn, other), modes=False) == "same"


# -- the two shapes the CuTe DSL fails on -------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 3, 16, 48])
def test_right_inverse_of_a_run_time_column_count(n):
    # (16, N):(1, 16) is a compact column-major layout: its right inverse is the identity of 16 * N elements
    N = RuntimeInt(n)
    r = cute.right_inverse(Layout((16, N), (1, 16)))
    assert value_of(cute.size(r)) == 16 * n
    lay = Layout((16, n), (1, 16))
    for i in range(16 * n):
        assert lay(value_of(r(i))) == i


@pytest.mark.parametrize("n", [8, 64, 8192])
def test_composition_with_a_run_time_shaped_right_hand_side(n):
    # NVIDIA/cutlass issue 3470: a rhs whose basis strides pick the lhs modes, one of its extents a run-time value
    N = RuntimeInt(n)
    lhs = Layout((4096, 8192), (1, 4096))

    def rhs(cols):
        return Layout((32, cols // 8, 8, 128), (cute.E(0), 8 * cute.E(1), cute.E(1), 32 * cute.E(0)))

    got = cute.composition(lhs, rhs(N))
    assert str(got) == "(32,?,8,128):(1,32768,4096,32)"
    same_function(got, cute.composition(lhs, rhs(n)))
    # a run-time extent inside one lhs mode, and one that crosses lhs modes (decided only by the values)
    same_function(cute.composition(Layout(1024, 1), Layout((N, 8), (8, 1))),
                  cute.composition(Layout(1024, 1), Layout((n, 8), (8, 1))))
    with pytest.raises(StaticValueRequired, match="whether the rhs extent \\? splits at the lhs mode of extent 16"):
        cute.composition(Layout((16, 64), (64, 1)), Layout((4, N), (1, 4)))


# -- divisibility facts -------------------------------------------------------------------------------------------


def test_assume_carries_a_divisor_that_layouts_print():
    m = cute.assume(RuntimeInt(512), divby=128)
    assert str(m) == "?{div=128}" and value_of(m) == 512
    assert str(Layout((m, 64), (64, 1))) == "(?{div=128},64):(64,1)"
    assert str(m * 2) == "?{div=256}" and str(m // 64) == "?{div=2}" and str(m + 64) == "?{div=64}"
    assert cute.assume(96, divby=32) == 96
    with pytest.raises(cute.CuteValueError, match="is not divisible by 64"):
        cute.assume(96, divby=64)
    with pytest.raises(cute.CuteValueError, match="run-time value 96 is not divisible by 64"):
        cute.assume(RuntimeInt(96), divby=64)   # a value the tests know is checked
    with pytest.raises(cute.CuteValueError, match="divby must be a positive int"):
        cute.assume(RuntimeInt(96), divby=0)


@pytest.mark.parametrize("m", [256, 512, 4096])
def test_a_divisor_proves_what_a_composition_across_run_time_modes_needs(m):
    # a column-major (M, N) layout with M a multiple of 256, composed with a 256-element column tile and a
    # (64, 4):(1, 64) one: with the fact the result is computed and equals the static one; without it, refused
    for known, rhs in [(256, Layout(256, 1)), (256, Layout((64, 4), (1, 64))), (512, Layout((64, 4), (1, 128)))]:
        if m % known:
            continue
        M, N = RuntimeInt(m, known), RuntimeInt(24)
        got = cute.composition(Layout((M, N), (1, M)), rhs)
        same_function(got, cute.composition(Layout((m, 24), (1, m)), rhs))
        with pytest.raises(StaticValueRequired, match="assume a divisibility"):
            cute.composition(Layout((RuntimeInt(m), N), (1, RuntimeInt(m))), rhs)


@pytest.mark.parametrize("shape, stride", [((1, 3, 1), (0, 1, 4)), ((3, 1), (1, 4)), ((3, 1, 2), (1, 5, 16))])
def test_a_run_time_extent_that_may_drop_out_before_a_rounded_gap_must_be_static(shape, stride):
    # statically the extent-1 mode drops out and the copies sit right after the block; kept as a run-time extent it
    # would move them, so the product refuses instead of returning another function
    static = cute.logical_product(Layout(shape, stride), Layout(2))
    assert static(cute.size(static[0])) == 3  # the second copy starts right after the block's 0, 1, 2
    dynamic = tuple(RuntimeInt(1) if (s == 1 and d != 0) else s for s, d in zip(shape, stride))
    with pytest.raises(StaticValueRequired, match="whether the run-time extent .* is 1"):
        cute.logical_product(Layout(dynamic, stride), Layout(2))
