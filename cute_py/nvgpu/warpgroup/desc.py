"""The WGMMA shared-memory matrix descriptor: its 64-bit encoding, and its derivation from a canonical GMMA
shared-memory layout (CuTe C++'s ``make_gmma_desc``).

**Bits** (PTX ISA, "Matrix Descriptor Format" of ``wgmma``): 0-13 the start address >> 4 (of its low 18
bits), 16-29 the leading-dimension byte offset (LBO) >> 4, 32-45 the stride-dimension byte offset (SBO) >> 4,
49-51 the base offset, 62-63 the layout type (``LayoutType``: 0 interleave / no swizzle, 1 128B swizzle, 2 64B,
3 32B). The other bits are 0.

**Canonical layouts.** One MMA's operand tile is ``(MN, K)`` (``K`` = 16 elements for 16-bit types). With
``T = 128 / bits`` elements per 16-byte unit and ``W`` = 1, 2, 4, 8 units per swizzle row (interleave, 32B,
64B, 128B), the element offset (before the swizzle) of ``(mn, k)`` must be, for

- K-major: ``(mn%8)*W*T + (mn//8)*S + k%T + (k//T)*(L if interleave else T)``; then SBO = ``S``, LBO = ``L``
  (interleave) or 16 bytes (swizzled: unused, CuTe's 1);
- MN-major, swizzled: ``mn%(W*T) + (mn//(W*T))*L + (k%8)*W*T + (k//8)*S``; LBO = ``L``, SBO = ``S``;
- MN-major, interleave: ``mn%T + (mn//T)*S + (k%8)*T + (k//8)*L``; LBO = ``L``, SBO = ``S``;

(``L``, ``S`` in elements; the fields hold them in bytes >> 4). A stride along a mode of a single block is
unused and encoded as 0. The swizzle is the byte swizzle of the tile's layout (``S<b,4,3>``: b = 0..3), the
start address the tile's first byte; a swizzled tile starts where its swizzle pattern repeats (its base
offset is 0). Any other layout is a :class:`GmmaLayoutError` naming the rule and the first coordinate that
breaks it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Any

from ...core.composed import ComposedLayout, SmemPtrFlag, smem_byte_swizzle
from ...core.layout import Layout
from ...core.leaves import DynamicInt
from ...errors import CuteTypeError, CuteValueError
from ...tensor.pointer import AddressSpace, Pointer
from .operands import OperandMajorMode
from .smem import element_bits

__all__ = ["LayoutType", "GmmaDescriptor", "GmmaLayoutError", "encode_gmma_desc", "make_gmma_desc"]

_FIELD = 1 << 18  # start address, LBO, SBO: 14 bits after dropping the low 4


class LayoutType(enum.IntEnum):
    """The descriptor's layout type (bits 62-63): the operand tile's swizzle."""

    INTERLEAVE = 0
    B128 = 1
    B64 = 2
    B32 = 3

    @property
    def units_per_row(self) -> int:
        """``W``: 16-byte units per swizzle row (1 for interleave)."""
        return {0: 1, 1: 8, 2: 4, 3: 2}[int(self)]


_FROM_SWIZZLE_BITS = {0: LayoutType.INTERLEAVE, 1: LayoutType.B32, 2: LayoutType.B64, 3: LayoutType.B128}


class GmmaLayoutError(CuteValueError):
    """A shared-memory layout that no WGMMA descriptor describes (or a field out of its range)."""


def _field(value, what):
    if type(value) is not int or value % 16 or not 0 <= value < _FIELD:
        raise GmmaLayoutError(f"a WGMMA descriptor's {what} must be a multiple of 16 in 0..{_FIELD - 16} bytes, "
                              f"got {value!r}")
    return value >> 4


def encode_gmma_desc(start_address: int, leading_byte_offset: int, stride_byte_offset: int,
                     layout_type: LayoutType | int, base_offset: int = 0) -> int:
    """The 64-bit descriptor of the module's bit table (byte values; ``start_address`` its low 18 bits)."""
    if type(start_address) is not int or start_address < 0:
        raise GmmaLayoutError(f"a WGMMA descriptor's start address is a non-negative int, got {start_address!r}")
    start = _field(start_address % _FIELD, "start address (its low 18 bits)")
    lbo, sbo = _field(leading_byte_offset, "leading byte offset"), _field(stride_byte_offset, "stride byte offset")
    if type(base_offset) is not int or not 0 <= base_offset <= 7:
        raise GmmaLayoutError(f"a WGMMA descriptor's base offset is an int in 0..7, got {base_offset!r}")
    lt = LayoutType(layout_type)
    return start | lbo << 16 | sbo << 32 | base_offset << 49 | int(lt) << 62


