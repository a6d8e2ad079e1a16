"""Multicast masks from static and run-time coordinates: ``cute.make_layout_image_mask(lay, coord, mode)`` and
``cpasync.create_tma_multicast_mask``.

The static form is checked against a brute-force enumeration of the layout's domain, with a layout evaluator
written here (independent of cute_py's); the traced form by compiling kernels whose coordinates are kernel
parameters and running their traced MLIR with the interpreter of the control-flow tests, for many coordinates,
against the static form.
"""

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Int32, Layout, arch
from cute_py.compiler import TraceError
from cute_py.nvgpu import cpasync
from _control_flow_helpers import kernel_body, run_kernel


# -- an independent evaluator and the brute-force mask -------------------------------------------------


def _leaves(x):
    return [y for e in x for y in _leaves(e)] if type(x) is tuple else [x]


def _mode_offset(index, shape, stride):
    """The offset of linear index ``index`` of one mode (colexicographic over its leaves)."""
    off = 0
    for s, d in zip(_leaves(shape), _leaves(stride)):
        off += (index % s) * d
        index //= s
    return off


def _size(shape):
    n = 1
    for s in _leaves(shape):
        n *= s
    return n


def _linear(entry, shape):
    """The linear index within a mode of a coordinate entry (an int, or a tuple congruent with the mode)."""
    if type(entry) is int:
        return entry
    idx, scale = 0, 1
    for e, s in zip(entry, shape):
        idx += _linear(e, s) * scale
        scale *= _size(s)
    return idx


def brute_mask(shape, stride, coord, modes):
    """Bit ``p`` for each ``p = lay(x)`` with ``x`` agreeing with ``coord`` outside ``modes``."""
    want = [_linear(c, s) if i not in modes else None for i, (c, s) in enumerate(zip(coord, shape))]
    mask = 0
    for x in itertools.product(*[range(_size(s)) for s in shape]):
        if all(w is None or w == xi for w, xi in zip(want, x)):
            mask |= 1 << sum(_mode_offset(xi, s, d) for xi, s, d in zip(x, shape, stride))
    return mask


# -- random small layouts of a codomain of at most 16 positions ------------------------------------------


@st.composite
def small_layouts(draw, rank=None):
    while True:
        r = rank or draw(st.integers(1, 4))
        shape, stride = [], []
        for _ in range(r):
            if draw(st.booleans()):
                shape.append(draw(st.integers(1, 4)))
                stride.append(draw(st.integers(0, 6)))
            else:
                shape.append((draw(st.integers(1, 2)), draw(st.integers(1, 3))))
                stride.append((draw(st.integers(0, 4)), draw(st.integers(0, 6))))
        cos = 1 + sum((s - 1) * d for s, d in zip(_leaves(tuple(shape)), _leaves(tuple(stride))))
        if cos <= 16:
            return tuple(shape), tuple(stride)


@st.composite
def layout_coord_mode(draw, rank=None):
    shape, stride = draw(small_layouts(rank))
    coord = []
    for s in shape:
        if type(s) is tuple and draw(st.booleans()):
            coord.append(tuple(draw(st.integers(0, e - 1)) for e in s))
        else:
            coord.append(draw(st.integers(0, _size(s) - 1)))
    mode = draw(st.integers(0, len(shape) - 1))
    return shape, stride, tuple(coord), mode


@settings(max_examples=300, deadline=None)
@given(layout_coord_mode())
def test_the_static_mask_is_the_image_of_the_mode(case):
    shape, stride, coord, mode = case
    mask = cute.make_layout_image_mask(Layout(shape, stride), coord, mode)
    assert type(mask) is int and 0 < mask < 1 << 16
    assert mask == brute_mask(shape, stride, coord, {mode})


@settings(max_examples=200, deadline=None)
@given(layout_coord_mode(rank=4), st.data())
def test_create_tma_multicast_mask_is_the_image_mask_of_the_vmnk_layout(case, data):
    shape, stride, coord, mode = case
    lay = Layout(shape, stride)
    assert cpasync.create_tma_multicast_mask(lay, coord, mode) == brute_mask(shape, stride, coord, {mode})
    modes = tuple(sorted(data.draw(st.sets(st.integers(0, 3), min_size=1))))  # CuTe C++'s several modes
    assert cpasync.create_tma_multicast_mask(lay, coord, modes) == brute_mask(shape, stride, coord, set(modes))


