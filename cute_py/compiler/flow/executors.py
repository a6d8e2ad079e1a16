"""The executors of a kernel's rewritten control flow (see ``rewrite``): static or run-time, decided while tracing.

The rewritten code calls this module's names (``__cute_flow.X``).

**Branches.** ``if_stmt`` runs one branch function when the condition is static (a Python value, or
``const_expr``), and otherwise traces both into blocks of a run-time branch. The variables the statement carries
(``liveness``) come back merged (see ``carry``): a value the two paths agree on statically stays static; one that
differs becomes a block argument of the merge, of the one type both paths give it; different traced types, a name
bound on one path only, or Python objects that differ are a :class:`TraceError` at the statement's line.

**Loops** are in ``loops`` (``for_stmt``, ``while_stmt``, re-exported here).

**Jumps.** ``break`` and ``continue`` under a run-time condition need a run-time loop. A ``return`` (of nothing)
under a run-time condition ends the kernel there; a device function's ``return`` under one is an error.

**Expressions.** ``and_``, ``or_``, ``not_``, ``ifexp`` and ``compare`` keep Python's meaning on static operands
and combine run-time booleans (both operands evaluated, as in the DSL).
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable
from typing import Any

from ...errors import TraceError
from ..lang.builder import current
from .carry import (TRACED, UNBOUND, Captured, Jump, Path, capture, check_trees, condition, copies, fragment_type,
                    in_place, is_jump, is_run_time, leaf_divisor, leaf_owner, leaf_type, materialize, mlir_type,
                    note_write, rebuilt, route_return, same_traced, terminate_dead, unflatten_value, write_logged)
from .loops import MAX_UNROLL, for_stmt, while_stmt
from ..lang.values import TracedBool, minmax
from ..lang.traced_int import select

__all__ = ["UNBOUND", "Jump", "is_jump", "in_place", "if_stmt", "for_stmt", "while_stmt", "and_", "or_", "not_",
           "ifexp", "compare", "note_write", "MAX_UNROLL"]


def and_(first: Any, *rest: Callable[[], Any]) -> Any:
    """``a and b and ...``: Python's value on static operands; with a run-time one, the Boolean ``&`` of all."""
    v = first
    for thunk in rest:
        if not is_run_time(v):
            if not v:
                return v
            v = thunk()
            continue
        w = thunk()
        if is_run_time(w):
            v = condition(v) & condition(w)
        elif not w:
            return w
        else:
            v = condition(v)
    return v


def or_(first: Any, *rest: Callable[[], Any]) -> Any:
    """``a or b or ...``: Python's value on static operands; with a run-time one, the Boolean ``|`` of all."""
    v = first
    for thunk in rest:
        if not is_run_time(v):
            if v:
                return v
            v = thunk()
            continue
        w = thunk()
        if is_run_time(w):
            v = condition(v) | condition(w)
        elif w:
            return w
        else:
            v = condition(v)
    return v


def min_(*args: Any) -> Any:
    """``min(a, b, ...)`` in a kernel: Python's for static values; with a run-time one, a run-time minimum (in the
    operands' common type, as ``cute.min``)."""
    return _extremum(args, "min", builtins.min)


def max_(*args: Any) -> Any:
    """``max(a, b, ...)`` in a kernel (see :func:`min_`)."""
    return _extremum(args, "max", builtins.max)


def _extremum(args: tuple[Any, ...], op: str, static: Callable[..., Any]) -> Any:
    if not any(isinstance(a, TRACED) for a in args):
        return static(*args)
    acc = args[0]
    for a in args[1:]:
        acc = minmax(acc, a, op)
    return acc


def not_(v: Any) -> Any:
    """``not v``: a run-time value's negated condition, else Python's ``not``."""
    return ~condition(v) if is_run_time(v) else not v


def ifexp(c: Any, a: Callable[[], Any], b: Callable[[], Any]) -> Any:
    """``a if c else b``: Python's on a static ``c``; with a run-time ``c``, both evaluated and selected."""
    c = condition(c)
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
        if not is_run_time(result) and not result:
            return result
        left = right
    return result


# -- branches -----------------------------------------------------------------------------------


def if_stmt(cond: Any, then_fn: Callable[..., Any], else_fn: Callable[..., Any], values: tuple[Any, ...],
            ncarried: int, names: tuple[str, ...], where: tuple[str, int]) -> Any:
    """``if cond: then else: else_`` over the carried ``names`` (the first ``ncarried`` of ``values``)."""
    c = condition(cond)
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
            r = fn(*copies(values))
            if is_jump(r):
                _route_jump(b, r, where)
            else:
                paths.append(Path(b, r, log))
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
    check_trees(paths, names, where)
    # the leaves: static where every path agrees, else merge-block arguments
    # (a value every path ends with is one from before the if; with one path left, it may be that path's own)
    types = [None if len(paths) > 1 and same_traced([p.leaves[j] for p in paths]) else
             leaf_type([p.leaves[j] for p in paths], f"a value of {leaf_owner(paths[0].trees, names, j)}")
             for j in builtins.range(len(paths[0].leaves))]
    keys = list(log)
    frag_types = []
    for k in keys:
        array, at, old, dtype = log[k]
        vals = [p.fragments.get(k, capture(old)) for p in paths]
        frag_types.append(fragment_type(vals, dtype, at))
    arg_types = [t for t in types + frag_types if t is not None]
    for t in arg_types:
        merge.add_argument(mlir_type(t), b.loc(where))
    for p in paths:
        b.set_block(p.block)
        args = [materialize(b, v, t) for v, t in zip(p.leaves, types) if t is not None]
        args += [materialize(b, p.fragments.get(k, capture(log[k][2])), t) for k, t in zip(keys, frag_types)
                 if t is not None]
        with b.at_end():
            llvm.BrOp(args, merge)
    b.set_block(merge)
    merged = iter(merge.arguments)
    leaves = []
    for j, t in enumerate(types):
        if t is None:
            v = paths[0].leaves[j]
            leaves.append(v.value if isinstance(v, Captured) else v)
        else:
            nonneg = all(getattr(p.leaves[j], "nonneg", False) or (type(p.leaves[j]) is int and p.leaves[j] >= 0)
                         for p in paths)
            divisor = 0
            for p in paths:
                divisor = math.gcd(divisor, leaf_divisor(p.leaves[j]))
            leaves.append(rebuilt(next(merged), t, nonneg, divisor))
    for k, t in zip(keys, frag_types):
        entry = log[k]
        value = paths[0].fragments.get(k, entry[2]) if t is None else rebuilt(next(merged), t)
        if value is not entry[2]:
            write_logged(entry, value)
    it = iter(leaves)
    return tuple(unflatten_value(tree, it) for tree in paths[0].trees)


def _route_jump(b, r, where):
    """A path of a run-time branch ended in ``r``: route it (the path gets its terminator now or from its loop)."""
    if r.kind == "dead":
        terminate_dead(b)
    elif r.kind == "return":
        route_return(b, r, where)
    else:
        frame = b.loop_frames[-1] if b.loop_frames else None
        if frame is None or frame.static:
            raise TraceError(f"`{r.kind}` under a run-time condition leaves a loop unrolled while tracing "
                             f"(range_constexpr, unroll_full or a Python iterable): use a run-time loop "
                             f"(range or cute.range)", where=where)
        frame.edge(b, r.kind, r.value)


