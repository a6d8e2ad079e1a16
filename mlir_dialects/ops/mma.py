"""Warp-level tensor-core ops: ``mma.sync`` and the matrix loads and stores ``ldmatrix`` / ``stmatrix``.

Registers are i32 words: two 16-bit elements each (the first in the low half) for the f16/bf16 operands, the
ldmatrix/stmatrix words and packed f16 accumulators; f32 accumulators are f32 values.  Every lane of the warp
executes these instructions together (``.sync.aligned``).
"""

from typing import Any, Sequence

from .._backend import ext, ir, llvm
from ..dialect import CuteOp, str_attr, bool_attr, Flag
from ..errors import OperandTypeError
from ..types import AddressSpace
from .common import finish, inline_ptx

__all__ = [
    "MmaSyncOp",
    "LdMatrixOp",
    "StMatrixOp",
    "MMA_SHAPES",
    "MMA_AB_TYPES",
    "MMA_ACC_TYPES",
    "MMA_LAYOUTS",
    "MATRIX_COUNTS",
]

# shape -> (A words, B words) per lane
MMA_SHAPES = {"m16n8k8": (2, 1), "m16n8k16": (4, 2), "m8n8k4": (2, 2)}
MMA_AB_TYPES = ("f16", "bf16")
MMA_ACC_TYPES = {"f32": 4, "f16": 2}  # accumulator registers per lane (twice as many for m8n8k4)
MMA_LAYOUTS = ("row", "col")
MATRIX_COUNTS = (1, 2, 4)


def _is_i32(t):
    return isinstance(t, ir.IntegerType) and t.width == 32


class MmaSyncOp(CuteOp, name="mma_sync"):
    """``D = A * B + C`` of one warp: A row-major (M x K), B column-major (K x N).  ``a``, ``b``: i32 words of two
    ``ab_type`` elements; ``c`` and the results ``d``: 4 f32 (``acc_type`` f32) or 2 i32 words of two f16.
    ``m8n8k4`` (f16 inputs) is Volta's: each quad-pair of the warp computes its own 8x8x4 product, A and B in
    either layout (``layout_a``, ``layout_b``), with 8 f32 or 4 i32 accumulators per lane.

    PTX: mma.sync.aligned.{m16n8k8,m16n8k16}.row.col.{f32,f16}.{f16,bf16}.{f16,bf16}.{f32,f16} d, a, b, c; | mma.sync.aligned.m8n8k4.{row,col}.{row,col}.{f32,f16}.f16.f16.{f32,f16} d, a, b, c;
    """

    shape: ir.StringAttr
    ab_type: ir.StringAttr
    acc_type: ir.StringAttr
    layout_a: ir.StringAttr
    layout_b: ir.StringAttr
    a: Sequence[ext.Operand[Any]]
    b: Sequence[ext.Operand[Any]]
    c: Sequence[ext.Operand[Any]]
    d: Sequence[ext.Result[Any]]

    def verify_rules(self):
        shape, ab, acc = self.str_attr("shape"), self.str_attr("ab_type"), self.str_attr("acc_type")
        if shape not in MMA_SHAPES:
            self.fail("mma-shape", f"the shape must be one of {', '.join(MMA_SHAPES)}, got {shape!r}")
        if ab not in MMA_AB_TYPES:
            self.fail("mma-ab-type", f"the A/B element type must be f16 or bf16, got {ab!r}")
        if acc not in MMA_ACC_TYPES:
            self.fail("mma-acc-type", f"the accumulator type must be f32 or f16, got {acc!r}")
        if acc == "f16" and ab != "f16":
            self.fail("mma-acc-type", f"f16 accumulators need f16 inputs, got {ab} (bf16 accumulates in f32)")
        if shape == "m8n8k4" and ab != "f16":
            self.fail("mma-ab-type", f"m8n8k4 multiplies f16 inputs, got {ab}")
        layouts = (self.str_attr("layout_a"), self.str_attr("layout_b"))
        for name, layout in zip(("A", "B"), layouts):
            self.check_choice("mma-layout", f"the layout of {name}", layout, MMA_LAYOUTS)
        if shape != "m8n8k4" and layouts != ("row", "col"):
            self.fail("mma-layout", f"{shape} takes A row-major and B column-major (row.col), got "
                                    f"{'.'.join(layouts)}")
        na, nb = MMA_SHAPES[shape]
        nc = MMA_ACC_TYPES[acc] * (2 if shape == "m8n8k4" else 1)
        for role, values, n in (("a", self.a, na), ("b", self.b, nb)):
            if len(values) != n:
                self.fail(f"mma-{role}-regs", f"{shape} takes {n} i32 words of {role.upper()} per lane, got {len(values)}")
            for v in values:
                if not _is_i32(v.type):
                    self.fail(f"mma-{role}-type", f"{role.upper()} words are i32 (two {ab} each), got {v.type}",
                              OperandTypeError)
        want = "f32" if acc == "f32" else "i32"
        for role, values in (("c", list(self.c)), ("d", list(self.operation.results))):
            if len(values) != nc:
                self.fail(f"mma-{role}-regs", f"{acc} accumulators are {nc} {want} values per lane, got {len(values)}")
            for v in values:
                if str(v.type) != want:
                    self.fail(f"mma-{role}-type", f"{acc} accumulators are {want} values, got {v.type}",
                              OperandTypeError)

    @classmethod
    def builder(cls, shape, ab_type, acc_type, a, b, c, *, layout_a="row", layout_b="col"):
        """Build ``cute_nvgpu.mma_sync``; its results ``d`` have ``c``'s types."""
        return cls.build(str_attr(shape), str_attr(ab_type), str_attr(acc_type), str_attr(layout_a),
                         str_attr(layout_b), list(a), list(b), list(c), [v.type for v in c])

    def lower(self, rewriter):
        shape, ab, acc = self.str_attr("shape"), self.str_attr("ab_type"), self.str_attr("acc_type")
        a, b, c = list(self.a), list(self.b), list(self.c)
        nd = len(c)
        layouts = f"{self.str_attr('layout_a')}.{self.str_attr('layout_b')}"
        ptx = (f"mma.sync.aligned.{shape}.{layouts}.{acc}.{ab}.{ab}.{acc} {_vec(0, nd)}, {_vec(nd, len(a))}, "
               f"{_vec(nd + len(a), len(b))}, {_vec(nd + len(a) + len(b), nd)};")
        reg = "f" if acc == "f32" else "r"
        cons = ",".join([f"={reg}"] * nd + ["r"] * (len(a) + len(b)) + [reg] * nd)
        t = c[0].type
        with rewriter.ip:
            res = inline_ptx(ptx, cons, a + b + c, ir.Type.parse(f"!llvm.struct<({', '.join([str(t)] * nd)})>")).result
            d = [llvm.ExtractValueOp(t, res, [i]).result for i in range(nd)]
        finish(self, rewriter, *d)


