"""Dynamic layouts of device tensors: ``mark_layout_dynamic`` and ``mark_compact_shape_dynamic``.

A tensor of :func:`~cute_py.runtime.from_dlpack` over device memory has a static layout: passed to a jit
function, its shape and strides are compiled in (each new shape compiles once). Marking makes them run-time
values instead — :class:`~cute_py.core.symbolic.SymInt` leaves, printed ``?`` / ``?{div=N}`` — so that one
compile serves every shape that satisfies the marks. The marks are contracts the compiled function checks on
every call (a divisibility, a compact stride, a static stride kept): an argument that breaks one is refused
with :class:`~cute_py.errors.SpecMismatch`.

As in the CuTe DSL, both methods change the tensor and return it (``from_dlpack(t).mark_layout_dynamic()``);
they take flat layouts only. Shape leaves are 32-bit run-time values; the stride leaves of
``mark_layout_dynamic`` 64-bit, or 32-bit with ``from_dlpack(..., use_32bit_stride=True)`` (the compact strides of
``mark_compact_shape_dynamic`` are products of extents, not leaves of their own).
"""

from __future__ import annotations

from typing import Any

from ..core.layout import make_layout_unchecked
from ..core.symbolic import SymInt
from ..errors import CuteTypeError, CuteValueError
from .pointer import AddressSpace, Pointer

__all__ = ["mark_layout_dynamic", "mark_compact_shape_dynamic", "DeviceOwner"]


class DeviceOwner:
    """The owner of a :func:`from_dlpack` tensor's device memory: the ``array``, the width of its dynamic
    strides (``stride_width``: 64, or 32 with ``use_32bit_stride``) and its strides in elements (``strides``, as
    DLPack gave them: a layout marked dynamic no longer shows them)."""

    __slots__ = ("array", "stride_width", "strides")

    def __init__(self, array: Any, stride_width: int = 64, strides: tuple[int, ...] | None = None) -> None:
        self.array, self.stride_width, self.strides = array, stride_width, strides


def _flat_parts(t, what):
    """``(shape list, stride list, stride width)`` of a device tensor of from_dlpack with a flat layout."""
    e = t.engine
    if not (isinstance(e, Pointer) and e.memspace is AddressSpace.gmem and isinstance(e.owner, DeviceOwner)):
        raise CuteTypeError(f"{what} marks a tensor of cute_py.runtime.from_dlpack over device memory, got {t!r}")
    shape, stride = t.layout.shape, t.layout.stride
    if type(shape) is not tuple:
        shape, stride = (shape,), (stride,)
    if any(type(s) is tuple for s in shape + stride):
        raise CuteValueError(f"{what} takes a flat layout, got {t.layout}")
    return list(shape), list(stride), e.owner.stride_width


def _set_layout(t, shape, stride):
    layout = make_layout_unchecked(tuple(shape), tuple(stride)) if len(shape) > 1 else \
        make_layout_unchecked(shape[0], stride[0])
    object.__setattr__(t, "layout", layout)
    return t


_MARKS = [0]


def _tag():
    """A fresh prefix for the run-time values of one marking (leaves are told apart by name)."""
    _MARKS[0] += 1
    return f"tensor{_MARKS[0]}"


def _value(x):
    return x if type(x) is int else None


def mark_layout_dynamic(t: Any, leading_dim: int | None = None) -> Any:
    """Make every extent and stride of ``t`` a run-time value, except the stride of the leading dimension, which
    stays the static 1 (the CuTe DSL's rule): ``leading_dim`` names it (its stride must be 1); without it, the
    one mode of stride 1 — or, of several, the one of extent > 1 — is the leading one; with no mode of stride 1
    every stride is dynamic; an ambiguous choice is a ``CuteValueError``. Returns ``t`` (changed)."""
    shape, stride, width = _flat_parts(t, "mark_layout_dynamic")
    ones = [i for i, s in enumerate(stride) if _value(s) == 1]
    if leading_dim is not None:
        if type(leading_dim) is not int or not -len(shape) <= leading_dim < len(shape):
            raise CuteValueError(f"mark_layout_dynamic: leading_dim must be a mode of the rank-{len(shape)} "
                                 f"layout {t.layout}, got {leading_dim!r}")
        leading_dim %= len(shape)
        if _value(stride[leading_dim]) != 1:
            raise CuteValueError(f"mark_layout_dynamic: the stride of leading_dim={leading_dim} is "
                                 f"{stride[leading_dim]}, not 1, in {t.layout}")
    elif len(ones) == 1:
        leading_dim = ones[0]
    elif len(ones) > 1:
        wide = [i for i in ones if _value(shape[i]) is None or shape[i] > 1]
        if len(wide) != 1:
            raise CuteValueError(f"mark_layout_dynamic: modes {ones} of {t.layout} have stride 1 and the leading "
                                 f"one cannot be told; pass leading_dim=")
        leading_dim = wide[0]
    tag = _tag()
    new_shape = [SymInt.leaf(f"{tag}.shape[{i}]", 32, 1) for i in range(len(shape))]
    new_stride = [1 if i == leading_dim else SymInt.leaf(f"{tag}.stride[{i}]", width, 1) for i in range(len(shape))]
    return _set_layout(t, new_shape, new_stride)


