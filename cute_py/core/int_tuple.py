"""IntTuples: ints and nested tuples of ints, the shapes, strides and coordinates of CuTe.

A leaf is either a Python ``int`` (a *static* value) or an instance of
:class:`DynamicInt` (a value known only at run time, e.g. a traced integer inside a
kernel).  Every function here is written with arithmetic operators only, so it
evaluates on dynamic leaves too; where a decision needs a static value the
function raises :class:`~cute_py.errors.StaticValueRequired` naming it.

The recursive functions are written as case tables over (tuple, int) arguments,
as in CuTe's ``int_tuple.hpp``; each case is commented.

User input is normalised once, at the public functions (:func:`as_int_tuple`): lists
become tuples, integer-like values (``numpy.int64``...) become ``int``, anything else
(floats, strings, ``None``, bools, other objects) raises :class:`~cute_py.errors.CuteTypeError`,
and nesting deeper than :data:`MAX_DEPTH` raises :class:`~cute_py.errors.CuteValueError`.
The library calls the underscored implementations (``product_unchecked``...) on values it
already holds in that form.
"""

from __future__ import annotations

import abc
import numbers
import operator
from collections.abc import Sequence
from typing import Any

from ..errors import CuteTypeError, CuteValueError, DivisibilityError, RankError, StaticValueRequired
from .typing import Coord, Int, IntTuple, Shape, Stride, Tiler, XTuple

__all__ = [
    "DynamicInt",
    "imin",
    "imax",
    "signum",
    "is_int",
    "is_tuple",
    "is_static",
    "as_int_tuple",
    "fmt",
    "get",
    "product",
    "product_each",
    "product_like",
    "size",
    "rank",
    "depth",
    "flatten",
    "unflatten",
    "sum_",
    "shape_div",
    "ceil_div",
    "assume",
    "divisor_of",
    "round_up",
    "prefix_product",
    "suffix_product",
    "compact_col_major",
    "compact_row_major",
    "compact_order",
    "crd2idx",
    "idx2crd",
    "elem_less",
    "elem_scale",
    "inner_product",
    "is_congruent",
    "is_weakly_congruent",
    "is_compatible",
    "evenly_divides",
    "filter_zeros_tuple",
    "as_index",
    "short_repr",
    "MAX_DEPTH",
]

MAX_DEPTH = 64
"""The deepest nesting of tuples accepted from user input (CuTe's layouts are rarely deeper than 4)."""


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


def is_tuple(x: object) -> bool:
    """True if ``x`` is a tuple (a non-leaf IntTuple)."""
    return type(x) is tuple


def is_int(x: object) -> bool:
    """True if ``x`` is a leaf: a static ``int`` or a :class:`DynamicInt` value."""
    return (type(x) is int) or isinstance(x, DynamicInt)


def is_static(x: object) -> bool:
    """True if every leaf of ``x`` is a static integer (an ``int`` or an integer-like value such as
    ``numpy.int64``); a run-time leaf, or one that is no integer at all, makes it False."""
    if type(x) is int:
        return True
    if type(x) is tuple:
        for e in x:
            if type(e) is not int:
                break
        else:
            return True
    try:
        x = as_int_tuple(x, "is_static argument")
    except CuteTypeError:
        return False
    return is_static_unchecked(x)


def is_static_unchecked(x):
    if type(x) is tuple:
        return all(is_static_unchecked(e) for e in x)
    return type(x) is int


def as_int_tuple(x: Any, what: str = "value", allow_none: bool = False, allow_basis: bool = False) -> XTuple:
    """Validate and normalise user input to an IntTuple.

    Lists and tuple subclasses become tuples, integer-like objects (anything with ``__index__``:
    ``numpy.int64``...) become ``int``, run-time (:class:`DynamicInt`) leaves are kept.  Bools, floats,
    strings, ``None`` (kept with ``allow_none``: a slice) and other objects raise
    :class:`CuteTypeError` naming ``what``; basis strides are kept with ``allow_basis``.  Nesting
    deeper than :data:`MAX_DEPTH` raises :class:`CuteValueError`.
    """
    t = type(x)
    if t is int:
        return x
    if t is tuple:
        for e in x:
            if type(e) is not int:
                break
        else:
            return x
    return _normalise(x, what, allow_none, allow_basis, 0, x)


