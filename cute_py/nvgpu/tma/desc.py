"""TMA descriptors: the spec ``cuTensorMapEncodeTiled`` takes, validated against every hardware rule before it
reaches the driver.

The :class:`TmaDescriptor` is pure data (element type, dims, byte strides, box, element
strides, interleave, swizzle, L2 promotion, OOB fill, and whether TMA stores or reductions use
it); ``validate()`` raises a :class:`TmaError` naming the rule and values, ``encode()`` calls
``cuTensorMapEncodeTiled`` through cuda-python (:func:`encode_tiled`; :func:`encode_im2col` encodes an im2col
descriptor). The driver is imported only when a descriptor is encoded, and needs cuda-python and a CUDA driver.
How a box is derived from layouts is in :mod:`cute_py.nvgpu.tma.box`.
"""

from __future__ import annotations

import dataclasses
import enum
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ...core.composed import get_swizzle_portion, smem_byte_swizzle
from ...core.int_tuple import product
from ...core.symbolic import SymInt
from ...errors import CuteValueError, DriverUnavailable, TmaEncodeError, TmaError
from ...tensor.dtypes import DType

if TYPE_CHECKING:
    from ...core.composed import ComposedLayout
    from ...core.layout import Layout

__all__ = [
    "TmaError",
    "TmaSwizzle",
    "TmaInterleave",
    "TmaL2Promotion",
    "TmaOobFill",
    "TmaDescriptor",
    "tma_swizzle_of",
    "BYTES_PER_TENSORMAP",
    "TENSORMAP_ALIGNMENT",
    "encode_tiled",
    "encode_im2col",
    "encode_enums",
    "tiled_strides",
    "driver_module",
    "DriverUnavailable",
    "TmaEncodeError",
]

BYTES_PER_TENSORMAP = 128
TENSORMAP_ALIGNMENT = 64


class TmaSwizzle(enum.Enum):
    """Shared-memory swizzle modes of a descriptor (CUtensorMapSwizzle), with their span in bytes."""

    NONE = 0
    B32 = 1
    B64 = 2
    B128 = 3

    @property
    def span(self) -> int:
        """The swizzle span in bytes (16 for NONE: the interleave granule)."""
        return 16 << self.value

    @property
    def smem_alignment(self) -> int:
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


def check_global_address(address: int | None, alignment: int) -> None:
    """A descriptor's global address is 16-byte aligned: the address when known, else its known alignment."""
    if address is not None and address % 16:
        raise TmaError(f"the global address {address:#x} must be 16-byte aligned")
    if alignment % 16:
        raise TmaError(f"the global address must be 16-byte aligned, but only {alignment}-byte alignment is known "
                       f"(assumed_align)")


