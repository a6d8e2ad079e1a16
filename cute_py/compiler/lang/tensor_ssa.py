"""Register values of whole tensors (the CuTe DSL's ``TensorSSA``): ``t.load()``, elementwise arithmetic, ``t.store``.

``t.load()`` of a tensor (registers, shared or global memory; a static number of elements) is a
:class:`TensorSSA`: its elements, in the order of the tensor's flat (column-major) indices, with its shape and
element type. Arithmetic, comparisons and ``cute.math`` functions apply element by element, with the numbers'
promotion rules; a Python number or traced scalar broadcasts; two TensorSSA must have the same shape.
``.to(dtype)`` converts, ``cute.where(cond, a, b)`` selects, ``.reduce(op, init, profile)`` folds every element (profile 0) or the modes a profile marks.
``t.store(v)`` writes a TensorSSA (or a scalar, broadcast) into a tensor of the same size; ``t.fill(x)`` is
``t.store(x)``.
"""

from __future__ import annotations

import abc

import builtins
import enum
import math
from collections.abc import Callable
from typing import Any

from ...core.congruence import is_weakly_congruent
from ...core.int_tuple import product, short_repr
from ...core.modes import slice_
from ...errors import TraceError
from ...tensor.host_ssa import HostTensorSSA, fold_modes
from ...tensor.dtypes import DType, dtype_of
from .values import as_type, binary, minmax, operand_dtype
from .traced_int import select

__all__ = ["TensorSSA", "ReductionOp", "load_tensor", "store_tensor", "where", "maximum", "minimum"]

_OPS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift",
        "lt", "le", "gt", "ge", "eq", "ne")


def _size(tensor: Any, what: str) -> int:
    n = product(tensor.shape)
    if type(n) is not int:
        raise TraceError(f"{what} needs a tensor of static size, got the shape {tensor.shape}")
    return n


class TensorSSA(metaclass=abc.ABCMeta):
    """The elements of a tensor as one register value: ``shape``, ``dtype`` (also ``element_type``) and the
    elements in flat index order (``v[i]``). The host code's value (``tensor.host_ssa.HostTensorSSA``) is one
    too for ``isinstance``, as the DSL has one ``TensorSSA``."""

    __slots__ = ("elements", "shape", "dtype")
    __hash__ = None

    def __init__(self, elements: list[Any], shape: Any, dtype: DType) -> None:
        self.elements, self.shape, self.dtype = list(elements), shape, dtype

    @property
    def element_type(self) -> DType:
        return self.dtype

    def __len__(self) -> int:
        return len(self.elements)

    def __getitem__(self, i: int) -> Any:
        if type(i) is not int or not -len(self.elements) <= i < len(self.elements):
            raise TraceError(f"a TensorSSA is indexed by a static flat index in [0, {len(self.elements)}), got "
                             f"{short_repr(i)}")
        return self.elements[i]

    def __bool__(self) -> bool:
        raise TraceError("a TensorSSA has no truth value: reduce it, or use cute.where")

    def __repr__(self) -> str:
        return f"TensorSSA({self.dtype.name}, shape={self.shape})"

    def map(self, f: Callable[[Any], Any]) -> TensorSSA:
        """``f`` applied to every element (the result type is that of ``f``'s results)."""
        out = [f(e) for e in self.elements]
        return TensorSSA(out, self.shape, operand_dtype(out[0]) if out else self.dtype)

    def _zip(self, other: Any, op: str, reflected: bool) -> TensorSSA:
        if isinstance(other, TensorSSA):
            if len(other.elements) != len(self.elements) or product(other.shape) != product(self.shape):
                raise TraceError(f"elementwise {op} of TensorSSA of shapes {self.shape} and {other.shape}")
            pairs = zip(self.elements, other.elements)
        elif operand_dtype(other) is not None:
            pairs = ((e, other) for e in self.elements)
        else:
            return NotImplemented
        out = [binary(b, a, op) if reflected else binary(a, b, op) for a, b in pairs]
        return TensorSSA(out, self.shape, operand_dtype(out[0]) if out else self.dtype)

    def __neg__(self) -> TensorSSA:
        return self.map(lambda e: -e)

    def __abs__(self) -> TensorSSA:
        return self.map(abs)

    def __invert__(self) -> TensorSSA:
        return self.map(lambda e: ~e)

    def to(self, dtype: DType | str) -> TensorSSA:
        """Every element converted to ``dtype`` (see ``x.to`` of a number)."""
        dtype = dtype_of(dtype)
        return TensorSSA([as_type(e, dtype) for e in self.elements],
                         self.shape, dtype)

    def reduce(self, op: Any, init_val: Any, reduction_profile: Any = 0) -> Any:
        """Fold elements with ``op`` (a ``ReductionOp``: ADD, MUL, MIN, MAX, AND, OR, XOR, or a function of two
        values) from ``init_val``, as the CuTe DSL's ``reduce``: ``reduction_profile`` 0 (any int) folds every
        element into one value; a profile weakly congruent to the shape keeps the modes marked ``None`` and folds
        the others, giving a TensorSSA of ``slice_(shape, profile)`` (``(None, 1)`` on ``(4, 5)``: a sum per row,
        shape ``(4,)``); ``None`` returns the TensorSSA itself. Elements fold in flat index order."""
        if reduction_profile is None:
            return self
        f = _reduction(op)
        if type(reduction_profile) is int:
            acc = init_val
            for e in self.elements:
                acc = f(acc, e)
            return acc
        if not is_weakly_congruent(reduction_profile, self.shape):
            raise TraceError(f"TensorSSA.reduce: the reduction profile {reduction_profile} is not weakly congruent "
                             f"to the shape {self.shape}")
        out = fold_modes(self.elements, self.shape, reduction_profile, init_val, f)
        dtype = operand_dtype(out[0]) if out else self.dtype
        return TensorSSA(out, slice_(self.shape, reduction_profile), dtype)


