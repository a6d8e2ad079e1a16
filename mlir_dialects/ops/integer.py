"""Integer instructions that LLVM does not give as themselves: bit counts and fields, high and wide multiplies,
24-bit multiplies, carry chains, saturating adds, ``lop3``, funnel shifts, ``prmt``, and 64-bit words built from or
changed in their 32-bit halves.

One op, ``int_op``, with the instruction as an attribute: ``INT_INSTRS`` gives each one's operands, result and
PTX. MLIR integers are signless: ``signed`` picks the ``.s`` form where PTX has both (``.u`` otherwise). Each
statement is volatile (it keeps its place and is never merged), and the carry-chain instructions pass the carry
flag from one statement to the next: nothing may come between the parts of a chain.

Which builder gives which inline PTX statement: the table of ``mlir_dialects.ops``.
"""

from typing import Any, Optional

from .._backend import ext, ir
from ..dialect import CuteOp, bool_attr, i32_attr, str_attr
from ..errors import OperandTypeError, VerificationError
from .common import finish, inline_ptx, reg_letter

__all__ = ["IntOp", "INT_INSTRS", "SHF_MODES"]

SHF_MODES = ("l.wrap", "r.wrap", "l.clamp", "r.clamp")
_W = (32, 64)
# instr -> (operands: the widths each takes, "w" for the width of the value, "i32" for an i32; widths of "w";
#           the result: "w", "i32", "2w" or "i64"; the .s form exists; the modes)
INT_INSTRS = {
    "clz": (("w",), _W, "i32", False, ()),
    "bfind": (("w",), _W, "i32", True, ()),
    "brev": (("w",), _W, "w", False, ()),
    "bfe": (("w", "i32", "i32"), _W, "w", True, ()),
    "bfi": (("w", "w", "i32", "i32"), _W, "w", False, ()),
    "mul_hi": (("w", "w"), _W, "w", True, ()),
    "mul_wide": (("w", "w"), (16, 32), "2w", True, ()),
    "mul24": (("w", "w"), (32,), "w", True, ("lo", "hi")),
    "mad24": (("w", "w", "w"), (32,), "w", True, ("lo", "hi")),
    "add_cc": (("w", "w"), _W, "w", False, ()),
    "addc": (("w", "w"), _W, "w", False, ()),
    "sub_cc": (("w", "w"), _W, "w", False, ()),
    "subc": (("w", "w"), _W, "w", False, ()),
    "mad_cc": (("w", "w", "w"), _W, "w", True, ()),
    "madc": (("w", "w", "w"), _W, "w", True, ()),
    "add_sat": (("w", "w"), (32,), "w", True, ()),
    "sub_sat": (("w", "w"), (32,), "w", True, ()),
    "lop3": (("w", "w", "w"), (32,), "w", False, ()),
    "shf": (("w", "w", "i32"), (32,), "w", False, SHF_MODES),
    "prmt": (("w", "w", "w"), (32,), "w", False, ()),
    "pack_b64": (("w", "w"), (32,), "i64", False, ()),
    "add_lo32": (("w", "i32"), (64,), "w", False, ()),
}
_SIGNED_ONLY = ("add_sat", "sub_sat")  # PTX has the .s32 form alone
_CARRY = {"add_cc": "add.cc", "addc": "addc", "sub_cc": "sub.cc", "subc": "subc", "mad_cc": "mad.lo.cc",
          "madc": "madc.lo"}


def _width(t):
    return t.width if isinstance(t, ir.IntegerType) else None


def _ptx(instr, w, s, mode, lut, n):
    """The PTX text of ``instr`` on ``w``-bit values (``s``: ``"s"`` or ``"u"``) with ``n`` operands."""
    operands = ", ".join(f"${i + 1}" for i in range(n))
    if instr in _CARRY:
        suffix = f"{s}{w}" if instr in ("mad_cc", "madc") else f"u{w}"
        return f"{_CARRY[instr]}.{suffix} $0, {operands};"
    if instr == "pack_b64":
        return "mov.b64 $0, {$1, $2};"
    if instr == "add_lo32":
        return "{\n\t.reg .b32 lo, hi;\n\tmov.b64 {lo, hi}, $1;\n\tadd.u32 lo, lo, $2;\n\tmov.b64 $0, {lo, hi};\n\t}"
    if instr == "lop3":
        return f"lop3.b32 $0, {operands}, {lut};"
    head = {"clz": f"clz.b{w}", "bfind": f"bfind.{s}{w}", "brev": f"brev.b{w}", "bfe": f"bfe.{s}{w}",
            "bfi": f"bfi.b{w}", "mul_hi": f"mul.hi.{s}{w}", "mul_wide": f"mul.wide.{s}{w}",
            "mul24": f"mul24.{mode}.{s}32", "mad24": f"mad24.{mode}.{s}32", "add_sat": "add.sat.s32",
            "sub_sat": "sub.sat.s32", "shf": f"shf.{mode}.b32", "prmt": "prmt.b32"}[instr]
    return f"{head} $0, {operands};"


