"""Traced run-time values: numbers of every CuTe DSL numeric type, which emit ``arith`` ops.

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

:class:`TracedInt` is a :class:`cute_py.core.int_tuple.DynamicInt` leaf, so layouts, ``crd2idx``,
swizzles and coordinate tensors evaluate on it and emit integer arithmetic. An operation with
a Python ``int`` folds the trivial cases (``x + 0``, ``x * 1``, ``x * 0 -> 0``) so static parts
stay static. ``//`` and ``%`` have Python's (floor) semantics; on values known to be
non-negative (thread/block indices and what is computed from them with non-negative
constants) they become unsigned divisions, shifts and masks.

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

import math
from typing import TYPE_CHECKING, Any, NoReturn

from ...core.int_tuple import DynamicInt
from ...tensor.dtypes import (Boolean, Float32, Int8, Int16, Int32, Int64, Scalar, dtype_of)
from . import numeric
from .builder import current, current_scope
from ...errors import StaticTraceError, TraceError, user_frame

if TYPE_CHECKING:
    from ...tensor.dtypes import DType

__all__ = ["TracedInt", "TracedBool", "TracedFloat", "convert", "as_value", "select", "wrap", "operand_dtype",
           "binary", "minmax", "as_type"]


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


class _Traced:
    """What traced numbers share: ``ir`` is the MLIR value, readable while the scope of the value is open;
    ``to(dtype)`` converts; the operators that promote their operands (:func:`binary`) are defined here and
    specialised by the subclasses."""

    __slots__ = ("_ir", "scope")

    @property
    def ir(self):
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

    def __str__(self):
        return "?"

    def __float__(self):
        raise TraceError(f"a run-time {self.dtype.name} has no Python float value while tracing")


_ARITHMETIC = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")
_BITWISE = ("and", "or", "xor", "lshift", "rshift")
_COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
_PY_NAMES = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
             "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>", "lt": "<", "le": "<=", "gt": ">",
             "ge": ">=", "eq": "==", "ne": "!="}


def operand_dtype(x: object) -> DType | None:
    """The numeric type of an operand: a traced value's, a host ``Scalar``'s, a Python number's (``int`` ->
    Int32, ``float`` -> Float32, ``bool`` -> Boolean); ``None`` for anything else."""
    if isinstance(x, (_Traced, Scalar)):
        return x.dtype
    return numeric.python_dtype(x)


def as_type(x: Any, dtype: DType) -> Any:
    """The operand ``x`` as a traced value of ``dtype`` (a Python number or ``Scalar`` becomes a constant)."""
    if isinstance(x, _Traced):
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
    if op in _BITWISE and (da.is_float or db.is_float):
        raise TraceError(f"{_PY_NAMES[op]} takes integers, got {da.name} and {db.name}")
    if op == "pow":
        if isinstance(b, _Traced):
            raise TraceError("** takes a static Python int exponent; a run-time exponent is not supported")
        return _power(as_type(a, numeric.promote(da, db)), b)
    common = numeric.promote(da, db, arithmetic=op not in _BITWISE and op not in _COMPARE)
    if op == "truediv" and not common.is_float:
        common = Float32
    x, y = as_type(a, common), as_type(b, common)
    if common.is_float:
        if op in _COMPARE:
            return TracedBool(numeric.float_compare(op, x.ir, y.ir, common))
        return TracedFloat(numeric.float_binary(op, x.ir, y.ir, common), common)
    if common is Boolean and op in _COMPARE:
        return x._cmp_bool(y, op)
    return getattr(x, f"__{op}__")(y)


def _reflected(op):
    return lambda self, other: binary(other, self, op)


class TracedBool(_Traced):
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


class TracedFloat(_Traced):
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


def _install_operators(cls, ops, guard=None):
    """Give ``cls`` the promoting forms (through :func:`binary`) of the operators ``ops``; with ``guard``, the
    class's own forms stay for the operands ``guard(self, other)`` accepts."""
    for op in ops:
        for name, reflected in ((f"__{op}__", False), (f"__r{op}__", True)):
            if reflected and op in _COMPARE:
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


_install_operators(TracedBool, _ARITHMETIC + _COMPARE)
_install_operators(TracedFloat, _ARITHMETIC + _COMPARE + _BITWISE)


