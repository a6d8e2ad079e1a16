"""Im2col TMA for 2-D convolutions: the host-side atom and the instruction of each (M, K) tile.

An implicit GEMM reads a conv2d's NHWC input ``img`` as the matrix ``A`` of shape
``(N*OH*OW, KH*KW*C)``: row ``m`` is the output pixel ``(n, oh, ow)`` (``ow`` fastest), column ``k`` the
filter tap and channel ``(kh, kw, c)`` (``c`` fastest), and ``A[m, k] = img[n, oh*S - P + kh*D,
ow*S - P + kw*D, c]``, zero where that falls in the padding (square kernel ``K``, stride ``S``, dilation
``D``, padding ``P``; ``OH = (H + 2P - D(K-1) - 1) // S + 1``, likewise ``OW``).

:func:`make_im2col_tma_atom` (host) builds an :class:`Im2colCopyAtom` for ``block_M x block_K`` tiles of
``A``: an im2col descriptor over ``img`` viewed as ``(C, W, H, N)`` whose bounding box is
``[-P, dim - 1 + P - D(K-1)]`` along W and H, traversed in steps of ``S``, so its positions are exactly
``ow*S - P`` (resp. ``oh*S - P``) for the ``OW`` (``OH``) output columns (rows). One instruction loads
the tile ``(nhw_step, c_step)``: ``block_M`` pixels from the output pixel ``nhw_step * block_M`` on
(the traversal wraps rows and images as ``m`` does; pixels past the last image read as zeros), each
``block_K`` channels from ``c_step * block_K % C`` at the tap ``c_step * block_K // C``, which is the
instruction's im2col offsets ``(kw*D, kh*D)``. So ``block_K`` must divide ``C``, and the shared tile is the
row-major ``(block_M, block_K)`` layout (optionally swizzled with the swizzle whose span is its row).

:func:`im2col_instruction` gives that instruction's coordinates and offsets (static ints or traced
values); :func:`tma_load_im2col` is the low-level device form; the kernel builtin ``c2d_im2col`` (in
``cute_py.compiler.builtins.im2col``, exported as ``cute_py.c2d_im2col``) issues it on an mbarrier.

**The descriptor.** The spec ``cuTensorMapEncodeIm2col`` takes, validated against every rule the
driver states before it reaches the driver.

In im2col mode a tensor of rank 3-5 is read as ``(C, W[, H[, D]], N)`` (dim 0 contiguous, the channels).
One instruction loads ``pixels_per_column`` pixels of ``channels_per_pixel`` channels each into shared
memory, pixel-major (a pixel's channels contiguous, ``channels_per_pixel`` elements a row). The pixels are
the positions a traversal visits inside the *bounding box* of each image: along spatial dim ``i`` from
``lower_corner[i]`` to ``dims[i] - 1 + upper_corner[i]`` (inclusive) in steps of ``element_strides[i]``,
the innermost spatial dim (W) fastest, then the next, then the image ``n``; it starts at the pixel the
instruction's coordinates name. Each visited pixel reads the element at its position plus the
instruction's im2col offsets (one per spatial dim); elements outside the tensor read as zero.

:class:`Im2colDescriptor` is that spec as pure data; ``validate()`` raises a :class:`TmaError` naming
the rule and values, ``encode()`` calls the driver through cuda-python
(:func:`cute_py.nvgpu.tma.desc.encode_im2col`). The corner and offset arrays are in the order the driver takes
them: innermost spatial dim first (``(w, h)`` for a rank-4 NHWC tensor).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ... import device
from ...core.coalescing import coalesce
from ...core.composed import get_nonswizzle_portion
from ...core.normalise import index_or_none
from ...core.layout import Layout
from ...errors import CuteTypeError, CuteValueError, DeviceOnlyError, TmaError
from ...tensor.dtypes import DType
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.tensor import Tensor
from .atom import TmaCopyAtom
from .desc import TmaL2Promotion, TmaOobFill, TmaSwizzle, check_global_address, encode_im2col, tma_swizzle_of
from .ops import CopyBulkTensorIm2colG2SOp

__all__ = ["Conv2dGeometry", "Im2colCopyAtom", "make_im2col_tma_atom", "im2col_instruction", "tma_load_im2col",
           "CopyBulkTensorIm2colG2SOp", "Im2colDescriptor", "CORNER_RANGE", "MAX_CHANNELS_PER_PIXEL",
           "MAX_PIXELS_PER_COLUMN"]


# the signed range of each bounding-box corner offset, by tensor rank (cuTensorMapEncodeIm2col)
CORNER_RANGE = {3: (-(1 << 15), (1 << 15) - 1), 4: (-(1 << 7), (1 << 7) - 1), 5: (-(1 << 4), (1 << 4) - 1)}
MAX_CHANNELS_PER_PIXEL = 256
MAX_PIXELS_PER_COLUMN = 1024


@dataclasses.dataclass(frozen=True)
class Im2colDescriptor:
    """Everything ``cuTensorMapEncodeIm2col`` takes, as pure data; ``validate()`` checks it.

    ``global_dims`` are ``(C, W[, H[, D]], N)``; ``global_strides`` the byte strides of dims 1..rank-1;
    ``lower_corner``/``upper_corner`` one signed offset per spatial dim (innermost first);
    ``element_strides`` one traversal step per dim (dim 0's is ignored by the hardware and must be 1 here).
    """

    dtype: DType
    global_dims: tuple
    global_strides: tuple
    lower_corner: tuple
    upper_corner: tuple
    channels_per_pixel: int
    pixels_per_column: int
    element_strides: tuple
    swizzle: TmaSwizzle = TmaSwizzle.NONE
    l2_promotion: TmaL2Promotion = TmaL2Promotion.B128
    oob_fill: TmaOobFill = TmaOobFill.NONE
    global_address: int | None = None
    address_alignment: int = 16

    @property
    def rank(self) -> int:
        return len(self.global_dims)

    @property
    def spatial_rank(self) -> int:
        return len(self.global_dims) - 2

    @property
    def is_dynamic(self) -> bool:
        """Always False: im2col descriptors are built from static extents."""
        return False

    def bind(self, env: dict[str, int]) -> Im2colDescriptor:
        """This descriptor (it has no run-time extents), validated."""
        return self.validate()

    @property
    def box_bytes(self) -> int:
        """Bytes one im2col TMA instruction moves: ``pixels_per_column x channels_per_pixel`` elements."""
        return self.pixels_per_column * self.channels_per_pixel * self.dtype.width // 8

    @property
    def row_bytes(self) -> int:
        """Bytes of one pixel's channels in shared memory (the box's inner dimension)."""
        return self.channels_per_pixel * self.dtype.width // 8

    @property
    def smem_alignment(self) -> int:
        """The shared-memory alignment the destination tile needs."""
        return self.swizzle.smem_alignment

    def box_extent(self, i: int) -> int:
        """The number of positions the bounding box spans along spatial dim ``i`` (innermost first)."""
        return self.global_dims[i + 1] + self.upper_corner[i] - self.lower_corner[i]

    def validate(self) -> Im2colDescriptor:
        """Raise :class:`TmaError` for the first rule this descriptor breaks; return ``self`` otherwise."""
        self._check_types()
        r = self.rank
        if not 3 <= r <= 5:
            raise TmaError(f"an im2col TMA tensor has rank 3, 4 or 5 ((C, W[, H[, D]], N)), got rank {r} "
                           f"(dims {list(self.global_dims)})")
        for name, want in (("global_strides", r - 1), ("lower_corner", r - 2), ("upper_corner", r - 2),
                           ("element_strides", r)):
            if len(getattr(self, name)) != want:
                raise TmaError(f"{name} must have {want} entries for rank {r}, got {list(getattr(self, name))}")
        check_global_address(self.global_address, self.address_alignment)
        for i, d in enumerate(self.global_dims):
            if not 1 <= d <= 1 << 32:
                raise TmaError(f"global dim {i} is {d}; TMA global dims must be in 1..2^32")
        for i, s in enumerate(self.global_strides, start=1):
            if s % 16:
                raise TmaError(f"global stride {i} is {s} bytes; TMA global strides must be multiples of 16 bytes")
            if not 0 < s < 1 << 40:
                raise TmaError(f"global stride {i} is {s} bytes; TMA global strides must be in (0, 2^40)")
        lo, hi = CORNER_RANGE[r]
        for name in ("lower_corner", "upper_corner"):
            for i, v in enumerate(getattr(self, name)):
                if not lo <= v <= hi:
                    raise TmaError(f"{name}[{i}] is {v}; a rank-{r} im2col bounding-box corner must be in "
                                   f"[{lo}, {hi}]")
        for i in range(self.spatial_rank):
            if self.box_extent(i) < 1:
                raise TmaError(
                    f"the bounding box along spatial dim {i} is empty: dim {self.global_dims[i + 1]} + upper corner "
                    f"{self.upper_corner[i]} - lower corner {self.lower_corner[i]} = {self.box_extent(i)} (the "
                    f"bounding box must have a non-zero area)")
        c = self.channels_per_pixel
        if not 1 <= c <= MAX_CHANNELS_PER_PIXEL:
            raise TmaError(f"channels_per_pixel is {c}; it must be in 1..{MAX_CHANNELS_PER_PIXEL}")
        if (c * self.dtype.width) % 128:
            raise TmaError(f"channels_per_pixel {c} x {self.dtype.width} bits = {c * self.dtype.width / 8:g} bytes; "
                           f"the box's inner dimension must be a multiple of 16 bytes")
        p = self.pixels_per_column
        if not 1 <= p <= MAX_PIXELS_PER_COLUMN:
            raise TmaError(f"pixels_per_column is {p}; it must be in 1..{MAX_PIXELS_PER_COLUMN}")
        for i, e in enumerate(self.element_strides):
            if not 1 <= e <= 8:
                raise TmaError(f"element stride {i} is {e}; TMA element strides must be in 1..8")
        if self.element_strides[0] != 1:
            raise TmaError(f"element stride 0 (channels) is {self.element_strides[0]}; the hardware ignores it "
                           f"without interleave, so it must be 1")
        if self.swizzle is not TmaSwizzle.NONE and self.row_bytes != self.swizzle.span:
            raise TmaError(
                f"the box's inner dimension is channels_per_pixel {c} x {self.dtype.width // 8} bytes = "
                f"{self.row_bytes} bytes; with the {self.swizzle.name} swizzle it must fill the "
                f"{self.swizzle.span}-byte span exactly (wider is rejected by the driver, narrower faults)")
        return self

    def _check_types(self):
        if not isinstance(self.dtype, DType):
            raise TmaError(f"the descriptor's dtype must be a cute_py element type, got {self.dtype!r}")
        for name in ("global_dims", "global_strides", "lower_corner", "upper_corner", "element_strides"):
            v = getattr(self, name)
            if type(v) not in (tuple, list) or not all(type(x) is int for x in v):
                raise TmaError(f"{name} must be a tuple of static ints, got {v!r}")
        for name in ("channels_per_pixel", "pixels_per_column", "address_alignment"):
            if type(getattr(self, name)) is not int:
                raise TmaError(f"{name} must be an int, got {getattr(self, name)!r}")
        if not (self.global_address is None or type(self.global_address) is int):
            raise TmaError(f"global_address must be an int, got {self.global_address!r}")
        if self.address_alignment <= 0:
            raise TmaError(f"address_alignment must be positive, got {self.address_alignment}")
        for name, kind in (("swizzle", TmaSwizzle), ("l2_promotion", TmaL2Promotion), ("oob_fill", TmaOobFill)):
            if not isinstance(getattr(self, name), kind):
                raise TmaError(f"{name} must be a {kind.__name__}, got {getattr(self, name)!r}")

    def encode(self, address: int | None = None) -> bytes:
        """The 128-byte ``CUtensorMap`` (bytes) from the driver, for the gmem ``address`` (device pointer)."""
        return encode_im2col(self.validate(), self.global_address if address is None else address)


# -- the atom and its instructions -------------------------------------------------------------------------


def _positive(name, v, minimum=1):
    i = None if isinstance(v, bool) or type(v).__name__ == "bool_" else index_or_none(v)
    if i is None:
        raise CuteTypeError(f"{name} must be an int, got {v!r}")
    v = i
    if v < minimum:
        raise CuteValueError(f"{name} must be >= {minimum}, got {v}")
    return v


@dataclasses.dataclass(frozen=True)
class Conv2dGeometry:
    """A conv2d's input extents (NHWC) and its square ``kernel``, ``stride``, ``dilation`` and ``pad``."""

    n: int
    h: int
    w: int
    c: int
    kernel: int
    stride: int = 1
    dilation: int = 1
    pad: int = 0

    def __post_init__(self):
        for name in ("n", "h", "w", "c", "kernel", "stride", "dilation"):
            object.__setattr__(self, name, _positive(name, getattr(self, name)))
        object.__setattr__(self, "pad", _positive("pad", self.pad, 0))
        if self.oh < 1 or self.ow < 1:
            raise CuteValueError(
                f"the dilated kernel spans {self.footprint} pixels, more than the padded image "
                f"({self.h}+2*{self.pad}) x ({self.w}+2*{self.pad}): the convolution has no output pixel")

    @property
    def footprint(self) -> int:
        """The extent of the dilated kernel: ``D*(K-1) + 1``."""
        return self.dilation * (self.kernel - 1) + 1

    @property
    def oh(self) -> int:
        return (self.h + 2 * self.pad - self.footprint) // self.stride + 1

    @property
    def ow(self) -> int:
        return (self.w + 2 * self.pad - self.footprint) // self.stride + 1

    @property
    def gemm_m(self) -> int:
        """Rows of the im2col matrix: ``N*OH*OW``."""
        return self.n * self.oh * self.ow

    @property
    def gemm_k(self) -> int:
        """Columns of the im2col matrix: ``KH*KW*C``."""
        return self.kernel * self.kernel * self.c

    def conv_params(self) -> tuple[int, int, int, int]:
        return (self.kernel, self.stride, self.dilation, self.pad)


