"""The static-vs-run-time law of ``test_dynamic_laws`` over every algebra operation ``cute_py`` exports.

Take the arguments of a static computation, make any subset of their integer leaves run-time values, either
``RuntimeInt`` (a traced integer with a known value) or ``cute.sym_int()`` (the public symbolic leaf, bound only
when a compiled function is called), each with nothing, all or part of its divisibility known, and compute again.
The result is

- a ``CuteError`` (a ``StaticValueRequired`` or another rule, named in the message, judged for every value the
  run-time leaves could take), or
- a value that, with the run-time leaves evaluated, equals the static result: a layout as a function (its size,
  the sizes of its top-level modes where the grouping can match, its value at every index), anything else by
  ``==``.

When the static computation raises, the run-time one raises too: a rule that run-time values could break is never
assumed to hold. The table ``OPS`` names each operation and how its static arguments are drawn; a test checks
that it lists every algebra name of ``cute.__all__``.
"""

import collections

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout
from cute_py.core.leaves import DynamicInt
from cute_py.errors import CuteError
from cute_py.testing import RuntimeBool, RuntimeInt, value_of
from cute_py.testing.strategies import int_tuples, layouts, tilers

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)


# -- drawing the static arguments -------------------------------------------------------------------------------


def _lay(max_size=64):
    return layouts(max_size=max_size, max_stride=16)


@st.composite
def _neg_layouts(draw):
    # negative strides too
    lay = draw(_lay())
    flip = draw(st.booleans())
    return Layout(lay.shape, _map(lambda v: -v if flip and v else v, lay.stride))


def _map(fn, t):
    return tuple(_map(fn, x) for x in t) if isinstance(t, tuple) else fn(t)


@st.composite
def _congruent_tuple(draw, like, lo=1, hi=8):
    return _map(lambda _v: draw(st.integers(lo, hi)), like)


@st.composite
def _coord_in(draw, shape):
    return _map(lambda s: draw(st.integers(0, max(0, s - 1))), shape)


@st.composite
def _layout_and_tiler(draw):
    lay = draw(_lay())
    return lay, draw(tilers(lay, allow_none=draw(st.booleans()), as_layout=draw(st.booleans())))


@st.composite
def _pair(draw):
    return draw(_lay()), draw(_lay(16))


def _one(strategy):
    return strategy.map(lambda x: (x,))


def _two(a, b):
    return st.tuples(a, b)


def _ints(lo=1, hi=8):
    return st.integers(lo, hi)


_TUPLE = int_tuples(max_value=8)
_BITS = st.sampled_from([8, 16, 32, 64])

