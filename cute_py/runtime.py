"""Tensors for the host side: described without storage (``make_fake_tensor``), to build atoms
and compile kernels with no GPU and no data."""

from .dtypes import dtype_of
from .errors import CuteValueError
from .int_tuple import as_int_tuple
from .layout import Layout
from .pointer import AddressSpace, Pointer
from .tensor import Tensor

__all__ = ["make_fake_tensor"]


def make_fake_tensor(dtype, shape, stride=None, assumed_align=16, memspace=AddressSpace.gmem, dynamic=False):
    """A global-memory tensor of ``dtype`` with ``shape`` and ``stride`` (column-major by default)
    and no storage: its pointer's address is unknown, aligned to ``assumed_align`` bytes.

    With ``dynamic=True`` the shape and strides are run-time values known on the host (as those
    of a tensor passed to a kernel): the algebra treats them as CuTe treats dynamic integers.
    """
    dtype = dtype_of(dtype)
    shape = as_int_tuple(shape, "shape")
    if stride is not None:
        stride = as_int_tuple(stride, "stride")
    if type(assumed_align) is not int or assumed_align <= 0:
        raise CuteValueError(f"assumed_align must be a positive int, got {assumed_align!r}")
    layout = Layout(shape, stride)
    if dynamic:
        from .nvgpu.tma import host_layout

        layout = host_layout(layout)
    return Tensor(Pointer(dtype, memspace, assumed_align), layout)
