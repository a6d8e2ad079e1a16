"""Numbers that ``arith`` and LLVM cannot express for PTX: conversions to and from the 8-bit floats and TF32,
the approximate math instructions (``ex2.approx``, ``rsqrt.approx``...), and printing them (``printf``).

The 8-bit floats live in registers as their bits (``i8``): LLVM has no such type. Conversions to them
round to nearest even and saturate to the largest finite value (``satfinite``); conversions from them are
exact (every E4M3 and E5M2 value is an f16). The approximate instructions are pure (no side effects):
the compiler may merge or drop them like any arithmetic, unless built ``volatile``. ``float_minmax`` and
``cvt_f32`` are volatile statements, each kept where it is.

Which builder gives which inline PTX statement: the table of ``mlir_dialects.ops``.
"""

import hashlib
import re as _re
from typing import Any, Sequence

from .._backend import ext, ir, llvm
from ..dialect import CuteOp, Flag, bool_attr, str_attr
from ..errors import OperandTypeError
from .common import finish, inline_ptx

__all__ = [
    "CvtF32ToNarrowOp",
    "CvtF8ToF16Op",
    "MathApproxOp",
    "NARROW_KINDS",
    "F8_KINDS",
    "APPROX_FUNCTIONS",
    "FloatMinMaxOp",
    "CvtF32Op",
    "CVT_F32_KINDS",
    "PrintfOp",
    "format_conversions",
]

I64 = ir.IntegerType[64]
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


def _pure_asm(ptx, constraints, operands, result_type):
    return llvm.InlineAsmOp(result_type, list(operands), ptx, constraints, has_side_effects=False).result


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

    BUILDER = "cvt_f32_to_narrow"
    kind: ir.StringAttr
    value: ext.Operand[Any]
    res: ext.Result[Any]

    def verify_rules(self):
        kind = self.check_kind("narrow-kind", NARROW_KINDS)
        self.expect_f32("value", self.value)
        want = "f32" if kind == "tf32" else "i8"
        if str(self.res.type) != want:
            self.fail("narrow-result-type", f"a {kind} conversion gives {want}, got {self.res.type}")

    @classmethod
    def builder(cls, kind, value):
        """Build ``cute_nvgpu.cvt_f32_narrow`` (``kind``: e4m3, e5m2 or tf32); the op's ``res`` is an i8 (f8 bits)
        or an f32 (tf32)."""
        rtype = ir.F32Type.get() if kind == "tf32" else ir.IntegerType.get_signless(8)
        return cls.build(str_attr(kind), value, rtype)

    def lower(self, rewriter):
        kind = self.str_attr("kind")
        with rewriter.ip:
            if kind == "tf32":
                res = _pure_asm("cvt.rna.tf32.f32 $0, $1;", "=r,r", [llvm.BitcastOp(ir.IntegerType.get_signless(32),
                                                                                       self.value).result],
                                ir.IntegerType.get_signless(32))
                res = llvm.BitcastOp(ir.F32Type.get(), res).result
            else:
                zero = llvm.ConstantOp(ir.F32Type.get(), ir.FloatAttr.get(ir.F32Type.get(), 0.0)).result
                pair = _pure_asm(f"cvt.rn.satfinite.{kind}x2.f32 $0, $1, $2;", "=h,f,f", [zero, self.value],
                                 ir.IntegerType.get_signless(16))
                res = llvm.TruncOp(ir.IntegerType.get_signless(8), pair, 0).result
        finish(self, rewriter, res)


class CvtF8ToF16Op(_NumericOp, name="cvt_f8_f16"):
    """The f16 holding exactly the 8-bit float whose bits are the i8 ``bits`` (``e4m3`` or ``e5m2``).

    PTX: cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a;
    """

    BUILDER = "cvt_f8_to_f16"
    kind: ir.StringAttr
    bits: ext.Operand[Any]
    res: ext.Result[Any]

    def verify_rules(self):
        self.check_kind("f8-kind", F8_KINDS)
        self.expect_int("bits", self.bits, 8)
        if not isinstance(self.res.type, ir.F16Type):
            self.fail("f8-result-type", f"the result is f16, got {self.res.type}")

    @classmethod
    def builder(cls, kind, bits):
        """Build ``cute_nvgpu.cvt_f8_f16`` (``kind``: e4m3 or e5m2) of the i8 ``bits``; the op's ``res`` is an f16."""
        return cls.build(str_attr(kind), bits, ir.F16Type.get())

    def lower(self, rewriter):
        kind = self.str_attr("kind")
        with rewriter.ip:
            wide = llvm.ZExtOp(ir.IntegerType.get_signless(16), self.bits).result
            pair = _pure_asm(f"cvt.rn.f16x2.{kind}x2 $0, $1;", "=r,h", [wide], ir.IntegerType.get_signless(32))
            low = llvm.TruncOp(ir.IntegerType.get_signless(16), pair, 0).result
            res = llvm.BitcastOp(ir.F16Type.get(), low).result
        finish(self, rewriter, res)