# name -> (function, strategy of its static argument tuple)
OPS = {
    # IntTuples
    "product": (cute.product, _one(_TUPLE)),
    "product_each": (cute.product_each, _one(_TUPLE)),
    "size": (cute.size, _one(_TUPLE)),
    "rank": (cute.rank, _one(_TUPLE)),
    "depth": (cute.depth, _one(_TUPLE)),
    "get": (cute.get, _TUPLE.flatmap(lambda t: st.tuples(st.just(t), st.integers(0, 2)))),
    "flatten": (cute.flatten, _one(_TUPLE)),
    "ceil_div": (cute.ceil_div, _two(_TUPLE, _ints())),
    "round_up": (cute.round_up, _two(_TUPLE, _ints())),
    "shape_div": (cute.shape_div, st.one_of(_two(_TUPLE, _ints(1, 12)),
                                            _TUPLE.flatmap(lambda t: st.tuples(st.just(t), _congruent_tuple(t))))),
    "prefix_product": (cute.prefix_product, _one(_TUPLE)),
    "suffix_product": (cute.suffix_product, _one(_TUPLE)),
    "crd2idx": (cute.crd2idx, _TUPLE.flatmap(lambda t: st.tuples(_coord_in(t), st.just(t),
                                                                   _congruent_tuple(t, -4, 16)))),
    "idx2crd": (cute.idx2crd, _TUPLE.flatmap(lambda t: st.tuples(st.integers(0, 63), st.just(t)))),
    "inner_product": (cute.inner_product, _TUPLE.flatmap(lambda t: st.tuples(st.just(t), _congruent_tuple(t, -4, 9)))),
    "elem_scale": (cute.elem_scale, _TUPLE.flatmap(lambda t: st.tuples(st.just(t), _congruent_tuple(t)))),
    "elem_less": (cute.elem_less, _TUPLE.flatmap(lambda t: st.tuples(st.just(t), _congruent_tuple(t)))),
    "is_congruent": (cute.is_congruent, _two(_TUPLE, _TUPLE)),
    "is_weakly_congruent": (cute.is_weakly_congruent, _two(_TUPLE, _TUPLE)),
    "is_compatible": (cute.is_compatible, _two(_TUPLE, _TUPLE)),
    "is_static": (cute.is_static, _one(_TUPLE)),
    # layouts
    "size_layout": (cute.size, _one(_lay())),
    "cosize": (cute.cosize, _one(_neg_layouts())),
    "make_layout": (cute.make_layout, _lay().map(lambda x: (x.shape, x.stride))),
    "make_ordered_layout": (cute.make_ordered_layout, _TUPLE.flatmap(
        lambda t: st.tuples(st.just(t), _congruent_tuple(t, 0, 5)))),
    "make_layout_like": (cute.make_layout_like, _one(_lay())),
    "make_identity_layout": (cute.make_identity_layout, _one(_TUPLE)),
    "coalesce": (cute.coalesce, _one(_neg_layouts())),
    "filter": (cute.filter, _one(_lay())),
    "filter_zeros": (cute.filter_zeros, _one(_lay())),
    "select": (cute.select, _two(_lay(), st.lists(st.integers(0, 1), max_size=2).map(tuple))),
    "group_modes": (cute.group_modes, st.tuples(_lay(), st.integers(0, 1), st.integers(1, 3))),
    "append": (cute.append, _two(_lay(), _lay(8))),
    "prepend": (cute.prepend, _two(_lay(), _lay(8))),
    "slice_": (cute.slice_, _lay().flatmap(lambda x: st.tuples(st.just(x), _map_none(x.shape)))),
    "dice": (cute.dice, _lay().flatmap(lambda x: st.tuples(_map_none(x.shape), st.just(x)))),
    "flatten_layout": (cute.flatten, _one(_lay())),
    # the algebra
    "composition": (cute.composition, st.one_of(_pair(), _layout_and_tiler())),
    "complement": (cute.complement, st.one_of(_one(_lay(32)), _two(_lay(32), _ints(1, 128)))),
    "right_inverse": (cute.right_inverse, _one(_neg_layouts())),
    "left_inverse": (cute.left_inverse, _one(_neg_layouts())),
    "max_common_vector": (cute.max_common_vector, _pair()),
    "max_common_layout": (cute.max_common_layout, _pair()),
    "max_alignment": (cute.max_alignment, _one(_lay())),
    "nullspace": (cute.nullspace, _one(_lay())),
    # tiling
    "logical_divide": (cute.logical_divide, _layout_and_tiler()),
    "zipped_divide": (cute.zipped_divide, _layout_and_tiler()),
    "tiled_divide": (cute.tiled_divide, _layout_and_tiler()),
    "flat_divide": (cute.flat_divide, _layout_and_tiler()),
    "logical_product": (cute.logical_product, _pair()),
    "zipped_product": (cute.zipped_product, _pair()),
    "tiled_product": (cute.tiled_product, _pair()),
    "flat_product": (cute.flat_product, _pair()),
    "blocked_product": (cute.blocked_product, _pair()),
    "raked_product": (cute.raked_product, _pair()),
    "tile_to_shape": (cute.tile_to_shape, _lay(16).flatmap(
        lambda x: st.tuples(st.just(x), _map_mul(x.shape)))),
    "make_layout_tv": (cute.make_layout_tv, _two(_lay(16), _lay(16))),
    # recast
    "upcast": (cute.upcast, _two(_neg_layouts(), st.sampled_from([1, 2, 4]))),
    "downcast": (cute.downcast, _two(_neg_layouts(), st.sampled_from([1, 2, 4]))),
    "recast_layout": (cute.recast_layout, st.tuples(_BITS, _BITS, _neg_layouts())),
    "upcast_exactness": (cute.upcast_exactness, _two(_neg_layouts(), st.sampled_from([1, 2, 4]))),
    "recast_exactness": (cute.recast_exactness, st.tuples(_BITS, _BITS, _neg_layouts())),
}


