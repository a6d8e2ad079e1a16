"""Inputs that are easy to get wrong: laws C++'s preconditions do not guarantee, numpy integers, lists,
memoisation keys, tensor bounds, and clean failures for zero, huge, deep and ill-typed values.

Each test names the rule it checks.  Results are checked against their contract by
evaluation (``_laws``), never against outputs of cute_py itself.
"""

import contextlib
import signal

import numpy as np
import pytest

import cute_py as cute
from cute_py import Layout
from cute_py.errors import (
    CuteError,
    CuteTypeError,
    CuteValueError,
    DivisibilityError,
    NotInjectiveError,
    StaticValueRequired,
)
from cute_py.core.layout import make_layout_unchecked
from cute_py import device
from cute_py.tensor.tensor import Tensor
from cute_py.testing import RuntimeInt

from _laws import composition_counterexample, complement_counterexample, left_inverse_counterexample, values

try:
    from cute_py.errors import CuteIndexError
except ImportError:  # the class is what these tests ask for
    CuteIndexError = CuteError


@contextlib.contextmanager
def within(seconds):
    """Fail (instead of hanging) if the body runs longer than ``seconds``."""

    def on_alarm(signum, frame):
        raise AssertionError(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# -- results that must satisfy their law or be rejected ---------------------------------------------


@pytest.mark.parametrize(
    "lhs, rhs, cpp_result",
    [
        ("(4,16):(16,1)", "4:3", "(2,2):(48,1)"),  # rhs stride 3 straddles the lhs mode of 4
        ("(3,5,7):(35,7,1)", "8:2", "(2,4):(70,7)"),  # rhs runs past the lhs mode of 3 in steps of 2
        ("(2,(5,1),8):(14,(18,31),6)", "4:8", "(2,2):(72,6)"),
        ("(4,2):(1,5)", "(2,2):(1,3)", "(2,2):(1,3)"),  # rhs modes carry into each other
        ("(6,(4,8)):(19,(5,24))", "(6,(4,8)):(4,(1,24))", "((2,3),(4,8)):((76,5),(19,24))"),
        ("(1,(2,4)):(0,(-1,512))", "2:-1", "2:1"),  # a negative rhs stride leaves the lhs mode
        ("(1,(2,4)):(0,(-1,512))", "4:-1", "(2,2):(1,-512)"),
    ],
)
def test_composition_that_would_break_its_law_is_rejected(lhs, rhs, cpp_result):
    a, b = cute.parse_layout(lhs), cute.parse_layout(rhs)
    # CuTe's C++ result is not lhs o rhs ...
    assert composition_counterexample(a, b, cute.parse_layout(cpp_result)) is not None
    # ... so cute_py rejects the input instead of returning it
    with pytest.raises(DivisibilityError, match="composition"):
        cute.composition(a, b)


@pytest.mark.parametrize(
    "lhs, rhs",
    [
        ("(4,16):(16,1)", "2:3"),  # ends inside the first lhs mode: exact
        ("(4,16):(16,1)", "(2,4):(1,4)"),  # two rhs modes on disjoint digits
        ("(4,2):(1,5)", "(2,2):(1,2)"),  # both in the first mode, no carry
        ("(8,4):(1,8)", "4:-8"),  # a negative stride that only skips whole lhs modes
    ],
)
def test_composition_near_the_rejected_cases_still_satisfies_its_law(lhs, rhs):
    a, b = cute.parse_layout(lhs), cute.parse_layout(rhs)
    r = cute.composition(a, b)
    assert composition_counterexample(a, b, r) is None


@pytest.mark.parametrize(
    "layout, cotarget",
    [
        ("(2,1,4):(6,0,1)", 45),  # stride 6 is not a multiple of 4, the extent below it
        ("(4,6):(1,6)", None),
        ("(3,6):(1,10)", None),
        ("(2,5,5):(1,10,2)", (32, 4)),  # the shape cotarget folded through ceil_div under-covers
        ("((3,4),5):((4,1),12)", (24, 8)),
    ],
)
def test_complement_that_would_not_cover_is_rejected(layout, cotarget):
    layout = cute.parse_layout(layout)
    with pytest.raises(CuteValueError, match="complement"):
        cute.complement(layout, cotarget) if cotarget is not None else cute.complement(layout)


def test_complement_cpp_results_of_the_rejected_cases_do_not_cover():
    cases = [("(2,1,4):(6,0,1)", 45, "4:12"), ("(2,5,5):(1,10,2)", (32, 4), "2:50"), ("(4,6):(1,6)", None, "1:0")]
    for layout, cotarget, cpp in cases:
        bad = complement_counterexample(cute.parse_layout(layout), cotarget, cute.parse_layout(cpp))
        assert bad is not None and "cover" in bad


def test_complement_with_a_shape_cotarget_covers_it():
    layout = Layout((2, 2), (1, 6))
    for cotarget in [(4, 4), (3, 5), (24,), (2, 12)]:
        try:
            c = cute.complement(layout, cotarget)
        except CuteError:
            continue
        assert complement_counterexample(layout, cotarget, c) is None


def test_left_inverse_of_an_overlapping_layout_is_rejected():
    layout = Layout((3, 3, 3), (2, 2, 16))
    cpp = cute.parse_layout("(2,1,8,3):(0,1,3,9)")  # what the C++ algorithm gives
    assert left_inverse_counterexample(layout, cpp) is not None
    with pytest.raises(NotInjectiveError, match="left_inverse"):
        cute.left_inverse(layout)


def test_left_inverse_of_a_negative_stride_among_others_is_rejected():
    layout = Layout((4, 2), (-1, 4))
    cpp = make_layout_unchecked((-1, -4, 2), (0, 1, 4))  # what the C++ algorithm gives: not a left inverse
    assert left_inverse_counterexample(layout, cpp) is not None
    with pytest.raises(CuteValueError, match="left_inverse"):
        cute.left_inverse(layout)
    # a lone negative stride too: CuTe's result has a negative extent, and the negative offsets it inverts lie
    # outside the domain [0, size) of any layout
    for lone in [Layout(4, -1), Layout(4, -2), Layout((4, 3), (-2, 0))]:
        with pytest.raises(CuteValueError, match="left_inverse needs non-negative strides"):
            cute.left_inverse(lone)


# -- numpy integers ------------------------------------------------------------------------------


def test_a_numpy_integer_is_an_int_not_an_empty_shape():
    four = np.int64(4)
    assert cute.size(four) == 4 and cute.rank(four) == 1 and cute.depth(four) == 0
    assert cute.product(np.int32(6)) == 6


def test_a_numpy_zero_divisor_is_rejected_like_an_int_one():
    with pytest.raises(CuteValueError):
        cute.ceil_div(7, np.int64(0))
    with pytest.raises(CuteValueError):
        cute.shape_div(7, np.int64(0))


def test_numpy_integers_are_accepted_where_ints_are():
    n = np.int64
    layout = Layout((8, 4), (1, 8))
    assert cute.Swizzle(n(3), n(4), n(3)) == cute.Swizzle(3, 4, 3)
    assert cute.upcast(layout, n(2)) == cute.upcast(layout, 2)
    assert cute.downcast(layout, n(2)) == cute.downcast(layout, 2)
    assert cute.recast_layout(n(32), n(16), layout) == cute.recast_layout(32, 16, layout)
    assert cute.make_ptr(cute.Float32, n(4096)).address == 4096
    assert cute.make_ptr(cute.Float32, 4096, assumed_align=n(16)).alignment == 16
    assert (cute.make_ptr(cute.Float32, 4096) + n(4)).address == 4112
    assert cute.E(n(1)) == cute.E(1) and cute.ScaledBasis(n(2), n(0)) == cute.ScaledBasis(2, 0)
    assert cute.group_modes(layout, n(0), n(2)) == cute.group_modes(layout, 0, 2)
    assert cute.select(layout, n(1)) == cute.select(layout, 1)
    assert cute.select(layout, [n(1), n(0)]) == cute.select(layout, (1, 0))
    assert cute.get((3, (4, 5)), (n(1), n(0))) == 4
    assert cute.append((1, 2), 3, n(4)) == (1, 2, 3, 3)
    assert cute.make_swizzle(None, yyy_msk=n(8), zzz_msk=n(4)) == cute.make_swizzle(None, yyy_msk=8, zzz_msk=4)
    assert cute.make_identity_layout((n(2), 3)) == cute.make_identity_layout((2, 3))


def test_results_of_numpy_inputs_are_python_ints():
    n = np.int64

    def leaves(x):
        return [y for e in x for y in leaves(e)] if isinstance(x, tuple) else [x]

    results = [
        cute.product((n(2), 3)),
        cute.size((n(2), n(3))),
        cute.ceil_div(n(7), 2),
        cute.shape_div(n(8), n(2)),
        cute.crd2idx((n(1), n(2)), (4, 4)),
        cute.crd2idx(n(5), (4, 4), (1, 4)),
        cute.idx2crd(n(13), (4, 4)),
        cute.prefix_product((n(2), n(3))),
        cute.suffix_product((n(2), n(3))),
        cute.inner_product((n(2), 3), (4, n(5))),
        cute.elem_scale((n(2), 3), (4, n(5))),
        cute.product_each((n(2), (n(3), 4))),
        Layout((4, 4))((n(1), n(2))),
        Layout((4, 4))(n(7)),
        cute.Swizzle(3, 4, 3)(n(144)),
        cute.composition(Layout((4, 4)), n(4)).shape,
    ]
    for r in results:
        for leaf in leaves(r):
            assert type(leaf) is int, (r, type(leaf))


# -- lists and tuples ------------------------------------------------------------------------------


def test_lists_mean_the_same_as_tuples():
    layout = Layout((2, (1, 6)), (1, (6, 2)))
    assert cute.product([2, 4]) == 8
    assert cute.idx2crd(13, [2, 4]) == cute.idx2crd(13, (2, 4))
    assert cute.crd2idx([1, 2], [2, 4]) == cute.crd2idx((1, 2), (2, 4))
    assert cute.coalesce(layout, [1, 1]) == cute.coalesce(layout, (1, 1))
    assert cute.filter(layout, [1, 1]) == cute.filter(layout, (1, 1))
    assert cute.prefix_product([2, [3, 4]]) == cute.prefix_product((2, (3, 4)))
    assert cute.ceil_div([8, 6], [2, 4]) == cute.ceil_div((8, 6), (2, 4))
    assert cute.zipped_divide(Layout((8, 8)), [2, [4]]) == cute.zipped_divide(Layout((8, 8)), (2, (4,)))
    assert cute.slice_(Layout((4, 8)), [None, 3]) == cute.slice_(Layout((4, 8)), (None, 3))


# -- memoisation ---------------------------------------------------------------------------------------


def test_validation_does_not_depend_on_earlier_calls():
    layout = Layout((8, 4), (1, 8))
    probes = [
        (lambda: cute.upcast(layout, 2), lambda: cute.upcast(layout, 2.0)),
        (lambda: cute.downcast(layout, 2), lambda: cute.downcast(layout, 2.0)),
        (lambda: cute.zipped_divide(layout, (2, 4)), lambda: cute.zipped_divide(layout, (2.0, 4))),
        (lambda: cute.composition(layout, 4), lambda: cute.composition(layout, 4.0)),
        (lambda: cute.composition(layout, 1), lambda: cute.composition(layout, True)),
        (lambda: cute.complement(layout, 64), lambda: cute.complement(layout, 64.0)),
        (lambda: cute.coalesce(layout, (1, 1)), lambda: cute.coalesce(layout, (1.0, 1))),
        (lambda: cute.logical_product(layout, 2), lambda: cute.logical_product(layout, 2.0)),
    ]
    for good, bad in probes:
        cute.clear_caches()
        with pytest.raises(CuteTypeError):
            bad()
        good()
        with pytest.raises(CuteTypeError):
            bad()


# -- host and device tensors ------------------------------------------------------------------------------


def _host(n, layout):
    return cute.make_tensor(np.arange(n, dtype=np.float32), layout)


def test_negative_strides_cannot_reach_before_the_array():
    with pytest.raises(CuteError):
        t = _host(32, Layout((4, 8), (-1, 4)))
        t[1]


def test_a_coordinate_outside_the_shape_is_rejected():
    t = _host(64, Layout((8, 8)))
    for coord in [(8, 0), (0, 8), (-1, 0), 64, -1, (np.int64(8), 0)]:
        with pytest.raises(CuteIndexError):
            t[coord]
        with pytest.raises(CuteIndexError):
            t[coord] = 1.0
    assert t[(7, 7)] == 63 and t[63] == 63 and t[(np.int64(7), 0)] == 7
    with pytest.raises(CuteValueError):
        t[((0, 1), 0)]  # a tuple coordinate into a leaf mode


def test_a_slice_with_a_coordinate_outside_the_shape_is_rejected():
    t = _host(64, Layout((8, 8)))
    with pytest.raises(CuteIndexError):
        t[(None, 8)]
    with pytest.raises(CuteIndexError):
        t[(-1, None)]


def test_views_at_tiles_or_threads_outside_the_tensor_are_rejected():
    t = _host(64, Layout((8, 8)))
    with pytest.raises(CuteIndexError):
        cute.local_tile(t, (4, 4), (2, 0))
    with pytest.raises(CuteIndexError):
        cute.local_partition(t, Layout((2, 2)), 4)
    with pytest.raises(CuteIndexError):
        cute.domain_offset(-1, t)  # a flat int outside a mode of several modes: no linear view
    # a coordinate outside the shape makes a view (CuTe's residue-first tiles); its elements are checked when read
    past = cute.domain_offset((0, 8), t)
    with pytest.raises(CuteIndexError):
        past[0, 0]


def test_a_partial_last_tile_is_a_view_whose_elements_outside_the_array_are_rejected():
    a = np.arange(100, dtype=np.float32)
    t = cute.make_tensor(a, Layout((10, 10)))
    tile = cute.local_tile(t, (4, 4), (2, 2))  # rows 8..11, cols 8..11 of a 10x10 array
    assert tile[(1, 1)] == 99
    with pytest.raises(CuteIndexError):
        tile[(3, 3)]  # row 11, col 11: offset 121, outside the array


class _RecordingAccess(device.DeviceContext):
    """A stand-in for the device context of a kernel being traced: records loads and stores."""

    def __init__(self):
        self.offsets = []

    def load(self, pointer, offset):
        self.offsets.append(offset)
        return 0

    def store(self, pointer, offset, value):
        self.offsets.append(offset)


def test_a_static_coordinate_outside_a_device_tensor_is_rejected_at_trace_time():
    smem = Tensor(cute.make_ptr(cute.Float32, None, cute.AddressSpace.smem), Layout((8, 8)))
    access = _RecordingAccess()
    with device.tracing(access):
        with pytest.raises(CuteIndexError):
            smem[(8, 0)]
        with pytest.raises(CuteIndexError):
            smem[(0, 9)] = 1.0
        with pytest.raises(CuteIndexError):
            cute.local_tile(smem, (4, 4), (0, 2))
        assert access.offsets == []
        smem[(RuntimeInt(9), 0)]  # a run-time coordinate is the kernel's to check
        assert len(access.offsets) == 1


# -- clean failures ------------------------------------------------------------------------------


def test_zero_sizes_raise_cute_errors_not_zero_division():
    for fn in [
        lambda: cute.zipped_divide(Layout(8), 0),
        lambda: cute.logical_divide(Layout((4, 4)), (0, 2)),
        lambda: cute.complement(Layout(0, 1), 4),
        lambda: Layout((0, 4))(1),
        lambda: cute.composition(Layout((3, 0, 5), (1, 10, 100)), Layout(4, 2)),
        lambda: cute.ceil_div((0, 4), 2),
        lambda: cute.upcast(Layout(8), 0),
        lambda: cute.logical_product(Layout(4), Layout(0)),
    ]:
        try:
            fn()
        except CuteError:
            pass


def test_huge_factors_fail_fast():
    layout = Layout((8, 4), (1, 8))
    with within(2):
        # CuTe's upcast rounds: every stride divides the factor, so each mode becomes one wide element
        for n in (2**40, 2**70):
            assert cute.upcast(layout, n) == Layout((1, 1), (1, 1))
            assert cute.upcast_exactness(layout, n) is not None
        with pytest.raises(CuteError):
            cute.upcast(Layout((8, 4), (1, 3)), 2**40)
        with pytest.raises(CuteError):
            cute.Swizzle(2**40, 0, 2**40)
        assert cute.recast_layout(2**70, 1, layout) == Layout((1, 1), (1, 1))


def test_deep_nesting_raises_a_cute_error():
    deep = 4
    for _ in range(1200):
        deep = (deep,)
    for fn in [
        lambda: cute.size(deep),
        lambda: cute.product(deep),
        lambda: cute.flatten(deep),
        lambda: Layout(deep),
        lambda: cute.crd2idx(deep, deep),
        lambda: cute.parse_int_tuple("(" * 1200 + "4" + ")" * 1200),
        lambda: cute.parse_layout("(" * 1200 + "4" + ")" * 1200),
    ]:
        with pytest.raises(CuteError):
            fn()


def test_layouts_nested_by_operations_raise_a_cute_error_when_too_deep():
    layout = Layout(2)
    with pytest.raises(CuteError):
        for _ in range(1200):
            layout = cute.make_layout(layout, Layout(2))
        cute.coalesce(layout)


@pytest.mark.parametrize("bad", [1.5, "4", None, b"4", True, 2.0, object(), [2, "4"], (2, None), (2, 1.0)])
def test_int_tuple_functions_reject_non_integers(bad):
    for fn in [
        lambda: cute.product((2, bad)),
        lambda: cute.size(bad),
        lambda: cute.ceil_div(8, bad),
        lambda: cute.shape_div(bad, 2),
        lambda: cute.prefix_product((bad, 2)),
        lambda: cute.suffix_product((2, bad)),
        lambda: cute.crd2idx(bad, (4, 4)),
        lambda: cute.idx2crd(bad, (4, 4)),
        lambda: cute.inner_product((bad, 1), (1, 1)),
        lambda: cute.elem_scale((bad, 1), (1, 1)),
        lambda: cute.product_each((bad, 1)),
    ] + ([] if bad is None or bad == (2, None) else [lambda: Layout((4, 4))((bad, 1))]):  # None slices
        with pytest.raises(CuteTypeError):
            fn()


def test_negative_extents_are_rejected():
    for fn in [
        lambda: cute.make_identity_layout(-3),
        lambda: cute.make_identity_layout((2, -3)),
        lambda: cute.composition(Layout(4), -3),
        lambda: cute.composition(Layout((4, 4)), (2, -2)),
        lambda: cute.zipped_divide(Layout((4, 4)), (2, -2)),
        lambda: cute.complement(Layout(4), -8),
        lambda: cute.ceil_div(8, -2),
    ]:
        with pytest.raises(CuteValueError):
            fn()


def test_a_run_time_value_where_a_static_one_is_needed_raises_static_value_required():
    two = RuntimeInt(2)
    for fn in [
        lambda: cute.Swizzle(RuntimeInt(3), 4, 3),
        lambda: cute.upcast(Layout(8), two),
        lambda: cute.group_modes(Layout((4, 8)), RuntimeInt(0), 2),
        lambda: cute.select(Layout((4, 8)), RuntimeInt(0)),
        lambda: cute.get((1, 2), RuntimeInt(0)),
        lambda: cute.append((1, 2), 3, RuntimeInt(4)),
        lambda: cute.make_swizzle(None, yyy_msk=RuntimeInt(8), zzz_msk=4),
        lambda: cute.is_compatible(RuntimeInt(4), 4),
        lambda: cute.make_fragment_like(Layout((two, 3)), cute.Float32),
    ]:
        with pytest.raises(StaticValueRequired):
            fn()


def test_composition_results_near_rejections_are_function_compositions():
    # the composition law over every divisor-free stride of a small lhs: each result is exact or rejected
    a = Layout((4, 6), (1, 5))
    for s in range(1, 9):
        for d in range(0, 10):
            b = Layout(s, d)
            try:
                r = cute.composition(a, b)
            except CuteError:
                continue
            assert composition_counterexample(a, b, r) is None
    assert values(cute.composition(a, Layout(2, 2))) == [a(0), a(2)]


# -- None as the whole tiler, numpy integers as mode indices -------------------------------------------------------


@pytest.mark.parametrize("op", ["logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product",
                                "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product"])
def test_none_as_the_whole_tiler_is_a_cute_error(op):
    # None (CuTe's ``_``) keeps a mode whole: the whole tiler of a divide keeps the layout (C++: logical_divide(L, _)
    # is L); of a product it has no meaning
    if "divide" in op:
        assert getattr(cute, op)(Layout((4, 8), (1, 4)), None) is not None
    else:
        with pytest.raises(cute.CuteTypeError):
            getattr(cute, op)(Layout((4, 8), (1, 4)), None)
    if op == "logical_divide":   # inside a by-mode tuple it keeps that mode whole
        assert cute.size(getattr(cute, op)(Layout((4, 8), (1, 4)), (None, 2))) == 32


def test_numpy_integers_are_mode_indices_and_arrays_are_refused():
    layout = Layout((4, 8), (1, 4))
    assert cute.size(layout, np.int64(1)) == 8 and cute.cosize(layout, np.int32(0)) == 4
    assert cute.size((4, 8), np.int64(0)) == 4
    with pytest.raises(cute.CuteTypeError):
        cute.size(layout, np.array([1]))


@pytest.mark.parametrize("call", [
    lambda: cute.flatten((2, None)),
    lambda: cute.flatten(((2, None), 3)),
    lambda: cute.flatten(None),
    lambda: cute.crd2idx((1, 1), (4, 4), (1, None)),
    lambda: cute.crd2idx((1, 1), (4, None), (1, 4)),
    lambda: cute.crd2idx(1, None),
    lambda: cute.crd2idx(1, None, 1),
    lambda: cute.crd2idx(1, 4, (None,)),
])
def test_none_is_no_leaf_of_a_shape_or_stride(call):
    # None slices a coordinate; a shape, a stride or a flattened IntTuple has no such leaf
    with pytest.raises(CuteTypeError, match="None"):
        call()


def _universal_atom():
    return cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.Float32)


