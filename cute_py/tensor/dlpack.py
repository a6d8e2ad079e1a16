"""Tensors over the memory of other libraries' arrays (DLPack), and pointers to raw host memory.

:func:`from_dlpack` reads any object with ``__dlpack__`` (torch, cupy, jax, numpy...):

- an array in host memory becomes a tensor over a numpy view of that memory (an :class:`ArrayEngine`): its
  elements are read and written on the host, and the view keeps the array alive;
- an array in device memory becomes a tensor over a global-memory :class:`Pointer` at the array's address,
  whose ``owner`` keeps the array alive; passed to a jit function it is the array itself.

Shapes and strides are the array's (strides in elements, as CuTe counts them); the layout of a rank-1 array is
``n:s``.  :func:`make_host_ptr` is a pointer to raw host memory that :func:`~cute_py.tensor.make_tensor` turns
into a host-readable tensor.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..core.normalise import int_like
from ..core.layout import Layout
from ..errors import CuteTypeError, CuteValueError
from .dtypes import dtype_of
from .pointer import AddressSpace, Pointer
from .tensor import Tensor
from .engines import ArrayEngine

__all__ = ["from_dlpack", "dlpack_info", "DLPackInfo", "HostMemory", "make_host_ptr"]

# DLPack device types
CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13
_HOST_DEVICES = (CPU, CUDA_HOST)
_DEVICE_DEVICES = (CUDA, CUDA_MANAGED)
# (type code, bits) -> element type; codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool, 8+ float8 (DLPack >= 1.1)
_DL_TYPES = {(2, 32): "Float32", (2, 16): "Float16", (2, 64): "Float64", (4, 16): "BFloat16", (0, 32): "Int32",
             (0, 64): "Int64", (0, 8): "Int8", (0, 16): "Int16", (1, 8): "Uint8", (1, 16): "Uint16",
             (1, 32): "Uint32", (1, 64): "Uint64", (6, 8): "Boolean", (10, 8): "Float8E4M3FN",
             (12, 8): "Float8E5M2"}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLPackInfo(tuple):
    """``(dtype name, shape, strides in elements, address, DLPack device type)`` of an array."""

    __slots__ = ()


_MAX_RANK = 64  # more extents than any array library makes: a corrupt export


def _device_of(x, where):
    """The DLPack device type ``x.__dlpack_device__()`` names (``CuteTypeError`` unless it is ``(int, int)``)."""
    try:
        got = where()
        device, _ = got
    except Exception as e:
        raise CuteTypeError(f"{type(x).__name__}.__dlpack_device__() did not return (device type, device id): "
                            f"{type(e).__name__}: {e}") from None
    i = int_like(device)
    if i is None:
        raise CuteTypeError(f"{type(x).__name__}.__dlpack_device__() returned the device type {device!r}, not an int")
    return i


def _row_major(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


def dlpack_info(x: Any, device_stream: int | None = -1) -> DLPackInfo:
    """What ``x.__dlpack__()`` describes (the export is released at once; ``x`` keeps the memory alive).
    ``device_stream`` is the ``stream=`` a device array exports with (-1: no synchronisation; ``None``: the
    legacy default stream). ``CuteTypeError`` for an object without ``__dlpack__`` or an element type cute_py has
    no name for."""
    export = getattr(x, "__dlpack__", None)
    if export is None:
        raise CuteTypeError(f"from_dlpack needs an object with __dlpack__ (torch, cupy, jax, numpy...), got "
                            f"{type(x).__name__}")
    where = getattr(x, "__dlpack_device__", None)
    device = _device_of(x, where) if where is not None else None
    # no stream synchronisation for device arrays (the caller orders its own work); host arrays take none
    kwargs = {} if device in _HOST_DEVICES else {"stream": device_stream}
    try:
        try:
            capsule = export(max_version=(1, 1), **kwargs)  # versioned: read-only arrays export too
        except TypeError:  # a producer of the older protocol
            capsule = export(**kwargs)
    except Exception as e:  # a producer that cannot export (a host array asked for a stream, a broken one)
        raise CuteTypeError(f"{type(x).__name__}.__dlpack__() failed: {type(e).__name__}: {e}") from e
    name = b"dltensor"
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    is_named = ctypes.pythonapi.PyCapsule_IsValid
    is_named.restype, is_named.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
    if not is_named(capsule, name):
        name = b"dltensor_versioned"
        if not is_named(capsule, name):
            raise CuteTypeError(f"{type(x).__name__}.__dlpack__() returned no DLPack capsule")
    addr = get(capsule, name)
    if not addr:
        raise CuteTypeError(f"{type(x).__name__}.__dlpack__() returned a DLPack capsule of a null pointer")
    if name == b"dltensor_versioned":  # DLManagedTensorVersioned: version (2 x u32), manager ctx, deleter, flags
        addr += 8 + 2 * ctypes.sizeof(ctypes.c_void_p) + 8
    t = _DLTensor.from_address(addr)  # a DLManagedTensor starts with its DLTensor
    key = (t.dtype.code, t.dtype.bits)
    if key not in _DL_TYPES or t.dtype.lanes != 1:
        raise CuteTypeError(f"from_dlpack: no cute_py element type for DLPack type code={t.dtype.code} "
                            f"bits={t.dtype.bits} lanes={t.dtype.lanes}")
    if not 0 <= t.ndim <= _MAX_RANK or (t.ndim and not t.shape):
        raise CuteTypeError(f"{type(x).__name__}.__dlpack__() describes ndim={t.ndim}" +
                            (" with no shape" if t.ndim > 0 else "") + f" (0 to {_MAX_RANK} extents and their shape)")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if any(n < 0 for n in shape):
        raise CuteTypeError(f"{type(x).__name__}.__dlpack__() describes the negative extents {shape}")
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else _row_major(shape)
    address = (t.data or 0) + t.byte_offset
    if device is not None and device != t.device.device_type:
        raise CuteTypeError(f"{type(x).__name__}: __dlpack_device__() says device type {device}, its export "
                            f"{t.device.device_type}")
    return DLPackInfo((_DL_TYPES[key], shape, strides, address, t.device.device_type))


def _layout(shape, strides):
    if len(shape) == 1:
        return Layout(shape[0], strides[0])
    return Layout(tuple(shape), tuple(strides))


def from_dlpack(tensor_dlpack: Any, assumed_align: int | None = None, use_32bit_stride: bool = False) -> Tensor:
    """A :class:`Tensor` over the memory of ``tensor_dlpack`` (anything with ``__dlpack__``), with its shape,
    strides (in elements) and element type.

    Host memory gives a tensor readable and writable on the host (a read-only array, e.g. jax's, refuses
    writes); device memory gives a tensor over a global-memory pointer at the array's address, which a jit
    function takes as it takes the array.  ``assumed_align`` (bytes, default: the element's size) is the
    alignment the pointer promises: an address that does not honour it is a ``CuteValueError``.
    The layout is static until marked dynamic (``mark_layout_dynamic``, ``mark_compact_shape_dynamic``:
    :mod:`cute_py.tensor.dynamic`); ``use_32bit_stride`` makes the dynamic strides 32-bit run-time values
    (default 64-bit).
    """
    if not isinstance(use_32bit_stride, bool):
        raise CuteTypeError(f"use_32bit_stride must be a bool, got {use_32bit_stride!r}")
    info = dlpack_info(tensor_dlpack)
    dtype_name, shape, strides, address, device = info
    if not shape:
        raise CuteValueError("from_dlpack needs an array of rank >= 1, got a rank-0 array")
    if any(d < 0 for d in strides):
        raise CuteValueError(f"from_dlpack: negative strides {strides} are not supported")
    dt = dtype_of(dtype_name)
    layout = _layout(shape, strides)
    if device in _DEVICE_DEVICES:
        ptr = Pointer(dt, AddressSpace.gmem, assumed_align, address)
        from .dynamic import DeviceOwner

        return Tensor(ptr.owned_by(DeviceOwner(tensor_dlpack, 32 if use_32bit_stride else 64, tuple(strides))), layout)
    if device not in _HOST_DEVICES:
        raise CuteValueError(f"from_dlpack: arrays on DLPack device type {device} are not supported (host memory "
                             f"and CUDA device memory are)")
    if assumed_align is not None:
        Pointer(dt, AddressSpace.generic, assumed_align, address)  # the promise is checked as for device memory
    return Tensor(_host_engine(tensor_dlpack, dt, shape, strides), layout)


def _span(shape, strides):
    return 0 if 0 in shape else 1 + sum((s - 1) * d for s, d in zip(shape, strides))


def _host_engine(x, dt, shape, strides):
    import numpy as np

    if dt.numpy_dtype is None:
        raise CuteTypeError(f"from_dlpack: numpy has no {dt.name} type to read a host array of it on the host")
    try:
        a = np.from_dlpack(x)
    except (TypeError, RuntimeError, BufferError, ValueError) as e:
        raise CuteValueError(f"from_dlpack: numpy cannot view this host array ({e})") from e
    flat = np.lib.stride_tricks.as_strided(a, shape=(_span(shape, strides),), strides=(a.itemsize,),
                                           writeable=a.flags.writeable)
    guard = None if a.flags.writeable else f"the {type(x).__name__} array is read-only"
    return ArrayEngine(flat, 0, dt, guard)


class HostMemory:
    """The ``owner`` of a pointer to raw host memory (:func:`make_host_ptr`): a tensor made over such a pointer
    views ``cosize`` elements of that memory as a numpy array, readable and writable on the host.  The memory
    belongs to the caller, who keeps it alive (as with a C pointer)."""

    __slots__ = ()

    def __repr__(self):
        return "host memory"

    def __cute_host_view__(self, ptr: Pointer, n: int) -> ArrayEngine:
        """The ``n`` elements of host memory at ``ptr`` as an :class:`ArrayEngine`."""
        import numpy as np

        dt = ptr.dtype
        if dt.numpy_dtype is None:
            raise CuteTypeError(f"numpy has no {dt.name} type to read host memory as {dt.name}")
        if ptr.address is None:
            raise CuteValueError("a tensor over host memory needs the pointer's address")
        nbytes = n * dt.width // 8
        buf = (ctypes.c_char * max(nbytes, 1)).from_address(ptr.address)
        return ArrayEngine(np.frombuffer(buf, dtype=dt.numpy_dtype, count=n), 0, dt)


def make_host_ptr(dtype: Any, address: int, assumed_align: int | None = None) -> Pointer:
    """A generic pointer to the raw host memory at ``address`` (see :class:`HostMemory`)."""
    return Pointer(dtype, AddressSpace.generic, assumed_align, address).owned_by(HostMemory())
