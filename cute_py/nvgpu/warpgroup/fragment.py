"""The A/B "fragments" of a warpgroup MMA whose operands are in shared memory: tensors of WGMMA descriptors
(CuTe C++'s ``GMMA::DescriptorIterator`` tensors, which GMMA's ``make_fragment_A/B`` build).

A thread's partition of a shared-memory operand is ``((MN, K), MMA_MN, MMA_K, ...)``: mode 0 is one
instruction's whole ``(MN, K)`` operand tile (every thread of the warpgroup names the same tile).  Its
descriptor tensor :class:`GmmaDescriptorTensor` has the shape ``(1, MMA_MN, MMA_K, ...)``: one descriptor per
instruction, its other modes those of the partition, with their strides in 16-byte units (the units in which a
descriptor's start address moves, as C++'s ``recast<uint128_t>`` gives them).

Slicing (``t[None, None, k]``, ``t[None, None, k, stage]`` with a run-time stage) slices the shared-memory
partition alongside; :meth:`GmmaDescriptorTensor.descriptor` of a one-instruction tensor (all modes but mode 0
fixed) is :func:`~cute_py.nvgpu.warpgroup.make_gmma_desc` of its tile as C++'s descriptor iterator gives it: the
start of the fragment's first tile (its shared-memory pointer) and, as ``start_offset``, the slice's offset from
it in 16-byte units (its run-time part apart from its static one), so that a kernel adds one constant per k-block
to its stage's descriptor instead of rebuilding each from an address.  Both name the same bytes: the tile's own
descriptor starts there (a property test).  The tile must be a canonical GMMA layout of the op's major mode: any
other is a ``GmmaLayoutError`` when the fragment is made (the first tile is checked) or when a descriptor is
taken.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...core.composed import get_nonswizzle_portion
from ...core.notation import fmt
from ...core.layout import Layout
from ...errors import CuteTypeError, CuteValueError
from ...tensor.pointer import AddressSpace, Pointer
from .desc import GmmaDescriptor, GmmaLayoutError, make_gmma_desc
from .operands import OperandMajorMode
from .smem import element_bits

__all__ = ["GmmaDescriptorTensor", "make_descriptor_fragment"]


def _modes(x):
    return x if type(x) is tuple else (x,)


class GmmaDescriptorTensor:
    """``(1, MMA_MN, MMA_K, ...)`` WGMMA descriptors over a shared-memory partition (see the module)."""

    __cute_mma_descriptors__ = True
    __slots__ = ("smem", "major", "layout", "first", "units")

    def __init__(self, smem: Any, major: OperandMajorMode, layout: Layout, first: GmmaDescriptor | None = None,
                 units: tuple = (None, 0)) -> None:
        self.smem = smem
        self.major = major
        self.layout = layout
        self.first = first  # the descriptor of the fragment's first tile (start_offset 0)
        self.units = units  # 16-byte units from the first tile's start to this slice's: (run-time or None, static)

    @property
    def shape(self) -> Any:
        return self.layout.shape

    @property
    def stride(self) -> Any:
        return self.layout.stride

    @property
    def element_type(self) -> None:
        """Descriptors have no numeric element type."""
        return None

    def __len__(self) -> int:
        return len(self.layout)

    def __getitem__(self, coord: Any) -> GmmaDescriptorTensor:
        """Slice: ``coord`` names every mode; mode 0 (the one descriptor) is ``None`` or 0."""
        coord = tuple(coord) if isinstance(coord, (tuple, list)) else (coord,)
        if len(coord) != len(self):
            raise CuteValueError(f"a descriptor tensor of shape {fmt(self.shape)} is indexed with {len(self)} "
                                 f"coordinates (mode 0 None), got {coord!r}")
        if coord[0] not in (None, 0):
            raise CuteValueError(f"mode 0 of a descriptor tensor is its one descriptor: index it with None or 0, "
                                 f"got {coord[0]!r}")
        smem = self.smem[(None,) + coord[1:]]
        kept = [i for i, c in enumerate(coord) if i == 0 or c is None]
        shapes, strides = _modes(self.layout.shape), _modes(self.layout.stride)
        layout = Layout(tuple(shapes[i] for i in kept), tuple(strides[i] for i in kept))
        units = _add_units(self.units, self.layout, coord, shapes)
        return GmmaDescriptorTensor(smem, self.major, layout, self.first, units)

    def descriptor(self) -> GmmaDescriptor:
        """The descriptor of a one-instruction tensor (rank 1: every mode but mode 0 fixed)."""
        if len(self) != 1:
            raise CuteValueError(f"descriptor() takes a one-instruction descriptor tensor (rank 1), got the shape "
                                 f"{fmt(self.shape)}: slice its modes first")
        tile = self.smem
        if len(tile.layout) == 1:  # ((MN, K)): the instruction's tile is the one mode
            tile = tile.__cute_map_outer__(lambda layout: layout[0])
        desc = make_gmma_desc(tile, self.major)  # the tile must be canonical (its fields are the first tile's)
        if self.first is None:
            return desc
        # the first tile's start and this tile's offset from it: one addition a descriptor in the kernel
        dynamic, static = self.units
        return dataclasses.replace(desc, start=self.first.start,
                                   start_offset=static if dynamic is None else (dynamic, static))

    def __repr__(self):
        return f"gmma_desc_tensor<{self.major} o {self.smem!r} | {self.layout}>"


def _add_units(units, layout, coord, shapes):
    """``units`` (run-time or None, static) plus the offset of the fixed coordinates of ``coord`` in ``layout``,
    its run-time and static parts apart (a layout's offset is a sum over its modes)."""
    dynamic, static = units
    strides = _modes(layout.stride)
    for i, c in enumerate(coord):
        if i == 0 or c is None:
            continue
        moved = Layout(shapes[i], strides[i])(c)
        if type(moved) is int:
            static += moved
        else:
            dynamic = moved if dynamic is None else dynamic + moved
    return dynamic, static


def make_descriptor_fragment(partition: Any, major: OperandMajorMode, dtype: Any, which: str) -> GmmaDescriptorTensor:
    """The descriptor tensor of a shared-memory operand partition ``((MN, K), MMA_MN, MMA_K, ...)`` of
    ``dtype`` elements read ``major``-major (see the module)."""
    ptr = getattr(partition, "iterator", None)
    if not isinstance(ptr, Pointer) or ptr.memspace is not AddressSpace.smem:
        raise GmmaLayoutError(f"make_fragment_{which} of a warpgroup MMA reading {which} from shared memory takes "
                              f"a shared-memory partition (thr_mma.partition_{which}(sX)), got {partition!r}")
    if ptr.dtype is not dtype:
        raise CuteTypeError(f"make_fragment_{which}: the MMA reads {dtype.name} elements, the shared-memory "
                            f"tensor holds {ptr.dtype.name}")
    layout = partition.layout
    if len(layout) < 3:
        raise CuteValueError(f"make_fragment_{which} takes a partition of rank >= 3 ((V, MN, K, ...)), got {layout}")
    outer = get_nonswizzle_portion(layout)
    outer = getattr(outer, "outer", outer)
    shapes, strides = _modes(outer.shape), _modes(outer.stride)
    bits = element_bits(dtype)

    def unit(shape, s, i):  # a stride in 16-byte units (a mode of one element: 0)
        if type(shape) is tuple:
            return tuple(unit(x, y, i) for x, y in zip(shape, s))
        if shape == 1:
            return 0
        if type(s) is not int or (s * bits) % 128:
            raise GmmaLayoutError(f"make_fragment_{which}: mode {i} of the partition {layout} moves by {s!r} "
                                  f"elements, not a whole number of 16-byte units (a descriptor's start moves in "
                                  f"16-byte steps)")
        return s * bits // 128

    units = [unit(shapes[i], strides[i], i) for i in range(1, len(shapes))]
    desc = Layout((1,) + tuple(shapes[1:]), (0,) + tuple(units))
    frag = GmmaDescriptorTensor(partition, major, desc)
    # the tile must be canonical: a GmmaLayoutError naming the rule here, not in the kernel
    first = frag[(None,) + (0,) * (len(shapes) - 1)].descriptor()
    return GmmaDescriptorTensor(partition, major, desc, first)
