"""Comparing IntTuples: element-wise order and scaling, inner products, congruence and compatibility of
profiles, divisibility by a tiler, and the stride positions that are zero. Leaves may be dynamic
(:mod:`cute_py.core.leaves`); the public functions here normalise their input with :mod:`cute_py.core.normalise`."""

from __future__ import annotations

from typing import Any

from ..errors import CuteTypeError, CuteValueError, RankError
from .division import ceil_div_unchecked
from .int_tuple import size
from .leaves import DynamicInt
from .normalise import as_int_tuple, depth_guarded, int_like, is_shaped, MAX_DEPTH, shape_of
from .notation import fmt
from .products import product_unchecked
from .typing import IntTuple, Shape, Stride, Tiler, XTuple

__all__ = ["elem_less", "elem_scale", "inner_product", "is_congruent", "is_weakly_congruent", "is_compatible",
           "evenly_divides", "filter_zeros_tuple", "repeat_like", "leading_dim"]


def elem_less(a: IntTuple | Stride, b: IntTuple | Stride) -> Any:
    """Element-wise ``a < b`` over all modes of ``a`` (extra modes of ``b`` are ignored; a longer ``a`` is
    never less), as CuTe's ``elem_less``.  Coordinates may be arithmetic tuples or basis strides.

    With run-time leaves the result is a run-time condition: the ``&`` of the run-time comparisons (a
    static ``False`` among them decides alone); with static leaves only, a Python ``bool``.
    @post result == all(a_i < b_i) over the leaves of a and the matching leaves of b
    """
    return _elem_less(_as_coord(a), _as_coord(b))


def _as_coord(x):
    # a coordinate operand: an IntTuple, an arithmetic tuple (a tuple) or a basis stride (its coordinate)
    x = as_int_tuple(x, "elem_less argument", allow_basis=True)
    as_coord = getattr(x, "__cute_coord__", None)
    return x if as_coord is None else as_int_tuple(as_coord(), "elem_less argument")


def _elem_less(a, b):
    if type(a) is tuple and type(b) is tuple:
        # tuple tuple: every mode of a less than the matching mode of b
        if len(a) > len(b):
            return False
        result = True
        for x, y in zip(a, b):
            term = _elem_less(x, y)
            if term is False:
                return False
            if term is not True:  # a run-time condition
                result = term if result is True else result & term
        return result
    if type(a) is tuple or type(b) is tuple:
        raise RankError(f"elem_less of {fmt(a)} and {fmt(b)}: one is a tuple, the other an int")
    # int int (a run-time leaf gives a run-time condition)
    return a < b


def elem_scale(a: IntTuple, b: IntTuple) -> IntTuple:
    """``a`` scaled leaf by leaf by the products of the matching modes of ``b``."""
    return _elem_scale(as_int_tuple(a, "elem_scale argument"), as_int_tuple(b, "elem_scale argument"))


def _elem_scale(a, b):
    if type(a) is tuple:
        # tuple: element-wise
        if type(b) is not tuple or len(a) != len(b):
            raise RankError(f"elem_scale needs {fmt(b)} to have the rank of {fmt(a)}")
        return tuple(_elem_scale(x, y) for x, y in zip(a, b))
    # int: scale by the whole of b
    return a * product_unchecked(b)


def inner_product(a: IntTuple | Stride, b: IntTuple | Stride) -> Any:
    """Sum of the products of matching leaves of two congruent IntTuples."""
    return _inner_product(as_int_tuple(a, "inner_product argument", allow_basis=True),
                          as_int_tuple(b, "inner_product argument", allow_basis=True))


def _inner_product(a, b):
    if type(a) is tuple and type(b) is tuple:
        # tuple tuple
        if len(a) != len(b):
            raise RankError(f"inner_product needs equal ranks, got {fmt(a)} and {fmt(b)}")
        r = 0
        for x, y in zip(a, b):
            r = r + _inner_product(x, y)
        return r
    if type(a) is tuple or type(b) is tuple:
        raise RankError(f"inner_product of {fmt(a)} and {fmt(b)}: profiles differ")
    # int int
    return a * b