def test_masks_of_a_two_by_two_cluster():
    # (V, M, N, K) = (1, 2, 2, 1), rank = m + 2n: the CTAs that share N differ in M (mode 1), and vice versa
    vmnk = Layout((1, 2, 2, 1))
    assert cute.make_layout_image_mask(vmnk, (0, 1, 0, 0), 1) == 0b0011
    assert cute.make_layout_image_mask(vmnk, (0, 1, 1, 0), 1) == 0b1100
    assert cute.make_layout_image_mask(vmnk, (0, 1, 1, 0), 2) == 0b1010
    assert cute.make_layout_image_mask(vmnk, (0, 0, 0, 0), 0) == 0b0001  # a mode of one CTA: only itself
    assert cute.make_layout_image_mask(Layout(16), 5, 0) == 0xFFFF  # rank 1: every position
    assert cute.make_layout_image_mask(Layout((4, 4), (4, 1)), (2, 3), 0) == 0b1000100010001000


@pytest.mark.parametrize("args, error, match", [
    ((Layout(17), 0, 0), cute.CuteValueError, r"reaches position 16; a 16-bit mask holds positions 0..15"),
    ((Layout((4, 4), (1, 5)), (0, 0), 1), cute.CuteValueError, "a cluster holds at most 16 CTAs"),
    ((Layout((2, 2)), (0, 0, 0), 0), cute.CuteValueError, "one entry per mode"),
    ((Layout((2, 2)), (0, 0), 2), cute.CuteValueError, r"mode 2 is not a mode of \(2,2\):\(1,2\) \(0..1\)"),
    ((Layout((2, 2)), (0, 0), -1), cute.CuteValueError, "mode -1 is not a mode"),
    ((Layout((2, 2)), (0, 0), 1.0), cute.CuteTypeError, "the mode must be a static int"),
    ((Layout((2, 2)), (0, 2), 0), cute.CuteValueError, r"entry 1 \(2\) of the coordinate \(0,2\) is outside mode 1"),
    ((Layout((2, (2, 2))), (0, (0, 2)), 0), cute.CuteValueError, "entry 1 .* is outside mode 1"),
    ((Layout((2, 2)), (0, -1), 0), cute.CuteValueError, "entry 1 .* is outside mode 1"),
    ((Layout((2, 2)), (0, True), 0), cute.CuteTypeError, "must hold ints or run-time integers, got True"),
    ((Layout((2, 2)), (0, "1"), 0), cute.CuteTypeError, "must hold ints or run-time integers"),
    ((Layout((2, 2)), (0, None), 0), cute.CuteValueError, "entry 1 of the coordinate is None"),
    (((2, 2), (0, 0), 0), cute.CuteTypeError, "needs a static Layout"),
])
def test_bad_inputs_name_the_rule(args, error, match):
    with pytest.raises(error, match=match):
        cute.make_layout_image_mask(*args)


def test_create_tma_multicast_mask_needs_a_rank_4_cluster_layout():
    with pytest.raises(cute.CuteValueError, match=r"cta_layout_vmnk must be a rank-4 \(V, M, N, K\) layout"):
        cpasync.create_tma_multicast_mask(Layout((2, 2)), (0, 0), 0)
    with pytest.raises(cute.CuteTypeError, match="mcast_mode must be a mode index or a tuple of them"):
        cpasync.create_tma_multicast_mask(Layout((1, 2, 2, 1)), (0, 0, 0, 0), ())


# -- run-time coordinates: compiled, then interpreted --------------------------------------------------------


def _compile_masks(lay, nested_mode=None):
    """A kernel ``k(a, b, c, d)`` reporting the mask of every mode of ``lay`` for the coordinate ``(a, b, c, d)``
    (``(a, (b, c), d)`` ... when mode ``nested_mode`` is a pair), through ``mbarrier_init(bar, mask + 1)``."""
    seen = []

    @cute.kernel
    def k(a, b, c, d):
        bar = arch.SmemAllocator().allocate_mbarrier()
        crd = (a, b, c, d)
        if cute.const_expr(nested_mode is not None):
            crd = crd[:nested_mode] + ((crd[nested_mode], crd[nested_mode + 1]),) + crd[nested_mode + 2:]
        for mode in cute.range_constexpr(len(crd)):
            m = cute.make_layout_image_mask(lay, crd, mode)
            seen.append(m)
            # a mask that the coordinate cannot change (strides 0, modes of one) is folded to a Python int
            arch.mbarrier_init(bar, (m if type(m) is int else Int32(m) & 0xFFFF) + 1)

    def host(a, b, c, d):
        k(a, b, c, d).launch(grid=1, block=32)

    c = cute.compile(host, Int32(0), Int32(0), Int32(0), Int32(0))
    return c, seen


