"""Traced run-time values: numbers of every CuTe DSL numeric type, which emit ``arith`` ops; what they share
(:class:`Traced`, the promoting operators, ``wrap``, ``convert``), :class:`TracedBool` and :class:`TracedFloat`.

:class:`TracedInt` (the integer types, signed and unsigned, 8 to 64 bits), :class:`TracedFloat` (Float16,
BFloat16, Float32, TFloat32, Float64 and the 8-bit floats) and :class:`TracedBool` (``Boolean``) each carry
their ``dtype``; ``x.to(dtype)`` converts (``cute.Float32(x)`` too). Binary operators between any two of them
or with Python numbers promote both operands by the CuTe DSL's rules (a Python ``int`` is an ``Int32``, a
``float`` a ``Float32``; see :mod:`.numeric`): ``+ - * / // % **``, comparisons, ``& | ^ << >>`` on integers,
unary ``-``, ``~`` and ``abs``. ``/`` of integers is a ``Float32`` division. Integers wrap around (two's
complement); ``//`` and ``%`` round toward minus infinity (Python's rule, also for floats: ``floor(a / b)`` and
``a - floor(a / b) * b``); a shift by the width or more gives 0 (``<<``, or ``>>`` of an unsigned or
non-negative value) or -1 (``>>`` of a negative value), as Python's shifts of a value held in that width.
Dividing an integer by a run-time zero gives an unspecified value, as in CUDA C++.

:class:`TracedInt` lives in :mod:`.traced_int` (it builds on this module and registers itself with
:func:`wrap`): a :class:`cute_py.core.int_tuple.DynamicInt` leaf whose operations with Python ints fold the
trivial cases and keep what is known of the value (non-negative, a known divisor).

Using a traced value where Python needs a concrete one (``if x:``, ``while``, ``and``/``or``,
``int(x)``, ``range(x)``) raises :class:`~cute_py.errors.TraceError` with the user's line.

``Int32``/``Int64``/``Float32`` mark host arguments as run-time kernel parameters
(``fn(Int32(n))`` or an annotation ``n: Int32``) and convert traced values (``Int64(x)``).

Every traced value remembers the run-time scope it was made in (see ``builder``): reading its
MLIR value (``.ir``, which every operation on it does) once that scope has ended raises a
:class:`TraceError` at the user's line, naming the variable, the loop or branch it came from,
and how to carry it out (``carry=``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from ...tensor.dtypes import Boolean, Float32, Int32, Scalar, dtype_of
from . import numeric
from .builder import current, current_scope
from ...errors import TraceError, user_frame

if TYPE_CHECKING:
    from ...tensor.dtypes import DType

__all__ = ["Traced", "TracedBool", "TracedFloat", "convert", "wrap", "operand_dtype", "binary", "minmax", "as_type",
           "install_operators", "ARITHMETIC", "BITWISE", "COMPARE", "TRACED_CLASSES"]


def _arith():
    return current().mlir.arith


def _variable_names(value):
    """The names the innermost user frame gives ``value`` (its local variables bound to that object)."""
    frame = user_frame()
    if frame is None:
        return []
    try:
        return sorted(name for name, v in frame.f_locals.items() if v is value)
    except Exception:  # an exotic frame: names are only a hint
        return []


def _out_of_scope(value):
    """The ``TraceError`` for using ``value`` after the run-time scope it was made in has ended."""
    scope, left = value.scope, value.scope
    while scope is not None and not scope.open:  # the outermost ended construct is the one to carry through
        left, scope = scope, scope.parent
    names = _variable_names(value)
    what = f"the run-time value of {', '.join(names)}" if names else "a run-time value"
    if left.kind == "kernel":
        return TraceError(f"{what} ({value!r}) belongs to a kernel that was already traced: values do not "
                          f"cross kernels; pass the value to this kernel as an argument instead")
    if "loop" in left.kind:
        why = "it changes with each iteration (a loop's index ends one step past its last iteration)"
    else:
        why = "it exists only where the branch ran"
    how = ("a variable of the kernel assigned in its own `if`/`for`/`while` is carried out of it by itself, but a "
           "value kept elsewhere (in a list, an attribute, or by a helper function without @cute.jit) is not: "
           "assign it to a variable of the kernel (or carry it with cute.range(..., carry=) / "
           "cute.compiler.if_(..., carry=))")
    return TraceError(f"{what} ({value!r}) was made inside the run-time {left.kind} at {left.file}:"
                      f"{left.line}, which has ended, so it has no value here: {why}; {how}")


class Traced:
    """What traced numbers share: ``ir`` is the MLIR value, readable while the scope of the value is open;
    ``to(dtype)`` converts; the operators that promote their operands (:func:`binary`) are defined here and
    specialised by the subclasses."""

    __slots__ = ("_ir", "scope")

    @property
    def ir(self) -> Any:
        scope = self.scope
        if scope is not None and not scope.open:
            raise _out_of_scope(self)
        return self._ir

    def to(self, dtype: DType | str) -> Any:
        """This value converted to ``dtype`` (a numeric type): rounding, truncation and saturation as PTX's
        ``cvt`` (see :mod:`.numeric`)."""
        dtype = dtype_of(dtype)
        if dtype is self.dtype:
            return self
        return wrap(numeric.convert(self.ir, self.dtype, dtype), dtype)

    def constant_value(self) -> int | float | None:
        """The number this value holds when the kernel made it from a constant (``cute.Int32(0)``), else
        ``None``: what a rule that accepts a static value (a multicast mask of 0) may still read."""
        owner = getattr(self._ir, "owner", None)
        if getattr(owner, "name", None) != "arith.constant":
            return None
        attr = owner.attributes["value"]
        value = getattr(attr, "value", None)
        return value if type(value) in (int, float) else None

    def __str__(self):
        return "?"

    def __float__(self) -> NoReturn:
        raise TraceError(f"a run-time {self.dtype.name} has no Python float value while tracing")


ARITHMETIC = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")
BITWISE = ("and", "or", "xor", "lshift", "rshift")
COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
_PY_NAMES = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
             "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>", "lt": "<", "le": "<=", "gt": ">",
             "ge": ">=", "eq": "==", "ne": "!="}


def operand_dtype(x: object) -> DType | None:
    """The numeric type of an operand: a traced value's, a host ``Scalar``'s, a Python number's (``int`` ->
    Int32, ``float`` -> Float32, ``bool`` -> Boolean); ``None`` for anything else."""
    if isinstance(x, (Traced, Scalar)):
        return x.dtype
    return numeric.python_dtype(x)


def as_type(x: Any, dtype: DType) -> Any:
    """The operand ``x`` as a traced value of ``dtype`` (a Python number or ``Scalar`` becomes a constant)."""
    if isinstance(x, Traced):
        return x.to(dtype)
    value = x.value if isinstance(x, Scalar) else x
    src = operand_dtype(x)
    if (type(value) is int and not src.is_float and src is not Boolean and not dtype.is_float
            and dtype is not Boolean and dtype.width >= src.width):
        # an integer constant of src (a Python int is an Int32 or Int64) converts as a value of src would:
        # sign-extended, then read in dtype's bits (u32 + (-1) is u32 - 1, as in the CuTe DSL and C)
        bits = value & ((1 << dtype.width) - 1)
        value = bits - (1 << dtype.width) if dtype.signed and bits >> (dtype.width - 1) else bits
    if src.is_float and not dtype.is_float and dtype is not Boolean:  # a float constant to an integer type
        return wrap(numeric.constant(value, src), src).to(dtype)
    return wrap(numeric.constant(value, dtype), dtype)


def binary(a: Any, b: Any, op: str) -> Any:
    """``a op b`` by the CuTe DSL's rules: both operands promoted to one type (see :mod:`.numeric`), the
    operation done in it; comparisons give a Boolean; ``/`` of integers is a Float32 division.
    ``NotImplemented`` when an operand is no number."""
    da, db = operand_dtype(a), operand_dtype(b)
    if da is None or db is None:
        return NotImplemented
    if op in BITWISE and (da.is_float or db.is_float):
        raise TraceError(f"{_PY_NAMES[op]} takes integers, got {da.name} and {db.name}")
    if op == "pow":
        if isinstance(b, Traced):
            raise TraceError("** takes a static Python int exponent; a run-time exponent is not supported")
        return _power(as_type(a, numeric.promote(da, db)), b)
    common = numeric.promote(da, db, arithmetic=op not in BITWISE and op not in COMPARE)
    if op == "truediv" and not common.is_float:
        common = Float32
    x, y = as_type(a, common), as_type(b, common)
    if common.is_float:
        if op in COMPARE:
            return TracedBool(numeric.float_compare(op, x.ir, y.ir, common))
        return TracedFloat(numeric.float_binary(op, x.ir, y.ir, common), common)
    if common is Boolean and op in COMPARE:
        return x._cmp_bool(y, op)
    return getattr(x, f"__{op}__")(y)


def _reflected(op):
    return lambda self, other: binary(other, self, op)


class TracedBool(Traced):
    """An ``i1`` run-time condition (``Boolean``). Combine with ``& | ^ ~``; branch with
    ``cute_py.compiler.if_``; in arithmetic it is 0 or 1 (two Booleans add as Int32)."""

    __slots__ = ()
    __hash__ = None
    dtype = Boolean

    def __init__(self, value: Any) -> None:
        self._ir = value
        self.scope = current_scope()

    def __bool__(self) -> NoReturn:
        raise TraceError("a run-time condition drives `if`, `while`, `and`, `or` and `not` in a kernel's own code; "
                         "in another function called from it, decorate that function with @cute.jit (its control "
                         "flow is then compiled too), or use cute.where / select")

    def _bin(self, other, op):
        b = current()
        o = other.ir if isinstance(other, TracedBool) else None
        if o is None:
            if type(other) is not bool:
                return NotImplemented
            o = b.const(int(other), 1)
        with b.at_end():
            return TracedBool(op(self.ir, o).result)

    def _logic(self, other, name, op):
        if isinstance(other, TracedBool) or type(other) is bool:
            return self._bin(other, getattr(_arith(), name))
        return binary(self, other, op)

    def __and__(self, o):
        return self._logic(o, "AndIOp", "and")

    def __rand__(self, o):
        return self._logic(o, "AndIOp", "and") if type(o) is bool else binary(o, self, "and")

    def __or__(self, o):
        return self._logic(o, "OrIOp", "or")

    def __ror__(self, o):
        return self._logic(o, "OrIOp", "or") if type(o) is bool else binary(o, self, "or")

    def __xor__(self, o):
        return self._logic(o, "XOrIOp", "xor")

    def __rxor__(self, o):
        return self._logic(o, "XOrIOp", "xor") if type(o) is bool else binary(o, self, "xor")

    def __invert__(self):
        return self._bin(True, _arith().XOrIOp)

    def _cmp_bool(self, other, op):
        if op not in ("eq", "ne"):  # ordered comparisons of Booleans: as 0 and 1
            return binary(self.to(Int32), other.to(Int32), op)
        b = current()
        arith = b.mlir.arith
        with b.at_end():
            return TracedBool(arith.CmpIOp(getattr(arith.CmpIPredicate, op), self.ir, other.ir).result)

    def __repr__(self):
        return "TracedBool(?)"


class TracedFloat(Traced):
    """A run-time float of ``dtype`` (Float32 by default; Float16, BFloat16, TFloat32, Float64, or an 8-bit
    float held as its bits, which converts but does not compute). Arithmetic rounds to nearest even."""

    __slots__ = ("dtype",)
    __hash__ = None

    def __init__(self, value: Any, dtype: DType = Float32) -> None:
        self._ir = value
        self.scope = current_scope()
        self.dtype = dtype

    def __bool__(self) -> NoReturn:
        raise TraceError("a run-time float has no truth value while tracing: compare it (x > 0); in a function "
                         "other than the kernel, decorate it with @cute.jit for its `if` to be compiled")

    def __neg__(self) -> TracedFloat:
        return TracedFloat(numeric.float_unary("neg", self.ir, self.dtype), self.dtype)

    def __pos__(self) -> TracedFloat:
        return self

    def __abs__(self) -> TracedFloat:
        return TracedFloat(numeric.float_unary("abs", self.ir, self.dtype), self.dtype)

    def min_(self, o: Any) -> Any:
        return minmax(self, o, "min")

    def max_(self, o: Any) -> Any:
        return minmax(self, o, "max")

    def __repr__(self):
        return f"TracedFloat({self.dtype.name})"


def minmax(a: Any, b: Any, op: str) -> Any:
    """The smaller (``op="min"``) or larger (``"max"``) of two numbers, promoted to one type; for floats NaN
    when either is NaN."""
    da, db = operand_dtype(a), operand_dtype(b)
    if da is None or db is None:
        raise TraceError(f"{op} takes numbers, got {a!r} and {b!r}")
    common = numeric.promote(da, db)
    x, y = as_type(a, common), as_type(b, common)
    if common.is_float:
        return TracedFloat(numeric.float_binary(op, x.ir, y.ir, common), common)
    if common is Boolean:
        x, y = x.to(Int32), y.to(Int32)
    return x.min_(y) if op == "min" else x.max_(y)


def _power(base, n):
    """``base ** n`` for a static Python int ``n``: repeated squaring (for floats each product is rounded, and a
    negative ``n`` gives ``1 / base ** -n``)."""
    if isinstance(n, Scalar):
        n = n.value
    if type(n) is not int:
        raise TraceError(f"** takes a static Python int exponent, got {n!r}")
    if n < 0:
        if not base.dtype.is_float:
            raise TraceError(f"a negative exponent ({n}) of a run-time integer has no integer value")
        return as_type(1, base.dtype) / _power(base, -n)
    result, square = None, base
    while n:
        if n & 1:
            result = square if result is None else result * square
        n >>= 1
        if n:
            square = square * square
    return as_type(1, base.dtype) if result is None else result


def install_operators(cls: type, ops: tuple[str, ...], guard: Callable[[Any, Any], bool] | None = None) -> None:
    """Give ``cls`` the promoting forms (through :func:`binary`) of the operators ``ops``; with ``guard``, the
    class's own forms stay for the operands ``guard(self, other)`` accepts."""
    for op in ops:
        for name, reflected in ((f"__{op}__", False), (f"__r{op}__", True)):
            if reflected and op in COMPARE:
                continue
            own = cls.__dict__.get(name)
            if own is not None and guard is None:
                continue
            setattr(cls, name, _operator(op, reflected, own, guard))


