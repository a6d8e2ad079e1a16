"""The values of the public-API fuzz (``test_fuzz_public_api``): plausible arguments for each parameter role mixed
with hostile ones, and small reference implementations of the algebra, independent of the library."""

import fractions
import operator

import numpy as np
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout
from cute_py.testing import RuntimeInt, swizzles



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
    np.int64(4), np.int32(-2), np.uint8(3), np.int16(16), np.uint64(2), np.int64(0), np.float64(2.0), np.bool_(True),
    np.array(3), np.arange(4), (np.int64(2), np.int32(3)), (np.int64(4), (None, 2)), (object(), 2), (2, 2.0), [np.int64(8), None],
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
