"""Hopper's warpgroup MMA: ``wgmma.mma_async`` and its fence, commit and wait.

``wgmma_mma_async`` takes the accumulators as one ``!llvm.struct`` value (``N/2`` f32, or ``N/4`` i32 each
holding two f16) and returns the updated struct; A is a 64-bit shared-memory descriptor (one i64) or four i32
registers (eight 16-bit or sixteen 8-bit values), B a descriptor. ``type_ab`` names the operands' type: ``f16``
or ``bf16`` (K 16 per instruction), or the 8-bit floats ``e4m3`` / ``e5m2`` (K 32, both operands K-major), one
name for both or ``"<a>.<b>"`` for two different 8-bit types (``"e4m3.e5m2"``); ``scale_d`` (i1, at run time) says whether D is added (1) or overwritten (0). It
lowers to inline PTX: NVVM's op takes neither registers for A nor a run-time ``scale-d``. The fence, commit
and wait lower to NVVM's ops.

``wgmma_fence_operand(v)`` passes one 32-bit register of an accumulator fragment through an empty volatile
statement (``asm("", "=r,0")``): no use of it moves across the MMAs around it.
"""

from collections.abc import Sequence
from typing import Any

from .._backend import ext, ir, llvm, nvvm
from ..dialect import CuteOp, i32_attr, str_attr
from .common import finish, inline_ptx

__all__ = ["WgmmaFenceOp", "WgmmaCommitGroupOp", "WgmmaWaitGroupOp", "WgmmaMmaAsyncOp", "WgmmaFenceOperandOp",
           "wgmma_acc_type", "wgmma_k", "AB_TYPES", "F8_TYPES", "D_TYPES"]

I1, I32, I64 = ir.IntegerType[1], ir.IntegerType[32], ir.IntegerType[64]
AB_TYPES = ("f16", "bf16", "e4m3", "e5m2", "e4m3.e5m2", "e5m2.e4m3")
F8_TYPES = ("e4m3", "e5m2")
D_TYPES = ("f32", "f16")


def wgmma_k(type_ab):
    """The K extent of one ``wgmma.mma_async`` on ``type_ab`` operands: 32 bytes of each row (16 or 32 values)."""
    return 32 if type_ab.split(".")[0] in F8_TYPES else 16


def _ab_pair(type_ab):
    """The PTX types of A and B named by ``type_ab``."""
    a, _, b = type_ab.partition(".")
    return a, b or a