@dataclasses.dataclass(frozen=True)
class GmmaDescriptor:
    """A WGMMA shared-memory descriptor: the byte fields, and the start as a static byte address (``int``) or a
    shared-memory pointer (its address known at run time; :attr:`value` then needs a kernel's compiler)."""

    start: Any
    leading_byte_offset: int
    stride_byte_offset: int
    layout_type: LayoutType
    base_offset: int = 0
    start_offset: Any = 0
    """16-byte units added to the start address (CuTe C++'s ``DescriptorIterator`` offset): an int, or in a
    kernel a run-time integer or a pair ``(run-time, int)`` added in that order. A descriptor tensor's slices
    share their first tile's start and differ here; the kernel adds the static units last, so that the
    descriptors of one stage's k-blocks are one register plus constants."""

    def __post_init__(self) -> None:
        off = self.start_offset
        run_time, static = off if type(off) is tuple and len(off) == 2 else (None, off)
        if not (type(off) is int or isinstance(off, DynamicInt)
                or (type(off) is tuple and isinstance(run_time, DynamicInt) and type(static) is int)):
            raise CuteTypeError(f"a descriptor's start_offset is an int, a run-time integer or a pair (run-time "
                                f"integer, int) of 16-byte units, got {off!r}")

    @property
    def value(self) -> int:
        """The 64-bit descriptor (a static start address and offset only)."""
        if type(self.start) is not int or type(self.start_offset) is not int:
            raise CuteTypeError(f"the descriptor's start is the run-time address {self.start!r} + "
                                f"{self.start_offset!r} x 16 B: its 64-bit value is built in the kernel (the MMA "
                                f"takes the descriptor as it is)")
        return encode_gmma_desc(self.start + 16 * self.start_offset, self.leading_byte_offset,
                                self.stride_byte_offset, self.layout_type, self.base_offset)

    @property
    def high_word(self) -> int:
        """Bits 32-63, which do not depend on the start address."""
        return encode_gmma_desc(0, self.leading_byte_offset, self.stride_byte_offset, self.layout_type,
                                self.base_offset) >> 32

    @property
    def low_fixed(self) -> int:
        """Bits 0-31 without the start address (the LBO field)."""
        return (self.leading_byte_offset >> 4) << 16


def _flat(mode):
    return mode if type(mode) is int else None


def _size(mode):
    if type(mode) is int:
        return mode
    out = 1
    for m in mode:
        out *= _size(m)
    return out


def _outer_and_swizzle(layout, bits):
    sw = smem_byte_swizzle(layout, bits)
    if sw.bits not in _FROM_SWIZZLE_BITS or (sw.bits and (sw.base, sw.shift) != (4, 3)):
        raise GmmaLayoutError(f"a WGMMA operand's byte swizzle is S<0..3,4,3>, got {sw}")
    off = 0
    if type(layout) is ComposedLayout:
        off = layout.offset.offset if type(layout.offset) is SmemPtrFlag else layout.offset
        layout = layout.outer
    if type(layout) is not Layout:
        raise CuteTypeError(f"make_gmma_desc needs a layout or a swizzled composed layout, got {layout!r}")
    return layout, _FROM_SWIZZLE_BITS[sw.bits], off


