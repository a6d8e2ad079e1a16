"""The loops of a kernel's rewritten control flow (see ``flow``): Python loops, and run-time loops on LLVM blocks.

``for_stmt`` over ``range``/``cute.range`` and ``while_stmt`` build run-time loops: a header (the condition), the
body, a latch and an exit, the carried values their block arguments. A loop is traced, then checked: a variable
assumed static that changed, or a register-fragment element written in the body and not carried yet, makes it trace
again with that value carried (so a body may be traced a few times). The first trace of a loop is a trial for the
run-time loops inside it: each of them is traced once there and its exit stands in with what it carries so far (a
trial settled on stand-ins is traced again, for real), so that a nested loop is not traced to its settled state in
every trace of the loops around it (``TRIALS``). A run-time loop with static bounds whose body
needs a static index (a register fragment's element, a Python sequence's item:
:class:`~cute_py.errors.StaticValueRequired`) is unrolled while tracing instead, up to ``MAX_UNROLL`` iterations,
unless it was asked for with ``cute.range(..., unroll=k)``: that is a TraceError naming the static value.
``range_constexpr``, ``cute.range(..., unroll_full=True)`` with static bounds, ``while const_expr(...)`` and any
other iterable are Python loops. ``break``/``continue`` leave a run-time loop through its exit or latch with the
carried values of that point; the loop variable of a run-time loop is not defined after it.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable
from typing import Any

from ...errors import StaticValueRequired, TraceError
from ...tensor.dtypes import Float32
from . import control
from ..lang.builder import current
from .carry import (UNBOUND, Captured, Fixed, Path, capture, condition, describe, describe_tree,
                    flatten_value, is_jump, leaf_owner, leaf_type, materialize, mlir_type,
                    note_write, python_dtype, rebuilt, leaf_divisor, same_traced, same_tree, terminate_dead, TRACED,
                    unflatten_value)
from ..lang.values import TracedBool
from ..lang.traced_int import TracedInt, as_value

__all__ = ["for_stmt", "while_stmt", "MAX_UNROLL"]

MAX_UNROLL = 1024  # iterations of a run-time loop with static bounds unrolled when its body needs static indices
# a run-time loop inside the first trace of an enclosing run-time loop (a trial: most often thrown away, when the
# enclosing loop finds what it carries) is traced once and stands in for its exit (``_Loop._stand_ins``); False:
# every loop is traced until what it carries settles (the kernels are the same either way, the traces slower)
TRIALS = True


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
        self.edges.append((kind, Path(b, values, self.fragments)))


def _static_loop(items, body_fn, values, else_fn, extras=(), cond_fn=None):
    """A Python loop: ``body_fn(item, *values, *extras)`` per item of ``items``, or, with ``cond_fn`` (a ``while``),
    ``body_fn(*values, *extras)`` while ``cond_fn`` of the current values holds; jumps route as Python's do."""
    b = current()
    b.loop_frames.append(_Frame(True))
    it = iter(items)
    try:
        while True:
            if cond_fn is not None:
                if not _static_condition(cond_fn(*values, *extras)):
                    break
                r = body_fn(*values, *extras)
            else:
                item = next(it, _END)
                if item is _END:
                    break
                r = body_fn(item, *values, *extras)
            if not is_jump(r):
                values = r
                continue
            if r.kind in ("return", "dead"):
                return r
            values = r.value
            if r.kind == "break":
                return values
    finally:
        b.loop_frames.pop()
    return else_fn(*values, *extras) if else_fn is not None else values


_END = object()


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
    return _static_loop(items, body_fn, values, else_fn, extras)


def while_stmt(cond_fn: Callable[..., Any], static: bool, body_fn: Callable[..., Any], values: tuple[Any, ...],
               names: tuple[str, ...], else_fn: Callable[..., Any] | None, targets: tuple[str, ...],
               where: tuple[str, int]) -> Any:
    """``while cond: body`` (``static``: the condition is ``const_expr(...)``, a Python loop)."""
    extras = values[len(names):]
    values = values[:len(names)]
    if static:
        return _static_loop((), body_fn, values, else_fn, extras, cond_fn)
    if else_fn is not None:
        raise TraceError("`while ... else` with a run-time condition is not supported: put the else code after "
                         "the loop under a flag", where=where)
    return _rethrow(_Loop(("while", cond_fn), body_fn, values, names, (), where, extras))