def _normalise(x, what, allow_none, allow_basis, level, whole):
    t = type(x)
    if t is int:
        return x
    if t is tuple or t is list or isinstance(x, tuple):
        if level >= MAX_DEPTH:
            raise CuteValueError(f"{what} is nested more than {MAX_DEPTH} levels deep (the limit of cute_py)")
        return tuple([_normalise(e, what, allow_none, allow_basis, level + 1, whole) for e in x])
    if isinstance(x, DynamicInt):
        return x
    if x is None:
        if allow_none:
            return None
    elif allow_basis and getattr(x, "__cute_stride__", False):
        return x
    elif not isinstance(x, (bool, float, str, bytes)):  # a bool has __index__, but True is no extent
        v = index_or_none(x)
        if v is not None:
            return v
    where = "" if whole is x else f" in {short_repr(whole)}"
    raise CuteTypeError(f"{what} must be an int or a tuple of ints, got {short_repr(x)} ({t.__name__}){where}")


def index_or_none(x):
    # the int of an integer-like value (numpy integers...), or None
    if getattr(type(x), "__index__", None) is None:
        return None
    try:
        return int(operator.index(x))
    except Exception:  # a failing __index__ (0-d check of an array...): not an integer
        return None


def as_index(x: Any, what: str) -> int:
    """``x`` as a static Python ``int``: integer-likes are converted, a run-time value raises
    :class:`StaticValueRequired`, anything else :class:`CuteTypeError` (bools included)."""
    if type(x) is int:
        return x
    if isinstance(x, DynamicInt):
        raise StaticValueRequired(f"{what} must be a static int, but it is only known at run time ({fmt(x)})")
    if not isinstance(x, (bool, float, str, bytes)):
        v = index_or_none(x)
        if v is not None:
            return v
    raise CuteTypeError(f"{what} must be a static int, got {short_repr(x)} ({type(x).__name__})")


def short_repr(x: object, limit: int = 80) -> str:
    """A short, never failing ``repr`` of a user value for error messages."""
    try:
        text = str(x) if type(x) is int else repr(x)
    except Exception:  # a failing or too deep repr
        text = f"<{type(x).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fmt(x: object) -> str:
    """Print an IntTuple in CuTe notation: ``(4,(2,8))``; a dynamic leaf prints ``?``, or ``?{div=N}`` when an int
    ``N`` > 1 is known to divide it (as the CuTe DSL prints them)."""
    t = type(x)
    if t is int:
        return str(x)
    if t is tuple:
        return "(" + ",".join(fmt(e) for e in x) + ")"
    if isinstance(x, DynamicInt):
        d = divisor_of(x)
        return "?" if d <= 1 else f"?{{div={d}}}"
    return str(x)


