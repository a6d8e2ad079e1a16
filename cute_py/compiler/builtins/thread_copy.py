"""Per-thread tile copies in a kernel: cp.async (with zero-fill) and plain vector loads/stores.

A copy moves a thread's partition ``src`` to ``dst`` (same number of elements) in *vectors*:
runs of ``V`` consecutive elements (in the partition's flat, column-major order) that are
contiguous in both tensors, one instruction each. With a copy atom, ``V`` is the atom's
values per instruction (``num_bits / width``) and every run must be contiguous (checked on
the static layouts; in a swizzled layout a run must stay inside a swizzle unit); without
one, ``V`` is the widest run (up to 128 bits) both layouts and both pointers' alignments
allow. Addresses come from the layouts on traced coordinates; the alignment known for a
pointer after run-time offsets (``TracedInt.known_divisor``) must cover the vector.

Predicates: ``pred`` is a static bool, a run-time condition for the whole copy, or a tensor
holding one condition per vector (size = number of vectors) or per element (size = size of
``src``: each element keeps its own condition, so a plain copy then goes element by element, and a
cp.async vector copies its leading elements up to the first false condition and zero-fills the rest —
exactly the elements inside a bound, the usual predicate, which holds for a prefix of each vector).
``predicate(coords, bound)``
builds the usual one from a coordinate partition: ``coord < bound`` in every mode. A cp.async
whose predicate is false copies no bytes and *zero-fills* its destination (``src_size = 0``);
a plain copy whose predicate is false does nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING


from ...core.int_tuple import divisor_of, flatten, product
from ...core.layout import Layout
from ...core.typing import Shape
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.tensor import Tensor
from ...tensor.engines import ArrayEngine, CoordEngine, check_store
from ...atom import CopyUniversalOp
from ...nvgpu.cpasync.ops import CopyG2SOp, LoadCacheMode
from ..emit import emit
from ..flow.control import if_
from ...errors import TraceError
from ..lang.memory import element_ptr
from ..lang.values import TracedBool, as_type
from ..lang.traced_int import select

if TYPE_CHECKING:
    from ..lang.traced_int import TracedInt


__all__ = ["vector_copy", "tensor_copy", "predicate", "vector_width"]

_MAX_BITS = 128


def _layout(t):
    lay = t.layout
    return getattr(lay, "outer", lay)


def _swizzle_unit(t):
    """Elements a swizzle keeps in place as a block (``2**base``), or ``None`` without a swizzle."""
    inner = getattr(t.layout, "inner", None)
    if inner is None:
        return None
    return 1 << getattr(inner, "base", 0) if getattr(inner, "bits", 0) else None


def _run_length(t, limit):
    """The longest power-of-two run (<= ``limit``) of consecutive flat elements that is contiguous in ``t``
    and repeats: every run of that length is a contiguous block starting at a multiple of the length
    (so the pointer's alignment carries over to every run)."""
    lay = _layout(t)
    n = product(lay.shape)
    if type(n) is not int:
        raise TraceError(f"copy: a thread partition needs a static layout, got {lay}")
    strides = flatten(lay.stride)
    if any(type(d) is not int for d in (strides if type(strides) is tuple else (strides,))):
        v = _dynamic_run_length(lay, limit)
    else:
        v = _static_run_length(lay, n, limit)
    unit = _swizzle_unit(t)
    if unit is not None:
        v = min(v, unit)
    return v


def _dynamic_run_length(lay, limit):
    """:func:`_run_length` of a layout with run-time strides: the flat elements are contiguous for the static
    prefix of leaves whose strides continue each other (1, then the extents' product); a run of ``v`` (a power of
    two dividing that prefix) starts on a multiple of ``v`` when every later stride is known to be one."""
    shapes, strides = flatten(lay.shape), flatten(lay.stride)
    shapes, strides = (shapes, strides) if type(shapes) is tuple else ((shapes,), (strides,))
    run, i = 1, 0
    while i < len(shapes) and type(shapes[i]) is int and (shapes[i] == 1 or (type(strides[i]) is int and
                                                                             strides[i] == run)):
        run *= shapes[i]
        i += 1
    v = 1
    while v * 2 <= limit and run % (v * 2) == 0 and \
            all((type(e) is int and e == 1) or divisor_of(d) % (v * 2) == 0 for e, d in zip(shapes[i:], strides[i:])):
        v *= 2
    return v


def _static_run_length(lay, n, limit):
    v = 1
    while v * 2 <= limit and n % (v * 2) == 0:
        w = v * 2
        ok = True
        for start in range(0, n, w):
            base = lay(start)  # every run must also start on a multiple of its length (its alignment)
            if type(base) is not int or base % w or any(lay(start + i) != base + i for i in range(1, w)):
                ok = False
                break
        if not ok:
            break
        v = w
    return v


def _engine_align(t):
    e = t.engine
    if isinstance(e, Pointer):
        return e.alignment * 8 // e.dtype.width if e.dtype.width <= 8 * e.alignment else 1
    return 1 << 30  # registers: any grouping


def vector_width(src: Tensor, dst: Tensor, max_bits: int = _MAX_BITS) -> int:
    """The widest vector (elements) for copying ``src`` to ``dst``: contiguous in both, aligned in both."""
    width = src.element_type.width
    limit = max(1, max_bits // width)
    v = min(_run_length(src, limit), _run_length(dst, limit), _engine_align(src), _engine_align(dst))
    return max(1, v)


def _check_pair(src, dst):
    for role, t in (("src", src), ("dst", dst)):
        if not isinstance(t, Tensor) or isinstance(t.engine, CoordEngine):
            raise TraceError(f"copy: {role} must be a tensor over memory or registers, got {t!r}")
    if src.element_type.width != dst.element_type.width:
        raise TraceError(f"copy: src and dst element widths differ ({src.element_type.name} -> "
                         f"{dst.element_type.name})")
    n, m = product(_layout(src).shape), product(_layout(dst).shape)
    if n != m:
        raise TraceError(f"copy: src has {n} elements but dst has {m} (src {src.layout}, dst {dst.layout})")
    return n


def _pred_at(pred, c, v, n):
    if pred is None or type(pred) is bool or isinstance(pred, TracedBool):
        return True if pred is None else pred
    if isinstance(pred, Tensor):
        size = product(_layout(pred).shape)
        if size == n // v:
            return pred[c]
        if size == n:
            return pred[c * v]
        raise TraceError(f"copy: pred has {size} conditions; expected one per vector ({n // v}) or per "
                         f"element ({n})")
    raise TraceError(f"copy: pred must be a bool, a run-time condition or a tensor of them, got {pred!r}")


def _check_vector(t, v, role):
    got = _run_length(t, v)
    if got < v:
        raise TraceError(f"copy: the atom moves {v} elements per instruction, but {role} {t.layout} has "
                         f"contiguous runs of only {got} (or its swizzle/alignment splits them)")


_UNIVERSAL = CopyUniversalOp()


def tensor_copy(src: Tensor, dst: Tensor) -> None:
    """A memory tensor's ``load``/``store`` through registers: :func:`vector_copy` with the widest vectors."""
    vector_copy(src, dst)


def autovec_copy(src: Tensor, dst: Tensor, *, l1c_evict_priority: object = None, loc: object = None,
                 ip: object = None) -> None:
    """The CuTe DSL's ``cute.autovec_copy``: copy ``src`` to ``dst`` (equal element widths, static shapes) with
    plain loads and stores of the widest vectors both layouts and pointers allow. ``l1c_evict_priority`` other
    than the default (evict-normal) is not supported (``TraceError``); ``loc``/``ip`` are unused."""
    name = getattr(l1c_evict_priority, "name", l1c_evict_priority)
    if name not in (None, "EVICT_NORMAL", "evict_normal"):
        raise TraceError(f"autovec_copy: l1c_evict_priority={l1c_evict_priority!r} is not supported (only the "
                         f"default, evict-normal)")
    for role, t in (("src", src), ("dst", dst)):
        if not isinstance(t, Tensor):
            raise TraceError(f"autovec_copy: {role} must be a tensor, got {t!r}")
    sw, dw = src.element_type.width, dst.element_type.width
    if sw != dw:
        raise TraceError(f"autovec_copy copies between equal element widths, got {src.element_type.name} and "
                         f"{dst.element_type.name}")
    vector_copy(src, dst)


def basic_copy(src: Tensor, dst: Tensor, *, loc: object = None, ip: object = None) -> None:
    """The CuTe DSL's ``cute.basic_copy``: copy ``src`` to ``dst`` element by element (static shapes of equal
    size; an element of another type is converted as a store converts it). ``loc``/``ip`` are unused."""
    for role, t in (("src", src), ("dst", dst)):
        if not isinstance(t, Tensor):
            raise TraceError(f"basic_copy: {role} must be a tensor, got {t!r}")
    n, m = product(_layout(src).shape), product(_layout(dst).shape)
    if type(n) is not int or type(m) is not int:
        raise TraceError(f"basic_copy needs static shapes, got {_layout(src)} and {_layout(dst)}")
    if n != m:
        raise TraceError(f"basic_copy: src has {n} elements, dst {m}")
    if src.element_type is dst.element_type:
        vector_copy(src, dst, vector=1)
        return
    for i in range(n):
        dst[i] = src[i]


def vector_copy(src: Tensor, dst: Tensor, *, vector: int | None = None, cp_async: str | None = None,
                pred: bool | TracedBool | Tensor | None = None, cache_hint: TracedInt | int | None = None) -> None:
    """Copy ``src`` to ``dst`` in vectors of ``vector`` elements (default: the widest allowed).

    ``cp_async``: ``None`` for plain loads/stores, else ``"ca"``/``"cg"`` (gmem -> smem cp.async).
    """
    n = _check_pair(src, dst)
    check_store(dst, "a copy")
    width = src.element_type.width
    if vector is None:
        vector = vector_width(src, dst)
    else:
        for role, t in (("src", src), ("dst", dst)):
            if not isinstance(t.engine, ArrayEngine):
                _check_vector(t, vector, role)
    if n % vector:
        raise TraceError(f"copy: {n} elements are not a whole number of {vector}-element vectors")
    per_element = isinstance(pred, Tensor) and vector > 1 and product(_layout(pred).shape) == n
    nbits = vector * width
    if cp_async is not None:
        _cp_async(src, dst, n, vector, nbits, cp_async, pred, cache_hint)
        return
    if cache_hint is not None:
        raise TraceError("copy: cache_hint applies to cp.async and TMA copies")
    for c in range(n // vector):
        if per_element and vector > 1:  # whole vectors where every condition holds, else element by element
            if isinstance(dst.engine, ArrayEngine):
                _per_element_vector_into_registers(src, dst, pred, c * vector, vector, nbits)
            else:
                _per_element_vector(src, dst, pred, c * vector, vector, nbits)
            continue
        p = _pred_at(pred, c, vector, n)
        if p is False:
            continue
        if p is True:
            emit(_UNIVERSAL, src=src, dst=dst, first=c * vector, vector=vector, nbits=nbits)
        elif isinstance(dst.engine, ArrayEngine):
            _predicated_into_registers(src, dst, c * vector, vector, nbits, p)
        else:
            with if_(p):
                emit(_UNIVERSAL, src=src, dst=dst, first=c * vector, vector=vector, nbits=nbits)


def _all_of(conds):
    """The conjunction of per-element conditions, not all ``True``: ``False`` if one is, else the run-time ``&`` of
    those that are not ``True``."""
    if any(c is False for c in conds):
        return False
    every = None
    for c in conds:
        if c is not True:
            every = c if every is None else every & c
    return every


def _per_element_vector(src, dst, pred, first, vector, nbits):
    """A vector copy into memory under one condition per element: one vector access where all hold, else each
    element under its own condition (never an access to an element whose condition fails)."""
    conds = [pred[first + k] for k in range(vector)]
    if all(c is True for c in conds):
        emit(_UNIVERSAL, src=src, dst=dst, first=first, vector=vector, nbits=nbits)
        return
    every = _all_of(conds)
    if every is not False:
        with if_(every):
            emit(_UNIVERSAL, src=src, dst=dst, first=first, vector=vector, nbits=nbits)
        otherwise = ~every
    else:
        otherwise = True
    width = src.element_type.width

    def elements():
        for k, c in enumerate(conds):
            if c is False:
                continue
            if c is True:
                emit(_UNIVERSAL, src=src, dst=dst, first=first + k, vector=1, nbits=width)
            else:
                with if_(c):
                    emit(_UNIVERSAL, src=src, dst=dst, first=first + k, vector=1, nbits=width)

    if otherwise is True:
        elements()
    else:
        with if_(otherwise):
            elements()


def _per_element_vector_into_registers(src, dst, pred, first, vector, nbits):
    """A vector load into registers under one condition per element: one vector load where all hold; where not,
    each element whose condition holds on its own (no element is read whose condition fails, and registers whose
    condition fails keep their values)."""
    conds = [pred[first + k] for k in range(vector)]
    if all(c is True for c in conds):
        emit(_UNIVERSAL, src=src, dst=dst, first=first, vector=vector, nbits=nbits)
        return
    width = src.element_type.width
    every = _all_of(conds)
    if every is not False:
        _predicated_into_registers(src, dst, first, vector, nbits, every)
    for k, c in enumerate(conds):
        if c is False:
            continue
        alone = c if every is False else (~every if c is True else (~every) & c)
        if alone is True:
            emit(_UNIVERSAL, src=src, dst=dst, first=first + k, vector=1, nbits=width)
        else:
            _predicated_into_registers(src, dst, first + k, 1, width, alone)


def _predicated_into_registers(src, dst, first, vector, nbits, p):
    """A predicated copy into registers: the loaded elements leave the branch as its carried values (where ``p``
    is false the registers keep their values), so that they can be used after it."""
    slots = [dst.layout(i) for i in range(first, first + vector)]
    old = tuple(as_type(dst.engine.read(k), dst.element_type) for k in slots)
    br = if_(p, carry=old)
    with br:
        emit(_UNIVERSAL, src=src, dst=dst, first=first, vector=vector, nbits=nbits)
        br.set(*(dst.engine.read(k) for k in slots))
    for k, v in zip(slots, br.result):
        dst.engine.write(k, v)


def _cp_async(src, dst, n, vector, nbits, modifier, pred, cache_hint):
    for role, t, space in (("src", src, AddressSpace.gmem), ("dst", dst, AddressSpace.smem)):
        if not isinstance(t.engine, Pointer) or t.engine.memspace is not space:
            raise TraceError(f"cp.async copies global to shared memory: {role} must be a {space.name} tensor, "
                             f"got {t!r}")
    nbytes = nbits // 8
    if nbits % 8 or nbytes not in (4, 8, 16):
        raise TraceError(f"cp.async copies 4, 8 or 16 bytes per instruction; {vector} x "
                         f"{src.element_type.name} is {nbits} bits (make the vector wider or use a plain copy)")
    if modifier == "cg" and nbytes != 16:
        raise TraceError(f"cp.async.cg copies 16 bytes only; this copy moves {nbytes} per instruction")
    op = CopyG2SOp(LoadCacheMode.GLOBAL if modifier == "cg" else LoadCacheMode.ALWAYS)
    for c in range(n // vector):
        p = _pred_at(pred, c, vector, n)
        sp, gp = element_ptr(dst, c * vector), element_ptr(src, c * vector)
        for role, ptr in (("dst", sp), ("src", gp)):
            if ptr.alignment < nbytes:
                raise TraceError(f"cp.async of {nbytes} bytes needs {nbytes}-byte aligned addresses, but the "
                                 f"{role} {ptr!r} is only known to be {ptr.alignment}-byte aligned")
        if isinstance(pred, Tensor) and vector > 1 and product(_layout(pred).shape) == n:
            size = _leading_bytes(pred, c * vector, vector, nbytes // vector)
        else:
            size = None if p is True else (nbytes if p else 0) if type(p) is bool else select(p, nbytes, 0)
        emit(op, dst=sp, src=gp, cp_size=nbytes, src_size=size, cache_hint=cache_hint)


def _leading_bytes(pred, first, vector, element_bytes):
    """The bytes of the elements ``first, first + 1...`` of the vector up to its first false condition (``None``
    when all hold statically): a cp.async of that ``src_size`` never reads an element whose condition fails."""
    total, run = 0, True
    for k in range(vector):
        pk = pred[first + k]
        if run is True:
            run = pk
        elif run is not False and pk is not True:
            run = False if pk is False else run & pk
        if run is True:
            total = total + element_bytes
        elif run is not False:
            total = total + select(run, element_bytes, 0)
    return None if type(total) is int and total == vector * element_bytes else total


def predicate(coords: Tensor, bound: Shape) -> Tensor:
    """A register tensor of run-time conditions: for each element of the coordinate tensor ``coords``,
    whether its coordinate lies inside ``bound`` (``0 <= c < bound`` in every mode; static parts fold, and the lower
    bound is tested only where a run-time coordinate is not known to be non-negative: a view shifted before its
    tensor, as ``domain_offset`` makes for residue-first tiles, has coordinates below 0)."""
    if not isinstance(coords, Tensor) or not isinstance(coords.engine, CoordEngine):
        raise TraceError(f"predicate needs a coordinate tensor (a partition of make_identity_tensor), got "
                         f"{coords!r}")
    lay = _layout(coords)
    n = product(lay.shape)
    bound = flatten(bound) if type(bound) is tuple else (bound,)
    import numpy as np  # the compiler imports numpy only where an object array is made

    store = np.empty(n, dtype=object)
    for i in range(n):
        crd = coords[i]
        crd = flatten(tuple(crd)) if isinstance(crd, tuple) else (crd,)
        if len(crd) != len(bound):
            raise TraceError(f"predicate: coordinates of rank {len(crd)} against a bound of rank {len(bound)}")
        # the static modes first: one out of bounds decides without emitting a comparison
        pairs = sorted(zip(crd, bound), key=lambda p: not (type(p[0]) is int and type(p[1]) is int))
        ok = True  # True, False, or a run-time condition
        for c, lim in pairs:
            if type(c) is int and c < 0:
                ok = False
                break
            if type(c) is not int and not getattr(c, "nonneg", False):
                low = c >= 0
                ok = low if ok is True else ok & low
            term = c < lim  # a Python bool when both are static
            if term is False:
                ok = False
                break
            if term is not True:
                ok = term if ok is True else ok & term
        store[i] = ok
    return Tensor(ArrayEngine(store, 0, "Boolean"), Layout(n))