def _profile_of(x, allow_none=True):
    # a shape-like argument of the profile predicates: objects give their shape, tuples are normalised
    t = type(x)
    if t is int:
        return x
    if t is tuple or t is list:
        return as_int_tuple(x, "argument", allow_none=allow_none, allow_basis=allow_none)
    return shape_of(x, allow_basis=allow_none)


@depth_guarded
def is_congruent(a: Any, b: Any) -> bool:
    """True if ``a`` and ``b`` have the same profile (same nesting, same ranks)."""
    return congruent_unchecked(_profile_of(a), _profile_of(b))


def congruent_unchecked(a, b):
    if type(a) is tuple and type(b) is tuple:
        return len(a) == len(b) and all(congruent_unchecked(x, y) for x, y in zip(a, b))
    return (type(a) is tuple) == (type(b) is tuple)


@depth_guarded
def is_weakly_congruent(a: Any, b: Any) -> bool:
    """True if the profile of ``a`` is a coarsening of the profile of ``b`` (``a <= b``)."""
    return weakly_congruent_unchecked(_profile_of(a), _profile_of(b))


def weakly_congruent_unchecked(a, b):
    if type(a) is tuple and type(b) is tuple:
        # tuple tuple: same rank, weakly congruent mode by mode
        return len(a) == len(b) and all(weakly_congruent_unchecked(x, y) for x, y in zip(a, b))
    # int anything: true; tuple int: false
    return type(a) is not tuple


@depth_guarded
def is_compatible(a: Any, b: Any) -> bool:
    """True if every coordinate of shape ``a`` is a coordinate of shape ``b`` (``a <= b``)."""
    return _compatible(_profile_of(a, False), _profile_of(b, False))


def _compatible(a, b):
    if type(a) is tuple and type(b) is tuple:
        # tuple tuple: same rank, compatible mode by mode
        return len(a) == len(b) and all(_compatible(x, y) for x, y in zip(a, b))
    if type(a) is tuple:
        # tuple int
        return False
    # int anything: a equals the size of b
    return a == product_unchecked(b)


def evenly_divides(shape: Shape, tiler: Tiler) -> bool:
    """True if ``tiler`` (an IntTuple or layout per mode) tiles ``shape`` with no remainder."""
    return evenly_divides_unchecked(as_int_tuple(shape, "shape"), as_tiler_tuple(tiler))


def as_tiler_tuple(t, what="tiler", level=0):
    # lists become tuples, integer-likes ints; layouts (and other shaped objects), None and basis strides
    # are kept; anything else is rejected
    if type(t) is tuple or type(t) is list or isinstance(t, tuple):
        if level >= MAX_DEPTH:
            raise CuteValueError(f"{what} is nested more than {MAX_DEPTH} levels deep (the limit of cute_py)")
        return tuple(as_tiler_tuple(e, what, level + 1) for e in t)
    if type(t) is int or t is None or is_shaped(t) or getattr(t, "__cute_stride__", False):
        return t
    return as_int_tuple(t, what)


def evenly_divides_unchecked(shape, tiler):
    if type(tiler) is tuple:
        if type(shape) is not tuple:
            shape = (shape,)  # a leaf is its own only mode
        if len(tiler) > len(shape):
            return False
        return all(evenly_divides_unchecked(s, t) for s, t in zip(shape, tiler))
    t = size(tiler)
    if type(t) is int and t <= 0:
        return False
    return size(shape) == t * size(ceil_div_unchecked(product_unchecked(shape), t))


def filter_zeros_tuple(a: Stride, b: XTuple | None = None) -> XTuple:
    """Replace the modes of ``b`` paired with a static 0 in ``a`` by 1s (``b`` defaults to ``a``)."""
    a = as_int_tuple(a, "filter_zeros guide", allow_basis=True)
    b = a if b is None else as_int_tuple(b, "filter_zeros argument", allow_basis=True)
    return filter_zeros_tuple_unchecked(a, b)


