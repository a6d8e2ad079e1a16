"""Symbolic integers: the run-time shapes and strides of a compiled function, seen on the host.

A :class:`SymInt` stands for an integer bound only when a compiled function is called — the extent or stride
of a dynamic tensor argument (``from_dlpack(t).mark_layout_dynamic()``, a ``DeviceArraySpec`` with
``sym_int()`` entries), or a value the host code derives from them (``ceil_div(M, 128)`` for a grid). It is a
:class:`~cute_py.core.leaves.DynamicInt`: the algebra makes no static decision on it, it prints ``?`` (or
``?{div=N}`` with a known divisor), and anything that needs its value (``bool``, comparisons, ``int``) raises
:class:`~cute_py.errors.StaticValueRequired`, so no value of one compile can leak into the code of another.

The one exception is a *decision* of host code (``bool`` and the comparisons ``== != < <= > >=``) while a
:func:`deciding` context is active: a jit function's host code traced for a call whose arguments give every leaf
a value. The decision is taken on those values and recorded as a guard (:class:`Decision`); the compile is then
valid only for calls whose values decide it the same way (each call checks its guards, and another outcome
compiles again). ``int()`` and indexing still raise: they would make the value itself static.

Arithmetic records an expression over *leaves* (named symbols). :meth:`SymInt.evaluate` computes it for
concrete leaf values: Python ints on the host (a grid, a TMA descriptor's dims, a consistency check of the
arguments) or traced integers inside a kernel (the leaves are the kernel's parameters). ``repr`` is the
expression with the leaves' names, widths and divisors: equal for the same structure in any process (cache
keys), different for different structures.

Laws (property-tested):

- ``evaluate(x op y) == evaluate(x) op evaluate(y)`` for ``+ - * // %`` and ``min``/``max`` (Python's floor
  semantics, over non-negative operands as shapes and strides are);
- ``evaluate(x) % x.known_divisor == 0`` whenever every leaf's value is a multiple of its divisor;
- a result with no symbolic operand is a plain ``int``.
"""

from __future__ import annotations

import contextlib
import math
import operator
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn

from ..errors import CuteTypeError, CuteValueError, StaticValueRequired
from .leaves import divisor_of, DynamicInt
from .normalise import index_or_none

__all__ = ["SymInt", "sym_int", "sym_int32", "sym_int64", "sym_leaves", "substitute", "has_symbols", "Decision",
           "deciding", "describe_guard", "deciding_active"]

_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
    "min": min, "max": max,
}
_SYMBOLS = [0]  # counter of anonymous user symbols


