"""Host arguments of jit functions: device arrays, run-time scalars and static values.

A device array is anything with ``__cuda_array_interface__`` (cupy, numba), a torch tensor
(read directly: its DLPack/CAI export is slow and CAI has no bfloat16), or anything with
``__dlpack__`` (parsed with ctypes). It becomes, on the host side of a jit function, a
:class:`~cute_py.tensor.Tensor` over a gmem :class:`~cute_py.tensor.pointer.Pointer` whose address is a
*tag* (``(index + 1) << 40``) standing for the array's real address: shapes and strides are
static (they specialise the kernel), and every address derived from the tensor (a TMA
descriptor's global address, a kernel's pointer parameter) is mapped back to the real
address of that argument at launch. ``Int32(n)``/``Int64(n)``/``Float32(x)`` (or a parameter
annotated with them) pass a run-time scalar; every other value is static (part of the key).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...tensor.dtypes import dtype_of
from ...core.int_tuple import fmt, int_like
from ...core.layout import Layout
from ...core.symbolic import SymInt
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.tensor import Tensor
from ...errors import ArgumentError, CuteTypeError
from ...tensor.dlpack import dlpack_info
from ...tensor.dtypes import Float32, Int32, Int64, Scalar

if TYPE_CHECKING:
    from ...tensor.dtypes import DType

__all__ = ["DeviceArraySpec", "TAG_SHIFT", "ArraySpec", "array_spec", "concrete_spec", "is_static_spec",
           "device_pointer", "host_tensor", "tag_of", "untag",
           "is_device_array", "SCALAR_TYPES", "device_address"]

TAG_SHIFT = 40  # tensor argument i is seen at address (i + 1) << 40 while tracing
SCALAR_TYPES = {"Int32": Int32, "Int64": Int64, "Float32": Float32}

_CAI_TYPES = {"<f4": "Float32", "<f2": "Float16", "<f8": "Float64", "<i4": "Int32", "<i8": "Int64", "|i1": "Int8",
              "|u1": "Uint8", "<i2": "Int16", "<u2": "Uint16", "<u4": "Uint32", "<u8": "Uint64", "|b1": "Boolean"}


class ArraySpec(tuple):
    """``(dtype name, shape, strides in elements, alignment in bytes)``: what specialises a kernel."""

    __slots__ = ()

    @property
    def dtype(self) -> DType:
        return dtype_of(self[0])


class DeviceArraySpec:
    """A device array described without memory (``dtype``, row-major ``shape`` or explicit element
    ``strides``, ``address``): compiles a kernel for arrays like it, with no GPU.

    An extent or stride may be a :func:`~cute_py.sym_int` (a run-time value: one compile serves every value
    that honours its divisibility; the same symbol in several places means the same value); row-major strides
    of run-time extents are run-time products of them."""

    def __init__(self, dtype: DType | str | Any, shape: Iterable[Any], strides: Iterable[Any] | None = None,
                 address: int = 1 << 24) -> None:
        self.dtype = dtype_of(dtype)
        self.shape = tuple(_entry(s, "shape") for s in shape)
        if strides is None:
            strides, acc = [], 1
            for s in reversed(self.shape):
                strides.append(acc)
                acc = acc * s
            strides = tuple(reversed(strides))
        self.strides = tuple(_entry(s, "strides") for s in strides)
        if len(self.strides) != len(self.shape):
            raise ArgumentError(f"DeviceArraySpec: {len(self.shape)} extents but {len(self.strides)} strides")
        self.address = address

    def __repr__(self):
        return f"DeviceArraySpec({self.dtype.name}, {fmt(self.shape)}, {fmt(self.strides)})"


def _entry(x, what):
    if isinstance(x, SymInt):
        return x
    if type(x) is not int or x < 0:
        raise ArgumentError(f"DeviceArraySpec: {what} entries are non-negative ints or sym_int(), got {x!r}")
    return x


def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _dlpack_tensor(x):
    """True for a tensor of ``runtime.from_dlpack`` over device memory (a gmem pointer that owns its array)."""
    return type(x) is Tensor and isinstance(x.engine, Pointer) and x.engine.owner is not None \
        and x.engine.memspace is AddressSpace.gmem


def is_device_array(x: object) -> bool:
    """True for an array the JIT can pass to a kernel."""
    return isinstance(x, DeviceArraySpec) or _is_torch(x) or hasattr(x, "__cuda_array_interface__") or \
        hasattr(x, "__dlpack__") or _dlpack_tensor(x)


def _align(ptr):
    return min(256, ptr & -ptr) if ptr else 256


# what to do with an array in host memory where a kernel needs device memory
_HOST_ADVICE = ("move it to the GPU (torch: .cuda(), cupy.asarray), describe it with cute.DeviceArraySpec(dtype, shape) "
                "to compile without a GPU, or run the algebra and atoms on the CPU with cute_py.reference; a tensor "
                "of cute_py.runtime.from_dlpack over host memory is taken as host data by host-only code")


def array_spec(x: Any) -> tuple[ArraySpec, int]:
    """``(ArraySpec, device pointer)`` of a device array; ``ArgumentError`` for host memory or odd types."""
    if isinstance(x, DeviceArraySpec):
        return ArraySpec((x.dtype.name, x.shape, x.strides, _align(x.address))), x.address
    if _dlpack_tensor(x):
        layout, ptr = x.layout, x.engine.address
        shape, strides = layout.shape, layout.stride
        if type(shape) is not tuple:
            shape, strides = (shape,), (strides,)
        if not all(type(v) is int or isinstance(v, SymInt) for v in shape + strides):
            raise ArgumentError(f"a tensor passed to a kernel needs a flat layout, got {layout}")
        return ArraySpec((x.engine.dtype.name, shape, strides, _align(ptr))), ptr
    if _is_torch(x):
        if not x.is_cuda:
            raise ArgumentError(f"a torch tensor passed to a kernel must be on a CUDA device, got device {x.device}: "
                                f"{_HOST_ADVICE}")
        ptr = device_address(x.data_ptr(), "the torch tensor's data_ptr()")
        return ArraySpec((dtype_of(str(x.dtype)).name, tuple(x.shape), tuple(x.stride()), _align(ptr))), ptr
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        return _cai_spec(cai)
    if hasattr(x, "__dlpack__"):
        return _dlpack_spec(x)
    raise ArgumentError(f"expected a device array (__cuda_array_interface__, DLPack or torch), got {type(x).__name__}")


def device_address(ptr: Any, what: str) -> int:
    """``ptr`` as the int device address a kernel takes: an integer (numpy integers too, not a bool) in
    ``(0, 2**64)``; ``ArgumentError`` naming ``what`` otherwise (a null address, a negative one, one past 64 bits)."""
    if type(ptr) is not int:
        v = int_like(ptr)
        if v is None:
            raise ArgumentError(f"{what}: a device address is an int, got {ptr!r} ({type(ptr).__name__})")
        ptr = v
    if not 0 < ptr < 1 << 64:
        why = "a null address" if ptr == 0 else "outside [1, 2**64)"
        raise ArgumentError(f"{what}: the device address {ptr:#x} is {why}; a kernel cannot be launched on it")
    return ptr


def _cai_spec(cai):
    """``(ArraySpec, pointer)`` of a ``__cuda_array_interface__`` dict, every entry checked (version 0 to 3):
    ``typestr`` one of the element types, ``shape`` a tuple of non-negative ints, ``strides`` ``None`` or a tuple
    of as many ints (bytes, multiples of the element), ``data`` ``(address, read-only flag)``, no ``mask``."""
    def bad(why):
        return ArgumentError(f"a __cuda_array_interface__ {why}")

    if not isinstance(cai, dict):
        raise bad(f"is a dict, got {type(cai).__name__}")
    missing = [k for k in ("typestr", "shape", "data") if k not in cai]
    if missing:
        raise bad(f"needs the keys typestr, shape and data; {', '.join(missing)} missing")
    if cai.get("mask") is not None:
        raise bad("with a mask cannot be passed to a kernel (the kernel would read the masked elements)")
    typestr = cai["typestr"]
    if type(typestr) is not str or typestr not in _CAI_TYPES:
        raise ArgumentError(f"unsupported __cuda_array_interface__ element type {typestr!r}")
    dt = dtype_of(_CAI_TYPES[typestr])
    shape = cai["shape"]
    if not isinstance(shape, (tuple, list)):
        raise bad(f"shape is a tuple of ints, got {shape!r}")
    shape = tuple(int_like(s) for s in shape)
    if any(s is None or s < 0 for s in shape):
        raise bad(f"shape is a tuple of non-negative ints, got {cai['shape']!r}")
    eb = dt.width // 8
    strides = cai.get("strides")
    if strides is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        strides = tuple(reversed(strides))
    else:
        if not isinstance(strides, (tuple, list)) or len(strides) != len(shape):
            raise bad(f"strides are None or a tuple of {len(shape)} ints (one per extent), got {strides!r}")
        given = tuple(int_like(s) for s in strides)
        if any(s is None for s in given):
            raise bad(f"strides are ints (bytes), got {strides!r}")
        if any(s % eb for s in given):
            raise ArgumentError(f"strides {given} (bytes) are not multiples of the {eb}-byte element")
        strides = tuple(s // eb for s in given)
    data = cai["data"]
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise bad(f"data is (address, read-only flag), got {data!r}")
    ptr = device_address(data[0], "__cuda_array_interface__ data")
    return ArraySpec((dt.name, shape, strides, _align(ptr))), ptr


def concrete_spec(x: Any) -> tuple[ArraySpec, int]:
    """``(ArraySpec, device pointer)`` of the array a call passes: for a tensor marked dynamic, its array's
    actual extents and strides."""
    if _dlpack_tensor(x) and not is_static_spec(array_spec(x)[0]):
        got, _ = array_spec(x.engine.owner.array)
        ptr = x.engine.address
        return ArraySpec((got[0], got[1], got[2], _align(ptr))), ptr
    return array_spec(x)


def is_static_spec(spec: ArraySpec) -> bool:
    """Whether every extent and stride of ``spec`` is a static int."""
    return all(type(v) is int for v in spec[1] + spec[2])


def device_pointer(x: Any) -> int:
    """The device address of a device array (fast path for torch and cupy)."""
    if _is_torch(x):
        return x.data_ptr()
    if _dlpack_tensor(x):
        return x.engine.address
    data = getattr(x, "data", None)
    ptr = getattr(data, "ptr", None)
    if type(ptr) is int:
        return ptr
    return array_spec(x)[1]


def host_tensor(spec: ArraySpec, index: int) -> Tensor:
    """The host-side tensor of argument ``index``: a gmem pointer at its tag with the static layout."""
    dt = spec.dtype
    _, shape, strides, align = spec
    if len(shape) == 1:
        layout = Layout(shape[0], strides[0])
    else:
        layout = Layout(tuple(shape), tuple(strides))
    return Tensor(Pointer(dt, AddressSpace.gmem, max(align, dt.width // 8), tag_of(index)), layout)


def tag_of(index: int) -> int:
    """The tagged address standing for tensor argument ``index``."""
    return (index + 1) << TAG_SHIFT


def untag(address: int | None) -> tuple[int, int] | None:
    """``(argument index, byte offset)`` of a tagged address; ``None`` for a real one."""
    if address is None or address < (1 << TAG_SHIFT):
        return None
    return (address >> TAG_SHIFT) - 1, address & ((1 << TAG_SHIFT) - 1)


def scalar_of(x):
    """A run-time scalar for an ``Int32``/``Int64``/``Float32`` host value, else ``None``."""
    return x if isinstance(x, Scalar) else None


# -- DLPack (for producers without __cuda_array_interface__, e.g. jax) ------------------------------


def _dlpack_spec(x):
    try:
        dtype_name, shape, strides, ptr, device = dlpack_info(x, device_stream=None)
    except CuteTypeError as e:
        raise ArgumentError(str(e)) from None
    if device not in (2, 13):  # kDLCUDA, kDLCUDAManaged
        raise ArgumentError(f"a DLPack tensor passed to a kernel must be on a CUDA device (device type {device}"
                            f"{', the host' if device in (1, 3) else ''}): {_HOST_ADVICE}")
    ptr = device_address(ptr, "the DLPack tensor's data")
    return ArraySpec((dtype_name, shape, strides, _align(ptr))), ptr