_CMP = {"lt": ("slt", "ult"), "le": ("sle", "ule"), "gt": ("sgt", "ugt"), "ge": ("sge", "uge"),
        "eq": ("eq", "eq"), "ne": ("ne", "ne")}


_SIGNED = {8: Int8, 16: Int16, 32: Int32, 64: Int64}
_WRAPPING = ("AddIOp", "MulIOp")  # the operations whose non-negative operands may give a negative (wrapped) result
_INDEX_TYPES = (Int32, Int64)  # the types of index arithmetic: mixed with each other and with Python ints directly


class TracedInt(_Traced, DynamicInt):
    """A run-time integer of the kernel being traced, of ``dtype`` (Int8...Int64, Uint8...Uint64; by default the
    signed type of ``width`` bits).

    ``nonneg`` records that the value is known to be >= 0 (enables unsigned division; always true for the
    unsigned types); ``known_divisor`` is a positive int known to divide the value (``bx * 128 + 64`` -> 64),
    which pointers use to keep their alignment across run-time offsets.

    ``index`` marks index arithmetic (thread and block indices, loop counters, coordinates and what is computed
    from them), which is taken not to overflow: a sum or product of non-negative indices is non-negative. A
    *data* value (loaded from memory, converted, or made by ``wrap``) wraps around like any integer, so its sums
    and products know nothing of their sign.
    """

    __slots__ = ("width", "nonneg", "known_divisor", "dtype", "index")

    def __init__(self, value: Any, width: int = 32, nonneg: bool = False, known_divisor: int = 1,
                 dtype: DType | None = None, index: bool = True) -> None:
        self._ir = value
        self.scope = current_scope()
        self.dtype = dtype if dtype is not None else _SIGNED[width]
        self.width = self.dtype.width
        self.nonneg = nonneg or not self.dtype.signed
        self.known_divisor = known_divisor
        self.index = index

    def assume_divisor_(self, n: int) -> TracedInt:
        """This value, known to be divisible by ``n`` too (``cute.assume(x, divby=n)``: the caller's promise)."""
        return TracedInt(self._ir, self.width, self.nonneg, math.lcm(self.known_divisor, n), self.dtype, self.index)

    def __str__(self):
        return "?" if self.known_divisor == 1 else f"?{{div={self.known_divisor}}}"

    def _fast(self, other):
        """True when ``self op other`` needs no promotion: the same type, or index types and Python ints."""
        if isinstance(other, TracedInt):
            return other.dtype is self.dtype or (self.dtype in _INDEX_TYPES and other.dtype in _INDEX_TYPES)
        return type(other) is int and self.dtype in _INDEX_TYPES

    def to(self, dtype: DType | str) -> Any:
        """This value converted to ``dtype``; a widening to another integer type keeps what is known of it."""
        dtype = dtype_of(dtype)
        if dtype is self.dtype:
            return self
        if dtype.is_integer and dtype.width >= self.width and (self.dtype.signed or self.nonneg):
            return TracedInt(_widen(self, dtype.width), dtype.width, self.nonneg, self.known_divisor, dtype,
                             self.index)
        return _Traced.to(self, dtype)

    # -- helpers ------------------------------------------------------------------------------
    def _coerce(self, other):
        """(self ir, other ir, width, other nonneg) with both at the wider width; None if not an int."""
        b = current()
        if isinstance(other, TracedInt):
            w = max(self.width, other.width)
            return _widen(self, w), _widen(other, w), w, other.nonneg
        if type(other) is bool or type(other) is not int:
            return None
        w = self.width
        if not -(1 << (w - 1)) <= other < (1 << (w - 1)):
            w = 64
            if not -(1 << 63) <= other < (1 << 63):
                raise TraceError(f"the constant {other} does not fit in 64 bits")
        return _widen(self, w), b.const(other, w), w, other >= 0

    def _bin(self, other, opname, reverse=False, nonneg_rule=None, div_rule=None):
        c = self._coerce(other)
        if c is None:
            return NotImplemented
        a, o, w, o_nonneg = c
        if reverse:
            a, o = o, a
        b = current()
        with b.at_end():
            res = getattr(b.mlir.arith, opname)(a, o).result
        index = self.index and (not isinstance(other, TracedInt) or other.index)
        nn = nonneg_rule(self.nonneg, o_nonneg) if nonneg_rule else False
        div = div_rule(self.known_divisor, _divisor(other)) if div_rule else 1
        if not index and opname in _WRAPPING:  # data wraps around: a sum or product may turn negative
            nn, div = False, _pow2(max(1, div))
        if w == self.width:
            dtype = self.dtype
        else:
            dtype = other.dtype if isinstance(other, TracedInt) and other.width == w else _SIGNED[w]
        return TracedInt(res, w, nn, max(1, div), dtype, index)

    # -- arithmetic ---------------------------------------------------------------------------
    def __add__(self, o):
        if type(o) is int and o == 0:
            return self
        return self._bin(o, "AddIOp", nonneg_rule=lambda a, b: a and b, div_rule=math.gcd)

    def __radd__(self, o):
        if type(o) is int and o == 0:
            return self
        return self._bin(o, "AddIOp", True, nonneg_rule=lambda a, b: a and b, div_rule=math.gcd)

    def __sub__(self, o):
        if type(o) is int and o == 0:
            return self
        return self._bin(o, "SubIOp", div_rule=math.gcd)

    def __rsub__(self, o):
        return self._bin(o, "SubIOp", True, div_rule=math.gcd)

    def __mul__(self, o):
        if type(o) is int:
            if o == 0:
                return 0
            if o == 1:
                return self
        return self._bin(o, "MulIOp", nonneg_rule=lambda a, b: a and b, div_rule=lambda a, b: a * b)

    def __rmul__(self, o):
        return self.__mul__(o)

    def __neg__(self):
        return as_type(0, self.dtype) - self

    def __pos__(self):
        return self

    def __invert__(self):
        return self ^ as_type(-1 if self.dtype.signed else (1 << self.width) - 1, self.dtype)

    def __abs__(self):
        return self if self.nonneg else select(self < 0, -self, self)

    def __floordiv__(self, o):
        if type(o) is int:
            if o == 0:
                raise TraceError("integer division by zero")
            if o == 1:
                return self
            if o > 0 and self.nonneg:
                if o & (o - 1) == 0:
                    k = o.bit_length() - 1
                    return self._bin(k, "ShRUIOp", nonneg_rule=lambda a, b: True,
                                     div_rule=lambda a, b: _pow2(a) >> k)
                return self._bin(o, "DivUIOp", nonneg_rule=lambda a, b: True)
        if isinstance(o, TracedInt) and self.nonneg and o.nonneg:
            return self._bin(o, "DivUIOp", nonneg_rule=lambda a, b: True)
        return self._floor(o, reverse=False)

    def __rfloordiv__(self, o):
        return self._floor(o, reverse=True)

    def _floor(self, o, reverse):
        # floor division: q = a / b (truncating); q -= 1 when the remainder is non-zero and the signs differ
        q = self._bin(o, "DivSIOp", reverse)
        if q is NotImplemented:
            return q
        r = self._bin(o, "RemSIOp", reverse)
        d = self if reverse else o
        fix = (r != 0) & (_sign_neg(r) ^ _sign_neg(d))
        return select(fix, q - 1, q)

    def __mod__(self, o):
        if type(o) is int:
            if o == 0:
                raise TraceError("integer modulo by zero")
            if o == 1:
                return 0
            if o > 0 and self.nonneg:
                if o & (o - 1) == 0:
                    return self._bin(o - 1, "AndIOp", nonneg_rule=lambda a, b: True)
                return self._bin(o, "RemUIOp", nonneg_rule=lambda a, b: True)
        if isinstance(o, TracedInt) and self.nonneg and o.nonneg:
            return self._bin(o, "RemUIOp", nonneg_rule=lambda a, b: True)
        return self._pymod(o, reverse=False)

    def __rmod__(self, o):
        return self._pymod(o, reverse=True)

    def _pymod(self, o, reverse):
        # Python's modulo: r = a rem b; r += b when r != 0 and r, b differ in sign
        r = self._bin(o, "RemSIOp", reverse)
        if r is NotImplemented:
            return r
        d = self if reverse else o
        fix = (r != 0) & (_sign_neg(r) ^ _sign_neg(d))
        return select(fix, r + d, r)

    # bitwise operations keep the power-of-two part of what divides their operands
    def __and__(self, o):
        return self._bin(o, "AndIOp", nonneg_rule=lambda a, b: a or b, div_rule=lambda a, b: max(_pow2(a), _pow2(b)))

    __rand__ = __and__

    def __or__(self, o):
        return self._bin(o, "OrIOp", nonneg_rule=lambda a, b: a and b, div_rule=lambda a, b: min(_pow2(a), _pow2(b)))

    __ror__ = __or__

    def __xor__(self, o):
        if type(o) is int and o == 0:
            return self
        return self._bin(o, "XOrIOp", nonneg_rule=lambda a, b: a and b,
                         div_rule=lambda a, b: min(_pow2(a), _pow2(b)))

    __rxor__ = __xor__

    def __lshift__(self, o):
        if type(o) is int:
            if o < 0:
                raise TraceError(f"negative shift count {o}")
            if o == 0:
                return self
            if o >= self.width:  # every bit shifted out
                return as_type(0, self.dtype)
        shift = o if type(o) is int else None
        res = self._bin(o, "ShLIOp", div_rule=lambda a, b: a << shift if shift is not None else 1)
        return _clamp_shift(res, o, lambda: as_type(0, res.dtype))

    def __rshift__(self, o):
        if type(o) is int:
            if o < 0:
                raise TraceError(f"negative shift count {o}")
            if o == 0:
                return self
            if o >= self.width:  # the sign (0 for a non-negative value) fills every bit
                return as_type(0, self.dtype) if self.nonneg else self >> (self.width - 1)
        shift = o if type(o) is int else None
        res = self._bin(o, "ShRUIOp" if self.nonneg else "ShRSIOp", nonneg_rule=lambda a, b: a,
                        div_rule=lambda a, b: _pow2(a) >> shift if shift is not None else 1)
        return _clamp_shift(res, o, lambda: as_type(0, res.dtype) if res.nonneg else res >> (res.width - 1))

    def min_(self, o: Any) -> Any:
        if not self._fast(o):
            return minmax(self, o, "min")
        return self._bin(o, "MinUIOp" if self.nonneg and _nonneg(o) else "MinSIOp",
                         nonneg_rule=lambda a, b: a and b)

    def max_(self, o: Any) -> Any:
        if not self._fast(o):
            return minmax(self, o, "max")
        return self._bin(o, "MaxUIOp" if self.nonneg and _nonneg(o) else "MaxSIOp",
                         nonneg_rule=lambda a, b: a or b)

    def signum_(self) -> TracedInt:
        return select(self > 0, 1, 0) - select(self < 0, 1, 0)

    # -- comparisons: run-time conditions -----------------------------------------------------
    def _cmp(self, o, kind):
        c = self._coerce(o)
        if c is None:
            return NotImplemented
        a, b_, w, o_nonneg = c
        pred = _CMP[kind][1 if (self.nonneg and o_nonneg) else 0]
        b = current()
        arith = b.mlir.arith
        with b.at_end():
            return TracedBool(arith.CmpIOp(getattr(arith.CmpIPredicate, pred), a, b_).result)

    def __lt__(self, o):
        return self._cmp(o, "lt")

    def __le__(self, o):
        return self._cmp(o, "le")

    def __gt__(self, o):
        return self._cmp(o, "gt")

    def __ge__(self, o):
        return self._cmp(o, "ge")

    def __eq__(self, o: object) -> TracedBool:
        return self._cmp(o, "eq")

    def __ne__(self, o):
        return self._cmp(o, "ne")

    __hash__ = None

    # -- what cannot be traced ----------------------------------------------------------------
    def __bool__(self) -> NoReturn:
        raise TraceError("the truth value of a run-time integer is not known while tracing: a kernel's own "
                         "`if`/`while`/`and`/`or`/`not` handle it; in another function, decorate it with @cute.jit "
                         "(or use cute.where / select)")

    def __int__(self) -> NoReturn:
        raise StaticTraceError("a run-time integer has no Python int value while tracing (use it in arithmetic, "
                               "or pass the value as a static Python int; a loop index is static in a loop over "
                               "cute.range_constexpr(...))")

    __index__ = __int__

    def __repr__(self):
        return f"TracedInt(i{self.width})"


