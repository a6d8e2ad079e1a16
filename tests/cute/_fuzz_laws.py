"""The laws of the public-API fuzz (``test_fuzz_public_api``): for each function, what its result must satisfy,
checked against the reference implementations of ``_fuzz_values`` (``Invalid``: the input is not valid, so the
library must have raised)."""

import operator

import numpy as np

import cute_py as cute
from cute_py import Layout
from cute_py.errors import CuteIndexError
from cute_py.testing import RuntimeInt

from _laws import (
    complement_counterexample,
    composition_counterexample,
    left_inverse_counterexample,
    right_inverse_counterexample,
)
from _fuzz_values import (ENUMERATE, all_python_ints, injective, layout_values, leaves, prod, ref, ref_eval,
                          ref_index, small)


# -- laws --------------------------------------------------------------------------------------------------


def law_product(args, r):
    assert r == prod(ref(args[0])) and all_python_ints(r)


SHAPED = (Layout, cute.ComposedLayout, cute.Tensor, cute.Swizzle)


def law_size(args, r):
    x = args[0]
    shape = x.shape if isinstance(x, SHAPED) else ref(x)
    assert r == prod(shape) and type(r) is int


def law_rank(args, r):
    x = args[0]
    shape = x.shape if isinstance(x, SHAPED) else ref(x, basis=True)
    assert r == (len(shape) if isinstance(shape, tuple) else 1)


def law_depth(args, r):
    x = args[0]
    shape = x.shape if isinstance(x, SHAPED) else ref(x, basis=True)

    def depth(t):
        return 1 + max((depth(e) for e in t), default=0) if isinstance(t, tuple) else 0

    assert r == depth(shape)


def law_assume(args, r):
    """A static int comes back unchanged (it was checked); a run-time one carries the divisor."""
    x, divby = args
    if type(x) is int:
        assert r == x and (divby is None or x % divby == 0)


def law_round_up(args, r):
    """Each leaf of ``a`` rounded up to the least multiple of its divisor (missing modes of ``b`` are 1)."""
    def tup(x):   # the arguments as IntTuples (lists are tuples to the algebra)
        return tuple(tup(v) for v in x) if isinstance(x, (tuple, list)) else operator.index(x)

    a, b = tup(args[0]), tup(args[1])

    def check(x, y, z):
        if isinstance(x, tuple):
            ys = y if isinstance(y, tuple) else (y,) * len(x)
            ys = tuple(ys) + (1,) * (len(x) - len(ys))
            assert isinstance(z, tuple) and len(z) == len(x)
            for xi, yi, zi in zip(x, ys, z):
                check(xi, yi, zi)
        else:
            assert not isinstance(y, tuple)
            assert z % y == 0 and x <= z < x + y, (x, y, z)

    check(a, b, r)


