"""The leaves of IntTuples: static ints and run-time values.

A leaf is either a Python ``int`` (a *static* value) or an instance of :class:`DynamicInt` (a value known only at
run time, e.g. a traced integer inside a kernel, which may carry a known divisor: :func:`assume`,
:func:`divisor_of`).  :func:`imin`, :func:`imax` and :func:`signum` work on both kinds; a run-time leaf gives a
run-time result, or raises :class:`~cute_py.errors.StaticValueRequired` where its class cannot compute one.
"""

from __future__ import annotations

import abc
from typing import Any

from ..errors import CuteTypeError, CuteValueError, StaticValueRequired
from .typing import Int

__all__ = ["DynamicInt", "divisor_of", "assume", "imin", "imax", "signum", "is_int"]


class DynamicInt(abc.ABC):
    """Marker base class for leaves known only at run time (traced integers).

    Subclasses implement ``+ - * // %`` (and reflected forms) returning new
    dynamic values, and print as ``?``.  They must not be hashable, so that
    memoised algebra functions never cache a result computed from them.
    """

    __hash__ = None

    def min_(self, other: Int) -> DynamicInt:
        """The smaller of ``self`` and ``other`` as a run-time value."""
        raise StaticValueRequired(f"min of a run-time value is not supported by {type(self).__name__}")

    def max_(self, other: Int) -> DynamicInt:
        """The larger of ``self`` and ``other`` as a run-time value."""
        raise StaticValueRequired(f"max of a run-time value is not supported by {type(self).__name__}")

    def signum_(self) -> DynamicInt:
        """-1, 0 or 1 as a run-time value."""
        raise StaticValueRequired(f"signum of a run-time value is not supported by {type(self).__name__}")

    def __abs__(self) -> DynamicInt:
        """The absolute value as a run-time value (a subclass that cannot compute it names the rule)."""
        raise StaticValueRequired(f"the absolute value of a run-time value is not supported by {type(self).__name__}")


def divisor_of(x: Any) -> int:
    """A positive int known to divide ``x``: ``|x|`` for a static int (0: every int divides it, given as 0), a
    run-time value's ``known_divisor`` (1 when nothing is known)."""
    if type(x) is int:
        return abs(x)
    return getattr(x, "known_divisor", 1) if isinstance(x, DynamicInt) else 1


def assume(x: Any, divby: int | None = None) -> Any:
    """``x`` with the fact that ``divby`` divides it (the CuTe DSL's ``cute.assume``): a run-time value carries it
    (and prints ``?{div=N}``), so the algebra can decide what the fact proves; a static int is checked. Anything
    else is a ``CuteTypeError``, also without ``divby`` (where the DSL hands it back unchanged).

    @post divisor_of(result) % divby == 0 (static ints: result == x)
    """
    if type(x) is not int and not isinstance(x, DynamicInt):
        raise CuteTypeError(f"assume needs an int or a run-time integer, got {x!r}")
    if divby is None:
        return x
    if type(divby) is not int or divby < 1:
        raise CuteValueError(f"assume: divby must be a positive int, got {divby!r}")
    if type(x) is int:
        if x % divby:
            raise CuteValueError(f"assume: {x} is not divisible by {divby}")
        return x
    if isinstance(x, DynamicInt):
        known = getattr(x, "assume_divisor_", None)
        if known is None:
            raise CuteTypeError(f"assume: {type(x).__name__} cannot carry a divisibility")
        return known(divby)


def imin(a: Int, b: Int) -> Int:
    """``min`` of two leaves; a run-time leaf gives a run-time result."""
    if type(a) is int and type(b) is int:
        return a if a < b else b
    return a.min_(b) if isinstance(a, DynamicInt) else b.min_(a)


def imax(a: Int, b: Int) -> Int:
    """``max`` of two leaves; a run-time leaf gives a run-time result."""
    if type(a) is int and type(b) is int:
        return a if a > b else b
    return a.max_(b) if isinstance(a, DynamicInt) else b.max_(a)


def signum(a: Int) -> Int:
    """-1, 0 or 1 (a run-time value computes it at run time through ``signum_``)."""
    if type(a) is int:
        return (a > 0) - (a < 0)
    return a.signum_()


def is_int(x: object) -> bool:
    """True if ``x`` is a leaf: a static ``int`` or a :class:`DynamicInt` value."""
    return (type(x) is int) or isinstance(x, DynamicInt)