class SymInt(DynamicInt):
    """A run-time integer known only by name (a leaf) or by an expression of such names.

    ``width``: 32 or 64, the bits of the kernel parameter a leaf becomes (an expression: its widest operand);
    ``known_divisor``: a positive int that divides every value it may take (a leaf's is a checked contract of
    the arguments; an expression's is derived).
    """

    __slots__ = ("op", "args", "width", "known_divisor", "name")

    def __init__(self, op: str, args: tuple, width: int, known_divisor: int, name: str | None = None) -> None:
        self.op, self.args, self.width, self.known_divisor, self.name = op, args, width, known_divisor, name

    # -- construction --------------------------------------------------------------------------------
    @classmethod
    def leaf(cls, name: str, width: int = 32, divisibility: int = 1) -> SymInt:
        """A named leaf: ``width`` 32 or 64, ``divisibility`` a positive int every value is a multiple of."""
        w = None if isinstance(width, bool) else index_or_none(width)   # integer-likes; arrays are refused
        if w not in (32, 64):
            raise CuteValueError(f"a symbolic integer is 32 or 64 bits wide, got width={width!r}")
        d = None if isinstance(divisibility, bool) else index_or_none(divisibility)
        if d is None or d < 1:
            raise CuteValueError(f"divisibility must be a positive int, got {divisibility!r}")
        return cls("leaf", (), w, d, name)

    @property
    def is_leaf(self) -> bool:
        return self.op == "leaf"

    def with_name(self, name: str) -> SymInt:
        """A leaf like this one under another name."""
        return SymInt("leaf", (), self.width, self.known_divisor, name)

    # -- arithmetic ----------------------------------------------------------------------------------
    def _bin(self, op, a, b):
        a, b = _operand(a), _operand(b)
        if a is NotImplemented or b is NotImplemented:
            return NotImplemented
        return combine(op, a, b)

    def __add__(self, o):
        return self._bin("+", self, o)

    def __radd__(self, o):
        return self._bin("+", o, self)

    def __sub__(self, o):
        return self._bin("-", self, o)

    def __rsub__(self, o):
        return self._bin("-", o, self)

    def __mul__(self, o):
        return self._bin("*", self, o)

    def __rmul__(self, o):
        return self._bin("*", o, self)

    def __floordiv__(self, o):
        return self._bin("//", self, o)

    def __rfloordiv__(self, o):
        return self._bin("//", o, self)

    def __mod__(self, o):
        return self._bin("%", self, o)

    def __rmod__(self, o):
        return self._bin("%", o, self)

    def __neg__(self):
        return combine("-", 0, self)

    def __pos__(self):
        return self

    def __abs__(self):
        # |x| == max(x, -x): an expression that evaluates wherever x does
        return combine("max", self, combine("-", 0, self))

    def signum_(self) -> SymInt | int:
        """-1, 0 or 1: ``min(max(x, -1), 1)`` over integers."""
        return combine("min", combine("max", self, -1), 1)

    def min_(self, o: Any) -> SymInt | int:
        return self._bin("min", self, o)

    def max_(self, o: Any) -> SymInt | int:
        return self._bin("max", self, o)

    def assume_divisor_(self, n: int) -> SymInt:
        """This value with the fact that ``n`` divides it (checked where the value is bound: a leaf's contract)."""
        d = math.lcm(self.known_divisor, n)
        if self.is_leaf:
            return SymInt("leaf", (), self.width, d, self.name)
        return SymInt(self.op, self.args, self.width, d)

    def _static(self, what) -> NoReturn:
        raise StaticValueRequired(f"{what} of the run-time value {self.describe()} is not known while compiling "
                                  f"(it is bound at each call); decide on it in the kernel, or make it static")

    def _decide(self, what, op, o):
        d = getattr(_DECIDING, "active", None)
        other = _operand(o)
        if d is None or other is NotImplemented:
            self._static(what)
        return d.decide(op, self, other)

    def __bool__(self) -> bool:
        return self._decide("the truth value", "!=", 0)

    def __int__(self) -> NoReturn:
        self._static("the int value")

    def __index__(self) -> NoReturn:
        self._static("the index value")

    def __eq__(self, o: object) -> bool:
        return self._decide("a comparison", "==", o)

    def __ne__(self, o: object) -> bool:
        return self._decide("a comparison", "!=", o)

    def __lt__(self, o: object) -> bool:
        return self._decide("a comparison", "<", o)

    def __le__(self, o: object) -> bool:
        return self._decide("a comparison", "<=", o)

    def __gt__(self, o: object) -> bool:
        return self._decide("a comparison", ">", o)

    def __ge__(self, o: object) -> bool:
        return self._decide("a comparison", ">=", o)

    __hash__ = None

    # -- reading -------------------------------------------------------------------------------------
    def describe(self) -> str:
        """The expression with the leaves' names (``arg0.shape[1] * 64``), for messages."""
        if self.is_leaf:
            return self.name or "?"
        a, b = (x.describe() if isinstance(x, SymInt) else str(x) for x in self.args)
        if self.op in ("min", "max"):
            return f"{self.op}({a}, {b})"
        return f"({a} {self.op} {b})"

    def __str__(self):
        return "?" if self.known_divisor == 1 else f"?{{div={self.known_divisor}}}"

    def __repr__(self):
        if self.is_leaf:
            return f"SymInt({self.name!r}, width={self.width}, div={self.known_divisor})"
        return f"SymInt({self.op!r}, {self.args!r}, div={self.known_divisor})"

    def leaves(self) -> list[SymInt]:
        """The distinct leaves (by name) of this expression, in the order they first appear."""
        out, seen = [], set()
        _collect(self, out, seen)
        return out

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """The value for leaf values ``env`` (name -> int, or traced integers inside a kernel)."""
        if self.is_leaf:
            try:
                return env[self.name]
            except KeyError:
                raise CuteValueError(f"the run-time value {self.name} is not bound") from None
        a, b = (x.evaluate(env) if isinstance(x, SymInt) else x for x in self.args)
        if self.op in ("min", "max") and not (type(a) is int and type(b) is int):
            if type(a) is int:
                a, b = b, a
            return a.min_(b) if self.op == "min" else a.max_(b)
        try:
            return _OPS[self.op](a, b)
        except ZeroDivisionError:
            raise CuteValueError(f"{self.describe()} divides by zero for the values of this call") from None


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
_DECIDING = threading.local()


