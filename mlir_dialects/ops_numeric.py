"""Numbers that ``arith`` and LLVM cannot express for PTX: conversions to and from the 8-bit floats and TF32,
and the approximate math instructions (``ex2.approx``, ``rsqrt.approx``...).

The 8-bit floats live in registers as their bits (``i8``): LLVM has no such type. Conversions to them
round to nearest even and saturate to the largest finite value (``satfinite``); conversions from them are
exact (every E4M3 and E5M2 value is an f16). The approximate instructions are pure (no side effects):
the compiler may merge or drop them like any arithmetic.
"""

from typing import Any

from ._backend import ext, ir, llvm
from .dialect import CuteOp, str_attr
from .errors import OperandTypeError
from .lowering import finish, lowers

__all__ = [
    "CvtF32ToNarrowOp",
    "CvtF8ToF16Op",
    "MathApproxOp",
    "cvt_f32_to_narrow",
    "cvt_f8_to_f16",
    "math_approx",
    "NARROW_KINDS",
    "F8_KINDS",
    "APPROX_FUNCTIONS",
]

F8_KINDS = ("e4m3", "e5m2")
NARROW_KINDS = F8_KINDS + ("tf32",)
# name -> PTX instruction (f32 in, f32 out); ``ftz`` adds .ftz where PTX has it
APPROX_FUNCTIONS = {
    "ex2": "ex2.approx{ftz}.f32",
    "lg2": "lg2.approx{ftz}.f32",
    "rsqrt": "rsqrt.approx{ftz}.f32",
    "sqrt": "sqrt.approx{ftz}.f32",
    "rcp": "rcp.approx{ftz}.f32",
    "sin": "sin.approx{ftz}.f32",
    "cos": "cos.approx{ftz}.f32",
    "tanh": "tanh.approx.f32",  # no .ftz form (it flushes subnormal results as specified)
}


def _is_f32(t):
    return isinstance(t, ir.F32Type)


class _NumericOp(CuteOp):
    def check_kind(self, rule, allowed):
        kind = self.str_attr("kind")
        if kind not in allowed:
            self.fail(rule, f"the kind must be one of {', '.join(allowed)}, got {kind!r}")
        return kind

    def expect_f32(self, role, value):
        if not _is_f32(value.type):
            self.fail(f"{role}-type", f"{role} must be f32, got {value.type}", OperandTypeError)


class CvtF32ToNarrowOp(_NumericOp, name="cvt_f32_narrow"):
    """Round the f32 ``value`` to an 8-bit float (``e4m3``/``e5m2``: its bits as an i8, round to nearest even,
    saturating to the largest finite value; NaN stays NaN) or to TF32 (``tf32``: an f32 whose 13 low mantissa
    bits are zero, rounded to nearest with ties away from zero).

    PTX: cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, zero, a; | cvt.rna.tf32.f32 d, a;
    """

    kind: ir.StringAttr
    value: ext.Operand[Any]
    res: ext.Result[Any]

    def verify_rules(self):
        kind = self.check_kind("narrow-kind", NARROW_KINDS)
        self.expect_f32("value", self.value)
        want = "f32" if kind == "tf32" else "i8"
        if str(self.res.type) != want:
            self.fail("narrow-result-type", f"a {kind} conversion gives {want}, got {self.res.type}")


class CvtF8ToF16Op(_NumericOp, name="cvt_f8_f16"):
    """The f16 holding exactly the 8-bit float whose bits are the i8 ``bits`` (``e4m3`` or ``e5m2``).

    PTX: cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a;
    """

    kind: ir.StringAttr
    bits: ext.Operand[Any]
    res: ext.Result[Any]

    def verify_rules(self):
        self.check_kind("f8-kind", F8_KINDS)
        self.expect_int("bits", self.bits, 8)
        if not isinstance(self.res.type, ir.F16Type):
            self.fail("f8-result-type", f"the result is f16, got {self.res.type}")


