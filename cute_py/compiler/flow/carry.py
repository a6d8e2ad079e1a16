"""Values carried out of a kernel's run-time control flow (see ``flow``): what each path ends with, and one type.

A carried variable's value is flattened into a static structure and number leaves (``flatten_value``): tuples and
lists by their items, objects with the DSL's ``__extract_mlir_values__``/``__new_from_mlir_values__`` by their
values, a tensor over a pointer by its pointer's element offset (the pointer's base, the layout and the rest are
its static part: a loop that moves a view along a buffer carries the offset), any other Python object as a static
part that every path must share (``same_tree``). A leaf that the paths
agree on statically stays static; one that differs becomes a block argument of one type (``leaf_type``: a Python
number adopts the traced type of another path if it converts exactly; two Python numbers become ``Int32``/``Int64``,
``Float32`` or ``Boolean``, as the DSL types them). A path's end (``Path``) captures its leaves' MLIR values while
their scope is open. Register-fragment elements written inside a construct are logged (``note_write``) and carried
the same way. ``Jump`` is how a ``break``, ``continue`` or ``return`` leaves a branch or loop body.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ...errors import TraceError
from ...tensor.dtypes import Boolean, Float32, Int32, Int64, Scalar
from ...core.composed import ComposedLayout
from ...core.int_tuple import DynamicInt
from ...tensor.pointer import Pointer
from ...tensor.tensor import Tensor
from ..lang.builder import current
from ..lang.registers import note_write
from ..lang.values import TracedBool, TracedFloat, as_type, wrap
from ..lang.traced_int import TracedInt, as_value

if TYPE_CHECKING:
    from ...tensor.dtypes import DType

__all__ = ["UNBOUND", "Jump", "is_jump", "condition", "is_run_time", "TRACED", "write_logged",
           "flatten_value", "unflatten_value", "same_tree", "describe", "describe_tree", "Captured", "Fixed",
           "leaf_dtype", "capture", "python_dtype", "fits", "leaf_type", "fragment_type", "materialize", "rebuilt",
           "leaf_divisor", "in_place", "same_traced",
           "mlir_type", "copies", "Path", "check_trees", "terminate_dead", "route_return", "leaf_owner",
           "count_leaves"]

TRACED = (TracedInt, TracedFloat, TracedBool)


class _Unbound:
    __slots__ = ()

    def __repr__(self):
        return "<unbound>"


UNBOUND = _Unbound()


class Jump:
    """A ``break``/``continue`` (``value``: the loop's carried values), a ``return`` (``value``: what it returns;
    ``kernel``: whether it leaves a kernel), or ``dead`` (every path ended in a jump)."""

    __slots__ = ("kind", "value", "kernel")

    def __init__(self, kind: str, value: Any = None, kernel: bool = True) -> None:
        self.kind, self.value, self.kernel = kind, value, kernel

    def __repr__(self):
        return f"Jump({self.kind})"


def is_jump(r: Any) -> bool:
    return type(r) is Jump


# -- conditions --------------------------------------------------------------------------------------


def condition(c: Any) -> Any:
    """A ``TracedBool`` for a run-time condition, else Python's truth value of ``c``."""
    if isinstance(c, TracedBool):
        return c
    if isinstance(c, (TracedInt, TracedFloat)):
        return c != 0
    if isinstance(c, Scalar):
        return bool(c.value)
    return bool(c)


def is_run_time(v: Any) -> bool:
    return isinstance(v, TRACED)


# -- register fragments -------------------------------------------------------------------------



def write_logged(key_entry: tuple[Any, int, Any, Any], value: Any) -> None:
    array, at, _, dtype = key_entry
    note_write(array, at, dtype)
    array[at] = value


# -- carried values: trees of leaves ----------------------------------------------------------------


def _is_leaf(v):
    return isinstance(v, TRACED) or type(v) in (int, float, bool)


