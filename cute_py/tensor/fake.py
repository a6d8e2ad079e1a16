"""Tensors for the host side: described without storage (``make_fake_tensor``), to build atoms
and compile kernels with no GPU and no data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .dtypes import dtype_of
from ..errors import CuteValueError
from ..core.normalise import as_index, as_int_tuple
from ..core.layout import Layout, make_layout_unchecked
from ..core.valued import ValuedInt, value_of
from .pointer import AddressSpace, Pointer
from .tensor import Tensor
from ..core.typing import Shape, Stride

if TYPE_CHECKING:
    from .dtypes import DType

__all__ = ["make_fake_tensor", "HostInt", "host_layout", "value_of"]


def make_fake_tensor(dtype: DType | str | Any, shape: Shape, stride: Stride | None = None, assumed_align: int = 16,
                     memspace: AddressSpace = AddressSpace.gmem, dynamic: bool = False) -> Tensor:
    """A global-memory tensor of ``dtype`` with ``shape`` and ``stride`` (column-major by default)
    and no storage: its pointer's address is unknown, aligned to ``assumed_align`` bytes.

    With ``dynamic=True`` the shape and strides are run-time values known on the host (as those
    of a tensor passed to a kernel): the algebra treats them as CuTe treats dynamic integers.
    """
    dtype = dtype_of(dtype)
    shape = as_int_tuple(shape, "shape")
    if stride is not None:
        stride = as_int_tuple(stride, "stride")
    assumed_align = as_index(assumed_align, "assumed_align")
    if assumed_align <= 0:
        raise CuteValueError(f"assumed_align must be a positive int, got {assumed_align!r}")
    layout = Layout(shape, stride)
    if dynamic:
        layout = host_layout(layout)
    return Tensor(Pointer(dtype, memspace, assumed_align), layout)


class HostInt(ValuedInt):
    """A gmem extent or stride, known on the host but a run-time value of the kernel: the TMA box
    is derived with it exactly as CuTe derives it with the (dynamic) shapes of a gmem tensor."""

    __slots__ = ()


def host_layout(layout: Layout) -> Layout:
    """``layout`` with every static int leaf wrapped as a :class:`HostInt`."""
    def wrap(t):
        if type(t) is tuple:
            return tuple(wrap(e) for e in t)
        return HostInt(t) if type(t) is int else t

    return make_layout_unchecked(wrap(layout.shape), wrap(layout.stride))
