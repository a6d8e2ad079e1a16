"""The kinds of the values a run-time loop or branch carries (``i32``, ``i64``, ``i1``, ``f32``): finding a value's
kind, checking that a value keeps it, and moving values between Python and the block arguments of the construct."""

from __future__ import annotations

import struct
from typing import Any
from ...errors import TraceError
from ..lang.builder import current
from ..lang import numeric
from ..lang.values import TracedBool, TracedFloat, as_type, wrap
from ..lang.traced_int import TracedInt, as_value
from ...tensor.dtypes import dtype_of

__all__ = ["carried_mlir_type", "carried_to_ir", "wrap_carried", "traced_carried", "initial_kinds", "check_direct_call"]

# A carried value's kind is "i32", "i64", "i1" or "f32" for the index types, Booleans and Float32 (and Python
# numbers), else the name of its numeric type ("Float16", "Uint8"...).

_INDEX_KINDS = {"Int32": "i32", "Int64": "i64", "Float32": "f32"}


def _kind_of(v):
    """The kind of the initial carried value ``v``, or ``None`` if it cannot be carried."""
    if isinstance(v, (TracedInt, TracedFloat)):
        return _INDEX_KINDS.get(v.dtype.name, v.dtype.name)
    if isinstance(v, TracedBool):
        return "i1"
    if type(v) is bool:
        return "i1"
    if type(v) is int:
        if -(1 << 31) <= v < (1 << 31):
            return "i32"
        if -(1 << 63) <= v < (1 << 63):
            return "i64"
        return None
    if type(v) is float:
        return "f32"
    return None


def _describe(v):
    if isinstance(v, (TracedInt, TracedBool, TracedFloat)):
        return repr(v)
    return f"{type(v).__name__} {v!r}"


_KIND_NAMES = {"i32": "an i32 integer", "i64": "an i64 integer", "i1": "a bool", "f32": "an f32 float"}
_CONVERT_HINT = {"i32": " (cute_py.Int32(x) converts an integer)",
                 "i64": " (cute_py.Int64(x) converts an integer)",
                 "i1": " (compare an integer to get a bool)",
                 "f32": " (x.to(cute_py.Float32) converts a number)"}


def _kind_name(kind):
    return _KIND_NAMES.get(kind, f"a {kind} value")


def _dtype_of_kind(kind):
    return dtype_of({"i32": "Int32", "i64": "Int64", "f32": "Float32", "i1": "Boolean"}.get(kind, kind))


def carried_mlir_type(b: Any, kind: str) -> Any:
    """The MLIR type of a carried value of ``kind`` (``i1`` for a bool, else the register type of its dtype)."""
    if kind == "i1":
        return b.int_type(1)
    return numeric.register_type(_dtype_of_kind(kind))


def _fits_f32(x):
    try:
        struct.pack("f", x)
    except OverflowError:
        return False
    return True


def _check_value(v, kind, what, j):
    """Raise ``TraceError`` unless ``v`` can stand for carried value ``j`` of ``kind``."""
    dtype = None if kind == "i1" else _dtype_of_kind(kind)
    if isinstance(v, (TracedInt, TracedFloat)):
        ok = v.dtype is dtype
    elif isinstance(v, TracedBool):
        ok = kind == "i1"
    elif type(v) is bool:
        ok = kind == "i1"
    elif type(v) is int:
        ok = dtype is not None
        if ok and not dtype.is_float:
            lo, hi = (-(1 << (dtype.width - 1)), 1 << (dtype.width - 1)) if dtype.signed else (0, 1 << dtype.width)
            if not lo <= v < hi:
                raise TraceError(f"{what}: carried value {j} is {_kind_name(kind)}, and {v} does not fit "
                                 f"in {dtype.name if kind not in _KIND_NAMES else str(dtype.width) + ' bits'}")
        elif ok and kind == "f32" and not _fits_f32(float(v)):
            ok = False
    elif type(v) is float:
        ok = dtype is not None and dtype.is_float and (kind != "f32" or _fits_f32(v))
    else:
        ok = False
    if not ok:
        hint = _CONVERT_HINT.get(kind, f" (x.to(cute_py.{kind}) converts a number)") if isinstance(
            v, (TracedInt, TracedFloat)) else ""
        raise TraceError(f"{what}: carried value {j} must keep the kind of its initial value, "
                         f"{_kind_name(kind)}, got {_describe(v)}{hint}")


def carried_to_ir(b: Any, v: Any, kind: str) -> Any:
    """The MLIR value of the (checked) carried value ``v`` of ``kind`` (Python scalars become constants)."""
    if isinstance(v, (TracedInt, TracedBool, TracedFloat)):
        return v.ir
    if kind == "i1":
        return as_value(int(v), 1)
    return as_type(v, _dtype_of_kind(kind)).ir


def wrap_carried(value: Any, kind: str) -> Any:
    """A traced value of ``kind`` for the MLIR value ``value`` (a block argument: sign unknown)."""
    if kind == "i1":
        return TracedBool(value)
    if kind in ("i32", "i64"):
        return TracedInt(value, int(kind[1:]), False)
    return wrap(value, _dtype_of_kind(kind))


def traced_carried(b: Any, v: Any, kind: str) -> Any:
    """``v`` (checked) as a traced value: Python scalars become constants, traced values pass through."""
    if isinstance(v, (TracedInt, TracedBool, TracedFloat)):
        return v
    return wrap_carried(carried_to_ir(b, v, kind), kind)


def initial_kinds(carry: Any, what: str) -> list[str]:
    """The kinds of the initial carried values ``carry`` (a tuple or list); ``TraceError`` for others."""
    if not isinstance(carry, (tuple, list)):
        raise TraceError(f"{what}: carry= takes a tuple of initial values, got {carry!r}")
    kinds = []
    for j, v in enumerate(carry):
        k = _kind_of(v)
        if k is None:
            raise TraceError(f"{what}: carried value {j} must be a traced Int32/Int64, bool or Float32 (or a "
                             f"Python int, bool or float), got {_describe(v)}")
        kinds.append(k)
    return tuple(kinds)


def check_direct_call(depth: int, values: Any, kinds: list[str], what: str, call: str, body: Any) -> Any:
    """The builder, once ``call`` (``next()``/``set()``) is made directly in the ``body`` (not inside a nested
    loop or branch) with values matching the carried ``kinds``."""
    b = current()
    if len(b.open_regions) != depth:
        kind, f, line = b.open_regions[-1]
        raise TraceError(f"{what}: {call} must be called directly in the {body}, not inside the nested "
                         f"{kind} of {f}:{line} (carry the value out of the nested construct first)")
    _check_count(values, kinds, what, call)
    for j, (v, k) in enumerate(zip(values, kinds)):
        _check_value(v, k, f"{what} {call}", j)
        if isinstance(v, (TracedInt, TracedBool, TracedFloat)):
            v.ir  # noqa: B018 - a value whose scope has ended raises here, at the user's call
    return b


def _check_count(values, kinds, what, call):
    if len(values) != len(kinds):
        raise TraceError(f"{what}: {call} takes one value per carried value: {len(kinds)} expected "
                         f"({', '.join(kinds) or 'none'}), got {len(values)}")