def result_type_of(instr, args):
    """The MLIR type of ``int_op(instr, args)``'s result (i32 when ``args`` do not say)."""
    spec = INT_INSTRS.get(instr)
    w = _width(args[0].type) if args else None
    if spec is None or w is None:
        return ir.IntegerType.get_signless(32)
    kind = spec[2]
    return ir.IntegerType.get_signless({"w": w, "i32": 32, "2w": 2 * w, "i64": 64}[kind])


class IntOp(CuteOp, name="int_op"):
    """The integer instruction ``instr`` (see ``INT_INSTRS`` and the module's table) on ``args``; ``signed`` picks
    PTX's ``.s`` form, ``mode`` is ``lo``/``hi`` (``mul24``, ``mad24``) or the funnel shift's ``l.wrap``,
    ``r.wrap``, ``l.clamp``, ``r.clamp``, and ``lut`` is ``lop3``'s truth table (0..255).

    PTX: clz bfind brev bfe bfi mul.hi mul.wide mul24 mad24 add.cc addc sub.cc subc mad.lo.cc madc.lo add.sat sub.sat lop3 shf prmt mov.b64 (see INT_INSTRS)
    """

    instr: ir.StringAttr
    signed: ir.IntegerAttr
    mode: ir.StringAttr
    lut: ir.IntegerAttr
    a: ext.Operand[Any]
    res: ext.Result[Any]
    # the operands after the first (each its own field: the values of one variadic operand share one type)
    b: Optional[ext.Operand[Any]] = None
    c: Optional[ext.Operand[Any]] = None
    d: Optional[ext.Operand[Any]] = None

    @property
    def args(self):
        """The operands, in order."""
        return [self.a] + [v for v in (self.b, self.c, self.d) if v is not None]

    def verify_rules(self):
        instr = self.check_choice("int-instr", "the instruction", self.str_attr("instr"), tuple(INT_INSTRS))
        shapes, widths, result, has_signed, modes = INT_INSTRS[instr]
        self.check_flags("signed")
        args = list(self.args)
        if len(args) != len(shapes):
            self.fail("int-arity", f"{instr} takes {len(shapes)} operands, got {len(args)}")
        w = _width(args[0].type)
        if w not in widths:
            self.fail("int-operand-type", f"{instr} takes {' or '.join(f'i{x}' for x in widths)} values, got "
                                          f"{args[0].type}", OperandTypeError)
        for k, (shape, a) in enumerate(zip(shapes, args)):
            want = w if shape == "w" else 32
            if _width(a.type) != want:
                self.fail("int-operand-type", f"operand {k} of {instr} is an i{want}, got {a.type}", OperandTypeError)
        if self.res.type != result_type_of(instr, args):
            self.fail("int-result-type", f"{instr} of i{w} values gives {result_type_of(instr, args)}, got "
                                         f"{self.res.type}")
        signed = self.bool_attr("signed")
        if signed and not has_signed:
            self.fail("int-signedness", f"{instr} has no signed (.s) form in PTX")
        if instr in _SIGNED_ONLY and not signed:
            self.fail("int-signedness", f"{instr} has the signed (.s32) form alone: give signed=True")
        self.check_choice("int-mode", f"the mode of {instr}", self.str_attr("mode"), modes or ("",))
        lut = self.int_attr("lut")
        if instr == "lop3" and not 0 <= lut <= 255:
            self.fail("lop3-lut", f"the truth table of lop3 is 0..255, got {lut}")
        if instr != "lop3" and lut:
            self.fail("lop3-lut", f"a truth table goes with lop3 only, got {lut} for {instr}")

    @classmethod
    def builder(cls, instr, args, *, signed=False, mode="", lut=0):
        """Build ``cute_nvgpu.int_op``; its ``res`` type follows from ``instr`` and the operands' width."""
        args = list(args)
        if not 1 <= len(args) <= 4:
            raise VerificationError(f"'cute_nvgpu.int_op' breaks rule [int-arity]: it takes 1 to 4 operands, got "
                                   f"{len(args)}")
        rest = dict(zip("bcd", args[1:]))
        return cls.build(str_attr(instr), bool_attr(signed), str_attr(mode), i32_attr(lut), args[0],
                         result_type_of(instr, args), **rest)

    def lower(self, rewriter):
        instr, args = self.str_attr("instr"), list(self.args)
        w = _width(args[0].type)
        text = _ptx(instr, w, "s" if self.bool_attr("signed") else "u", self.str_attr("mode"), self.int_attr("lut"),
                    len(args))
        constraints = ",".join([f"={reg_letter(self.res.type)}"] + [reg_letter(a.type) for a in args])
        with rewriter.ip:
            res = inline_ptx(text, constraints, args, self.res.type).result
        finish(self, rewriter, res)
