"""``cute_py.torch``: torch interop under the CuTe DSL's ``cutlass.torch`` names — the torch dtype of an element
type, torch's CUDA streams as driver streams, and the helpers the DSL's examples make their test data with
(``create_and_permute_torch_tensor``, ``matrix``, ``cute_tensor_like``, ``convert_cute_tensor``).  Imports torch
on first use."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from .errors import CuteTypeError, CuteValueError
from .tensor.dtypes import DType, dtype_of

__all__ = ["dtype", "current_stream", "default_stream", "TensorInitType", "ScalarInitConfig", "RandomInitConfig",
           "GaussianInitConfig", "create_and_permute_torch_tensor", "get_leading_dim", "convert_cute_tensor",
           "matrix", "cute_tensor_like"]

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


@dataclasses.dataclass
class ScalarInitConfig:
    """Every element ``value``."""
    value: float = 0.0


@dataclasses.dataclass
class RandomInitConfig:
    """Uniform random integers in ``[min_val, max_val)`` (exact in every element type)."""
    min_val: int = -2
    max_val: int = 2


@dataclasses.dataclass
class GaussianInitConfig:
    """Normal samples of ``mean`` and ``std``, times ``scale``."""
    mean: float = 0.0
    std: float = 1.0
    scale: float = 1.0


class TensorInitType(enum.Enum):
    """How :func:`create_and_permute_torch_tensor` fills a tensor (``SKIP``: not at all)."""
    SKIP = "skip"
    SCALAR = "scalar"
    RANDOM = "random"
    GAUSSIAN = "gaussian"


_CONFIG = {TensorInitType.SCALAR: ScalarInitConfig, TensorInitType.RANDOM: RandomInitConfig,
           TensorInitType.GAUSSIAN: GaussianInitConfig}


def create_and_permute_torch_tensor(shape: Any, dtype: Any, permute_order: Any = None,
                                    init_type: TensorInitType = TensorInitType.RANDOM, init_config: Any = None,
                                    device: Any = None) -> Any:
    """A torch tensor of ``shape`` filled as ``init_type`` and ``init_config`` say (the values are made in fp32,
    random integers in int32), then permuted by ``permute_order`` (a view: the strides follow) and converted to
    ``dtype`` on ``device`` (default: torch's default device). ``CuteValueError`` for a config of another kind
    (``SKIP`` takes none)."""
    import torch

    if not isinstance(init_type, TensorInitType):
        raise CuteValueError(f"init_type is a TensorInitType, got {init_type!r}")
    want = _CONFIG.get(init_type)
    if init_config is None and want is not None:
        init_config = want()
    if init_config is not None and (want is None or not isinstance(init_config, want)):
        raise CuteValueError(f"init_type {init_type.name} takes "
                             f"{'no init_config' if want is None else want.__name__ + '()'}, got {init_config!r}")
    shape = tuple(shape)
    if init_type is TensorInitType.RANDOM:
        t = torch.empty(*shape, dtype=torch.int32, device=device)
        t = t.random_(init_config.min_val, init_config.max_val).to(torch.float32)
    else:
        t = torch.empty(*shape, dtype=torch.float32, device=device)
        if init_type is TensorInitType.SCALAR:
            t.fill_(init_config.value)
        elif init_type is TensorInitType.GAUSSIAN:
            t = t.normal_(init_config.mean, init_config.std) * init_config.scale
    if permute_order is not None:
        t = t.permute(tuple(permute_order))
    return t.to(dtype=dtype)


def get_leading_dim(torch_tensor: Any) -> int | None:
    """The first mode of ``torch_tensor`` with stride 1 (``None`` if there is none)."""
    for i, s in enumerate(torch_tensor.stride()):
        if s == 1:
            return i
    return None


_NARROW = ("Float8E4M3FN", "Float8E5M2")


def convert_cute_tensor(f32_torch_tensor: Any, cute_tensor: Any, dtype: Any, is_dynamic_layout: bool = True) -> Any:
    """Fill ``cute_tensor`` (a tensor of ``from_dlpack`` over byte storage whose ``element_type`` was set to a
    float8 type) with ``f32_torch_tensor`` converted to ``dtype``; other element types need no conversion (the
    storage already holds them) and are returned as they are. Returns ``cute_tensor``."""
    import torch

    dt = dtype_of(dtype)
    if dt.name not in _NARROW:
        return cute_tensor
    storage = getattr(getattr(cute_tensor.engine, "owner", None), "array", None)
    if not isinstance(storage, torch.Tensor):
        raise CuteTypeError(f"convert_cute_tensor fills a tensor of from_dlpack over a torch tensor, got {cute_tensor!r}")
    if tuple(storage.shape) != tuple(f32_torch_tensor.shape):
        raise CuteValueError(f"convert_cute_tensor: the source's shape {tuple(f32_torch_tensor.shape)} is not the "
                             f"storage's {tuple(storage.shape)}")
    storage.view(getattr(torch, _TORCH[dt.name])).copy_(f32_torch_tensor.to(storage.device, torch.float32))
    return cute_tensor


def matrix(l: int, mode0: int, mode1: int, is_mode0_major: bool, cutlass_dtype: Any,
           init_type: TensorInitType = TensorInitType.RANDOM, init_config: Any = None, device: Any = None) -> Any:
    """A ``(mode0, mode1, l)`` torch tensor, ``mode0`` or ``mode1`` of stride 1 (``is_mode0_major``), of
    ``cutlass_dtype``'s torch type (8-bit floats as ``int8``); random integers in ``[-2, 2)`` (``[0, 4)`` for
    unsigned types) unless ``init_config`` says otherwise."""
    import torch

    dt = dtype_of(cutlass_dtype)
    tdt = torch.int8 if dt.kind == "float" and dt.width <= 8 else dtype(dt)
    if init_type is TensorInitType.RANDOM and init_config is None:
        signed = tdt.is_floating_point or tdt.is_signed
        init_config = RandomInitConfig(-2, 2) if signed else RandomInitConfig(0, 4)
    shape = (l, mode1, mode0) if is_mode0_major else (l, mode0, mode1)
    order = (2, 1, 0) if is_mode0_major else (1, 2, 0)
    return create_and_permute_torch_tensor(shape, tdt, order, init_type, init_config, device)


def cute_tensor_like(data_ref: Any, cutlass_dtype: Any, is_dynamic_layout: bool,
                     assumed_align: int | None = None) -> tuple[Any, Any]:
    """``(cute tensor, torch tensor)``: a new CUDA torch tensor shaped and strided as ``data_ref`` holding its
    values in ``cutlass_dtype`` (float8 types in byte storage, converted), and the tensor of ``from_dlpack`` over it
    with that element type, its layout marked dynamic (leading dimension kept) when ``is_dynamic_layout``."""
    import torch

    from .tensor.dlpack import from_dlpack

    dt = dtype_of(cutlass_dtype)
    narrow = dt.name in _NARROW
    storage = torch.empty_like(data_ref, dtype=torch.uint8 if narrow else dtype(dt), device="cuda")
    t = from_dlpack(storage, assumed_align=assumed_align)
    t.element_type = dt
    if is_dynamic_layout:
        t = t.mark_layout_dynamic(leading_dim=get_leading_dim(storage))
    if narrow:
        if storage.numel():
            convert_cute_tensor(data_ref.to(torch.float32), t, dt, is_dynamic_layout)
        storage = storage.view(dtype(dt))
    else:
        storage.copy_(data_ref.to(storage.dtype))
    return t, storage
