"""Atomics, reductions, and loads and stores with memory-model qualifiers, as kernel builtins with the CuTe
DSL's ``cute.arch`` names and keyword arguments.

``ptr`` is a pointer into global memory (``tensor.iterator``/``engine`` of a kernel's tensor argument, plus
an element offset), into this CTA's shared memory, or into a peer CTA's (``map_dsmem_ptr``); the state space
of the instruction is the pointer's (``.global``, ``.shared::cta``, ``.shared::cluster``). Values have the
pointer's element type (a Python number is converted to it; a traced value of another type is rejected).

``sem`` is the memory-ordering semantics (``"relaxed"``, ``"acquire"``, ``"release"``, ``"acq_rel"``, as each
instruction allows) and ``scope`` the threads it orders with (``"cta"``, ``"cluster"``, ``"gpu"``, ``"sys"``).
An atomic without them is PTX's default, ``.relaxed.gpu``; ``load``/``store`` without them are weak accesses,
and with ``sem`` they need a ``scope`` (PTX has no default there).

=============================================  ========================================================
call                                           PTX
=============================================  ========================================================
``atomic_add(ptr, v)`` ...                     ``atom{.sem}{.scope}.<space>.add.<type> old, [ptr], v``
``atomic_cas(ptr, cmp=c, val=v)``              ``atom{.sem}{.scope}.<space>.cas.b<n> old, [ptr], c, v``
``atomic_fmax(ptr, v)`` / ``atomic_fmin``      ``atom.max.s32`` / ``atom.min.u32`` on the float's bits
``red(ptr, v, op=..., dtype=...)``             ``red{.sem}{.scope}.<space>.<op>.<type> [ptr], v``
``load(ptr, dtype, ...)``                      ``ld{.sem.scope}.<space>{.cop}{.L1::...}{.L2::...}.<type>``
``store(ptr, v, ...)``                         ``st{.sem.scope}.<space>{.cop}{.L1::...}.<type>``
=============================================  ========================================================

``atomic_fmax``/``atomic_fmin`` order Float32 values by their bits: a non-negative float's bits grow with it as
an Int32 and a negative float's shrink as a Uint32, so the maximum of ``v >= +0`` is a signed integer maximum
and of ``v < 0`` (sign bit set) an unsigned minimum (``sign_bit``, when known, skips the test). They handle
infinities and NaNs whose sign bit is clear (the canonical NaN) as IEEE ``maxNum`` would not: such a NaN is
larger than everything. ``-0.0`` and ``+0.0`` are distinct (``-0.0 < +0.0``).
"""

from __future__ import annotations

from typing import Any

from ...errors import TraceError
from ...tensor.dtypes import DType, Float32, dtype_of
from ...tensor.pointer import AddressSpace, Pointer
from ..lang.memory import pointer_value
from ..lang.values import TracedBool, TracedFloat, as_type
from ..lang.traced_int import TracedInt
from ..emit import memory
from ..emit.memory import register_value
from ..emit.operands import int_operand

__all__ = ["atomic_add", "atomic_and", "atomic_or", "atomic_xor", "atomic_max", "atomic_min", "atomic_exch",
           "atomic_cas", "atomic_fmax", "atomic_fmin", "atomic_max_float32", "red", "load", "store"]

MAX_CLUSTER_CTAS = 16
SCOPES = {"cta": "cta", "cluster": "cluster", "gpu": "gpu", "sys": "sys"}
ATOMIC_SEMS = ("relaxed", "acquire", "release", "acq_rel")


# -- operands ---------------------------------------------------------------------------------------


def _address(ptr: Any, name: str) -> dict[str, Any]:
    """The address operands of ``ptr`` (``ptr`` and ``peer`` keywords of the emission): a global-memory pointer,
    this CTA's shared memory, or a peer CTA's (this CTA's address and the peer's rank)."""
    if not isinstance(ptr, Pointer):
        raise TraceError(f"{name}: ptr must be a pointer into global or shared memory, got {ptr!r}")
    if ptr.memspace is AddressSpace.gmem:
        return {"ptr": pointer_value(ptr, f"{name}: ptr")}
    if ptr.memspace in (AddressSpace.smem, AddressSpace.dsmem):
        peer = ptr.memspace is AddressSpace.dsmem
        p = pointer_value(ptr, f"{name}: ptr", peer=peer)
        if not peer:
            return {"ptr": p}
        rank = int_operand(ptr.peer, f"{name}: the peer CTA rank", 32, 0, MAX_CLUSTER_CTAS,
                           f" (a cluster has at most {MAX_CLUSTER_CTAS} CTAs)")
        return {"ptr": p, "peer": rank}
    raise TraceError(f"{name}: ptr must point into global or shared memory, got a {ptr.memspace.name} pointer")


