"""Encoding a validated :class:`~cute_py.nvgpu.tma.TmaDescriptor` with the CUDA driver (cuda-python).

Imported only when a descriptor is encoded; needs cuda-python and a CUDA driver.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..errors import CuteValueError, DriverUnavailable, TmaEncodeError

__all__ = ["encode_tiled", "encode_im2col", "driver_module", "DriverUnavailable", "TmaEncodeError"]

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


def _prologue(desc, address):
    # the driver module and the enum values shared by the tiled and im2col encoders
    if address is None:
        raise CuteValueError("encoding a TMA descriptor needs the tensor's device address")
    if address % 16:
        raise CuteValueError(f"the global address {address:#x} must be 16-byte aligned")
    driver = driver_module()
    (err,) = driver.cuInit(0)
    _check(driver, err, "cuInit")
    dt = getattr(driver.CUtensorMapDataType, "CU_TENSOR_MAP_DATA_TYPE_" + _DATA_TYPE[desc.dtype.name])
    sw = getattr(driver.CUtensorMapSwizzle, "CU_TENSOR_MAP_SWIZZLE_" + ("NONE" if desc.swizzle.value == 0 else f"{desc.swizzle.span}B"))
    l2 = getattr(driver.CUtensorMapL2promotion, "CU_TENSOR_MAP_L2_PROMOTION_" + ("NONE" if desc.l2_promotion.value == 0 else "L2_" + desc.l2_promotion.name[1:] + "B"))
    oob = getattr(driver.CUtensorMapFloatOOBfill, "CU_TENSOR_MAP_FLOAT_OOB_FILL_" + desc.oob_fill.name)
    return driver, dt, sw, l2, oob


def _words(tmap):
    return b"".join(int(w).to_bytes(8, "little") for w in tmap.opaque)


def encode_tiled(desc: Any, address: int | None) -> bytes:
    """``cuTensorMapEncodeTiled`` for ``desc`` at device address ``address``; returns 128 bytes."""
    driver, dt, sw, l2, oob = _prologue(desc, address)
    il = getattr(driver.CUtensorMapInterleave, "CU_TENSOR_MAP_INTERLEAVE_" + ("NONE" if desc.interleave.value == 0 else desc.interleave.name[1:] + "B"))
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    # cuda-python passes an empty list as a null pointer, which the driver refuses even for rank 1 (where it
    # reads no stride): give it one entry it ignores, the row's byte size rounded up to 16
    row_bytes = (desc.global_dims[0] * desc.dtype.width + 7) // 8
    strides = list(desc.global_strides) or [max(16, (row_bytes + 15) // 16 * 16)]
    err, tmap = driver.cuTensorMapEncodeTiled(
        dt, desc.rank, address,
        [u64(x) for x in desc.global_dims], [u64(x) for x in strides],
        [u32(x) for x in desc.box_dims], [u32(x) for x in desc.element_strides],
        il, sw, l2, oob,
    )
    _check(driver, err, f"cuTensorMapEncodeTiled of {desc}", TmaEncodeError)
    return _words(tmap)


def encode_im2col(desc: Any, address: int | None) -> bytes:
    """``cuTensorMapEncodeIm2col`` for ``desc`` (an :class:`~cute_py.nvgpu.tma_im2col.Im2colDescriptor`) at device
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
