"""Validation and normalisation of user input to IntTuples, mode indices and static ints.

User input is normalised once, at the public functions (:func:`as_int_tuple`): lists become tuples,
integer-like values (``numpy.int64``...) become ``int``, anything else (floats, strings, ``None``, bools, other
objects) raises :class:`~cute_py.errors.CuteTypeError`, and nesting deeper than :data:`MAX_DEPTH` raises
:class:`~cute_py.errors.CuteValueError`.  Input that is already normal (nested tuples of exact ``int``s) is
returned as it is.  The library calls the ``_unchecked`` implementations on values it already holds in that
form; where a decision needs a static value, :func:`need_static` raises
:class:`~cute_py.errors.StaticValueRequired` naming it.
"""

from __future__ import annotations

import numbers
import operator
from typing import Any

from ..errors import CuteTypeError, CuteValueError, StaticValueRequired
from .leaves import DynamicInt
from .notation import fmt, short_repr
from .typing import XTuple

__all__ = ["MAX_DEPTH", "as_int_tuple", "as_index", "is_static"]


MAX_DEPTH = 64
"""The deepest nesting of tuples accepted from user input (CuTe's layouts are rarely deeper than 4)."""


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


def need_static(x, what):
    """``x`` when it is a static int, else :class:`StaticValueRequired` naming ``what``."""
    if type(x) is not int:
        raise StaticValueRequired(f"{what} must be a static int, but it is only known at run time ({fmt(x)})")
    return x


def need_nonzero_stride(d: Any, layout: Any, op: str) -> None:
    """``StaticValueRequired`` for a run-time stride where ``op`` removes the stride-0 modes: whether it is 0 decides
    the result, and no divisibility fact excludes 0."""
    raise StaticValueRequired(f"{op}: whether the run-time stride {fmt(d)} of {short_repr(layout)} is 0 (a mode to "
                              f"remove) is not known while compiling; make the stride static")


def as_mode(mode, op):
    # a (nested) mode index: an int or a sequence of ints
    if type(mode) is tuple or type(mode) is list:
        return tuple(as_index(i, f"{op}: a mode index") for i in mode)
    if type(mode) is not int and hasattr(mode, "shape") and hasattr(mode, "__len__"):
        # an array (numpy's truth value and iteration are not those of a mode index)
        raise CuteTypeError(f"{op}: a mode index is an int or a sequence of ints, got {short_repr(mode)}")
    return (as_index(mode, f"{op}: the mode index"),)


def is_shaped(x):
    # a layout, tensor or other algebra object with a shape (not a number, an array or a basis stride)
    return (hasattr(x, "shape") and not isinstance(x, numbers.Number) and not hasattr(x, "__array__")
            and not hasattr(type(x), "__index__"))


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
