"""cp.async: the per-thread asynchronous copies from global to shared memory, and their groups."""

from typing import Optional

from ._backend import ext, ir, llvm, nvvm
from .dialect import CuteOp, Flag, bool_attr, i32_attr, str_attr
from .lowering import finish, inline_ptx, lowers
from .types import AddressSpace, constant_int_of

__all__ = [
    "CpAsyncOp",
    "CpAsyncCommitGroupOp",
    "CpAsyncWaitGroupOp",
    "CpAsyncMbarrierArriveOp",
    "cp_async",
    "cp_async_commit_group",
    "cp_async_wait_group",
    "cp_async_mbarrier_arrive",
    "CP_ASYNC_SIZES",
    "CP_ASYNC_MODIFIERS",
]

CP_ASYNC_SIZES = (4, 8, 16)
CP_ASYNC_MODIFIERS = ("ca", "cg")
I32, I64 = ir.IntegerType[32], ir.IntegerType[64]


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


class CpAsyncCommitGroupOp(CuteOp, name="cp_async_commit_group"):
    """Close the group of this thread's cp.async copies issued since the last commit.

    PTX: cp.async.commit_group;
    """


class CpAsyncWaitGroupOp(CuteOp, name="cp_async_wait_group"):
    """Wait until at most ``n`` of this thread's committed cp.async groups are pending.

    PTX: cp.async.wait_group n;
    """

    n: ir.IntegerAttr

    def verify_rules(self):
        n = self.int_attr("n")
        if n < 0:
            self.fail("cp-async-wait-count", f"the number of pending groups must be >= 0, got {n}")


class CpAsyncMbarrierArriveOp(CuteOp, name="cp_async_mbarrier_arrive"):
    """Make an mbarrier track this thread's prior cp.async copies (``.noinc``: the count was preset).

    PTX: cp.async.mbarrier.arrive{.noinc}.shared::cta.b64 [mbar];
    """

    mbar: ext.Operand[llvm.PointerType]
    noinc: Flag

    def verify_rules(self):
        self.expect_space("mbar", self.mbar, AddressSpace.SHARED)


# -- builders ------------------------------------------------------------------------------


def cp_async(dst, src, size, *, modifier="ca", src_size=None, cache_hint=None):
    """Build ``cute_nvgpu.cp_async`` (see ``CpAsyncOp``)."""
    return CpAsyncOp.build(dst, src, i32_attr(size), str_attr(modifier), src_size=src_size, cache_hint=cache_hint)


def cp_async_commit_group():
    """Build ``cute_nvgpu.cp_async_commit_group``."""
    return CpAsyncCommitGroupOp.build()


def cp_async_wait_group(n=0):
    """Build ``cute_nvgpu.cp_async_wait_group``."""
    return CpAsyncWaitGroupOp.build(i32_attr(n))


def cp_async_mbarrier_arrive(mbar, *, noinc=True):
    """Build ``cute_nvgpu.cp_async_mbarrier_arrive``."""
    return CpAsyncMbarrierArriveOp.build(mbar, bool_attr(noinc))


# -- lowering ------------------------------------------------------------------------------

_MODIFIER = {"ca": nvvm.LoadCacheModifierKind.CA, "cg": nvvm.LoadCacheModifierKind.CG}


@lowers(CpAsyncOp)
def lower_cp_async(op, rewriter):
    size, mod = op.int_attr("size"), op.str_attr("modifier")
    with rewriter.ip:
        if op.cache_hint is None:
            nvvm.CpAsyncOp(op.dst, op.src, size, _MODIFIER[mod], cpSize=op.src_size)
        else:
            dst32 = llvm.PtrToIntOp(ir.IntegerType.get_signless(32), op.dst).result
            operands, cons, tail = [dst32, op.src], ["r", "l"], ""
            if op.src_size is not None:
                operands.append(op.src_size)
                cons.append("r")
                tail = ", $2"
            operands.append(op.cache_hint)
            cons.append("l")
            hint = f"${len(operands) - 1}"
            ptx = f"cp.async.{mod}.shared.global.L2::cache_hint [$0], [$1], {size}{tail}, {hint};"
            inline_ptx(ptx, ",".join(cons), operands)
    finish(op, rewriter)


@lowers(CpAsyncCommitGroupOp)
def lower_cp_async_commit_group(op, rewriter):
    with rewriter.ip:
        nvvm.CpAsyncCommitGroupOp()
    finish(op, rewriter)


@lowers(CpAsyncWaitGroupOp)
def lower_cp_async_wait_group(op, rewriter):
    with rewriter.ip:
        nvvm.CpAsyncWaitGroupOp(op.int_attr("n"))
    finish(op, rewriter)


@lowers(CpAsyncMbarrierArriveOp)
def lower_cp_async_mbarrier_arrive(op, rewriter):
    with rewriter.ip:
        nvvm.CpAsyncMBarrierArriveOp(op.mbar, noinc=op.bool_attr("noinc"))
    finish(op, rewriter)