class Decision:
    """Host decisions on run-time values, taken on the values of one call (``env``: leaf name -> int) and
    recorded: ``guards`` is a list of ``(op, a, b, outcome)``; :meth:`holds` says whether another call's values
    decide each the same way. ``decide`` raises :class:`~cute_py.errors.StaticValueRequired` for a value with a
    leaf ``env`` does not bind (a fake tensor's extent: no call to take it from)."""

    def __init__(self, env: Mapping[str, int]) -> None:
        self.env, self.guards = dict(env), []

    def decide(self, op: str, a: SymInt, b: int | SymInt) -> bool:
        try:
            va = a.evaluate(self.env)
            vb = b.evaluate(self.env) if isinstance(b, SymInt) else b
        except CuteValueError:
            raise StaticValueRequired(
                f"a decision on the run-time value {a.describe()} {op} "
                f"{b.describe() if isinstance(b, SymInt) else b} cannot be taken while compiling: the arguments "
                f"give it no value (a fake tensor or a DeviceArraySpec of symbolic extents); decide on it in the "
                f"kernel, or pass arrays") from None
        outcome = _COMPARE[op](va, vb)
        self.guards.append((op, a, b, outcome))
        return outcome

    @staticmethod
    def failed(guards: list, env: Mapping[str, int]) -> tuple | None:
        """The first guard of ``guards`` that ``env`` decides the other way, or ``None``."""
        for g in guards:
            op, a, b, outcome = g
            try:
                vb = b.evaluate(env) if isinstance(b, SymInt) else b
                if _COMPARE[op](a.evaluate(env), vb) != outcome:
                    return g
            except CuteValueError:
                return g
        return None


@contextlib.contextmanager
def deciding(decision: Decision | None) -> Iterator[Decision | None]:
    """Let host code decide on run-time values with ``decision`` (``None``: no decisions, as outside)."""
    prev = getattr(_DECIDING, "active", None)
    _DECIDING.active = decision
    try:
        yield decision
    finally:
        _DECIDING.active = prev


def deciding_active() -> Decision | None:
    """The :class:`Decision` host code decides with now, or ``None`` (no decisions: they raise)."""
    return getattr(_DECIDING, "active", None)


def describe_guard(g: tuple) -> str:
    """A guard as text: ``(arg0.shape[1] + 127) // 128 > 5 was True``."""
    op, a, b, outcome = g
    return f"{a.describe()} {op} {b.describe() if isinstance(b, SymInt) else b} was {outcome}"


def _operand(x):
    if type(x) is int or isinstance(x, SymInt):
        return x
    if isinstance(x, (bool, float)):
        return NotImplemented
    if isinstance(x, DynamicInt):
        return NotImplemented  # a traced or valued integer: no symbolic meaning on the host
    i = index_or_none(x)
    return NotImplemented if i is None else i


def _width(x):
    if isinstance(x, SymInt):
        return x.width
    return 32 if -(1 << 31) <= x < (1 << 31) else 64


