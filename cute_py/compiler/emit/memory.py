"""The emission of the memory unit's instructions that are not copy ops: addresses as integers, vector loads and
stores of 32-bit words in global memory (``cute_nvgpu.ld_global`` / ``st_global``), and the atomics, reductions,
and loads and stores with memory-model qualifiers (``atom``, ``red``, ``ld``, ``st``) as inline PTX.

An atomic's address is a :class:`MemoryAddress`: its state space (``global``, ``shared::cta``,
``shared::cluster``), its operands (a 64-bit global address; a 32-bit shared-memory address, with the peer CTA's
rank for ``shared::cluster``, mapped by ``mapa.shared::cluster`` in the instruction's own block). Values travel in
the registers of their type; 8-bit integers in 16-bit registers (PTX has no 8-bit register operand).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mlir_dialects as md

from ...tensor.dtypes import DType, Float32, Int32
from ..lang.builder import current
from ..lang.values import wrap
from .ptx import asm, ir_type_of

__all__ = ["ENTRIES", "MemoryAddress", "shared_address", "address_bits", "global_element", "ld_global", "st_global",
           "global_address", "cta_address", "cluster_address", "register_value", "atom", "atom_float_extremum", "red",
           "ld", "st"]


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


class MemoryAddress:
    """The address operand of a memory instruction: its state space, the MLIR values and constraint letters of its
    operands, the PTX that forms the address (``prologue``) and the address text (``{a0}``, ``{a1}`` name the
    operands)."""

    __slots__ = ("space", "operands", "constraints", "prologue", "text")

    def __init__(self, space: str, operands: list[Any], constraints: list[str], prologue: str, text: str) -> None:
        self.space, self.operands, self.constraints = space, operands, constraints
        self.prologue, self.text = prologue, text


def global_address(ptr: Any) -> MemoryAddress:
    """The address of a global-memory pointer value (``.global``)."""
    return MemoryAddress("global", [ptr], ["l"], "", "[{a0}]")


def cta_address(addr: Any) -> MemoryAddress:
    """The address of this CTA's shared memory at the ``i32`` address ``addr`` (``.shared::cta``)."""
    return MemoryAddress("shared::cta", [addr], ["r"], "", "[{a0}]")


def cluster_address(addr: Any, rank: Any) -> MemoryAddress:
    """The address ``addr`` (an ``i32``) of this CTA's shared memory in CTA ``rank`` (an ``i32``) of the cluster
    (``.shared::cluster``, mapped with ``mapa``)."""
    return MemoryAddress("shared::cluster", [addr, rank], ["r", "r"],
                         ".reg .b32 %ra;\n\tmapa.shared::cluster.u32 %ra, {a0}, {a1};", "[%ra]")


def _reg(dtype):
    """The inline-asm constraint letter of a register holding a ``dtype`` (8-bit values travel in 16 bits)."""
    if dtype.is_float:
        return {16: "h", 32: "f", 64: "d"}[dtype.width]
    return {8: "h", 16: "h", 32: "r", 64: "l"}[dtype.width]


def _reg_type(dtype):
    b = current()
    if dtype.width == 8:
        return b.int_type(16)
    return ir_type_of(dtype)


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


def _from_reg(x, dtype):
    if dtype.width != 8:
        return wrap(x, dtype)
    b = current()
    with b.at_end():
        return wrap(b.mlir.arith.TruncIOp(b.int_type(8), x).result, dtype)


def _instruction(ptx, address, values, value_cons, out):
    """Emit ``ptx`` (with ``{space}``, ``{addr}``, ``{v0}``... placeholders) on ``address``; its result as
    ``out``."""
    addr_ops, addr_cons = address.operands, address.constraints
    first = 1 if out is not None else 0
    names = {f"a{i}": f"${first + i}" for i in range(len(addr_ops))}
    names.update({f"v{i}": f"${first + len(addr_ops) + i}" for i in range(len(values))})
    body = ptx.format(space=address.space, addr=address.text.format(**names), **names)
    prologue = address.prologue
    text = f"{{\n\t{prologue.format(**names)}\n\t{body}\n\t}}" if prologue else body
    cons = ([f"={_reg(out)}"] if out is not None else []) + addr_cons + value_cons + ["~{memory}"]
    res = asm(text, ",".join(cons), addr_ops + values, [_reg_type(out)] if out is not None else [])
    return _from_reg(res[0], out) if out is not None else None


