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
from .typing import Int, IntTuple, Shape, Stride, XTuple

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

    def __abs__(self) -> DynamicInt:
        """The absolute value as a run-time value (a subclass that cannot compute it names the rule)."""
        raise StaticValueRequired(f"the absolute value of a run-time value is not supported by {type(self).__name__}")


def divisor_of(x: Any) -> int:
    """A positive int known to divide ``x``: ``|x|`` for a static int (0: every int divides it, given as 0), a
    run-time value's ``known_divisor`` (1 when nothing is known)."""
    if type(x) is int:
        return abs(x)
    return getattr(x, "known_divisor", 1) if isinstance(x, DynamicInt) else 1


def need_nonzero_stride(d: Any, layout: Any, op: str) -> None:
    """``StaticValueRequired`` for a run-time stride where ``op`` removes the stride-0 modes: whether it is 0 decides
    the result, and no divisibility fact excludes 0."""
    raise StaticValueRequired(f"{op}: whether the run-time stride {fmt(d)} of {short_repr(layout)} is 0 (a mode to "
                              f"remove) is not known while compiling; make the stride static")


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
        # already normal (nested tuples of exact ints, within MAX_DEPTH): returned as is, nothing rebuilt;
        # the first two levels are checked inline, deeper ones by _is_exact_int_tuple
        for e in x:
            if type(e) is not int:
                if type(e) is not tuple:
                    break
                for f in e:
                    if type(f) is not int and (type(f) is not tuple or not _is_exact_int_tuple(f, 2)):
                        break
                else:
                    continue
                break
        else:
            return x
    return _normalise(x, what, allow_none, allow_basis, 0, x)


def _is_exact_int_tuple(x: tuple, level: int = 0) -> bool:
    """True if the tuple ``x``, found ``level`` tuples deep, holds only exact ``int`` leaves and tuples of them,
    none nested ``MAX_DEPTH`` or more levels deep: what :func:`as_int_tuple` returns unchanged."""
    if level >= MAX_DEPTH:
        return False
    for e in x:
        if type(e) is not int and (type(e) is not tuple or not _is_exact_int_tuple(e, level + 1)):
            return False
    return True


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


def int_like(x: Any) -> int | None:
    """The int of an integer-like value that is no bool (Python's or numpy's), float or string: a Python int or a
    numpy integer; ``None`` for anything else."""
    if isinstance(x, (bool, float, complex, str, bytes)) or getattr(getattr(x, "dtype", None), "kind", "i") not in "iu":
        return None
    return index_or_none(x)


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


def depth_guarded(fn):
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


def need_static(x, what):
    """``x`` when it is a static int, else :class:`StaticValueRequired` naming ``what``."""
    if type(x) is not int:
        raise StaticValueRequired(f"{what} must be a static int, but it is only known at run time ({fmt(x)})")
    return x


def as_mode(mode, op):
    # a (nested) mode index: an int or a sequence of ints
    if type(mode) is tuple or type(mode) is list:
        return tuple(as_index(i, f"{op}: a mode index") for i in mode)
    if type(mode) is not int and hasattr(mode, "shape") and hasattr(mode, "__len__"):
        # an array (numpy's truth value and iteration are not those of a mode index)
        raise CuteTypeError(f"{op}: a mode index is an int or a sequence of ints, got {short_repr(mode)}")
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


def shape_of(x, allow_basis=False):
    """The shape of ``x``: an IntTuple normalised, or the ``shape`` of a layout, tensor or other shaped object."""
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

