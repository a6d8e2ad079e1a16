"""The one seam between the algebra and the compiler: the device context, and the ``__cute_*__`` protocols.

**The device context.**  While a kernel is traced, the compiler installs one object, the *device context*,
with :func:`tracing`; outside a kernel there is none (:func:`active` is ``None``).  The layers below the
compiler reach the kernel being traced only through it:

- ``emit(op, **operands)`` — issue one device instruction: an op object of a unit of :mod:`cute_py.nvgpu` or
  :mod:`cute_py.nvgpu.sync` with its operands (pointers, coordinates, traced values).  The low-level
  device forms (``cpasync.tma_load``, ``fence_tma_desc_acquire``...) call it; outside a kernel they raise
  :class:`~cute_py.errors.DeviceOnlyError`.
- ``load(pointer, offset)`` / ``store(pointer, offset, value)`` — read or write one element of a tensor over
  a device pointer (``Tensor.__getitem__`` / ``__setitem__`` in a kernel).
- ``make_fragment_like(src, dtype)`` — a register tensor shaped like ``src`` (``cute.make_fragment_like`` in
  a kernel).
- ``scalar(dtype, value)`` — ``cute.Int32(x)`` and the other numeric types called in a kernel.
- ``load_tensor`` / ``store_tensor`` / ``print_tensor`` — ``tensor.load()``, ``tensor.store(v)`` and
  ``cute.print_tensor(tensor)`` in a kernel.
- ``pointer_address(pointer)`` — a global-memory pointer's address as a traced 64-bit integer
  (``Pointer.align`` rounds it up).
- ``run_time_scope()`` — the innermost run-time loop or branch being traced (an object with ``kind``, ``file``,
  ``line``, ``parent`` and ``open``), or ``None`` at the kernel's top level: state kept in Python objects cannot
  vary inside one.
- ``on_abandon(undo)`` — call ``undo()`` if the trace from here on is abandoned (a run-time loop traces its
  body again once it knows what it carries): state kept in Python objects goes back with the instructions.

**The protocols.**  The algebra never imports the compiler nor the classes built above it; objects take part
in its operations by defining these special attributes (``PROTOCOLS`` holds each one's contract, and a test
checks that every ``__cute_*__`` name the package uses is listed here and every listed one is used):
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["DeviceContext", "active", "tracing", "PROTOCOLS"]


class DeviceContext:
    """What the compiler provides while a kernel is traced (the methods the layers below call).

    A base class for documentation and for tests: each method raises until a subclass defines it.
    """

    def emit(self, op: object, **operands: Any) -> Any:
        """Issue the device instruction ``op`` (a copy or instruction op object) with ``operands``."""
        raise NotImplementedError

    def load(self, pointer: Any, offset: Any) -> Any:
        """The element at ``pointer + offset`` (a traced value)."""
        raise NotImplementedError

    def store(self, pointer: Any, offset: Any, value: Any) -> None:
        """Store ``value`` at ``pointer + offset``."""
        raise NotImplementedError

    def make_fragment_like(self, src: Any, dtype: Any = None) -> Any:
        """A register tensor with the shape of ``src`` (elements of ``dtype``, by default ``src``'s)."""
        raise NotImplementedError

    def pointer_address(self, pointer: Any) -> Any:
        """The address of the global-memory ``pointer`` as a traced 64-bit integer."""
        raise NotImplementedError

    def scalar(self, dtype: Any, value: Any) -> Any:
        """``dtype(value)`` in the kernel (``cute.Int32(x)``): a converted traced value."""
        raise NotImplementedError

    def load_tensor(self, tensor: Any) -> Any:
        """``tensor.load()``: every element of ``tensor`` as one register value (a TensorSSA)."""
        raise NotImplementedError

    def store_tensor(self, tensor: Any, value: Any) -> None:
        """``tensor.store(value)``: write a register value (or a scalar, to every element) into ``tensor``."""
        raise NotImplementedError

    def print_tensor(self, tensor: Any, verbose: bool = False) -> None:
        """``cute.print_tensor(tensor)`` in a kernel: print its layout and values from the device."""
        raise NotImplementedError

    def run_time_scope(self) -> Any:
        """The innermost run-time loop or branch being traced (``kind``, ``file``, ``line``, ``parent``,
        ``open``), or ``None`` at the kernel's top level."""
        raise NotImplementedError

    def on_abandon(self, undo: Any) -> None:
        """Call ``undo()`` if the trace from here on is abandoned (it is traced again)."""
        raise NotImplementedError


_active = []


def active() -> DeviceContext | None:
    """The device context of the kernel being traced, or ``None`` outside a kernel."""
    return _active[-1] if _active else None


@contextlib.contextmanager
def tracing(context: DeviceContext) -> Iterator[DeviceContext]:
    """Make ``context`` the device context for the duration of the ``with`` block (nested traces stack)."""
    _active.append(context)
    try:
        yield context
    finally:
        _active.pop()


PROTOCOLS = {
    "__cute_substitute__": "``x.__cute_substitute__(fn)``: ``x`` rebuilt with ``fn`` applied to its int-tuple parts "
                           "(layouts, composed layouts, tensors, coordinates, basis strides); "
                           "``symbolic.substitute`` replaces run-time extents with it.",
    "__cute_value__": "``p.__cute_value__()``: the MLIR value of a traced pointer (a descriptor address made "
                      "in the kernel); device forms and pointer lowering pass it through instead of a Pointer.",
    "__cute_static__": "``x.__cute_static__()``: True when a stride or coordinate object (a basis stride) is "
                       "known at trace time; ``is_static`` asks it for non-int leaves.",
    "__cute_stride__": "class attribute, True: the object may stand where an integer stride stands (basis "
                       "strides ``E(i)``, arithmetic tuples); IntTuple validation accepts it.",
    "__cute_coord__": "``r.__cute_coord__()``: the coordinate an arithmetic tuple stands for, when a layout is "
                      "evaluated at (or an IntTuple built from) one.",
    "__cute_coprofile__": "``x.__cute_coprofile__()``: the profile of the codomain of a layout whose strides are "
                          "basis strides (what ``make_identity_tensor`` and complements need).",
    "__cute_cosize__": "``x.__cute_cosize__()``: the codomain size for strides that are not integers.",
    "__cute_compose__": "``stride.__cute_compose__(ls, ld, rs, impl)``: composition when the left layout's "
                        "strides are basis strides (each mode maps into its own basis direction).",
    "__cute_inner__": "class attribute, True: the object may be the inner function of a ComposedLayout (an "
                      "offset function the algebra carries along, like a Swizzle).",
    "__cute_map_outer__": "``x.__cute_map_outer__(fn)``: a layout-like object made of an outer ``Layout`` "
                          "(attribute ``outer``): the same object with ``fn(outer)`` instead; every algebra "
                          "operation on a ComposedLayout (or a tensor) maps its outer layout this way.",
    "__cute_slice__": "``x.__cute_slice__(coord)``: ``slice_(x, coord)`` for layout-like objects and tensors.",
    "__cute_slice_and_offset__": "``x.__cute_slice_and_offset__(coord)``: ``slice_and_offset`` for "
                                 "layout-like objects (the sliced object and the offset of the slice).",
    "__cute_compose_layout__": "``f.__cute_compose_layout__(layout)``: ``composition(f, layout)`` for a "
                               "function that is not a layout (a Swizzle: ``f o 0 o layout``).",
    "__cute_transport__": "``f.__cute_transport__(layout)``: ``composition(layout, f)`` for such a function "
                          "(a Swizzle carried through the layout, checked exact).",
    "__cute_host_view__": "``owner.__cute_host_view__(ptr, n)``: the ``n`` elements at ``ptr`` as a host array engine, "
                          "for a pointer whose ``owner`` is raw host memory (``make_tensor`` over it is readable on "
                          "the host).",
    "__cute_mma_descriptors__": "``t.__cute_mma_descriptors__``: true on a tensor of MMA operand descriptors (a "
                                "warpgroup MMA's A/B fragment over shared memory), which ``gemm`` takes in place of "
                                "a register fragment and hands to the op's emission entry.",
}
