"""``@jit`` and ``@kernel`` on methods: binding ``self``, its key, its snapshot for a kernel, and what a kernel may
not do to it.

**Binding.** A ``@jit`` or ``@kernel`` function read as an attribute of an instance is bound to it (a
:class:`BoundJit` / :class:`BoundKernel`), as a method is: ``self.kernel(a, b).launch(...)`` inside a jit
method, ``instance(a, b)`` when the class's ``__call__`` is ``@jit``, ``cute.compile(instance, a, b)`` or
``cute.compile(instance.method, a, b)`` (the compiled object then takes ``a, b``: ``self`` is compiled in).
``@staticmethod`` and ``@classmethod`` work in either order with the decorators. A bound jit function called
while a kernel is traced is traced inline, with ``self``; called while a host function runs, it runs inline.

**Keys.** ``self`` is part of the compile's key by value (:func:`~..cache.config_key.config_key`: its
attributes, recursively, and its class's namespace), so equal instances share compiles in a process and
across processes (the disk cache), and an instance with any attribute changed is compiled again. An
instance with an attribute that has no key (an open file, a lock, a device array...) is traced again on every
call (no compile is cached for it; a kernel that takes such a ``self`` is compiled every time, one that does
not may still be found in the caches by its launches), and a ``RuntimeWarning`` (once per class and attribute)
names that attribute and why.

**In a kernel**, ``self`` is a shallow copy of the instance taken at the launch (the instance as the jit method
left it by then: what the CuTe DSL's kernel sees, as it traces the kernel at the launch). Its attributes are
compile-time constants. A kernel that assigns or deletes an attribute of ``self`` (or of an object it holds)
is a ``TraceError`` naming the attribute (a ``functools.cached_property`` filled in is not a change): a trace-time side effect would happen on some compiles and not on
others (a cache hit skips the trace). The jit method itself may set attributes of ``self`` freely (the DSL's
examples do); those are the instance's, as in the DSL.
"""

from __future__ import annotations

import copy
import functools
import warnings
from typing import Any

from ...errors import TraceError
from ..cache.config_key import Unkeyable, config_key

__all__ = ["BoundJit", "BoundKernel", "self_key", "launch_snapshot", "state_of", "check_unchanged"]

_WARNED = set()


class BoundJit:
    """A ``@jit`` function bound to ``obj`` (its first argument): call it, ``.compile(...)`` it."""

    __slots__ = ("__func__", "__self__")

    def __init__(self, jit_function: Any, obj: Any) -> None:
        self.__func__, self.__self__ = jit_function, obj

    @property
    def fn(self) -> Any:
        return self.__func__.fn

    @property
    def __name__(self) -> str:  # noqa: A003 - what functools and error messages read
        return self.__func__.fn.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__func__.call_bound(self.__self__, args, kwargs)

    def compile(self, *args: Any, options: Any = None, **kwargs: Any) -> Any:
        """The compiled kernels of this bound function for arguments like ``args`` (``self`` compiled in)."""
        return self.__func__.compile_bound(self.__self__, args, kwargs, options)

    def set_name_prefix(self, name: str, *, remove_cutlass_symbol: bool = False, keep_mangled_name: bool = True
                        ) -> None:
        """The jit function's name prefix (shared by every instance, as the method is)."""
        self.__func__.set_name_prefix(name, remove_cutlass_symbol=remove_cutlass_symbol,
                                      keep_mangled_name=keep_mangled_name)

    def __eq__(self, other: object) -> bool:
        return type(other) is BoundJit and other.__func__ is self.__func__ and other.__self__ is self.__self__

    def __hash__(self) -> int:
        return hash((id(self.__func__), id(self.__self__)))

    def __repr__(self):
        return f"<bound {self.__func__!r} of {type(self.__self__).__name__}>"