def tma_swizzle_of(smem_layout: Layout | ComposedLayout, dtype: DType) -> TmaSwizzle:
    """The descriptor swizzle mode of a (possibly swizzled) smem layout of ``dtype`` elements.

    The swizzle on byte addresses is the layout's own when it is flagged (``smem_ptr``), else the reading of
    an unflagged swizzle (elements or bytes) that is a hardware one (see :func:`cute_py.core.composed.smem_byte_swizzle`);
    only ``S<0..3,4,3>`` (none, 32B, 64B, 128B) are TMA swizzles.
    """
    try:
        byte_sw = smem_byte_swizzle(smem_layout, dtype.width)
    except CuteValueError as e:
        raise TmaError(f"the smem layout {smem_layout} has no TMA swizzle for {dtype.name} elements: {e}") from None
    if byte_sw.bits == 0:
        return TmaSwizzle.NONE
    if byte_sw.base != 4 or byte_sw.shift != 3 or not 0 <= byte_sw.bits <= 3:
        sw = get_swizzle_portion(smem_layout)
        raise TmaError(
            f"the smem swizzle {sw} is {byte_sw} on the byte addresses of {dtype.name} elements (and {sw} read as a "
            f"byte swizzle is no TMA swizzle either); TMA supports only S<1,4,3> (32B), S<2,4,3> (64B) and "
            f"S<3,4,3> (128B)"
        )
    return TmaSwizzle(byte_sw.bits)


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
    global_address: int | None = None
    address_alignment: int = 16
    store: bool = False  # used by TMA stores or reductions, which write whole 16-byte granules

    @property
    def rank(self) -> int:
        return len(self.global_dims)

    @property
    def is_dynamic(self) -> bool:
        """Whether a global dim or stride is a run-time value (bound at each call of the compiled function)."""
        return any(type(v) is not int for v in self.global_dims + self.global_strides)

    def bind(self, env: dict[str, int]) -> TmaDescriptor:
        """This descriptor with its run-time dims and strides evaluated for the leaf values ``env``, validated
        with every rule of :meth:`validate` (``TmaError`` naming the rule and the values of this call)."""
        def ev(v):
            return v if type(v) is int else v.evaluate(env)

        bound = dataclasses.replace(self, global_dims=tuple(ev(v) for v in self.global_dims),
                                    global_strides=tuple(ev(v) for v in self.global_strides))
        try:
            return bound.validate()
        except TmaError as e:
            exprs = ", ".join(f"{v.describe()} = {ev(v)}" for v in self.global_dims + self.global_strides
                              if type(v) is not int)
            raise TmaError(f"for the extents and strides of this call ({exprs}): {e}") from None

    @property
    def box_bytes(self) -> int:
        """Bytes one TMA instruction moves (the box)."""
        return product(tuple(self.box_dims)) * self.dtype.width // 8

    @property
    def smem_alignment(self) -> int:
        """The shared-memory alignment the destination/source tile needs."""
        return self.swizzle.smem_alignment

    def validate(self) -> TmaDescriptor:
        """Raise :class:`TmaError` for the first rule this descriptor breaks; return ``self`` otherwise."""
        self._check_types()
        r = self.rank
        if not 1 <= r <= 5:
            raise TmaError(f"TMA rank must be 1..5, got {r} (dims {list(self.global_dims)})")
        for name, v in (("global_strides", self.global_strides), ("box_dims", self.box_dims),
                        ("element_strides", self.element_strides)):
            want = r - 1 if name == "global_strides" else r
            if len(v) != want:
                raise TmaError(f"{name} must have {want} entries for rank {r}, got {list(v)}")
        check_global_address(self.global_address, self.address_alignment)
        for i, d in enumerate(self.global_dims):
            if type(d) is not int:  # a run-time dim: checked when bound (see bind)
                continue
            if not 1 <= d <= 1 << 32:
                raise TmaError(f"global dim {i} is {d}; TMA global dims must be in 1..2^32")
        for i, s in enumerate(self.global_strides, start=1):
            if type(s) is not int:  # a run-time stride: checked when bound (see bind)
                continue
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
        if self.swizzle is not TmaSwizzle.NONE and inner < self.swizzle.span:
            # the driver encodes it, but the copy faults (illegal address; seen on an H100, 2026-11-23)
            raise TmaError(
                f"the inner box dim is {inner} bytes, narrower than the {self.swizzle.span}-byte span of the "
                f"{self.swizzle.name} swizzle: a swizzled box must fill the span (use the swizzle whose span is the "
                f"tile's contiguous row, or none)"
            )
        for i, e in enumerate(self.element_strides):
            if not 1 <= e <= 8:
                raise TmaError(f"element stride {i} is {e}; TMA element strides must be in 1..8")
        row_bits = self.global_dims[0] * self.dtype.width
        if type(row_bits) is not int:  # checked when bound
            return self
        if self.store and self.interleave is TmaInterleave.NONE and row_bits % 128:
            raise TmaError(
                f"a TMA store or reduction writes whole 16-byte granules: the contiguous dim has "
                f"{self.global_dims[0]} x {self.dtype.width} bits = {row_bits / 8:g} bytes, not a multiple of 16, so "
                f"every box reaching the end of a row would also write the {16 - row_bits // 8 % 16} bytes after it "
                f"(padding or a neighbour's data); pad the tensor's rows to a multiple of 16 bytes"
            )
        return self

    def _check_types(self):
        if not isinstance(self.dtype, DType):
            raise TmaError(f"the descriptor's dtype must be a cute_py element type, got {self.dtype!r}")
        for name in ("global_dims", "global_strides", "box_dims", "element_strides"):
            v = getattr(self, name)
            ok = (int, SymInt) if name in ("global_dims", "global_strides") else (int,)
            if type(v) not in (tuple, list) or not all(type(x) in ok for x in v):
                raise TmaError(f"{name} must be a tuple of ints, got {v!r}")
        for name, kind in (("swizzle", TmaSwizzle), ("interleave", TmaInterleave),
                           ("l2_promotion", TmaL2Promotion), ("oob_fill", TmaOobFill)):
            if not isinstance(getattr(self, name), kind):
                raise TmaError(f"{name} must be a {kind.__name__}, got {getattr(self, name)!r}")
        for name in ("global_address", "address_alignment"):
            v = getattr(self, name)
            if not (type(v) is int or (v is None and name == "global_address")):
                raise TmaError(f"{name} must be an int, got {v!r}")
        if self.address_alignment <= 0:
            raise TmaError(f"address_alignment must be positive, got {self.address_alignment}")
        if type(self.store) is not bool:
            raise TmaError(f"store must be a bool, got {self.store!r}")

    def encode(self, address: int | None = None) -> bytes:
        """The 128-byte ``CUtensorMap`` (bytes) from the driver, for the gmem ``address`` (device pointer)."""
        return encode_tiled(self.validate(), self.global_address if address is None else address)


# -- encoding with the CUDA driver (cuda-python) ----------------------------------------------------------

# CUtensorMapDataType values by element type name
_DATA_TYPE = {
    "Boolean": "UINT8", "Uint8": "UINT8", "Int8": "UINT8", "Float8E4M3FN": "UINT8", "Float8E5M2": "UINT8",
    "Uint16": "UINT16", "Int16": "UINT16",
    "Uint32": "UINT32", "Int32": "INT32", "Uint64": "UINT64", "Int64": "INT64",
    "Float16": "FLOAT16", "BFloat16": "BFLOAT16", "Float32": "FLOAT32", "TFloat32": "TFLOAT32",
    "Float64": "FLOAT64",
}


