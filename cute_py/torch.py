"""``cute_py.torch``: torch interop under the CuTe DSL's ``cutlass.torch`` names — the torch dtype of an element
type and torch's CUDA streams as driver streams.  Imports torch on first use."""

from __future__ import annotations

from typing import Any

from .errors import CuteTypeError
from .tensor.dtypes import DType, dtype_of

__all__ = ["dtype", "current_stream", "default_stream"]

# element type name -> torch attribute
_TORCH = {"Float16": "float16", "BFloat16": "bfloat16", "Float32": "float32", "TFloat32": "float32",
          "Float64": "float64", "Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int64",
          "Uint8": "uint8", "Uint16": "uint16", "Uint32": "uint32", "Uint64": "uint64", "Boolean": "bool",
          "Float8E4M3FN": "float8_e4m3fn", "Float8E5M2": "float8_e5m2"}


def dtype(ty: DType | Any) -> Any:
    """The ``torch.dtype`` that holds elements of ``ty`` (``TFloat32`` is stored as ``torch.float32``);
    ``CuteTypeError`` when torch has none."""
    import torch

    dt = dtype_of(ty)
    name = _TORCH.get(dt.name)
    if name is None or not hasattr(torch, name):
        raise CuteTypeError(f"torch has no dtype for {dt.name}")
    return getattr(torch, name)


def _stream(s):
    from cuda.bindings import driver as cu

    return cu.CUstream(s.cuda_stream)


def current_stream() -> Any:
    """torch's current CUDA stream (of the current device) as a driver ``CUstream``."""
    import torch

    return _stream(torch.cuda.current_stream())


def default_stream() -> Any:
    """torch's default CUDA stream (of the current device) as a driver ``CUstream``."""
    import torch

    return _stream(torch.cuda.default_stream())