_install_operators(TracedInt, _ARITHMETIC + _BITWISE + _COMPARE, guard=TracedInt._fast)


def _clamp_shift(res, amount, fill):
    """``res`` where the run-time shift ``amount`` is below the width, else ``fill()`` (LLVM leaves a shift by the
    width or more undefined; Python and PTX give the fill)."""
    if type(amount) is int:
        return res
    b = current()
    arith = b.mlir.arith
    a = _widen(amount, res.width)
    limit = b.const(res.width, res.width)
    with b.at_end():
        big = TracedBool(arith.CmpIOp(arith.CmpIPredicate.uge, a, limit).result)
    return select(big, fill(), res)


def _pow2(d):
    """The largest power of two dividing ``d`` (> 0)."""
    return d & -d


def _divisor(o):
    """A positive int known to divide ``o`` (its absolute value for an int; 0 is divisible by anything)."""
    if type(o) is int:
        return abs(o) if o else 1 << 62
    return getattr(o, "known_divisor", 1)


def _nonneg(o):
    return (type(o) is int and o >= 0) or (isinstance(o, TracedInt) and o.nonneg)


def _sign_neg(x):
    if type(x) is int:
        return bool_const(x < 0)
    return x < 0


def bool_const(v):
    return TracedBool(current().const(int(bool(v)), 1))


