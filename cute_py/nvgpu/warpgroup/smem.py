"""Shared-memory layout atoms for TMA and GMMA: the 32B/64B/128B swizzle atoms and the interleave atom.

Each atom swizzles byte addresses, as the hardware does, and says so with a byte-swizzle marker in
its offset slot (CuTe's ``smem_ptr_flag``): a K-major 128B atom is
``S<3,4,3> o smem_ptr[16b](unset) o (8,64):(64,1)`` for 16-bit elements and
``S<3,4,3> o smem_ptr[32b](unset) o (8,32):(32,1)`` for 32-bit ones -- the swizzle stays
``S<3,4,3>``, the outer layout counts elements (CuTe's ``GMMA::Layout_K_SW128_Atom<T>`` family; the
interleave atoms carry the identity ``S<0,4,3>``). K-major atoms have the contiguous dimension
second (rows of 16/32/64/128 bytes), MN-major atoms first. Tile an atom to a whole shared-memory
tile with ``tile_to_shape``; at a shared-memory pointer (``make_tensor``), or through
``as_position_independent_swizzle_layout``, it becomes a function of element offsets
(``S<3,3,3> o 0 o (8,64):(64,1)`` for 16-bit elements).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from ...core.composed import ComposedLayout, SmemPtrFlag
from ...errors import CuteTypeError, CuteValueError
from ...core.normalise import index_or_none
from ...core.layout import Layout
from ...core.recast import recast_layout
from ...core.swizzle import Swizzle

if TYPE_CHECKING:
    from ...tensor.dtypes import DType

__all__ = ["SmemLayoutAtomKind", "make_smem_layout_atom", "element_bits"]


class SmemLayoutAtomKind(enum.Enum):
    """The eight shared-memory atoms: majorness (MN or K) x swizzle (none, 32B, 64B, 128B)."""

    MN_INTER = ("MN", 0)
    MN_SW32 = ("MN", 1)
    MN_SW64 = ("MN", 2)
    MN_SW128 = ("MN", 3)
    K_INTER = ("K", 0)
    K_SW32 = ("K", 1)
    K_SW64 = ("K", 2)
    K_SW128 = ("K", 3)

    @property
    def swizzle_bytes(self) -> int:
        """The swizzle span in bytes (16 for the interleave atom)."""
        return 16 << self.value[1]

    @property
    def major(self) -> str:
        """``"MN"`` or ``"K"``: which dimension is contiguous."""
        return self.value[0]


def element_bits(element_type: DType | int) -> int:
    """Bit width of an element type: an int is the width itself; dtypes give ``.width``."""
    if type(element_type) is int:
        bits = element_type
    elif not isinstance(element_type, (bool, float)) and index_or_none(element_type) is not None:
        bits = index_or_none(element_type)   # an integer-like width (numpy integers...)
    else:
        bits = getattr(element_type, "width", None)
    if type(bits) is not int or bits <= 0:
        raise CuteTypeError(f"expected an element type or a bit width, got {element_type!r}")
    return bits


def _byte_atom(kind):
    major, b = kind.value
    span = 16 << b
    outer = Layout((8, span), (span, 1)) if major == "K" else Layout((span, 8), (1, span))
    return ComposedLayout(Swizzle(b, 4, 3), SmemPtrFlag(8), outer)


def make_smem_layout_atom(kind: SmemLayoutAtomKind, element_type: DType | int) -> ComposedLayout:
    """The shared-memory atom ``kind`` for elements of ``element_type`` (a dtype or a bit width).

    ``make_smem_layout_atom(SmemLayoutAtomKind.K_SW128, 16)`` is
    ``S<3,4,3> o smem_ptr[16b](unset) o (8,64):(64,1)``.
    """
    if not isinstance(kind, SmemLayoutAtomKind):
        raise CuteTypeError(f"kind must be a SmemLayoutAtomKind, got {kind!r}")
    bits = element_bits(element_type)
    if bits > 128 or 128 % bits:  # 1 is CuTe's atom in bits (Layout_*_Atom_Bits)
        raise CuteValueError(f"make_smem_layout_atom: the {kind.name} atom's 16-byte rows hold elements whose width "
                             f"divides 128 bits (1, 2, 4, 8, 16, 32, 64 or 128), got {bits} bits")
    return recast_layout(bits, 8, _byte_atom(kind))
