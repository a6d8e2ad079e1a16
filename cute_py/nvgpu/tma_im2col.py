"""Im2col TMA descriptors: the spec ``cuTensorMapEncodeIm2col`` takes, validated against every rule the
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
the rule and values, ``encode()`` calls the driver through cuda-python (:mod:`cute_py.nvgpu.encode`).
The corner and offset arrays are in the order the driver takes them: innermost spatial dim first
(``(w, h)`` for a rank-4 NHWC tensor).
"""

from __future__ import annotations

import dataclasses

from ..errors import TmaError
from ..tensor.dtypes import DType
from .tma import TmaL2Promotion, TmaOobFill, TmaSwizzle, check_global_address

__all__ = ["Im2colDescriptor", "CORNER_RANGE", "MAX_CHANNELS_PER_PIXEL", "MAX_PIXELS_PER_COLUMN"]

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
        from .encode import encode_im2col

        return encode_im2col(self.validate(), self.global_address if address is None else address)
