"""``cute.printf`` in a kernel: the DSL's ``{}`` format becomes one C format for vprintf, with static arguments
printed into it at trace time and run-time ones passed as 64-bit values; Python's ``print`` shows run-time values as
``?``; format errors name the rule at the user's line. The device output is checked in tests/gpu."""

import re

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.compiler import DeviceArraySpec, TraceError  # noqa: E402

from _trace_checks import assert_trace_error  # noqa: E402


def _compile(kernel, *specs):
    @cute.jit
    def host(*args):
        kernel(*args).launch(grid=1, block=32)

    return cute.compile(host, *[DeviceArraySpec(d, (32,)) for d in specs])


@cute.kernel
def printing_kernel(x, u):
    i, _, _ = cute.arch.thread_idx()
    cute.printf("i={} x={} u={} shape={} pair={} ok={} {{braces}} 100%", i, x[i], u[i], x.shape, (i, x[i] * 2),
                x[i] > 0)


def test_the_format_becomes_one_c_format_with_static_parts_filled_in():
    c = _compile(printing_kernel, "Float32", "Uint32")
    fmt = re.search(r'format = "([^"]*)"', c.mlir).group(1)
    assert fmt == "i=%lld x=%.9g u=%llu shape=32 pair=(%lld, %.9g) ok=%lld {braces} 100%%\\0A"
    assert "call.uni (retval0), vprintf" in c.ptx


@cute.kernel
def bad_count(x):
    i, _, _ = cute.arch.thread_idx()
    cute.printf("{} and {}", i)


@cute.kernel
def bad_brace(x):
    i, _, _ = cute.arch.thread_idx()
    cute.printf("{i}", i)


@pytest.mark.parametrize("kernel, text, fragment", [
    (bad_count, 'cute.printf("{} and {}", i)', "has 2 placeholders, got 1 arguments"),
    (bad_brace, 'cute.printf("{i}", i)', "has a lone '{' at 0"),
])
def test_format_errors_are_trace_errors_at_the_users_line(kernel, text, fragment):
    with pytest.raises(TraceError) as e:
        _compile(kernel, "Int32")
    assert_trace_error(e, kernel, text, fragment)


def test_python_print_shows_run_time_values_as_a_question_mark(capsys):
    @cute.kernel
    def k(x):
        i, _, _ = cute.arch.thread_idx()
        print("value", x[i], "index", i, "size", 32)

    _compile(k, "Float32")
    assert capsys.readouterr().out == "value ? index ? size 32\n"


@cute.kernel
def tensor_printing_kernel(x):
    i, _, _ = cute.arch.thread_idx()
    frag = cute.make_rmem_tensor((2, 3), cute.Float32)
    frag.fill(x[i])
    cute.print_tensor(frag)
    cute.print_tensor(cute.make_identity_tensor((2, 2)), verbose=True)


def test_print_tensor_in_a_kernel_is_one_vprintf_in_the_dsls_text():
    c = _compile(tensor_printing_kernel, "Float32")
    formats = re.findall(r'format = "([^"]*)"', c.mlir)
    assert formats[0] == ("tensor(raw_ptr(?: f32, rmem) o (2,3):(1,2), data=\\0A"
                          "       [[% f, % f, % f, ],\\0A        [% f, % f, % f, ]])\\0A")
    assert formats[1] == "tensor((2,2):(1@0,1@1), data= (\\0A\\09(0,0)=(0,0)\\0A\\09(0,1)=(0,1)\\0A" \
                         "\\09(1,0)=(1,0)\\0A\\09(1,1)=(1,1)\\0A)\\0A"
    assert c.ptx.count("call.uni (retval0), vprintf") == 2


@cute.kernel
def huge_print(x):
    cute.print_tensor(cute.make_rmem_tensor((64, 65), cute.Float32))


def test_print_tensor_in_a_kernel_refuses_more_than_4096_elements():
    with pytest.raises(TraceError, match="at most 4096 elements"):
        _compile(huge_print, "Float32")