class MathApproxOp(_NumericOp, name="math_approx"):
    """The hardware approximation of ``fn`` (ex2, lg2, rsqrt, sqrt, rcp, sin, cos, tanh) of the f32 ``value``
    (see the PTX ISA for each one's error bound); ``ftz`` flushes subnormal inputs and results to zero.
    ``volatile``: the statement keeps its place and is never merged with another (else it is pure arithmetic).

    PTX: {ex2,lg2,rsqrt,sqrt,rcp,sin,cos}.approx{.ftz}.f32 d, a; | tanh.approx.f32 d, a;
    """

    fn: ir.StringAttr
    ftz: ir.StringAttr
    volatile: Flag
    value: ext.Operand[Any]
    res: ext.Result[Any]

    def verify_rules(self):
        fn = self.str_attr("fn")
        if fn not in APPROX_FUNCTIONS:
            self.fail("approx-function", f"the function must be one of {', '.join(APPROX_FUNCTIONS)}, got {fn!r}")
        if self.str_attr("ftz") not in ("", "ftz"):
            self.fail("approx-ftz", f"ftz is 'ftz' or '', got {self.str_attr('ftz')!r}")
        self.check_flags("volatile")
        self.expect_f32("value", self.value)
        if not _is_f32(self.res.type):
            self.fail("approx-result-type", f"the result is f32, got {self.res.type}")

    @classmethod
    def builder(cls, fn, value, *, ftz=False, volatile=False):
        """Build ``cute_nvgpu.math_approx`` of ``fn`` on the f32 ``value``; the op's ``res`` is an f32."""
        return cls.build(str_attr(fn), str_attr("ftz" if ftz else ""), bool_attr(volatile), value, ir.F32Type.get())

    def lower(self, rewriter):
        ftz = ".ftz" if self.str_attr("ftz") else ""
        ptx = APPROX_FUNCTIONS[self.str_attr("fn")].format(ftz=ftz) + " $0, $1;"
        with rewriter.ip:
            if self.bool_attr("volatile"):
                res = inline_ptx(ptx, "=f,f", [self.value], ir.F32Type.get()).result
            else:
                res = _pure_asm(ptx, "=f,f", [self.value], ir.F32Type.get())
        finish(self, rewriter, res)


class FloatMinMaxOp(_NumericOp, name="float_minmax"):
    """The larger (``max``) or smaller (``min``) of the f32 values ``a`` and ``b``: ``nan`` propagates a NaN
    operand (else a NaN loses to a number), ``xorsign_abs`` gives the one of larger (smaller) magnitude with the sign
    ``sign(a) ^ sign(b)``, ``ftz`` flushes subnormal inputs and result to zero.

    PTX: {max,min}{.ftz}{.NaN}{.xorsign.abs}.f32 d, a, b;
    """

    kind: ir.StringAttr
    ftz: Flag
    nan: Flag
    xorsign_abs: Flag
    a: ext.Operand[Any]
    b: ext.Operand[Any]
    res: ext.Result[Any]

    def verify_rules(self):
        self.check_choice("minmax-kind", "the kind", self.str_attr("kind"), ("max", "min"))
        self.check_flags("ftz", "nan", "xorsign_abs")
        self.expect_f32("a", self.a)
        self.expect_f32("b", self.b)
        if not _is_f32(self.res.type):
            self.fail("minmax-result-type", f"the result is f32, got {self.res.type}")

    @classmethod
    def builder(cls, kind, a, b, *, ftz=False, nan=False, xorsign_abs=False):
        """Build ``cute_nvgpu.float_minmax`` of the f32 ``a`` and ``b``; the op's ``res`` is an f32."""
        return cls.build(str_attr(kind), bool_attr(ftz), bool_attr(nan), bool_attr(xorsign_abs), a, b,
                         ir.F32Type.get())

    def lower(self, rewriter):
        mods = "".join(m for m, on in ((".ftz", "ftz"), (".NaN", "nan"), (".xorsign.abs", "xorsign_abs"))
                       if self.bool_attr(on))
        with rewriter.ip:
            res = inline_ptx(f"{self.str_attr('kind')}{mods}.f32 $0, $1, $2;", "=f,f,f", [self.a, self.b],
                             ir.F32Type.get()).result
        finish(self, rewriter, res)


