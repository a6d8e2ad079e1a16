"""The numeric ops (mlir_dialects.ops.numeric): 8-bit float and TF32 conversions and the approximate math
instructions verify, lower, give their PTX (FileCheck) and assemble for sm_90a; each verifier rule rejects
what ptxas would, naming the rule."""

import pytest

pytest.importorskip("mlir_dialects._backend", reason="needs the MLIR Python bindings (pip install numba-cuda-mlir==0.6.0)")

import mlir_dialects as md  # noqa: E402
from mlir_dialects._backend import ir, llvm  # noqa: E402
from mlir_dialects.dialect import bool_attr, str_attr  # noqa: E402
from mlir_dialects.errors import OperandTypeError, VerificationError  # noqa: E402
from mlir_dialects.ops.numeric import APPROX_FUNCTIONS, CvtF8ToF16Op, CvtF32ToNarrowOp, MathApproxOp  # noqa: E402
from mlir_dialects.pipeline import to_ptx  # noqa: E402

R, RS = "{{%r[0-9]+}}", "{{%rs[0-9]+}}"


def _keep(k, value):
    """Store ``value`` to global memory, so that a pure result is not folded away before the PTX."""
    llvm.StoreOp(value, k.a["g"])


def _approx(fn, ftz):
    def build(k, c):
        _keep(k, md.math_approx(fn, k.a["f"], ftz=ftz).res)

    suffix = ".ftz" if ftz and fn != "tanh" else ""
    return build, ["CHECK: llvm.inline_asm"], [f"CHECK: {fn}.approx{suffix}.f32 {R}, {R};"]


def _to_f8(kind):
    def build(k, c):
        _keep(k, md.cvt_f32_to_narrow(kind, k.a["f"]).res)

    return build, ["CHECK: llvm.inline_asm"], [f"CHECK: cvt.rn.satfinite.{kind}x2.f32 {RS}, {R}, {R};"]


def _from_f8(kind):
    def build(k, c):
        bits = llvm.TruncOp(ir.IntegerType.get_signless(8), k.a["x"], 0).result
        _keep(k, md.cvt_f8_to_f16(kind, bits).res)

    return build, ["CHECK: llvm.inline_asm"], [f"CHECK: cvt.rn.f16x2.{kind}x2 {R}, {RS};"]


def _tf32(k, c):
    _keep(k, md.cvt_f32_to_narrow("tf32", k.a["f"]).res)


CASES = {f"math_approx_{fn}{'_ftz' if ftz else ''}": _approx(fn, ftz)
         for fn in APPROX_FUNCTIONS for ftz in (False, True)}
CASES.update({f"cvt_f32_narrow_{kind}": _to_f8(kind) for kind in ("e4m3", "e5m2")})
CASES["cvt_f32_narrow_tf32"] = (_tf32, ["CHECK: llvm.inline_asm"], [f"CHECK: cvt.rna.tf32.f32 {R}, {R};"])
CASES.update({f"cvt_f8_f16_{kind}": _from_f8(kind) for kind in ("e4m3", "e5m2")})


def _printf(k, c):
    i64, f64 = ir.IntegerType.get_signless(64), ir.F64Type.get()
    wide = llvm.SExtOp(i64, k.a["x"]).result
    bits = llvm.BitcastOp(i64, llvm.FPExtOp(f64, k.a["f"]).result).result
    md.printf("x = %lld, f = %.9g, 100%%\n", [wide, bits])
    md.printf("no arguments\n")