class _MatrixOp(CuteOp):
    def check_matrix(self, words):
        self.expect_space("addr", self.addr, AddressSpace.SHARED)
        n = len(words)
        if n not in MATRIX_COUNTS:
            self.fail("matrix-count", f"one instruction moves 1, 2 or 4 matrices (one i32 word each per lane), got {n}")
        for w in words:
            if not _is_i32(w.type):
                self.fail("matrix-word-type", f"matrix words are i32 (two b16 elements), got {w.type}",
                          OperandTypeError)


class LdMatrixOp(_MatrixOp, name="ldmatrix"):
    """Load 1, 2 or 4 8x8 matrices of 16-bit elements from shared memory: this lane gives the address of one
    16-byte row (lanes ``8 i .. 8 i + 7``: the rows of matrix ``i``), and receives one i32 word per matrix.

    PTX: ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 d, [addr];
    """

    addr: ext.Operand[llvm.PointerType]
    trans: Flag
    words: Sequence[ext.Result[Any]]

    def verify_rules(self):
        self.check_matrix(list(self.operation.results))

    @classmethod
    def builder(cls, addr, num, trans=False):
        """Build ``cute_nvgpu.ldmatrix`` of ``num`` matrices; its ``words`` are ``num`` i32 results."""
        i32 = ir.IntegerType.get_signless(32)
        n = num if type(num) is int and num > 0 else 1
        return cls.build(addr, bool_attr(trans), [i32] * n)

    def lower(self, rewriter):
        n = len(self.operation.results)
        i32 = ir.IntegerType.get_signless(32)
        with rewriter.ip:
            addr = llvm.PtrToIntOp(i32, self.addr).result
            rtype = i32 if n == 1 else ir.Type.parse(f"!llvm.struct<({', '.join(['i32'] * n)})>")
            res = inline_ptx(f"ldmatrix.sync.aligned.{_suffix(self, n)} {_vec(0, n)}, [${n}];",
                             ",".join(["=r"] * n + ["r", "~{memory}"]), [addr], rtype).result
            words = [res] if n == 1 else [llvm.ExtractValueOp(i32, res, [i]).result for i in range(n)]
        finish(self, rewriter, *words)


class StMatrixOp(_MatrixOp, name="stmatrix"):
    """Store 1, 2 or 4 8x8 matrices of 16-bit elements to shared memory (the reverse of ``ldmatrix``; sm_90).

    PTX: stmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 [addr], a;
    """

    addr: ext.Operand[llvm.PointerType]
    trans: Flag
    words: Sequence[ext.Operand[Any]]

    def verify_rules(self):
        self.check_matrix(list(self.words))

    @classmethod
    def builder(cls, addr, words, trans=False):
        """Build ``cute_nvgpu.stmatrix`` of the i32 ``words`` (one per matrix)."""
        return cls.build(addr, bool_attr(trans), list(words))

    def lower(self, rewriter):
        words = list(self.words)
        n = len(words)
        i32 = ir.IntegerType.get_signless(32)
        with rewriter.ip:
            addr = llvm.PtrToIntOp(i32, self.addr).result
            inline_ptx(f"stmatrix.sync.aligned.{_suffix(self, n)} [$0], {_vec(1, n)};",
                       ",".join(["r"] * (n + 1) + ["~{memory}"]), [addr] + words)
        finish(self, rewriter)


def _vec(first, n):
    return "{" + ", ".join(f"${first + i}" for i in range(n)) + "}"


def _suffix(op, n):
    return f"m8n8.x{n}{'.trans' if op.bool_attr('trans') else ''}.shared.b16"
