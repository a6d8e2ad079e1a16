"""A jit function's host code as the CuTe DSL runs it: ``cute.printf`` prints at each call with the call's values
(``?`` while tracing), integer arguments are run-time values usable in layouts, register tensors and composed
layouts of Python functions exist on the host, and ``printf`` takes C formats."""

import pytest

import cute_py as cute
from cute_py.runtime import from_dlpack


pytest.importorskip("numba_cuda_mlir", reason="compiling needs the MLIR bindings (the jit extra)")
np = pytest.importorskip("numpy", reason="host tensors are numpy arrays")


@cute.jit
def _show(a: cute.Int32, b: cute.Constexpr[int]):
    print(">>>", a)  # a run-time value: ? while tracing
    layout = cute.make_layout((a, b))
    print(">>>", layout)
    cute.printf(">?? {} {}", a, b)
    cute.printf(">?? {}", layout)


def test_host_printf_prints_each_call_with_its_values_and_print_shows_question_marks(capsys):
    _show(cute.Int32(8), 2)
    out = capsys.readouterr().out.splitlines()
    assert out == [">>> ?", ">>> (?,2):(1,?)", ">?? 8 2", ">?? (8,2):(1,8)"]
    c = cute.compile(_show, cute.Int32(8), 2)
    capsys.readouterr()
    c(cute.Int32(5))  # the Constexpr left out; the trace's prints do not run again
    assert capsys.readouterr().out.splitlines() == [">?? 5 2", ">?? (5,2):(1,5)"]
    c(7)
    assert capsys.readouterr().out.splitlines() == [">?? 7 2", ">?? (7,2):(1,7)"]


@cute.jit
def _decide(a: cute.Int32):
    if a > 4:
        cute.printf("big {}", a)
    else:
        cute.printf("small {}", a)


def test_a_decision_on_an_integer_argument_is_guarded_like_an_extent(capsys):
    c = cute.compile(_decide, cute.Int32(9))
    capsys.readouterr()
    c(10)
    c(2)  # decides otherwise: the compile of its own outcome
    c(5)
    assert capsys.readouterr().out.splitlines() == ["big 10", "small 2", "big 5"]


@cute.jit
def _c_format(n: cute.Constexpr[int]):
    lay = cute.make_layout(n)
    for i in cute.range_constexpr(n):
        cute.printf("%d -> %d", i, lay(i))
    cute.printf(lay)


def test_printf_takes_c_formats_and_bare_values(capsys):
    _c_format(3)
    assert capsys.readouterr().out.splitlines() == ["0 -> 0", "1 -> 1", "2 -> 2", "3:1"]


def test_a_composed_layout_of_a_python_function():
    def inner(c):
        x, y = c
        return x, y + 1

    lay = cute.make_composed_layout(inner, (1, 0), cute.make_identity_layout((8, 4)))
    assert lay(0) == (1, 1) and lay(5) == (6, 1) and lay((2, 3)) == (3, 4)
    assert str(lay).startswith("test_a_composed_layout_of_a_python_function.<locals>.inner o (1,0) o")
    offsets = np.array([5, 3, 9, 1])
    gather = cute.make_composed_layout(lambda i: int(offsets[i]), 0, cute.make_layout(4))
    assert [gather(i) for i in range(4)] == [5, 3, 9, 1]
    assert gather == cute.make_composed_layout(gather.inner.fn, 0, cute.make_layout(4))


@cute.jit
def _host_registers(x):
    y = cute.make_rmem_tensor(x.layout, x.element_type)
    y.store(x.load())
    y[0] = 42.0
    return y


def test_register_tensors_on_the_host_are_host_arrays():
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = _host_registers(from_dlpack(data))
    assert float(y[0, 0]) == 42.0
    assert all(float(y[i, j]) == data[i, j] for i in range(4) for j in range(3) if (i, j) != (0, 0))
    assert data[0, 0] == 0.0  # the registers are a copy


def test_the_cuda_helpers_exist_and_name_the_driver_call():
    assert callable(cute.cuda.initialize_cuda_context) and callable(cute.cuda.stream_sync)