def _static_condition(c):
    c = condition(c)
    if isinstance(c, TracedBool):
        raise TraceError("const_expr needs a value known while tracing, got a run-time condition")
    return c


def _range_loop(func, args, kwargs, body_fn, values, names, else_fn, targets, where, extras):
    kwargs = dict(kwargs)
    unroll = asked = kwargs.pop("unroll", None)
    unroll_full = kwargs.pop("unroll_full", False)
    if kwargs:
        raise TraceError(f"cute.range got unsupported arguments {sorted(kwargs)} (it takes start, stop, step, "
                         f"unroll=, unroll_full=)", where=where)
    if not 1 <= len(args) <= 3:
        raise TraceError(f"range takes 1 to 3 arguments, got {len(args)}", where=where)
    args = tuple(_bound(a, where) for a in args)
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
    loop = control.range(start, stop, step, unroll=unroll, unroll_full=unroll_full)
    start, stop, step, unroll = loop.bounds()
    static_bounds = type(start) is int and type(stop) is int
    if unroll == "full":
        return _static_loop(builtins.range(start, stop, step), body_fn, values, else_fn, extras)
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
        if type(asked) is int:  # a run-time loop asked for by name: not unrolled behind the caller's back
            raise TraceError(f"cute.range(..., unroll={asked}) builds a run-time loop, but its body needs a value "
                             f"known while tracing ({e.error}); unroll it while tracing with range_constexpr or "
                             f"unroll_full=True, or make that value independent of the loop index",
                             where=where) from None
        return _static_loop(builtins.range(start, stop, step), body_fn, e.values, None, extras)


def _bound(v, where):
    """A bound of ``range``: a traced integer, or a Python integer (numpy's too, as Python's range takes them)."""
    if isinstance(v, TracedInt) or type(v) is int:
        return v
    if isinstance(v, TRACED) or isinstance(v, float) or not hasattr(type(v), "__index__"):
        raise TraceError(f"range takes integers (Python ints or traced integers), got {v!r}", where=where)
    return operator.index(v)


