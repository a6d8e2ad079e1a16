"""Memoisation of the pure algebra functions.

Layouts and IntTuples of static ints are immutable and hashable, so a function of
them can be cached.  Arguments holding dynamic (run-time) values are unhashable by
design and bypass the cache; so do keyword arguments.  Errors are not cached.
"""

import contextlib
import functools

__all__ = ["memoize", "clear_caches", "memoization"]

_MAX_ENTRIES = 4096
_caches = []
_state = {"store": True}
_MISS = object()


def memoize(fn):
    """Cache ``fn(*args)`` on its positional arguments (bounded; cleared when full)."""
    cache = {}
    _caches.append(cache)
    state = _state
    cache_get = cache.get
    miss = _MISS

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if kwargs:
            return fn(*args, **kwargs)
        try:
            result = cache_get(args, miss)
        except TypeError:  # unhashable: dynamic values
            return fn(*args)
        if result is not miss:
            return result
        result = fn(*args)
        if state["store"]:
            if len(cache) >= _MAX_ENTRIES:
                cache.clear()
            cache[args] = result
        return result

    wrapper.cache = cache
    return wrapper


def clear_caches():
    """Empty every memoisation cache."""
    for c in _caches:
        c.clear()


@contextlib.contextmanager
def memoization(enabled):
    """Context manager turning memoisation on or off (off: caches are emptied and not filled)."""
    old = _state["store"]
    _state["store"] = bool(enabled)
    if not enabled:
        clear_caches()
    try:
        yield
    finally:
        _state["store"] = old
