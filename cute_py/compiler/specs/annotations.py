"""Parameter annotations of ``@jit`` and ``@kernel`` functions, keyword arguments, and stream arguments.

What an annotation means (the CuTe DSL's meaning where cute_py can give it):

- ``Int32``, ``Int64``, ``Float32``: a Python number passed for the parameter becomes a **run-time** scalar
  of that type (one compile serves every value), in a jit function as in a kernel (a kernel parameter
  annotated so takes the launch's value in its parameter block);
- :class:`Constexpr` (or ``Constexpr[T]``): a compile-time value, part of the cache key. A run-time
  scalar (``Int32(5)``) passed for it gives its Python value, compiled in (as the DSL's Python-valued
  numbers are); a device array or a stream passed for it is an ``ArgumentError``;
- ``cuda.CUstream`` (any annotation named ``CUstream``): the argument is a stream, read at each call;
- anything else (``cute.Tensor``, ``cute.Layout``, ``cute.Shape``, ``cute.Pointer``, ``cute.CopyAtom``,
  other element types...) is documentation: it is accepted and changes nothing.

Deliberate differences from the DSL: an *unannotated* Python number is static in cute_py (the DSL makes it a
run-time ``Int32``); a number passed for a parameter annotated with another element type (``Float16``,
``Int8``, ``Boolean``...) is static too (cute_py has run-time scalars of 32-bit ints, 64-bit ints and 32-bit
floats only) — the result is the same, with one compile per value.

A **stream** argument is a driver ``CUstream``, an object with ``cuda_stream`` (torch), a cupy stream or an object
with ``__cuda_stream__``, or any value passed for a ``CUstream``-annotated parameter (checked at each call by
:func:`stream_handle`: anything that is no stream is an ``ArgumentError`` before the launch). Passed to a jit function it is a run-time
argument (not in the key); ``kernel(...).launch(stream=s)`` with it launches on that stream.
"""

from __future__ import annotations

import inspect
import numbers
import re
import typing
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ...core.int_tuple import int_like
from ...errors import ArgumentError
from ...tensor.dtypes import Scalar
from .args import SCALAR_TYPES

__all__ = ["Constexpr", "ParamInfo", "is_stream", "stream_handle", "StreamArg", "dsl_user_op", "FakeStream",
           "make_fake_stream"]