def _operator(op, reflected, own, guard):
    def method(self, other):
        if own is not None and guard(self, other):
            return own(self, other)
        return binary(other, self, op) if reflected else binary(self, other, op)

    method.__name__ = f"__{'r' if reflected else ''}{op}__"
    method.__annotations__ = {"other": "object", "return": "Any"}
    return method


install_operators(TracedBool, ARITHMETIC + COMPARE)
install_operators(TracedFloat, ARITHMETIC + COMPARE + BITWISE)


TRACED_CLASSES: dict[str, type] = {}  # "int": TracedInt, registered by the traced_int module (built on this one)


def wrap(value: Any, dtype: DType) -> Any:
    """The traced value of ``dtype`` holding the MLIR value ``value``."""
    if dtype is Boolean:
        return TracedBool(value)
    if dtype.is_float:
        return TracedFloat(value, dtype)
    return TRACED_CLASSES["int"](value, dtype.width, False, 1, dtype, index=False)


def convert(dtype: DType, x: Any) -> Any:
    """``dtype(x)`` in a kernel being traced (``cute.Int32(x)``, ``cute.Float16(x)``...): a traced value converted
    (``x.to(dtype)``); a Python number becomes a run-time value of ``dtype`` holding it (as in the CuTe DSL: a
    ``k = cute.Int32(0)`` that a run-time loop updates is a value of the kernel, not of Python). The number must
    fit the type (``ArgumentError`` otherwise, as on the host)."""
    if isinstance(x, Traced):
        return x.to(dtype)
    if operand_dtype(x) is None:
        raise TraceError(f"{dtype.name}() takes a number (a traced value or a Python int, float or bool), "
                         f"got {x!r}")
    return as_type(Scalar(dtype, x), dtype)
