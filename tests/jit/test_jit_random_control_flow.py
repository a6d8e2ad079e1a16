"""The law of a kernel's Python control flow: a random kernel of ``if``/``elif``/``else``, ``for``, ``while``,
``break``, ``continue``, ``return``, ``and``/``or``/``not`` and register-fragment writes computes what the same
source computes as ordinary Python, for every run-time input tried (the traced MLIR run by an interpreter)."""

from hypothesis import example, given, settings, strategies as st

from _control_flow_helpers import compile_kernel, run_kernel
from _random_programs import load_module, make, run_python

import cute_py as cute


def _load(tmp_path, seed):
    source = make(seed)
    return source, load_module(tmp_path / f"random_kernel_{seed}.py", source, f"_random_kernel_{seed}").kernel


@settings(deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
@example(seed=576)   # a value made in the one branch that does not return, kept as the if's result
def test_a_random_kernel_computes_what_python_computes(tmp_path_factory, seed):
    tmp_path = tmp_path_factory.mktemp("programs")
    source, kernel = _load(tmp_path, seed)
    compiled = compile_kernel(kernel, cute.Int32(0))
    for n in (0, 1, 2, 5, 6, 9, 4094):
        expected = run_python(source, n)
        got = run_kernel(compiled.mlir, [n])
        assert got == expected, f"n={n}\n{source}"