def _map_none(shape):
    @st.composite
    def draw_coord(draw):
        return _map(lambda s: draw(st.one_of(st.none(), st.integers(0, max(0, s - 1)))), shape)
    return draw_coord()


def _map_mul(shape):
    @st.composite
    def draw_shape(draw):
        return _map(lambda s: s * draw(st.integers(1, 3)), shape)
    return draw_shape()


# -- making leaves run-time ------------------------------------------------------------------------------------


class Env:
    """The run-time leaves made so far, to evaluate a result: RuntimeInts carry their value, symbols are bound."""

    def __init__(self, kind):
        self.kind, self.bound = kind, {}

    def leaf(self, v, div):
        if self.kind == "runtime":
            return RuntimeInt(v, div)
        s = cute.sym_int(64 if abs(v) >= 2 ** 31 else 32, divisibility=div)
        self.bound[s.name] = v
        return s

    def evaluate(self, x):
        if self.kind == "sym":
            x = cute.core.symbolic.substitute(x, lambda s: s.evaluate(self.bound))
        if isinstance(x, RuntimeBool):
            return x.value
        return value_of(x)


def _divisor(draw, v):
    how = draw(st.sampled_from(["none", "all", "part"]))
    if how == "none" or v == 0:
        return 1
    if how == "all":
        return abs(v)
    k = draw(st.integers(1, 8))
    return max(d for d in range(1, k + 1) if v % d == 0)


def dynamise(draw, env, args):
    """``args`` with some int leaves (of tuples and layouts) made run-time; at least one if there is any."""
    slots = []

    def count(x):
        if type(x) is int:
            slots.append(None)
        elif type(x) is tuple:
            for e in x:
                count(e)
        elif isinstance(x, Layout):
            count(x.shape)
            count(x.stride)

    for a in args:
        count(a)
    if not slots:
        return None
    picks = draw(st.sets(st.integers(0, len(slots) - 1), min_size=1))
    it = iter(range(len(slots)))

    def walk(x):
        if type(x) is int:
            k = next(it)
            return env.leaf(x, _divisor(draw, x)) if k in picks else x
        if type(x) is tuple:
            return tuple(walk(e) for e in x)
        if isinstance(x, Layout):
            return Layout(walk(x.shape), walk(x.stride))
        return x

    return tuple(walk(a) for a in args)


# -- comparing --------------------------------------------------------------------------------------------------


def _leaves(t):
    if isinstance(t, tuple):
        for x in t:
            yield from _leaves(x)
    else:
        yield t