def _widen(x, width):
    if x.width == width:
        return x.ir
    b = current()
    arith = b.mlir.arith
    with b.at_end():
        if x.width < width:
            op = arith.ExtUIOp if x.nonneg else arith.ExtSIOp
            return op(b.int_type(width), x.ir).result
        return arith.TruncIOp(b.int_type(width), x.ir).result


def as_value(x: TracedInt | int, width: int = 32) -> Any:
    """The MLIR value of an int leaf at ``width`` bits (a Python int becomes a constant)."""
    if isinstance(x, TracedInt):
        return _widen(x, width)
    if type(x) is int:
        return current().const(x, width)
    raise TraceError(f"expected an integer (a Python int or a traced Int32/Int64), got {x!r}")


def select(cond: TracedBool | bool, a: Any, b: Any) -> Any:
    """``a`` where the run-time ``cond`` holds, else ``b`` (numbers, promoted to one type; a static ``cond`` picks
    at trace time)."""
    if type(cond) is bool:
        return a if cond else b
    if not isinstance(cond, TracedBool):
        raise TraceError(f"select needs a bool or a run-time condition, got {cond!r}")
    da, db = operand_dtype(a), operand_dtype(b)
    if da is None or db is None:
        raise TraceError(f"select chooses between numbers, got {a!r} and {b!r}")
    common = numeric.promote(da, db, arithmetic=False)
    bld = current()
    if common in _INDEX_TYPES and all(type(v) is int or isinstance(v, TracedInt) for v in (a, b)):
        w = common.width  # index values keep what is known of them
        av, bv = as_value(a, w), as_value(b, w)
        with bld.at_end():
            res = bld.mlir.arith.SelectOp(cond.ir, av, bv).result
        index = all(not isinstance(v, TracedInt) or v.index for v in (a, b))
        return TracedInt(res, w, _nonneg(a) and _nonneg(b), math.gcd(_divisor(a), _divisor(b)), common, index)
    x, y = as_type(a, common), as_type(b, common)
    with bld.at_end():
        res = bld.mlir.arith.SelectOp(cond.ir, x.ir, y.ir).result
    return wrap(res, common)


def wrap(value: Any, dtype: DType) -> TracedInt | TracedFloat | TracedBool:
    """The traced value of ``dtype`` holding the MLIR value ``value``."""
    if dtype is Boolean:
        return TracedBool(value)
    if dtype.is_float:
        return TracedFloat(value, dtype)
    return TracedInt(value, dtype.width, False, 1, dtype, index=False)


def convert(dtype: DType, x: Any) -> Any:
    """``dtype(x)`` in a kernel being traced (``cute.Int32(x)``, ``cute.Float16(x)``...): a traced value converted
    (``x.to(dtype)``); a Python number becomes a :class:`~cute_py.tensor.dtypes.Scalar` of ``dtype`` (a constant,
    which operations with traced values take as a value of its type)."""
    if isinstance(x, _Traced):
        return x.to(dtype)
    if operand_dtype(x) is None:
        raise TraceError(f"{dtype.name}() takes a number (a traced value or a Python int, float or bool), "
                         f"got {x!r}")
    return Scalar(dtype, x)
