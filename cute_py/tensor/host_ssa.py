"""The elements of a host tensor as one value: ``Tensor.load()`` outside a kernel, the CuTe DSL's ``TensorSSA`` of
host code.

A :class:`HostTensorSSA` holds the elements in flat (column-major) index order in a numpy array of the element
type and the tensor's shape. It supports what a kernel's ``TensorSSA`` does, computed by numpy in the element
type: elementwise arithmetic, comparisons and bitwise operators with another value of the same shape, a
broadcastable shape (modes of extent 1 repeat, as the DSL broadcasts) or a number; ``to(dtype)``; ``reduce`` with a
reduction profile; ``broadcast_to``; indexing by a flat index or a coordinate (``None`` keeps a mode);
``map``. ``Tensor.store`` takes it back, ``cute.print_tensor`` prints it, and the kernel's ``cute.math`` functions
and ``cute.where`` apply to it element by element.

Promotion follows numpy with Python numbers weak (``Float32 + 2.0`` stays ``Float32``); ``/`` of integers is a
``Float32`` division, as in the DSL. Element types numpy has no type for (``BFloat16``, the 8-bit floats) are
refused (``CuteTypeError``).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from ..core.int_tuple import flatten_unchecked
from ..core.notation import fmt
from ..core.products import product
from ..core.layout import Layout
from ..errors import CuteTypeError, CuteValueError
from .dtypes import DType, dtype_of

__all__ = ["HostTensorSSA"]

_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "and": operator.and_,
    "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift, "rshift": operator.rshift,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
    "ne": operator.ne,
}
_COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")


def _np():
    import numpy as np

    return np


def _numpy_type(dtype: DType) -> Any:
    nd = dtype.numpy_dtype
    if nd is None:
        raise CuteTypeError(f"host code computes on {dtype.name} elements through numpy, which has no such type")
    return nd


def _flat(shape: Any) -> tuple[int, ...]:
    f = flatten_unchecked(shape) if type(shape) is tuple else (shape,)
    if not all(type(x) is int for x in f):
        raise CuteValueError(f"a host TensorSSA needs a static shape, got {fmt(shape)}")
    return tuple(f)


def _python(x: Any) -> Any:
    item = getattr(x, "item", None)
    return item() if item is not None else x


class HostTensorSSA:
    """``array`` (1-D numpy array, flat index order) of ``dtype`` elements, of ``shape``."""

    __slots__ = ("array", "shape", "dtype")
    __hash__ = None

    def __init__(self, array: Any, shape: Any, dtype: DType | str | Any) -> None:
        np = _np()
        dtype = dtype_of(dtype)
        a = np.asarray(array).reshape(-1, order="F")
        if a.size != product(_flat(shape)):
            raise CuteValueError(f"a host TensorSSA of shape {fmt(shape)} holds {product(_flat(shape))} elements, "
                                 f"got {a.size}")
        self.array, self.shape, self.dtype = a.astype(_numpy_type(dtype), copy=False), shape, dtype

    @property
    def element_type(self) -> DType:
        return self.dtype

    def __len__(self) -> int:
        return int(self.array.size)

    def __bool__(self) -> bool:
        raise CuteTypeError("a TensorSSA has no truth value: reduce it, or use cute.where")

    def __repr__(self) -> str:
        return f"vector<{self.array.size}x{self.dtype.short_name}> o {fmt(self.shape)}"

    __str__ = __repr__

    def nd(self) -> Any:
        """The elements as a numpy array of the flat shape (column-major)."""
        return self.array.reshape(_flat(self.shape), order="F")

    # -- elements ------------------------------------------------------------------------------------
    def __getitem__(self, index: Any) -> Any:
        if type(index) is int or (hasattr(index, "__index__") and not isinstance(index, (tuple, bool))):
            i = operator.index(index)
            n = self.array.size
            if not -n <= i < n:
                raise CuteValueError(f"flat index {i} is outside the {n} elements of {self!r}")
            return _python(self.array[i])
        from ..core.modes import slice_and_offset

        sub, offset = slice_and_offset(index, Layout(self.shape))
        if type(offset) is not int:
            raise CuteValueError(f"a host TensorSSA is indexed by static coordinates, got {index!r}")
        n = product(_flat(sub.shape))
        picked = [self.array[offset + sub(i)] for i in range(n)] if n else []
        if sub.shape == () or (type(sub.shape) is int and not any(c is None for c in flatten_unchecked(index)
                                                                  if type(index) is tuple)):
            return _python(picked[0])
        return HostTensorSSA(_np().array(picked, dtype=self.array.dtype), sub.shape, self.dtype)

    def map(self, f: Callable[[Any], Any]) -> HostTensorSSA:
        """``f`` applied to every element (as a Python number); the results keep a float type's width."""
        out = [f(_python(e)) for e in self.array]
        if self.dtype.is_float or not out or not all(type(x) in (int, bool) for x in out):
            dtype = self.dtype if self.dtype.is_float else dtype_of("Float32")
        else:
            dtype = self.dtype
        return HostTensorSSA(_np().array(out), self.shape, dtype)

    def to(self, dtype: DType | str) -> HostTensorSSA:
        """Every element converted to ``dtype``."""
        dtype = dtype_of(dtype)
        return HostTensorSSA(self.array.astype(_numpy_type(dtype)), self.shape, dtype)

    def broadcast_to(self, shape: Any) -> HostTensorSSA:
        """This value repeated along its modes of extent 1 to ``shape`` (as the DSL's ``broadcast_to``)."""
        np = _np()
        target = _flat(shape)
        try:
            out = np.broadcast_to(self.nd(), target)
        except ValueError:
            raise CuteValueError(f"broadcast_to: {fmt(self.shape)} does not broadcast to {fmt(shape)} (only modes of "
                                 f"extent 1 repeat)") from None
        return HostTensorSSA(out.reshape(-1, order="F"), shape, self.dtype)

    # -- arithmetic ----------------------------------------------------------------------------------
    def _binary(self, other: Any, op: str, reflected: bool) -> Any:
        np = _np()
        if isinstance(other, HostTensorSSA):
            a, b, shape = self.nd(), other.nd(), self.shape
            if other.shape != self.shape:
                try:
                    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
                except ValueError:
                    raise CuteValueError(f"elementwise {op} of TensorSSA of shapes {fmt(self.shape)} and "
                                         f"{fmt(other.shape)} (they do not broadcast)") from None
                shape = shape[0] if len(shape) == 1 else shape
        elif type(other) in (int, float, bool) or hasattr(other, "dtype"):
            a, b, shape = self.nd(), other, self.shape
        else:
            return NotImplemented
        x, y = (b, a) if reflected else (a, b)
        with np.errstate(all="ignore"):
            r = _OPS[op](x, y)
        r = np.asarray(r)
        wide = self.dtype.name == "Float64" or (isinstance(other, HostTensorSSA) and other.dtype.name == "Float64")
        if r.dtype == np.float64 and not wide:  # Python floats are weak: Float32 (the DSL's float type)
            r = r.astype(self.array.dtype if self.dtype.is_float else np.float32)
        return HostTensorSSA(r.reshape(-1, order="F"), shape, dtype_of(str(r.dtype)))

    def __neg__(self) -> HostTensorSSA:
        return HostTensorSSA(-self.array, self.shape, self.dtype)

    def __abs__(self) -> HostTensorSSA:
        return HostTensorSSA(abs(self.array), self.shape, self.dtype)

    def __invert__(self) -> HostTensorSSA:
        return HostTensorSSA(~self.array, self.shape, self.dtype)

    def reduce(self, op: Any, init_val: Any, reduction_profile: Any = 0) -> Any:
        """Fold elements with ``op`` (``ReductionOp`` ADD, MUL, MIN, MAX or a function of two values) from
        ``init_val`` in flat order: profile 0 folds all into one number; a profile marking modes ``None`` keeps
        them (a value of the kept shape); ``None`` returns this value (the kernel ``TensorSSA``'s rule)."""
        if reduction_profile is None:
            return self
        name = getattr(op, "name", None)
        table = {"ADD": operator.add, "MUL": operator.mul, "MIN": min, "MAX": max, "AND": operator.and_,
                 "OR": operator.or_, "XOR": operator.xor}
        f = table.get(str(name).upper()) if name is not None else op
        if f is None or not callable(f):
            raise CuteValueError(f"TensorSSA.reduce takes ADD, MUL, MIN, MAX, AND, OR, XOR or a function, got {op!r}")
        np = _np()
        start = self.array.dtype.type(init_val)
        if type(reduction_profile) is int:
            acc = start
            for e in self.array:
                acc = self.array.dtype.type(f(acc, e))
            return _python(acc)
        from ..core.modes import slice_

        t = self.array.dtype.type
        out = fold_modes(self.array, self.shape, reduction_profile, start, lambda a, e: t(f(a, e)))
        return HostTensorSSA(np.array(out, dtype=self.array.dtype), slice_(self.shape, reduction_profile), self.dtype)


