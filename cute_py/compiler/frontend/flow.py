"""The executors of a kernel's rewritten control flow (see ``rewrite``): static or run-time, decided while tracing.

**Branches.** ``if_stmt`` runs one branch function when the condition is static (a Python value, or
``const_expr``), and otherwise traces both into blocks of a run-time branch. The variables the statement
carries (``liveness``) come back merged: a value the two paths agree on statically stays static (a Python int,
a layout, the same object); one that differs becomes a block argument of the merge. Its type is the one both
paths give it (a Python number adopts the traced type of the other path, if it converts exactly; two Python
numbers become ``Int32``/``Int64``, ``Float32`` or ``Boolean``, as the DSL types them); different traced types,
a name bound on one path only, or Python objects that differ are a :class:`TraceError` at the statement's line.

**Loops.** ``for_stmt`` over ``range``/``cute.range`` and ``while_stmt`` build run-time loops: a header
(condition), the body, a latch and an exit, the carried values their block arguments. A loop is traced, then
checked: a variable assumed static that changed, or a register-fragment element written in the body that is
not carried yet, makes it trace again with that value carried (so a loop body may be traced a few times).
A run-time loop with static bounds whose body needs a static index (a register fragment's element, a Python
sequence's item: :class:`~cute_py.errors.StaticValueRequired`) is unrolled while tracing instead, up to
``MAX_UNROLL`` iterations. ``range_constexpr``, ``cute.range(..., unroll_full=True)`` with static bounds and
any other iterable are Python loops (the body traced once per item).

**Jumps.** ``break`` and ``continue`` leave a run-time loop through its exit or latch with the carried values
of that point; under a run-time condition they need a run-time loop. A ``return`` (of nothing) under a run-time
condition ends the kernel there; a device function's ``return`` under one is an error.

**Register fragments.** Their elements are Python-held values, so every write to one inside a run-time
construct is logged (``note_write``): the branch merges the written elements like variables, the loop carries
them. The loop variable of a run-time loop is not defined after the loop.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import Any

from ...errors import StaticValueRequired, TraceError
from ...tensor.dtypes import Boolean, Float32, Int32, Int64, Scalar
from . import control
from .builder import current
from .values import TracedBool, TracedFloat, TracedInt, as_type, as_value, select, wrap

__all__ = ["UNBOUND", "Jump", "is_jump", "if_stmt", "for_stmt", "while_stmt", "and_", "or_", "not_", "ifexp",
           "compare", "note_write", "MAX_UNROLL"]

MAX_UNROLL = 1024  # iterations of a run-time loop with static bounds unrolled when its body needs static indices
_TRACED = (TracedInt, TracedFloat, TracedBool)


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


# -- conditions and boolean expressions -----------------------------------------------------------


def _condition(c):
    """A ``TracedBool`` for a run-time condition, else Python's truth value of ``c``."""
    if isinstance(c, TracedBool):
        return c
    if isinstance(c, (TracedInt, TracedFloat)):
        return c != 0
    if isinstance(c, Scalar):
        return bool(c.value)
    return bool(c)


def _run_time(v):
    return isinstance(v, _TRACED)


def and_(first: Any, *rest: Callable[[], Any]) -> Any:
    """``a and b and ...``: Python's value on static operands; with a run-time one, the Boolean ``&`` of all."""
    v = first
    for thunk in rest:
        if not _run_time(v):
            if not v:
                return v
            v = thunk()
            continue
        w = thunk()
        if _run_time(w):
            v = _condition(v) & _condition(w)
        elif not w:
            return w
        else:
            v = _condition(v)
    return v


def or_(first: Any, *rest: Callable[[], Any]) -> Any:
    """``a or b or ...``: Python's value on static operands; with a run-time one, the Boolean ``|`` of all."""
    v = first
    for thunk in rest:
        if not _run_time(v):
            if v:
                return v
            v = thunk()
            continue
        w = thunk()
        if _run_time(w):
            v = _condition(v) | _condition(w)
        elif w:
            return w
        else:
            v = _condition(v)
    return v


def not_(v: Any) -> Any:
    """``not v``: a run-time value's negated condition, else Python's ``not``."""
    return ~_condition(v) if _run_time(v) else not v


