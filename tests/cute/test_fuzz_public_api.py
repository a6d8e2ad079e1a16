"""Fuzz of the public API (all of ``cute_py`` but the JIT names and ``cute_py.nvgpu``) with hostile values.

Every function is called with arguments drawn from a mix of plausible values for each
parameter and hostile ones: floats, numpy scalars, ``None``, strings, bools, negative,
zero and huge ints, deep nesting, lists, and objects of the wrong kind.  Each call must
either return a result that satisfies the function's law, checked here by evaluation
against small reference implementations, or raise a ``CuteError``; it must not hang and
no other exception type may escape.
"""

import collections
import fractions
import operator
import os
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout
from cute_py.errors import CuteError, CuteIndexError
from cute_py.testing import RuntimeInt, swizzles

from _laws import (
    complement_counterexample,
    composition_counterexample,
    left_inverse_counterexample,
    right_inverse_counterexample,
)

CALL_SECONDS = 5
ENUMERATE = 2048  # laws enumerate at most this many points
DEEP = 4
for _ in range(1200):
    DEEP = (DEEP,)


class Invalid(Exception):
    """The reference says the input is not valid: the library must have raised."""


# -- the values ------------------------------------------------------------------------------------------

HOSTILE = [
    -1, -7, 0, 2**40, 2**70, -(2**40),
    1.5, 2.0, float("nan"), float("inf"),
    np.int64(4), np.int32(-2), np.uint8(3), np.float64(2.0), np.bool_(True), np.array(3),
    None, "4", "(2,2)", "", b"4", True, False,
    [2, 4], [2, [3, 1]], [], (2, None), (2, 1.5), (2, "4"), (), ((),), DEEP,
    object(), {2: 4}, {2}, complex(1, 2), fractions.Fraction(3, 1), lambda x: x,
    Layout((2, 2), (1, 2)), Layout(4, 0), cute.Swizzle(1, 1, 1), cute.E(0), RuntimeInt(3),
    cute.Float32, cute.AddressSpace.smem,
]


def hostile():
    return st.sampled_from(HOSTILE)


small_int = st.integers(-2, 12)
leaf = st.one_of(st.integers(0, 9), st.integers(-3, 16), st.sampled_from([np.int64(2), np.int32(3)]))


def int_tuples(leaves=leaf, max_leaves=5):
    return st.recursive(leaves, lambda kids: st.tuples(kids) | st.tuples(kids, kids) | st.tuples(kids, kids, kids),
                        max_leaves=max_leaves)


def shapes():
    return st.recursive(st.integers(1, 6), lambda kids: st.tuples(kids, kids) | st.tuples(kids) | st.tuples(kids, kids, kids),
                        max_leaves=4)


@st.composite
def layouts(draw, negative=True):
    s = draw(st.recursive(st.integers(0, 6) if draw(st.booleans()) else st.integers(1, 6),
                          lambda kids: st.tuples(kids, kids) | st.tuples(kids) | st.tuples(kids, kids, kids),
                          max_leaves=4))
    lo = -8 if negative and draw(st.booleans()) else 0

    def stride(x):
        if type(x) is tuple:
            return tuple(stride(e) for e in x)
        return draw(st.integers(lo, 24))

    return Layout(s, stride(s))


def coords():
    return int_tuples(st.one_of(st.integers(-2, 9), st.none()), max_leaves=4)


def tilers():
    tile = st.one_of(st.integers(0, 8), layouts(negative=False), st.none())
    return st.one_of(tile, st.tuples(tile), st.tuples(tile, tile), st.lists(tile, max_size=2))


def composed():
    return st.builds(lambda sw, off, outer: cute.ComposedLayout(sw, off, outer),
                     swizzles(max_bits=2, max_base=3), st.integers(0, 16), layouts(negative=False))