def _value(val: Any, dtype: DType, what: str) -> Any:
    """The traced value ``val`` of ``dtype`` (a Python number converted; another traced type rejected)."""
    if isinstance(val, (TracedInt, TracedFloat)):
        if val.dtype is not dtype:
            raise TraceError(f"{what} must be a {dtype.name} (the pointer's element type), got a traced "
                             f"{val.dtype.name}; convert it explicitly")
        return val
    if isinstance(val, TracedBool) or type(val) not in (int, float):
        raise TraceError(f"{what} must be a {dtype.name} (the pointer's element type), got {val!r}")
    if type(val) is float and not dtype.is_float:
        raise TraceError(f"{what} must be a {dtype.name} (the pointer's element type), got the float {val!r}")
    if type(val) is int and not dtype.is_float:
        lo = -(1 << (dtype.width - 1)) if dtype.signed else 0
        if not lo <= val < lo + (1 << dtype.width):
            raise TraceError(f"{what}: {val} does not fit in a {dtype.name}")
    return as_type(val, dtype)


def _choice(value: Any, allowed: tuple[str, ...], what: str, name: str) -> Any:
    if value is not None and value not in allowed:
        raise TraceError(f"{name}: {what} must be one of {', '.join(allowed)} (or None), got {value!r}")
    return value


def _qualifiers(sem: Any, scope: Any, sems: tuple[str, ...], name: str, need_scope: bool) -> dict[str, Any]:
    """The ``sem`` and ``scope`` keywords of the emission (PTX's ``.sem`` and ``.scope``; None: none)."""
    _choice(sem, sems, "sem", name)
    _choice(scope, tuple(SCOPES), "scope", name)
    if need_scope and (sem is None) != (scope is None):
        raise TraceError(f"{name}: sem and scope go together (PTX's .{sem or '<sem>'}.{scope or '<scope>'}): give "
                         f"both or neither, got sem={sem!r}, scope={scope!r}")
    return {"sem": sem or None, "scope": SCOPES[scope] if scope else None}


def _elem(ptr: Any, name: str) -> DType:
    if not isinstance(ptr, Pointer):
        raise TraceError(f"{name}: ptr must be a pointer into global or shared memory, got {ptr!r}")
    return ptr.dtype


# -- atomics ------------------------------------------------------------------------------------------


def _atom_type(op: str, dtype: DType, name: str) -> str:
    w = dtype.width
    if op in ("and", "or", "xor", "exch", "cas"):
        ok = w in (32, 64) or (op == "cas" and w == 16)
        if ok and not dtype.is_float or (op in ("exch", "cas") and w in (32, 64)):
            return f"b{w}"
    elif op == "add":
        if dtype.is_float:
            if w in (32, 64):
                return f"f{w}"
            return "bf16" if dtype.name == "BFloat16" else "f16"  # .noftz, as PTX has them
        if w == 32:
            return "s32" if dtype.signed else "u32"
        if w == 64:
            return "u64"  # the same bits for a signed sum
    elif op in ("min", "max") and not dtype.is_float and w in (32, 64):
        return f"{'s' if dtype.signed else 'u'}{w}"
    raise TraceError(f"{name}: atom.{op} does not take a {dtype.name} (PTX: and/or/xor on 32/64-bit integers, "
                     f"add on 32-bit and 64-bit integers and Float16/BFloat16/Float32/Float64, min/max on 32/64-bit "
                     f"integers, exch on 32/64-bit values, cas on 16/32/64-bit values)")


def _atomic(name: str, op: str, ptr: Any, val: Any, sem: Any, scope: Any) -> Any:
    dtype = _elem(ptr, name)
    q = _qualifiers(sem, scope, ATOMIC_SEMS, name, need_scope=False)
    ty = _atom_type(op, dtype, name)
    v = _value(val, dtype, f"{name}: val")
    reg = register_value(v.ir, dtype)
    return memory.atom(op=op, ptx_type=ty, registers=[reg], dtype=dtype, **q, **_address(ptr, name))


def atomic_add(ptr: Pointer, val: Any, *, sem: str | None = None, scope: str | None = None) -> Any:
    """``atom.add``: add ``val`` to the element at ``ptr``; the element's old value."""
    return _atomic("atomic_add", "add", ptr, val, sem, scope)