class Im2colCopyAtom(TmaCopyAtom):
    """An im2col TMA atom: its :class:`Im2colDescriptor`, the convolution, and the ``(block_M, block_K)`` tile."""

    __slots__ = ("conv", "block_m", "block_k")

    def __init__(self, dtype: Any, descriptor: Im2colDescriptor, smem_layout: Any, conv: Conv2dGeometry,
                 block_m: int, block_k: int) -> None:
        super().__init__(CopyBulkTensorIm2colG2SOp(), dtype, descriptor.box_bytes * 8, descriptor, None, None,
                         smem_layout, 1)
        for name, v in (("conv", conv), ("block_m", block_m), ("block_k", block_k)):
            object.__setattr__(self, name, v)

    def get_tma_tensor(self, shape: Any) -> Tensor:
        raise CuteTypeError("an im2col TMA atom has no coordinate tensor: issue its loads with c2d_im2col")

    @property
    def tile_bytes(self) -> int:
        """Bytes one tile (one instruction) moves."""
        return self.descriptor.box_bytes

    @property
    def num_m_tiles(self) -> int:
        return -(-self.conv.gemm_m // self.block_m)

    @property
    def num_k_tiles(self) -> int:
        return self.conv.gemm_k // self.block_k

    def __repr__(self):
        g = self.conv
        return (f"Im2colCopyAtom({self.dtype.name}, NHWC=({g.n}, {g.h}, {g.w}, {g.c}), kernel={g.kernel}, "
                f"stride={g.stride}, dilation={g.dilation}, pad={g.pad}, tile=({self.block_m}, {self.block_k}), "
                f"swizzle={self.descriptor.swizzle.name})")


def _static(name, v):
    if type(v) is not int:
        raise TmaError(f"an im2col TMA descriptor is built from static extents and strides; {name} is {v!r}")
    return v


def make_im2col_tma_atom(img: Tensor, col_layout: Any, kernel: int, stride: int = 1, dilation: int = 1,
                         pad: int = 0) -> Im2colCopyAtom:
    """The im2col TMA atom loading ``(block_M, block_K)`` tiles of the conv2d's im2col matrix of ``img``.

    ``img`` is an NHWC gmem tensor (static extents, channels contiguous, 16-byte-multiple strides);
    ``col_layout`` the shared tile, the row-major ``(block_M, block_K)`` layout, optionally swizzled
    (the TMA swizzle whose span is one row of ``block_K`` elements). ``block_K`` must divide ``C`` (a tile
    is one filter tap) and ``block_M`` be at most 1024 (pixels per instruction). Every rule of the
    descriptor is checked here (:meth:`Im2colDescriptor.validate`), raising :class:`TmaError`.
    """
    if not isinstance(img, Tensor) or not isinstance(img.engine, Pointer):
        raise CuteTypeError(f"make_im2col_tma_atom needs an NHWC gmem tensor (over a Pointer), got {img!r}")
    ptr = img.engine
    if ptr.memspace not in (AddressSpace.gmem, AddressSpace.generic):
        raise CuteValueError(f"the im2col TMA source must be in global memory, not {ptr.memspace.name}")
    shape, stride_ = img.layout.shape, img.layout.stride
    if type(shape) is not tuple or len(shape) != 4 or any(type(s) is tuple for s in shape):
        raise TmaError(f"c2d im2col needs a rank-4 NHWC tensor (N, H, W, C), got the layout {img.layout}")
    n, h, w, c = (_static(f"extent {i}", s) for i, s in enumerate(shape))
    s_n, s_h, s_w, s_c = (_static(f"stride {i}", s) for i, s in enumerate(stride_))
    if s_c != 1:
        raise TmaError(f"the channels of an NHWC tensor must be contiguous (stride 1), got the layout {img.layout}")
    conv = Conv2dGeometry(n, h, w, c, kernel, stride, dilation, pad)
    if type(col_layout) is not Layout and not hasattr(col_layout, "__cute_map_outer__"):
        raise CuteTypeError(f"col_layout must be a layout, got {col_layout!r}")
    block_m, block_k = _tile_shape(col_layout)
    dtype = ptr.dtype
    swizzle = tma_swizzle_of(col_layout, dtype)
    if c % block_k:
        raise TmaError(f"block_K = {block_k} must divide the {c} channels: one im2col instruction loads one filter "
                       f"tap's channels, so a K tile must not straddle two taps")
    if block_m > MAX_PIXELS_PER_COLUMN:
        raise TmaError(f"block_M = {block_m} pixels; one im2col instruction loads at most {MAX_PIXELS_PER_COLUMN}")
    eb = dtype.width // 8
    footprint, stride, pad = conv.footprint, conv.stride, conv.pad   # ints (integer-likes converted)
    desc = Im2colDescriptor(
        dtype=dtype,
        global_dims=(c, w, h, n),
        global_strides=(s_w * eb, s_h * eb, s_n * eb),
        lower_corner=(-pad, -pad),
        upper_corner=(pad - (footprint - 1), pad - (footprint - 1)),
        channels_per_pixel=block_k,
        pixels_per_column=block_m,
        element_strides=(1, stride, stride, 1),
        swizzle=swizzle,
        global_address=ptr.address + ptr.byte_offset() if ptr.address is not None else None,
        address_alignment=ptr.alignment,
    ).validate()
    return Im2colCopyAtom(dtype, desc, col_layout, conv, block_m, block_k)


def _tile_shape(col_layout):
    # the nonswizzle part, each mode coalesced, must be the row-major (block_M, block_K):(block_K, 1)
    core = get_nonswizzle_portion(col_layout)
    if type(core.shape) is not tuple or len(core.shape) != 2:
        raise TmaError(f"the col tile must be a (block_M, block_K) layout, got {col_layout}")
    flat = coalesce(core, (1, 1))
    shape, st = flat.shape, flat.stride
    if not all(type(x) is int for x in shape + st):
        raise TmaError(f"the col tile must be the static row-major (block_M, block_K) layout, got {col_layout}")
    bm, bk = shape
    if not ((bk == 1 or st[1] == 1) and (bm == 1 or st[0] == bk)):
        raise TmaError(f"the col tile must be the row-major (block_M, block_K) layout ({bm}, {bk}):({bk}, 1) (a "
                       f"pixel's channels contiguous, pixels one after another), got {col_layout}")
    return bm, bk


def im2col_instruction(atom: Im2colCopyAtom, nhw_step: Any, c_step: Any) -> tuple[tuple, tuple]:
    """``(coords, offsets)`` of the instruction loading tile ``(nhw_step, c_step)``: ``coords = (c, w, h, n)``
    (the first pixel, ``w = ow*S - P``, ``h = oh*S - P``), ``offsets = (kw*D, kh*D)``. Works on ints and on traced
    integers (the same arithmetic); static steps are range-checked."""
    g = atom.conv
    for name, v, bound in (("nhw_step", nhw_step, atom.num_m_tiles), ("c_step", c_step, atom.num_k_tiles)):
        if type(v) is int and not 0 <= v < bound:
            raise CuteValueError(f"{name} = {v} is outside the {bound} tiles of the im2col matrix "
                                 f"({g.gemm_m} x {g.gemm_k} in ({atom.block_m}, {atom.block_k}) tiles)")
    m0 = nhw_step * atom.block_m
    n = m0 // (g.oh * g.ow)
    r = m0 % (g.oh * g.ow)
    oh, ow = r // g.ow, r % g.ow
    k0 = c_step * atom.block_k
    tap, c = k0 // g.c, k0 % g.c
    kh, kw = tap // g.kernel, tap % g.kernel
    coords = (c, ow * g.stride - g.pad, oh * g.stride - g.pad, n)
    return coords, (kw * g.dilation, kh * g.dilation)


def tma_load_im2col(tma_desc: Any, mbar: Any, smem_ptr: Any, crd: tuple, offsets: tuple,
                    cache_hint: Any = None) -> None:
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.im2col.mbarrier::complete_tx::bytes``: ``crd`` has 3-5
    entries, ``offsets`` one fewer than two less (16-bit each); completes the box's bytes on ``mbar``."""
    crd = tuple(crd) if isinstance(crd, (tuple, list)) else (crd,)
    offsets = tuple(offsets) if isinstance(offsets, (tuple, list)) else (offsets,)
    if not 3 <= len(crd) <= 5:
        raise CuteValueError(f"an im2col TMA load takes 3 to 5 coordinates, got {len(crd)}")
    if len(offsets) != len(crd) - 2:
        raise CuteValueError(f"an im2col TMA load of {len(crd)} coordinates takes {len(crd) - 2} im2col offsets, "
                             f"got {len(offsets)}")
    for o in offsets:
        if type(o) is int and not 0 <= o < 1 << 16:
            raise CuteValueError(f"im2col offsets are 16-bit unsigned values, got {o}")
    for name, p, spaces in (("smem_ptr", smem_ptr, (AddressSpace.smem,)), ("mbar", mbar, (AddressSpace.smem,))):
        if isinstance(p, Pointer) and p.memspace not in spaces:
            raise CuteValueError(f"{name} must point to shared memory, got a {p.memspace.name} pointer")
    tracer = device.active()
    if tracer is None:
        raise DeviceOnlyError("tma_load_im2col is a device operation: call it inside a kernel (@cute_py.kernel)")
    return tracer.emit(CopyBulkTensorIm2colG2SOp(), desc=tma_desc, mbar=mbar, smem=smem_ptr, crd=crd,
                       offsets=offsets, cache_hint=cache_hint)
