"""TMA descriptors: the box CuTe derives from (gmem tensor, smem layout, CTA tiler), and the
descriptor spec validated against every hardware rule before it reaches the driver.

``construct_tma_gbasis`` follows CuTe's ``make_tma_copy``: invert the smem layout to
find its contiguous vector, follow it into gmem modes through an identity layout of
the gmem shape, merge modes while a box mode stays <= 256, append the gmem modes the
tile does not use, and fold the trailing modes so the rank is <= 5.  The
:class:`TmaDescriptor` is pure data (element type, dims, byte strides, box, element
strides, interleave, swizzle, L2 promotion, OOB fill); ``validate()`` raises a
:class:`TmaError` naming the rule and values, ``encode()`` calls
``cuTensorMapEncodeTiled`` through cuda-python.
"""

import dataclasses
import enum
import math

from ..algebra import composition, right_inverse
from ..basis import ScaledBasis, basis_get, basis_value, make_basis_like, make_identity_layout
from ..composed import get_swizzle_portion
from ..dtypes import DType
from ..errors import CuteTypeError, CuteValueError
from ..int_tuple import flatten, product
from ..layout import Layout, _mk, coalesce, group_modes
from ..recast import recast_layout
from ..runtime import value_of

__all__ = [
    "TmaError",
    "TmaSwizzle",
    "TmaInterleave",
    "TmaL2Promotion",
    "TmaOobFill",
    "TmaDescriptor",
    "construct_tma_gbasis",
    "tma_swizzle_of",
    "BYTES_PER_TENSORMAP",
    "TENSORMAP_ALIGNMENT",
]

BYTES_PER_TENSORMAP = 128
TENSORMAP_ALIGNMENT = 64


class TmaError(CuteValueError):
    """A TMA configuration the hardware (or the driver) would reject."""


class TmaSwizzle(enum.Enum):
    """Shared-memory swizzle modes of a descriptor (CUtensorMapSwizzle), with their span in bytes."""

    NONE = 0
    B32 = 1
    B64 = 2
    B128 = 3

    @property
    def span(self):
        """The swizzle span in bytes (16 for NONE: the interleave granule)."""
        return 16 << self.value

    @property
    def smem_alignment(self):
        """The shared-memory alignment a tile with this swizzle needs: 128 B, or the swizzle repeat."""
        return 128 if self is TmaSwizzle.NONE else 256 << (self.value - 1)


class TmaInterleave(enum.Enum):
    NONE = 0
    B16 = 1
    B32 = 2


class TmaL2Promotion(enum.Enum):
    NONE = 0
    B64 = 1
    B128 = 2
    B256 = 3


class TmaOobFill(enum.Enum):
    """Out-of-bounds elements read as zeros (NONE) or as NaN requests (NAN_REQUEST_ZERO_FMA)."""

    NONE = 0
    NAN_REQUEST_ZERO_FMA = 1


def tma_swizzle_of(smem_layout, dtype):
    """The descriptor swizzle mode of a (possibly swizzled) smem layout in units of ``dtype``.

    The swizzle is recast to bytes; only ``S<0..3,4,3>`` (none, 32B, 64B, 128B) are TMA swizzles.
    """
    sw = get_swizzle_portion(smem_layout)
    if sw.bits == 0:
        return TmaSwizzle.NONE
    byte_sw = recast_layout(8, dtype.width, sw)
    if byte_sw.base != 4 or byte_sw.shift != 3 or not 0 <= byte_sw.bits <= 3:
        raise TmaError(
            f"the smem swizzle {sw} ({dtype.name} units) is {byte_sw} on byte addresses; TMA supports only "
            f"S<1,4,3> (32B), S<2,4,3> (64B) and S<3,4,3> (128B)"
        )
    return TmaSwizzle(byte_sw.bits)


def _coalesce_256(layout, max_inner=256):
    # CuTe's coalesce that merges modes only while the merged mode stays <= 256; the first
    # (contiguous) mode also stays within max_inner, the swizzle span in elements
    fs, fd = flatten(layout.shape), flatten(layout.stride)
    if type(fs) is not tuple:
        fs, fd = (fs,), (fd,)
    shapes, strides = [fs[0]], [fd[0]]
    for s, d in zip(fs[1:], fd[1:]):
        if type(s) is int and s == 1:
            continue
        limit = max_inner if len(shapes) == 1 else 256
        t, e = shapes[-1], strides[-1]
        static = all(type(x) is int for x in (s, d, t, e))
        if len(shapes) == 1 and type(t) is int and t == 1:
            shapes[0], strides[0] = s, d
        elif static and t * e == d and s * t <= limit:
            shapes[-1] = s * shapes[-1]
        else:
            shapes.append(s)
            strides.append(d)
    if len(shapes) == 1:
        return _mk(1, 0) if (type(shapes[0]) is int and shapes[0] == 1) else _mk(shapes[0], strides[0])
    return _mk(tuple(shapes), tuple(strides))