def flatten_value(v: Any, leaves: list[Any]) -> Any:
    """The static structure of ``v``; its number leaves (traced or Python) are appended to ``leaves``."""
    if _is_leaf(v):
        leaves.append(v)
        return "leaf"
    if type(v) in (tuple, list):
        return (type(v), tuple(flatten_value(e, leaves) for e in v))
    t = type(v)
    if t is Tensor and type(v.engine) is Pointer:
        leaves.append(v.engine.offset)
        if _offset_composed(v.layout):  # a run-time slice of a swizzled tile: its offset is carried too
            leaves.append(v.layout.offset)
            return ("ptr_tensor", v, 2)
        return ("ptr_tensor", v, 1)
    if hasattr(t, "__extract_mlir_values__") and hasattr(t, "__new_from_mlir_values__"):
        values = list(v.__extract_mlir_values__())
        leaves.extend(values)
        return ("object", v, len(values))
    return ("static", v)


def unflatten_value(tree: Any, leaves: Iterator[Any]) -> Any:
    if tree == "leaf":
        return next(leaves)
    if tree[0] == "static":
        return tree[1]
    if tree[0] == "object":
        return tree[1].__new_from_mlir_values__([next(leaves) for _ in builtins.range(tree[2])])
    if tree[0] == "ptr_tensor":
        t0, offset = tree[1], next(leaves)
        layout = t0.layout
        if tree[2] == 2:
            inner = next(leaves)
            if inner is not layout.offset:
                layout = ComposedLayout(layout.inner, inner, layout.outer)
        if offset is t0.engine.offset and layout is t0.layout:
            return t0
        return Tensor(t0.engine.at_offset(offset), layout)
    return tree[0](unflatten_value(t, leaves) for t in tree[1])


_VALUE_TYPES = (str, bytes, type(None), complex)


def _same_static(a, b):
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, _VALUE_TYPES):
        return a == b
    from ...core.layout import Layout
    from ...core.composed import ComposedLayout
    from ...core.swizzle import Swizzle

    if isinstance(a, (Layout, ComposedLayout, Swizzle)):
        try:
            return (a == b) is True
        except Exception:
            return False
    return False


def _offset_composed(layout):
    return type(layout) is ComposedLayout and (type(layout.offset) is int or isinstance(layout.offset, DynamicInt))


def _same_pointer_tensor(a, b):
    """Whether two tensors over pointers differ at most in the pointer's element offset (and what it implies) and,
    for a composed layout of an integer offset, that offset."""
    if a is b:
        return True
    pa, pb = a.engine, b.engine
    la, lb = a.layout, b.layout
    if _offset_composed(la) != _offset_composed(lb):
        return False
    if _offset_composed(la):
        if not (_same_static(la.inner, lb.inner) and (la.outer is lb.outer or _same_static(la.outer, lb.outer))):
            return False
    elif not (la is lb or _same_static(la, lb)):
        return False
    return (pa.dtype is pb.dtype and pa.memspace is pb.memspace and pa.store_guard == pb.store_guard and
            pa.owner is pb.owner and (pa.peer is pb.peer or (type(pa.peer) is int and pa.peer == pb.peer)) and
            (pa.base is pb.base or (type(pa.base) is int and pa.base == pb.base)))


def same_tree(a: Any, b: Any) -> bool:
    if a == "leaf" or b == "leaf":
        return a == b
    if a[0] == "ptr_tensor" or b[0] == "ptr_tensor":
        return a[0] == b[0] and _same_pointer_tensor(a[1], b[1])
    if a[0] == "static" or b[0] == "static":
        return a[0] == b[0] and _same_static(a[1], b[1])
    if a[0] == "object":
        return b[0] == "object" and type(a[1]) is type(b[1]) and a[2] == b[2]
    return a[0] is b[0] and len(a[1]) == len(b[1]) and all(same_tree(x, y) for x, y in zip(a[1], b[1]))


def describe(v: Any) -> str:
    if v is UNBOUND:
        return "not bound"
    if isinstance(v, TRACED):
        return f"a run-time {v.dtype.name if hasattr(v, 'dtype') else 'Boolean'}"
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) < 60 else text[:57] + '...'}"


class Captured:
    """A traced leaf at the end of a path, captured while its scope was open: its MLIR value, type, sign fact."""

    __slots__ = ("value", "ir", "dtype", "nonneg", "known_divisor")

    def __init__(self, v: Any) -> None:
        self.value = v
        self.ir = v.ir
        self.dtype = leaf_dtype(v)
        self.nonneg = bool(getattr(v, "nonneg", False))
        self.known_divisor = getattr(v, "known_divisor", 1)