def law_ceil_div(args, r):
    a, b = ref(args[0]), ref(args[1])
    assert all_python_ints(r)
    if isinstance(a, int) and isinstance(b, int):
        assert b > 0 and r == -(-a // b)
    elif isinstance(a, tuple) and isinstance(b, tuple):
        assert len(r) == len(a)


def law_shape_div(args, r):
    a, b = ref(args[0]), ref(args[1])
    assert all_python_ints(r)
    if isinstance(a, int) and isinstance(b, int):
        assert b > 0 and (a % b == 0 and r == a // b or b % a == 0 and r == -(-a // b))


def law_prefix_product(args, r):
    a = ref(args[0])
    flat, out = leaves(a), leaves(r)
    run = 1
    for x, y in zip(flat, out):
        assert y == run
        run *= x


def law_suffix_product(args, r):
    a = ref(args[0])
    flat, out = leaves(a)[::-1], leaves(r)[::-1]
    run = 1
    for x, y in zip(flat, out):
        assert y == run
        run *= x


def law_crd2idx(args, r):
    if isinstance(args[1], Layout) and len(args) == 2:
        assert r == args[1](args[0])
        return
    coord, shape = ref(args[0]), ref(args[1])
    if len(args) == 3 and any(type(v).__name__ == "ScaledBasis" for v in leaves(args[2])):
        return  # basis strides (a coordinate layout's): the result is an arithmetic tuple, not an int
    assert all_python_ints(r)
    if isinstance(coord, int) and isinstance(shape, tuple) and len(args) == 2:
        assert r == coord


def law_idx2crd(args, r):
    idx, shape = ref(args[0]), ref(args[1])
    assert all_python_ints(r)
    if isinstance(idx, int) and idx >= 0 and isinstance(shape, tuple) and all(v > 0 for v in leaves(shape)):
        # every leaf but the last is bounded by its extent; the last takes the rest (CuTe's two-argument idx2crd)
        flat, c = leaves(shape), leaves(r)
        assert len(c) == len(flat)
        assert all(0 <= ci < si for ci, si in zip(c[:-1], flat[:-1])) and (not c or c[-1] >= 0)
        run, total = 1, 0
        for ci, si in zip(c, flat):
            total += ci * run
            run *= si
        assert total == (idx if flat else 0)


def law_inner_product(args, r):
    a, b = ref(args[0], basis=True), ref(args[1], basis=True)
    assert r == sum(x * y for x, y in zip(leaves(a), leaves(b)))


def law_elem_less(args, r):
    assert r in (True, False)


def law_predicate(args, r):
    assert r in (True, False)


def law_position_independent(args, r):
    # a byte swizzle read as a function of element offsets: same shape, no flag left
    assert not cute.is_byte_swizzled(r)
    if isinstance(args[0], cute.ComposedLayout):
        assert r.shape == args[0].shape


def law_flatten(args, r):
    x = args[0]
    if isinstance(x, Layout):
        assert isinstance(r, Layout) and layout_values(r) == layout_values(x) if small(x) else True
    else:
        x = ref(x, none=True, basis=True)
        assert r == (tuple(leaves(x)) if isinstance(x, tuple) else x)


def law_layout(args, r):
    assert isinstance(r, Layout)
    assert all_python_ints(r.shape) and all(v >= 0 for v in leaves(r.shape))


def law_layout_call(args, r):
    layout, c = args
    if isinstance(r, Layout):
        return  # a None in the coordinate sliced it
    ci = ref(c)
    if isinstance(ci, int):
        assert r == ref_eval(layout, ci)


def law_coalesce(args, r):
    layout = args[0]
    if small(layout):
        assert prod(r.shape) == prod(layout.shape)
        assert [r(i) for i in range(prod(r.shape))] == layout_values(layout)


def law_filter(args, r):
    layout = args[0]
    if small(layout) and len(args) == 1:
        kept = {v for v in layout_values(layout)}
        assert set(r(i) for i in range(cute.size(r))) == kept or prod(layout.shape) == 0


def law_composition(args, r):
    a, b = args
    # a Layout or an integer tiler is checked; a tuple tiler (composition by mode, possibly nested hundreds deep by
    # the hostile strategies) is left to test_algebra_laws.test_composition_with_a_tiler_composes_mode_by_mode
    b = ref(b) if isinstance(b, (int, np.integer)) else b
    if isinstance(b, Layout) and small(b, 512) and small(a, 512):
        bad = composition_counterexample(a, b, r)
        assert bad is None, bad
    elif isinstance(b, int) and small(a, 512) and b <= 512:
        assert [r(i) for i in range(b)] == [a(i) for i in range(b)]


def law_complement(args, r):
    layout = args[0]
    cot = args[1] if len(args) > 1 else None
    cot = cot.shape if isinstance(cot, Layout) else cot
    if small(layout, 256) and (cot is None or prod(ref(cot)) <= 1024):
        bad = complement_counterexample(layout, ref(cot) if cot is not None else None, r)
        assert bad is None, bad


def law_left_inverse(args, r):
    if small(args[0]):
        bad = left_inverse_counterexample(args[0], r)
        assert bad is None, bad


def law_right_inverse(args, r):
    if small(args[0]) and cute.size(r) <= ENUMERATE:
        bad = right_inverse_counterexample(args[0], r)
        assert bad is None, bad


def law_divide(args, r):
    layout, tiler = args
    if small(layout, 512) and cute.size(r) <= 4096:
        assert cute.size(r) >= cute.size(layout)
        got = [r(i) for i in range(cute.size(r))]
        assert set(layout_values(layout)) <= set(got)
        if isinstance(tiler, Layout):
            assert [r((i, 0)) for i in range(cute.size(tiler))] == [layout(tiler(i)) for i in range(cute.size(tiler))]


def law_product_op(args, r):
    block, tiler = args
    if isinstance(tiler, Layout) and small(block, 256) and small(tiler, 64):
        assert cute.size(r) == cute.size(block) * cute.size(tiler)
        if injective(block) and injective(tiler) and cute.size(r) <= 4096:
            v = [r(i) for i in range(cute.size(r))]
            assert len(set(v)) == len(v), "a product of injective layouts is injective"


def law_tile_to_shape(args, r):
    atom, target = args[0], ref(args[1])
    assert cute.size(r) == prod(target)
    if small(atom, 256) and injective(atom) and prod(target) <= 4096:
        v = [r(i) for i in range(prod(target))]
        assert len(set(v)) == len(v)


def law_upcast(args, r):
    layout, n = args[0], ref_index(args[1])
    if isinstance(layout, Layout) and small(layout):
        narrow = set(layout_values(layout))
        wide = {r(i) for i in range(cute.size(r))}
        # the result reaches exactly the wide elements of the offsets (negative, zero, overlapping strides too)
        assert wide == {o // n for o in narrow}, (layout, n, r)
        if cute.upcast_exactness(layout, n) is None:
            assert {w * n + k for w in wide for k in range(n)} == narrow


def law_max_alignment(args, r):
    # every offset's aligned run of r offsets is among the layout's offsets
    layout = args[0]
    assert type(r) is int and r >= 1
    if isinstance(layout, Layout) and small(layout) and cute.size(layout) > 0:
        image = set(layout_values(layout))
        assert all(o - o % r + k in image for o in image for k in range(r))


def law_exactness(args, r):
    assert r is None or (type(r) is str and r)


def law_downcast(args, r):
    layout, n = args[0], ref_index(args[1])
    if isinstance(layout, Layout) and small(layout) and n <= 64:
        narrow = {r(i) for i in range(cute.size(r))}
        assert narrow == {n * x + k for x in layout_values(layout) for k in range(n)}


def law_swizzle(args, r):
    n = r.size()
    if n <= 1 << 12:
        image = [r(i) for i in range(n)]
        assert sorted(image) == list(range(n)), "a swizzle is a bijection on its domain"
        assert all(r(r(i)) == i for i in range(n)), "and an involution"


def law_swizzle_call(args, r):
    sw, x = args
    x = ref_index(x)
    assert type(r) is int and r == x ^ ((x & sw.yyy_msk) >> sw.shift if sw.shift >= 0 else (x & sw.yyy_msk) << -sw.shift)


def law_make_swizzle(args, r):
    y, z = ref_index(args[0]), ref_index(args[1])
    assert (r.yyy_msk, r.zzz_msk) == (y, z) or (r.bits == 0 and y == z == 0)


def law_identity_layout(args, r):
    shape = ref(args[0])
    if prod(shape) <= 256 and () not in (shape,) + tuple(x for x in _subtuples(shape)):
        for i in range(prod(shape)):
            c = cute.idx2crd(i, shape)
            got = r(c)
            assert (tuple(got) if isinstance(got, tuple) else got) == c


def _subtuples(t):
    if isinstance(t, tuple):
        for e in t:
            yield e
            yield from _subtuples(e)


def law_parse(args, r):
    text = str(r)
    again = cute.parse_layout(text) if isinstance(r, (Layout, cute.ComposedLayout)) else cute.parse_int_tuple(text)
    assert again == r


def law_tensor_read(args, r):
    t, c = args
    if isinstance(r, cute.Tensor):
        return law_view(args, r)
    assert isinstance(t.engine, cute.tensor.ArrayEngine)
    off = t.engine.offset + t.layout(c)
    assert 0 <= off < t.engine.array.size and r == t.engine.array[off]
    coord = ref(c)
    flat_c, flat_s = leaves(coord), leaves(t.shape)
    if isinstance(coord, int):
        assert 0 <= coord < prod(t.shape)
    elif len(flat_c) == len(flat_s):
        assert all(0 <= a < b for a, b in zip(flat_c, flat_s))


def law_view(args, r):
    """Every element of a view is an element of the array (or raises CuteIndexError outside it)."""
    assert isinstance(r, cute.Tensor)
    n = cute.size(r)
    if type(n) is int and n <= 256:
        for i in range(n):
            try:
                v = r[i]
            except CuteIndexError:
                continue
            assert v == r.engine.array[r.engine.offset + r.layout(i)]


def law_pointer(args, r):
    assert isinstance(r, cute.Pointer)
    if r.address is not None:
        assert 0 <= r.address < 2**64 and r.address % r.alignment == 0


def law_pointer_add(args, r):
    p, n = args
    n = ref_index(n)
    assert r.address == p.address + n * p.dtype.width // 8


def law_any(args, r):
    """Results hold Python ints, never floats or numpy scalars."""
    for x in (r if isinstance(r, tuple) else (r,)):
        if isinstance(x, Layout):
            assert all(type(v) is int or not isinstance(v, (float, np.generic)) for v in leaves(x.shape) + leaves(x.stride))
        elif isinstance(x, (float, np.generic)):
            raise AssertionError(f"{type(x).__name__} leaked into a result")


def _has_runtime(x, level=0):
    if isinstance(x, RuntimeInt):
        return True
    if level > 70:
        return False
    if isinstance(x, (tuple, list)):
        return any(_has_runtime(e, level + 1) for e in x)
    if isinstance(x, Layout):
        return _has_runtime(x.shape) or _has_runtime(x.stride)
    return False


def with_any(law):
    def both(args, r):
        if law is not law_tensor_read:  # a tensor's elements are its array's numbers
            law_any(args, r)
        if law is not None and not _has_runtime(args):  # run-time leaves: the values are checked elsewhere
            law(args, r)

    both.__name__ = getattr(law, "__name__", "law_any")
    return both


def law_sym_int(args, r):
    """A run-time leaf: 32 or 64 bits, a positive divisibility, printed ? or ?{div=N}."""
    assert isinstance(r, cute.SymInt) and r.is_leaf and r.width in (32, 64) and r.known_divisor >= 1
    assert str(r) == ("?" if r.known_divisor == 1 else f"?{{div={r.known_divisor}}}")