def flagged():
    return st.builds(lambda sw, bits, off, outer: cute.ComposedLayout(sw, cute.SmemPtrFlag(bits, off), outer),
                     swizzles(max_bits=3, max_base=4), st.sampled_from([8, 16, 32, 64]), st.integers(0, 16),
                     layouts(negative=False))


def host_tensors():
    return st.builds(lambda n, layout: cute.make_tensor(np.arange(n, dtype=np.float32), layout),
                     st.integers(64, 128), st.sampled_from([Layout((8, 8)), Layout((4, 8), (8, 1)), Layout((8, 8), (1, 8)),
                                                            Layout(((2, 4), 8), ((1, 16), 2))]))


ROLES = {
    "int": small_int,
    "bits": st.sampled_from([1, 2, 4, 8, 16, 32, 64, 3, 0, -8]),
    "tuple": int_tuples(),
    "shape": shapes(),
    "layout": layouts(),
    "tiler": tilers(),
    "coord": coords(),
    "swizzle": swizzles(max_bits=3, max_base=4),
    "composed": composed(),
    "flagged": flagged(),
    "tensor": host_tensors(),
    "text": st.sampled_from(["(4,(2,8)):(2,(1,8))", "(2,3)", "S<3,4,3>", "S<3,4,3> o 0 o (8,64):(64,1)", "(1@0,1@1)",
                             "((2,3):(1,2)", "(4):(-1)", "9" * 60, "(" * 80 + "2" + ")" * 80, "S<99,99,99>"]),
    "dtype": st.sampled_from([cute.Float16, cute.Float32, cute.Int8, "float32", "bfloat16"]),
    "any": st.sampled_from([None, 0, 4096, cute.AddressSpace.smem, cute.Swizzle(3, 4, 3), Layout(4)]),
}


def arg(role):
    if role.endswith("!"):  # the object a method is called on: always of its kind
        return ROLES[role[:-1]]
    return st.one_of(ROLES[role], ROLES[role], hostile())


# -- reference implementations (independent of the library) -----------------------------------------------


def ref(x, none=False, level=0, basis=False):
    """x as an IntTuple: lists are tuples, integer-likes ints; anything else is Invalid (basis strides are
    leaves where ``basis``)."""
    if isinstance(x, (list, tuple)):
        if level >= 64:
            raise Invalid
        return tuple(ref(e, none, level + 1, basis) for e in x)
    if x is None and none:
        return None
    if basis and isinstance(x, cute.ScaledBasis):
        return x
    if isinstance(x, (bool, np.bool_, float)) or x is None or isinstance(x, (str, bytes)):
        raise Invalid
    if isinstance(x, RuntimeInt):
        return x
    try:
        return int(operator.index(x))
    except TypeError:
        raise Invalid from None


def ref_index(x):
    v = ref(x)
    if isinstance(v, tuple) or isinstance(v, RuntimeInt):
        raise Invalid
    return v


def leaves(x):
    return [y for e in x for y in leaves(e)] if isinstance(x, tuple) else [x]


def prod(x):
    r = 1
    for v in leaves(x):
        r *= v
    return r


def is_static(x):
    return all(type(v) is int for v in leaves(x))


def all_python_ints(x):
    return all(type(v) is int for v in leaves(x))


def ref_eval(layout, i):
    """A layout at a 1-D index, colexicographic over the flattened modes (the last one unbounded)."""
    s, d = leaves(layout.shape), leaves(layout.stride)
    r = 0
    for k, (sk, dk) in enumerate(zip(s, d)):
        if k == len(s) - 1:
            return r + i * dk
        r += (i % sk) * dk
        i //= sk
    return r


def layout_values(layout):
    return [ref_eval(layout, i) for i in range(prod(layout.shape))]


def small(layout, n=ENUMERATE):
    return isinstance(layout, Layout) and is_static(layout.shape) and is_static(layout.stride) and 0 <= prod(layout.shape) <= n


def injective(layout):
    v = layout_values(layout)
    return len(set(v)) == len(v)


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


