"""Blackwell's tensor-core (tcgen05) builtins under TileLang's names, for kernels compiled with
``options="--gpu-arch sm_100a"``: the mbarrier arrival that tracks a thread's tcgen05 operations, and the 64-bit
shared-memory matrix descriptor those operations read.

No Blackwell GPU runs them here: their PTX is built and assembled by nvJitLink for sm_100a; the descriptor's
arithmetic (integer only) also runs on Hopper, where it is checked bit by bit.

Descriptor bits (PTX ISA, "tcgen05 shared memory descriptor"): 0-13 start address >> 4 (of its low 18 bits),
16-29 leading-dimension byte offset >> 4, 32-45 stride-dimension byte offset >> 4, 46-48 the constant 0b001,
49-51 base offset, 52 leading-dimension mode (1: absolute address), 61-63 swizzle (0 none, 1 128B with 32B
atoms, 2 128B, 4 64B, 6 32B).
"""

from __future__ import annotations

from typing import Any

from ...errors import TraceError
from ...tensor.pointer import AddressSpace, Pointer
from ..lang.builder import current
from ..lang.memory import pointer_value
from ..lang.traced_int import TracedInt
from ..emit import tcgen05
from ..emit.memory import shared_address
from ..emit.operands import int_operand, join_words

__all__ = ["tcgen05_mma_arrive", "initialize_tcgen05_descriptor", "SWIZZLE_MODES", "TCGEN05_ARCH"]

TCGEN05_ARCH = "sm_100a"
SWIZZLE_MODES = {0: "none", 1: "128B with 32B atoms", 2: "128B", 4: "64B", 6: "32B"}
_FIELD = 1 << 18  # addresses and byte offsets: 14 bits after dropping the low 4


def _need_blackwell(name):
    arch = current().arch
    if arch != TCGEN05_ARCH:
        raise TraceError(f"{name} is a tcgen05 (Blackwell) instruction: compile with options=\"--gpu-arch "
                         f"{TCGEN05_ARCH}\" (this compile targets {arch})")


def _shared_address(value, name, what):
    """The 32-bit shared-memory address of a shared pointer, or a byte address given as an int / traced int."""
    if isinstance(value, Pointer):
        if value.memspace is not AddressSpace.smem:
            raise TraceError(f"{name}: {what} must point to shared memory, got {value!r}")
        p = pointer_value(value, f"{name}: {what}")
        return TracedInt(shared_address(p), 32, True)
    if isinstance(value, TracedInt) or type(value) is int:
        return value
    raise TraceError(f"{name}: {what} must be a shared-memory pointer or a byte address, got {value!r}")


def tcgen05_mma_arrive(mbar: Any) -> None:
    """``tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [mbar]``: the mbarrier ``mbar`` (a
    shared-memory pointer or its address) gets one arrival once every tcgen05 operation this thread issued
    before has completed. sm_100a only."""
    name = "tcgen05_mma_arrive"
    _need_blackwell(name)
    addr = _shared_address(mbar, name, "mbar")
    if type(addr) is int and (addr % 8 or not 0 <= addr < 1 << 32):
        raise TraceError(f"{name}: an mbarrier address is 8-byte aligned shared memory, got {addr:#x}")
    op = int_operand(addr, f"{name}: mbar", 32)
    tcgen05.commit_arrive(op)


def _offset_field(value, name, what):
    """``value >> 4`` within 14 bits: a static value is checked (a multiple of 16 below 2^18)."""
    if type(value) is int:
        if value % 16 or not 0 <= value < _FIELD:
            raise TraceError(f"{name}: {what} must be a multiple of 16 in 0..{_FIELD - 16} (bytes), got {value}")
        return value >> 4
    if isinstance(value, TracedInt):
        return (value >> 4) & 0x3FFF
    raise TraceError(f"{name}: {what} must be an int or a traced integer, got {value!r}")


def initialize_tcgen05_descriptor(descriptor: Any, start_address: Any, leading_byte_offset: Any,
                                  stride_byte_offset: Any, base_offset: int = 0, leading_is_absolute: bool = False,
                                  swizzle_mode: int = 0) -> Any:
    """The 64-bit tcgen05 shared-memory matrix descriptor (bits in the module's documentation), stored in
    ``descriptor`` (a tensor: its element 0) unless it is ``None``, and returned: a Python int when every input
    is static, else a traced Uint64.

    ``start_address``: a shared-memory pointer or byte address (static ones: a multiple of 16); the byte offsets
    are multiples of 16 below 2^18; ``base_offset`` 0..7; ``swizzle_mode`` one of 0, 1, 2, 4, 6.
    """
    name = "initialize_tcgen05_descriptor"
    if type(base_offset) is not int or not 0 <= base_offset <= 7:
        raise TraceError(f"{name}: base_offset must be an int in 0..7, got {base_offset!r}")
    if type(leading_is_absolute) is not bool:
        raise TraceError(f"{name}: leading_is_absolute must be True or False, got {leading_is_absolute!r}")
    if type(swizzle_mode) is not int or swizzle_mode not in SWIZZLE_MODES:
        modes = ", ".join(f"{k} ({v})" for k, v in SWIZZLE_MODES.items())
        raise TraceError(f"{name}: swizzle_mode must be one of {modes}, got {swizzle_mode!r}")
    addr = _shared_address(start_address, name, "start_address")
    start = _offset_field(addr & (_FIELD - 1), name, "start_address (its low 18 bits)")
    lbo = _offset_field(leading_byte_offset, name, "leading_byte_offset")
    sbo = _offset_field(stride_byte_offset, name, "stride_byte_offset")
    high_fixed = (1 << 14) | (base_offset << 17) | (int(leading_is_absolute) << 20) | (swizzle_mode << 29)
    value = join_words(start | (lbo << 16), sbo, name, high_fixed)
    if descriptor is not None:
        descriptor[0] = value
    return value