# the bf16x2 conversion saturates to the largest finite bf16 (a NaN stays NaN) by clamping first: what
# cvt.rn.satfinite.bf16x2.f32 gives, without its PTX ISA 8.1
_BF16X2_SATFINITE = ("{\n\t.reg .f32 %lo, %hi;\n\t"
                     "max.NaN.f32 %hi, $1, 0fFF7F0000;\n\tmin.NaN.f32 %hi, %hi, 0f7F7F0000;\n\t"
                     "max.NaN.f32 %lo, $2, 0fFF7F0000;\n\tmin.NaN.f32 %lo, %lo, 0f7F7F0000;\n\t"
                     "cvt.rn.bf16x2.f32 $0, %hi, %lo;\n\t}")
# kind -> (f32 operands, result type, PTX, constraints)
CVT_F32_KINDS = {
    "tf32": (1, "i32", "cvt.rna.tf32.f32 $0, $1;", "=r,f"),
    "bf16": (1, "bf16", "cvt.rn.bf16.f32 $0, $1;", "=h,f"),
    "bf16x2_satfinite": (2, "i32", _BF16X2_SATFINITE, "=r,f,f"),
}


class CvtF32Op(_NumericOp, name="cvt_f32"):
    """Round f32 ``values`` to a narrower float: ``tf32`` (to nearest, ties away from zero; the i32 of its bits, as
    an MMA reads it), ``bf16`` (to nearest even), ``bf16x2_satfinite`` (two values ``a``, ``b`` to the bf16 pair
    of an i32, ``a`` in the high half, to nearest even and saturated to the largest finite bf16).

    PTX: cvt.rna.tf32.f32 d, a; | cvt.rn.bf16.f32 d, a; | max.NaN/min.NaN clamps, cvt.rn.bf16x2.f32 d, a, b;
    """

    kind: ir.StringAttr
    values: Sequence[ext.Operand[Any]]
    res: ext.Result[Any]

    def verify_rules(self):
        kind = self.check_kind("cvt-kind", tuple(CVT_F32_KINDS))
        count, rtype, _, _ = CVT_F32_KINDS[kind]
        if len(self.values) != count:
            self.fail("cvt-operands", f"a {kind} conversion takes {count} f32 value(s), got {len(self.values)}")
        for v in self.values:
            self.expect_f32("value", v)
        if str(self.res.type) != rtype:
            self.fail("cvt-result-type", f"a {kind} conversion gives {rtype}, got {self.res.type}")

    @classmethod
    def builder(cls, kind, *values):
        """Build ``cute_nvgpu.cvt_f32``; the op's ``res`` is an i32 (tf32, bf16x2_satfinite) or a bf16."""
        rtype = ir.BF16Type.get() if kind == "bf16" else ir.IntegerType.get_signless(32)
        return cls.build(str_attr(kind), list(values), rtype)

    def lower(self, rewriter):
        _, _, ptx, constraints = CVT_F32_KINDS[self.str_attr("kind")]
        with rewriter.ip:
            res = inline_ptx(ptx, constraints, list(self.values), self.res.type).result
        finish(self, rewriter, res)


# -- printing ---------------------------------------------------------------------------------

_CONVERSION = _re.compile(r"%(%|[-+ #0]*\d*(?:\.\d+)?(ll|l|h|hh)?([diuxXcfFeEgGaA]))")


