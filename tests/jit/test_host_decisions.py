"""Host code deciding on run-time extents: the decision is taken on the compile's own values and guards the
compile (a call whose values decide otherwise gets the compile of its own outcome; one with no values is
refused), as the CuTe DSL's host code decides at run time."""

import operator

import pytest
from hypothesis import given, settings, strategies as st

import cute_py as cute
from cute_py.compiler.specs.args import DeviceArraySpec
from cute_py.core.symbolic import Decision, SymInt, deciding, describe_guard
from cute_py.errors import GuardMismatch, SpecMismatch, StaticValueRequired
from cute_py.runtime import from_dlpack

from _fake_device import FakeCudaArray, _rows

pytest.importorskip("numba_cuda_mlir", reason="compiling needs the MLIR bindings (the jit extra)")


def marked(rows, address=1 << 32):
    return from_dlpack(FakeCudaArray("float16", (rows, 256), None, address), assumed_align=16).mark_layout_dynamic()


@cute.jit
def branchy(a, b):
    if a.shape[0] > 64:
        _rows(a, b).launch(grid=(a.shape[0], 1, 1), block=32)
    else:  # another program for few rows: the copy twice (the result is the same)
        _rows(a, b).launch(grid=(a.shape[0], 1, 1), block=32)
        _rows(a, b).launch(grid=(a.shape[0], 1, 1), block=32)


def test_a_host_decision_is_taken_on_the_compile_values_and_guards_the_compile():
    big = branchy.compile(marked(100), marked(100, 1 << 33))
    assert [describe_guard(g) for g in big.guards] == ["a.shape[0] > 64 was True"]
    assert len(big.launches) == 1
    small = branchy.compile(marked(10), marked(10, 1 << 33))
    assert [describe_guard(g) for g in small.guards] == ["a.shape[0] > 64 was False"]
    assert len(small.launches) == 2
    # each outcome is compiled once: the memory cache keeps both variants
    assert branchy.compile(marked(200), marked(200, 1 << 33)) is big
    assert branchy.compile(marked(64), marked(64, 1 << 33)) is small


def test_a_call_deciding_otherwise_is_handed_to_the_compile_of_its_outcome():
    big = branchy.compile(marked(100), marked(100, 1 << 33))
    args = (marked(3), marked(3, 1 << 33))
    with pytest.raises(GuardMismatch, match=r"compiled for a.shape\[0\] > 64 was True; this call's run-time extents "
                                            r"decide it otherwise"):
        big._bind(args)
    other = big._respecialise(args)
    assert other is not big and len(other.launches) == 2
    other._bind(args)  # its own guard holds
    assert isinstance(GuardMismatch("x"), SpecMismatch)  # refused as any argument the compile cannot take


def test_a_decision_without_values_is_refused_and_int_stays_static_only():
    spec = DeviceArraySpec("float16", (cute.sym_int(), 256), (256, 1))
    with pytest.raises(StaticValueRequired, match="the arguments give it no value"):
        branchy.compile(spec, spec)

    @cute.jit
    def counts(a):
        return list(range(a.shape[0]))  # int(): the value itself would be compiled in

    with pytest.raises(StaticValueRequired, match="the index value"):
        counts.compile(marked(5))


_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge}


@st.composite
def expressions(draw, leaves):
    depth = draw(st.integers(0, 3))
    x = draw(st.sampled_from(leaves))
    for _ in range(depth):
        op = draw(st.sampled_from(["+", "-", "*", "//", "%"]))
        k = draw(st.integers(1, 9))
        other = draw(st.one_of(st.just(k), st.sampled_from(leaves)))
        if op in ("//", "%") and isinstance(other, SymInt):
            other = k  # a leaf may be 0: no division by a run-time value
        x = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
             "%": operator.mod}[op](x, other)
    return x


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_law_decisions_are_python_on_the_values_and_guards_catch_exactly_the_other_outcomes(data):
    leaves = [SymInt.leaf(f"n{i}") for i in range(3)]
    env = {f"n{i}": data.draw(st.integers(0, 50)) for i in range(3)}
    other_env = {f"n{i}": data.draw(st.integers(0, 50)) for i in range(3)}
    exprs = [data.draw(expressions(leaves)) for _ in range(3)]
    ops = [data.draw(st.sampled_from(sorted(_OPS))) for _ in exprs]
    rhs = [data.draw(st.integers(-5, 60)) for _ in exprs]
    d = Decision(env)
    with deciding(d):
        got = [_OPS[op](e, r) if isinstance(e, SymInt) else None for e, op, r in zip(exprs, ops, rhs)]
    for e, op, r, g in zip(exprs, ops, rhs, got):
        if isinstance(e, SymInt):
            assert g is _OPS[op](e.evaluate(env), r)
    assert Decision.failed(d.guards, env) is None
    changed = [g for g in d.guards if _OPS[g[0]](g[1].evaluate(other_env), g[2]) != g[3]]
    assert Decision.failed(d.guards, other_env) == (changed[0] if changed else None)
    # outside a deciding context nothing is decided
    for e in exprs:
        if isinstance(e, SymInt):
            with pytest.raises(StaticValueRequired):
                bool(e > 0)
