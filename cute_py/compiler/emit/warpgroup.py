"""The emission of the warpgroup MMA's instructions (:mod:`cute_py.nvgpu.warpgroup`): ``wgmma.fence``,
``commit_group``, ``wait_group`` and ``wgmma.mma_async`` as ops of the ``cute_nvgpu`` dialect, with the register
fence of an accumulator fragment (``wgmma_fence_operand``) and the addition of an offset to a descriptor's start
address (``int_op`` ``add_lo32``, which also adds a descriptor's static offset: see ``_start_descriptor``).

A descriptor operand is an int (the whole 64-bit value), a traced 64-bit integer, or a
:class:`~cute_py.nvgpu.warpgroup.GmmaDescriptor` whose start is a shared-memory pointer (its address joins the
static fields at run time). ``cute_py.gemm`` with a warpgroup op issues one ``wgmma.mma_async`` per instruction
of the fragments: ``A``/``B`` one-instruction descriptor tensors (or, for A from registers, 8 16-bit or 16
8-bit register values),
``D``/``C`` the instruction's accumulator values (C copied into D first when they are different registers). The
accumulators are a register fragment of the op's ``acc_dtype``, read and written
back in value order (Float16 values two to a 32-bit register, the lower index in the low half).
"""

from __future__ import annotations

from typing import Any

import mlir_dialects as md

from ...errors import TraceError
from ...nvgpu.sync import WgmmaCommitGroupOp, WgmmaFenceOp, WgmmaMmaAsyncOp, WgmmaWaitGroupOp
from ...nvgpu.warpgroup.desc import GmmaDescriptor
from ...nvgpu.warpgroup.ops import MmaF8Op, MmaF16BF16Op
from ...nvgpu.warpgroup.operands import OperandSource
from ...tensor.dtypes import Float32
from ...tensor.pointer import AddressSpace, Pointer
from ..lang.builder import current
from ..lang.memory import element_values, pack, pointer_value, traced_elements, unpack
from ..lang.traced_int import TracedInt
from .memory import shared_address
from .operands import join_words, predicate_value

__all__ = ["ENTRIES", "descriptor_value", "smem_address", "fence_register", "add_to_low_word"]


def smem_address(ptr: Pointer, what: str) -> TracedInt:
    """The 32-bit shared-memory address of ``ptr``."""
    if not isinstance(ptr, Pointer) or ptr.memspace is not AddressSpace.smem:
        raise TraceError(f"{what} must be a shared-memory pointer, got {ptr!r}")
    p = pointer_value(ptr, what)
    return TracedInt(shared_address(p), 32, True)


def descriptor_value(desc: Any, what: str) -> Any:
    """The i64 MLIR value of a descriptor operand (see the module)."""
    b = current()
    if isinstance(desc, GmmaDescriptor):
        if type(desc.start) is not int or type(desc.start_offset) is not int:
            return _start_descriptor(desc, what)
        desc = desc.value
    if type(desc) is int:
        if not 0 <= desc < 1 << 64:
            raise TraceError(f"{what}: a descriptor is a 64-bit value, got {desc:#x}")
        return b.const(desc - (1 << 64) if desc >= 1 << 63 else desc, 64)
    if isinstance(desc, TracedInt) and desc.width == 64:
        return desc.ir
    raise TraceError(f"{what} must be a WGMMA descriptor (make_gmma_desc), an int or a traced 64-bit integer, "
                     f"got {desc!r}")


def _start_descriptor(desc: GmmaDescriptor, what: str) -> Any:
    """The i64 value of a descriptor whose start is a shared-memory pointer (or a byte address) plus
    ``start_offset`` 16-byte units: the start's address plus the run-time units, in 16-byte units, as the low word;
    then the static units and the fixed low fields added to it by an instruction the compiler keeps in place, so
    that a stage's k-blocks share one register and no descriptor is kept live across the loop. A CTA's shared
    addresses are below 2^18 (228 KiB on sm_90): the address in 16-byte units fills the 14-bit field alone, and
    adding the leading byte offset's field (bits 16-29) is or-ing it."""
    addr = desc.start if type(desc.start) is int else smem_address(desc.start, f"{what}: the descriptor's start")
    offset = desc.start_offset
    dynamic, static = offset if type(offset) is tuple else (None, offset) if type(offset) is int else (offset, 0)
    if dynamic is not None:
        addr = addr + dynamic * 16
    value = join_words(addr >> 4, desc.high_word, what)
    return add_to_low_word(value.ir, current().const(static + desc.low_fixed, 32))


def fence_register(word: Any) -> Any:
    """The ``i32`` ``word`` through an empty volatile statement that reads and rewrites it
    (``cute_nvgpu.wgmma_fence_operand``): no use of the register moves across it."""
    with current().at_end():
        return md.wgmma_fence_operand(word).res


def add_to_low_word(value: Any, step: Any) -> Any:
    """The ``i64`` ``value`` with the ``i32`` ``step`` added to its low 32-bit word (no carry into the high one)."""
    with current().at_end():
        return md.int_op("add_lo32", [value, step]).res