@pytest.mark.parametrize("tiler, error", [
    (object(), CuteTypeError), (2.0, CuteTypeError), ("ab", CuteTypeError), (None, CuteTypeError),
    (True, CuteTypeError), ((cute.Layout(4), 2), CuteTypeError), ((4, 0), CuteValueError),
    ((-4, 2), CuteValueError), ((), CuteValueError),
])
def test_make_tiled_copy_needs_a_tile_shape_of_positive_extents(tiler, error):
    with pytest.raises(error, match="tiler_mn"):
        cute.make_tiled_copy(_universal_atom(), Layout((4, 2), (2, 1)), tiler)


@pytest.mark.parametrize("layout_tv", [Layout((0, 2)), Layout((4, 0)), Layout(0), Layout(()), Layout(8)])
def test_make_tiled_copy_needs_a_non_empty_rank_2_tv_layout(layout_tv):
    with pytest.raises(CuteValueError, match="layout_tv"):
        cute.make_tiled_copy(_universal_atom(), layout_tv, (4, 2))


def test_make_tiled_copy_accepts_a_tile_shape_of_integer_likes():
    tc = cute.make_tiled_copy(_universal_atom(), Layout((4, 2), (2, 1)), [np.int64(4), 2])
    assert tc.tiler_mn == (4, 2) and type(tc.tiler_mn[0]) is int


