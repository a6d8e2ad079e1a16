"""Run-time scalars in a jit function's host code: its ``Int32``/``Int64``/``Float32`` arguments and what the host
code computes from them.

A scalar argument of a jit function is a value of each call, not of the compile. The host code sees it as a
:class:`RunTimeScalar` (a :class:`~cute_py.tensor.dtypes.Scalar` that knows its argument's position); arithmetic
on it (``softmax_scale * LOG2_E``) gives a :class:`ScalarExpr`, an expression the launch evaluates for each call's
arguments before it fills the kernel parameter it is passed as. Neither has a static value: ``int()``, indexing,
``float()`` and ``bool()`` raise :class:`~cute_py.errors.StaticValueRequired` (annotate the parameter
``Constexpr`` to compile its value in).

Arithmetic follows the DSL's promotion: a float operand (a Python float or a ``Float32``) makes the result a
``Float32``, computed as IEEE single precision (each operation rounded once); integers stay integers (``Int64`` if
an operand is, else ``Int32``) and wrap at their width; ``/`` is a ``Float32`` division, ``//`` and ``%`` floor as
Python's.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from typing import Any, NoReturn

from ...errors import ArgumentError, StaticValueRequired
from ...tensor.dtypes import Float32, Int32, Int64, Scalar

__all__ = ["HostScalar", "RunTimeScalar", "ScalarExpr", "host_print"]

_OPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
    "//": lambda a, b: a // b, "%": lambda a, b: a % b,
}


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def _wrap(v: int, width: int) -> int:
    v &= (1 << width) - 1
    return v - (1 << width) if v >> (width - 1) else v


def _dtype_of(x):
    if isinstance(x, Scalar):
        return x.dtype
    if type(x) is float:
        return Float32
    if type(x) is int:
        return Int32 if -(1 << 31) <= x < (1 << 31) else Int64
    return None


class HostScalar(Scalar):
    """A run-time scalar of the host code (see the module): ``evaluate(scalars)`` is its value for a call's scalar
    arguments (``{argument index: value}``); ``describe()`` its expression (``(arg4 * 1.4426950408889634)``)."""

    __slots__ = ()

    def evaluate(self, scalars: Mapping[int, Any]) -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def _static(self, what) -> NoReturn:
        raise StaticValueRequired(f"{what} of the run-time {self.kind} {self.describe()} is not known while "
                                  f"compiling (it is a value of each call); annotate the parameter Constexpr to "
                                  f"compile its value in")

    def __index__(self) -> NoReturn:
        self._static("the int value")

    def __float__(self) -> NoReturn:
        self._static("the float value")

    def __bool__(self) -> NoReturn:
        self._static("the truth value")

    def _binary(self, op, a, b):
        da, db = _dtype_of(a), _dtype_of(b)
        if da is None or db is None:
            return NotImplemented
        if op == "/" or da.is_float or db.is_float:
            dtype = Float32
        else:
            dtype = Int64 if Int64 in (da, db) else Int32
        return ScalarExpr(op, (a, b), dtype)

    def __add__(self, o):
        return self._binary("+", self, o)

    def __radd__(self, o):
        return self._binary("+", o, self)

    def __sub__(self, o):
        return self._binary("-", self, o)

    def __rsub__(self, o):
        return self._binary("-", o, self)

    def __mul__(self, o):
        return self._binary("*", self, o)

    def __rmul__(self, o):
        return self._binary("*", o, self)

    def __truediv__(self, o):
        return self._binary("/", self, o)

    def __rtruediv__(self, o):
        return self._binary("/", o, self)

    def __floordiv__(self, o):
        return self._binary("//", self, o)

    def __rfloordiv__(self, o):
        return self._binary("//", o, self)

    def __mod__(self, o):
        return self._binary("%", self, o)

    def __rmod__(self, o):
        return self._binary("%", o, self)

    def __neg__(self):
        return self._binary("-", 0 if not self.dtype.is_float else 0.0, self)


class RunTimeScalar(HostScalar):
    """Scalar argument ``index`` of a jit function (``value``: its value at the compile)."""

    __slots__ = ("index",)

    def __init__(self, value: Any, kind: Any, index: int) -> None:
        super().__init__(kind, value)
        self.index = index

    def evaluate(self, scalars: Mapping[int, Any]) -> Any:
        return scalars[self.index]

    def describe(self) -> str:
        return f"arg{self.index}"


class ScalarExpr(HostScalar):
    """``a op b`` of run-time scalars and numbers, of type ``dtype`` (its ``value``: the compile's)."""

    __slots__ = ("op", "args")

    def __init__(self, op: str, args: tuple[Any, Any], dtype: Any) -> None:
        self.op, self.args = op, args
        super().__init__(dtype, _apply(op, [a.value if isinstance(a, Scalar) else a for a in args], dtype))

    def evaluate(self, scalars: Mapping[int, Any]) -> Any:
        values = [a.evaluate(scalars) if isinstance(a, HostScalar) else (a.value if isinstance(a, Scalar) else a)
                  for a in self.args]
        return _apply(self.op, values, self.dtype)

    def describe(self) -> str:
        a, b = (x.describe() if isinstance(x, HostScalar) else repr(x.value if isinstance(x, Scalar) else x)
                for x in self.args)
        return f"({a} {self.op} {b})"


def _apply(op: str, values: list[Any], dtype: Any) -> Any:
    """``values[0] op values[1]`` in ``dtype`` (see the module)."""
    a, b = values
    if dtype.is_float:
        a, b = _f32(float(a)), _f32(float(b))
        if b == 0.0 and op in ("/", "//", "%"):  # IEEE: no exception, an infinity or a NaN
            if op == "/" and a != 0.0 and a == a:
                return math.copysign(math.inf, a) * math.copysign(1.0, b)
            return math.nan
        if op == "//":
            return _f32(float(math.floor(a / b)))
        return _f32(_OPS[op](a, b))
    a, b = int(a), int(b)
    if op in ("//", "%") and b == 0:
        raise ArgumentError(f"the run-time value {a} {op} {b} divides by zero")
    return _wrap(_OPS[op](a, b), dtype.width)


def host_print(entry: tuple[list[tuple[str, bool]], tuple[Any, ...]], env: dict[str, int],
               scalars: dict[int, Any]) -> str:
    """The text (with its newline) of a host ``printf`` recorded while tracing, for a call whose run-time extents
    are ``env`` (leaf name -> value) and whose scalar arguments are ``scalars`` (argument index -> value)."""
    from ...core.symbolic import SymInt, substitute

    pieces, args = entry
    out, rest = [], iter(args)
    for text, placeholder in pieces:
        out.append(text)
        if placeholder:
            x = next(rest)
            if isinstance(x, HostScalar):
                x = x.evaluate(scalars)
            else:
                x = substitute(x, lambda s: s.evaluate(env) if isinstance(s, SymInt) else s)
            out.append(str(x))
    return "".join(out) + "\n"