def _depth_guarded(fn):
    """Turn a ``RecursionError`` (an argument built nested far too deeply by repeated operations) into a
    :class:`CuteValueError`."""

    def guarded(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise CuteValueError(f"{fn.__name__}: an argument is nested too deeply") from None

    guarded.__name__, guarded.__qualname__, guarded.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    guarded.__wrapped__ = fn
    guarded.__annotations__ = fn.__annotations__
    return guarded


def _need_static(x, what):
    if type(x) is not int:
        raise StaticValueRequired(f"{what} must be a static int, but it is only known at run time ({fmt(x)})")
    return x


def as_mode(mode, op):
    # a (nested) mode index: an int or a sequence of ints
    if type(mode) is tuple or type(mode) is list:
        return tuple(as_index(i, f"{op}: a mode index") for i in mode)
    return (as_index(mode, f"{op}: the mode index"),)


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


def is_shaped(x):
    # a layout, tensor or other algebra object with a shape (not a number, an array or a basis stride)
    return (hasattr(x, "shape") and not isinstance(x, numbers.Number) and not hasattr(x, "__array__")
            and not hasattr(type(x), "__index__"))


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
    return _product_like(as_int_tuple(a, "product_like argument"), as_int_tuple(guide, "product_like guide"))


def _product_like(a, guide):
    if type(guide) is tuple:
        # tuple guide: recurse mode by mode
        if type(a) is not tuple or len(a) != len(guide):
            raise RankError(f"{fmt(a)} does not have the profile of {fmt(guide)}")
        return tuple(_product_like(x, g) for x, g in zip(a, guide))
    # leaf guide: the whole sub-tuple collapses to its product
    return product_unchecked(a)


def _shape_of(x, allow_basis=False):
    t = type(x)
    if t is int:
        return x
    if t is tuple or t is list:
        return as_int_tuple(x, "shape", allow_basis=allow_basis)
    if isinstance(x, DynamicInt) or (allow_basis and getattr(x, "__cute_stride__", False)):
        return x
    if is_shaped(x):
        return x.shape
    return as_int_tuple(x, "shape (an IntTuple, a layout or a tensor)")


@_depth_guarded
def size(a: Any, mode: int | Sequence[int] = ()) -> Int:
    """Number of elements of an IntTuple, layout or tensor (of its ``mode`` if given)."""
    x = _shape_of(a)
    if mode != ():
        x = get_unchecked(x, as_mode(mode, "size"))
    return product_unchecked(x)


@_depth_guarded
def rank(a: Any, mode: int | Sequence[int] = ()) -> int:
    """Number of top-level modes: ``len`` of a tuple, 1 for an int."""
    x = _shape_of(a, allow_basis=True)
    if mode != ():
        x = get_unchecked(x, as_mode(mode, "rank"))
    return len(x) if type(x) is tuple else 1


@_depth_guarded
def depth(a: Any, mode: int | Sequence[int] = ()) -> int:
    """Nesting depth: 0 for an int, 1 + the deepest element for a tuple."""
    x = _shape_of(a, allow_basis=True)
    if mode != ():
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


def shape_div(a: Shape, b: Shape) -> Shape:
    """Division for shapes, CuTe's ``shape_div``.

    - tuple, tuple: element-wise (equal ranks);
    - tuple, int: fold ``b`` through the modes of ``a``: ``shape_div((4,5,6),40) == (1,1,3)``;
    - int, tuple: ``shape_div(a, product(b))``;
    - int, int: ``ceil_div(a, b)``, requiring ``b > 0`` and ``a % b == 0 or b % a == 0`` when both are static.
    """
    return _shape_div(as_int_tuple(a, "shape_div dividend"), as_int_tuple(b, "shape_div divisor"))


def _shape_div(a, b):
    if type(a) is tuple:
        if type(b) is tuple:
            # tuple tuple: element-wise
            if len(a) != len(b):
                raise RankError(f"shape_div needs equal ranks, got {fmt(a)} and {fmt(b)}")
            return tuple(_shape_div(x, y) for x, y in zip(a, b))
        # tuple int: divide each mode by what is left of b, carrying the rest
        out = []
        for x in a:
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
    return (a + b - 1) // b


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


def prefix_product(a: IntTuple, init: IntTuple = 1) -> IntTuple:
    """Exclusive prefix product, hierarchical: ``prefix_product((2,(3,4))) == (1,(2,6))``."""
    return _prefix_product(as_int_tuple(a, "prefix_product argument"), as_int_tuple(init, "prefix_product init"))


def _prefix_product(a, init=1):
    if type(a) is tuple:
        if type(init) is tuple:
            # tuple tuple: element-wise
            if len(a) != len(init):
                raise RankError(f"prefix_product needs equal ranks, got {fmt(a)} and init {fmt(init)}")
            return tuple(_prefix_product(x, i) for x, i in zip(a, init))
        # tuple int: running product
        out = []
        for x in a:
            out.append(_prefix_product(x, init))
            init = init * product_unchecked(x)
        return tuple(out)
    if type(init) is tuple:
        raise RankError(f"prefix_product of an int {fmt(a)} with a tuple init {fmt(init)}")
    # int int
    return init


def suffix_product(a: IntTuple, init: IntTuple = 1) -> IntTuple:
    """Exclusive suffix product, hierarchical: ``suffix_product((2,3,4)) == (12,4,1)``."""
    return _suffix_product(as_int_tuple(a, "suffix_product argument"), as_int_tuple(init, "suffix_product init"))


def _suffix_product(a, init=1):
    if type(a) is tuple:
        if type(init) is tuple:
            # tuple tuple: element-wise
            if len(a) != len(init):
                raise RankError(f"suffix_product needs equal ranks, got {fmt(a)} and init {fmt(init)}")
            return tuple(_suffix_product(x, i) for x, i in zip(a, init))
        # tuple int: running product from the right
        out = []
        for x in reversed(a):
            out.append(_suffix_product(x, init))
            init = init * product_unchecked(x)
        return tuple(reversed(out))
    if type(init) is tuple:
        raise RankError(f"suffix_product of an int {fmt(a)} with a tuple init {fmt(init)}")
    # int int
    return init


def _compact(shape, current, left):
    # returns (stride, current * size(shape)); static size-1 modes get stride 0 as in CuTe
    if type(shape) is tuple:
        out = [None] * len(shape)
        order = range(len(shape)) if left else range(len(shape) - 1, -1, -1)
        for i in order:
            out[i], current = _compact(shape[i], current, left)
        return tuple(out), current
    if type(shape) is int and shape == 1:
        return 0, current
    return current, current * shape


def compact_col_major(shape: Shape, current: IntTuple = 1) -> Stride:
    """Column-major (LayoutLeft) compact strides; static size-1 modes get stride 0."""
    return _compact_major(as_int_tuple(shape, "shape"), as_int_tuple(current, "compact_col_major start"), True)


def compact_row_major(shape: Shape, current: IntTuple = 1) -> Stride:
    """Row-major (LayoutRight) compact strides; static size-1 modes get stride 0."""
    return _compact_major(as_int_tuple(shape, "shape"), as_int_tuple(current, "compact_row_major start"), False)


def _compact_major(shape, current, left):
    if type(current) is tuple:
        if type(shape) is not tuple or len(shape) != len(current):
            raise RankError(f"the start strides {fmt(current)} do not match the shape {fmt(shape)}")
        return tuple(_compact_major(s, c, left) for s, c in zip(shape, current))
    return _compact(shape, current, left)[0]


def compact_col_major_unchecked(shape, current=1):
    return _compact(shape, current, True)[0]


def compact_order(shape: Shape, order: IntTuple) -> Stride:
    """Compact strides that visit the modes of ``shape`` in increasing ``order``.

    ``order`` is weakly congruent to ``shape``; a leaf of ``order`` orders a whole
    sub-shape, which is then compact column-major.  Equal orders are visited left
    to right.  ``compact_order((2,2,2,2), (0,2,3,1)) == (1,4,8,2)``.
    """
    shape = as_int_tuple(shape, "shape")
    order = as_int_tuple(order, "order")
    if not _weakly_congruent(order, shape):
        raise RankError(f"order {fmt(order)} must be weakly congruent to shape {fmt(shape)}")
    ref_shape = flatten_unchecked(_product_like(shape, order))
    ref_order = flatten_unchecked(order)
    if type(ref_shape) is not tuple:
        ref_shape, ref_order = (ref_shape,), (ref_order,)
    for o in ref_order:
        _need_static(o, "each element of the order of compact_order")

    def rec(s, o):
        if type(o) is tuple:
            return tuple(rec(x, y) for x, y in zip(s, o))
        start = 1
        for rs, ro in zip(ref_shape, ref_order):
            if ro < o:
                start = start * rs
        return compact_col_major_unchecked(s, start)

    return rec(shape, order)


def crd2idx(coord: Coord, shape: Any, stride: Stride | None = None) -> Any:
    """Map a coordinate to an index.

    With ``stride``: the inner product of the (hierarchical) coordinate with the
    strides, an int coordinate being split colexicographically over a tuple mode.
    Without ``stride``: ``shape`` may be a layout of any kind (a composed layout too) or a
    tensor, and this is ``layout(coord)``; or a shape, giving the colexicographic
    (column-major) index of ``coord``.
    """
    if stride is None:
        if is_shaped(shape):
            return _crd2idx_layout(coord, shape)
        return crd2idx_colex(as_int_tuple(coord, "coordinate"), as_int_tuple(shape, "shape"))
    if type(coord) is tuple and type(shape) is tuple and type(stride) is tuple and len(coord) == len(shape) == len(stride):
        # flat static coordinates: checked and summed in one pass
        r = 0
        for c, s, d in zip(coord, shape, stride):
            if type(c) is not int or type(s) is not int or type(d) is not int:
                break
            r = r + c * d
        else:
            return r
    return crd2idx_unchecked(as_int_tuple(coord, "coordinate"), as_int_tuple(shape, "shape"),
                    as_int_tuple(stride, "stride", allow_basis=True))


def _crd2idx_layout(coord, layout):
    # crd2idx(coord, layout) is layout(coord), whatever the kind of layout; a tensor's layout is evaluated
    layout = getattr(layout, "layout", layout)
    if getattr(layout, "__cute_map_outer__", None) is None:
        if type(layout).__name__ != "Layout":
            raise CuteTypeError(f"crd2idx needs a layout, a tensor or a shape, got {short_repr(layout)}")
        try:  # a plain layout: its shape and stride
            return crd2idx(coord, layout.shape, layout.stride)
        except RecursionError:
            raise CuteValueError("crd2idx: the layout is nested too deeply") from None
    coord = as_int_tuple(coord, "coordinate")  # evaluated, never sliced: no None
    return layout(coord)


def crd2idx_unchecked(coord, shape, stride):
    if type(coord) is tuple:
        if type(shape) is tuple:
            # tuple tuple tuple: sum over the modes
            if type(stride) is not tuple or len(coord) != len(shape) or len(shape) != len(stride):
                raise RankError(
                    f"coordinate {fmt(coord)} does not match the rank of shape {fmt(shape)} / stride {fmt(stride)}"
                )
            r = 0
            for c, s, d in zip(coord, shape, stride):
                if type(c) is int and type(s) is int and type(d) is int:
                    r = r + c * d  # int int int, inlined
                else:
                    r = r + crd2idx_unchecked(c, s, d)
            return r
        # tuple int int: a tuple coordinate into a leaf mode is an error (as in CuTe)
        raise RankError(f"the coordinate {fmt(coord)} is a tuple but the shape {fmt(shape)} is an int")
    if coord is None:
        raise CuteValueError("a coordinate with None slices a layout; use slice_ instead of evaluating it")
    if type(shape) is tuple:
        # int tuple tuple: split the index colexicographically over the modes
        if type(stride) is not tuple or len(shape) != len(stride):
            raise RankError(f"shape {fmt(shape)} and stride {fmt(stride)} are not congruent")
        r = 0
        last = len(shape) - 1
        for i, (s, d) in enumerate(zip(shape, stride)):
            if i == last:
                return r + crd2idx_unchecked(coord, s, d)
            p = product_unchecked(s)
            if type(p) is int and p == 0:
                raise CuteValueError(f"the index {fmt(coord)} cannot be split over the empty mode {fmt(s)} "
                                     f"of shape {fmt(shape)}")
            r = r + crd2idx_unchecked(coord % p, s, d)
            coord = coord // p
        return r
    if type(stride) is tuple:
        raise RankError(f"the shape {fmt(shape)} is an int but the stride {fmt(stride)} is a tuple")
    # int int int (a static stride 0 contributes a static 0, as CuTe's i * _0)
    return 0 if type(stride) is int and stride == 0 else coord * stride


def crd2idx_colex(coord, shape):
    if type(coord) is not tuple:
        # int coordinate: already an index
        return coord
    if type(shape) is not tuple:
        raise RankError(f"coordinate {fmt(coord)} has more modes than shape {fmt(shape)}")
    # tuple tuple: flatten both to the coordinate's profile and apply Horner's rule
    if len(coord) != len(shape):
        raise RankError(f"coordinate {fmt(coord)} does not match the rank of shape {fmt(shape)}")
    fc = flatten_unchecked(coord)
    fs = flatten_unchecked(_product_like(shape, coord))
    if not fc:
        return 0
    r = fc[-1]
    for c, s in zip(reversed(fc[:-1]), reversed(fs[:-1])):
        r = c + s * r
    return r


def idx2crd(idx: IntTuple, shape: Shape, stride: IntTuple | None = None) -> Coord:
    """Split an index into a (hierarchical) coordinate of ``shape``.

    Without ``stride`` the enumeration is colexicographic, ``c0 = i % s0, c1 = (i // s0) % s1, ...``,
    and the last (sub)mode takes what is left, unbounded, as in CuTe (``crd2idx`` of the index over
    the shape's unit bases): ``idx2crd(32, (4,)) == (32,)``, ``idx2crd(526, (4,(8,1),(2,8))) ==
    (2,(3,0),(0,8))``.  With ``stride`` (for compact layouts) every leaf is bounded: ``c = (i // d) % s``.

    @post crd2idx(result, shape) == idx (without stride, for an empty-free shape)
    """
    idx = as_int_tuple(idx, "index")
    shape = as_int_tuple(shape, "shape")
    if stride is not None:
        stride = as_int_tuple(stride, "stride")
    return idx2crd_unchecked(idx, shape, stride)


def idx2crd_unchecked(idx, shape, stride=None):
    if stride is None:
        if type(idx) is tuple:
            # tuple tuple: mode by mode
            if type(shape) is not tuple or len(idx) != len(shape):
                raise RankError(f"index {fmt(idx)} does not match the rank of shape {fmt(shape)}")
            return tuple(idx2crd_unchecked(i, s) for i, s in zip(idx, shape))
        if type(shape) is tuple:
            # int tuple: colexicographic split, the last mode taking the rest
            return _idx2crd_colex(idx, shape)
        # int int: the index is the coordinate
        return idx
    return _idx2crd_strided(idx, shape, stride)


def _idx2crd_colex(idx, shape):
    # CuTe's crd2idx(idx, shape, make_basis_like(shape)): each mode but the last takes idx % size(mode), the
    # last takes idx // (size of the modes before it), recursively inside tuple modes
    out = []
    last = len(shape) - 1
    for i, s in enumerate(shape):
        if i == last:
            out.append(_idx2crd_colex(idx, s) if type(s) is tuple else idx)
            break
        p = product_unchecked(s)
        if type(p) is int and p == 0:
            raise CuteValueError(f"idx2crd cannot split the index {fmt(idx)} over the empty mode {fmt(s)} "
                                 f"of shape {fmt(shape)}")
        if type(p) is int and p == 1:
            out.append(_zeros_like(s))  # a static 0, as CuTe's i % _1
            continue
        r = idx % p
        out.append(_idx2crd_colex(r, s) if type(s) is tuple else r)
        idx = idx // p
    return tuple(out)


def _idx2crd_strided(idx, shape, stride):
    if type(idx) is tuple:
        # tuple tuple tuple
        if type(shape) is not tuple or type(stride) is not tuple or not len(idx) == len(shape) == len(stride):
            raise RankError(f"index {fmt(idx)} does not match the rank of shape {fmt(shape)} / stride {fmt(stride)}")
        return tuple(_idx2crd_strided(i, s, d) for i, s, d in zip(idx, shape, stride))
    if type(shape) is tuple:
        if type(stride) is not tuple:
            # int tuple int: compact column-major strides starting at `stride`
            stride = _prefix_product(shape, stride)
        # int tuple tuple
        if len(shape) != len(stride):
            raise RankError(f"shape {fmt(shape)} and stride {fmt(stride)} are not congruent")
        return tuple(_idx2crd_strided(idx, s, d) for s, d in zip(shape, stride))
    if type(stride) is tuple:
        raise RankError(f"the shape {fmt(shape)} is an int but the stride {fmt(stride)} is a tuple")
    # int int int
    if type(shape) is int and shape == 1:
        return 0
    if (type(stride) is int and stride == 0) or (type(shape) is int and shape == 0):
        raise CuteValueError(f"idx2crd cannot split the index {fmt(idx)} by the stride {fmt(stride)} "
                             f"over the extent {fmt(shape)}: both must be non-zero")
    return (idx // stride) % shape


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
    return _shape_of(x, allow_basis=allow_none)


@_depth_guarded
def is_congruent(a: Any, b: Any) -> bool:
    """True if ``a`` and ``b`` have the same profile (same nesting, same ranks)."""
    return congruent_unchecked(_profile_of(a), _profile_of(b))


def congruent_unchecked(a, b):
    if type(a) is tuple and type(b) is tuple:
        return len(a) == len(b) and all(congruent_unchecked(x, y) for x, y in zip(a, b))
    return (type(a) is tuple) == (type(b) is tuple)


@_depth_guarded
def is_weakly_congruent(a: Any, b: Any) -> bool:
    """True if the profile of ``a`` is a coarsening of the profile of ``b`` (``a <= b``)."""
    return _weakly_congruent(_profile_of(a), _profile_of(b))


def _weakly_congruent(a, b):
    if type(a) is tuple and type(b) is tuple:
        # tuple tuple: same rank, weakly congruent mode by mode
        return len(a) == len(b) and all(_weakly_congruent(x, y) for x, y in zip(a, b))
    # int anything: true; tuple int: false
    return type(a) is not tuple


@_depth_guarded
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
    return b


def _zeros_like(x):
    if type(x) is tuple:
        return tuple(_zeros_like(e) for e in x)
    return 0


def _ones_like(x):
    if type(x) is tuple:
        return tuple(_ones_like(e) for e in x)
    return 1
