"""The numeric types are one set: ``cute.Int32`` is the element type, the annotation of a run-time parameter,
the host value constructor (a ``Scalar``) and, in a kernel, the conversion of a traced value."""

import re

import pytest

import cute_py as cute
from cute_py.compiler import ArgumentError
from cute_py.tensor.dtypes import Scalar
from cute_py.testing import RuntimeInt

from _trace_checks import assert_trace_error


@pytest.mark.parametrize("dtype, value, expected", [
    (cute.Int32, 6, 6), (cute.Int32, -(1 << 31), -(1 << 31)), (cute.Int64, (1 << 63) - 1, (1 << 63) - 1),
    (cute.Uint8, 255, 255), (cute.Int8, -128, -128), (cute.Float32, 1, 1.0), (cute.Float16, 0.5, 0.5),
    (cute.Boolean, True, True)])
def test_a_numeric_type_called_on_the_host_is_a_scalar_of_that_type(dtype, value, expected):
    s = dtype(value)
    assert type(s) is Scalar and s.dtype is dtype and s.kind == dtype.name
    assert s.value == expected and type(s.value) is type(expected)
    assert repr(s) == f"{dtype.name}({expected!r})"
    assert dtype(s).value == expected  # a scalar converts as its value


@pytest.mark.parametrize("dtype, value, fragment", [
    (cute.Int32, 1 << 31, "does not fit in Int32"), (cute.Int32, -(1 << 31) - 1, "does not fit in Int32"),
    (cute.Uint8, -1, "does not fit in Uint8 ([0, 255])"), (cute.Int8, 128, "does not fit in Int8"),
    (cute.Int32, 1.5, "takes a Python int"), (cute.Int32, True, "takes a Python int"),
    (cute.Int64, "3", "takes a Python int"), (cute.Float32, True, "takes a Python float"),
    (cute.Float32, "x", "takes a Python float"), (cute.Boolean, "x", "takes a Python bool, int or float")])
def test_a_value_the_type_cannot_hold_is_an_argument_error_at_the_callers_line(dtype, value, fragment):
    with pytest.raises(ArgumentError, match=re.escape(fragment)) as e:
        dtype(value)
    assert str(e.value).startswith(f"{__file__}:")


def test_boolean_of_a_number_is_its_truth_as_in_the_dsl():
    assert cute.Boolean(1).value is True and cute.Boolean(0).value is False and cute.Boolean(0.5).value is True


def test_numpy_scalars_are_taken_as_the_python_values_they_hold():
    np = pytest.importorskip("numpy")
    assert cute.Int32(np.int64(-5)).value == -5 and type(cute.Int32(np.uint8(7)).value) is int
    assert cute.Float32(np.float16(0.5)).value == 0.5 and type(cute.Float32(np.float32(2)).value) is float
    with pytest.raises(ArgumentError, match="does not fit in Int32"):
        cute.Int32(np.int64(1 << 40))
    with pytest.raises(ArgumentError, match="takes a Python int"):
        cute.Int32(np.float64(1.0))
    with pytest.raises(ArgumentError, match="takes a Python int"):
        cute.Int32(RuntimeInt(3))  # a run-time value is no host constant


def test_in_a_kernel_the_type_converts_a_traced_integer():
    @cute.kernel
    def k(n: cute.Int32):
        wide = cute.Int64(n) * (1 << 40)
        with cute.compiler.if_(wide == 0):
            cute.arch.sync_threads()

    def host(n):
        k(n).launch(grid=1, block=32)

    c = cute.compile(host, cute.Int32(3))
    assert "arith.extsi" in c.mlir and "i64" in c.mlir


