"""Blackwell's tensor cores (tcgen05, sm_100a): the mbarrier arrival that tracks a thread's tcgen05 operations.

Its PTX needs PTX ISA 8.6 and assembles for sm_100a only (``ARCH``); the rest of the dialect targets Hopper.

Which builder gives which inline PTX statement: the table of ``mlir_dialects.ops``.
"""

from typing import Any

from .._backend import ext, ir, llvm
from ..dialect import CuteOp
from ..errors import OperandTypeError
from ..types import AddressSpace, address_space_of, constant_int_of
from .common import finish, inline_ptx, u32_of

__all__ = ["Tcgen05CommitOp"]


class Tcgen05CommitOp(CuteOp, name="tcgen05_commit"):
    """One arrival on the mbarrier ``mbar`` (a shared-memory pointer, or its 32-bit shared address) once every
    tcgen05 operation this thread issued before has completed.

    PTX: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [mbar];
    """

    PTX_ISA = 86
    ARCH = "sm_100a"
    mbar: ext.Operand[Any]

    def verify_rules(self):
        if address_space_of(self.mbar) is None and not (isinstance(self.mbar.type, ir.IntegerType)
                                                        and self.mbar.type.width == 32):
            self.fail("mbar-type", f"the mbarrier is an !llvm.ptr<3> or its i32 shared address, got "
                                   f"{self.mbar.type}", OperandTypeError)
        if address_space_of(self.mbar) is not None:
            self.expect_space("mbar", self.mbar, AddressSpace.SHARED)
        n = constant_int_of(self.mbar)
        if n is not None and n % 8:
            self.fail("mbar-alignment", f"an mbarrier is 8-byte aligned, got the address {n:#x}")

    def lower(self, rewriter):
        with rewriter.ip:
            mbar = u32_of(self.mbar) if isinstance(self.mbar.type, llvm.PointerType) else self.mbar
            inline_ptx("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [$0];", "r,~{memory}",
                       [mbar])
        finish(self, rewriter)
