"""Products and sums of the leaves of IntTuples, as CuTe's ``product``, ``product_each``, ``product_like`` and
``sum``; the ``_unchecked`` forms take normalised IntTuples (leaves may be dynamic)."""

from __future__ import annotations

from typing import Any

from ..errors import RankError
from .normalise import as_int_tuple
from .notation import fmt
from .typing import Int, IntTuple, Stride

__all__ = ["product", "product_each", "product_like", "sum_"]


def product(a: IntTuple) -> Int:
    """Product of all leaves; ``product(()) == 1``."""
    return product_unchecked(as_int_tuple(a, "product argument"))


def product_unchecked(a):
    if type(a) is tuple:
        # tuple: product of the products of the elements
        r = 1
        for e in a:
            r = r * (product_unchecked(e) if type(e) is tuple else e)
        return r
    # int: itself
    return a


def product_each(a: IntTuple) -> tuple[Int, ...]:
    """Tuple of the products of each mode; an int is wrapped: ``product_each(4) == (4,)``."""
    return product_each_unchecked(as_int_tuple(a, "product_each argument"))


def product_each_unchecked(a):
    if type(a) is tuple:
        return tuple(product_unchecked(e) for e in a)
    return (a,)


def product_like(a: IntTuple, guide: IntTuple) -> IntTuple:
    """Products of ``a`` at the leaves of ``guide`` (``a``'s profile refines ``guide``'s)."""
    return product_like_unchecked(as_int_tuple(a, "product_like argument"), as_int_tuple(guide, "product_like guide"))


def product_like_unchecked(a, guide):
    """:func:`product_like` on a normalised ``a`` and ``guide``."""
    if type(guide) is tuple:
        # tuple guide: recurse mode by mode
        if type(a) is not tuple or len(a) != len(guide):
            raise RankError(f"{fmt(a)} does not have the profile of {fmt(guide)}")
        return tuple(product_like_unchecked(x, g) for x, g in zip(a, guide))
    # leaf guide: the whole sub-tuple collapses to its product
    return product_unchecked(a)


def sum_(a: IntTuple | Stride) -> Any:
    """Sum of all leaves."""
    return _sum(as_int_tuple(a, "sum_ argument", allow_basis=True))


def _sum(a):
    if type(a) is tuple:
        r = 0
        for e in a:
            r = r + _sum(e)
        return r
    return a