def ifexp(c: Any, a: Callable[[], Any], b: Callable[[], Any]) -> Any:
    """``a if c else b``: Python's on a static ``c``; with a run-time ``c``, both evaluated and selected."""
    c = _condition(c)
    if not isinstance(c, TracedBool):
        return a() if c else b()
    x, y = a(), b()
    try:
        return select(c, x, y)
    except TraceError:
        raise TraceError(f"`x if c else y` with a run-time c chooses between numbers, got {x!r} and {y!r}; "
                         f"use an if statement for other values") from None


_COMPARE = {"Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt, "GtE": operator.ge, "Eq": operator.eq,
            "NotEq": operator.ne, "Is": operator.is_, "IsNot": operator.is_not,
            "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b}


def compare(left: Any, ops: tuple[str, ...], rights: tuple[Callable[[], Any], ...]) -> Any:
    """A chained comparison ``a < b <= c``: each operand evaluated once, the results combined by :func:`and_`."""
    result = None
    for op, thunk in zip(ops, rights):
        right = thunk()
        r = _COMPARE[op](left, right)
        result = r if result is None else and_(result, lambda r=r: r)
        if not _run_time(result) and not result:
            return result
        left = right
    return result


# -- register fragments -------------------------------------------------------------------------


def note_write(array: Any, at: int, dtype: Any) -> None:
    """Before element ``at`` of a register fragment's ``array`` is written: log its old value in every open
    run-time construct (the first write of each construct keeps the value from before it)."""
    b = current()
    for log in b.write_logs:
        key = (id(array), at)
        if key not in log:
            log[key] = (array, at, array[at], dtype)


def _write(key_entry, value):
    array, at, _, dtype = key_entry
    note_write(array, at, dtype)
    array[at] = value


# -- carried values: trees of leaves ----------------------------------------------------------------


def _is_leaf(v):
    return isinstance(v, _TRACED) or type(v) in (int, float, bool)


def _flatten(v, leaves):
    """The static structure of ``v``; its number leaves (traced or Python) are appended to ``leaves``."""
    if _is_leaf(v):
        leaves.append(v)
        return "leaf"
    if type(v) in (tuple, list):
        return (type(v), tuple(_flatten(e, leaves) for e in v))
    t = type(v)
    if hasattr(t, "__extract_mlir_values__") and hasattr(t, "__new_from_mlir_values__"):
        values = list(v.__extract_mlir_values__())
        leaves.extend(values)
        return ("object", v, len(values))
    return ("static", v)


def _unflatten(tree, leaves):
    if tree == "leaf":
        return next(leaves)
    if tree[0] == "static":
        return tree[1]
    if tree[0] == "object":
        return tree[1].__new_from_mlir_values__([next(leaves) for _ in builtins.range(tree[2])])
    return tree[0](_unflatten(t, leaves) for t in tree[1])


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


def _same_tree(a, b):
    if a == "leaf" or b == "leaf":
        return a == b
    if a[0] == "static" or b[0] == "static":
        return a[0] == b[0] and _same_static(a[1], b[1])
    if a[0] == "object":
        return b[0] == "object" and type(a[1]) is type(b[1]) and a[2] == b[2]
    return a[0] is b[0] and len(a[1]) == len(b[1]) and all(_same_tree(x, y) for x, y in zip(a[1], b[1]))


def _describe(v):
    if v is UNBOUND:
        return "not bound"
    if isinstance(v, _TRACED):
        return f"a run-time {v.dtype.name if hasattr(v, 'dtype') else 'Boolean'}"
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) < 60 else text[:57] + '...'}"


class _Captured:
    """A traced leaf at the end of a path, captured while its scope was open: its MLIR value, type, sign fact."""

    __slots__ = ("ir", "dtype", "nonneg")

    def __init__(self, v):
        self.ir = v.ir
        self.dtype = _dtype(v)
        self.nonneg = bool(getattr(v, "nonneg", False))


def _dtype(v):
    return Boolean if isinstance(v, TracedBool) else v.dtype


def _capture(v):
    return _Captured(v) if isinstance(v, _TRACED) else v


def _python_dtype(vs):
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


def _fits(v, dtype):
    """Whether the Python number ``v`` converts exactly to ``dtype``."""
    if dtype is Boolean:
        return type(v) is bool
    if type(v) is float:
        return dtype.is_float
    if dtype.is_float:
        return True
    lo, hi = ((-(1 << (dtype.width - 1)), 1 << (dtype.width - 1)) if dtype.signed else (0, 1 << dtype.width))
    return lo <= int(v) < hi