def combine(op: str, a: int | SymInt, b: int | SymInt) -> int | SymInt:
    """``a op b`` for ints and symbols: ints fold, identities simplify, otherwise an expression node."""
    sa, sb = isinstance(a, SymInt), isinstance(b, SymInt)
    if not sa and not sb:
        return _OPS[op](a, b)
    if op == "+" and (a == 0 if not sa else False):
        return b
    if op in ("+", "-") and not sb and b == 0:
        return a
    if op == "*":
        if (not sa and a == 1):
            return b
        if not sb and b == 1:
            return a
        if (not sa and a == 0) or (not sb and b == 0):
            return 0
    if op == "//" and not sb and b == 1:
        return a
    if op == "%" and not sb and b == 1:
        return 0
    if op in ("//", "%") and not sb and b == 0:
        raise CuteValueError(f"{a.describe()} {op} 0 divides by zero")
    if op in ("+", "-") and not sb and sa and a.op == "+" and type(a.args[1]) is int:  # (s + c1) +- c2
        return combine("+", a.args[0], a.args[1] + b if op == "+" else a.args[1] - b)
    da, db = divisor_of(a), divisor_of(b)
    if op in ("+", "-", "min", "max"):
        div = math.gcd(da, db)
    elif op == "*":
        div = (da or 1) * (db or 1)
    elif op == "//":
        div = da // b if (not sb and b > 0 and da % b == 0) else 1
    else:  # a % b = a - b * (a // b)
        div = math.gcd(da, db)
    return SymInt(op, (a, b), max(_width(a), _width(b)), max(1, div))


def _collect(x, out, seen):
    if not isinstance(x, SymInt):
        return
    if x.is_leaf:
        if x.name not in seen:
            seen.add(x.name)
            out.append(x)
        return
    for a in x.args:
        _collect(a, out, seen)


# -- user-facing constructors (the CuTe DSL's names) ----------------------------------------------------


def sym_int(width: int = 32, *, divisibility: int = 1, symbol: str | None = None) -> SymInt:
    """A symbolic integer for a run-time extent or stride of a ``DeviceArraySpec`` (the CuTe DSL's ``sym_int``):
    ``width`` 32 or 64 bits, ``divisibility`` a contract checked on every call (each value must be a multiple
    of it), ``symbol`` a name for messages. The same object used in several places means the same value (a
    call whose arguments disagree on it is refused)."""
    w = None if isinstance(width, bool) else index_or_none(width)   # integer-likes; arrays are refused
    if w not in (32, 64):
        raise CuteValueError(f"sym_int: width must be 32 or 64, got {width!r}")
    width = w
    d = None if isinstance(divisibility, bool) else index_or_none(divisibility)
    if d is None or d < 1:
        raise CuteValueError(f"sym_int: divisibility must be a positive int, got {divisibility!r}")
    divisibility = d
    if symbol is not None and type(symbol) is not str:
        raise CuteTypeError(f"sym_int: symbol must be a string, got {symbol!r}")
    _SYMBOLS[0] += 1
    return SymInt.leaf(symbol or f"sym{_SYMBOLS[0]}", width, divisibility)


def sym_int32(divisibility: int = 1, symbol: str | None = None) -> SymInt:
    """``sym_int(32, divisibility=, symbol=)``."""
    return sym_int(32, divisibility=divisibility, symbol=symbol)


def sym_int64(divisibility: int = 1, symbol: str | None = None) -> SymInt:
    """``sym_int(64, divisibility=, symbol=)``."""
    return sym_int(64, divisibility=divisibility, symbol=symbol)


# -- walking values that hold symbols ----------------------------------------------------------------


def sym_leaves(x: Any, out: list[SymInt] | None = None, seen: set[str] | None = None) -> list[SymInt]:
    """The distinct leaves of every symbol in ``x`` (ints, tuples, layouts, tensors, basis strides), in order."""
    out = [] if out is None else out
    seen = set() if seen is None else seen
    _walk(x, lambda s: (_collect(s, out, seen), s)[1])
    return out


def has_symbols(x: Any) -> bool:
    """Whether ``x`` holds a :class:`SymInt` anywhere :func:`substitute` looks."""
    return bool(sym_leaves(x))


def substitute(x: Any, fn: Callable[[SymInt], Any]) -> Any:
    """``x`` with every symbol ``s`` replaced by ``fn(s)``: ints and tuples, layouts, composed layouts,
    tensors (layout and engine), arithmetic tuples and basis strides are rebuilt; anything else is returned
    as it is."""
    return _walk(x, fn)


def _walk(x, fn):
    t = type(x)
    if t is int or x is None:
        return x
    if isinstance(x, SymInt):
        return fn(x)
    if t is tuple:
        return tuple(_walk(e, fn) for e in x)
    hook = getattr(x, "__cute_substitute__", None)
    if hook is not None:
        return hook(lambda v: _walk(v, fn))
    return x