def wgmma_acc_type(n, type_d):
    """The accumulator struct of an m64nNk16 MMA accumulating in ``type_d`` (``"f32"`` or ``"f16"``)."""
    count, elem = (n // 2, "f32") if type_d == "f32" else (n // 4, "i32")
    return ir.Type.parse(f"!llvm.struct<({', '.join([elem] * count)})>")


class WgmmaFenceOp(CuteOp, name="wgmma_fence"):
    """Order the warpgroup's earlier register and shared-memory accesses before its next ``wgmma.mma_async``.

    PTX: wgmma.fence.sync.aligned;
    """

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.WgmmaFenceAlignedOp()
        finish(self, rewriter)


class WgmmaCommitGroupOp(CuteOp, name="wgmma_commit_group"):
    """Close a group of the ``wgmma.mma_async`` operations issued so far.

    PTX: wgmma.commit_group.sync.aligned;
    """

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.WgmmaGroupSyncAlignedOp()
        finish(self, rewriter)


class WgmmaWaitGroupOp(CuteOp, name="wgmma_wait_group"):
    """Wait until at most ``count`` (0..7) groups of ``wgmma.mma_async`` are pending.

    PTX: wgmma.wait_group.sync.aligned count;
    """

    count: ir.IntegerAttr

    def verify_rules(self):
        n = self.int_attr("count")
        if not 0 <= n <= 7:
            self.fail("wgmma-wait-count", f"the count of pending groups is in 0..7, got {n}")

    @classmethod
    def builder(cls, count):
        """Build ``cute_nvgpu.wgmma_wait_group``."""
        return cls.build(i32_attr(count))

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.WgmmaWaitGroupSyncOp(self.int_attr("count"))
        finish(self, rewriter)


class WgmmaMmaAsyncOp(CuteOp, name="wgmma_mma_async"):
    """D(64xN) = A(64xK) * B(KxN) + (scale_d ? D : 0), by the 128 threads of a warpgroup, asynchronously (K 16 for
    16-bit operands, 32 for 8-bit ones, which are K-major and take no transpose bits).

    PTX: wgmma.mma_async.sync.aligned.m64n<N>k<K>.<f32|f16>.<a>.<b> {d...}, a-desc|{a...}, b-desc, p, 1, 1[, trans-a, trans-b];
    """

    n: ir.IntegerAttr
    type_ab: ir.StringAttr
    type_d: ir.StringAttr
    trans_a: ir.IntegerAttr
    trans_b: ir.IntegerAttr
    a: Sequence[ext.Operand[Any]]
    b: ext.Operand[I64]
    scale_d: ext.Operand[I1]
    acc: ext.Operand[Any]
    res: ext.Result[Any]

    def verify_rules(self):
        n, ab, d = self.int_attr("n"), self.str_attr("type_ab"), self.str_attr("type_d")
        if not (8 <= n <= 256 and n % 8 == 0):
            self.fail("wgmma-shape", f"N is a multiple of 8 in 8..256, got {n}")
        if ab not in AB_TYPES:
            self.fail("wgmma-ab-type", f"A and B are one of {AB_TYPES}, got {ab!r}")
        if d not in D_TYPES:
            self.fail("wgmma-d-type", f"D is one of {D_TYPES}, got {d!r}")
        if ab == "bf16" and d != "f32":
            self.fail("wgmma-d-type", f"bf16 inputs accumulate in f32, got {d}")
        for name in ("trans_a", "trans_b"):
            if self.int_attr(name) not in (0, 1):
                self.fail("wgmma-transpose", f"{name} is 0 (K-major) or 1 (MN-major), got {self.int_attr(name)}")
            if ab in AB_TYPES and wgmma_k(ab) == 32 and self.int_attr(name):
                self.fail("wgmma-transpose", f"8-bit operands ({ab}) are K-major: {name} must be 0")
        a = list(self.a)
        if len(a) == 1:
            self.expect_int("a (a descriptor)", a[0], 64)
        elif len(a) == 4:
            for k, v in enumerate(a):
                self.expect_int(f"a register {k}", v, 32)
            if self.int_attr("trans_a"):
                self.fail("wgmma-transpose", "A from registers is K-major: trans_a must be 0")
        else:
            self.fail("wgmma-a-operand", f"A is one i64 descriptor or four i32 registers, got {len(a)} values")
        want = wgmma_acc_type(n, d) if n % 8 == 0 and d in D_TYPES else None
        if want is not None and self.acc.type != want:
            self.fail("wgmma-acc-type", f"an m64n{n} {d} accumulator is {want}, got {self.acc.type}")
        if self.res.type != self.acc.type:
            self.fail("wgmma-acc-type", f"the result has the accumulator's type {self.acc.type}, got {self.res.type}")

    @classmethod
    def builder(cls, acc, a, b, scale_d, *, n, type_ab, type_d="f32", trans_a=0, trans_b=0):
        """Build ``cute_nvgpu.wgmma_mma_async``; ``a`` is a list (one i64 descriptor or four i32 registers); the op's
        ``res`` is the updated accumulator struct."""
        return cls.build(i32_attr(n), str_attr(type_ab), str_attr(type_d), i32_attr(trans_a),
                                     i32_attr(trans_b), list(a), b, scale_d, acc, acc.type)

    def lower(self, rewriter):
        n, ab, d = self.int_attr("n"), self.str_attr("type_ab"), self.str_attr("type_d")
        trans_a, trans_b = self.int_attr("trans_a"), self.int_attr("trans_b")
        count, cons = (n // 2, "f") if d == "f32" else (n // 4, "r")
        a = list(self.a)
        with rewriter.ip:
            accs = [llvm.ExtractValueOp(ir.Type.parse("f32" if d == "f32" else "i32"), self.acc, [k]).result
                    for k in range(count)]
            scale = llvm.ZExtOp(ir.IntegerType.get_signless(32), self.scale_d).result
            # operands: $0..$count-1 the outputs, then the tied inputs, then A, B and scale-d
            first = 2 * count
            outs = "{" + ", ".join(f"${k}" for k in range(count)) + "}"
            if len(a) == 1:
                a_text, a_cons, tail = f"${first}", "l", f", {trans_a}, {trans_b}"
                rest = first + 1
            else:
                a_text = "{" + ", ".join(f"${first + k}" for k in range(4)) + "}"
                a_cons, tail, rest = "r,r,r,r", f", {trans_b}", first + 4
            if wgmma_k(ab) == 32:
                tail = ""       # 8-bit operands: no transpose bits
            ta, tb = _ab_pair(ab)
            ptx = ("{\n\t.reg .pred p;\n\t"
                   f"setp.ne.b32 p, ${rest + 1}, 0;\n\t"
                   f"wgmma.mma_async.sync.aligned.m64n{n}k{wgmma_k(ab)}.{d}.{ta}.{tb} {outs}, {a_text}, ${rest}, p, 1, 1"
                   f"{tail};\n\t}}")
            constraints = ",".join([f"={cons}"] * count + [str(k) for k in range(count)] + [a_cons, "l", "r"])
            res = inline_ptx(ptx, constraints, [*accs, *a, self.b, scale], self.acc.type).result
        finish(self, rewriter, res)


class WgmmaFenceOperandOp(CuteOp, name="wgmma_fence_operand"):
    """``value`` (a 32-bit register of an accumulator fragment, i32 or f32) through an empty volatile statement
    that reads and rewrites it: the compiler keeps every use of the register on its side of the MMAs around it.

    PTX: (none: an empty statement tying its output register to its input)
    """

    value: ext.Operand[Any]
    res: ext.Result[Any]

    def verify_rules(self):
        if str(self.value.type) not in ("i32", "f32"):
            self.fail("fence-operand-type", f"the fenced register is an i32 or an f32, got {self.value.type}")
        if self.res.type != self.value.type:
            self.fail("fence-operand-result-type", f"the result has the value's type {self.value.type}, got "
                                                   f"{self.res.type}")

    @classmethod
    def builder(cls, value):
        """Build ``cute_nvgpu.wgmma_fence_operand``; its ``res`` (the register after the fence) has ``value``'s type."""
        return cls.build(value, value.type)

    def lower(self, rewriter):
        letter = "f" if str(self.value.type) == "f32" else "r"
        with rewriter.ip:
            res = inline_ptx("", f"={letter},0", [self.value], self.value.type).result
        finish(self, rewriter, res)
