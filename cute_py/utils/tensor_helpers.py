"""``cute_py.utils.tensor_helpers``: test tensors of element types DLPack has no code for (float8), as the DSL's
``cutlass.utils.tensor_helpers`` makes them: byte storage exported through DLPack, the element type set on the
tensor, the values converted from fp32."""

from __future__ import annotations

from typing import Any

from ..errors import CuteValueError
from ..tensor.dtypes import Float8E4M3FN, Float8E5M2, TFloat32, dtype_of

__all__ = ["is_fp8_dtype", "create_cute_tensor_for_fp8"]


def is_fp8_dtype(dtype: Any) -> bool:
    """True for the 8-bit float types (``Float8E4M3FN``, ``Float8E5M2``), which DLPack cannot carry."""
    return dtype_of(dtype) in (Float8E4M3FN, Float8E5M2)


def create_cute_tensor_for_fp8(storage_tensor: Any, dtype: Any, leading_dim: int, source_f32_tensor: Any = None,
                               assumed_align: int = 16, mark_dynamic_layout: bool = True) -> Any:
    """The tensor of :func:`~cute_py.runtime.from_dlpack` over ``storage_tensor`` with element type ``dtype``,
    its layout marked dynamic along ``leading_dim`` when ``mark_dynamic_layout``. For a float8 ``dtype`` the
    storage is read as bytes and filled with ``source_f32_tensor`` converted (``CuteValueError`` without it);
    for other types the storage already holds the values (float32 storage for ``TFloat32``, whose element type the
    tensor takes)."""
    from ..tensor.dlpack import from_dlpack
    from ..torch import convert_cute_tensor

    dt = dtype_of(dtype)
    fp8 = is_fp8_dtype(dt)
    if fp8:
        if source_f32_tensor is None:
            raise CuteValueError(f"create_cute_tensor_for_fp8: a {dt.name} tensor needs source_f32_tensor (its "
                                 f"values in fp32)")
        import torch

        if storage_tensor.dtype not in (torch.int8, torch.uint8):
            storage_tensor = storage_tensor.view(torch.uint8)
    t = from_dlpack(storage_tensor, assumed_align=assumed_align)
    if fp8 or dt == TFloat32:  # float32 storage read as TensorFloat-32 operands
        t.element_type = dt
    if mark_dynamic_layout:
        t = t.mark_layout_dynamic(leading_dim=leading_dim)
    if fp8:
        t = convert_cute_tensor(source_f32_tensor, t, dt, is_dynamic_layout=True)
    return t
