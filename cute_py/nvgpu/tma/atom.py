"""The TMA atom: ``make_tiled_tma_atom``, ``tma_partition`` and :class:`TmaCopyAtom`.

``make_tiled_tma_atom(op, gmem_tensor, smem_layout, cta_tiler, num_multicast)`` derives the TMA box as
CuTe does and returns ``(atom, tma_tensor)``: the atom carries the validated :class:`TmaDescriptor`, and
``tma_tensor`` maps logical gmem coordinates to TMA coordinates through basis strides. The operations are in
:mod:`cute_py.nvgpu.tma.ops`, the device-side helpers (descriptor prefetch, fences, low-level TMA forms) in
:mod:`cute_py.nvgpu.forms`; the DSL reaches all of them as ``cute_py.nvgpu.cpasync``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...atom import CopyAtom
from ...core.algebra import composition
from ...core.basis import make_identity_layout
from ...core.coalescing import coalesce
from ...core.composed import get_nonswizzle_portion
from ...core.int_tuple import DynamicInt, fmt, is_static, product
from ...core.normalise import index_or_none
from ...core.layout import cosize, Layout
from ...core.recast import assume_recastable, recast_exactness
from ...core.typing import Coord, Shape, Stride, Tiler
from ...errors import CuteTypeError, CuteValueError
from ...tensor.dtypes import dtype_of
from ...tensor.engines import CoordEngine
from ...tensor.fake import value_of
from ...tensor.partition import domain_offset
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.tensor import Tensor
from .box import construct_tma_gbasis, make_tma_desc, tile_extents
from .desc import TmaDescriptor, TmaError, tma_swizzle_of
from .ops import CopyBulkTensorIm2colG2SOp, CopyBulkTensorTileS2GOp, TmaOp, is_tma_op
from .smem import check_same_tile, check_smem_instructions, check_store_targets, value_layout

if TYPE_CHECKING:
    from ...core.composed import ComposedLayout

__all__ = ["TmaCopyAtom", "make_tiled_tma_atom", "tma_partition"]


class TmaCopyAtom(CopyAtom):
    """A TMA copy atom: a :class:`CopyAtom` with its descriptor and the box it was derived from."""

    __slots__ = ("descriptor", "tma_gbasis", "g_stride", "smem_layout", "num_multicast", "tile_extents")

    def __init__(self, op: TmaOp, dtype: Any, num_bits: int, descriptor: TmaDescriptor, tma_gbasis: Layout,
                 g_stride: Stride, smem_layout: Layout | ComposedLayout, num_multicast: int,
                 tile_extents: dict[tuple[int, ...], tuple[int, bool]] | None = None) -> None:
        super().__init__(op, dtype, num_bits)
        for name, v in (("descriptor", descriptor), ("tma_gbasis", tma_gbasis), ("g_stride", g_stride),
                        ("smem_layout", smem_layout), ("num_multicast", num_multicast),
                        ("tile_extents", tile_extents)):
            object.__setattr__(self, name, v)

    def get_tma_tensor(self, shape: Shape) -> Tensor:
        """The TMA coordinate tensor of a gmem tensor of ``shape``: its elements are the TMA
        coordinates (one per descriptor dim) of each gmem coordinate."""
        from ...core.basis import ArithTuple

        return Tensor(CoordEngine(ArithTuple((0,) * self.descriptor.rank), self), Layout(value_of(shape), self.g_stride))

    def __repr__(self):
        d = self.descriptor
        return (f"TmaCopyAtom({type(self.op).__name__}, {self.dtype.name}, box={list(d.box_dims)}, "
                f"dims={list(d.global_dims)}, swizzle={d.swizzle.name}, src_tv={self.layout_src_tv})")


def _smem_tile(smem_layout, tile_size, tiler_rank):
    # accept a staged smem layout (TILE..., STAGE): use stage 0
    n = product(smem_layout.shape)
    if n == tile_size:
        return smem_layout
    r = len(smem_layout)
    if r == tiler_rank + 1 and n % tile_size == 0:
        return smem_layout((None,) * tiler_rank + (0,)) if r > 1 else smem_layout
    return smem_layout


def make_tiled_tma_atom(op: TmaOp, gmem_tensor: Tensor, smem_layout: Layout | ComposedLayout, cta_tiler: Tiler,
                        num_multicast: int = 1, *, internal_type: Any = None) -> tuple[TmaCopyAtom, Tensor]:
    """``(atom, tma_tensor)`` for TMA copies of ``cta_tiler`` tiles of ``gmem_tensor`` to/from ``smem_layout``.

    ``smem_layout`` is the (possibly swizzled) layout of one tile in shared memory, or
    a staged layout whose last mode counts stages.  The box is derived as CuTe does;
    every hardware rule is checked here (box <= 256, 16-byte inner box, swizzle span,
    16-byte strides, majorness, rank <= 5, multicast split...).
    """
    if not is_tma_op(op):
        raise CuteTypeError(f"make_tiled_tma_atom needs a TMA operation, got {op!r}")
    if isinstance(op, CopyBulkTensorIm2colG2SOp):
        raise CuteTypeError("make_tiled_tma_atom builds tiled-mode descriptors; an im2col TMA atom comes from "
                            "cute_py.nvgpu.tma.im2col.make_im2col_tma_atom")
    if not isinstance(gmem_tensor, Tensor) or not isinstance(gmem_tensor.engine, Pointer):
        raise CuteTypeError(f"make_tiled_tma_atom needs a gmem tensor (over a Pointer), got {gmem_tensor!r}")
    ptr = gmem_tensor.engine
    if ptr.memspace not in (AddressSpace.gmem, AddressSpace.generic):
        raise CuteValueError(f"the TMA source/destination must be in global memory, not {ptr.memspace.name}")
    num_multicast = _multicast_count(num_multicast)
    if num_multicast > 1 and not op.multicast:
        raise CuteValueError(f"{type(op).__name__} does not multicast; use CopyBulkTensorTileG2SMulticastOp")
    if type(smem_layout) is not Layout and not hasattr(smem_layout, "__cute_map_outer__"):
        raise CuteTypeError(f"smem_layout must be a layout, got {smem_layout!r}")
    dtype = ptr.dtype
    tma_dtype = dtype if internal_type is None else dtype_of(internal_type)
    g_host = gmem_tensor.layout
    if tma_dtype.width > dtype.width:
        # the TMA unit moves whole internal elements: a gmem layout they only partly cover would be rounded (its
        # run-time leaves are promised whole units, checked where each call binds them)
        g_host = assume_recastable(tma_dtype.width, dtype.width, g_host)
        reason = recast_exactness(tma_dtype.width, dtype.width, g_host)
        if reason is not None:
            raise TmaError(f"the TMA internal type {tma_dtype.name} is wider than {dtype.name}, and the gmem layout "
                           f"{gmem_tensor.layout} is not a whole number of {tma_dtype.name} elements: {reason}")
    cta_tiler = _tiler(cta_tiler)
    tile_size = product(composition(make_identity_layout(g_host.shape), cta_tiler).shape)
    tile = _smem_tile(smem_layout, value_of(tile_size), len(cta_tiler) if type(cta_tiler) is tuple else 1)
    swizzle = tma_swizzle_of(tile, dtype)
    # static (int) leaves of the gmem layout are static for the derivation, run-time leaves (e.g.
    # HostInt from make_fake_tensor(..., dynamic=True)) are treated as CuTe treats dynamic ones
    cta_v_map = composition(make_identity_layout(g_host.shape), cta_tiler)
    if type(op) is CopyBulkTensorTileS2GOp:
        check_store_targets(get_nonswizzle_portion(tile), cta_v_map, g_host)
    gbasis = construct_tma_gbasis(g_host, dtype.width, get_nonswizzle_portion(tile), cta_v_map,
                                  tma_dtype.width, swizzle)
    address = ptr.address + ptr.byte_offset() if ptr.address is not None else None
    extents = tile_extents(cta_v_map, g_host, dtype.width, tma_dtype.width)
    desc, g_stride = make_tma_desc(g_host, dtype, tma_dtype, address, ptr.alignment, gbasis,
                                   swizzle, num_multicast, store=op.direction == "S2G", extents=extents)
    box_elems = product(gbasis.shape)
    if type(box_elems) is not int:
        raise TmaError(
            f"the TMA box {gbasis} has a run-time size: the CTA tile {fmt(cta_tiler) if type(cta_tiler) is tuple else cta_tiler} "
            f"spans gmem modes whose extents are run-time values (as in CuTe, the box must be static)"
        )
    num_bits = box_elems * tma_dtype.width
    atom = TmaCopyAtom(op, dtype, num_bits, desc, gbasis, g_stride, tile, num_multicast, extents)
    check_smem_instructions(atom, tile, cta_v_map, g_host)
    return atom, atom.get_tma_tensor(g_host.shape)


def _tiler(t):
    """A CTA tiler: a positive int, a layout, or a tuple of them (lists become tuples)."""
    if isinstance(t, (tuple, list)):
        if not t:
            raise CuteValueError("cta_tiler must not be empty")
        return tuple(_tiler(x) for x in t)
    if isinstance(t, Layout):
        if not (is_static(t.shape) and is_static(t.stride)):
            raise CuteValueError(f"a layout in cta_tiler must be static, got {t}")
        return t
    v = _int_or_none(t)
    if v is None:
        raise CuteTypeError(f"cta_tiler takes positive ints, layouts or tuples of them, got {t!r}")
    t = v
    if t < 1:
        raise CuteValueError(f"a cta_tiler extent must be positive, got {t}")
    return t


def _multicast_count(n):
    v = _int_or_none(n)
    if v is None:
        raise CuteTypeError(f"num_multicast must be an int, got {n!r}")
    n = v
    if not 1 <= n <= 16:
        raise CuteValueError(f"num_multicast must be in 1..16 (a cluster holds at most 16 CTAs), got {n}")
    return n


def tma_partition(atom: TmaCopyAtom, cta_coord: Coord, cta_layout: Layout, smem_tensor: Tensor,
                  gmem_tensor: Tensor) -> tuple[Tensor, Tensor]:
    """``(smem_part, gmem_part)``: the TMA tile mode of both tensors grouped as ``((TMA, TMA_Iter), Rest...)``.

    Mode 0 of both tensors is the CTA tile; with multicast, this CTA's share of the
    instruction starts at ``cta_layout(cta_coord)`` times its part of the box.
    """
    if not isinstance(atom, TmaCopyAtom):
        raise CuteTypeError(f"tma_partition needs the atom of make_tiled_tma_atom, got {atom!r}")
    for name, t in (("smem_tensor", smem_tensor), ("gmem_tensor", gmem_tensor)):
        if not isinstance(t, Tensor):
            raise CuteTypeError(f"tma_partition: {name} must be a Tensor, got {t!r}")
    if not isinstance(gmem_tensor.engine, CoordEngine):
        raise CuteTypeError(f"tma_partition: gmem_tensor must be (a tile of) the TMA coordinate tensor that "
                            f"make_tiled_tma_atom returned, got a tensor over {gmem_tensor.engine!r}")
    s0, g0 = product(_mode0(smem_tensor.layout)), product(_mode0(gmem_tensor.layout))
    if s0 != g0:
        raise CuteValueError(f"tma_partition: mode 0 of the smem tensor has {s0} elements, of the gmem tensor {g0}")
    if isinstance(smem_tensor.engine, Pointer):
        need = atom.descriptor.smem_alignment
        if smem_tensor.engine.alignment < need:
            raise TmaError(
                f"the smem tile must be {need}-byte aligned for a {atom.descriptor.swizzle.name} TMA, but only "
                f"{smem_tensor.engine.alignment}-byte alignment is known"
            )
    smem_mode0 = smem_tensor.layout[0] if len(smem_tensor.layout) > 1 else smem_tensor.layout
    check_same_tile(atom, smem_mode0)
    mcast = _multicast_offset(atom, cta_coord, cta_layout)
    layout_V = (value_layout(smem_mode0, s0, atom.num_values),)
    out = []
    for t in (smem_tensor, gmem_tensor):
        r = len(t.layout)
        tiled = composition(t, layout_V + (None,) * (r - 1))
        tiled = coalesce(tiled, ((1, 1),))
        out.append(domain_offset(((mcast, 0),) + (0,) * (r - 1), tiled))
    return out[0], out[1]


def _multicast_offset(atom, cta_coord, cta_layout):
    """The first element of this CTA's share of each instruction (multicast splits the box across CTAs)."""
    n = atom.num_multicast
    if not isinstance(cta_layout, Layout):
        raise CuteTypeError(f"tma_partition: cta_layout must be a Layout of the multicast CTAs, got {cta_layout!r}")
    size = product(cta_layout.shape)
    if size != n or cosize(cta_layout) != n:
        raise CuteValueError(f"tma_partition: cta_layout {cta_layout} must map the {n} CTA(s) the atom multicasts "
                             f"to (num_multicast={n}) onto 0..{n - 1}")
    cta_coord = _coordinate(cta_coord)
    if is_static(cta_coord):
        flat = cta_coord if type(cta_coord) is int else None
        inside = (0 <= flat < size) if flat is not None else _coord_inside(cta_coord, cta_layout.shape)
        if not inside:
            raise CuteValueError(f"tma_partition: cta_coord {fmt(cta_coord)} is outside the multicast group "
                                 f"{cta_layout} of {n} CTA(s)")
    return cta_layout(cta_coord) * (atom.num_values // n)


def _coordinate(c, what="tma_partition: cta_coord"):
    # a CTA coordinate: an int (numpy ints too), a run-time integer, or a tuple of them
    if isinstance(c, (tuple, list)):
        return tuple(_coordinate(x, what) for x in c)
    if isinstance(c, DynamicInt):
        return c
    v = _int_or_none(c)
    if v is None:
        raise CuteTypeError(f"{what} must be an int or a coordinate of ints, got {c!r}")
    return v


def _int_or_none(x):
    # an integer-like (numpy integers...) as an int; None for bools and anything else (arrays included)
    if isinstance(x, bool) or type(x).__name__ == "bool_":
        return None
    return index_or_none(x)


def _coord_inside(coord, shape):
    if type(coord) is tuple:
        return type(shape) is tuple and len(coord) == len(shape) and all(
            _coord_inside(c, s) for c, s in zip(coord, shape))
    return type(coord) is int and 0 <= coord < product(shape)


def _mode0(layout):
    s = layout.shape
    return s[0] if type(s) is tuple else s