def mark_compact_shape_dynamic(t: Any, mode: int, stride_order: tuple[int, ...] | None = None,
                               divisibility: int = 1) -> Any:
    """Make extent ``mode`` of the compact tensor ``t`` a run-time value that ``divisibility`` divides, and the
    strides that are products of it run-time values too (with the divisibility they inherit). ``stride_order``
    (as ``torch.Tensor.dim_order()``: outermost mode first) says which strides those are; without it the order
    is deduced from the strides (a compact layout with exactly one mode of stride 1). The layout must be
    compact in that order; the extent now must be a multiple of ``divisibility``. Returns ``t`` (changed)."""
    shape, stride, _ = _flat_parts(t, "mark_compact_shape_dynamic")
    r = len(shape)
    if type(mode) is not int or not -r <= mode < r:
        raise CuteValueError(f"mark_compact_shape_dynamic: mode must be a mode of the rank-{r} layout {t.layout}, "
                             f"got {mode!r}")
    mode %= r
    if type(divisibility) is not int or divisibility < 1:
        raise CuteValueError(f"mark_compact_shape_dynamic: divisibility must be a positive int, got {divisibility!r}")
    old = shape[mode]
    if type(old) is int and old % divisibility:
        raise CuteValueError(f"mark_compact_shape_dynamic: extent {old} of mode {mode} is not a multiple of "
                             f"divisibility={divisibility}")
    order = _stride_order(shape, stride, stride_order, t.layout, _array_strides(t, len(shape)))
    shape[mode] = SymInt.leaf(f"{_tag()}.shape[{mode}]", 32, divisibility)
    acc = 1
    for m in reversed(order):  # innermost first: each stride is the product of the extents inside it
        stride[m] = acc
        acc = acc * shape[m]
    return _set_layout(t, shape, stride)


def _array_strides(t, rank):
    """The strides (in elements) of the array a from_dlpack tensor is over, when it has ``rank`` modes; else
    ``None``. A layout marked dynamic keeps the array's strides there: the stride order is read from them, as the
    DSL reads it from the DLPack tensor."""
    strides = t.engine.owner.strides
    return list(strides) if strides is not None and len(strides) == rank else None


def _stride_order(shape, stride, stride_order, layout, concrete=None):
    r = len(shape)
    if stride_order is None:
        known = stride if all(_value(s) is not None for s in stride) else concrete
        ones = [] if known is None else [i for i, s in enumerate(known) if _value(s) == 1]
        if len(ones) != 1:
            raise CuteValueError(f"mark_compact_shape_dynamic: the stride order of {layout} cannot be deduced "
                                 f"(it needs exactly one mode of stride 1, in the layout or in the array it is "
                                 f"over); pass stride_order=")
        order = sorted(range(r), key=lambda i: (_value(known[i]), shape[i] if type(shape[i]) is int else 0),
                       reverse=True)
    else:
        order = tuple(stride_order)
        if sorted(order) != list(range(r)):
            raise CuteValueError(f"mark_compact_shape_dynamic: stride_order must be a permutation of the {r} modes, "
                                 f"got {stride_order!r}")
    acc = 1
    for m in reversed(order):
        if type(stride[m]) is int and type(acc) is int and stride[m] != acc and \
                not (type(shape[m]) is int and shape[m] == 1):
            raise CuteValueError(f"mark_compact_shape_dynamic: {layout} is not compact in stride_order "
                                 f"{tuple(order)} (mode {m} has stride {stride[m]}, compact would be {acc})")
        acc = acc * shape[m]
    return list(order)
