"""Vector global loads and stores of 32-bit words (``ldg``/``stg``, 32 to 256 bits), cute_py's own kernel
builtins (the CuTe DSL has ``cute.arch.load``/``store`` for typed scalars instead).

Like the other builtins, each function emits its operation into the kernel being traced (outside a kernel it
raises :class:`~cute_py.errors.TraceError`), and every static argument is checked while tracing, with an error
naming the rule and the value. Each instruction is an op of the ``cute_nvgpu`` dialect
(``cute_nvgpu.ld_global``/``st_global``), whose verifier checks it again and whose lowering gives its PTX.

A load returns a tuple of traced ``Int32`` words, a store takes such a tuple. The address is a global-memory
pointer at a static offset (``tensor.engine + k`` of a kernel's tensor argument), plus ``index`` accesses of
the same size, so a per-thread address such as ``stg128(out.engine, words, index=tid)`` keeps the alignment
that the pointer guarantees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...tensor.pointer import AddressSpace, Pointer
from ..lang.builder import current
from ..lang.memory import pointer_value
from ...errors import TraceError
from ..lang.values import TracedFloat
from ..lang.traced_int import TracedInt, as_value
from ..emit import memory, numeric

__all__ = ["ldg", "stg", "ldg32", "ldg64", "ldg128", "ldg256", "stg32", "stg64", "stg128", "stg256"]

FULL_MASK = 0xFFFFFFFF
ACCESS_BITS = (32, 64, 128, 256)
LOAD_CACHE_MODIFIERS = ("ca", "cg", "cs", "lu", "cv", "nc")
STORE_CACHE_MODIFIERS = ("wb", "cg", "cs", "wt")


def _is_int(x):
    return type(x) is int




def _check_bits(bits, name):
    if not _is_int(bits) or bits not in ACCESS_BITS:
        raise TraceError(f"{name}: the access width must be one of {ACCESS_BITS} bits, got {bits!r}")
    return bits


def _cache_modifier(cache, allowed, name):
    """The cache operator named by ``cache`` (``"cg"`` or ``".cg"``), or None."""
    if cache is None:
        return None
    c = cache[1:] if isinstance(cache, str) and cache.startswith(".") else cache
    if c not in allowed:
        raise TraceError(f"{name}: cache modifier must be one of {', '.join(allowed)} (or None), "
                         f"got {cache!r}")
    return c


def _global_address(ptr, bits, index, name):
    """The ``!llvm.ptr<1>`` of access ``index`` (in units of ``bits``) from ``ptr``, its alignment checked."""
    nbytes = bits // 8
    if isinstance(ptr, Pointer):
        if ptr.memspace is not AddressSpace.gmem:
            raise TraceError(f"{name} accesses global memory, got a {ptr.memspace.name} pointer {ptr!r}")
        if ptr.address is None:
            raise TraceError(f"{name}: the pointer {ptr!r} has a run-time offset; pass the pointer at a "
                             f"static offset and the run-time part as index= (in {bits}-bit units)")
        align = ptr.alignment
    elif hasattr(ptr, "__cute_value__"):
        align = getattr(ptr, "alignment", None)
        if type(align) is not int:
            raise TraceError(f"{name}: the alignment of {ptr!r} is not known; a {bits}-bit access needs a "
                             f"pointer known to be {nbytes}-byte aligned")
    else:
        raise TraceError(f"{name} needs a global-memory pointer (e.g. tensor.engine of a kernel's tensor "
                         f"argument), got {ptr!r}")
    if align < nbytes:
        raise TraceError(f"{name}: a {bits}-bit access needs a {nbytes}-byte aligned address, but the "
                         f"pointer {ptr!r} is only {align}-byte aligned")
    base = pointer_value(ptr, f"{name}: the pointer")
    if str(base.type) != "!llvm.ptr<1>":
        raise TraceError(f"{name} accesses global memory, got a pointer of type {base.type}")
    if _is_int(index) and index == 0:
        return base
    if _is_int(index) and -(1 << 31) <= index < (1 << 31):
        return memory.global_element(base, bits, index)
    if not (_is_int(index) or isinstance(index, TracedInt)):
        raise TraceError(f"{name}: index must be an int or a traced integer, got {index!r}")
    return memory.global_element(base, bits, as_value(index, 64))


def _word(w, name, i):
    if isinstance(w, TracedInt):
        if w.width != 32:
            raise TraceError(f"{name}: word {i} must be 32 bits wide, got a traced i{w.width} "
                             f"(convert it with Int32(x))")
        return w.ir
    if isinstance(w, TracedFloat):
        if str(w.ir.type) != "f32":
            raise TraceError(f"{name}: word {i} must be 32 bits wide, got {w.ir.type}")
        return numeric.float_bits(w.ir)
    if _is_int(w):
        if not -(1 << 31) <= w <= FULL_MASK:
            raise TraceError(f"{name}: word {i} must fit in 32 bits, got {w}")
        return current().const(w - (1 << 32) if w >= 1 << 31 else w, 32)
    raise TraceError(f"{name}: word {i} must be an int, a traced Int32 or a Float32, got {w!r}")


def ldg(ptr: Pointer | Any, bits: int, cache: str | None = None, *,
        index: TracedInt | int = 0) -> tuple[TracedInt, ...]:
    """``ld.global{.cache}{.vN}.b32``: load ``bits`` (32, 64, 128 or 256) bits from global memory at ``ptr``
    plus ``index`` accesses of ``bits // 8`` bytes; a tuple of ``bits // 32`` traced Int32 words.

    ``ptr`` is a global-memory pointer at a static offset, aligned to the access (``bits // 8`` bytes,
    checked on its static alignment); ``index`` is an int or a traced integer. ``cache`` is ``None``
    or one of ``"ca"``, ``"cg"``, ``"cs"``, ``"lu"``, ``"cv"`` (``ld.global.<cop>``) or ``"nc"`` (the
    read-only path ``ld.global.nc``: only for memory that no thread writes while the kernel runs).
    sm_90 has no 256-bit global load: 256 bits are two ``ld.global.v4.b32`` of 128 bits, at the
    address and 16 bytes after it.
    """
    name = f"ldg{bits}" if _is_int(bits) and bits in ACCESS_BITS else "ldg"
    bits = _check_bits(bits, name)
    cop = _cache_modifier(cache, LOAD_CACHE_MODIFIERS, name)
    addr = _global_address(ptr, bits, index, name)
    words = memory.ld_global(addr, bits, cop)
    return tuple(TracedInt(w, 32, False) for w in words)


def stg(ptr: Pointer | Any, words: Sequence[TracedInt | TracedFloat | int] | TracedInt | TracedFloat | int,
        cache: str | None = None, *, index: TracedInt | int = 0) -> None:
    """``st.global{.cache}{.vN}.b32``: store ``len(words) * 32`` bits (32, 64, 128 or 256) to global memory
    at ``ptr`` plus ``index`` accesses of that size.

    ``words`` is a tuple of 32-bit words: ints, traced Int32 values or Float32 values (stored as their
    bits). ``ptr``/``index`` are as for :func:`ldg`; ``cache`` is ``None`` or one of ``"wb"``, ``"cg"``,
    ``"cs"``, ``"wt"``. sm_90 has no 256-bit global store: 256 bits are two ``st.global.v4.b32`` of
    128 bits, at the address and 16 bytes after it.
    """
    if isinstance(words, (TracedInt, TracedFloat)) or _is_int(words):
        words = (words,)
    if not isinstance(words, (tuple, list)):
        raise TraceError(f"stg takes a tuple of 32-bit words, got {words!r}")
    bits = len(words) * 32
    name = f"stg{bits}" if bits in ACCESS_BITS else "stg"
    if bits not in ACCESS_BITS:
        raise TraceError(f"stg stores 1, 2, 4 or 8 words of 32 bits (an access of {ACCESS_BITS} bits), "
                         f"got {len(words)} words")
    cop = _cache_modifier(cache, STORE_CACHE_MODIFIERS, name)
    vals = [_word(w, name, i) for i, w in enumerate(words)]
    addr = _global_address(ptr, bits, index, name)
    memory.st_global(addr, vals, cop)


def _sized_ldg(bits):
    def load(ptr: Pointer | Any, cache: str | None = None, *, index: TracedInt | int = 0) -> tuple[TracedInt, ...]:
        return ldg(ptr, bits, cache, index=index)

    load.__name__ = load.__qualname__ = f"ldg{bits}"
    load.__doc__ = f"``ldg(ptr, {bits}, cache, index=index)``: {bits // 32} traced Int32 word(s) from global memory."
    return load


def _sized_stg(bits):
    def store(ptr: Pointer | Any, words: Sequence[TracedInt | TracedFloat | int] | TracedInt | TracedFloat | int,
              cache: str | None = None, *, index: TracedInt | int = 0) -> None:
        ws = (words,) if isinstance(words, (TracedInt, TracedFloat)) or _is_int(words) else words
        if not isinstance(ws, (tuple, list)) or len(ws) != bits // 32:
            got = f"{len(ws)} words" if isinstance(ws, (tuple, list)) else repr(words)
            raise TraceError(f"stg{bits} stores {bits // 32} words of 32 bits, got {got}")
        stg(ptr, ws, cache, index=index)

    store.__name__ = store.__qualname__ = f"stg{bits}"
    store.__doc__ = f"``stg(ptr, words, cache, index=index)`` of {bits // 32} 32-bit word(s) to global memory."
    return store


ldg32, ldg64, ldg128, ldg256 = (_sized_ldg(n) for n in ACCESS_BITS)
stg32, stg64, stg128, stg256 = (_sized_stg(n) for n in ACCESS_BITS)
