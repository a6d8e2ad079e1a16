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
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .. import device
from ..core.composed import get_nonswizzle_portion
from ..core.coalescing import coalesce
from ..core.normalise import index_or_none
from ..core.layout import Layout
from ..errors import CuteTypeError, CuteValueError, DeviceOnlyError, TmaError
from ..tensor.pointer import AddressSpace, Pointer
from ..tensor.tensor import Tensor
from .copy_ops import CopyBulkTensorIm2colG2SOp
from .cpasync import TmaCopyAtom
from .tma import tma_swizzle_of
from .tma_im2col import MAX_PIXELS_PER_COLUMN, Im2colDescriptor

__all__ = ["Conv2dGeometry", "Im2colCopyAtom", "make_im2col_tma_atom", "im2col_instruction", "tma_load_im2col",
           "CopyBulkTensorIm2colG2SOp", "Im2colDescriptor"]


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
