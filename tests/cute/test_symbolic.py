"""Laws of run-time extents (``SymInt``): evaluation commutes with arithmetic, derived divisors divide every value,
static operands fold, and nothing reads a value while compiling."""

import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py.core.symbolic import SymInt, has_symbols, substitute, sym_int, sym_leaves
from cute_py.errors import CuteValueError, StaticValueRequired

OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
       "min": min, "max": max}
NAMES = ("M", "N", "K")


@st.composite
def expressions(draw, depth=3):
    """``(expression, the same expression as a function of the leaf values)`` over leaves M, N, K and ints."""
    divs = {"M": 1, "N": 16, "K": 8}
    if depth == 0 or draw(st.booleans()):
        if draw(st.booleans()):
            v = draw(st.integers(0, 40))
            return v, lambda env, v=v: v
        name = draw(st.sampled_from(NAMES))
        return SymInt.leaf(name, 32, divs[name]), lambda env, name=name: env[name]
    op = draw(st.sampled_from(sorted(OPS)))
    a, fa = draw(expressions(depth=depth - 1))
    b, fb = draw(expressions(depth=depth - 1))
    if op in ("//", "%"):  # a divisor is a positive static int (as tilers are)
        b = draw(st.integers(1, 12))
        fb = lambda env, b=b: b
    if op == "-":  # shapes stay non-negative: subtract a static amount from a sum
        a = a + b
        fa = lambda env, fa=fa, fb=fb: fa(env) + fb(env)
    fn = OPS[op]
    if op in ("min", "max"):  # min_/max_ of whichever operand is symbolic (as the algebra's imin/imax call them)
        sym = a if isinstance(a, SymInt) else b
        other = b if sym is a else a
        x = fn(a, b) if not isinstance(sym, SymInt) else (sym.min_(other) if op == "min" else sym.max_(other))
    else:
        x = fn(a, b)
    return x, lambda env, fa=fa, fb=fb, fn=fn: fn(fa(env), fb(env))


leaf_values = st.fixed_dictionaries({"M": st.integers(0, 5000), "N": st.integers(0, 300).map(lambda v: 16 * v),
                                     "K": st.integers(0, 600).map(lambda v: 8 * v)})


@settings(max_examples=300, deadline=None)
@given(expressions(), leaf_values)
def test_evaluate_commutes_with_arithmetic_and_divisors_divide(expr, env):
    x, reference = expr
    want = reference(env)
    got = x.evaluate(env) if isinstance(x, SymInt) else x
    assert got == want
    if isinstance(x, SymInt):
        assert got % x.known_divisor == 0, (x.describe(), x.known_divisor, got)
    else:  # no symbolic operand reached the result: a plain int
        assert type(x) is int


def test_static_operands_fold_and_identities_simplify():
    M = SymInt.leaf("M")
    assert M * 1 is M and 1 * M is M and M + 0 is M and M // 1 is M
    assert M * 0 == 0 and M % 1 == 0
    assert str(M * 16) == "?{div=16}" and str(M) == "?"
    assert str(SymInt.leaf("N", 32, 16) * 4 + 64) == "?{div=64}"


@pytest.mark.parametrize("use", [bool, int, lambda m: m < 3, lambda m: m == 3, lambda m: m >= 0, hash,
                                 lambda m: list(range(m))])
def test_a_run_time_value_is_never_read_while_compiling(use):
    M = SymInt.leaf("M")
    with pytest.raises((StaticValueRequired, TypeError)):
        use(M)


def test_errors_name_the_rule():
    with pytest.raises(CuteValueError, match="32 or 64"):
        sym_int(16)
    with pytest.raises(CuteValueError, match="divisibility"):
        sym_int(divisibility=0)
    with pytest.raises(CuteValueError, match="divides by zero"):
        SymInt.leaf("M") // 0
    with pytest.raises(CuteValueError, match="not bound"):
        (SymInt.leaf("M") + 1).evaluate({})


def test_walks_layouts_tensors_and_bases():
    M, N = SymInt.leaf("M"), SymInt.leaf("N", 32, 16)
    L = cute.make_layout((M, (N, 4)), stride=(N * 4, (4, 1)))
    assert [s.name for s in sym_leaves(L)] == ["M", "N"]
    assert substitute(L, lambda s: s.evaluate({"M": 3, "N": 32})) == cute.make_layout((3, (32, 4)), stride=(128, (4, 1)))
    t = cute.make_identity_tensor((M, N))
    assert has_symbols(t)
    c = substitute(t, lambda s: s.evaluate({"M": 3, "N": 32}))
    assert c.shape == (3, 32) and not has_symbols(c)
    assert str(cute.zipped_divide(L, (64,))) .startswith("((64),(?,")