class MathApproxOp(_NumericOp, name="math_approx"):
    """The hardware approximation of ``fn`` (ex2, lg2, rsqrt, sqrt, rcp, sin, cos, tanh) of the f32 ``value``
    (see the PTX ISA for each one's error bound); ``ftz`` flushes subnormal inputs and results to zero.

    PTX: {ex2,lg2,rsqrt,sqrt,rcp,sin,cos}.approx{.ftz}.f32 d, a; | tanh.approx.f32 d, a;
    """

    fn: ir.StringAttr
    ftz: ir.StringAttr
    value: ext.Operand[Any]
    res: ext.Result[Any]

    def verify_rules(self):
        fn = self.str_attr("fn")
        if fn not in APPROX_FUNCTIONS:
            self.fail("approx-function", f"the function must be one of {', '.join(APPROX_FUNCTIONS)}, got {fn!r}")
        if self.str_attr("ftz") not in ("", "ftz"):
            self.fail("approx-ftz", f"ftz is 'ftz' or '', got {self.str_attr('ftz')!r}")
        self.expect_f32("value", self.value)
        if not _is_f32(self.res.type):
            self.fail("approx-result-type", f"the result is f32, got {self.res.type}")


def cvt_f32_to_narrow(kind, value):
    """Build ``cute_nvgpu.cvt_f32_narrow`` (``kind``: e4m3, e5m2 or tf32); the op's ``res`` is an i8 (f8 bits)
    or an f32 (tf32)."""
    rtype = ir.F32Type.get() if kind == "tf32" else ir.IntegerType.get_signless(8)
    return CvtF32ToNarrowOp.build(str_attr(kind), value, rtype)


def cvt_f8_to_f16(kind, bits):
    """Build ``cute_nvgpu.cvt_f8_f16`` (``kind``: e4m3 or e5m2) of the i8 ``bits``; the op's ``res`` is an f16."""
    return CvtF8ToF16Op.build(str_attr(kind), bits, ir.F16Type.get())


def math_approx(fn, value, *, ftz=False):
    """Build ``cute_nvgpu.math_approx`` of ``fn`` on the f32 ``value``; the op's ``res`` is an f32."""
    return MathApproxOp.build(str_attr(fn), str_attr("ftz" if ftz else ""), value, ir.F32Type.get())


# -- lowering ---------------------------------------------------------------------------------


def _pure_asm(ptx, constraints, operands, result_type):
    return llvm.InlineAsmOp(result_type, list(operands), ptx, constraints, has_side_effects=False).result


@lowers(CvtF32ToNarrowOp)
def lower_cvt_f32_narrow(op, rewriter):
    kind = op.str_attr("kind")
    with rewriter.ip:
        if kind == "tf32":
            res = _pure_asm("cvt.rna.tf32.f32 $0, $1;", "=r,r", [llvm.BitcastOp(ir.IntegerType.get_signless(32),
                                                                                   op.value).result],
                            ir.IntegerType.get_signless(32))
            res = llvm.BitcastOp(ir.F32Type.get(), res).result
        else:
            zero = llvm.ConstantOp(ir.F32Type.get(), ir.FloatAttr.get(ir.F32Type.get(), 0.0)).result
            pair = _pure_asm(f"cvt.rn.satfinite.{kind}x2.f32 $0, $1, $2;", "=h,f,f", [zero, op.value],
                             ir.IntegerType.get_signless(16))
            res = llvm.TruncOp(ir.IntegerType.get_signless(8), pair, 0).result
    finish(op, rewriter, res)


@lowers(CvtF8ToF16Op)
def lower_cvt_f8_f16(op, rewriter):
    kind = op.str_attr("kind")
    with rewriter.ip:
        wide = llvm.ZExtOp(ir.IntegerType.get_signless(16), op.bits).result
        pair = _pure_asm(f"cvt.rn.f16x2.{kind}x2 $0, $1;", "=r,h", [wide], ir.IntegerType.get_signless(32))
        low = llvm.TruncOp(ir.IntegerType.get_signless(16), pair, 0).result
        res = llvm.BitcastOp(ir.F16Type.get(), low).result
    finish(op, rewriter, res)


@lowers(MathApproxOp)
def lower_math_approx(op, rewriter):
    ftz = ".ftz" if op.str_attr("ftz") else ""
    ptx = APPROX_FUNCTIONS[op.str_attr("fn")].format(ftz=ftz) + " $0, $1;"
    with rewriter.ip:
        res = _pure_asm(ptx, "=f,f", [op.value], ir.F32Type.get())
    finish(op, rewriter, res)
