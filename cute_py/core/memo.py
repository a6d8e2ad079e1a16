"""Memoisation of the pure algebra functions.

Layouts and IntTuples of static ints are immutable and hashable, so a function of
them can be cached.  A cache key must tell apart arguments that compare equal but
are validated differently (``2.0 == 2``, ``True == 1``, ``numpy.int64(2) == 2``,
``(2.0, 4) == (2, 4)``): only arguments built from exact ``int``s, ``None``, nested
tuples of them and the library's own immutable values (the key types registered with
:func:`register_key_type`) are looked up; any other argument bypasses the cache, so
the function validates it every time.  Arguments holding dynamic (run-time) values
are unhashable by design and bypass the cache too; so do keyword arguments.  Errors
are not cached.

The wrapper also turns the two failures that the structure of an argument can cause
deep inside the algebra into :class:`~cute_py.errors.CuteValueError` (installed with
:func:`set_error_type`, as this module imports nothing): a
``RecursionError`` (a layout nested far too deeply) and a ``ZeroDivisionError``
(a zero extent or stride where the algebra divides by it).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import linecache
import os
import types
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["memoize", "clear_caches", "memoization", "register_key_type", "set_error_type"]

_Fn = TypeVar("_Fn", bound=Callable[..., Any])
_Cls = TypeVar("_Cls", bound=type)

_MAX_ENTRIES = 4096
_MAX_KEY_DEPTH = 16
_caches = []
_state = {"store": True}
_MISS = object()
_KEY_TYPES = {int, type(None)}
_ERROR = {"type": ValueError}  # cute_py.errors.CuteValueError, installed by the layout module


def set_error_type(cls: type[Exception]) -> None:
    """The exception class the wrapper raises for a structural failure (``_memo`` imports nothing)."""
    _ERROR["type"] = cls


def register_key_type(cls: _Cls) -> _Cls:
    """Let instances of ``cls`` (immutable, hashable, equal only to instances of ``cls`` with equal
    exact-typed fields) be memoisation keys.  Returns ``cls``."""
    _KEY_TYPES.add(cls)
    return cls


def _clean_tuple(t, level):
    if level > _MAX_KEY_DEPTH:
        return False
    key_types = _KEY_TYPES
    for e in t:
        te = type(e)
        if te is tuple:
            if not _clean_tuple(e, level + 1):
                return False
        elif te not in key_types:
            return False
    return True


def _brief_args(args):
    try:
        text = ", ".join(str(a) for a in args)
    except Exception:  # a failing or too deep str
        text = ", ".join(type(a).__name__ for a in args)
    return text if len(text) <= 160 else text[:157] + "..."


def _structure_error(fn, args, error):
    if isinstance(error, RecursionError):
        return _ERROR["type"](f"{fn.__name__}: an argument is nested too deeply for the algebra ({len(args)} arguments)")
    return _ERROR["type"](f"{fn.__name__}: a zero extent or stride is used as a divisor ({_brief_args(args)})")


# The wrapper is generated with ``fn``'s own signature: no ``*args``/``**kwargs`` packing, and the
# key-type check inlined per parameter, keeps a cache hit within a few tens of nanoseconds of a dict lookup.
_WRAPPER = """
def {name}({params}):
    args = {args}
    keyed = {checks}
    if keyed:
        try:
            result = cache_get(args, miss)
        except TypeError:  # unhashable: dynamic values
            keyed = False
        else:
            if result is not miss:
                return result
    try:
        result = fn({names})
    except (RecursionError, ZeroDivisionError) as e:
        raise structure_error(fn, args, e) from None
    if keyed and state["store"]:
        if len(cache) >= max_entries:
            cache.clear()
        cache[args] = result
    return result
"""


def memoize(fn: _Fn) -> _Fn:
    """Cache ``fn`` on its arguments (bounded; cleared when full).

    ``fn`` takes positional-or-keyword parameters only (defaults allowed); the key is the tuple of all of
    them, defaults filled in.
    """
    code = fn.__code__
    names = code.co_varnames[: code.co_argcount]
    if (code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS) or code.co_kwonlyargcount or code.co_posonlyargcount
            or set(names) & _GENERATED_NAMES):
        raise TypeError(f"memoize needs a function of plain parameters not named {sorted(_GENERATED_NAMES)}, "
                        f"got {fn.__name__}")
    defaults = fn.__defaults__ or ()
    first_default = len(names) - len(defaults)
    cache = {}
    _caches.append(cache)

    # the generated code belongs to fn's module (tools that map code to source files see that file)
    namespace = {"__name__": fn.__module__, "__file__": fn.__globals__.get("__file__"), "__builtins__": builtins,
                 "fn": fn, "cache": cache, "cache_get": cache.get, "miss": _MISS, "state": _state,
                 "max_entries": _MAX_ENTRIES, "structure_error": _structure_error, "key_types": _KEY_TYPES,
                 "clean_tuple": _clean_tuple, "all_keys": _KEY_TYPES.issuperset}
    # a file name inside the package: tracebacks and tools see library code; the source is in linecache
    module_file = fn.__globals__.get("__file__") or fn.__module__
    filename = os.path.join(os.path.dirname(module_file), f"<memoized {fn.__qualname__}>")
    source = _wrapper_source(fn.__name__, names, first_default)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    # functions of the same parameters share one compiled wrapper (compiling is most of the cost of memoize)
    renamed = {"co_name": fn.__name__, "co_filename": filename}
    template = _wrapper_code(names, first_default)
    if hasattr(template, "co_qualname"):
        renamed["co_qualname"] = fn.__name__
    wrapper = types.FunctionType(template.replace(**renamed), namespace, fn.__name__, defaults or None)
    wrapper = functools.update_wrapper(wrapper, fn)
    wrapper.cache = cache
    return wrapper


def _wrapper_source(name, names, first_default):
    params = ", ".join(n if i < first_default else f"{n}=_default_{i}" for i, n in enumerate(names))
    checks = " and ".join(
        f"(type({n}) in key_types or (type({n}) is tuple and (all_keys(map(type, {n})) or clean_tuple({n}, 0))))"
        for n in names
    ) or "True"
    return _WRAPPER.format(name=name, params=params, names=", ".join(names), checks=checks,
                           args="(" + ", ".join(names) + ",)" if names else "()")


@functools.lru_cache(maxsize=None)
def _wrapper_code(names, first_default):
    # the code of the wrapper of a function of these parameters (its defaults are given when it is made)
    module = compile(_wrapper_source("wrapper", names, first_default), "<memoized>", "exec")
    return next(c for c in module.co_consts if isinstance(c, types.CodeType))


_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08
# the names the generated wrapper uses besides the parameters
_GENERATED_NAMES = {"args", "keyed", "result", "fn", "cache", "cache_get", "miss", "state", "max_entries",
                    "structure_error", "key_types", "clean_tuple", "all_keys", "type", "tuple", "map", "len"}


def clear_caches() -> None:
    """Empty every memoisation cache."""
    for c in _caches:
        c.clear()


@contextlib.contextmanager
def memoization(enabled: bool) -> Iterator[None]:
    """Context manager turning memoisation on or off (off: caches are emptied and not filled)."""
    old = _state["store"]
    _state["store"] = bool(enabled)
    if not enabled:
        clear_caches()
    try:
        yield
    finally:
        _state["store"] = old