def driver_module() -> ModuleType:
    """cuda-python's driver bindings (``cuda.bindings.driver`` or the older ``cuda.cuda``)."""
    import importlib

    for name in ("cuda.bindings.driver", "cuda.cuda"):  # cuda-python 12.x+ and its older layout
        try:
            return importlib.import_module(name)
        except ImportError as e:
            error = e
    raise DriverUnavailable(f"encoding a TMA descriptor needs cuda-python ({error})")


def _check(driver, result, what, error=DriverUnavailable):
    if result != driver.CUresult.CUDA_SUCCESS:
        name = driver.cuGetErrorName(result)[1]
        raise error(f"{what} failed: {name.decode() if isinstance(name, bytes) else name}")


def encode_enums(driver: ModuleType, desc: Any) -> tuple[Any, Any, Any, Any, Any]:
    """The driver's enum values of ``desc`` for ``cuTensorMapEncodeTiled``: ``(data type, interleave, swizzle, L2
    promotion, OOB fill)`` (an im2col descriptor has no interleave: NONE)."""
    dt = getattr(driver.CUtensorMapDataType, "CU_TENSOR_MAP_DATA_TYPE_" + _DATA_TYPE[desc.dtype.name])
    interleave = getattr(desc, "interleave", None)
    il = getattr(driver.CUtensorMapInterleave, "CU_TENSOR_MAP_INTERLEAVE_" + (
        "NONE" if interleave is None or interleave.value == 0 else interleave.name[1:] + "B"))
    sw = getattr(driver.CUtensorMapSwizzle, "CU_TENSOR_MAP_SWIZZLE_" + ("NONE" if desc.swizzle.value == 0 else f"{desc.swizzle.span}B"))
    l2 = getattr(driver.CUtensorMapL2promotion, "CU_TENSOR_MAP_L2_PROMOTION_" + ("NONE" if desc.l2_promotion.value == 0 else "L2_" + desc.l2_promotion.name[1:] + "B"))
    oob = getattr(driver.CUtensorMapFloatOOBfill, "CU_TENSOR_MAP_FLOAT_OOB_FILL_" + desc.oob_fill.name)
    return dt, il, sw, l2, oob


def _prologue(desc, address):
    # the driver module and the enum values shared by the tiled and im2col encoders
    if address is None:
        raise CuteValueError("encoding a TMA descriptor needs the tensor's device address")
    if address % 16:
        raise CuteValueError(f"the global address {address:#x} must be 16-byte aligned")
    driver = driver_module()
    (err,) = driver.cuInit(0)
    _check(driver, err, "cuInit")
    dt, _, sw, l2, oob = encode_enums(driver, desc)
    return driver, dt, sw, l2, oob


def tiled_strides(desc: Any) -> list[int]:
    """The global strides ``cuTensorMapEncodeTiled`` takes for ``desc`` (in bytes): cuda-python passes an empty
    list as a null pointer, which the driver refuses even for rank 1 (where it reads no stride), so a rank-1
    descriptor gets one entry it ignores, the row's byte size rounded up to 16."""
    row_bytes = (desc.global_dims[0] * desc.dtype.width + 7) // 8
    return list(desc.global_strides) or [max(16, (row_bytes + 15) // 16 * 16)]


def _words(tmap):
    return b"".join(int(w).to_bytes(8, "little") for w in tmap.opaque)


def encode_tiled(desc: Any, address: int | None) -> bytes:
    """``cuTensorMapEncodeTiled`` for ``desc`` at device address ``address``; returns 128 bytes."""
    driver, dt, sw, l2, oob = _prologue(desc, address)
    il = encode_enums(driver, desc)[1]
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    strides = tiled_strides(desc)
    err, tmap = driver.cuTensorMapEncodeTiled(
        dt, desc.rank, address,
        [u64(x) for x in desc.global_dims], [u64(x) for x in strides],
        [u32(x) for x in desc.box_dims], [u32(x) for x in desc.element_strides],
        il, sw, l2, oob,
    )
    _check(driver, err, f"cuTensorMapEncodeTiled of {desc}", TmaEncodeError)
    return _words(tmap)


def encode_im2col(desc: Any, address: int | None) -> bytes:
    """``cuTensorMapEncodeIm2col`` for ``desc`` (an :class:`~cute_py.nvgpu.tma.im2col.Im2colDescriptor`) at device
    address ``address``; returns 128 bytes."""
    driver, dt, sw, l2, oob = _prologue(desc, address)
    il = driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    err, tmap = driver.cuTensorMapEncodeIm2col(
        dt, desc.rank, address,
        [u64(x) for x in desc.global_dims], [u64(x) for x in desc.global_strides],
        list(desc.lower_corner), list(desc.upper_corner),
        desc.channels_per_pixel, desc.pixels_per_column,
        [u32(x) for x in desc.element_strides],
        il, sw, l2, oob,
    )
    _check(driver, err, f"cuTensorMapEncodeIm2col of {desc}", TmaEncodeError)
    return _words(tmap)