@settings(max_examples=25, deadline=None)
@given(small_layouts(rank=4), st.randoms(use_true_random=False))
def test_traced_masks_equal_the_static_ones(shape_stride, rnd):
    shape, stride = shape_stride
    lay = Layout(shape, stride)
    c, seen = _compile_masks(lay)
    assert all(type(m) is int or (isinstance(m, cute.compiler.TracedInt) and m.dtype is cute.Int16) for m in seen)
    for _ in range(6):
        coord = tuple(rnd.randrange(_size(s)) for s in shape)
        got = [v - 1 for v in run_kernel(c.mlir, list(coord))]
        assert got == [cute.make_layout_image_mask(lay, coord, m) for m in range(4)], (lay, coord)
        assert got == [brute_mask(shape, stride, coord, {m}) for m in range(4)]


def test_traced_masks_of_a_nested_mode_coordinate():
    # mode 1 of shape (2, 2) addressed by a pair of run-time entries
    shape, stride = (2, (2, 2), 1), (1, (2, 8), 0)
    lay = Layout(shape, stride)
    c, _ = _compile_masks(lay, nested_mode=1)
    rnd = random.Random(7)
    for _ in range(8):
        a, b0, b1 = rnd.randrange(2), rnd.randrange(2), rnd.randrange(2)
        got = [v - 1 for v in run_kernel(c.mlir, [a, b0, b1, 0])]
        assert got == [brute_mask(shape, stride, (a, (b0, b1), 0), {m}) for m in range(3)]


def test_a_mask_from_the_ctas_cluster_coordinate_feeds_a_multicast(filecheck, assemble):
    # the DSL's idiom: the CTA's rank, its (v, m, n, k) coordinate, the mask of the CTAs along mode 2
    vmnk = Layout((1, 2, 2, 1))

    @cute.kernel
    def k(g):
        rank = arch.make_warp_uniform(arch.block_idx_in_cluster())
        mask = cpasync.create_tma_multicast_mask(vmnk, vmnk.get_flat_coord(rank), 2)
        g[arch.thread_idx()[0]] = Int32(mask)

    def host(g):
        k(g).launch(grid=4, block=32, cluster=(4, 1, 1))

    c = cute.compile(host, cute.compiler.DeviceArraySpec("Int32", (32,)))
    # rank = m + 2 n; the CTAs of this one's M coordinate m along N: 0b0101 << m
    filecheck(c.ptx, ["CHECK: mov.u32 [[R:%r[0-9]+]], %cluster_ctarank;", "CHECK: and.b32 [[M:%r[0-9]+]], [[R]], 1;",
                      "CHECK: mov.b32 [[F:%r[0-9]+]], 5;", "CHECK: shl.b32 [[S:%r[0-9]+]], [[F]], [[M]];",
                      "CHECK: st.global.b32 [{{%rd[0-9]+}}], [[S]];"])
    assemble(c.ptx)
    assert "arith.trunci" in kernel_body(c.mlir) and " to i16" in kernel_body(c.mlir)


def test_a_run_time_mode_is_rejected_at_the_kernel_line():
    @cute.kernel
    def k(a):
        bar = arch.SmemAllocator().allocate_mbarrier()
        arch.mbarrier_init(bar, Int32(cute.make_layout_image_mask(Layout((2, 2)), (0, 0), a)) + 1)

    def host(a):
        k(a).launch(grid=1, block=32)

    with pytest.raises(cute.CuteTypeError, match=r"test_arch_dsl_multicast.py:\d+: make_layout_image_mask: the mode "
                                                  r"must be a static int"):
        cute.compile(host, Int32(0))
    with pytest.raises(TraceError):
        arch.mbarrier_init(None, 1)  # outside a kernel