class ReductionOp(enum.Enum):
    """The CuTe DSL's ``cute.ReductionOp``: how ``TensorSSA.reduce`` folds (the TMA reduction kinds are
    ``cpasync.ReductionOp``, another enum, as in the DSL)."""

    ADD = "add"
    MUL = "mul"
    MAX = "max"
    MIN = "min"


def _reduction(op: Any) -> Callable[[Any, Any], Any]:
    if callable(op) and not hasattr(op, "name"):
        return op
    name = getattr(op, "name", str(op)).upper()
    table = {"ADD": lambda a, b: a + b, "MUL": lambda a, b: a * b, "MIN": lambda a, b: minmax(a, b, "min"),
             "MAX": lambda a, b: minmax(a, b, "max"), "AND": lambda a, b: a & b, "OR": lambda a, b: a | b,
             "XOR": lambda a, b: a ^ b}
    if name not in table:
        raise TraceError(f"TensorSSA.reduce takes ADD, MUL, MIN, MAX, AND, OR, XOR or a function, got {op!r}")
    return table[name]


def _operator(op: str, reflected: bool) -> Callable[[TensorSSA, Any], Any]:
    def method(self: TensorSSA, o: object) -> Any:
        return self._zip(o, op, reflected)

    method.__name__ = f"__{'r' if reflected else ''}{op}__"
    return method


def _install() -> None:
    for op in _OPS:
        setattr(TensorSSA, f"__{op}__", _operator(op, False))
        if op not in ("lt", "le", "gt", "ge", "eq", "ne"):
            setattr(TensorSSA, f"__r{op}__", _operator(op, True))


_install()
TensorSSA.register(HostTensorSSA)


def _in_memory(tensor: Any) -> bool:
    """Whether ``tensor`` lies in shared or global memory (its loads and stores can be vectors)."""
    from ...tensor.pointer import AddressSpace, Pointer

    engine = getattr(tensor, "engine", None)
    return isinstance(engine, Pointer) and engine.memspace in (AddressSpace.smem, AddressSpace.gmem)


def _staging(tensor: Any) -> Any:
    """A register fragment shaped like the memory ``tensor`` (the same flat indices), for one vectorised copy."""
    from .registers import make_fragment_like

    return make_fragment_like(tensor)


def load_tensor(tensor: Any, copy: Callable[[Any, Any], None] | None = None) -> TensorSSA:
    """Every element of ``tensor`` (registers or memory, static size) as a :class:`TensorSSA`; with ``copy`` (the
    kernel's ``cute.copy``), a shared- or global-memory tensor is read by one copy into registers, with the widest
    vectors its layout and alignment allow."""
    n = _size(tensor, "Tensor.load()")
    if copy is not None and _in_memory(tensor):
        frag = _staging(tensor)
        copy(tensor, frag)
        tensor = frag
    return TensorSSA([tensor[i] for i in range(n)], tensor.shape, tensor.element_type)