def _leaf_type(values, what):
    """``None`` when the Python ``values`` agree (the leaf stays static), else the leaf's run-time type."""
    traced = [v for v in values if isinstance(v, _Captured)]
    if not traced:
        first = values[0]
        if all(type(v) is type(first) and v == first for v in values):
            return None
        d = _python_dtype(values)
        if d is None:
            raise TraceError(f"{what}: the values {', '.join(map(repr, values))} cannot share one run-time type")
        return d
    dtypes = list(dict.fromkeys(v.dtype for v in traced))
    if len(dtypes) > 1:
        raise TraceError(f"{what} is a {dtypes[0].name} on one path and a {dtypes[1].name} on another: a value "
                         f"carried out of run-time control flow keeps one type (convert it with .to(...))")
    d = dtypes[0]
    for v in values:
        if not isinstance(v, _Captured) and not _fits(v, d):
            raise TraceError(f"{what} is a run-time {d.name} on one path and the Python {type(v).__name__} {v!r} "
                             f"on another, which does not convert exactly to {d.name}")
    return d


def _materialize(b, v, dtype):
    """The MLIR value of the captured leaf ``v`` as ``dtype``, built at the end of the current block."""
    if isinstance(v, _Captured):
        return v.ir
    if dtype is Boolean:
        return as_value(int(v), 1)
    return as_type(v, dtype).ir


def _rebuilt(value, dtype, nonneg=False):
    if dtype in (Int32, Int64):
        return TracedInt(value, dtype.width, nonneg)
    return wrap(value, dtype)


def _mlir_type(dtype):
    from . import numeric

    return current().int_type(1) if dtype is Boolean else numeric.register_type(dtype)


def _copies(values):
    """Fresh copies of carried objects rebuilt from their values (each path mutates its own); others as they are."""
    out = []
    for v in values:
        leaves = []
        tree = _flatten(v, leaves)
        out.append(_unflatten(tree, iter(leaves)) if _has_object(tree) else v)
    return tuple(out)


def _has_object(tree):
    if tree == "leaf" or tree[0] == "static":
        return False
    if tree[0] == "object":
        return True
    return any(_has_object(t) for t in tree[1])


class _Path:
    """Where a path of run-time control flow ends: its block (no terminator yet), its values (flattened and
    captured), and the values of the logged fragment elements."""

    def __init__(self, b, values, log):
        self.block = b.block
        self.trees, leaves = [], []
        for v in values:
            self.trees.append(_flatten(v, leaves))
        self.leaves = [_capture(v) for v in leaves]
        self.fragments = {k: _capture(e[0][e[1]]) for k, e in log.items()}


def _check_trees(paths, names, where):
    for j, name in enumerate(names):
        trees = [p.trees[j] for p in paths]
        for t in trees[1:]:
            if not _same_tree(trees[0], t):
                kinds = [_describe_tree(x) for x in (trees[0], t)]
                if "not bound" in kinds:
                    raise TraceError(f"{name} is bound on one path of the run-time if and not on the other, and it "
                                     f"is used after the if: assign it before the if (a number of the type it will "
                                     f"have)", where=where)
                raise TraceError(f"{name} is {kinds[0]} on one path of the run-time if and {kinds[1]} on the other: "
                                 f"a variable carried out of run-time control flow has the same kind of value on "
                                 f"every path (numbers, one type after conversion; the same Python object)",
                                 where=where)


def _terminate_dead(b):
    with b.at_end():
        b.mlir.llvm.UnreachableOp()


def _route_return(b, r, where):
    if r.value is not None or not r.kernel:
        raise TraceError("`return` under a run-time condition: only a kernel can return there, and it returns "
                         "nothing; assign the value to a variable and return it after the if", where=where)
    with b.at_end():
        b.mlir.llvm.ReturnOp()


# -- branches -----------------------------------------------------------------------------------


