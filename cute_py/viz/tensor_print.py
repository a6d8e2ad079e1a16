"""``print_tensor`` in the CuTe DSL's format: the tensor's pointer and layout, then its values nested as numpy
nests them — rows are mode 0, columns mode 1, and each further mode an outer level (the last mode outermost);
a rank-1 tensor prints one element per line.  ``verbose=True`` prints one ``(coordinate)= value`` line per
element, the last mode fastest.

Host tensors (over arrays, raw host memory, or coordinates) print directly; a tensor over device memory that
owns its array (``runtime.from_dlpack`` of a CUDA array) is copied to the host first.  A tensor over a device
pointer with no known memory is an error.
"""

from __future__ import annotations

import sys
from typing import TextIO

from .. import device
from ..core.notation import fmt
from ..core.products import product_each
from ..errors import CuteValueError
from ..tensor.pointer import AddressSpace, Pointer
from ..tensor.tensor import Tensor
from ..tensor.engines import ArrayEngine, CoordEngine
from ..tensor.text import values_text

__all__ = ["format_tensor_values", "print_tensor"]



def _host_copy(tensor):
    """``tensor`` over a host copy of the device memory its layout reaches (``from_dlpack`` of a CUDA array)."""
    import numpy as np
    from cuda.bindings import driver as cu

    ptr, layout = tensor.engine, tensor.layout
    dt = ptr.dtype
    shape, stride = _flat(layout.shape), _flat(layout.stride)
    n = 0 if 0 in shape else 1 + sum((s - 1) * d for s, d in zip(shape, stride))
    if any(d < 0 for d in stride):
        raise CuteValueError(f"print_tensor: negative strides of a device tensor are not supported ({layout})")
    raw = np.empty(n * dt.width // 8, dtype=np.uint8)
    if n:
        err, = cu.cuMemcpyDtoH(raw.ctypes.data, ptr.address, raw.nbytes)
        if int(err) != 0:
            raise CuteValueError(f"print_tensor: copying the device tensor to the host failed ({err!r})")
    if dt.name == "BFloat16":
        values = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    elif dt.numpy_dtype is None:
        raise CuteValueError(f"print_tensor: numpy cannot show {dt.name} values")
    else:
        values = raw.view(dt.numpy_dtype)
    return Tensor(ArrayEngine(values, 0, dt), layout)


def _flat(t):
    if isinstance(t, tuple):
        return [x for e in t for x in _flat(e)]
    return [t]


def _readable(tensor):
    e = tensor.engine
    if isinstance(e, Pointer):
        if e.owner is not None and e.memspace is AddressSpace.gmem and e.address is not None:
            return _host_copy(tensor)
        raise CuteValueError(f"print_tensor: the values of a tensor over {e!r} are not readable on the host")
    return tensor


def _header(tensor):
    e = tensor.engine
    if isinstance(e, CoordEngine):
        return f"tensor({fmt(e.origin)} o {tensor.layout}, data="
    if isinstance(e, ArrayEngine):
        addr = e.array.ctypes.data + fmt_offset(e) * e.array.itemsize
        space, align = "generic", max(1, e.dtype.width // 8)
    else:
        addr, space, align = e.address or 0, ("gmem" if e.memspace is AddressSpace.gmem else e.memspace.name), \
            e.alignment
    return f"tensor(raw_ptr({addr:#018x}: {e.dtype.short_name}, {space}, align<{align}>) o {tensor.layout}, data="


def fmt_offset(e: ArrayEngine) -> int:
    """The element offset of a host-array engine (0 when it is not a static int)."""
    return e.offset if type(e.offset) is int else 0


def _value(v, dtype):
    if isinstance(v, tuple) or dtype is None:
        return fmt(tuple(v)) if isinstance(v, tuple) else str(v)
    if dtype.is_float:
        return f"{float(v): f}"
    if dtype.name == "Boolean":
        return "true" if v else "false"
    return f"{int(v): d}"


def _sizes(tensor):
    s = tensor.layout.shape
    return tuple(product_each(s)) if isinstance(s, tuple) else (s,)


def format_tensor_values(tensor: Tensor, verbose: bool = False) -> str:
    """The text :func:`print_tensor` prints (see the module)."""
    if not isinstance(tensor, Tensor):
        raise CuteValueError(f"print_tensor takes a Tensor, got {type(tensor).__name__} (a layout prints with "
                             f"print_layout)")
    head = _header(tensor)
    t = _readable(tensor)
    dtype = t.element_type
    return head + values_text(_sizes(t), lambda c: _value(t[c if len(c) > 1 else c[0]], dtype), verbose)


def print_tensor(tensor: Tensor, *, verbose: bool = False, file: TextIO | None = None) -> None:
    """Print ``tensor``'s pointer, layout and values in the DSL's format (see the module); in a kernel, every
    thread that runs it prints them from the device."""
    ctx = device.active()
    if ctx is not None:
        ctx.print_tensor(tensor, verbose)
        return
    from ..tensor.host_ssa import HostTensorSSA

    if isinstance(tensor, HostTensorSSA):  # a value of host code: its elements over a compact layout
        from ..core.layout import Layout
        from ..tensor.tensor import make_tensor

        tensor = make_tensor(tensor.array.copy(), Layout(tensor.shape))
    print(format_tensor_values(tensor, verbose), file=file if file is not None else sys.stdout)