def atomic_and(ptr: Pointer, val: Any, *, sem: str | None = None, scope: str | None = None) -> Any:
    """``atom.and.b32/b64``: the element at ``ptr`` becomes ``old & val``; returns ``old``."""
    return _atomic("atomic_and", "and", ptr, val, sem, scope)


def atomic_or(ptr: Pointer, val: Any, *, sem: str | None = None, scope: str | None = None) -> Any:
    """``atom.or.b32/b64``: the element at ``ptr`` becomes ``old | val``; returns ``old``."""
    return _atomic("atomic_or", "or", ptr, val, sem, scope)


def atomic_xor(ptr: Pointer, val: Any, *, sem: str | None = None, scope: str | None = None) -> Any:
    """``atom.xor.b32/b64``: the element at ``ptr`` becomes ``old ^ val``; returns ``old``."""
    return _atomic("atomic_xor", "xor", ptr, val, sem, scope)


def atomic_max(ptr: Pointer, val: Any, *, sem: str | None = None, scope: str | None = None) -> Any:
    """``atom.max.{s,u}{32,64}``: the element becomes ``max(old, val)`` (unsigned for unsigned types)."""
    return _atomic("atomic_max", "max", ptr, val, sem, scope)


def atomic_min(ptr: Pointer, val: Any, *, sem: str | None = None, scope: str | None = None) -> Any:
    """``atom.min.{s,u}{32,64}``: the element becomes ``min(old, val)`` (unsigned for unsigned types)."""
    return _atomic("atomic_min", "min", ptr, val, sem, scope)


def atomic_exch(ptr: Pointer, val: Any, *, sem: str | None = None, scope: str | None = None) -> Any:
    """``atom.exch.b32/b64``: store ``val`` at ``ptr``; the old value."""
    return _atomic("atomic_exch", "exch", ptr, val, sem, scope)


def atomic_cas(ptr: Pointer, *, cmp: Any, val: Any, sem: str | None = None, scope: str | None = None) -> Any:
    """``atom.cas.b16/b32/b64``: store ``val`` at ``ptr`` if the element equals ``cmp``; the old value either
    way (the swap happened when it equals ``cmp``)."""
    name = "atomic_cas"
    dtype = _elem(ptr, name)
    q = _qualifiers(sem, scope, ATOMIC_SEMS, name, need_scope=False)
    ty = _atom_type("cas", dtype, name)
    c, v = _value(cmp, dtype, f"{name}: cmp"), _value(val, dtype, f"{name}: val")
    regs = [register_value(c.ir, dtype), register_value(v.ir, dtype)]
    return memory.atom(op="cas", ptx_type=ty, registers=regs, dtype=dtype, **q, **_address(ptr, name))


def _float_bits_atomic(name: str, ptr: Any, val: Any, sign_bit: Any, sem: Any, scope: Any, largest: bool) -> Any:
    dtype = _elem(ptr, name)
    if dtype is not Float32:
        raise TraceError(f"{name} works on Float32 elements, got a pointer to {dtype.name}")
    if sign_bit is not None and type(sign_bit) is not bool:
        raise TraceError(f"{name}: sign_bit must be None, True or False, got {sign_bit!r}")
    q = _qualifiers(sem, scope, ATOMIC_SEMS, name, need_scope=False)
    v = _value(val, Float32, f"{name}: val")
    return memory.atom_float_extremum(largest=largest, sign_bit=sign_bit, value=v.ir, **q, **_address(ptr, name))



def atomic_fmax(ptr: Pointer, val: Any, *, sign_bit: bool | None = None, sem: str | None = None,
                scope: str | None = None) -> TracedFloat:
    """The element (a Float32) at ``ptr`` becomes ``max(old, val)`` by integer atomics on its bits (see the
    module); returns ``old``. ``sign_bit``: ``val``'s sign bit, when known statically."""
    return _float_bits_atomic("atomic_fmax", ptr, val, sign_bit, sem, scope, True)


def atomic_fmin(ptr: Pointer, val: Any, *, sign_bit: bool | None = None, sem: str | None = None,
                scope: str | None = None) -> TracedFloat:
    """The element (a Float32) at ``ptr`` becomes ``min(old, val)`` by integer atomics on its bits (see the
    module); returns ``old``."""
    return _float_bits_atomic("atomic_fmin", ptr, val, sign_bit, sem, scope, False)


def atomic_max_float32(ptr: Pointer, value: Any, *, positive_only: bool = True) -> TracedFloat:
    """The DSL's older form of :func:`atomic_fmax`: ``positive_only`` means ``sign_bit=False`` (``value`` is
    known to be ``>= +0``)."""
    if type(positive_only) is not bool:
        raise TraceError(f"atomic_max_float32: positive_only must be True or False, got {positive_only!r}")
    return atomic_fmax(ptr, value, sign_bit=False if positive_only else None)