class BoundKernel:
    """A ``@kernel`` function bound to ``obj``: ``bound(*args)`` is ``kernel(obj, *args)``."""

    __slots__ = ("__func__", "__self__")

    def __init__(self, kernel_function: Any, obj: Any) -> None:
        self.__func__, self.__self__ = kernel_function, obj

    @property
    def fn(self) -> Any:
        return self.__func__.fn

    @property
    def __name__(self) -> str:  # noqa: A003
        return self.__func__.fn.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__func__.call_bound(self.__self__, args, kwargs)

    def set_name_prefix(self, name: str, *, remove_cutlass_symbol: bool = False, keep_mangled_name: bool = True
                        ) -> None:
        """The kernel's name prefix (shared by every instance, as the method is)."""
        self.__func__.set_name_prefix(name, remove_cutlass_symbol=remove_cutlass_symbol,
                                      keep_mangled_name=keep_mangled_name)

    def __eq__(self, other: object) -> bool:
        return type(other) is BoundKernel and other.__func__ is self.__func__ and other.__self__ is self.__self__

    def __hash__(self) -> int:
        return hash((id(self.__func__), id(self.__self__)))

    def __repr__(self):
        return f"<bound {self.__func__!r} of {type(self.__self__).__name__}>"


def self_key(obj: Any, where: str) -> str | None:
    """The key of the instance ``obj`` bound to the jit function ``where``; ``None`` (after a warning, once per
    class and attribute) when some attribute has no key: then the call is not cached under the instance."""
    try:
        return config_key(obj, "self")
    except Unkeyable as e:
        token = (type(obj).__module__, type(obj).__qualname__, str(e).split(" ")[0])
        if token not in _WARNED:
            _WARNED.add(token)
            warnings.warn(f"{where}: traced again on every call, its kernels that take self compiled every time: {e}",
                          RuntimeWarning, stacklevel=4)
        return None


def launch_snapshot(obj: Any) -> Any:
    """The ``self`` a kernel launched now sees: a shallow copy of ``obj`` (``obj`` itself when it cannot be
    copied; then later changes of its attributes reach the kernel's trace, and its key is still taken after)."""
    if isinstance(obj, type):
        return obj
    try:
        return copy.copy(obj)
    except Exception:  # an object copy refuses: the instance itself
        return obj


def _state(obj):
    """``{attribute: (key or identity)}`` of ``obj``, to see what a kernel changed."""
    if isinstance(obj, type):  # a class method's class: its namespace is code
        return {}
    attrs = dict(getattr(obj, "__dict__", None) or {})
    for c in type(obj).__mro__:
        slots = vars(c).get("__slots__", ())
        for s in (slots,) if isinstance(slots, str) else slots:
            if s not in ("__dict__", "__weakref__") and hasattr(obj, s):
                attrs[s] = getattr(obj, s)
    out = {}
    for name, value in attrs.items():
        try:
            out[name] = config_key(value, f"self.{name}")
        except Unkeyable:
            out[name] = ("id", id(value))
    return out


def state_of(obj: Any) -> dict[str, Any]:
    """What :func:`check_unchanged` compares (taken before a kernel's trace)."""
    return _state(obj)


def check_unchanged(obj: Any, before: dict[str, Any], kernel_name: str, where: tuple[str, int]) -> None:
    """``TraceError`` when the kernel ``kernel_name`` assigned, deleted or changed an attribute of its ``self``
    ``obj`` (``before``: :func:`state_of` it before the trace)."""
    after = _state(obj)
    changed = sorted(n for n in set(before) | set(after) if before.get(n, "<unset>") != after.get(n, "<unset>")
                     and not (n not in before and isinstance(getattr(type(obj), n, None), functools.cached_property)))
    if changed:
        names = ", ".join(f"self.{n}" for n in changed)
        raise TraceError(f"the kernel {kernel_name} changed {names}: in a kernel the attributes of self are "
                         f"compile-time constants (a change made while tracing would be lost on a cache hit); set "
                         f"them in the @cute.jit method before the launch, or keep the value in a local variable",
                         where=where)
