"""Division of IntTuples, as CuTe's ``shape_div``, ``ceil_div`` and ``round_up``: element-wise for two tuples,
folded through the modes of a tuple by an int.  ``shape_div`` requires its divisibility condition (a run-time
operand only where a known divisor proves it); the divisors must be positive."""

from __future__ import annotations

from ..errors import CuteValueError, DivisibilityError, RankError, StaticValueRequired
from .leaves import divisor_of
from .normalise import as_int_tuple
from .notation import fmt
from .products import product_unchecked
from .typing import IntTuple, Shape

__all__ = ["shape_div", "ceil_div", "round_up"]


def shape_div(a: Shape, b: Shape) -> Shape:
    """Division for shapes, CuTe's ``shape_div``.

    - tuple, tuple: element-wise (equal ranks);
    - tuple, int: fold ``b`` through the modes of ``a``: ``shape_div((4,5,6),40) == (1,1,3)``;
    - int, tuple: ``shape_div(a, product(b))``;
    - int, int: ``ceil_div(a, b)``, requiring ``b > 0`` and ``a % b == 0 or b % a == 0`` when both are static.
    """
    if type(a) is int and type(b) is int and b > 0 and (a % b == 0 or (a != 0 and b % a == 0)):
        return (a + b - 1) // b  # int int, the condition met
    return _shape_div(as_int_tuple(a, "shape_div dividend"), as_int_tuple(b, "shape_div divisor"))


def _shape_div(a, b):
    if type(a) is tuple:
        if type(b) is tuple:
            # tuple tuple: element-wise (two static ints that meet the condition inline, as in the int int case)
            if len(a) != len(b):
                raise RankError(f"shape_div needs equal ranks, got {fmt(a)} and {fmt(b)}")
            out = []
            for x, y in zip(a, b):
                if type(x) is int and type(y) is int and y > 0 and (x % y == 0 or (x != 0 and y % x == 0)):
                    out.append((x + y - 1) // y)
                else:
                    out.append(_shape_div(x, y))
            return tuple(out)
        # tuple int: divide each mode by what is left of b, carrying the rest
        out = []
        for x in a:
            if (type(x) is int and type(b) is int and b > 0 and x > 0
                    and (x % b == 0 or b % x == 0)):
                # both static ints meeting the condition both ways: the two int int cases inline
                out.append((x + b - 1) // b)
                b = (b + x - 1) // x
            else:
                out.append(_shape_div(x, b))
                b = _shape_div(b, x)
        return tuple(out)
    if type(b) is tuple:
        # int tuple
        return _shape_div(a, product_unchecked(b))
    # int int
    if type(b) is int and b <= 0:
        raise CuteValueError(f"shape_div needs a positive divisor, got shape_div({fmt(a)}, {b})")
    if type(a) is int and type(b) is int:
        if a % b != 0 and (a == 0 or b % a != 0):
            raise DivisibilityError(
                f"shape_div divisibility condition: {a} % {b} == 0 or {b} % {a} == 0 must hold"
            )
        return (a + b - 1) // b
    # a run-time operand: the condition must hold for every value it may take, which its known divisor can prove
    # (a run-time divisor could be 0 or break the condition for some value: only a static one is checked)
    if type(b) is int and (b == 1 or divisor_of(a) % b == 0):
        return a // b   # b divides a
    raise StaticValueRequired(
        f"shape_div divisibility condition: {fmt(a)} % {fmt(b)} == 0 or {fmt(b)} % {fmt(a)} == 0 must hold, which "
        f"is not known for a run-time value; make it static, or assume a divisibility (cute.assume) that proves it"
    )


def ceil_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """Ceiling division of IntTuples, CuTe's ``ceil_div``.

    - tuple, tuple: element-wise, missing modes of ``b`` count as 1;
    - tuple, int: fold ``b`` through the modes of ``a``;
    - int, tuple: ``ceil_div(a, product(b))``;
    - int, int: ``(a + b - 1) // b``, for a positive divisor ``b``.
    """
    return ceil_div_unchecked(as_int_tuple(a, "ceil_div dividend"), as_int_tuple(b, "ceil_div divisor"))


def ceil_div_unchecked(a, b):
    if type(a) is tuple:
        if type(b) is tuple:
            # tuple tuple: element-wise, b padded with 1s
            if len(a) < len(b):
                raise RankError(f"ceil_div needs rank(a) >= rank(b), got {fmt(a)} and {fmt(b)}")
            return tuple(ceil_div_unchecked(x, b[i] if i < len(b) else 1) for i, x in enumerate(a))
        # tuple int: fold
        out = []
        for x in a:
            out.append(ceil_div_unchecked(x, b))
            b = ceil_div_unchecked(b, x)
        return tuple(out)
    if type(b) is tuple:
        # int tuple
        return ceil_div_unchecked(a, product_unchecked(b))
    # int int
    if type(b) is int and b <= 0:
        raise CuteValueError(f"ceil_div needs a positive divisor, got ceil_div({fmt(a)}, {b})")
    return (a + b - 1) // b


def round_up(a: IntTuple, b: IntTuple) -> IntTuple:
    """Round ``a`` up to a multiple of ``b`` (element-wise for tuples, missing modes of ``b`` are 1)."""
    return _round_up(as_int_tuple(a, "round_up argument"), as_int_tuple(b, "round_up multiple"))


def _round_up(a, b):
    if type(a) is tuple:
        if type(b) is not tuple:
            return tuple(_round_up(x, b) for x in a)
        if len(a) < len(b):
            raise RankError(f"round_up needs rank(a) >= rank(b), got {fmt(a)} and {fmt(b)}")
        return tuple(_round_up(x, b[i] if i < len(b) else 1) for i, x in enumerate(a))
    if type(b) is tuple:
        raise RankError(f"round_up of an int {fmt(a)} to a tuple {fmt(b)}")
    if type(b) is int and b <= 0:
        raise CuteValueError(f"round_up needs a positive multiple, got round_up({fmt(a)}, {b})")
    return ((a + b - 1) // b) * b