# -- reductions ---------------------------------------------------------------------------------------

RED_OPS = ("add", "min", "max", "umin", "umax", "and", "or", "xor")
# PTX type -> (kind, bits of the element, packed pair)
RED_DTYPES = {"b32": ("b", 32), "b64": ("b", 64), "u32": ("u", 32), "u64": ("u", 64), "s32": ("s", 32),
              "s64": ("s", 64), "f32": ("f", 32), "f64": ("f", 64), "f16": ("f", 16), "bf16": ("f", 16),
              "f16x2": ("f", 32), "bf16x2": ("f", 32)}


def _red_type(op: str, text: str, name: str) -> str:
    """The PTX type suffix of ``red.<op>`` on ``text``; ``TraceError`` for a pair PTX does not have."""
    kind, bits = RED_DTYPES[text]
    if op in ("and", "or", "xor") and kind != "f":
        return f"b{bits}"
    if op == "add" and kind == "f":
        return text  # f16, bf16 and their pairs are .noftz, as PTX has them
    if op == "add" and kind != "f":
        return "u64" if bits == 64 else ("s32" if kind == "s" else "u32")  # a 64-bit sum has the same bits
    if op in ("umin", "umax") and kind != "f":
        return f"u{bits}"
    if op in ("min", "max") and kind in "us":
        return text
    raise TraceError(f"{name}: red.{op} does not take .{text} (PTX: and/or/xor on 32/64-bit integers, add on "
                     f"u32/s32/u64 and the float types, min/max on u32/s32/u64/s64)")


def red(ptr: Pointer, val: Any, *, op: str, dtype: str | DType, sem: str | None = None,
        scope: str | None = None) -> None:
    """``red{.sem}{.scope}.<space>.<op>.<dtype> [ptr], val``: combine ``val`` into the element at ``ptr`` without
    returning the old value. ``op`` is one of ``add``, ``min``, ``max``, ``umin``, ``umax``, ``and``, ``or``,
    ``xor``; ``dtype`` the PTX type (``"u32"``, ``"f32"``, ``"f16x2"``...) or a numeric type, of the pointer's
    element width. The packed ``f16x2``/``bf16x2`` forms reduce 32-bit elements and take ``val`` as a 32-bit
    integer holding the two halves. ``sem`` is ``"relaxed"`` or ``"release"``."""
    name = "red"
    if op not in RED_OPS:
        raise TraceError(f"{name}: op must be one of {', '.join(RED_OPS)}, got {op!r}")
    if isinstance(dtype, DType):
        text = ((("bf16" if dtype.name == "BFloat16" else f"f{dtype.width}") if dtype.is_float
                 else f"{'s' if dtype.signed else 'u'}{dtype.width}"))
    else:
        text = dtype
    if type(text) is not str or text not in RED_DTYPES:
        raise TraceError(f"{name}: dtype must be a numeric type of 16 to 64 bits or one of "
                         f"{', '.join(RED_DTYPES)}, got {dtype!r}")
    q = _qualifiers(sem, scope, ("relaxed", "release"), name, need_scope=False)
    ptx_type = _red_type(op, text, name)
    elem = _elem(ptr, name)
    bits = RED_DTYPES[text][1]
    if elem.width != bits or (not text.endswith("x2") and elem.is_float != (RED_DTYPES[text][0] == "f")):
        raise TraceError(f"{name}: .{text} reduces {bits}-bit {'floats' if RED_DTYPES[text][0] == 'f' else 'integers'}"
                         f", but ptr points to {elem.name} elements")
    if text.endswith("x2"):
        if not isinstance(val, TracedInt) or val.width != 32:
            raise TraceError(f"{name}: .{text} takes val as a traced 32-bit integer holding the two halves, "
                             f"got {val!r}")
        operand = val.ir
    else:
        v = _value(val, elem, f"{name}: val")
        operand = register_value(v.ir, elem)
    memory.red(op=op, ptx_type=ptx_type, operand=operand, **q, **_address(ptr, name))


# -- loads and stores ---------------------------------------------------------------------------------

EVICTIONS = {"evict_normal": "L1::evict_normal", "evict_first": "L1::evict_first", "evict_last": "L1::evict_last",
             "evict_no_allocate": "L1::no_allocate", "evict_unchanged": "L1::evict_unchanged"}
PREFETCH = {"size_64b": "L2::64B", "size_128b": "L2::128B", "size_256b": "L2::256B"}
LOAD_COPS = ("ca", "cg", "cs", "lu", "cv")
STORE_COPS = ("wb", "cg", "cs", "wt")