def leaf_dtype(v: Any) -> DType:
    return Boolean if isinstance(v, TracedBool) else v.dtype


def capture(v: Any) -> Any:
    return Captured(v) if isinstance(v, TRACED) else v


def same_traced(values: list[Any]) -> bool:
    """Whether the captured leaves ``values`` are all one run-time value (defined before the construct whose
    paths they end: it stays as it is, no block argument)."""
    return all(isinstance(v, Captured) for v in values) and all(v.ir == values[0].ir for v in values[1:])


def python_dtype(vs: list[Any]) -> DType | None:
    """The type Python numbers take when they must become a run-time value (``None``: not numbers)."""
    if all(type(v) is bool for v in vs):
        return Boolean
    if all(type(v) in (int, bool) for v in vs):
        if all(-(1 << 31) <= v < 1 << 31 for v in vs):
            return Int32
        if all(-(1 << 63) <= v < 1 << 63 for v in vs):
            return Int64
        return None
    if all(type(v) in (int, float, bool) for v in vs):
        return Float32
    return None


def fits(v: int | float | bool, dtype: DType) -> bool:
    """Whether the Python number ``v`` converts exactly to ``dtype``."""
    if dtype is Boolean:
        return type(v) is bool
    if type(v) is float:
        return dtype.is_float
    if dtype.is_float:
        return True
    lo, hi = ((-(1 << (dtype.width - 1)), 1 << (dtype.width - 1)) if dtype.signed else (0, 1 << dtype.width))
    return lo <= int(v) < hi


def leaf_type(values: list[Any], what: str) -> DType | None:
    """``None`` when the Python ``values`` agree (the leaf stays static), else the leaf's run-time type."""
    traced = [v for v in values if isinstance(v, Captured)]
    if not traced:
        first = values[0]
        if all(type(v) is type(first) and v == first for v in values):
            return None
        d = python_dtype(values)
        if d is None:
            raise TraceError(f"{what}: the values {', '.join(map(repr, values))} cannot share one run-time type")
        return d
    dtypes = list(dict.fromkeys(v.dtype for v in traced))
    if len(dtypes) > 1:
        raise TraceError(f"{what} is a {dtypes[0].name} on one path and a {dtypes[1].name} on another: a value "
                         f"carried out of run-time control flow keeps one type (convert it with .to(...))")
    d = dtypes[0]
    for v in values:
        if not isinstance(v, Captured) and not fits(v, d):
            raise TraceError(f"{what} is a run-time {d.name} on one path and the Python {type(v).__name__} {v!r} "
                             f"on another, which does not convert exactly to {d.name}")
    return d


def materialize(b: Any, v: Any, dtype: DType) -> Any:
    """The MLIR value of the captured leaf ``v`` as ``dtype``, built at the end of the current block."""
    if isinstance(v, Captured):
        return v.ir
    if dtype is Boolean:
        return as_value(int(v), 1)
    return as_type(v, dtype).ir


def rebuilt(value: Any, dtype: DType, nonneg: bool = False, divisor: int = 1) -> Any:
    """The traced value of a block argument; an integer keeps what every path agreed on: its sign and a divisor
    (``divisor``, 0 or 1 for none)."""
    if dtype in (Int32, Int64):
        return TracedInt(value, dtype.width, nonneg, max(divisor, 1))
    return wrap(value, dtype)


def leaf_divisor(v: Any) -> int:
    """A non-negative int known to divide the leaf ``v``: ``|v|`` for a Python int (0 when it is 0: every int
    divides it), a traced or captured integer's ``known_divisor``, 1 for anything else."""
    if type(v) is int:
        return abs(v)
    d = getattr(v, "known_divisor", 1)
    return d if type(d) is int and d > 0 else 1


def mlir_type(dtype: DType) -> Any:
    from ..lang import numeric

    return current().int_type(1) if dtype is Boolean else numeric.register_type(dtype)


