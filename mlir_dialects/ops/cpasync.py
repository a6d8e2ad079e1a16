"""cp.async: the per-thread asynchronous copies from global to shared memory, and their groups."""

from typing import Optional

from .._backend import ext, ir, llvm, nvvm
from ..dialect import CuteOp, Flag, bool_attr, i32_attr, str_attr
from ..types import AddressSpace, constant_int_of
from .common import finish, inline_ptx

__all__ = [
    "CpAsyncOp",
    "CpAsyncCommitGroupOp",
    "CpAsyncWaitGroupOp",
    "CpAsyncMbarrierArriveOp",
    "CP_ASYNC_SIZES",
    "CP_ASYNC_MODIFIERS",
]

CP_ASYNC_SIZES = (4, 8, 16)
CP_ASYNC_MODIFIERS = ("ca", "cg")
I32, I64 = ir.IntegerType[32], ir.IntegerType[64]
_MODIFIER = {"ca": nvvm.LoadCacheModifierKind.CA, "cg": nvvm.LoadCacheModifierKind.CG}


class CpAsyncOp(CuteOp, name="cp_async"):
    """Copy 4, 8 or 16 bytes from global to shared memory, asynchronously; optional zero-fill and L2 hint.

    PTX: cp.async.{ca,cg}.shared.global{.L2::cache_hint} [dst], [src], size{, src_size}{, policy};
    """

    dst: ext.Operand[llvm.PointerType]
    src: ext.Operand[llvm.PointerType]
    size: ir.IntegerAttr
    modifier: ir.StringAttr
    src_size: Optional[ext.Operand[I32]] = None
    cache_hint: Optional[ext.Operand[I64]] = None

    def verify_rules(self):
        size, mod = self.int_attr("size"), self.str_attr("modifier")
        if size not in CP_ASYNC_SIZES:
            self.fail("cp-async-size", f"cp-size must be one of {CP_ASYNC_SIZES} bytes, got {size}")
        if mod not in CP_ASYNC_MODIFIERS:
            self.fail("cp-async-modifier", f"cache modifier must be one of {CP_ASYNC_MODIFIERS}, got {mod!r}")
        if mod == "cg" and size != 16:
            self.fail("cp-async-cg-size", f".cg (cache at L2 only) copies 16 bytes, got {size}")
        self.expect_space("dst", self.dst, AddressSpace.SHARED)
        self.expect_space("src", self.src, AddressSpace.GLOBAL)
        if self.src_size is not None:
            n = constant_int_of(self.src_size)
            if n is not None and not 0 <= n <= size:
                self.fail("cp-async-src-size", f"src_size must lie in [0, {size}] (the cp-size), got {n}")

    @classmethod
    def builder(cls, dst, src, size, *, modifier="ca", src_size=None, cache_hint=None):
        """Build ``cute_nvgpu.cp_async`` (see ``CpAsyncOp``)."""
        return cls.build(dst, src, i32_attr(size), str_attr(modifier), src_size=src_size, cache_hint=cache_hint)

    def lower(self, rewriter):
        size, mod = self.int_attr("size"), self.str_attr("modifier")
        with rewriter.ip:
            if self.cache_hint is None:
                nvvm.CpAsyncOp(self.dst, self.src, size, _MODIFIER[mod], cpSize=self.src_size)
            else:
                dst32 = llvm.PtrToIntOp(ir.IntegerType.get_signless(32), self.dst).result
                operands, cons, tail = [dst32, self.src], ["r", "l"], ""
                if self.src_size is not None:
                    operands.append(self.src_size)
                    cons.append("r")
                    tail = ", $2"
                operands.append(self.cache_hint)
                cons.append("l")
                hint = f"${len(operands) - 1}"
                ptx = f"cp.async.{mod}.shared.global.L2::cache_hint [$0], [$1], {size}{tail}, {hint};"
                inline_ptx(ptx, ",".join(cons), operands)
        finish(self, rewriter)


class CpAsyncCommitGroupOp(CuteOp, name="cp_async_commit_group"):
    """Close the group of this thread's cp.async copies issued since the last commit.

    PTX: cp.async.commit_group;
    """

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.CpAsyncCommitGroupOp()
        finish(self, rewriter)


class CpAsyncWaitGroupOp(CuteOp, name="cp_async_wait_group"):
    """Wait until at most ``n`` of this thread's committed cp.async groups are pending.

    PTX: cp.async.wait_group n;
    """

    n: ir.IntegerAttr

    def verify_rules(self):
        n = self.int_attr("n")
        if n < 0:
            self.fail("cp-async-wait-count", f"the number of pending groups must be >= 0, got {n}")

    @classmethod
    def builder(cls, n=0):
        """Build ``cute_nvgpu.cp_async_wait_group``."""
        return cls.build(i32_attr(n))

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.CpAsyncWaitGroupOp(self.int_attr("n"))
        finish(self, rewriter)


class CpAsyncMbarrierArriveOp(CuteOp, name="cp_async_mbarrier_arrive"):
    """Make an mbarrier track this thread's prior cp.async copies (``.noinc``: the count was preset).

    PTX: cp.async.mbarrier.arrive{.noinc}.shared::cta.b64 [mbar];
    """

    mbar: ext.Operand[llvm.PointerType]
    noinc: Flag

    def verify_rules(self):
        self.expect_space("mbar", self.mbar, AddressSpace.SHARED)

    @classmethod
    def builder(cls, mbar, *, noinc=True):
        """Build ``cute_nvgpu.cp_async_mbarrier_arrive``."""
        return cls.build(mbar, bool_attr(noinc))

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.CpAsyncMBarrierArriveOp(self.mbar, noinc=self.bool_attr("noinc"))
        finish(self, rewriter)