def _tiler(t):
    if isinstance(t, (list, tuple)):
        return tuple(_tiler(e) for e in t)
    return ref(t) if isinstance(t, (int, np.integer)) else t


def law_composition(args, r):
    a, b = args
    b = _tiler(b)
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


def _ptr():
    return cute.make_ptr(cute.Float32, 4096, cute.AddressSpace.gmem, 16)


API = [
    # IntTuples
    ("product", cute.product, ["tuple"], law_product),
    ("product_each", cute.product_each, ["tuple"], None),
    ("size", cute.size, ["tuple"], law_size),
    ("size_layout", cute.size, ["layout"], law_size),
    ("rank", cute.rank, ["tuple"], law_rank),
    ("depth", cute.depth, ["tuple"], law_depth),
    ("get", cute.get, ["tuple", "coord"], None),
    ("ceil_div", cute.ceil_div, ["tuple", "tuple"], law_ceil_div),
    ("round_up", cute.round_up, ["tuple", "tuple"], law_round_up),
    ("assume", cute.assume, ["any", "any"], law_assume),
    ("sym_int", cute.sym_int, ["any"], law_sym_int),
    ("sym_int32", cute.sym_int32, ["any"], law_sym_int),
    ("sym_int64", cute.sym_int64, ["any"], law_sym_int),
    ("SymInt", lambda a, b: cute.SymInt.leaf("s", a, b), ["any", "any"], law_sym_int),
    ("shape_div", cute.shape_div, ["tuple", "tuple"], law_shape_div),
    ("prefix_product", cute.prefix_product, ["tuple"], law_prefix_product),
    ("suffix_product", cute.suffix_product, ["tuple"], law_suffix_product),
    ("crd2idx", cute.crd2idx, ["coord", "tuple"], law_crd2idx),
    ("crd2idx_strided", cute.crd2idx, ["coord", "tuple", "tuple"], law_crd2idx),
    ("idx2crd", cute.idx2crd, ["int", "shape"], law_idx2crd),
    ("inner_product", cute.inner_product, ["tuple", "tuple"], law_inner_product),
    ("elem_scale", cute.elem_scale, ["tuple", "tuple"], None),
    ("elem_less", cute.elem_less, ["tuple", "tuple"], law_elem_less),
    ("is_congruent", cute.is_congruent, ["tuple", "tuple"], law_predicate),
    ("is_weakly_congruent", cute.is_weakly_congruent, ["tuple", "tuple"], law_predicate),
    ("is_compatible", cute.is_compatible, ["tuple", "tuple"], law_predicate),
    ("is_static", cute.is_static, ["tuple"], law_predicate),
    ("flatten", cute.flatten, ["tuple"], law_flatten),
    # layouts
    ("Layout", Layout, ["tuple"], law_layout),
    ("Layout_strided", Layout, ["tuple", "tuple"], law_layout),
    ("make_layout", cute.make_layout, ["layout", "layout"], law_layout),
    ("make_ordered_layout", cute.make_ordered_layout, ["shape", "tuple"], law_layout),
    ("make_layout_like", cute.make_layout_like, ["layout"], law_layout),
    ("layout_call", lambda layout, c: layout(c), ["layout!", "coord"], law_layout_call),
    ("cosize", cute.cosize, ["layout"], None),
    ("coalesce", cute.coalesce, ["layout"], law_coalesce),
    ("coalesce_profile", cute.coalesce, ["layout", "tuple"], law_coalesce),
    ("filter", cute.filter, ["layout"], law_filter),
    ("filter_zeros", cute.filter_zeros, ["layout", "tuple"], None),
    ("select", cute.select, ["layout", "tuple"], None),
    ("group_modes", cute.group_modes, ["layout", "int", "int"], None),
    ("append", cute.append, ["tuple", "tuple", "int"], None),
    ("prepend", cute.prepend, ["layout", "layout"], None),
    ("slice_", cute.slice_, ["layout", "coord"], None),
    ("slice_and_offset", cute.slice_and_offset, ["coord", "layout"], None),
    ("dice", cute.dice, ["coord", "tuple"], None),
    ("flatten_layout", cute.flatten, ["layout"], law_flatten),
    # the algebra
    ("composition", cute.composition, ["layout", "layout"], law_composition),
    ("composition_tiler", cute.composition, ["layout", "tiler"], law_composition),
    ("complement", cute.complement, ["layout"], law_complement),
    ("complement_cotarget", cute.complement, ["layout", "tuple"], law_complement),
    ("right_inverse", cute.right_inverse, ["layout"], law_right_inverse),
    ("left_inverse", cute.left_inverse, ["layout"], law_left_inverse),
    ("max_common_vector", cute.max_common_vector, ["layout", "layout"], None),
    ("max_common_layout", cute.max_common_layout, ["layout", "layout"], None),
    ("max_alignment", cute.max_alignment, ["layout"], law_max_alignment),
    ("max_alignment_composed", cute.max_alignment, ["composed"], law_max_alignment),
    ("nullspace", cute.nullspace, ["layout"], None),
    # tiling
    ("logical_divide", cute.logical_divide, ["layout", "tiler"], law_divide),
    ("zipped_divide", cute.zipped_divide, ["layout", "tiler"], None),
    ("tiled_divide", cute.tiled_divide, ["layout", "tiler"], None),
    ("flat_divide", cute.flat_divide, ["layout", "tiler"], None),
    ("logical_product", cute.logical_product, ["layout", "tiler"], law_product_op),
    ("zipped_product", cute.zipped_product, ["layout", "tiler"], None),
    ("tiled_product", cute.tiled_product, ["layout", "tiler"], None),
    ("flat_product", cute.flat_product, ["layout", "tiler"], None),
    ("blocked_product", cute.blocked_product, ["layout", "layout"], law_product_op),
    ("raked_product", cute.raked_product, ["layout", "layout"], law_product_op),
    ("tile_to_shape", cute.tile_to_shape, ["layout", "shape"], law_tile_to_shape),
    ("make_layout_tv", cute.make_layout_tv, ["layout", "layout"], None),
    # recast, swizzles, composed layouts, bases
    ("upcast", cute.upcast, ["layout", "bits"], law_upcast),
    ("downcast", cute.downcast, ["layout", "bits"], law_downcast),
    ("recast_layout", cute.recast_layout, ["bits", "bits", "layout"], None),
    ("upcast_composed", cute.upcast, ["composed", "bits"], None),
    ("upcast_exactness", cute.upcast_exactness, ["layout", "bits"], law_exactness),
    ("upcast_exactness_composed", cute.upcast_exactness, ["composed", "bits"], law_exactness),
    ("recast_exactness", cute.recast_exactness, ["bits", "bits", "layout"], law_exactness),
    ("Swizzle", cute.Swizzle, ["int", "int", "int"], law_swizzle),
    ("swizzle_call", lambda sw, x: sw(x), ["swizzle!", "int"], law_swizzle_call),
    ("make_swizzle", lambda y, z: cute.make_swizzle(None, yyy_msk=y, zzz_msk=z), ["int", "int"], law_make_swizzle),
    ("ComposedLayout", cute.make_composed_layout, ["swizzle", "int", "layout"], None),
    ("composed_call", lambda c, x: c(x), ["composed!", "coord"], None),
    ("composed_composition", cute.composition, ["composed", "tiler"], None),
    ("layout_o_swizzle", cute.composition, ["layout", "swizzle"], None),
    ("composed_divide", cute.zipped_divide, ["composed", "tiler"], None),
    ("composed_slice", cute.slice_and_offset, ["coord", "composed"], None),
    ("get_swizzle_portion", cute.get_swizzle_portion, ["composed"], None),
    ("E", cute.E, ["int"], None),
    ("ScaledBasis", cute.ScaledBasis, ["int", "tuple"], None),
    ("make_basis_like", cute.make_basis_like, ["shape"], None),
    ("make_identity_layout", cute.make_identity_layout, ["shape"], law_identity_layout),
    ("basis_get", cute.basis_get, ["int", "tuple"], None),
    # parsing
    ("parse_layout", cute.parse_layout, ["text"], law_parse),
    ("parse_int_tuple", cute.parse_int_tuple, ["text"], None),
    ("parse_swizzle", cute.parse_swizzle, ["text"], None),
    # host tensors and pointers
    ("make_tensor", lambda n, layout: cute.make_tensor(np.arange(64, dtype=np.float32), layout), ["int", "layout"], None),
    ("tensor_read", lambda t, c: t[c], ["tensor!", "coord"], law_tensor_read),
    ("tensor_write", lambda t, c: t.__setitem__(c, 1.0), ["tensor!", "coord"], None),
    ("local_tile", cute.local_tile, ["tensor", "tiler", "coord"], law_view),
    ("local_partition", cute.local_partition, ["tensor", "layout", "int"], law_view),
    ("domain_offset", cute.domain_offset, ["coord", "tensor"], None),
    ("recast_tensor", cute.recast_tensor, ["tensor", "dtype"], None),
    ("make_fragment_like", cute.make_fragment_like, ["layout", "dtype"], None),
    ("make_identity_tensor", cute.make_identity_tensor, ["shape"], None),
    ("make_ptr", lambda a, al: cute.make_ptr(cute.Float32, a, cute.AddressSpace.gmem, al), ["int", "bits"], law_pointer),
    ("make_ptr_any", cute.make_ptr, ["dtype", "int", "any", "bits"], None),
    ("Pointer", cute.Pointer, ["dtype", "any", "bits", "int"], None),
    ("pointer_add", lambda p, n: p + n, ["pointer!", "int"], law_pointer_add),
    ("Tensor", cute.Tensor, ["any", "layout"], None),
    ("make_coord_tensor", cute.tensor.make_coord_tensor, ["layout"], None),
    ("make_fake_tensor", cute.runtime.make_fake_tensor, ["dtype", "shape", "tuple"], None),
    ("make_smem_layout_atom", cute.make_smem_layout_atom, ["any", "bits"], None),
    # the remaining basis, composed and swizzle helpers
    ("basis_value", cute.basis_value, ["int"], None),
    ("as_arith_tuple", cute.as_arith_tuple, ["any"], None),
    ("ArithTuple_add", lambda t, x: cute.ArithTuple(t) + x, ["shape!", "tuple"], None),
    ("basis_scale", lambda k: cute.E(1) * k, ["int"], None),
    ("get_nonswizzle_portion", cute.get_nonswizzle_portion, ["composed"], None),
    ("make_composed_layout", cute.make_composed_layout, ["any", "int", "layout"], None),
    ("SmemPtrFlag", cute.SmemPtrFlag, ["bits", "int"], None),
    ("is_byte_swizzled", cute.is_byte_swizzled, ["composed"], law_predicate),
    ("is_byte_swizzled_any", cute.is_byte_swizzled, ["any"], law_predicate),
    ("as_position_independent_swizzle_layout", cute.as_position_independent_swizzle_layout, ["composed"], None),
    ("flagged_position_independent", cute.as_position_independent_swizzle_layout, ["flagged"], law_position_independent),
    # shared storage and pointer casts
    ("recast_ptr", cute.recast_ptr, ["pointer!", "any", "dtype"], None),
    ("size_in_bytes", cute.size_in_bytes, ["dtype", "layout"], None),
    ("size_in_bytes_any", cute.size_in_bytes, ["any", "any"], None),
    # multicast masks of a cluster layout (static coordinates here; traced ones in tests/jit)
    ("make_layout_image_mask", cute.make_layout_image_mask, ["layout", "tuple", "int"], None),
]
ROLES["pointer"] = st.just(_ptr())


