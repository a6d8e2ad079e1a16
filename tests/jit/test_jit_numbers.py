"""Numbers in a kernel: every numeric type as a traced value, the CuTe DSL's promotion rules, conversions lowered
to ``cvt`` with their rounding and saturation, the operators (reflected ones included) and their PTX, and the
errors that name what cannot be computed. The values themselves are checked on the GPU
(tests/gpu/test_numbers_gpu.py)."""

import re

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.compiler import DeviceArraySpec, TraceError  # noqa: E402
from cute_py.compiler.lang.numeric import promote, python_dtype  # noqa: E402
from cute_py.tensor import dtypes as T  # noqa: E402

from _trace_checks import assert_trace_error  # noqa: E402

# The CuTe DSL's promotion of two operand types (cutlass.base_dsl.typing's rules, written out by hand)
PROMOTIONS = [
    (T.Int32, T.Int32, T.Int32), (T.Int8, T.Int32, T.Int32), (T.Int64, T.Int16, T.Int64),
    (T.Uint32, T.Int32, T.Uint32), (T.Uint8, T.Int32, T.Int32), (T.Uint64, T.Int32, T.Uint64),
    (T.Int64, T.Uint32, T.Int64), (T.Uint16, T.Uint8, T.Uint16), (T.Uint32, T.Int64, T.Int64),
    (T.Float16, T.Int32, T.Float16), (T.Int64, T.BFloat16, T.BFloat16), (T.Float16, T.Float32, T.Float32),
    (T.Float64, T.Float16, T.Float64), (T.BFloat16, T.Float16, T.Float16), (T.TFloat32, T.Float32, T.Float32),
    (T.Float8E4M3FN, T.Float16, T.Float16), (T.Float32, T.Float8E5M2, T.Float32), (T.Boolean, T.Int8, T.Int8),
    (T.Boolean, T.Float16, T.Float16), (T.Float8E4M3FN, T.Int32, T.Float8E4M3FN),
]


@pytest.mark.parametrize("a, b, want", PROMOTIONS)
def test_promotion_follows_the_dsl(a, b, want):
    assert promote(a, b) is want and promote(b, a) is want


def test_booleans_compute_as_int32_and_stay_boolean_in_bitwise_operations():
    assert promote(T.Boolean, T.Boolean) is T.Int32
    assert promote(T.Boolean, T.Boolean, arithmetic=False) is T.Boolean


@pytest.mark.parametrize("a, b", [(T.Float8E4M3FN, T.Float8E5M2), (T.Float8E5M2, T.Float8E4M3FN)])
def test_two_different_8_bit_floats_do_not_promote(a, b):
    with pytest.raises(TraceError, match="no implicit promotion between"):
        promote(a, b)


@pytest.mark.parametrize("value, want", [(3, T.Int32), (-(1 << 31), T.Int32), (1 << 31, T.Int64),
                                         (1 << 63, T.Uint64), (2.5, T.Float32), (True, T.Boolean), ("3", None)])
def test_python_numbers_have_the_dsl_types(value, want):
    assert python_dtype(value) is want


def _compile(kernel, *specs, scalars=()):
    @cute.jit
    def host(*args):
        kernel(*args).launch(grid=1, block=32)

    return cute.compile(host, *[DeviceArraySpec(d, (32,)) for d in specs], *scalars)


@cute.kernel
def arithmetic_kernel(x, y, out):
    i, _, _ = cute.arch.thread_idx()
    out[i] = (x[i] + y[i]) * x[i] - y[i] / x[i]


@pytest.mark.parametrize("dtype, ptx", [
    ("Float32", ["add.rn.f32", "mul.rn.f32", "div.rn.f32", "sub.rn.f32"]),
    ("Float16", ["add.rn.f16", "mul.rn.f16", "div.rn.f32", "cvt.rn.f16.f32", "sub.rn.f16"]),
    ("BFloat16", ["add.rn.bf16", "mul.rn.bf16", "div.rn.f32", "cvt.rn.bf16.f32", "sub.rn.bf16"]),
    ("Float64", ["add.rn.f64", "mul.rn.f64", "div.rn.f64", "sub.rn.f64"]),
])
def test_float_arithmetic_rounds_to_nearest_even_in_its_type(dtype, ptx):
    c = _compile(arithmetic_kernel, dtype, dtype, dtype)
    for instruction in ptx:
        assert instruction in c.ptx, instruction


@cute.kernel
def mixed_kernel(x, n, out):
    i, _, _ = cute.arch.thread_idx()
    out[i] = (x[i] * 2 + 0.5 * n[i] - (1 << (i & 7))).to(out.element_type)