CASES["printf"] = (_printf, ["CHECK: llvm.mlir.global internal constant @__cute_nvgpu_printf_",
                             "CHECK: llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32",
                             "CHECK: llvm.alloca", "CHECK: llvm.call @vprintf"],
                   ["CHECK: .extern .func (.param .b32 func_retval0) vprintf",
                    "CHECK: call.uni (retval0), vprintf, (param0, param1);",
                    "CHECK: call.uni (retval0), vprintf, (param0, param1);"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_numeric_op_verifies_lowers_and_assembles_for_sm_90a(case, op_case):
    op_case(*CASES[case])


def test_the_approximations_are_pure_and_merge(kernel):
    # no side effects: two identical approximations are one instruction, an unused one is none
    with kernel as k:
        a = md.math_approx("ex2", k.a["f"]).res
        b = md.math_approx("ex2", k.a["f"]).res
        md.math_approx("lg2", k.a["f"])
        _keep(k, llvm.FAddOp(a, b).result)
    ptx = to_ptx(k.module)
    assert ptx.count("ex2.approx.f32") == 1 and "lg2.approx" not in ptx


def test_unknown_kinds_and_functions_are_rejected(kernel):
    f32 = ir.F32Type.get()
    with kernel as k, pytest.raises(VerificationError, match=r"\[narrow-kind\].*e4m3, e5m2, tf32, got 'e3m4'"):
        CvtF32ToNarrowOp.build(str_attr("e3m4"), k.a["f"], ir.IntegerType.get_signless(8))
    with kernel as k, pytest.raises(VerificationError, match=r"\[f8-kind\].*e4m3, e5m2, got 'tf32'"):
        bits = llvm.TruncOp(ir.IntegerType.get_signless(8), k.a["x"], 0).result
        CvtF8ToF16Op.build(str_attr("tf32"), bits, ir.F16Type.get())
    with kernel as k, pytest.raises(VerificationError, match=r"\[approx-function\].*got 'exp'"):
        MathApproxOp.build(str_attr("exp"), str_attr(""), bool_attr(False), k.a["f"], f32)
    with kernel as k, pytest.raises(VerificationError, match=r"\[approx-ftz\].*got 'yes'"):
        MathApproxOp.build(str_attr("ex2"), str_attr("yes"), bool_attr(False), k.a["f"], f32)


def test_operand_and_result_types_are_checked(kernel):
    f32, i8 = ir.F32Type.get(), ir.IntegerType.get_signless(8)
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[value-type\].*f32, got i32"):
        md.math_approx("ex2", k.a["x"])
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[value-type\].*f32, got i32"):
        md.cvt_f32_to_narrow("e4m3", k.a["x"])
    with kernel as k, pytest.raises(VerificationError, match=r"\[narrow-result-type\].*e4m3 conversion gives i8, got f32"):
        CvtF32ToNarrowOp.build(str_attr("e4m3"), k.a["f"], f32)
    with kernel as k, pytest.raises(VerificationError, match=r"\[narrow-result-type\].*tf32 conversion gives f32, got i8"):
        CvtF32ToNarrowOp.build(str_attr("tf32"), k.a["f"], i8)
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[bits-type\].*i8, got i32"):
        md.cvt_f8_to_f16("e4m3", k.a["x"])
    with kernel as k, pytest.raises(VerificationError, match=r"\[approx-result-type\].*f32, got i8"):
        MathApproxOp.build(str_attr("ex2"), str_attr(""), bool_attr(False), k.a["f"], i8)


def test_printf_formats_are_checked_against_their_arguments(kernel):
    i64 = ir.IntegerType.get_signless(64)
    with kernel as k, pytest.raises(VerificationError, match=r"\[printf-format\].*'%' at 3 that starts no conversion"):
        md.printf("100%", [])
    with kernel as k, pytest.raises(VerificationError, match=r"\[printf-arity\].*2 conversions, got 1 arguments"):
        md.printf("%lld %lld", [llvm.SExtOp(i64, k.a["x"]).result])
    with kernel as k, pytest.raises(VerificationError, match=r"\[printf-argument-width\].*conversion 0 reads 32 bits"):
        md.printf("%d", [llvm.SExtOp(i64, k.a["x"]).result])
    with kernel as k, pytest.raises(OperandTypeError, match=r"\[argument 0-type\].*must be i64, got i32"):
        md.printf("%lld", [k.a["x"]])  # an i32 operand: the op takes 64-bit arguments only
