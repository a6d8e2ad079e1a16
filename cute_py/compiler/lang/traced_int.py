"""Traced run-time integers (:class:`TracedInt`) and what builds on them: ``select``, ``as_value``, ``bool_const``.

A :class:`TracedInt` is a run-time integer of any CuTe DSL integer type, signed or unsigned, 8 to 64 bits, and a
:class:`cute_py.core.int_tuple.DynamicInt` leaf, so layouts, ``crd2idx``, swizzles and coordinate tensors evaluate
on it and emit integer arithmetic. Its operators promote as every traced number's do (:mod:`.values`); with
Python ints and between index values (Int32/Int64) its own forms fold the trivial cases (``x + 0``, ``x * 1``,
``x * 0 -> 0``), so static parts stay static, and keep what is known of the value (non-negative, a known
divisor), which turns ``//`` and ``%`` of non-negative values into unsigned divisions, shifts and masks.
Importing this module registers the class with :func:`.values.wrap`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NoReturn

from ...core.int_tuple import DynamicInt
from ...tensor.dtypes import Int8, Int16, Int32, Int64, dtype_of
from . import numeric
from .builder import current, current_scope
from .values import (ARITHMETIC, BITWISE, COMPARE, TRACED_CLASSES, Traced, TracedBool, as_type, install_operators,
                     minmax, operand_dtype, wrap)
from ...errors import StaticTraceError, TraceError

if TYPE_CHECKING:
    from ...tensor.dtypes import DType

__all__ = ["TracedInt", "select", "as_value", "bool_const"]


_CMP = {"lt": ("slt", "ult"), "le": ("sle", "ule"), "gt": ("sgt", "ugt"), "ge": ("sge", "uge"),
        "eq": ("eq", "eq"), "ne": ("ne", "ne")}


_SIGNED = {8: Int8, 16: Int16, 32: Int32, 64: Int64}
_WRAPPING = ("AddIOp", "MulIOp")  # the operations whose non-negative operands may give a negative (wrapped) result
_INDEX_TYPES = (Int32, Int64)  # the types of index arithmetic: mixed with each other and with Python ints directly


class TracedInt(Traced, DynamicInt):
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
        """This value, known to be divisible by ``n`` too (``cute.assume(x, divby=n)``: the caller's promise). A
        run-time extent or stride of the arguments, as the kernel receives it, is checked at each call (the
        builder records the promise); a value computed in the kernel is the kernel's own promise."""
        b = current()
        leaf = b.param_leaves.get(id(self._ir)) if hasattr(b, "param_leaves") else None
        if leaf is not None:
            b.assumed[leaf] = math.lcm(b.assumed.get(leaf, 1), n)
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
        return Traced.to(self, dtype)

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
        b = current()
        with b.at_end():  # the operand's constant or widening and the op: one place and line
            c = self._coerce(other)
            if c is None:
                return NotImplemented
            a, o, w, o_nonneg = c
            if reverse:
                a, o = o, a
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


install_operators(TracedInt, ARITHMETIC + BITWISE + COMPARE, guard=TracedInt._fast)


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


def bool_const(v: object) -> TracedBool:
    """The run-time constant condition ``bool(v)``."""
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


TRACED_CLASSES["int"] = TracedInt