def _fence(b, op):
    with b.at_end():
        md.wgmma_fence()


def _commit_group(b, op):
    with b.at_end():
        md.wgmma_commit_group()


def _wait_group(b, op):
    with b.at_end():
        md.wgmma_wait_group(op.count)


def _fragment(t, dtype, count, what):
    """The elements of the register fragment ``t`` (``count`` of ``dtype``), as traced values."""
    if not hasattr(t, "engine") or type(t.engine).__name__ != "RegisterEngine":
        raise TraceError(f"{what} must be a register fragment (make_fragment), got {t!r}")
    if t.element_type is not dtype:
        raise TraceError(f"{what} holds {t.element_type.name} values, the MMA needs {dtype.name}")
    from ...core.int_tuple import size

    if size(t.layout.shape) != count:
        raise TraceError(f"{what} must hold {count} values (the MMA's layout), got {size(t.layout.shape)}")
    return [t[i] for i in range(count)]


def _words(values, dtype):
    """The i32 words of ``values``: one per 32-bit value, one per pair of 16-bit values or four 8-bit ones (the
    lowest index in the lowest bits)."""
    per = 32 // dtype.width
    return [pack(values[i:i + per], dtype, 32) for i in range(0, len(values), per)]


def _mma_async(b, op, acc, a_operand, b_operand, accumulate):
    mma = op.mma
    _, n, _ = mma.shape_mnk
    what = f"{mma!r}.mma"
    count = n // 2
    values = _fragment(acc, mma.acc_dtype, count, f"{what}: acc")
    if mma.a_src is OperandSource.RMEM:
        a_vals = _words(_fragment(a_operand, mma.a_dtype, mma.a_register_values, f"{what}: a (registers)"),
                        mma.a_dtype)
    else:
        a_vals = [descriptor_value(a_operand, f"{what}: a")]
    b_val = descriptor_value(b_operand, f"{what}: b")
    scale = predicate_value(accumulate, f"{what}: accumulate")
    llvm = b.mlir.llvm
    f32 = mma.acc_dtype is Float32
    d_type = "f32" if f32 else "f16"
    per = 32 // mma.acc_dtype.width
    with b.at_end():
        # Float32 accumulators go into the struct as they are, Float16 ones two to an i32 word
        words = element_values(values, Float32, f"{what}: acc") if f32 else _words(values, mma.acc_dtype)
        s = llvm.UndefOp(md.wgmma_acc_type(n, d_type)).result
        for k, w in enumerate(words):
            s = llvm.InsertValueOp(s, w, [k]).result
        res = md.wgmma_mma_async(s, a_vals, b_val, scale, n=n, type_ab=mma.type_ab, type_d=d_type,
                                 trans_a=mma.transpose_a, trans_b=mma.transpose_b).res
        word_t = b.ir.F32Type.get() if f32 else b.int_type(32)
        outs = [llvm.ExtractValueOp(word_t, res, [k]).result for k in range(len(words))]
        new = traced_elements(outs, Float32) if f32 else [v for w in outs for v in unpack(w, mma.acc_dtype, per)]
    for i, v in enumerate(new):
        acc[i] = v



def _same_registers(x, y):
    ex, ey = getattr(x, "engine", None), getattr(y, "engine", None)
    return (ex is not None and ey is not None and getattr(ex, "array", None) is getattr(ey, "array", 0)
            and ex.offset == ey.offset and x.layout == y.layout)


def _gemm(b, op, D, A, B, C, accumulate=True):
    what = f"gemm with {op!r}"
    a = A if op.a_src is OperandSource.RMEM else _one_descriptor(A, f"{what}: A")
    if not _same_registers(C, D) and accumulate is not False:
        count = op.shape_mnk[1] // 2
        for i, v in enumerate(_fragment(C, op.acc_dtype, count, f"{what}: C")):
            D[i] = v
    _mma_async(b, WgmmaMmaAsyncOp(op), acc=D, a_operand=a, b_operand=_one_descriptor(B, f"{what}: B"),
               accumulate=accumulate)


def _one_descriptor(t, what):
    if not getattr(t, "__cute_mma_descriptors__", False):
        raise TraceError(f"{what} must be a descriptor tensor (tiled_mma.make_fragment_A/B of a shared-memory "
                         f"partition), got {t!r}")
    return t.descriptor()


# op class -> (its entry, the dialect ops the entry builds)
ENTRIES = {
    WgmmaFenceOp: (_fence, ("wgmma_fence",)),
    WgmmaCommitGroupOp: (_commit_group, ("wgmma_commit_group",)),
    WgmmaWaitGroupOp: (_wait_group, ("wgmma_wait_group",)),
    WgmmaMmaAsyncOp: (_mma_async, ("wgmma_mma_async",)),
    MmaF16BF16Op: (_gemm, ("wgmma_mma_async",)),
    MmaF8Op: (_gemm, ("wgmma_mma_async",)),
}