def format_conversions(fmt):
    """The conversions of a C format, in order: ``"i32"``, ``"i64"`` or ``"f64"`` (the vprintf argument each takes);
    ``%%`` is a literal percent sign. A ``%`` that starts no conversion is a ValueError."""
    out, pos = [], 0
    while True:
        at = fmt.find("%", pos)
        if at < 0:
            return out
        m = _CONVERSION.match(fmt, at)
        if m is None:
            raise ValueError(f"the format {fmt!r} has a '%' at {at} that starts no conversion (write %% for a '%')")
        if m.group(1) != "%":
            conv, length = m.group(3), m.group(2)
            out.append("f64" if conv in "fFeEgGaA" else ("i64" if length == "ll" else "i32"))
        pos = m.end()


class PrintfOp(_NumericOp, name="printf"):
    """Print ``args`` with the C format ``format`` from every thread that runs the op (CUDA's device ``printf``:
    the driver's ``vprintf``; the output appears on the host at the next synchronisation). Every argument is 64
    bits (an i64: the bits of an f64 for ``%f %e %g %a``), so every integer conversion has the ``ll`` length
    (``%lld``, ``%llu``, ``%llx``).

    PTX: call.uni (retval), vprintf, (format, buffer);
    """

    format: ir.StringAttr
    args: Sequence[ext.Operand[I64]]

    def verify_rules(self):
        try:
            kinds = format_conversions(self.str_attr("format"))
        except ValueError as e:
            self.fail("printf-format", str(e))
        for k, a in enumerate(self.args):
            self.expect_int(f"argument {k}", a, 64)
        if len(kinds) != len(self.args):
            self.fail("printf-arity", f"the format has {len(kinds)} conversions, got {len(self.args)} arguments")
        for k, kind in enumerate(kinds):
            if kind == "i32":
                self.fail("printf-argument-width", f"conversion {k} reads 32 bits, but every argument is 64 bits: "
                                                   f"give integer conversions the ll length (%lld, %llu, %llx)")

    @classmethod
    def builder(cls, fmt, args=()):
        """Build ``cute_nvgpu.printf`` of the C format ``fmt`` with the i64 MLIR values ``args``."""
        return cls.build(str_attr(fmt), list(args))

    def lower(self, rewriter):
        fmt = self.str_attr("format")
        block, names = _symbols_of(self)
        name = "__cute_nvgpu_printf_" + hashlib.sha256(fmt.encode()).hexdigest()[:16]
        nbytes = len(fmt.encode()) + 1
        at_top = ir.InsertionPoint(block.operations[0])
        if name not in names:
            at_top.insert(ir.Operation.parse(f"llvm.mlir.global internal constant @{name}({_mlir_string(fmt)}) "
                                             f"{{addr_space = 1 : i32}} : !llvm.array<{nbytes} x i8>"))
        if "vprintf" not in names:
            at_top.insert(ir.Operation.parse("llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32"))
        generic = ir.Type.parse("!llvm.ptr")
        with rewriter.ip:
            text = llvm.AddressOfOp(ir.Type.parse("!llvm.ptr<1>"), name).result
            text = llvm.AddrSpaceCastOp(generic, text).result
            args = list(self.args)
            if args:
                struct = ir.Type.parse(f"!llvm.struct<({', '.join(str(a.type) for a in args)})>")
                one = llvm.ConstantOp(ir.IntegerType.get_signless(32),
                                      ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)).result
                buf = llvm.AllocaOp(generic, one, struct, alignment=8).result
                for k, a in enumerate(args):
                    slot = llvm.GEPOp(generic, buf, [], [0, k], struct, 0).result
                    llvm.StoreOp(a, slot)
            else:
                buf = llvm.ZeroOp(generic).result
            llvm.CallOp(ir.IntegerType.get_signless(32), [text, buf], [], [], callee="vprintf")
        finish(self, rewriter)


def _mlir_string(text):
    """``text`` (with a final NUL) as an MLIR string literal."""
    out = []
    for byte in text.encode() + b"\0":
        ch = chr(byte)
        out.append(ch if 32 <= byte < 127 and ch not in '"\\' else f"\\{byte:02X}")
    return '"' + "".join(out) + '"'


def _symbols_of(op):
    """The gpu.module (or module) body holding ``op``, and the symbol names defined in it."""
    parent = op.operation.parent
    while parent is not None and parent.name not in ("gpu.module", "builtin.module"):
        parent = parent.parent
    block = parent.regions[0].blocks[0]
    names = set()
    for o in block.operations:
        if "sym_name" in o.attributes:
            names.add(ir.StringAttr(o.attributes["sym_name"]).value)
    return block, names
