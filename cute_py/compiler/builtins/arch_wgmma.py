"""Hopper's warpgroup MMA builtins under TileLang's names (``tilelang.language.builtin``):

- ``warpgroup_arrive()``: ``wgmma.fence.sync.aligned`` (``cute_py.nvgpu.warpgroup.fence``);
- ``warpgroup_commit_batch()``: ``wgmma.commit_group.sync.aligned``;
- ``warpgroup_wait(num_mma)`` and ``wait_wgmma(id)``: ``wgmma.wait_group.sync.aligned n`` (n static, 0..7);
- ``warpgroup_fence_operand(fragment, offset=0, num_regs=None, dtype=None)``: an empty ``asm volatile`` that
  reads and rewrites each 32-bit register of an accumulator fragment, so that no use of it moves across the
  MMAs around it;
- ``initialize_wgmma_descriptor(descriptor, start_address, layout_type_=0, leading_byte_offset=0,
  stride_byte_offset=0)``: the 64-bit shared-memory matrix descriptor (bits in
  :mod:`cute_py.nvgpu.warpgroup.desc`). As in TileLang, ``leading_byte_offset`` and
  ``stride_byte_offset`` are the descriptor's fields, in units of 16 bytes (0..16383); ``layout_type_`` 0
  (none), 1 (128B swizzle), 2 (64B), 3 (32B); the start address a shared-memory pointer or byte address;
- ``increase_descriptor_offset(descriptor, offset)``: add ``offset`` bytes (>> 4) to the start-address word.

A ``descriptor`` argument is a tensor whose element 0 receives / holds the 64-bit value, or ``None`` (the value
is only returned). Errors name the rule and the value (``TraceError``).
"""

from __future__ import annotations

from typing import Any

from ...errors import TraceError
from ...nvgpu import warpgroup as _wg
from ...tensor.dtypes import Uint64
from ...tensor.pointer import Pointer
from ..lang.builder import current
from ..lang.memory import pack, unpack
from ..lang.values import wrap
from ..lang.traced_int import TracedInt
from ..emit.operands import int_operand, join_words, static_int
from ..emit.warpgroup import add_to_low_word, fence_register, smem_address

__all__ = ["warpgroup_arrive", "warpgroup_commit_batch", "warpgroup_wait", "wait_wgmma", "warpgroup_fence_operand",
           "initialize_wgmma_descriptor", "increase_descriptor_offset"]


def warpgroup_arrive() -> None:
    """``wgmma.fence.sync.aligned``: make this warpgroup's register and shared-memory writes visible to its next
    ``wgmma.mma_async``."""
    _wg.fence()


def warpgroup_commit_batch() -> None:
    """``wgmma.commit_group.sync.aligned``: close the batch of MMAs issued so far."""
    _wg.commit_group()


def _count(n, name):
    n = static_int(n, f"{name}: the number of pending batches", "wgmma.wait_group takes an immediate")
    if not 0 <= n <= 7:
        raise TraceError(f"{name}: the number of pending batches must be in 0..7, got {n}")
    return n


def warpgroup_wait(num_mma: int) -> None:
    """``wgmma.wait_group.sync.aligned num_mma``: wait until at most ``num_mma`` batches are pending."""
    _wg.wait_group(_count(num_mma, "warpgroup_wait"))


def wait_wgmma(id: int) -> None:  # noqa: A002 (TileLang's parameter name)
    """``wgmma.wait_group.sync.aligned id`` (TileLang's other name of :func:`warpgroup_wait`)."""
    _wg.wait_group(_count(id, "wait_wgmma"))