def _space_check(ptr: Any, ss: Any, name: str) -> None:
    _choice(ss, ("cta", "cluster"), "ss", name)
    if ss is None:
        return
    want = AddressSpace.smem if ss == "cta" else AddressSpace.dsmem
    if getattr(ptr, "memspace", None) is not want:
        raise TraceError(f"{name}: ss={ss!r} names .shared::{ss}, but ptr is a "
                         f"{getattr(ptr, 'memspace', None)} pointer (the state space is the pointer's: a CTA's "
                         f"own shared memory is ss='cta', a peer's from map_dsmem_ptr ss='cluster')")


def _cache_qualifiers(name: str, ptr: Any, sem: Any, cop: Any, evict: Any, prefetch: Any,
                      cops: tuple[str, ...]) -> dict[str, Any]:
    """The ``cop`` and ``eviction`` keywords of the emission, and ``prefetch`` when given (PTX's qualifiers; None:
    none)."""
    _choice(cop, cops, "cop", name)
    _choice(evict, tuple(EVICTIONS), "level1_eviction_priority", name)
    _choice(prefetch, tuple(PREFETCH), "level_prefetch_size", name)
    if cop is not None and sem is not None:
        raise TraceError(f"{name}: a cache operator (cop={cop!r}) goes with weak accesses only, not with "
                         f"sem={sem!r}")
    if cop is not None and evict is not None:
        raise TraceError(f"{name}: give a cache operator (cop) or an L1 eviction priority, not both")
    gmem = getattr(ptr, "memspace", None) is AddressSpace.gmem
    if (evict is not None or prefetch is not None) and not gmem:
        raise TraceError(f"{name}: L1 eviction priorities and L2 prefetch sizes apply to global memory only")
    out = {"cop": cop or None, "eviction": EVICTIONS[evict] if evict else None}
    if prefetch is not None:  # a load's
        out["prefetch"] = PREFETCH[prefetch]
    return out


def load(ptr: Pointer, dtype: DType, *, sem: str | None = None, scope: str | None = None,
         level1_eviction_priority: str | None = None, cop: str | None = None, ss: str | None = None,
         level_prefetch_size: str | None = None) -> Any:
    """``ld``: the element of type ``dtype`` (the pointer's element type, 8 to 64 bits) at ``ptr``, with the
    qualifiers the keywords name (``sem`` ``"relaxed"``/``"acquire"`` with a ``scope``; a cache operator
    ``cop``; ``level1_eviction_priority``; ``level_prefetch_size``; ``ss`` the pointer's shared space)."""
    name = "load"
    elem = _elem(ptr, name)
    d = dtype_of(dtype) if isinstance(dtype, (str, DType)) else None
    if d is None or d is not elem:
        raise TraceError(f"{name}: dtype must be the pointer's element type {elem.name}, got {dtype!r}")
    if d.width not in (8, 16, 32, 64):
        raise TraceError(f"{name} loads elements of 8, 16, 32 or 64 bits, got a {d.name}")
    q = _qualifiers(sem, scope, ("relaxed", "acquire"), name, need_scope=True)
    _space_check(ptr, ss, name)
    c = _cache_qualifiers(name, ptr, sem, cop, level1_eviction_priority, level_prefetch_size, LOAD_COPS)
    return memory.ld(dtype=d, **q, **c, **_address(ptr, name))


def store(ptr: Pointer, val: Any, *, level1_eviction_priority: str | None = None, cop: str | None = None,
          ss: str | None = None, sem: str | None = None, scope: str | None = None) -> None:
    """``st``: store ``val`` (of the pointer's element type, 8 to 64 bits) at ``ptr``, with the qualifiers the
    keywords name (``sem`` ``"relaxed"``/``"release"`` with a ``scope``; a cache operator ``cop``;
    ``level1_eviction_priority``; ``ss`` the pointer's shared space)."""
    name = "store"
    elem = _elem(ptr, name)
    if elem.width not in (8, 16, 32, 64):
        raise TraceError(f"{name} stores elements of 8, 16, 32 or 64 bits, got a {elem.name}")
    q = _qualifiers(sem, scope, ("relaxed", "release"), name, need_scope=True)
    _space_check(ptr, ss, name)
    c = _cache_qualifiers(name, ptr, sem, cop, level1_eviction_priority, None, STORE_COPS)
    v = _value(val, elem, f"{name}: val")
    reg = register_value(v.ir, elem)
    memory.st(register=reg, dtype=elem, **q, **c, **_address(ptr, name))