def test_mixed_operands_promote_and_python_numbers_are_int32_and_float32():
    # Float16 * 2 (Int32) -> Float16; 0.5 (Float32) * Int32 -> Float32; Float16 + Float32 -> Float32
    c = _compile(mixed_kernel, "Float16", "Int32", "Float32")
    body = c.mlir
    assert re.search(r"arith\.mulf %\w+, %\w+ : f16", body)
    assert re.search(r"arith\.sitofp %\w+ : i32 to f32", body)
    assert re.search(r"arith\.extf %\w+ : f16 to f32", body)
    assert re.search(r"arith\.addf %\w+, %\w+ : f32", body)


@cute.kernel
def conversions_kernel(f, i8, u16, h, b, e4, e5, t):
    i, _, _ = cute.arch.thread_idx()
    x = f[i]
    i8[i] = x.to(cute.Int8)
    u16[i] = cute.Uint16(x)
    h[i] = x.to(cute.Float16)
    b[i] = x.to(cute.BFloat16)
    e4[i] = x.to(cute.Float8E4M3FN)
    e5[i] = cute.Float8E5M2(h[i])
    t[i] = e4[i].to(cute.Float32) + e5[i].to(cute.Float32) + x.to(cute.TFloat32)


def test_conversions_lower_to_cvt_with_their_rounding_and_saturation():
    c = _compile(conversions_kernel, "Float32", "Int8", "Uint16", "Float16", "BFloat16", "Float8E4M3FN",
                 "Float8E5M2", "Float32")
    for instruction in ("cvt.rzi.s16.f32", "cvt.rzi.u16.f32", "cvt.rn.f16.f32", "cvt.rn.bf16.f32",
                        "cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f32", "cvt.rn.f16x2.e4m3x2",
                        "cvt.rn.f16x2.e5m2x2", "cvt.rna.tf32.f32"):
        assert instruction in c.ptx, instruction