OUTCOMES = collections.Counter()  # (name, "returned" | "raised"): how often each outcome was seen


def _call(fn, args):
    def on_alarm(signum, frame):
        raise TimeoutError(f"the call did not return within {CALL_SECONDS} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _show(args):
    out = []
    for a in args:
        try:
            text = repr(a)
        except Exception:
            text = type(a).__name__
        out.append(text if len(text) < 120 else text[:117] + "...")
    return ", ".join(out)


@pytest.mark.parametrize("name, fn, roles, law", API, ids=[e[0] for e in API])
@settings(max_examples=int(os.environ.get("CUTE_PY_FUZZ_EXAMPLES", 40)), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_public_api_returns_a_lawful_result_or_raises_a_cute_error(name, fn, roles, law, data):
    args = [data.draw(arg(r), label=r) for r in roles]
    try:
        result = _call(fn, args)
    except CuteError:
        OUTCOMES[name, "raised"] += 1
        return
    except TimeoutError:
        pytest.fail(f"{name}({_show(args)}) hangs")
    except Exception as e:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{name}({_show(args)}) raised {type(e).__name__}: {e}")
    OUTCOMES[name, "returned"] += 1
    try:
        with_any(law)(args, result)
    except Invalid:
        pytest.fail(f"{name}({_show(args)}) accepted an invalid argument and returned {result!r}")
    except AssertionError as e:
        pytest.fail(f"{name}({_show(args)}) returned {result!r}, which breaks its law: {e}")


def test_the_fuzz_covers_every_public_algebra_and_tensor_name():
    fuzzed = {getattr(e[1], "__name__", "") for e in API} | {e[0] for e in API}
    skipped = {  # names that are dtypes, enums, error classes, caches, printing, the copy atoms, or type predicates
        "AddressSpace", "ArithTuple", "BFloat16", "Boolean", "CopyAtom", "CopyOp", "CopyUniversalOp", "CuteError", "CuteIndexError",
        "CuteTypeError", "CuteValueError", "DivisibilityError", "Float16", "Float32", "Float64", "Float8E4M3FN",
        "Float8E5M2", "Int16", "Int32", "Int64", "Int8", "NotInjectiveError", "RankError", "SmemLayoutAtomKind",
        "StaticValueRequired", "TFloat32", "ThrCopy", "TiledCopy", "Uint16", "Uint32", "Uint64", "Uint8", "Pointer",
        "Tensor", "clear_caches", "memoization", "nvgpu", "runtime", "viz", "print_layout", "print_tensor",
        "is_layout", "is_swizzle", "is_tensor", "is_composed_layout", "is_scaled_basis", "make_copy_atom",
        "make_tiled_copy", "make_tiled_copy_tv", "dtypes",
    }
    # the compiler's names (decorators, kernel builtins, device copies) are exercised by tests/jit and tests/gpu
    skipped |= {"Compiled", "DeviceArraySpec", "arch", "async_copy", "compile", "compiler", "copy", "if_", "jit",
                "kernel", "make_fragment", "predicate", "range", "tma_copy", "struct", "Constexpr", "c2d_im2col"}
    # the numeric base class and the submodules of the DSL's layout (utils, pipeline: tests/jit, tests/cute)
    skipped |= {"Numeric", "pipeline", "utils"}
    # the type aliases of annotations (no values to fuzz)
    skipped |= {"Coord", "IntTuple", "Shape", "Stride", "Tile", "Tiler", "XTuple"}
    # the MMA atoms and their device gemm (tests/cute/test_mma_*.py, tests/jit, tests/gpu)
    skipped |= {"MmaAtom", "MmaOp", "TiledMma", "ThrMma", "gemm", "make_mma_atom", "make_tiled_mma",
                "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C"}
    missing = {n for n in cute.__all__ if n not in fuzzed and n not in skipped}
    assert not missing, f"public names without a fuzz entry: {sorted(missing)}"
