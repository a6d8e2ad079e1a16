"""What the lowering rules of the unit modules share: inline PTX, constants, pointer conversions, and replacing
the lowered op by its results."""

from .._backend import ir, llvm
from ..types import AddressSpace, pointer_type

__all__ = ["inline_ptx", "const_int", "u32_of", "to_shared_cluster", "finish", "reg_letter"]


def inline_ptx(ptx, constraints, operands, result_type=None):
    """``llvm.inline_asm`` with side effects at the current insertion point; returns the op.

    Operands are ``$0``, ``$1``…: results first, then inputs, as in LLVM.
    """
    return llvm.InlineAsmOp(result_type, list(operands), ptx, constraints, has_side_effects=True)


def const_int(value, width=32):
    """An ``llvm.mlir.constant`` of type ``i<width>``."""
    t = ir.IntegerType.get_signless(width)
    return llvm.ConstantOp(t, ir.IntegerAttr.get(t, int(value))).result


def u32_of(ptr):
    """The 32-bit address of a shared-memory pointer (``llvm.ptrtoint``), as inline PTX takes it (``r``)."""
    return llvm.PtrToIntOp(ir.IntegerType.get_signless(32), ptr).result


def to_shared_cluster(ptr):
    """``ptr`` as a shared::cluster pointer (``llvm.addrspacecast`` from shared::cta when needed)."""
    if ptr.type.address_space == AddressSpace.SHARED_CLUSTER:
        return ptr
    return llvm.AddrSpaceCastOp(pointer_type(AddressSpace.SHARED_CLUSTER), ptr).result


def finish(op, rewriter, *results):
    """Replace ``op`` by ``results`` (or erase it when it has none)."""
    if results:
        rewriter.replace_op(op.operation, list(results))
    else:
        rewriter.erase_op(op.operation)


def reg_letter(t):
    """The inline-PTX constraint letter of a register holding a value of MLIR type ``t`` (``h`` for 16 bits,
    ``r``/``l`` for 32/64-bit integers, ``f``/``d`` for f32/f64); None for another type."""
    return {"i16": "h", "f16": "h", "bf16": "h", "i32": "r", "i64": "l", "f32": "f", "f64": "d"}.get(str(t))