def if_stmt(cond: Any, then_fn: Callable[..., Any], else_fn: Callable[..., Any], values: tuple[Any, ...],
            ncarried: int, names: tuple[str, ...], where: tuple[str, int]) -> Any:
    """``if cond: then else: else_`` over the carried ``names`` (the first ``ncarried`` of ``values``)."""
    c = _condition(cond)
    if not isinstance(c, TracedBool):
        return (then_fn if c else else_fn)(*values)
    b = current()
    llvm = b.mlir.llvm
    then_blk, else_blk = b.new_block(), b.new_block()
    with b.at_end():
        llvm.CondBrOp(c.ir, [], [], then_blk, else_blk)
    log = {}
    b.write_logs.append(log)
    paths = []
    try:
        for blk, fn, kind in ((then_blk, then_fn, "if branch"), (else_blk, else_fn, "else branch")):
            b.set_block(blk)
            b.open_regions.append((kind, *where))
            scope = b.push_scope(kind, *where)
            r = fn(*_copies(values))
            if is_jump(r):
                _route_jump(b, r, where)
            else:
                paths.append(_Path(b, r, log))
            b.open_regions.pop()
            b.pop_scope(scope)
            for array, at, old, _ in log.values():
                array[at] = old
    finally:
        b.write_logs.pop()
    merge = b.new_block()
    if not paths:
        b.set_block(merge)
        return Jump("dead")
    _check_trees(paths, names, where)
    # the leaves: static where every path agrees, else merge-block arguments
    types = [_leaf_type([p.leaves[j] for p in paths], f"a value of {_leaf_owner(paths[0], names, j)}")
             for j in builtins.range(len(paths[0].leaves))]
    keys = list(log)
    frag_types = []
    for k in keys:
        array, at, old, dtype = log[k]
        vals = [p.fragments.get(k, _capture(old)) for p in paths]
        frag_types.append(_fragment_type(vals, dtype, at))
    arg_types = [t for t in types + frag_types if t is not None]
    for t in arg_types:
        merge.add_argument(_mlir_type(t), b.loc(where))
    for p in paths:
        b.set_block(p.block)
        args = [_materialize(b, v, t) for v, t in zip(p.leaves, types) if t is not None]
        args += [_materialize(b, p.fragments.get(k, _capture(log[k][2])), t) for k, t in zip(keys, frag_types)
                 if t is not None]
        with b.at_end():
            llvm.BrOp(args, merge)
    b.set_block(merge)
    merged = iter(merge.arguments)
    leaves = []
    for j, t in enumerate(types):
        if t is None:
            leaves.append(paths[0].leaves[j])
        else:
            nonneg = all(getattr(p.leaves[j], "nonneg", False) or (type(p.leaves[j]) is int and p.leaves[j] >= 0)
                         for p in paths)
            leaves.append(_rebuilt(next(merged), t, nonneg))
    for k, t in zip(keys, frag_types):
        entry = log[k]
        value = paths[0].fragments.get(k, entry[2]) if t is None else _rebuilt(next(merged), t)
        if value is not entry[2]:
            _write(entry, value)
    it = iter(leaves)
    return tuple(_unflatten(tree, it) for tree in paths[0].trees)


def _fragment_type(values, dtype, at):
    """The run-time type of a register-fragment element with ``values`` on the paths (``None``: static)."""
    t = _leaf_type(values, f"register fragment element {at}")
    if t is None or any(isinstance(v, _Captured) for v in values):
        return t
    return dtype if dtype is not None and all(_fits(v, dtype) for v in values) else t


def _leaf_owner(path, names, j):
    count = 0
    for name, tree in zip(names, path.trees):
        n = _count(tree)
        if j < count + n:
            return name
        count += n
    return "a carried variable"


def _count(tree):
    if tree == "leaf":
        return 1
    if tree[0] == "static":
        return 0
    if tree[0] == "object":
        return tree[2]
    return sum(_count(t) for t in tree[1])


def _route_jump(b, r, where):
    """A path of a run-time branch ended in ``r``: route it (the path gets its terminator now or from its loop)."""
    if r.kind == "dead":
        _terminate_dead(b)
    elif r.kind == "return":
        _route_return(b, r, where)
    else:
        frame = b.loop_frames[-1] if b.loop_frames else None
        if frame is None or frame.static:
            raise TraceError(f"`{r.kind}` under a run-time condition leaves a loop unrolled while tracing "
                             f"(range_constexpr, unroll_full or a Python iterable): use a run-time loop "
                             f"(range or cute.range)", where=where)
        frame.edge(b, r.kind, r.value)


# -- loops ----------------------------------------------------------------------------------------


class _Frame:
    """A loop being traced: static (a Python loop) or run-time, with the jumps its body made (run-time)."""

    def __init__(self, static, fragments=(), names=(), targets=()):
        self.static = static
        self.edges = []  # (kind, path)
        self.fragments = fragments  # the carried fragment elements' keys -> log entries
        self.names, self.targets = names, targets

    def edge(self, b, kind, values):
        """A jump (or the end of the body) to ``kind`` ("break"/"continue") with the loop's carried ``values``
        (its loop variables are not carried: they have no value after a run-time loop)."""
        values = tuple(UNBOUND if n in self.targets else v for n, v in zip(self.names, values))
        self.edges.append((kind, _Path(b, values, self.fragments)))