def warpgroup_fence_operand(buffer_or_ptr: Any, offset: int = 0, num_regs: int | None = None,
                            dtype: Any = None) -> None:
    """Fence ``num_regs`` 32-bit registers (default: all) of the register fragment ``buffer_or_ptr`` from
    element ``offset`` on: each passes through an empty volatile ``asm`` (``"+f"``/``"+r"``), so the compiler
    keeps every use of it on its side of the MMAs. 16-bit fragments are fenced two elements a register."""
    name = "warpgroup_fence_operand"
    t = buffer_or_ptr
    if isinstance(t, Pointer) or not hasattr(t, "engine") or type(t.engine).__name__ != "RegisterEngine":
        raise TraceError(f"{name}: fences a register fragment (make_fragment), got {t!r}")
    elem = t.element_type
    if dtype is not None and getattr(dtype, "name", dtype) != elem.name:
        raise TraceError(f"{name}: dtype {dtype!r} differs from the fragment's {elem.name}")
    if elem.width not in (16, 32):
        raise TraceError(f"{name}: fragments of 16- or 32-bit elements are fenced, got {elem.name}")
    per = 32 // elem.width
    from ...core.int_tuple import size

    total = size(t.layout.shape)
    offset = static_int(offset, f"{name}: offset", "a fragment is indexed statically")
    regs = (total - offset) // per if num_regs is None else static_int(num_regs, f"{name}: num_regs", "static")
    if offset < 0 or regs < 0 or offset + regs * per > total:
        raise TraceError(f"{name}: registers {offset}..{offset + regs * per} (elements) lie outside the "
                         f"fragment's {total} elements")
    with current().at_end():  # one place and line for the fences' ops
        for r in range(regs):
            first = offset + r * per
            vals = [t[first + j] for j in range(per)]
            v = fence_register(pack(vals, elem, 32))
            for j, x in enumerate(unpack(v, elem, per)):
                t[first + j] = x


_FIELD14 = 1 << 14


def _field(value, name, what):
    if type(value) is int:
        if not 0 <= value < _FIELD14:
            raise TraceError(f"{name}: {what} is a 14-bit field in units of 16 bytes (0..16383), got {value}")
        return value
    if isinstance(value, TracedInt):
        return value & 0x3FFF
    raise TraceError(f"{name}: {what} must be an int or a traced integer, got {value!r}")


def _store(descriptor, value):
    if descriptor is not None:
        descriptor[0] = value
    return value


def initialize_wgmma_descriptor(descriptor: Any, start_address: Any, layout_type_: int = 0,
                                leading_byte_offset: Any = 0, stride_byte_offset: Any = 0) -> Any:
    """The WGMMA shared-memory descriptor (see the module; fields in 16-byte units), stored in ``descriptor``'s
    element 0 unless it is ``None``, and returned (an int when every input is static, else a traced Uint64)."""
    name = "initialize_wgmma_descriptor"
    if type(layout_type_) is not int or layout_type_ not in (0, 1, 2, 3):
        raise TraceError(f"{name}: layout_type_ must be 0 (none), 1 (128B), 2 (64B) or 3 (32B), got "
                         f"{layout_type_!r}")
    if isinstance(start_address, Pointer):
        start_address = smem_address(start_address, f"{name}: start_address")
    if type(start_address) is int:
        if start_address % 16 or not 0 <= start_address < 1 << 32:
            raise TraceError(f"{name}: start_address must be a 16-byte aligned shared-memory address, got "
                             f"{start_address:#x}")
        start = (start_address >> 4) & 0x3FFF
    elif isinstance(start_address, TracedInt):
        start = (start_address >> 4) & 0x3FFF
    else:
        raise TraceError(f"{name}: start_address must be a shared-memory pointer or a byte address, got "
                         f"{start_address!r}")
    lbo = _field(leading_byte_offset, name, "leading_byte_offset")
    sbo = _field(stride_byte_offset, name, "stride_byte_offset")
    return _store(descriptor, join_words(start | (lbo << 16), sbo, name, layout_type_ << 30))


def increase_descriptor_offset(descriptor: Any, offset: Any) -> Any:
    """``descriptor`` with ``offset`` bytes (a multiple of 16) added to its start address: its low 32-bit word
    plus ``offset >> 4``. ``descriptor`` is a tensor (element 0 is read and rewritten) or a value (an int or a
    traced 64-bit integer); the new value is returned."""
    name = "increase_descriptor_offset"
    holder = descriptor if hasattr(descriptor, "layout") else None
    value = descriptor[0] if holder is not None else descriptor
    if type(offset) is int and offset % 16:
        raise TraceError(f"{name}: offset is in bytes, a multiple of 16, got {offset}")
    step = offset >> 4
    if type(value) is int and type(step) is int:
        lo = ((value & 0xFFFFFFFF) + step) & 0xFFFFFFFF
        return _store(holder, (value & ~0xFFFFFFFF) | lo)
    if not isinstance(value, TracedInt) or value.width != 64:
        if type(value) is not int:
            raise TraceError(f"{name}: the descriptor is a 64-bit value, got {value!r}")
    v = int_operand(value if type(value) is not int or value < 1 << 63 else value - (1 << 64), f"{name}: descriptor",
                    64)
    s = int_operand(step, f"{name}: offset", 32)
    return _store(holder, wrap(add_to_low_word(v, s), Uint64))
