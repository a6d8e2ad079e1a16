"""``make_rmem_tensor_like`` (the CuTe DSL's name): a register tensor with the shape of a tensor or layout and
the compact strides of ``make_layout_like`` (``src``'s stride order), its elements of ``src``'s type or ``dtype``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.notation import short_repr
from ..core.layout import Layout, cosize, make_layout_like
from ..errors import CuteTypeError, CuteValueError, StaticValueRequired
from .dtypes import dtype_of
from .tensor import Tensor, make_fragment_like

if TYPE_CHECKING:
    from ..core.composed import ComposedLayout
    from .dtypes import DType

__all__ = ["make_rmem_tensor_like"]


def make_rmem_tensor_like(src: Any, dtype: DType | str | Any = None) -> Tensor:
    """A register tensor like ``src``, as the CuTe DSL's ``cute.make_rmem_tensor_like``: the same shape, with the
    compact strides of ``make_layout_like`` over ``src``'s layout (the order of its strides; static 0 strides
    kept), where :func:`make_fragment_like` makes mode 0 column-major instead.

    ``src`` is a tensor (its element type unless ``dtype`` is given; a coordinate tensor needs ``dtype`` and
    gives the compact column-major layout of its shape), a ``TensorSSA`` (compact column-major over its
    shape), or a layout or composed layout (``dtype`` needed; a composed layout gives its outer layout's
    order).  While a kernel is traced the tensor lives in registers; on the host it is a zeroed host array.

    ``make_rmem_tensor_like(t)`` for ``t`` over ``(4,8):(8,1)`` is over ``(4,8):(8,1)``; over ``(4,8):(1,4)``
    it is ``(4,8):(1,4)``.
    """
    layout, elem = _layout_and_type(src, dtype)
    like = make_layout_like(layout)
    n = cosize(like)
    if type(n) is not int:
        raise StaticValueRequired(f"make_rmem_tensor_like needs a static layout, got {like}")
    storage = make_fragment_like(Layout(max(n, 1)), elem)
    return Tensor(storage.engine, like)


def _layout_and_type(src, dtype):
    if isinstance(src, Tensor):
        if src.element_type is None:  # a coordinate tensor: compact over its shape
            if dtype is None:
                raise CuteValueError("make_rmem_tensor_like of a coordinate tensor needs a dtype")
            return Layout(src.shape), dtype_of(dtype)
        return _outer(src.layout), dtype_of(dtype if dtype is not None else src.element_type)
    if type(src) is Layout or hasattr(src, "__cute_map_outer__"):
        if dtype is None:
            raise CuteValueError(f"make_rmem_tensor_like of a layout needs a dtype, got only {src}")
        return _outer(src), dtype_of(dtype)
    if hasattr(src, "shape") and hasattr(src, "element_type") and hasattr(src, "elements"):
        # a register tensor value (TensorSSA): compact column-major over its shape
        return Layout(src.shape), dtype_of(dtype if dtype is not None else src.element_type)
    raise CuteTypeError(f"make_rmem_tensor_like needs a tensor, a TensorSSA or a layout, got {short_repr(src)}")


def _outer(layout: Layout | ComposedLayout) -> Layout:
    return layout.outer if hasattr(layout, "__cute_map_outer__") else layout
