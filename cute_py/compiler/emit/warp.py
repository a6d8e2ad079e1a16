"""The emission of the warp unit: special-register reads (``%tid``, ``%laneid``, ``%clock``...), shuffles, votes,
``activemask``, ``match.sync`` and ``redux.sync``, ``setmaxnreg``, and the warp-level tensor-core ops
(:mod:`cute_py.nvgpu.warp`): ``mma.sync`` for ``cute_py.gemm`` (and Volta's ``m8n8k4`` form), and ``ldmatrix`` /
``stmatrix`` for ``cute_py.copy`` with their copy atoms.

An MMA entry takes one instruction's operands as tensors over its values (``D``, ``A``, ``B``, ``C``: mode
``V`` of the thread's fragments, see :mod:`cute_py.mma`), packs 16-bit elements two to an i32 word (the
first in the low half), and writes ``D``.  A matrix copy issues one instruction per atom of the thread's
partitions: the shared-memory side's atom values are the 8 contiguous elements of the row this thread
addresses (16 bytes, 16-byte aligned); the register side's are its ``2 * num_matrices`` elements, in the
order of the instruction's words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mlir_dialects as md

from ...core.int_tuple import product
from ...errors import TraceError
from ...nvgpu.warp.ops import LdMatrix8x8x16bOp, MmaF16BF16Op, StMatrix8x8x16bOp
from ...tensor.dtypes import DType, Float16, Float32, Int32
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.tensor import Tensor
from ...tensor.engines import ArrayEngine
from ..lang.traced_int import TracedInt
from ..lang import numeric
from ..lang.builder import current
from ..lang.memory import element_ptr, pack, pointer_value, unpack
from ..lang.values import TracedFloat, wrap

if TYPE_CHECKING:
    from ...atom import CopyAtom

__all__ = ["ENTRIES", "matrix_copy", "read_sreg", "read_sregs", "read_sreg_value", "read_ptx_sreg", "read_warp_size",
           "shfl_sync", "shfl_sync_wide", "lowest_lane", "vote_sync", "activemask", "match_sync", "redux_sync",
           "setmaxnreg", "one_cta_per_sm", "mma_m8n8k4"]


def read_sreg(name: str) -> TracedInt:
    """The 32-bit special register ``%name`` (``laneid``, ``tid.x``, ``cluster_nctarank``...)."""
    with current().at_end():
        return TracedInt(md.read_sreg(name).value, 32, True)


def read_sregs(prefix: str) -> tuple[TracedInt, TracedInt, TracedInt]:
    """``(x, y, z)`` of the special registers ``%prefix.x``, ``.y``, ``.z`` (``tid``, ``ctaid``, ``ntid``...)."""
    with current().at_end():
        return tuple(TracedInt(md.read_sreg(f"{prefix}.{d}").value, 32, True) for d in "xyz")


def read_sreg_value(name: str) -> Any:
    """The ``i32`` value of the special register ``%name`` that the dialect reads (``smid``, ``lanemask_lt``...)."""
    with current().at_end():
        return md.read_sreg(name).value


def read_ptx_sreg(name: str, dtype: DType) -> Any:
    """The special register ``%name`` read by a volatile ``mov.u32`` (``mov.u64`` for a 64-bit register:
    ``cute_nvgpu.read_sreg_volatile``): a traced ``dtype``, of the register's width."""
    with current().at_end():
        return wrap(md.read_sreg_volatile(name).value, dtype)


def read_warp_size() -> Any:
    """``WARP_SZ``, read at run time: a traced Int32."""
    with current().at_end():
        return wrap(md.read_sreg_volatile("WARP_SZ").value, Int32)


# -- shuffles, votes, match and reduce --------------------------------------------------------------------


def shfl_sync(kind: str, value: Any, lane: Any, mask: Any, c: Any) -> Any:
    """One ``shfl.sync.<kind>.b32`` of an ``i32`` or ``f32`` value (``lane``, ``c``, ``mask`` ``i32`` values)."""
    with current().at_end():
        return md.shfl_sync(kind, value, lane, c, mask).res


def shfl_sync_wide(kind: str, value: Any, lane: Any, mask: Any, c: Any) -> Any:
    """``shfl.sync.<kind>.b32`` of a 64-bit value (``i64`` or ``f64``) as its two 32-bit halves: the shuffled
    value, of ``value``'s type."""
    b = current()
    arith = b.mlir.arith
    i32, i64 = b.int_type(32), b.int_type(64)
    shift = b.const(32, 64)
    is_int = str(value.type) == "i64"
    with b.at_end():
        bits = value if is_int else arith.BitcastOp(i64, value).result
        lo = arith.TruncIOp(i32, bits).result
        hi_ = arith.TruncIOp(i32, arith.ShRUIOp(bits, shift).result).result
    lo = shfl_sync(kind, lo, lane, mask, c)
    hi_ = shfl_sync(kind, hi_, lane, mask, c)
    with b.at_end():
        lo64 = arith.ExtUIOp(i64, lo).result
        hi64 = arith.ShLIOp(arith.ExtUIOp(i64, hi_).result, shift).result
        res = arith.OrIOp(hi64, lo64).result
        if not is_int:
            return arith.BitcastOp(value.type, res).result
    return res