def _is_one(v):
    # a static 1 (a run-time value is not known to be 1, as in CuTe)
    return type(v) is int and v == 1


def _wrap(x):
    return x if type(x) is tuple else (x,)


def construct_tma_gbasis(gmem_layout, gmem_bits, smem_layout, cta_v_map, tma_bits, swizzle=None):
    """The TMA box as a layout ``tma_box_shape : gmem modes`` (basis strides), CuTe's ``construct_tma_gbasis``.

    ``gmem_layout`` is the gmem tensor's layout in elements of ``gmem_bits`` bits; ``smem_layout``
    the non-swizzled smem layout of one tile; ``cta_v_map`` the identity layout of the gmem
    shape composed with the CTA tiler; the box is counted in ``tma_bits``-bit elements.
    """
    if product(smem_layout.shape) != value_of(product(cta_v_map.shape)):
        raise TmaError(
            f"the smem layout {smem_layout} has {product(smem_layout.shape)} elements but the CTA tile has "
            f"{value_of(product(cta_v_map.shape))}: TMA requires the smem tile and the CTA tile to have the same size"
        )
    inv_smem = right_inverse(smem_layout)
    sidx2gmode_full = coalesce(composition(cta_v_map, inv_smem))
    strides = _wrap(sidx2gmode_full.stride)
    smem_rank = next((i for i, e in enumerate(strides) if not _is_one(basis_value(e))), len(strides))
    if smem_rank == 0:
        raise TmaError(
            f"no common vector between the smem layout {smem_layout} and the gmem tile {cta_v_map}: the smem "
            f"tile's contiguous elements do not follow a contiguous (stride-1) gmem mode"
        )
    shapes = _wrap(sidx2gmode_full.shape)
    sidx2gmode = _mk(shapes[:smem_rank], strides[:smem_rank]) if smem_rank > 1 else _mk(shapes[0], strides[0])
    tile_gstride = recast_layout(tma_bits, gmem_bits, composition(gmem_layout, sidx2gmode))
    max_inner = 256
    if swizzle is not None and swizzle is not TmaSwizzle.NONE:
        max_inner = max(1, swizzle.span * 8 // tma_bits)
    tma_gstride = _coalesce_256(tile_gstride, max_inner)
    gbasis = make_identity_layout(gmem_layout.shape)
    tile_gbasis_tmp = composition(gbasis, sidx2gmode)
    tile_gbasis = _mk(tile_gstride.shape, tile_gbasis_tmp.stride)
    tma_gbasis_tile = composition(tile_gbasis, Layout(_wrap(tma_gstride.shape)))
    used = flatten(_wrap(tma_gbasis_tile.stride))
    g_t = recast_layout(tma_bits, gmem_bits, gmem_layout)
    remaining = []
    for s, d, e in zip(_wrap(flatten(g_t.shape)), _wrap(flatten(g_t.stride)), _wrap(flatten(gbasis.stride))):
        if (type(s) is int and s == 1) or (type(d) is int and d == 0):
            continue
        e = _as_basis(e)
        if any(_as_basis(u) == e for u in _wrap(used)):
            continue
        remaining.append(e)
    full = _mk(_wrap(tma_gbasis_tile.shape) + (1,) * len(remaining), _wrap(tma_gbasis_tile.stride) + tuple(remaining))
    r = len(full.shape)
    return group_modes(full, min(r, 4), r)


@dataclasses.dataclass(frozen=True)
class TmaDescriptor:
    """Everything ``cuTensorMapEncodeTiled`` takes, as pure data; ``validate()`` checks it."""

    dtype: DType
    global_dims: tuple
    global_strides: tuple  # bytes, for dims 1..rank-1 (dim 0 is contiguous)
    box_dims: tuple
    element_strides: tuple
    swizzle: TmaSwizzle = TmaSwizzle.NONE
    interleave: TmaInterleave = TmaInterleave.NONE
    l2_promotion: TmaL2Promotion = TmaL2Promotion.B128
    oob_fill: TmaOobFill = TmaOobFill.NONE
    global_address: int = None
    address_alignment: int = 16

    @property
    def rank(self):
        return len(self.global_dims)

    @property
    def box_bytes(self):
        """Bytes one TMA instruction moves (the box)."""
        return product(tuple(self.box_dims)) * self.dtype.width // 8

    @property
    def smem_alignment(self):
        """The shared-memory alignment the destination/source tile needs."""
        return self.swizzle.smem_alignment

    def validate(self):
        """Raise :class:`TmaError` for the first rule this descriptor breaks; return ``self`` otherwise."""
        r = self.rank
        if not 1 <= r <= 5:
            raise TmaError(f"TMA rank must be 1..5, got {r} (dims {list(self.global_dims)})")
        for name, v in (("global_strides", self.global_strides), ("box_dims", self.box_dims),
                        ("element_strides", self.element_strides)):
            want = r - 1 if name == "global_strides" else r
            if len(v) != want:
                raise TmaError(f"{name} must have {want} entries for rank {r}, got {list(v)}")
        if self.global_address is not None and self.global_address % 16:
            raise TmaError(f"the global address {self.global_address:#x} must be 16-byte aligned")
        if self.address_alignment % 16:
            raise TmaError(f"the global address must be 16-byte aligned, but only {self.address_alignment}-byte "
                           f"alignment is known (assumed_align)")
        for i, d in enumerate(self.global_dims):
            if not 1 <= d <= 1 << 32:
                raise TmaError(f"global dim {i} is {d}; TMA global dims must be in 1..2^32")
        for i, s in enumerate(self.global_strides, start=1):
            if s % 16:
                raise TmaError(f"global stride {i} is {s} bytes; TMA global strides must be multiples of 16 bytes")
            if not 0 < s < 1 << 40:
                raise TmaError(f"global stride {i} is {s} bytes; TMA global strides must be in (0, 2^40)")
        for i, b in enumerate(self.box_dims):
            if not 1 <= b <= 256:
                raise TmaError(f"box dim {i} is {b}; TMA box dims must be in 1..256")
        inner = self.box_dims[0] * self.dtype.width // 8
        if self.interleave is TmaInterleave.NONE and (self.box_dims[0] * self.dtype.width) % 128:
            raise TmaError(
                f"the inner box dim is {self.box_dims[0]} x {self.dtype.width} bits = "
                f"{self.box_dims[0] * self.dtype.width / 8:g} bytes; it must be a multiple of 16 bytes"
            )
        if self.swizzle is not TmaSwizzle.NONE and inner > self.swizzle.span:
            raise TmaError(
                f"the inner box dim is {inner} bytes, wider than the {self.swizzle.span}-byte span of the "
                f"{self.swizzle.name} swizzle"
            )
        for i, e in enumerate(self.element_strides):
            if not 1 <= e <= 8:
                raise TmaError(f"element stride {i} is {e}; TMA element strides must be in 1..8")
        return self

    def encode(self, address=None):
        """The 128-byte ``CUtensorMap`` (bytes) from the driver, for the gmem ``address`` (device pointer)."""
        from ._encode import encode_tiled

        return encode_tiled(self.validate(), self.global_address if address is None else address)


def _basis_list(stride_mode):
    return list(flatten(stride_mode)) if type(stride_mode) is tuple else [stride_mode]


def _as_basis(e):
    return e if type(e) is ScaledBasis else ScaledBasis(1, ())


def make_tma_desc(gmem_layout, gmem_dtype, tma_dtype, address, address_alignment, tma_gbasis, swizzle, num_multicast):
    """The :class:`TmaDescriptor` for ``tma_gbasis`` and the strides of the TMA coordinate tensor.

    Follows CuTe's ``make_tma_copy_desc``: each TMA dim gathers the gmem modes its
    bases name (merging several with the gcd recurrence), dim 0 must be the
    contiguous one, the box is the size of each TMA mode, split across the
    ``num_multicast`` CTAs from the last dim down.  Returns ``(descriptor, g_stride)``.
    """
    g_t = recast_layout(tma_dtype.width, gmem_dtype.width, gmem_layout)
    modes = _wrap(tma_gbasis.stride)
    rank = len(modes)
    gshape, gstride = g_t.shape, g_t.stride
    dims, strides = [1] * rank, [0] * rank
    for i, mode in enumerate(modes):
        bases = [_as_basis(e) for e in _basis_list(mode)]
        if type(mode) is not tuple:
            dims[i] = value_of(basis_get(bases[0], gshape))
            strides[i] = value_of(basis_get(bases[0], gstride))
            continue
        for e in bases:
            s_j, d_j = value_of(basis_get(e, gshape)), value_of(basis_get(e, gstride))
            old = strides[i]
            strides[i] = math.gcd(strides[i], d_j)
            if strides[i]:
                dims[i] = (dims[i] - 1) * (old // strides[i]) + (s_j - 1) * (d_j // strides[i]) + 1
            else:
                dims[i] = s_j
    for i, d in enumerate(dims):
        if type(d) is not int or type(strides[i]) is not int:
            raise CuteTypeError(f"TMA descriptors are built on the host from known shapes and strides; dim {i} is {d}:{strides[i]}")
    if strides[0] != 1:
        raise TmaError(
            f"the contiguous TMA dim has gmem stride {strides[0]} (must be 1): the majorness of the smem tile does "
            f"not match the gmem tensor {gmem_layout}"
        )
    byte_strides = tuple(s * tma_dtype.width // 8 for s in strides[1:])
    box = [value_of(product(m)) for m in _wrap(tma_gbasis.shape)]
    multicast = num_multicast
    i = rank - 1
    while multicast > 1:
        if i < 0:
            raise TmaError(f"the box {box} cannot be split across {num_multicast} multicast CTAs")
        if box[i] % multicast and multicast % box[i]:
            raise TmaError(
                f"the multicast count {num_multicast} does not divide the box {box}: dim {i} has {box[i]}, "
                f"which neither divides nor is divided by the {multicast} CTAs left"
            )
        new_mult = -(-multicast // box[i])
        box[i] = -(-box[i] // multicast)
        multicast = new_mult
        i -= 1
    per_cta_bytes = product(tuple(box)) * tma_dtype.width // 8
    tile_elems = value_of(product(tma_gbasis.shape))
    if (num_multicast > 1 or product(tuple(box)) * num_multicast < tile_elems) and per_cta_bytes % 128:
        raise TmaError(
            f"each TMA instruction moves a box {box} of {per_cta_bytes} bytes; when a tile takes several "
            f"instructions (or CTAs) their smem destinations must stay 128-byte aligned, so the box must be a "
            f"multiple of 128 bytes"
        )
    desc = TmaDescriptor(
        dtype=tma_dtype,
        global_dims=tuple(dims),
        global_strides=byte_strides,
        box_dims=tuple(box),
        element_strides=(1,) * rank,
        swizzle=swizzle,
        global_address=address,
        address_alignment=address_alignment,
    ).validate()
    g_stride = _tma_coord_strides(gmem_layout, gmem_dtype, tma_dtype, g_t, modes, byte_strides)
    return desc, g_stride


def _tma_coord_strides(gmem_layout, gmem_dtype, tma_dtype, g_t, modes, byte_strides):
    # for each gmem mode: the TMA coordinate basis it advances (CuTe's gmem_tma_basis_stride)
    ratio_num, ratio_den = gmem_dtype.width, tma_dtype.width

    def leaf(ei):
        di = basis_get(ei, g_t.stride)
        if type(di) is int and di == 0:
            return 0
        j = next((j for j, m in enumerate(modes) if any(_as_basis(e) == ei for e in _basis_list(m))), None)
        if j is None:
            # a mode the box does not use (CuTe also drops size-1 modes here; cute_py keeps a size-1
            # mode the box does use, so a tile reaching past it reads out of bounds, not row 0 again)
            return 0
        if j == 0:
            num = value_of(basis_get(ei, gmem_layout.stride)) * ratio_num
            if num % ratio_den:
                raise TmaError(
                    f"with {tma_dtype.name} as the TMA type for {gmem_dtype.name} elements, a step along gmem mode "
                    f"{ei} moves {num}/{ratio_den} TMA elements: fractional TMA coordinates are not supported"
                )
            return ScaledBasis(num // ratio_den, (0,))
        if type(modes[j]) is not tuple:
            return ScaledBasis(1, (j,))
        scale = -(-(value_of(di) * tma_dtype.width // max(byte_strides[j - 1], 16)) // 8)
        return ScaledBasis(scale, (j,))

    basis = make_basis_like(gmem_layout.shape)
    if type(basis) is not tuple:
        return leaf(ScaledBasis(1, ()))
    return _map_basis(basis, leaf)


def _map_basis(t, fn):
    if type(t) is tuple:
        return tuple(_map_basis(x, fn) for x in t)
    return fn(t)