def same_layout_function(got, want, modes):
    assert isinstance(got, Layout), (got, want)
    size = cute.size(got)
    assert size == cute.size(want), (got, want)
    g = got.shape if isinstance(got.shape, tuple) else (got.shape,)
    w = want.shape if isinstance(want.shape, tuple) else (want.shape,)
    if modes and len(g) == len(w):
        assert [cute.size(m) for m in g] == [cute.size(m) for m in w], (got, want)
    step = max(1, size // 1024)
    for i in list(range(0, size, step)) + ([size - 1] if size else []):
        assert got(i) == want(i), (got, want, i)


def same(got, want, modes):
    if isinstance(want, Layout):
        same_layout_function(got, want, modes)
    elif isinstance(want, tuple) and any(isinstance(x, Layout) for x in want):
        assert isinstance(got, tuple) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            same(g, w, modes)
    else:
        assert got == want and type(got) is type(want), (got, want)


OUTCOMES = collections.defaultdict(collections.Counter)


def _is_static_law(got, want, args):
    assert got is False   # a run-time leaf is not static, whatever its value


def _divides(got, want, args):
    # a guarantee for every value of the run-time leaves: it holds for these values, so it divides the static one
    assert type(got) is int and got >= 1 and want % got == 0, (got, want)


def _prefix(got, want, args):
    # a common layout valid for every value of the run-time leaves: a prefix of the static one
    assert isinstance(got, Layout) and cute.size(want) % cute.size(got) == 0, (got, want)
    for i in range(cute.size(got)):
        assert got(i) == want(i), (got, want, i)


def _sound_exactness(got, want, args):
    # None means exact: a run-time form may find a reason where the static one finds none, never the reverse
    assert want is None or got is not None, (got, want)


def _left_inverse_law(got, want, args):
    # a left inverse wherever the static one is (a run-time extent the static form drops may change its size)
    layout = args[0]
    for i in range(cute.size(layout)):
        if want(layout(i)) == i:
            assert got(layout(i)) == i, (got, want, i)


# a run-time stride these divide by a width ratio is promised to be a multiple of it (``assume_divisor_``): a value
# known now (RuntimeInt) is checked at once, a symbol carries the promise to where each call binds it
_PROMISING = {"upcast", "recast_layout"}

_UNCOMPARED_ONES = {"logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product",
                    "raked_product", "tile_to_shape"}

def _filters_static_zeros(op):
    # CuTe C++ removes only static 0 strides: a run-time stride that is 0 keeps its mode (the same offsets, a larger
    # domain); filtering the evaluated result again removes it, giving the static result
    def law(got, want, args):
        same(op(got), want, modes=False)
    return law


OWN_LAWS = {"filter": _filters_static_zeros(cute.filter), "filter_zeros": _filters_static_zeros(cute.filter_zeros),
            "left_inverse": _left_inverse_law, "upcast_exactness": _sound_exactness, "recast_exactness": _sound_exactness, "is_static": _is_static_law, "max_alignment": _divides, "max_common_vector": _divides,
            "max_common_layout": _prefix}

# the run-time form keeps what the static form merges or drops (an extent of 1, a stride-0 neighbour), which may
# regroup the modes of the result: for these the sizes and values are compared, not the grouping
_REGROUPING = {"logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product", "zipped_product",
               "tiled_product", "flat_product", "blocked_product", "raked_product", "tile_to_shape", "complement",
               "composition", "coalesce", "make_layout_tv", "upcast", "downcast", "recast_layout", "nullspace",
               "max_common_layout", "left_inverse", "right_inverse", "filter", "filter_zeros"}


@pytest.mark.parametrize("kind", ["runtime", "sym"])
@pytest.mark.parametrize("name", sorted(OPS))
@SETTINGS
@given(data=st.data())
def test_run_time_leaves_give_the_static_result_or_a_cute_error(name, kind, data):
    fn, args_strategy = OPS[name]
    args = data.draw(args_strategy, label="static arguments")
    env = Env(kind)
    dyn = dynamise(data.draw, env, args)
    if dyn is None:
        return
    try:
        want = fn(*args)
    except CuteError:
        want = CuteError
    try:
        got = fn(*dyn)
    except CuteError as e:
        assert str(e), "a CuteError names its rule"
        OUTCOMES[name, kind]["raised"] += 1
        return
    except Exception as e:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{name}{dyn!r} raised {type(e).__name__}: {e}")
    if kind == "sym" and name in _PROMISING and any(
            env.bound[leaf.name] % leaf.known_divisor for leaf in cute.core.symbolic.sym_leaves(got)):
        # a symbol promised a divisibility these values break: the binding of such a call refuses it
        OUTCOMES[name, kind]["a promise these values break (refused where the call binds them)"] += 1
        return
    if want is CuteError and name in ("recast_exactness", "upcast_exactness") and isinstance(got, str):
        # the exactness queries answer "not exact" with a reason where the static recast raises: a refusal too
        OUTCOMES[name, kind]["a reason where the static recast raises"] += 1
        return
    if want is CuteError and name == "downcast" and any(
            isinstance(v, DynamicInt) and env.evaluate(v) in (1, -1) for a in dyn if isinstance(a, Layout)
            for v in _leaves(a.stride)):
        # a known difference, left open: downcast takes a run-time stride as a non-unit one (as C++ does); one whose
        # value is 1 or -1 is a second unit mode the static form refuses (the widened modes would overlap)
        OUTCOMES[name, kind]["not compared: a run-time stride of value 1 or -1"] += 1
        return
    assert want is not CuteError, f"{name}: the static form raised, the run-time one returned {got!r} for {dyn!r}"
    OUTCOMES[name, kind]["same"] += 1
    ones = any(isinstance(v, DynamicInt) and env.evaluate(v) in (0, 1)
               for a in dyn for v in _leaves(a.shape if isinstance(a, Layout) else a))
    try:
        ev = env.evaluate(got)
    except CuteError as e:
        pytest.fail(f"{name}{dyn!r} returned {got!r}, which does not evaluate: {e}")
    try:
        if name in OWN_LAWS:
            OWN_LAWS[name](ev, want, args)
        elif ones and name in _UNCOMPARED_ONES:
            # a known difference: the complement of a run-time extent of 1 keeps its stride (it cannot know the
            # mode is empty), so a product lays its second mode out past it, as CuTe C++ does
            OUTCOMES[name, kind]["not compared: a run-time extent of 1 before a complement"] += 1
        elif ones and isinstance(want, Layout):
            # a run-time extent of 0 or 1 is a mode the static form may drop (filter, complement, inverses): the
            # run-time result is then the static one wherever both are defined
            assert isinstance(ev, Layout)
            for i in range(min(cute.size(want), cute.size(ev), 1024)):
                assert ev(i) == want(i), (ev, want, i)
            if cute.size(ev) != cute.size(want):
                OUTCOMES[name, kind]["larger where a run-time extent is 1"] += 1
        else:
            same(ev, want, modes=not ones and name not in _REGROUPING)
    except AssertionError as e:
        pytest.fail(f"{name}{args!r} is {want!r}; with run-time leaves {dyn!r} it is {got!r} = {ev!r}: {e}")


_ALGEBRA_NAMES = {
    "product", "product_each", "size", "rank", "depth", "get", "flatten", "ceil_div", "round_up", "shape_div",
    "prefix_product", "suffix_product", "crd2idx", "idx2crd", "inner_product", "elem_scale", "elem_less",
    "is_congruent", "is_weakly_congruent", "is_compatible", "is_static", "cosize", "make_layout",
    "make_ordered_layout", "make_layout_like", "make_identity_layout", "coalesce", "filter", "filter_zeros", "select",
    "group_modes", "append", "prepend", "slice_", "dice", "composition", "complement", "right_inverse",
    "left_inverse", "max_common_vector", "max_common_layout", "max_alignment", "nullspace", "logical_divide",
    "zipped_divide", "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product",
    "flat_product", "blocked_product", "raked_product", "tile_to_shape", "make_layout_tv", "upcast", "downcast",
    "recast_layout", "upcast_exactness", "recast_exactness",
}


def test_the_table_covers_every_algebra_operation():
    assert _ALGEBRA_NAMES <= set(cute.__all__)
    assert _ALGEBRA_NAMES <= {getattr(fn, "__name__", n) for n, (fn, _) in OPS.items()} | set(OPS)