def lowest_lane(mask: Any) -> Any:
    """The ``i1`` true in the lowest lane of the ``i32`` lane mask ``mask`` (its ``%laneid`` compared with the
    lowest set bit, broadcast from that lane by ``shfl.sync.idx``, so warp-uniform)."""
    b = current()
    llvm, arith = b.mlir.llvm, b.mlir.arith
    with b.at_end():
        lane = md.read_sreg("laneid").value
        first = llvm.intr_cttz(mask, True, results=[b.int_type(32)])
    leader = shfl_sync("idx", lane, first, mask, b.const(31, 32))
    with b.at_end():
        return arith.CmpIOp(arith.CmpIPredicate.eq, lane, leader).result


def vote_sync(kind: str, pred: Any, mask: Any) -> Any:
    """``vote.sync.<kind>`` of the ``i1`` ``pred`` over the lanes of ``mask``: an ``i32`` (``ballot``) or ``i1``."""
    with current().at_end():
        return md.vote_sync(kind, pred, mask).res


def activemask() -> Any:
    """``activemask.b32``: the ``i32`` mask of the lanes executing it."""
    with current().at_end():
        return md.activemask().mask


def match_sync(kind: str, value: Any, mask: Any) -> Any:
    """``match.{any,all}.sync.b{32,64}`` of the ``i32`` or ``i64`` ``value`` over the lanes of ``mask``: the ``i32``
    lane mask."""
    with current().at_end():
        return md.match_sync(kind, value, mask).res


def redux_sync(kind: str, signed: bool, value: Any, mask: Any) -> Any:
    """``redux.sync.<kind>`` of the ``i32`` ``value`` (of a signed type or not) over the lanes of ``mask``: the
    ``i32`` result. ``kind``: ``add``, ``and``, ``or``, ``xor``, ``max``, ``min`` (unsigned for an unsigned value),
    ``umax``, ``umin``."""
    if kind in ("add", "and", "or", "xor"):
        suffix = ("u32" if not signed else "s32") if kind == "add" else "b32"
        op = kind
    else:
        unsigned = kind.startswith("u") or not signed
        op = kind.lstrip("u")
        suffix = "u32" if unsigned else "s32"
    with current().at_end():
        return md.redux_sync(op, suffix, value, mask).res


# -- register reallocation --------------------------------------------------------------------------------


def one_cta_per_sm() -> None:
    """Give the kernel ``.minnctapersm 1``: ptxas keeps setmaxnreg only where it knows the registers the kernel
    starts with, which one CTA per SM fixes at what the block may hold."""
    b = current()
    b.func.attributes["nvvm.minctasm"] = b.ir.IntegerAttr.get(b._i32, 1)


def setmaxnreg(action: str, count: int) -> None:
    """``setmaxnreg.<action>.sync.aligned.u32 count`` (``action`` ``"inc"`` or ``"dec"``)."""
    with current().at_end():
        md.setmaxnreg(action, count)


# -- the tensor cores -----------------------------------------------------------------------------------


def mma_m8n8k4(a_layout: str, b_layout: str, f32_accumulators: bool, a_regs: list[Any], b_regs: list[Any],
               c_regs: list[Any]) -> list[Any]:
    """``mma.sync.aligned.m8n8k4.<a_layout>.<b_layout>.<C>.f16.f16.<C>`` of the A and B words (two ``i32`` of two
    f16 each) and the accumulators (8 ``f32``, or 4 ``i32`` of two f16): the result accumulators, alike."""
    with current().at_end():
        return list(md.mma_sync("m8n8k4", "f16", "f32" if f32_accumulators else "f16", a_regs, b_regs, c_regs,
                                layout_a=a_layout, layout_b=b_layout).d)


def _values(t: Tensor) -> list[Any]:
    return [t.engine.read(t.layout(i)) for i in range(product(t.layout.shape))]


def _need(t, n, role, dtype, op):
    if not isinstance(t, Tensor) or not isinstance(t.engine, ArrayEngine):
        raise TraceError(f"gemm: {role} must be a register fragment, got {t!r}")
    got = product(t.layout.shape)
    if got != n:
        raise TraceError(f"gemm: one {op.ptx} takes {n} values of {role} per thread, got {got} ({t.layout})")
    if t.element_type is not dtype:
        raise TraceError(f"gemm: {role} of {op!r} holds {dtype.name} elements, got a {t.element_type.name} fragment")


def _f32(v):
    if isinstance(v, TracedFloat) and v.dtype is Float32:
        return v.ir
    if type(v) in (int, float):
        return numeric.constant(float(v), Float32)
    raise TraceError(f"gemm: Float32 accumulators hold Float32 values, got {v!r}")


