"""Traced run-time values: integers that emit ``arith`` ops, and booleans (``i1``).

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
from ...tensor.dtypes import Scalar
from .builder import current, current_scope
from ...errors import TraceError, user_frame

if TYPE_CHECKING:
    from ...tensor.dtypes import DType

__all__ = ["TracedInt", "TracedBool", "TracedFloat", "convert", "as_value",
           "select"]


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
        how = ("carry it out of the loop: `loop = cute.range(..., carry=(initial,))`, `for i, (v,) in loop:` ... "
               "`loop.next(new_v)`, then `v, = loop.result` after the loop")
    else:
        why = "it exists only where the branch ran"
        how = ("carry it out of the branch: `br = cute.compiler.if_(cond, carry=(initial,))`, `br.set(new_v)` inside, "
               "then `v, = br.result` after it")
    return TraceError(f"{what} ({value!r}) was made inside the run-time {left.kind} at {left.file}:"
                      f"{left.line}, which has ended, so it has no value here: {why}; {how}")


class _Traced:
    """The scope bookkeeping shared by traced values: ``ir`` is the MLIR value, readable while the scope of
    the value is open."""

    __slots__ = ("_ir", "scope")

    @property
    def ir(self):
        scope = self.scope
        if scope is not None and not scope.open:
            raise _out_of_scope(self)
        return self._ir


class TracedBool(_Traced):
    """An ``i1`` run-time condition. Combine with ``& | ~``; branch with ``cute_py.compiler.if_``."""

    __slots__ = ()
    __hash__ = None

    def __init__(self, value: Any) -> None:
        self._ir = value
        self.scope = current_scope()

    def __bool__(self) -> NoReturn:
        raise TraceError("a run-time condition cannot drive Python's `if`, `while`, `and`, `or` or `not`: "
                         "use `with cute_py.compiler.if_(cond):` or `cute_py.compiler.select(cond, a, b)`")

    def _bin(self, other, op):
        b = current()
        o = other.ir if isinstance(other, TracedBool) else None
        if o is None:
            if type(other) is not bool:
                return NotImplemented
            o = b.const(int(other), 1)
        with b.at_end():
            return TracedBool(op(self.ir, o).result)

    def __and__(self, o):
        return self._bin(o, _arith().AndIOp)

    __rand__ = __and__

    def __or__(self, o):
        return self._bin(o, _arith().OrIOp)

    __ror__ = __or__

    def __xor__(self, o):
        return self._bin(o, _arith().XOrIOp)

    __rxor__ = __xor__

    def __invert__(self):
        return self._bin(True, _arith().XOrIOp)

    def __repr__(self):
        return "TracedBool(?)"


class TracedFloat(_Traced):
    """A run-time ``f32`` kernel parameter (arithmetic on floats is not traced yet)."""

    __slots__ = ()
    __hash__ = None

    def __init__(self, value: Any) -> None:
        self._ir = value
        self.scope = current_scope()

    def __bool__(self) -> NoReturn:
        raise TraceError("a run-time float has no truth value while tracing")

    def __repr__(self):
        return "TracedFloat(?)"


_CMP = {"lt": ("slt", "ult"), "le": ("sle", "ule"), "gt": ("sgt", "ugt"), "ge": ("sge", "uge"),
        "eq": ("eq", "eq"), "ne": ("ne", "ne")}


class TracedInt(_Traced, DynamicInt):
    """A run-time ``i32``/``i64`` value of the kernel being traced.

    ``nonneg`` records that the value is known to be >= 0 (enables unsigned division);
    ``known_divisor`` is a positive int known to divide the value (``bx * 128 + 64`` -> 64), which
    pointers use to keep their alignment across run-time offsets.
    """

    __slots__ = ("width", "nonneg", "known_divisor")

    def __init__(self, value: Any, width: int = 32, nonneg: bool = False, known_divisor: int = 1) -> None:
        self._ir = value
        self.scope = current_scope()
        self.width = width
        self.nonneg = nonneg
        self.known_divisor = known_divisor

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
        nn = nonneg_rule(self.nonneg, o_nonneg) if nonneg_rule else False
        div = div_rule(self.known_divisor, _divisor(other)) if div_rule else 1
        return TracedInt(res, w, nn, max(1, div))

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
        return 0 - self

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
        if type(o) is int and o == 0:
            return self
        shift = o if type(o) is int and 0 < o < self.width else None
        return self._bin(o, "ShLIOp", div_rule=lambda a, b: a << shift if shift is not None else 1)

    def __rshift__(self, o):
        if type(o) is int and o == 0:
            return self
        shift = o if type(o) is int and o > 0 else None
        return self._bin(o, "ShRUIOp" if self.nonneg else "ShRSIOp", nonneg_rule=lambda a, b: a,
                         div_rule=lambda a, b: _pow2(a) >> shift if shift is not None else 1)

    def min_(self, o: TracedInt | int) -> TracedInt:
        return self._bin(o, "MinUIOp" if self.nonneg and _nonneg(o) else "MinSIOp",
                         nonneg_rule=lambda a, b: a and b)

    def max_(self, o: TracedInt | int) -> TracedInt:
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
        raise TraceError("the truth value of a run-time integer is not known while tracing: "
                         "compare it and use `with cute_py.compiler.if_(cond):`")

    def __int__(self) -> NoReturn:
        raise TraceError("a run-time integer has no Python int value while tracing (use it in arithmetic, "
                         "or pass the value as a static Python int)")

    __index__ = __int__

    def __str__(self):
        return "?"

    def __repr__(self):
        return f"TracedInt(i{self.width})"


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


def select(cond: TracedBool | bool, a: TracedInt | int, b: TracedInt | int) -> TracedInt | int:
    """``a`` where the run-time ``cond`` holds, else ``b`` (integers; a static ``cond`` picks at trace time)."""
    if type(cond) is bool:
        return a if cond else b
    if not isinstance(cond, TracedBool):
        raise TraceError(f"select needs a bool or a run-time condition, got {cond!r}")
    w = max(getattr(a, "width", 32), getattr(b, "width", 32))
    av, bv = as_value(a, w), as_value(b, w)
    bld = current()
    with bld.at_end():
        res = bld.mlir.arith.SelectOp(cond.ir, av, bv).result
    return TracedInt(res, w, _nonneg(a) and _nonneg(b), math.gcd(_divisor(a), _divisor(b)))


def convert(dtype: DType, x: Any) -> TracedInt | Scalar:
    """``dtype(x)`` in a kernel being traced (``cute.Int32(x)``...): a traced integer converted to ``Int32`` or
    ``Int64`` (sign-extended or truncated); a host value becomes a :class:`~cute_py.tensor.dtypes.Scalar`."""
    if isinstance(x, TracedInt):
        if not dtype.is_integer or dtype.width not in (32, 64):
            raise TraceError(f"converting a traced integer to {dtype.name} is not supported (Int32 and Int64 are)")
        return TracedInt(_widen(x, dtype.width), dtype.width, x.nonneg,
                         x.known_divisor if dtype.width >= x.width else 1)
    if isinstance(x, (TracedFloat, TracedBool)):
        what = "float" if isinstance(x, TracedFloat) else "bool"
        raise TraceError(f"converting a traced {what} to {dtype.name} is not supported")
    return Scalar(dtype, x)