def fold_modes(elements: Any, shape: Any, profile: Any, start: Any, f: Callable[[Any, Any], Any]) -> list[Any]:
    """Fold ``elements`` (in flat index order over the static ``shape``) by a reduction ``profile``: the modes it
    marks with an integer fold into ``start`` with ``f``, the modes it marks ``None`` stay. Returns the kept
    modes' values in their flat index order."""
    flat = _flat(shape)
    keep = _kept(profile, shape)
    out = [start] * product(tuple(e for e, k in zip(flat, keep) if k))
    for i, e in enumerate(elements):
        j, scale, rest = 0, 1, i
        for extent, k in zip(flat, keep):
            c, rest = rest % extent, rest // extent
            if k:
                j, scale = j + c * scale, scale * extent
        out[j] = f(out[j], e)
    return out


def _kept(profile: Any, shape: Any) -> list[bool]:
    """For each flat mode of ``shape``: whether ``profile`` keeps it (``None``) or folds it."""
    if type(profile) is tuple:
        shape = shape if type(shape) is tuple else (shape,)
        return [k for p, s in zip(profile, shape) for k in _kept(p, s)]
    n = len(flatten_unchecked(shape)) if type(shape) is tuple else 1
    return [profile is None] * n


def _operator(op: str, reflected: bool) -> Callable[[HostTensorSSA, Any], Any]:
    def method(self: HostTensorSSA, o: object) -> Any:
        return self._binary(o, op, reflected)

    method.__name__ = f"__{'r' if reflected else ''}{op}__"
    return method


for _op in _OPS:
    setattr(HostTensorSSA, f"__{_op}__", _operator(_op, False))
    if _op not in _COMPARE:
        setattr(HostTensorSSA, f"__r{_op}__", _operator(_op, True))
del _op