def _mma_sync(b, op: MmaF16BF16Op, D: Tensor, A: Tensor, B: Tensor, C: Tensor) -> None:
    m, n, k = op.shape_mnk
    ab, acc = op.ab_dtype, op.acc_dtype
    _need(A, k // 2, "A", ab, op)
    _need(B, k // 4, "B", ab, op)
    _need(C, 4, "C", acc, op)
    _need(D, 4, "D", acc, op)
    av, bv, cv = _values(A), _values(B), _values(C)
    a_words = [pack(av[i:i + 2], ab, 32) for i in range(0, len(av), 2)]
    b_words = [pack(bv[i:i + 2], ab, 32) for i in range(0, len(bv), 2)]
    if acc is Float32:
        c_regs = [_f32(v) for v in cv]
    else:
        c_regs = [pack(cv[i:i + 2], Float16, 32) for i in range(0, 4, 2)]
    abn = "f16" if ab is Float16 else "bf16"
    accn = "f32" if acc is Float32 else "f16"
    with b.at_end():
        d = list(md.mma_sync(f"m{m}n{n}k{k}", abn, accn, a_words, b_words, c_regs).d)
    if acc is Float32:
        out = [wrap(x, Float32) for x in d]
    else:
        out = [v for w in d for v in unpack(w, Float16, 2)]
    for i, v in enumerate(out):
        D.engine.write(D.layout(i), v)


def _smem_side(t, role):
    if not (isinstance(t, Tensor) and isinstance(t.engine, Pointer) and t.engine.memspace is AddressSpace.smem):
        raise TraceError(f"copy: the {role} of ldmatrix/stmatrix must be a shared-memory tensor, got {t!r}")


def _reg_side(t, role):
    if not (isinstance(t, Tensor) and isinstance(t.engine, ArrayEngine)):
        raise TraceError(f"copy: the {role} of ldmatrix/stmatrix must be a register fragment, got {t!r}")


def _row_address(t, j):
    """The shared-memory address of the 8-element row of instruction ``j`` (flat elements ``8 j .. 8 j + 7``)."""
    lay = t.layout
    first = lay(8 * j)
    for i in range(1, 8):
        at = lay(8 * j + i)
        if type(first) is int and type(at) is int and at != first + i:
            raise TraceError(f"copy: ldmatrix/stmatrix rows are 8 contiguous 16-bit elements, but elements "
                             f"{8 * j}..{8 * j + 7} of {lay} are not contiguous")
    ptr = element_ptr(t, 8 * j)
    if ptr.alignment < 16:
        raise TraceError(f"copy: an ldmatrix/stmatrix row must be 16-byte aligned, but {ptr!r} is only known to be "
                         f"{ptr.alignment}-byte aligned")
    return pointer_value(ptr, "the matrix row")


def matrix_copy(atom: CopyAtom, src: Tensor, dst: Tensor) -> None:
    """``cute_py.copy`` with an ldmatrix or stmatrix atom: ``src`` -> ``dst`` (see the module)."""
    op = atom.op
    load = isinstance(op, LdMatrix8x8x16bOp)
    smem, regs = (src, dst) if load else (dst, src)
    _smem_side(smem, "source" if load else "destination")
    _reg_side(regs, "destination" if load else "source")
    for t in (smem, regs):
        if t.element_type.width != 16:
            raise TraceError(f"copy: {type(op).__name__} moves 16-bit elements, got {t.element_type.name}")
    per_reg = 2 * op.num_matrices
    n_smem, n_regs = product(smem.layout.shape), product(regs.layout.shape)
    if n_smem % 8 or n_regs % per_reg or n_smem // 8 != n_regs // per_reg:
        raise TraceError(f"copy: {type(op).__name__}(x{op.num_matrices}) takes 8 shared-memory elements (a row) and "
                         f"{per_reg} register elements per instruction; got {n_smem} and {n_regs} "
                         f"(shared {smem.layout}, registers {regs.layout})")
    b = current()
    dtype = regs.element_type
    for j in range(n_smem // 8):
        addr = _row_address(smem, j)
        base = j * per_reg
        if load:
            with b.at_end():
                words = list(md.ldmatrix(addr, op.num_matrices, op.transpose).words)
            for w, word in enumerate(words):
                for h, v in enumerate(unpack(word, dtype, 2)):
                    regs.engine.write(regs.layout(base + 2 * w + h), v)
        else:
            vals = [regs.engine.read(regs.layout(base + i)) for i in range(per_reg)]
            words = [pack(vals[i:i + 2], dtype, 32) for i in range(0, per_reg, 2)]
            with b.at_end():
                md.stmatrix(addr, words, op.transpose)


def _ldmatrix(b, op: LdMatrix8x8x16bOp, atom: CopyAtom, src: Tensor, dst: Tensor) -> None:
    matrix_copy(atom, src, dst)


def _stmatrix(b, op: StMatrix8x8x16bOp, atom: CopyAtom, src: Tensor, dst: Tensor) -> None:
    matrix_copy(atom, src, dst)


# op class -> (its entry, the dialect ops the entry builds)
ENTRIES = {
    MmaF16BF16Op: (_mma_sync, ("mma_sync",)),
    LdMatrix8x8x16bOp: (_ldmatrix, ("ldmatrix",)),
    StMatrix8x8x16bOp: (_stmatrix, ("stmatrix",)),
}