def _width(v):
    """The width of a loop index reaching the static bound ``v`` (64 bits past the 32-bit range)."""
    if type(v) is int:
        return 32 if -(1 << 31) <= v < (1 << 31) else 64
    return v.width


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
        self.trees = [flatten_value(v, self.leaves) for v in self.values]
        # every leaf starts static (``None``): one the body changes gets its type and a block argument
        self.types = [None] * len(self.leaves)
        # per leaf, an int known to divide it on entry and after every iteration (0: no fact yet): widened to the
        # gcd with each back edge until it holds for all of them, so a carried offset keeps its alignment
        self.divisors = [leaf_divisor(v) for v in self.leaves]
        self.fragments = {}  # key -> log entry (array, at, value before the loop, fragment dtype)
        self.frag_types = {}

    def run(self):
        b = current()
        # inside a trace of an enclosing loop that will be traced again: what this loop carries after one trace is
        # enough for it (see _stand_ins); otherwise the traces go on until the carried values settle
        stand_in = b.loop_trials > 0
        taken = b.loop_stand_ins  # stand-ins in the IR kept so far (those of an undone trace go with it)
        for attempt in builtins.range(len(self.leaves) + 64):
            mark = b.mark()
            log = {}
            b.write_logs.append(log)
            trial = 1 if attempt == 0 and TRIALS else 0  # the first trace, most likely thrown away: a trial
            b.loop_trials += trial
            try:
                done = self._trace(b, log)
            except StaticValueRequired as e:
                self._undo(b, mark, log)
                b.loop_stand_ins = taken
                raise _Unroll(e, self.values) from None
            except BaseException:
                b.write_logs.pop()
                raise
            finally:
                b.loop_trials -= trial
            if done is not None and b.loop_stand_ins == taken:
                b.write_logs.pop()
                return done
            self._undo(b, mark, log)  # not settled, or settled on the stand-ins of loops inside it
            b.loop_stand_ins = taken
            if stand_in:
                return self._stand_ins(b)
        raise TraceError("internal error: the carried values of a run-time loop did not settle", where=self.where)

    def _stand_ins(self, b):
        """The values after this loop as its exit would hold them with what it carries now (undefined values of the
        carried types): for a trace of an enclosing loop that is only finding what that loop carries (its ops are
        thrown away, ``loop_stand_ins`` says so). What a loop carries only grows from trace to trace, so the
        enclosing loop's trace finds no more than a real one would, and its real trace starts from there."""
        b.loop_stand_ins += 1
        with b.at_end():
            undefined = [b.mlir.llvm.UndefOp(mlir_type(t)).result for t in self._arg_types()]
        return self._bind(b, undefined, None)

    def _undo(self, b, mark, log):
        b.abandon(mark)
        for array, at, old, _ in log.values():
            array[at] = old
        if b.write_logs and b.write_logs[-1] is log:
            b.write_logs.pop()

    def _entry_values(self, b):
        args = [materialize(b, capture(v), t) for v, t in zip(self.leaves, self.types) if t is not None]
        args += [materialize(b, capture(e[0][e[1]]), self.frag_types[k]) for k, e in self.fragments.items()]
        return args

    def _arg_types(self):
        return [t for t in self.types if t is not None] + [self.frag_types[k] for k in self.fragments]

    def _bind(self, b, block_args, log):
        """The carried values (and fragment elements) as ``block_args`` hold them; returns the values."""
        it = iter(block_args)
        leaves = [v if t is None else rebuilt(next(it), t, divisor=d)
                  for v, t, d in zip(self.leaves, self.types, self.divisors)]
        for k, entry in self.fragments.items():
            value = rebuilt(next(it), self.frag_types[k])
            array, at, _, dtype = entry
            note_write(array, at, dtype)
            array[at] = value
        lv = iter(leaves)
        return tuple(unflatten_value(tree, lv) for tree in self.trees)

    def _trace(self, b, log):
        """Trace the loop once; its values after it, or ``None`` when something must be carried that was not."""
        llvm = b.mlir.llvm
        where = self.where
        kind = self.head[0]
        types = [mlir_type(t) for t in self._arg_types()]
        if kind == "range":
            _, start, stop, step, unroll = self.head
            width = max(_width(start), _width(stop))
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
            cond = condition(self.head[1](*values, *self.extras))
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
                terminate_dead(b)
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
        args = [materialize(b, v, t) for v, t in zip(path.leaves, self.types) if t is not None]
        args += [materialize(b, path.fragments[k], self.frag_types[k]) for k in self.fragments]
        return args

    def _settled(self, edges, log):
        """Check the edges against what is carried; widen it (and return False) where they do not fit."""
        settled = True
        for _, path in edges:
            for j, name in enumerate(self.names):
                if not same_tree(self.trees[j], path.trees[j]):
                    if self.values[j] is UNBOUND:
                        raise TraceError(f"{name} is assigned in the run-time loop but has no value before it, and "
                                         f"it is used after the loop or by the next iteration: assign it before "
                                         f"the loop (a number of the type it will have)", where=self.where)
                    raise TraceError(f"{name} is {describe(self.values[j])} before the run-time loop and "
                                     f"{describe_tree(path.trees[j])} after its body: a variable a run-time loop "
                                     f"carries keeps its kind of value (assign it before the loop, a number of the "
                                     f"type it will have)", where=self.where)
            for j, v in enumerate(path.leaves):
                t = self.types[j]
                what = f"{leaf_owner(self.trees, self.names, j)} in the run-time loop"
                if t is None:
                    first = self.leaves[j]
                    unchanged = same_traced([capture(first), v])       # the value from before the loop
                    if not unchanged and (isinstance(v, Captured) or type(v) is not type(first) or v != first):
                        self.types[j] = leaf_type([capture(first), v], what)
                        settled = False
                else:
                    leaf_type([Fixed(t), v], what)
                d = math.gcd(self.divisors[j], leaf_divisor(v))
                if d != self.divisors[j]:
                    self.divisors[j] = d
                    settled = False
            for k, t in self.frag_types.items():
                leaf_type([Fixed(t), path.fragments[k]], f"register fragment element {self.fragments[k][1]}")
        for k, entry in log.items():
            if k not in self.fragments:
                array, at, old, dtype = entry
                self.fragments[k] = entry
                self.frag_types[k] = dtype if dtype is not None else python_dtype([old]) or Float32
                settled = False
        return settled


def _annotation(b, unroll):
    return control.unroll_annotation(b, unroll)