def atom(address: MemoryAddress, qualifiers: str, op: str, ptx_type: str, registers: Sequence[Any],
         dtype: DType) -> Any:
    """``atom{qualifiers}.<space>.<op>.<ptx_type> old, [address], v...`` of the register values ``registers``
    (one, or two for ``cas``) of ``dtype``: ``old``, a traced ``dtype``."""
    operands = ", ".join(f"{{v{i}}}" for i in range(len(registers)))
    return _instruction(f"atom{qualifiers}.{{space}}.{op}.{ptx_type} $0, {{addr}}, {operands};", address,
                        list(registers), [_reg(dtype)] * len(registers), dtype)


def atom_float_extremum(address: MemoryAddress, qualifiers: str, largest: bool, sign_bit: bool | None,
                        bits: Any) -> Any:
    """The Float32 maximum (``largest``) or minimum by integer atomics on the ``i32`` ``bits`` of the value: a
    negative value is an unsigned minimum (maximum) of the bits, a non-negative one a signed maximum (minimum);
    ``sign_bit`` None tests the sign at run time. The old value, a traced Float32."""
    neg, pos = ("min.u32", "max.s32") if largest else ("max.u32", "min.s32")
    if sign_bit is None:
        ptx = (f"{{{{\n\t.reg .pred %neg;\n\tsetp.lt.s32 %neg, {{v0}}, 0;\n\t"
               f"@%neg atom{qualifiers}.{{space}}.{neg} $0, {{addr}}, {{v0}};\n\t"
               f"@!%neg atom{qualifiers}.{{space}}.{pos} $0, {{addr}}, {{v0}};\n\t}}}}")
    else:
        ptx = f"atom{qualifiers}.{{space}}.{neg if sign_bit else pos} $0, {{addr}}, {{v0}};"
    old = _instruction(ptx, address, [bits], ["r"], Int32)
    b = current()
    with b.at_end():
        return wrap(b.mlir.arith.BitcastOp(ir_type_of(Float32), old.ir).result, Float32)


def red(address: MemoryAddress, qualifiers: str, op: str, ptx_type: str, operand: Any, operand_type: DType) -> None:
    """``red{qualifiers}.<space>.<op>.<ptx_type> [address], v`` of the register value ``operand`` of
    ``operand_type`` (``umin``/``umax`` are ``min``/``max`` on an unsigned ``ptx_type``)."""
    ptx_op = op.lstrip("u") if op in ("umin", "umax") else op
    _instruction(f"red{qualifiers}.{{space}}.{ptx_op}.{ptx_type} {{addr}}, {{v0}};", address, [operand],
                 [_reg(operand_type)], None)


def _ldst_type(dtype):
    if dtype.is_float and dtype.width == 16:
        return "b16"
    if dtype.is_float:
        return f"f{dtype.width}"
    return f"{'s' if dtype.signed else 'u'}{dtype.width}"


def ld(address: MemoryAddress, qualifiers: str, cache: str, dtype: DType) -> Any:
    """``ld{qualifiers}.<space>{cache}.<type>`` of one element of ``dtype`` at ``address``: a traced ``dtype``."""
    return _instruction(f"ld{qualifiers}.{{space}}{cache}.{_ldst_type(dtype)} $0, {{addr}};", address, [], [], dtype)


def st(address: MemoryAddress, qualifiers: str, cache: str, register: Any, dtype: DType) -> None:
    """``st{qualifiers}.<space>{cache}.<type> [address], v`` of the register value ``register`` of ``dtype``."""
    _instruction(f"st{qualifiers}.{{space}}{cache}.{_ldst_type(dtype)} {{addr}}, {{v0}};", address, [register],
                 [_reg(dtype)], None)


# op class -> (its entry, the dialect ops the entry builds): the memory unit's instructions have no op class
ENTRIES: dict[type, tuple[Any, tuple[str, ...]]] = {}