def test_in_a_kernel_a_type_converts_any_traced_number():
    @cute.kernel
    def k(n: cute.Int32, x: cute.Float32):
        small = cute.Int8(n)
        half = cute.Float16(x)
        back = cute.Int32(small) + cute.Int32(half)
        with cute.compiler.if_(back == 0):
            cute.arch.sync_threads()

    def host(n, x):
        k(n, x).launch(grid=1, block=32)

    c = cute.compile(host, cute.Int32(3), cute.Float32(0.5))
    for op in ("arith.trunci", "arith.truncf", "arith.extsi", "llvm.fptosi.sat"):
        assert op in c.mlir, op


def test_in_a_kernel_a_type_called_on_no_number_is_a_trace_error_at_the_kernels_line():
    @cute.kernel
    def k(n: cute.Int32):
        small = cute.Int8((n, n))  # noqa: F841

    def host(n):
        k(n).launch(grid=1, block=32)

    with pytest.raises(cute.compiler.TraceError) as e:
        cute.compile(host, cute.Int32(3))
    assert_trace_error(e, k, "cute.Int8((n, n))", "Int8() takes a number")


def test_a_scalar_a_kernel_cannot_take_is_an_argument_error():
    @cute.kernel
    def k(n):
        cute.arch.sync_threads()

    def host(n):
        k(n).launch(grid=1, block=32)

    with pytest.raises(ArgumentError, match="an Int32, Int64 or Float32, got Int8"):
        cute.compile(host, cute.Int8(3))


FUTURE_ANNOTATIONS = '''
from __future__ import annotations
import cute_py as cute

@cute.kernel
def k(n: cute.Int32):
    with cute.compiler.if_(n == 0):
        cute.arch.sync_threads()

@cute.jit
def host(n: cute.Int32):
    k(n).launch(grid=1, block=32)
'''


def test_annotations_written_as_strings_mark_run_time_scalars_too(tmp_path):
    # a module with ``from __future__ import annotations`` holds ``cute.Int32`` as a string: still a run-time
    # parameter (a static int would fold the condition away and make if_ refuse it)
    path = tmp_path / "future_kernel.py"
    path.write_text(FUTURE_ANNOTATIONS)
    ns = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    c = cute.compile(ns["host"], 3)
    assert "arith.cmpi" in c.mlir


def test_a_numeric_annotation_string_that_does_not_evaluate_is_an_argument_error_at_the_definition(tmp_path):
    path = tmp_path / "bad_annotation.py"
    path.write_text("from __future__ import annotations\nimport cute_py as cute\n\n"
                    "@cute.jit\ndef host(n: cutlass.Int32, t: torch.Tensor):\n    pass\n")
    with pytest.raises(ArgumentError, match="'cutlass.Int32' of n does not evaluate .NameError") as e:
        exec(compile(path.read_text(), str(path), "exec"), {})
    assert e.value.where == (str(path), 4)
    # a type-checking-only name that is no numeric type is no error
    path.write_text("from __future__ import annotations\nimport cute_py as cute\n\n"
                    "@cute.jit\ndef host(t: torch.Tensor):\n    pass\n")
    exec(compile(path.read_text(), str(path), "exec"), {})


def test_assume_gives_a_traced_integer_a_divisor_that_it_prints_and_pointers_use():
    seen = []

    @cute.kernel
    def k(g, n: cute.Int32):
        m = cute.assume(n, divby=16)
        seen.append((str(n), str(m), str(m * 2), str(cute.Layout((m, 4), (4, 1)))))
        # a gmem pointer advanced by a multiple of 4 floats stays 16-byte aligned: a 128-bit store
        p = g.iterator + m
        v = cute.make_fragment(cute.Layout(4), cute.Float32)
        v.fill(1.0)
        cute.copy(v, cute.make_tensor(p, cute.Layout(4)))

    def host(g, n):
        k(g, n).launch(grid=1, block=1)

    c = cute.compile(host, cute.compiler.DeviceArraySpec("Float32", (1024,)), cute.Int32(32))
    assert seen[0] == ("?", "?{div=16}", "?{div=32}", "(?{div=16},4):(4,1)")
    assert re.search(r"st\.global\.v4\.(f32|b32)", c.ptx), c.ptx