def store_tensor(tensor: Any, value: Any, copy: Callable[[Any, Any], None] | None = None) -> None:
    """Write ``value`` (a TensorSSA of the tensor's size, or a scalar for every element) into ``tensor``; with
    ``copy``, into shared or global memory by one vectorised copy from registers."""
    n = _size(tensor, "Tensor.store()")
    if isinstance(value, TensorSSA):
        if len(value.elements) != n:
            raise TraceError(f"Tensor.store of a TensorSSA of {len(value.elements)} elements into a tensor of {n}")
        values = value.elements
    elif operand_dtype(value) is None:
        raise TraceError(f"Tensor.store takes a TensorSSA or a number, got {short_repr(value)}")
    else:
        values = [value] * n
    target = _staging(tensor) if copy is not None and _in_memory(tensor) else tensor
    for i, e in enumerate(values):
        target[i] = e
    if target is not tensor:
        copy(target, tensor)


def where(cond: Any, a: Any, b: Any, *, loc: Any = None, ip: Any = None) -> Any:
    """``a`` where ``cond`` holds, else ``b``, element by element (TensorSSA broadcast with scalars; on scalars,
    ``select``). ``loc`` and ``ip`` (the DSL's MLIR location and insertion point) are accepted and unused."""
    hosts = [v for v in (cond, a, b) if isinstance(v, HostTensorSSA)]
    if hosts:  # host code: numpy's where, in the value operand's type
        import numpy as np

        pick = np.where(*(v.nd() if isinstance(v, HostTensorSSA) else v for v in (cond, a, b)))
        kind = next((v for v in (a, b) if isinstance(v, HostTensorSSA)), hosts[0])
        return HostTensorSSA(pick.reshape(-1, order="F"), hosts[0].shape, kind.dtype)
    tensors = [v for v in (cond, a, b) if isinstance(v, TensorSSA)]
    if not tensors:
        return select(cond, a, b)
    n, shape = len(tensors[0].elements), tensors[0].shape
    if any(len(t.elements) != n for t in tensors):
        raise TraceError("cute.where of TensorSSA of different sizes")

    def at(v: Any, i: int) -> Any:
        return v.elements[i] if isinstance(v, TensorSSA) else v

    out = [select(at(cond, i), at(a, i), at(b, i)) for i in range(n)]
    return TensorSSA(out, shape, operand_dtype(out[0]) if out else tensors[0].dtype)


def _fold(op: str, args: tuple[Any, ...]) -> Any:
    if not args:
        raise TraceError(f"cute.{op} takes at least one value")
    if len(args) == 1 and isinstance(args[0], TensorSSA):
        return args[0].reduce(op.upper(), args[0].elements[0], 0)
    acc = args[0]
    for v in args[1:]:
        if isinstance(acc, TensorSSA) or isinstance(v, TensorSSA):
            t = acc if isinstance(acc, TensorSSA) else v
            a = acc.elements if isinstance(acc, TensorSSA) else [acc] * len(t.elements)
            b = v.elements if isinstance(v, TensorSSA) else [v] * len(t.elements)
            if len(a) != len(b):
                raise TraceError(f"cute.{op} of TensorSSA of different sizes")
            out = [minmax(x, y, op) for x, y in zip(a, b)]
            acc = TensorSSA(out, t.shape, operand_dtype(out[0]) if out else t.dtype)
        elif type(acc) in (int, float) and type(v) in (int, float):
            acc = _python_minmax(op, acc, v)
        else:
            acc = minmax(acc, v, op)
    return acc


def _python_minmax(op: str, a: int | float, b: int | float) -> int | float:
    """``max``/``min`` of two Python numbers as a kernel computes them on floats (IEEE 754 ``maximum`` and
    ``minimum``): NaN if either is NaN, and -0.0 below +0.0; so either order gives the same bits."""
    if type(a) is float or type(b) is float:
        if math.isnan(a) or math.isnan(b):
            return math.nan
        if a == b == 0:
            first_positive = math.copysign(1.0, a) > 0
            return a if first_positive == (op == "max") else b
    return (builtins.max if op == "max" else builtins.min)(a, b)


def maximum(*args: Any) -> Any:
    """``cute.max``: the largest of numbers (promoted to one type; Python numbers stay Python), element by element
    over TensorSSA, or the largest element of a single TensorSSA; a NaN operand gives NaN."""
    return _fold("max", args)


def minimum(*args: Any) -> Any:
    """``cute.min``: the smallest of numbers, element by element over TensorSSA (see :func:`maximum`)."""
    return _fold("min", args)