def dsl_user_op(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The DSL's decorator of user functions that build IR, which it hands an MLIR source location (``loc``)
    and insertion point (``ip``). cute_py attaches locations itself (the traced Python line), so the function is
    returned as it is: its ``loc=None, ip=None`` parameters, passed on to cute_py functions that take them
    (``cute.where(..., loc=loc, ip=ip)``), stay ``None``."""
    if not callable(fn):
        raise ArgumentError(f"dsl_user_op decorates a function, got {fn!r}")
    return fn

T = TypeVar("T")


class Constexpr(Generic[T]):
    """Marks a parameter of a ``@jit`` or ``@kernel`` function as a compile-time value (``x: Constexpr`` or
    ``x: Constexpr[int]``): its value is compiled in and is part of the cache key."""


def _is_constexpr(ann):
    return ann is Constexpr or typing.get_origin(ann) is Constexpr or \
        (isinstance(ann, type) and issubclass(ann, Constexpr)) or \
        (typing.get_origin(ann) is typing.Annotated and "constexpr" in getattr(ann, "__metadata__", ()))


def _scalar_kind(ann):
    name = getattr(ann, "name", None)
    return name if name in SCALAR_TYPES and (ann is SCALAR_TYPES[name] or type(ann).__name__ == "DType") else None


def _names_stream(ann):
    if isinstance(ann, str):
        return bool(re.search(r"\bCUstream\b", ann))
    return getattr(ann, "__name__", None) == "CUstream"


class FakeStream:
    """A stream placeholder for ``cute.compile`` (``cute_py.runtime.make_fake_stream()``): the compiled function
    takes a stream there; each call passes a real one. Passed to a launch, it is an ``ArgumentError``."""

    __slots__ = ()

    def __cuda_stream__(self):
        raise ArgumentError("a fake stream (make_fake_stream) stands for a stream at compile time only; pass a "
                            "real stream to the compiled function")

    def __repr__(self) -> str:
        return "FakeStream()"


def make_fake_stream(*, use_tvm_ffi_env_stream: bool = False) -> FakeStream:
    """A :class:`FakeStream`: compile a function that takes a stream without one. ``use_tvm_ffi_env_stream``
    (a TVM-FFI option of the DSL) must be False: cute_py has no TVM-FFI calling convention."""
    if use_tvm_ffi_env_stream:
        raise ArgumentError("make_fake_stream(use_tvm_ffi_env_stream=True) is a TVM-FFI option; cute_py has no "
                            "TVM-FFI calling convention")
    return FakeStream()


def is_stream(x: object) -> bool:
    """Whether ``x`` is a CUDA stream object (a driver ``CUstream``, a torch stream, a cupy stream,
    ``__cuda_stream__``)."""
    t = type(x)
    return (t.__name__ == "CUstream" and t.__module__.startswith("cuda")) or hasattr(x, "__cuda_stream__") or \
        (t.__module__.startswith("torch") and hasattr(x, "cuda_stream")) or _is_cupy_stream(x)


def _is_cupy_stream(x):
    t = type(x)
    return t.__module__.startswith("cupy") and "Stream" in t.__name__ and hasattr(x, "ptr")


_STREAM_RULE = ("a stream is None (the legacy default stream), a cuda-python CUstream, a torch stream (its "
                ".cuda_stream), a cupy stream (its .ptr), an object with __cuda_stream__ (returning (version, "
                "handle)) or an int handle in [0, 2**64) (numpy integers too; not a bool, a float or a string)")


def stream_handle(x: Any) -> Any:
    """What the driver's launch takes for the stream ``x``: a ``CUstream`` of the driver binding as it is, else
    an int handle in ``[0, 2**64)``; ``ArgumentError`` naming the rule for anything else."""
    if x is None:
        return 0
    t = type(x)
    if t is int:
        if 0 <= x < 1 << 64:
            return x
        raise ArgumentError(f"{_STREAM_RULE}; got the int {x}, outside [0, 2**64)")
    if t.__name__ == "CUstream" and t.__module__.startswith("cuda"):
        return x if t.__module__ == "cuda.bindings.driver" else _handle(int(x), x)
    if t is bool or isinstance(x, (float, complex, str, bytes)):
        raise ArgumentError(f"{_STREAM_RULE}; got {x!r} ({t.__name__})")
    if t is FakeStream:
        x.__cuda_stream__()
    protocol = getattr(x, "__cuda_stream__", None)
    if protocol is not None:
        try:
            got = protocol()
            version, handle = got
        except Exception as e:
            raise ArgumentError(f"{_STREAM_RULE}; {t.__name__}.__cuda_stream__() did not return (version, handle): "
                                f"{type(e).__name__}: {e}") from None
        return _handle(handle, x)
    if t.__module__.startswith("torch") and hasattr(x, "cuda_stream"):
        return _handle(x.cuda_stream, x)
    if _is_cupy_stream(x):
        return _handle(x.ptr, x)
    if int_like(x) is not None:  # numpy integers
        return _handle(x, x)
    raise ArgumentError(f"{_STREAM_RULE}; got {t.__name__}")


def _handle(h, x):
    i = int_like(h)
    if i is None:
        raise ArgumentError(f"{_STREAM_RULE}; {type(x).__name__} gave the handle {h!r} ({type(h).__name__})")
    h = i
    if not 0 <= h < 1 << 64:
        raise ArgumentError(f"{_STREAM_RULE}; {type(x).__name__} gave the handle {h}, outside [0, 2**64)")
    return h


class StreamArg:
    """The stream argument ``index`` of a jit function, as its host trace sees it: pass it to
    ``launch(stream=...)``."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self):
        return f"<stream argument {self.index}>"


class ParamInfo:
    """The parameters of a function: ``names`` and per parameter ``kinds`` (``"Int32"``/``"Int64"``/
    ``"Float32"``, ``"constexpr"``, ``"stream"`` or ``None``), with keyword binding (:meth:`positional`)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.name = getattr(fn, "__name__", repr(fn))
        try:
            self.params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):  # no signature (a builtin): positional only, no annotations
            self.params = []
        self.names = [p.name for p in self.params]
        self.kinds = [self._kind(fn, p) for p in self.params]
        self.varargs = any(p.kind is p.VAR_POSITIONAL for p in self.params)
        self._index = {}  # skip -> {name: position} of the positional parameters after the first skip
        self._plans = {}  # (skip, len(args), keyword names) -> what fills each position after args

    @staticmethod
    def _kind(fn, p):
        ann = p.annotation
        if ann is p.empty:
            return None
        if isinstance(ann, str):
            if _names_stream(ann):
                return "stream"
            try:
                ann = eval(ann, getattr(fn, "__globals__", {}))
            except Exception as e:
                if re.search(r"\b(" + "|".join(SCALAR_TYPES) + r"|Constexpr)\b", ann):
                    code = fn.__code__
                    raise ArgumentError(f"the annotation {ann!r} of {p.name} does not evaluate "
                                        f"({type(e).__name__}: {e})", where=(code.co_filename, code.co_firstlineno)
                                        ) from None
                return None  # a name imported for type checking only
        if _is_constexpr(ann):
            return "constexpr"
        if _names_stream(ann):
            return "stream"
        return _scalar_kind(ann)

    def kind(self, i: int) -> str | None:
        """The kind of positional parameter ``i`` (``None`` past the named ones)."""
        return self.kinds[i] if i < len(self.kinds) and self.params[i].kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) else None

    def positional(self, args: tuple[Any, ...], kwargs: dict[str, Any], skip: int = 0) -> tuple[Any, ...]:
        """``args`` with ``kwargs`` placed at their parameters' positions (the first ``skip`` parameters are bound
        already: ``self``); a parameter between two given ones takes its default. ``ArgumentError`` for a name
        that is no parameter, a parameter given twice, a missing one, or a keyword-only parameter."""
        if not kwargs:
            return args
        key = (skip, len(args), tuple(kwargs))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(len(args), kwargs, skip)
            if len(self._plans) >= 256:  # calls with that many forms: start over rather than grow
                self._plans.clear()
            self._plans[key] = plan
        return args + tuple([kwargs[v] if by_name else v for by_name, v in plan])

    def _plan(self, n: int, kwargs: dict[str, Any], skip: int) -> tuple[tuple[bool, Any], ...]:
        """What :meth:`positional` appends to ``n`` positional arguments for keyword arguments of these names:
        ``(True, name)`` for a keyword's value, ``(False, default)`` for a parameter left out between them."""
        params = self.params[skip:]
        index = self._index.get(skip)
        if index is None:
            index = self._index[skip] = {p.name: i for i, p in enumerate(params)
                                         if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)}
        unknown = sorted(set(kwargs) - set(index))
        if unknown:
            kw_only = [n for n in unknown if any(p.name == n and p.kind is p.KEYWORD_ONLY for p in params)]
            why = "keyword-only parameters are not supported: make them positional" if kw_only else "no such parameter"
            raise ArgumentError(f"{self.name}: {', '.join(unknown)}: {why}")
        twice = sorted(name for name in kwargs if index[name] < n)
        if twice:
            raise ArgumentError(f"{self.name}: {', '.join(twice)} given both by position and by keyword")
        plan = []
        for i in range(n, max(index[name] for name in kwargs) + 1):
            p = params[i]
            if p.name in kwargs:
                plan.append((True, p.name))
            elif p.default is not p.empty:
                plan.append((False, p.default))
            else:
                raise ArgumentError(f"{self.name}: missing the argument {p.name}")
        return tuple(plan)

    def convert_kernel_arg(self, i: int | str, a: Any) -> Any:
        """A kernel argument as its annotation makes it: a Python number for an ``Int32``/``Int64``/``Float32``
        parameter becomes a run-time scalar; a run-time scalar for a ``Constexpr`` one is its static value."""
        if type(i) is int:
            kind = self.kind(i)
        else:
            kind = next((k for n, k in zip(self.names, self.kinds) if n == i), None)
        if kind in SCALAR_TYPES and isinstance(a, numbers.Real) and not isinstance(a, bool):
            return SCALAR_TYPES[kind](a)
        if kind == "constexpr" and isinstance(a, Scalar):
            return a.value
        return a
