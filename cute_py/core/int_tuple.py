"""IntTuples: ints and nested tuples of ints, the shapes, strides and coordinates of CuTe.

This module holds their structure: modes (:func:`get`, :func:`rank`), nesting (:func:`depth`, :func:`flatten`,
:func:`unflatten`) and :func:`size`.  The rest of the IntTuple vocabulary lives by concept and is re-exported
here under the names it has always had: the leaves, static ints and run-time values (:mod:`.leaves`), how they
print (:mod:`.notation`), the normalisation of user input (:mod:`.normalise`), products and sums
(:mod:`.products`) and division (:mod:`.division`).

Every function is written with arithmetic operators only, so it evaluates on dynamic leaves too; the recursive
ones are written as case tables over (tuple, int) arguments, as in CuTe's ``int_tuple.hpp``, each case
commented.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import CuteTypeError, RankError
from .division import ceil_div, round_up, shape_div
from .leaves import DynamicInt, assume, divisor_of, imax, imin, is_int, signum
from .normalise import MAX_DEPTH, as_index, as_int_tuple, as_mode, depth_guarded, is_shaped, is_static, shape_of
from .normalise import int_like  # noqa: F401  (re-exported: imported from here by modules of the tree)
from .notation import fmt, short_repr
from .products import product, product_each, product_like, product_unchecked, sum_
from .typing import Int, XTuple

__all__ = [
    "DynamicInt", "imin", "imax", "signum", "is_int", "is_tuple", "is_static", "as_int_tuple", "fmt", "get",
    "product", "product_each", "product_like", "size", "rank", "depth", "flatten", "unflatten", "sum_",
    "shape_div", "ceil_div", "assume", "divisor_of", "round_up", "as_index", "short_repr", "MAX_DEPTH",
]


def is_tuple(x: object) -> bool:
    """True if ``x`` is a tuple (a non-leaf IntTuple)."""
    return type(x) is tuple


def get(x: Any, mode: int | Sequence[int] = ()) -> Any:
    """The sub-tuple of ``x`` at the (nested) mode index ``mode``.

    ``get(x, [i, j])`` is ``x[i][j]``; a leaf has one mode, ``get(5, [0]) == 5``.
    Objects with a ``shape`` attribute (layouts, tensors) are indexed by their
    ``__getitem__``.
    """
    mode = as_mode(mode, "get")
    if type(x) is not int and not is_shaped(x):
        x = as_int_tuple(x, "get argument", allow_none=True, allow_basis=True)
    return get_unchecked(x, mode)


def get_unchecked(x, mode):
    for i in mode:
        if type(x) is tuple:
            if not -len(x) <= i < len(x):
                raise RankError(f"mode {i} is out of range for {fmt(x)} of rank {len(x)}")
            x = x[i]
        elif is_int(x) or getattr(x, "__cute_stride__", False) or x is None:
            # a leaf: rank 1, its only mode is itself
            if i not in (0, -1):
                raise RankError(f"mode {i} is out of range for the rank-1 value {fmt(x)}")
        elif hasattr(x, "shape") and hasattr(x, "__getitem__"):
            x = x[i]
        else:
            raise CuteTypeError(f"cannot take mode {i} of {short_repr(x)}")
    return x


@depth_guarded
def size(a: Any, mode: int | Sequence[int] = ()) -> Int:
    """Number of elements of an IntTuple, layout or tensor (of its ``mode`` if given)."""
    x = shape_of(a)
    if not (type(mode) is tuple and mode == ()):
        x = get_unchecked(x, as_mode(mode, "size"))
    return product_unchecked(x)


@depth_guarded
def rank(a: Any, mode: int | Sequence[int] = ()) -> int:
    """Number of top-level modes: ``len`` of a tuple, 1 for an int."""
    x = shape_of(a, allow_basis=True)
    if not (type(mode) is tuple and mode == ()):
        x = get_unchecked(x, as_mode(mode, "rank"))
    return len(x) if type(x) is tuple else 1


@depth_guarded
def depth(a: Any, mode: int | Sequence[int] = ()) -> int:
    """Nesting depth: 0 for an int, 1 + the deepest element for a tuple."""
    x = shape_of(a, allow_basis=True)
    if not (type(mode) is tuple and mode == ()):
        x = get_unchecked(x, as_mode(mode, "depth"))
    return depth_unchecked(x)


def depth_unchecked(x):
    if type(x) is tuple:
        # tuple: one level more than its deepest element (an empty tuple has depth 1)
        return 1 + max((depth_unchecked(e) for e in x), default=0)
    # int: depth 0
    return 0


def flatten(a: XTuple) -> XTuple:
    """All leaves of ``a`` in one flat tuple; an int stays an int."""
    return flatten_unchecked(as_int_tuple(a, "flatten argument", allow_none=True, allow_basis=True))


def flatten_unchecked(a):
    if type(a) is not tuple:
        return a
    for e in a:
        if type(e) is tuple:
            out = []
            _flatten_into(a, out)
            return tuple(out)
    return a


def _flatten_into(a, out):
    for e in a:
        if type(e) is tuple:
            _flatten_into(e, out)
        else:
            out.append(e)


def unflatten(flat: XTuple, profile: XTuple) -> XTuple:
    """Inverse of :func:`flatten`: regroup the flat tuple ``flat`` like ``profile``."""
    flat = as_int_tuple(flat, "unflatten argument", allow_none=True, allow_basis=True)
    profile = as_int_tuple(profile, "unflatten profile", allow_none=True, allow_basis=True)
    return _unflatten(flat, profile)


def _unflatten(flat, profile):
    flat = flat if type(flat) is tuple else (flat,)
    it = iter(flat)

    def build(p):
        if type(p) is tuple:
            return tuple(build(e) for e in p)
        return next(it)

    n = len(flatten_unchecked(profile)) if type(profile) is tuple else 1
    if n != len(flat):
        raise RankError(f"cannot unflatten {fmt(flat)} ({len(flat)} leaves) to the profile of {fmt(profile)} ({n} leaves)")
    return build(profile)


def is_int_value(x: object, v: int) -> bool:
    """Whether ``x`` is the static int ``v``."""
    return type(x) is int and x == v


def unwrap_single(t: tuple) -> Any:
    """The element of a 1-tuple, else the tuple."""
    return t[0] if len(t) == 1 else t


def exchange_sort(keys: list | tuple) -> list[int]:
    """The indices of ``keys`` in the order CuTe's exchange sort of (key, index) pairs leaves them (not stable,
    reproduced exactly)."""
    n = len(keys)
    k = list(keys)
    v = list(range(n))
    for i in range(n):
        for j in range(i + 1, n):
            if k[j] < k[i]:
                k[i], k[j] = k[j], k[i]
                v[i], v[j] = v[j], v[i]
    return v
