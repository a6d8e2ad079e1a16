"""How the checked path of a ``Compiled`` reads a call's arguments: the device address of each tensor argument,
checked against the compiled dtype, shape, strides and alignment (torch tensors like the last ones seen at
their positions are read directly), the run-time extents and strides of the tensors with run-time shapes, bound
to the host code's values (``dyn_specs``), and the integer scalars as the host code names them."""

from __future__ import annotations

from collections.abc import Sequence

from ..specs.args import array_spec, concrete_spec, device_address
from ...errors import SpecMismatch

__all__ = ["CallArguments", "row_major"]


def row_major(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether ``strides`` are the row-major strides of ``shape`` in every mode of extent > 1 (what torch's
    ``is_contiguous()`` checks)."""
    acc = 1
    for n, st in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if n != 1 and st != acc:
            return False
        acc *= n
    return True


class CallArguments:
    """The argument reads of a ``Compiled``'s checked path. A part of ``Compiled``, which sets what these methods
    read and record (``_tensor_args``, ``_dynamic_args``, ``_torch_specs``, ``_fast``, ``_binder``...): a torch
    tensor seen at a position with another type, dtype, shape or strides than the one recorded there makes the
    object forget its fast path (``_forget_fast_path``)."""

    def _fast_pointers(self, args):
        """The addresses of the tensor arguments when each is a torch tensor like the one last seen at its
        position (same type, dtype, shape, strides, on a CUDA device, aligned); otherwise ``None``."""
        fast = self._fast
        if fast is None:
            specs = self._torch_specs
            if len(specs) != len(self._tensor_args):
                return None
            fast = self._fast = tuple((i,) + specs[i] for i, _ in self._tensor_args)
        ptrs = []
        for i, cls, dtype, shape, strides, align, dense in fast:
            a = args[i]
            # a row-major spec: is_contiguous() and the shape imply the strides (one call instead of a tuple)
            if type(a) is not cls or a.dtype is not dtype or a.shape != shape or not a.is_cuda or \
                    not (a.is_contiguous() if dense else a.stride() == strides):
                return None
            ptr = a.data_ptr()
            if ptr % align or not ptr:
                return None
            ptrs.append(ptr)
        return tuple(ptrs)

    def _pointer(self, i, spec, a):
        """The device address of tensor argument ``i``, after checking it has the compiled dtype/shape/strides."""
        fast = self._torch_specs.get(i)
        if fast is not None and type(a) is fast[0]:
            _, dtype, shape, strides, align, _ = fast
            if a.dtype is dtype and a.shape == shape and a.stride() == strides and a.is_cuda:
                ptr = a.data_ptr()
                if ptr % align == 0 and ptr:
                    return ptr
        got, ptr = array_spec(a)
        ptr = device_address(ptr, f"argument {i}")
        if got[:3] != spec[:3] or ptr % spec[3]:
            raise SpecMismatch(f"argument {i}: compiled for {spec} (dtype, shape, strides, alignment), got "
                                f"{got}; compile again for it (calling the jit function does)")
        if type(a).__module__.startswith("torch"):
            self._torch_specs[i] = (type(a), a.dtype, a.shape, a.stride(), spec[3], row_major(a.shape, a.stride()))
            self._forget_fast_path()
        return ptr

    def _bind(self, args):
        """``(pointers, leaf values)`` of the tensor arguments with run-time extents (see ``dyn_specs``); the
        extents and strides of a call equal to the previous call's reuse its values."""
        ptrs, actual = [], {}
        torch_dtypes = self._torch_dtypes
        for i, spec in self._dynamic_args:
            a = args[i]
            name = torch_dtypes.get(getattr(a, "dtype", None)) if type(a).__module__ == "torch" else None
            if name is not None and a.is_cuda:  # a torch tensor whose dtype was seen: read it directly
                got, ptr = (name, a.shape, a.stride()), a.data_ptr()
                self._dynamic_torch.setdefault(i, (type(a), a.dtype))
            else:
                got, ptr = concrete_spec(a)
                if type(a).__module__ == "torch":
                    torch_dtypes[a.dtype] = got[0]
                    self._dynamic_torch[i] = (type(a), a.dtype)
                else:
                    self._fast_dynamic = None  # not every call is torch tensors: no generated call
            ptr = device_address(ptr, f"argument {i}")
            if got[0] != spec[0] or ptr % spec[3]:
                raise SpecMismatch(f"argument {i}: compiled for {spec[0]} elements aligned to {spec[3]} bytes, got "
                                   f"{got[0]} at {ptr:#x}")
            ptrs.append(ptr)
            actual[i] = (tuple(got[1]), tuple(got[2]))
        scalars = self._scalar_env(args) if self._int_scalars else None
        last = self._last_bound
        if last is not None and last[0] == (actual, scalars):
            return tuple(ptrs), last[1]
        values = self._binder.bind(actual, scalars)
        self._last_bound = ((actual, scalars), values)
        return tuple(ptrs), values

    def _scalar_env(self, args):
        """The integer scalar arguments as the host code's run-time values name them (``argN``)."""
        checks = dict(zip(self._scalar_args, self._scalar_checks))
        return {f"arg{i}": checks[i](args[i]) for i in self._int_scalars if i < len(args)}