def _expected(major, lt, t, lbo, sbo):
    w = lt.units_per_row
    if major is OperandMajorMode.K:
        kl = lbo if lt is LayoutType.INTERLEAVE else t
        return lambda mn, k: (mn % 8) * w * t + (mn // 8) * sbo + k % t + (k // t) * kl
    if lt is LayoutType.INTERLEAVE:
        return lambda mn, k: mn % t + (mn // t) * sbo + (k % 8) * t + (k // 8) * lbo
    return lambda mn, k: mn % (w * t) + (mn // (w * t)) * lbo + (k % 8) * w * t + (k // 8) * sbo


@functools.lru_cache(maxsize=1024)
def _first_off_canonical(outer, major, lt, t, lbo, sbo, mn, k):
    """``((i, j), offset, canonical offset)`` of the first element of the ``(mn, k)`` tile ``outer`` (a Layout,
    immutable and hashable) off the canonical layout, or ``None``: every element checked, once per distinct tile
    (a kernel asks for the same few tiles' descriptors once per MMA)."""
    want = _expected(major, lt, t, lbo, sbo)
    for j in range(k):
        for i in range(mn):
            got = outer((i, j))
            if got != want(i, j):
                return (i, j), got, want(i, j)
    return None


def make_gmma_desc(src: Any, major: OperandMajorMode, element_type: Any = None, start: Any = None) -> GmmaDescriptor:
    """The descriptor of one MMA's ``(MN, K)`` operand tile ``src``: a shared-memory tensor, or a layout (then
    ``element_type`` is needed, and ``start`` is its byte address, default 0). Fields as the module derives them;
    ``GmmaLayoutError`` for a layout that is not canonical.

    ``make_gmma_desc(tile_to_shape(K_SW128 atom (fp16), (64, 16)), OperandMajorMode.K, Float16)`` has LBO 16,
    SBO 1024 and layout type ``B128``.
    """
    if not isinstance(major, OperandMajorMode):
        raise CuteTypeError(f"make_gmma_desc: major must be an OperandMajorMode, got {major!r}")
    layout = src
    if hasattr(src, "layout") and hasattr(src, "iterator"):  # a tensor
        ptr = src.iterator
        if not isinstance(ptr, Pointer) or ptr.memspace is not AddressSpace.smem:
            raise GmmaLayoutError(f"make_gmma_desc needs a shared-memory tensor, got one over {ptr!r}")
        layout, element_type = src.layout, ptr.dtype
        if start is None:
            start = ptr  # its address is the kernel's to compute
    if element_type is None:
        raise CuteTypeError("make_gmma_desc of a layout needs its element_type")
    bits = element_bits(element_type)
    if 128 % bits:
        raise GmmaLayoutError(f"a WGMMA operand's elements are 4 to 128 bits wide, got {bits}")
    t = 128 // bits
    outer, lt, offset = _outer_and_swizzle(layout, bits)  # offset: elements before the tile's first
    if len(outer.shape) != 2 if isinstance(outer.shape, tuple) else True:
        raise GmmaLayoutError(f"a WGMMA operand tile is rank 2 (MN, K), got {outer}")
    mn, k = _size(outer.shape[0]), _size(outer.shape[1])
    if type(mn) is not int or type(k) is not int:
        raise GmmaLayoutError(f"a WGMMA operand tile has a static shape, got {outer}")
    w = lt.units_per_row
    if major is OperandMajorMode.K:
        if k != 2 * t or mn % 8:
            raise GmmaLayoutError(f"a K-major WGMMA operand tile of {bits}-bit elements is (8*m, {2 * t}), got "
                                  f"({mn}, {k})")
        sbo = outer((8, 0)) if mn > 8 else 0
        # swizzled: one 16-byte unit, unused by the hardware (CuTe's 1)
        lbo = outer((0, t)) if lt is LayoutType.INTERLEAVE else t
    else:
        block = t if lt is LayoutType.INTERLEAVE else w * t
        if k != 256 // bits or mn % block:
            raise GmmaLayoutError(f"an MN-major WGMMA operand tile of {bits}-bit elements with layout type "
                                  f"{lt.name} is ({block}*m, {256 // bits}), got ({mn}, {k})")
        far = outer((block, 0)) if mn > block else 0
        kk = outer((0, 8)) if k > 8 else 0
        lbo, sbo = (kk, far) if lt is LayoutType.INTERLEAVE else (far, kk)
    try:
        wrong = _first_off_canonical(outer, major, lt, t, lbo, sbo, mn, k)
    except TypeError:  # a layout with an unhashable (traced) part: checked uncached
        wrong = _first_off_canonical.__wrapped__(outer, major, lt, t, lbo, sbo, mn, k)
    if wrong is not None:
        (i, j), got, want = wrong
        raise GmmaLayoutError(
            f"{layout} is not a canonical {major.name}-major WGMMA layout ({lt.name}): element ({i}, {j}) is "
            f"at offset {got}, the canonical layout with LBO {lbo * bits // 8} B and SBO {sbo * bits // 8} B "
            f"puts it at {want}")
    lbo_b, sbo_b = lbo * bits // 8, sbo * bits // 8
    for name, v in (("leading byte offset", lbo_b), ("stride byte offset", sbo_b)):
        _field(v, name)
    repeat = 128 * lt.units_per_row if lt is not LayoutType.INTERLEAVE else 16  # bytes of a swizzle pattern
    if start is None:
        start = 0
    if type(start) is int:
        if start % repeat:
            raise GmmaLayoutError(f"a {lt.name} WGMMA operand's swizzle pattern starts at a multiple of {repeat} "
                                  f"bytes (base offset 0), got the start address {start}")
        if type(offset) is not int:
            raise GmmaLayoutError(f"a WGMMA operand at a static start address has a static offset, got {layout}")
        start += offset * bits // 8
        _field(start % _FIELD, "start address (its low 18 bits)")
    elif isinstance(start, Pointer) and start.memspace is AddressSpace.smem:
        if start.alignment < repeat:
            raise GmmaLayoutError(f"a {lt.name} WGMMA operand's swizzle pattern starts at a multiple of {repeat} "
                                  f"bytes (base offset 0), but the tile's pointer {start!r} is only "
                                  f"{start.alignment}-byte aligned")
        start = start + offset
    else:
        raise CuteTypeError(f"make_gmma_desc: start is a byte address or a shared-memory pointer, got {start!r}")
    return GmmaDescriptor(start, lbo_b, sbo_b, lt, 0)