def in_place(before: Any, after: Any) -> Any:
    """``before`` given ``after``'s state, for a carried object that a construct changed in place (each path
    changed a copy, see ``copies``): every other name for the object (a caller's, for a helper's parameter) sees
    the change. Anything else is ``after`` as it is."""
    if before is after or type(before) is not type(after) or not hasattr(type(before), "__new_from_mlir_values__"):
        return after
    for cls in type(before).__mro__:
        slots = getattr(cls, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(after, name):
                setattr(before, name, getattr(after, name))
    if hasattr(before, "__dict__"):
        before.__dict__.update(after.__dict__)
    return before


def copies(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Fresh copies of carried objects rebuilt from their values (each path mutates its own); others as they are."""
    out = []
    for v in values:
        leaves = []
        tree = flatten_value(v, leaves)
        out.append(unflatten_value(tree, iter(leaves)) if _has_object(tree) else v)
    return tuple(out)


def _has_object(tree):
    if tree == "leaf" or tree[0] in ("static", "ptr_tensor"):
        return False
    if tree[0] == "object":
        return True
    return any(_has_object(t) for t in tree[1])


class Path:
    """Where a path of run-time control flow ends: its block (no terminator yet), its values (flattened and
    captured), and the values of the logged fragment elements."""

    def __init__(self, b: Any, values: tuple[Any, ...], log: dict[Any, Any]) -> None:
        self.block = b.block
        self.trees, leaves = [], []
        for v in values:
            self.trees.append(flatten_value(v, leaves))
        self.leaves = [capture(v) for v in leaves]
        self.fragments = {k: capture(e[0][e[1]]) for k, e in log.items()}


def check_trees(paths: list[Path], names: tuple[str, ...], where: tuple[str, int]) -> None:
    for j, name in enumerate(names):
        trees = [p.trees[j] for p in paths]
        for t in trees[1:]:
            if not same_tree(trees[0], t):
                kinds = [describe_tree(x) for x in (trees[0], t)]
                if "not bound" in kinds:
                    raise TraceError(f"{name} is bound on one path of the run-time if and not on the other, and it "
                                     f"is used after the if: assign it before the if (a number of the type it will "
                                     f"have)", where=where)
                raise TraceError(f"{name} is {kinds[0]} on one path of the run-time if and {kinds[1]} on the other: "
                                 f"a variable carried out of run-time control flow has the same kind of value on "
                                 f"every path (numbers, one type after conversion; the same Python object)",
                                 where=where)


def terminate_dead(b: Any) -> None:
    with b.at_end():
        b.mlir.llvm.UnreachableOp()


def route_return(b: Any, r: Jump, where: tuple[str, int]) -> None:
    if r.value is not None or not r.kernel:
        raise TraceError("`return` under a run-time condition: only a kernel can return there, and it returns "
                         "nothing; assign the value to a variable and return it after the if", where=where)
    with b.at_end():
        b.mlir.llvm.ReturnOp()


def fragment_type(values: list[Any], dtype: DType | None, at: int) -> DType | None:
    """The run-time type of a register-fragment element with ``values`` on the paths (``None``: static)."""
    t = leaf_type(values, f"register fragment element {at}")
    if t is None or any(isinstance(v, Captured) for v in values):
        return t
    return dtype if dtype is not None and all(fits(v, dtype) for v in values) else t


def count_leaves(tree: Any) -> int:
    if tree == "leaf":
        return 1
    if tree[0] == "static":
        return 0
    if tree[0] in ("object", "ptr_tensor"):
        return tree[2]
    return sum(count_leaves(t) for t in tree[1])


def describe_tree(tree: Any) -> str:
    if tree == "leaf":
        return "a number"
    if tree[0] == "static":
        return describe(tree[1])
    if tree[0] == "object":
        return f"a {type(tree[1]).__name__}"
    if tree[0] == "ptr_tensor":
        return describe(tree[1])
    return f"a {tree[0].__name__} of {len(tree[1])}"


class Fixed(Captured):
    """A stand-in for a leaf of known type (for checking a value against it)."""

    def __init__(self, dtype: DType) -> None:  # noqa: super().__init__ takes a traced value
        self.ir, self.dtype, self.nonneg, self.known_divisor = None, dtype, False, 1


def leaf_owner(trees: list[Any], names: tuple[str, ...], j: int) -> str:
    count = 0
    for name, tree in zip(names, trees):
        n = count_leaves(tree)
        if j < count + n:
            return name
        count += n
    return "a carried variable"