def _static_loop(items, body_fn, values, else_fn, is_for, extras=()):
    b = current()
    frame = _Frame(True)
    b.loop_frames.append(frame)
    try:
        for item in items:
            r = body_fn(item, *values, *extras) if is_for else body_fn(*values, *extras)
            if is_jump(r):
                if r.kind in ("return", "dead"):
                    return r
                values = r.value
                if r.kind == "break":
                    return values
            else:
                values = r
    finally:
        b.loop_frames.pop()
    return else_fn(*values, *extras) if else_fn is not None else values


def for_stmt(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], body_fn: Callable[..., Any],
             values: tuple[Any, ...], names: tuple[str, ...], else_fn: Callable[..., Any] | None,
             targets: tuple[str, ...], where: tuple[str, int]) -> Any:
    """``for target in func(*args, **kwargs)`` (``func`` ``None``: ``args[0]`` is the iterable). ``values``: the
    carried ``names``' values, then those of the other variables the body binds (passed, not carried)."""
    extras = values[len(names):]
    values = values[:len(names)]
    if func is builtins.range or (func is control.range and "carry" not in kwargs):
        return _range_loop(func, args, kwargs, body_fn, values, names, else_fn, targets, where, extras)
    items = args[0] if func is None else func(*args, **kwargs)
    return _static_loop(items, body_fn, values, else_fn, True, extras)


def while_stmt(cond_fn: Callable[..., Any], static: bool, body_fn: Callable[..., Any], values: tuple[Any, ...],
               names: tuple[str, ...], else_fn: Callable[..., Any] | None, targets: tuple[str, ...],
               where: tuple[str, int]) -> Any:
    """``while cond: body`` (``static``: the condition is ``const_expr(...)``, a Python loop)."""
    extras = values[len(names):]
    values = values[:len(names)]
    if static:
        b = current()
        frame = _Frame(True)
        b.loop_frames.append(frame)
        try:
            while _static_condition(cond_fn(*values, *extras)):
                r = body_fn(*values, *extras)
                if is_jump(r):
                    if r.kind in ("return", "dead"):
                        return r
                    values = r.value
                    if r.kind == "break":
                        return values
                else:
                    values = r
        finally:
            b.loop_frames.pop()
        return else_fn(*values, *extras) if else_fn is not None else values
    if else_fn is not None:
        raise TraceError("`while ... else` with a run-time condition is not supported: put the else code after "
                         "the loop under a flag", where=where)
    return _rethrow(_Loop(("while", cond_fn), body_fn, values, names, (), where, extras))


def _static_condition(c):
    c = _condition(c)
    if isinstance(c, TracedBool):
        raise TraceError("const_expr needs a value known while tracing, got a run-time condition")
    return c


def _range_loop(func, args, kwargs, body_fn, values, names, else_fn, targets, where, extras):
    kwargs = dict(kwargs)
    unroll = kwargs.pop("unroll", None)
    unroll_full = kwargs.pop("unroll_full", False)
    if kwargs:
        raise TraceError(f"cute.range got unsupported arguments {sorted(kwargs)} (it takes start, stop, step, "
                         f"unroll=, unroll_full=)", where=where)
    if not 1 <= len(args) <= 3:
        raise TraceError(f"range takes 1 to 3 arguments, got {len(args)}", where=where)
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
    loop = control.range(start, stop, step, unroll=unroll, unroll_full=unroll_full)
    start, stop, step, unroll = loop.bounds()
    static_bounds = type(start) is int and type(stop) is int
    if unroll == "full":
        return _static_loop(builtins.range(start, stop, step), body_fn, values, else_fn, True, extras)
    if else_fn is not None:
        raise TraceError("`for ... else` over a run-time loop is not supported: put the else code after the "
                         "loop under a flag", where=where)
    try:
        for seg_start, seg_stop, seg_unroll in control.segments(start, stop, step, unroll):
            values = _Loop(("range", seg_start, seg_stop, step, seg_unroll), body_fn, values, names, targets,
                           where, extras).run()
            if is_jump(values):
                return values
        return values
    except _Unroll as e:
        if not static_bounds or len(builtins.range(start, stop, step)) > MAX_UNROLL:
            raise e.error from None
        return _static_loop(builtins.range(start, stop, step), body_fn, e.values, None, True, extras)