@cute.kernel
def integer_kernel(a, b, out):
    i, _, _ = cute.arch.thread_idx()
    x, y = a[i], b[i]
    out[i] = (x // y) + (x % y) + (x << y) + (x >> y) + (5 & x) + (1 << y) - abs(x) + (~x) + x ** 3


@pytest.mark.parametrize("dtype, mlir, ptx", [
    ("Int32", ["arith.divsi", "arith.remsi", "arith.shrsi"], ["div.s32", "shl.b32", "shr.s32", "and.b32"]),
    ("Uint32", ["arith.divui", "arith.remui", "arith.shrui"], ["div.u32", "shl.b32", "shr.u32", "and.b32"]),
    ("Int64", ["arith.divsi", "arith.remsi", "arith.shrsi"], ["div.s64", "shl.b64", "shr.s64"]),
])
def test_integer_operators_and_their_reflected_forms(dtype, mlir, ptx):
    c = _compile(integer_kernel, dtype, dtype, dtype)
    for op in mlir:
        assert op in c.mlir, op
    for instruction in ptx:
        assert instruction in c.ptx, instruction
    # a run-time shift by the width or more is clamped (LLVM leaves it undefined): a compare and a select
    assert re.search(r"arith\.cmpi uge", c.mlir) and "arith.select" in c.mlir


@cute.kernel
def compare_kernel(a, b, out):
    i, _, _ = cute.arch.thread_idx()
    out[i] = (a[i] < b[i]) | (a[i] != b[i])


def test_float_comparisons_are_false_on_nan_but_not_equal_is_true():
    c = _compile(compare_kernel, "Float32", "Float32", "Boolean")
    assert re.search(r"arith\.cmpf olt", c.mlir) and re.search(r"arith\.cmpf une", c.mlir)


@cute.kernel
def bad_bitwise(x, out):
    i, _, _ = cute.arch.thread_idx()
    out[i] = x[i] & 1


@cute.kernel
def bad_f8(x, out):
    i, _, _ = cute.arch.thread_idx()
    out[i] = x[i] * x[i]


@cute.kernel
def bad_exponent(x, out):
    i, _, _ = cute.arch.thread_idx()
    out[i] = x[i] ** x[i]


@cute.kernel
def bad_shift(x, out):
    i, _, _ = cute.arch.thread_idx()
    out[i] = x[i] << -1


@cute.kernel
def bad_store(x, out):
    i, _, _ = cute.arch.thread_idx()
    out[i] = x[i] + 1.0


@pytest.mark.parametrize("kernel, specs, text, fragment", [
    (bad_bitwise, ("Float32", "Float32"), "out[i] = x[i] & 1", "& takes integers, got Float32 and Int32"),
    (bad_f8, ("Float8E4M3FN", "Float8E4M3FN"), "out[i] = x[i] * x[i]",
     "mul on Float8E4M3FN is not supported: 8-bit floats are a storage format"),
    (bad_exponent, ("Int32", "Int32"), "out[i] = x[i] ** x[i]", "** takes a static Python int exponent"),
    (bad_shift, ("Int32", "Int32"), "out[i] = x[i] << -1", "negative shift count -1"),
    (bad_store, ("Int32", "Int32"), "out[i] = x[i] + 1.0",
     "the Float32 value cannot be stored as Int32 (convert it first: x.to(cute.Int32))"),
])
def test_what_cannot_be_computed_is_a_trace_error_at_the_users_line(kernel, specs, text, fragment):
    with pytest.raises(TraceError) as e:
        _compile(kernel, *specs)
    assert_trace_error(e, kernel, text, fragment)


def test_traced_values_print_as_a_question_mark_and_show_their_type():
    seen = []

    @cute.kernel
    def k(x, out):
        i, _, _ = cute.arch.thread_idx()
        v = x[i] * 2
        seen.append((str(v), repr(v), f"{v}"))
        out[i] = v

    _compile(k, "Float16", "Float16")
    assert seen == [("?", "TracedFloat(Float16)", "?")]


@cute.kernel
def wrapping_kernel(u, out):
    i, _, _ = cute.arch.thread_idx()
    x = u[i].to(cute.Int32)  # non-negative (from a Uint16), but data: its square may wrap to a negative Int32
    out[i] = x * x < x


def test_sums_and_products_of_data_may_wrap_so_their_sign_is_not_assumed():
    # the GPU law found it: a Uint16 squared in Int32 wraps negative; a signed compare must stay signed
    c = _compile(wrapping_kernel, "Uint16", "Boolean")
    assert re.search(r"arith\.cmpi slt", c.mlir) and not re.search(r"arith\.cmpi ult", c.mlir)


def test_index_arithmetic_keeps_its_sign_facts():
    @cute.kernel
    def k(out):
        i, _, _ = cute.arch.thread_idx()
        b, _, _ = cute.arch.block_idx()
        out[i] = (b * 128 + i) // 7 < i

    c = _compile(k, "Boolean")
    assert "arith.divui" in c.mlir and re.search(r"arith\.cmpi ult", c.mlir)


@cute.kernel
def bad_math_f64(x, out):
    i, _, _ = cute.arch.thread_idx()
    out[i] = cute.math.exp(x[i])


@cute.kernel
def bad_math_arg(x, out):
    i, _, _ = cute.arch.thread_idx()
    out[i] = cute.math.log(x)


@pytest.mark.parametrize("kernel, specs, text, fragment", [
    (bad_math_f64, ("Float64", "Float64"), "out[i] = cute.math.exp(x[i])",
     "cute.math.exp of Float64 is not supported (sqrt and fma are)"),
    (bad_math_arg, ("Float32", "Float32"), "out[i] = cute.math.log(x)", "cute.math.log takes a number"),
])
def test_math_on_what_it_cannot_take_is_a_trace_error(kernel, specs, text, fragment):
    with pytest.raises(TraceError) as e:
        _compile(kernel, *specs)
    assert_trace_error(e, kernel, text, fragment)


@cute.kernel
def math_f64_kernel(x, out):
    i, _, _ = cute.arch.thread_idx()
    out[i] = cute.math.sqrt(x[i]) + cute.math.fma(x[i], x[i], 1.0)


def test_float64_has_correctly_rounded_sqrt_and_fma():
    c = _compile(math_f64_kernel, "Float64", "Float64")
    assert "sqrt.rn.f64" in c.ptx and "fma.rn.f64" in c.ptx


def test_range_constexpr_unrolls_and_const_expr_folds():
    @cute.kernel
    def k(x, out):
        i, _, _ = cute.arch.thread_idx()
        acc = x[i]
        for j in cute.range_constexpr(3):
            acc = acc * 2 + j
        if cute.const_expr(out.element_type is cute.Float32):
            out[i] = acc

    c = _compile(k, "Float32", "Float32")
    assert c.mlir.count("arith.mulf") == 3 and "cond_br" not in c.mlir  # unrolled, folded: no branch


@cute.kernel
def bad_constexpr_range(x, out):
    i, _, _ = cute.arch.thread_idx()
    for j in cute.range_constexpr(i):
        out[j] = x[j]


@cute.kernel
def bad_const_expr(x, out):
    i, _, _ = cute.arch.thread_idx()
    if cute.const_expr(i > 0):
        out[i] = x[i]


@pytest.mark.parametrize("kernel, text, fragment", [
    (bad_constexpr_range, "cute.range_constexpr(i)", "range_constexpr takes static ints"),
    (bad_const_expr, "cute.const_expr(i > 0)", "const_expr needs a value known while tracing"),
])
def test_constexpr_forms_refuse_run_time_values(kernel, text, fragment):
    with pytest.raises(TraceError) as e:
        _compile(kernel, "Float32", "Float32")
    assert_trace_error(e, kernel, text, fragment)


def test_a_negative_python_int_with_an_unsigned_value_wraps_as_the_dsl_converts_it():
    from _control_flow_helpers import compile_kernel, run_kernel
    from cute_py import arch

    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        u = n.to(cute.Uint32)
        arch.mbarrier_init(bar, (u + (-1)).to(cute.Int32))  # u - 1 modulo 2^32

    assert run_kernel(compile_kernel(k, cute.Int32(0)).mlir, [5]) == [4]