@pytest.mark.parametrize("call, match", [
    (lambda: cute.right_inverse(cute.make_identity_tensor((4, 4))), "right_inverse.*Tensor"),
    (lambda: cute.left_inverse(cute.make_identity_tensor((4, 4))), "left_inverse.*Tensor"),
    (lambda: cute.local_partition(cute.make_identity_tensor((4, 4)), Layout((2, 2), (cute.E(0), cute.E(1))), 0),
     "integer strides"),
    (lambda: cute.print_layout(np.arange(4)), "print_layout"),
    (lambda: cute.print_layout(np.zeros((2, 2))), "print_layout"),
])
def test_objects_of_the_wrong_kind_are_type_errors(call, match):
    with pytest.raises(CuteTypeError, match=match):
        call()


@pytest.mark.parametrize("layout_tv, tiler", [(Layout((4, 2), (2, 1)), (2, 2)), (Layout((4, 2), (-2, 1)), (8, 1)),
                                              (Layout((4, 2), (1, 4)), 7)])
def test_make_tiled_copy_needs_the_tv_layout_inside_its_tile(layout_tv, tiler):
    # layout_tv maps (thread, value) to an index of the tile: 0 <= layout_tv(t, v) < size(tiler_mn)
    with pytest.raises(CuteValueError, match="tile"):
        cute.make_tiled_copy(_universal_atom(), layout_tv, tiler)


def test_sym_int_takes_integer_likes_and_refuses_arrays():
    assert cute.sym_int(np.int64(64)).width == 64 and type(cute.sym_int(np.int64(64)).width) is int
    for width, div in ((np.arange(4), 1), (32, np.arange(2)), (True, 1), (32, 2.0)):
        with pytest.raises(CuteValueError, match="sym_int"):
            cute.sym_int(width, divisibility=div)
        with pytest.raises(CuteValueError, match="wide|divisibility"):
            cute.SymInt.leaf("s", width, div)
