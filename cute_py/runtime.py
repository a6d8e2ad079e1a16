"""``cute_py.runtime``: tensors and pointers for the host side, as the CuTe DSL's ``cute.runtime``.

:func:`from_dlpack` views the memory of a torch, cupy, jax or numpy array as a :class:`~cute_py.Tensor`
(:mod:`cute_py.tensor.dlpack`); :func:`make_ptr` is a pointer to an address the caller owns;
:func:`make_fake_tensor` describes a global-memory tensor without storage (to build atoms and compile kernels
with no GPU and no data); :class:`HostInt` is an extent or stride known on the host but a run-time value of
the kernel (:mod:`cute_py.tensor.fake`).
"""

from __future__ import annotations

import ctypes
from typing import Any

from .errors import CuteTypeError
from .tensor.dlpack import from_dlpack, make_host_ptr
from .tensor.dtypes import dtype_of
from .tensor.fake import HostInt, host_layout, make_fake_tensor, value_of
from .tensor.pointer import AddressSpace, Pointer

__all__ = ["from_dlpack", "make_ptr", "make_fake_tensor", "HostInt", "host_layout", "value_of", "make_fake_stream"]


def __getattr__(name):
    if name == "make_fake_stream":  # the compiler's stream rules; loaded on first use
        from .compiler.specs.annotations import make_fake_stream

        return make_fake_stream
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_device_address(address: int) -> bool:
    """True when CUDA knows ``address`` as device memory (False without CUDA, a context, or for host memory)."""
    try:
        from cuda.bindings import driver as cu

        err, kind = cu.cuPointerGetAttribute(cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address)
    except Exception:  # no cuda-python, or no driver on this machine: no device memory either
        return False
    return err == cu.CUresult.CUDA_SUCCESS and int(kind) == int(cu.CUmemorytype.CU_MEMORYTYPE_DEVICE)


def make_ptr(dtype: Any, value: int | Any, mem_space: AddressSpace = AddressSpace.generic,
             assumed_align: int | None = None) -> Pointer:
    """A pointer to ``dtype`` elements at the address ``value`` (an int or a ctypes pointer), as the DSL's
    ``cute.runtime.make_ptr``.

    A ``generic`` pointer to host memory makes tensors (``cute.make_tensor(ptr, layout)``) that are read and
    written on the host; one to device memory (as CUDA reports it) is a global-memory pointer, as is any
    pointer made with ``mem_space=AddressSpace.gmem``.  The memory is the caller's: it must outlive the pointer.
    """
    if isinstance(value, (ctypes._Pointer, ctypes.c_void_p)):
        value = ctypes.cast(value, ctypes.c_void_p).value or 0
    if type(value) is not int:
        raise CuteTypeError(f"make_ptr takes an int address or a ctypes pointer, got {type(value).__name__}")
    if not isinstance(mem_space, AddressSpace):
        raise CuteTypeError(f"mem_space must be an AddressSpace, got {mem_space!r}")
    dt = dtype_of(dtype)
    if mem_space is AddressSpace.generic and not _is_device_address(value):
        return make_host_ptr(dt, value, assumed_align)
    space = AddressSpace.gmem if mem_space is AddressSpace.generic else mem_space
    return Pointer(dt, space, assumed_align, value)
