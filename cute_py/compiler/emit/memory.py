"""The emission of the memory unit's instructions that are not copy ops: addresses as integers, vector loads and
stores of 32-bit words in global memory (``cute_nvgpu.ld_global`` / ``st_global``), and the atomics, reductions,
and loads and stores with memory-model qualifiers (``cute_nvgpu.atom``, ``atom_float_minmax``, ``red``,
``ld_scalar``, ``st_scalar``).

An atomic's address is a pointer value: ``!llvm.ptr<1>`` (``.global``) or ``!llvm.ptr<3>`` (``.shared::cta``; with
a peer CTA's rank, an ``i32``, the same offset in that CTA: ``.shared::cluster``, mapped by
``mapa.shared::cluster`` in the instruction's own block). ``sem`` and ``scope`` are PTX's memory-ordering
qualifiers (None: none). Values travel in the registers of their type; 8-bit integers in 16-bit registers (PTX has
no 8-bit register operand).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mlir_dialects as md

from ...tensor.dtypes import DType, Float32
from ..lang.builder import current
from ..lang.values import wrap
from .operands import ir_type_of

__all__ = ["ENTRIES", "shared_address", "address_bits", "global_element", "ld_global", "st_global", "register_value",
           "atom", "atom_float_extremum", "red", "ld", "st"]


# -- addresses --------------------------------------------------------------------------------------


def shared_address(ptr: Any) -> Any:
    """The ``i32`` shared-memory address of the ``!llvm.ptr<3>`` value ``ptr``."""
    b = current()
    with b.at_end():
        return b.mlir.llvm.PtrToIntOp(b.int_type(32), ptr).result


def address_bits(ptr: Any) -> Any:
    """The ``i64`` address of the pointer value ``ptr``."""
    b = current()
    with b.at_end():
        return b.mlir.llvm.PtrToIntOp(b.int_type(64), ptr).result


def global_element(base: Any, bits: int, index: int | Any) -> Any:
    """The ``!llvm.ptr<1>`` ``index`` accesses of ``bits`` bits past ``base``; ``index`` a static int in the
    32-bit range or an ``i64`` value."""
    b = current()
    llvm = b.mlir.llvm
    step = b.ir.Type.parse(f"!llvm.array<{bits // 32} x i32>")
    with b.at_end():
        if type(index) is int:
            return llvm.GEPOp(base.type, base, [], [index], step, 0).result
        return llvm.GEPOp(base.type, base, [index], [-2147483648], step, 0).result


# -- vector loads and stores of global memory ---------------------------------------------------------


def ld_global(addr: Any, bits: int, cache: str | None) -> list[Any]:
    """``ld.global{.cache}{.vN}.b32`` of ``bits`` bits at ``addr`` (an ``!llvm.ptr<1>``): its ``i32`` words."""
    with current().at_end():
        return list(md.ld_global(addr, bits, cache).words)


def st_global(addr: Any, words: Sequence[Any], cache: str | None) -> None:
    """``st.global{.cache}{.vN}.b32`` of the ``i32`` values ``words`` at ``addr`` (an ``!llvm.ptr<1>``)."""
    with current().at_end():
        md.st_global(addr, list(words), cache)


# -- atomics, reductions, loads and stores with qualifiers ---------------------------------------------


def register_value(value: Any, dtype: DType) -> Any:
    """The MLIR value ``value`` of ``dtype`` as its register operand (an 8-bit integer extended to 16 bits by its
    signedness)."""
    if dtype.width != 8:
        return value
    b = current()
    arith = b.mlir.arith
    with b.at_end():
        op = arith.ExtSIOp if dtype.signed else arith.ExtUIOp
        return op(b.int_type(16), value).result


def _register_type(dtype):
    """The MLIR type of the register holding a ``dtype`` (8-bit values travel in 16 bits)."""
    return current().int_type(16) if dtype.width == 8 else ir_type_of(dtype)


def _from_register(x, dtype):
    if dtype.width != 8:
        return wrap(x, dtype)
    b = current()
    with b.at_end():
        return wrap(b.mlir.arith.TruncIOp(b.int_type(8), x).result, dtype)


def atom(ptr: Any, op: str, ptx_type: str, registers: Sequence[Any], dtype: DType, sem: str | None = None,
         scope: str | None = None, peer: Any = None) -> Any:
    """``atom{.sem}{.scope}.<space>.<op>.<ptx_type> old, [ptr], v...`` of the register values ``registers`` (one,
    or two for ``cas``) of ``dtype`` (``cute_nvgpu.atom``; the space is ``ptr``'s, ``.shared::cluster`` of CTA
    ``peer`` with a rank): ``old``, a traced ``dtype``."""
    with current().at_end():
        old = md.atom(op, ptx_type, ptr, list(registers), sem=sem, scope=scope, peer=peer).res
    return _from_register(old, dtype)


def atom_float_extremum(ptr: Any, largest: bool, sign_bit: bool | None, value: Any, sem: str | None = None,
                        scope: str | None = None, peer: Any = None) -> Any:
    """The Float32 maximum (``largest``) or minimum of the f32 ``value`` and the element at ``ptr`` by integer
    atomics on the bits (``cute_nvgpu.atom_float_minmax``): a negative value is an unsigned minimum (maximum) of the
    bits, a non-negative one a signed maximum (minimum); ``sign_bit`` None tests the sign at run time. The old
    value, a traced Float32."""
    sign = "any" if sign_bit is None else ("negative" if sign_bit else "non_negative")
    with current().at_end():
        old = md.atom_float_minmax("max" if largest else "min", ptr, value, sign=sign, sem=sem, scope=scope,
                                   peer=peer).res
    return wrap(old, Float32)


def red(ptr: Any, op: str, ptx_type: str, operand: Any, sem: str | None = None, scope: str | None = None,
        peer: Any = None) -> None:
    """``red{.sem}{.scope}.<space>.<op>.<ptx_type> [ptr], v`` of the register value ``operand``
    (``cute_nvgpu.red``; ``umin``/``umax`` are ``min``/``max`` on an unsigned ``ptx_type``)."""
    with current().at_end():
        md.red(op.lstrip("u") if op in ("umin", "umax") else op, ptx_type, ptr, operand, sem=sem, scope=scope,
               peer=peer)


def _ldst_type(dtype):
    if dtype.is_float and dtype.width == 16:
        return "b16"
    if dtype.is_float:
        return f"f{dtype.width}"
    return f"{'s' if dtype.signed else 'u'}{dtype.width}"


def ld(ptr: Any, dtype: DType, sem: str | None = None, scope: str | None = None, cop: str | None = None,
       eviction: str | None = None, prefetch: str | None = None, peer: Any = None) -> Any:
    """``ld{.sem.scope}.<space>{.cop}{.eviction}{.prefetch}.<type>`` of one element of ``dtype`` at ``ptr``
    (``cute_nvgpu.ld_scalar``): a traced ``dtype``."""
    with current().at_end():
        value = md.ld_scalar(_ldst_type(dtype), ptr, _register_type(dtype), sem=sem, scope=scope, cop=cop,
                             eviction=eviction, prefetch=prefetch, peer=peer).res
    return _from_register(value, dtype)


def st(ptr: Any, register: Any, dtype: DType, sem: str | None = None, scope: str | None = None,
       cop: str | None = None, eviction: str | None = None, peer: Any = None) -> None:
    """``st{.sem.scope}.<space>{.cop}{.eviction}.<type> [ptr], v`` of the register value ``register`` of ``dtype``
    (``cute_nvgpu.st_scalar``)."""
    with current().at_end():
        md.st_scalar(_ldst_type(dtype), ptr, register, sem=sem, scope=scope, cop=cop, eviction=eviction, peer=peer)


# op class -> (its entry, the dialect ops the entry builds): the memory unit's instructions have no op class
ENTRIES: dict[type, tuple[Any, tuple[str, ...]]] = {}
