"""Tensors for the host side: described without storage (``make_fake_tensor``), to build atoms
and compile kernels with no GPU and no data."""

from .basis import ScaledBasis
from .dtypes import dtype_of
from .errors import CuteValueError
from .int_tuple import Dynamic, as_int_tuple
from .layout import Layout, _mk
from .pointer import AddressSpace, Pointer
from .tensor import Tensor

__all__ = ["make_fake_tensor", "HostInt", "host_layout", "value_of"]


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
        layout = host_layout(layout)
    return Tensor(Pointer(dtype, memspace, assumed_align), layout)


class HostInt(Dynamic):
    """A gmem extent or stride, known on the host but treated as a run-time value while the box is
    derived, exactly as CuTe treats the (dynamic) shapes and strides of a gmem tensor."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def _op(self, other, fn):
        o = other.value if isinstance(other, HostInt) else other
        if type(o) is not int:
            return NotImplemented
        return HostInt(fn(self.value, o))

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b)

    def __radd__(self, o):
        return self._op(o, lambda a, b: b + a)

    def __sub__(self, o):
        return self._op(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return self._op(o, lambda a, b: b - a)

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b)

    def __rmul__(self, o):
        return self._op(o, lambda a, b: b * a)

    def __floordiv__(self, o):
        return self._op(o, lambda a, b: a // b)

    def __rfloordiv__(self, o):
        return self._op(o, lambda a, b: b // a)

    def __mod__(self, o):
        return self._op(o, lambda a, b: a % b)

    def __rmod__(self, o):
        return self._op(o, lambda a, b: b % a)

    def __abs__(self):
        return HostInt(abs(self.value))

    def __neg__(self):
        return HostInt(-self.value)

    def min_(self, o):
        return HostInt(min(self.value, value_of(o)))

    def max_(self, o):
        return HostInt(max(self.value, value_of(o)))

    def signum_(self):
        return HostInt((self.value > 0) - (self.value < 0))

    def __repr__(self):
        return f"HostInt({self.value})"


def value_of(x):
    """Ints, tuples and layouts with :class:`HostInt` leaves unwrapped to plain ints."""
    if isinstance(x, HostInt):
        return x.value
    if type(x) is tuple:
        return tuple(value_of(e) for e in x)
    if type(x) is ScaledBasis:
        return ScaledBasis(value_of(x.value), x.modes)
    if type(x) is Layout:
        return _mk(value_of(x.shape), value_of(x.stride))
    return x


def host_layout(layout):
    """``layout`` with every static int leaf wrapped as a :class:`HostInt`."""
    def wrap(t):
        if type(t) is tuple:
            return tuple(wrap(e) for e in t)
        return HostInt(t) if type(t) is int else t

    return _mk(wrap(layout.shape), wrap(layout.stride))