def _rethrow(loop):
    try:
        return loop.run()
    except _Unroll as e:
        raise e.error from None


class _Unroll(Exception):
    """A run-time loop's body needed a static value: unroll it (its trace was undone)."""

    def __init__(self, error, values):
        super().__init__(str(error))
        self.error, self.values = error, values


class _Loop:
    """One run-time loop: ``head`` is ``("range", start, stop, step, unroll)`` or ``("while", cond_fn)``."""

    def __init__(self, head, body_fn, values, names, targets, where, extras=()):
        self.head, self.body_fn, self.names, self.where = head, body_fn, names, where
        self.extras = extras
        self.values = tuple(UNBOUND if n in targets else v for n, v in zip(names, values))
        self.targets = targets
        self.leaves = []
        self.trees = [_flatten(v, self.leaves) for v in self.values]
        self.types = [_dtype(v) if isinstance(v, _TRACED) else None for v in self.leaves]
        self.fragments = {}  # key -> log entry (array, at, value before the loop, fragment dtype)
        self.frag_types = {}

    def run(self):
        b = current()
        for _ in builtins.range(len(self.leaves) + 64):
            mark = b.mark()
            log = {}
            b.write_logs.append(log)
            try:
                done = self._trace(b, log)
            except StaticValueRequired as e:
                self._undo(b, mark, log)
                raise _Unroll(e, self.values) from None
            except BaseException:
                b.write_logs.pop()
                raise
            if done is not None:
                b.write_logs.pop()
                return done
            self._undo(b, mark, log)
        raise TraceError("internal error: the carried values of a run-time loop did not settle", where=self.where)

    def _undo(self, b, mark, log):
        b.abandon(mark)
        for array, at, old, _ in log.values():
            array[at] = old
        if b.write_logs and b.write_logs[-1] is log:
            b.write_logs.pop()

    def _entry_values(self, b):
        args = [_materialize(b, _capture(v), t) for v, t in zip(self.leaves, self.types) if t is not None]
        args += [_materialize(b, _capture(e[0][e[1]]), self.frag_types[k]) for k, e in self.fragments.items()]
        return args

    def _arg_types(self):
        return [t for t in self.types if t is not None] + [self.frag_types[k] for k in self.fragments]

    def _bind(self, b, block_args, log):
        """The carried values (and fragment elements) as ``block_args`` hold them; returns the values."""
        it = iter(block_args)
        leaves = [v if t is None else _rebuilt(next(it), t) for v, t in zip(self.leaves, self.types)]
        for k, entry in self.fragments.items():
            value = _rebuilt(next(it), self.frag_types[k])
            array, at, _, dtype = entry
            note_write(array, at, dtype)
            array[at] = value
        lv = iter(leaves)
        return tuple(_unflatten(tree, lv) for tree in self.trees)

    def _trace(self, b, log):
        """Trace the loop once; its values after it, or ``None`` when something must be carried that was not."""
        llvm = b.mlir.llvm
        where = self.where
        kind = self.head[0]
        types = [_mlir_type(t) for t in self._arg_types()]
        if kind == "range":
            _, start, stop, step, unroll = self.head
            width = max(getattr(start, "width", 32), getattr(stop, "width", 32))
            iv_types = [b.int_type(width)]
        else:
            iv_types = []
        entry = self._entry_values(b)
        header, body, latch, exit_ = (b.new_block(*iv_types, *types), b.new_block(), b.new_block(*types),
                                      b.new_block(*types))
        with b.at_end():
            llvm.BrOp(([as_value(start, width)] if kind == "range" else []) + entry, header)
        b.set_block(header)
        b.open_regions.append(("run-time loop", *where))
        scope = b.push_scope("run-time loop", *where)
        carried_args = list(header.arguments)[len(iv_types):]
        values = self._bind(b, carried_args, log)
        if kind == "range":
            nonneg = ((type(start) is int and start >= 0) or getattr(start, "nonneg", False)) and step > 0
            iv = TracedInt(header.arguments[0], width, nonneg)
            cond = (iv < stop) if step > 0 else (iv > stop)
        else:
            cond = _condition(self.head[1](*values, *self.extras))
            if not isinstance(cond, TracedBool):
                cond = TracedBool(as_value(int(bool(cond)), 1))
        with b.at_end():
            llvm.CondBrOp(cond.ir, [], carried_args, body, exit_)
        b.set_block(body)
        frame = _Frame(False, self.fragments, self.names, self.targets)
        b.loop_frames.append(frame)
        try:
            r = self.body_fn(iv, *values, *self.extras) if kind == "range" else self.body_fn(*values, *self.extras)
        finally:
            b.loop_frames.pop()
        if is_jump(r):
            if r.kind == "return":
                if not r.kernel or r.value is not None:
                    raise TraceError("`return` inside a run-time loop: only a kernel can return there, and it "
                                     "returns nothing", where=where)
                with b.at_end():
                    llvm.ReturnOp()
            elif r.kind == "dead":
                _terminate_dead(b)
            else:
                frame.edge(b, r.kind, r.value)
        else:
            frame.edge(b, "continue", r)
        if not self._settled(frame.edges, log):
            return None
        # every edge fits: branch to the latch (continue, fall through) or the exit (break)
        for kind_, path in frame.edges:
            b.set_block(path.block)
            args = self._edge_args(b, path)
            with b.at_end():
                llvm.BrOp(args, latch if kind_ == "continue" else exit_)
        b.set_block(latch)
        back = list(latch.arguments)
        if kind == "range":
            back = [as_value(iv + step, width)] + back
        with b.at_end():
            llvm.BrOp(back, header, loop_annotation=_annotation(b, self.head[4] if kind == "range" else None))
        b.open_regions.pop()
        b.pop_scope(scope)
        b.set_block(exit_)
        return self._bind(b, list(exit_.arguments), log)

    def _edge_args(self, b, path):
        args = [_materialize(b, v, t) for v, t in zip(path.leaves, self.types) if t is not None]
        args += [_materialize(b, path.fragments[k], self.frag_types[k]) for k in self.fragments]
        return args

    def _settled(self, edges, log):
        """Check the edges against what is carried; widen it (and return False) where they do not fit."""
        settled = True
        for _, path in edges:
            for j, name in enumerate(self.names):
                if not _same_tree(self.trees[j], path.trees[j]):
                    if self.values[j] is UNBOUND:
                        raise TraceError(f"{name} is assigned in the run-time loop but has no value before it, and "
                                         f"it is used after the loop or by the next iteration: assign it before "
                                         f"the loop (a number of the type it will have)", where=self.where)
                    raise TraceError(f"{name} is {_describe(self.values[j])} before the run-time loop and "
                                     f"{_describe_tree(path.trees[j])} after its body: a variable a run-time loop "
                                     f"carries keeps its kind of value (assign it before the loop, a number of the "
                                     f"type it will have)", where=self.where)
            for j, v in enumerate(path.leaves):
                t = self.types[j]
                what = f"{_leaf_owner_of(self.trees, self.names, j)} in the run-time loop"
                if t is None:
                    first = self.leaves[j]
                    if isinstance(v, _Captured) or type(v) is not type(first) or v != first:
                        self.types[j] = _leaf_type([_capture(first), v], what)
                        settled = False
                else:
                    _leaf_type([_Fixed(t), v], what)
            for k, t in self.frag_types.items():
                _leaf_type([_Fixed(t), path.fragments[k]], f"register fragment element {self.fragments[k][1]}")
        for k, entry in log.items():
            if k not in self.fragments:
                array, at, old, dtype = entry
                self.fragments[k] = entry
                self.frag_types[k] = dtype if dtype is not None else _python_dtype([old]) or Float32
                settled = False
        return settled


def _describe_tree(tree):
    if tree == "leaf":
        return "a number"
    if tree[0] == "static":
        return _describe(tree[1])
    if tree[0] == "object":
        return f"a {type(tree[1]).__name__}"
    return f"a {tree[0].__name__} of {len(tree[1])}"


class _Fixed(_Captured):
    """A stand-in for a leaf of known type (for checking a value against it)."""

    def __init__(self, dtype):  # noqa: super().__init__ takes a traced value
        self.ir, self.dtype, self.nonneg = None, dtype, False


def _leaf_owner_of(trees, names, j):
    count = 0
    for name, tree in zip(names, trees):
        n = _count(tree)
        if j < count + n:
            return name
        count += n
    return "a carried variable"


def _annotation(b, unroll):
    return control.unroll_annotation(b, unroll)