def filter_zeros_tuple_unchecked(a, b=None):
    if b is None:
        b = a
    if type(a) is tuple:
        if type(b) is not tuple or len(a) != len(b):
            raise RankError(f"filter_zeros: the profile {fmt(a)} does not match {fmt(b)}")
        return tuple(filter_zeros_tuple_unchecked(x, y) for x, y in zip(a, b))
    if type(a) is int and a == 0:
        return _ones_like(b)
    return b  # a run-time stride is kept, 0 or not, as CuTe C++ removes only a static 0 (``_0``)


@depth_guarded
def repeat_like(x: Any, target: Any) -> Any:
    """A value congruent to ``target`` with every leaf ``x``, as the CuTe DSL's ``cute.repeat_like`` (CuTe C++'s
    ``repeat_like``): ``repeat_like(0, (1, (2, 3))) == (0, (0, 0))``; a non-tuple target gives ``x`` itself.
    Only the nesting of ``target`` is read (a list counts as a tuple); ``x`` may be any leaf of the algebra (an int,
    a run-time integer, ``None`` for the slices of a coordinate, a layout..., or a tuple of them), but not a float,
    bool or complex number (``CuteTypeError``: no tuple of the algebra holds one).
    @post is_congruent(result, target) when x is an int
    """
    return _repeat_like(_fill_value(x, x), target)


def _fill_value(x, whole):
    if type(x) is tuple or type(x) is list:
        return tuple(_fill_value(e, whole) for e in x)
    if type(x) is int or x is None or isinstance(x, DynamicInt) or is_shaped(x):
        return x
    i = int_like(x)  # an integer-like (numpy's) is the int it stands for
    if i is None:  # floats, bools, arrays, strings...: no tuple of the algebra holds one
        raise CuteTypeError(f"repeat_like fills a tuple with a leaf of the algebra (an int, a run-time integer, "
                            f"None, a layout...), got {whole!r}")
    return i


def _repeat_like(x, target):
    if type(target) is tuple or type(target) is list:
        return tuple(_repeat_like(x, t) for t in target)
    return x


@depth_guarded
def leading_dim(shape: Shape, stride: Stride) -> int | tuple[int, ...] | None:
    """The leading dimension of a layout's ``shape`` and ``stride``, as the CuTe DSL's ``cute.leading_dim``: the
    position of the first stride leaf, left to right and depth first, that is a static 1 where the extent is
    not a static 1 (a run-time stride never counts; a run-time extent does).  The position is the top-level
    mode index when that leaf is a top-level mode, else the tuple of indices down to it; ``None`` if no leaf
    qualifies.  ``leading_dim((3, 4), (4, 1)) == 1``; ``leading_dim(((2, 4), 3), ((1, 2), 8)) == (0, 0)``.
    @post result is None or get(stride, result) == 1
    """
    shape = as_int_tuple(shape, "leading_dim: the shape")
    stride = as_int_tuple(stride, "leading_dim: the stride", allow_basis=True)
    if type(stride) is not tuple:
        shape, stride = (shape,), (stride,)
    elif type(shape) is not tuple:
        raise RankError(f"leading_dim: the shape {fmt(shape)} and the stride {fmt(stride)} are not congruent")
    return _leading_dim(shape, stride, ())


def _leading_dim(shape, stride, pos):
    if type(shape) is not tuple or len(shape) != len(stride):
        raise RankError(f"leading_dim: the shape {fmt(shape)} and the stride {fmt(stride)} are not congruent")
    for i, (sh, st) in enumerate(zip(shape, stride)):
        here = pos + (i,)
        if type(st) is tuple:
            found = _leading_dim(sh, st, here)
            if found is not None:
                return found
        elif type(st) is int and st == 1 and not (type(sh) is int and sh == 1):
            if type(sh) is tuple:
                raise RankError(f"leading_dim: the stride leaf at {fmt(here)} has the extent {fmt(sh)}, not a leaf")
            return here[0] if len(here) == 1 else here
    return None


def zeros_like(x):
    if type(x) is tuple:
        return tuple(zeros_like(e) for e in x)
    return 0


def _ones_like(x):
    if type(x) is tuple:
        return tuple(_ones_like(e) for e in x)
    return 1
