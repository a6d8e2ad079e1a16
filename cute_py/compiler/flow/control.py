"""Run-time control flow in a kernel: ``range`` (a loop) and ``if_`` (a branch), on LLVM blocks.

Static Python control flow (``for i in range(4)``, ``if static_flag:``) simply unrolls at
trace time. These two build run-time control flow instead::

    for i in cute_py.range(n):          # n: a traced or static int; the body is traced once
        ...                             # (i is a TracedInt)
    with cute_py.compiler.if_(tid == 0):     # the body runs only where the condition holds
        ...

**Carried values.** Values computed inside a loop body or a branch are local to it (using
them after it is an MLIR dominance error). To get values out, declare them with ``carry=``
and hand over their new values; they become block arguments (phis) of the loop header, the
loop exit and the branch's merge block::

    loop = cute_py.range(0, n, carry=(0, flag0))
    for i, (acc, flag) in loop:                  # (i, the values of this iteration)
        loop.next(acc + i, flag ^ (i == 3))      # the values of the next iteration: exactly once
    acc, flag = loop.result                      # the values after the last iteration

    br = cute_py.compiler.if_(tid < 4, carry=(x,))
    with br:
        br.set(x + 1)                            # the value where the branch ran
    with br.otherwise():                         # optional, right after the `with br:` block
        br.set(x - 1)                            # the value where it did not (default: unchanged)
    x, = br.result

A carried value is a ``TracedInt`` (its width, i32 or i64, is kept), a ``TracedBool`` or a
``TracedFloat`` (f32); a Python ``int`` starts an i32 carry (i64 when it does not fit), a
``bool`` an i1 and a ``float`` an f32 one. Later values must have the initial value's kind and
width (a Python scalar of that kind is converted, a Python int also to f32; ``Int64(x)``
widens a traced i32). ``next``/``set`` must be called directly in the body (not inside a
nested ``if_``/``range``), once per traced body, with values defined there or before the
loop/branch (a value defined inside a nested ``if_`` fails MLIR's dominance check).

**Unrolling.** ``range(..., unroll=k)`` has LLVM unroll the run-time loop by ``k``: the back
edge carries ``llvm.loop.unroll.count`` metadata, and for a run-time trip count LLVM emits a
main loop with ``k`` copies of the body plus a remainder loop. With static bounds LLVM knows
the trip count ``n``; when ``k`` does not divide it (and ``n > k``) LLVM would unroll completely
instead, so the loop is built as a main loop of ``k * (n // k)`` iterations (unrolled by ``k``)
and a remainder loop of ``n % k`` iterations (not unrolled): the body is then traced twice.
``unroll=1`` forbids unrolling (``llvm.loop.unroll.disable``), and the default ``None`` leaves
it to LLVM's heuristics (which usually unroll small loops by 4 or 8). ``unroll=True``/``"full"``
with static bounds unrolls at trace time: the body is traced once per iteration with a
Python-int index, and carried values pass from one traced body to the next directly.

**Scopes.** The body of a run-time loop or branch is a scope (see ``builder``): a traced value
made in it (the loop index included) cannot be used once the loop or branch has ended, since
it has no single value there; such a use raises :class:`TraceError` naming the variable and the
construct, instead of compiling to the value of one iteration (or to an MLIR dominance error).
Values made before the construct, carried values (``loop.result``, ``br.result``) and values of
trace-time unrolled loops (``unroll="full"``, ``range_constexpr``, Python's ``range``) can be
used anywhere after them.

A ``break``/``return``/exception inside a loop body, or an exception inside a branch, leaves
the loop/branch unfinished and raises :class:`TraceError` when the kernel is finished. A
``return`` inside a branch's ``with`` body cannot be detected: it closes the branch and stops
tracing the kernel there, so do not use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

from ..lang.builder import current
from ...errors import TraceError, user_location
from ..lang.values import TracedBool, TracedFloat
from ..lang.traced_int import TracedInt, as_value
from .kinds import carried_mlir_type, carried_to_ir, check_direct_call, initial_kinds, traced_carried, wrap_carried

__all__ = ["range", "range_constexpr", "const_expr", "if_", "Loop", "Branch", "segments", "unroll_annotation"]

_range = range


# -- loops ------------------------------------------------------------------------------------


def range_constexpr(*args: int) -> Any:
    """Python's ``range`` over static ints, unrolled while tracing (the CuTe DSL's ``range_constexpr``): the body
    is traced once per iteration with a Python int; a run-time bound is a TraceError (use ``cute_py.range``)."""
    for k, v in enumerate(args):
        if type(v) is not int:
            raise TraceError(f"range_constexpr takes static ints (it unrolls while tracing), got {v!r} as argument "
                             f"{k}; for run-time bounds use cute_py.range")
    return _range(*args)


def const_expr(value: Any) -> Any:
    """``value``, asserted to be known while tracing (the CuTe DSL's ``const_expr``: a condition or bound the
    tracer folds); a run-time value is a TraceError."""
    if isinstance(value, (TracedInt, TracedBool, TracedFloat)):
        raise TraceError(f"const_expr needs a value known while tracing, got the run-time {value!r}")
    return value


def range(start: TracedInt | int, stop: TracedInt | int | None = None, step: int = 1, *,
          carry: tuple[Any, ...] | list[Any] | None = None, unroll: int | bool | str | None = None,
          unroll_full: bool = False) -> Loop:
    """A run-time loop ``for (i = start; i < stop; i += step)``; returns a :class:`Loop`.

    ``step`` must be a static non-zero int; ``start``/``stop`` may be traced or static.
    Iterating the loop yields the traced ``i``, or ``(i, values)`` when ``carry=`` (a tuple of
    initial values) is given; each traced body then calls ``loop.next(*new_values)`` once and
    the values after the loop are ``loop.result``. ``unroll``: ``None`` (LLVM decides), an int
    ``k >= 1`` (unroll the run-time loop by ``k``; 1 forbids unrolling) or ``True``/``"full"``
    (static bounds only: trace the body once per iteration, ``i`` a Python int). See the
    module documentation for when the body is traced more than once. ``unroll_full=True`` (the CuTe DSL's
    spelling) is ``unroll="full"`` with static bounds, and asks LLVM to unroll completely with run-time ones.
    """
    if stop is None:
        start, stop = 0, start
    if type(step) is not int or step == 0:
        raise TraceError(f"cute_py.range needs a static, non-zero int step, got {step!r}")
    for name, v in (("start", start), ("stop", stop)):
        if not (type(v) is int or isinstance(v, TracedInt)):
            raise TraceError(f"cute_py.range: {name} must be an int or a traced integer, got {v!r}")
    if type(unroll_full) is not bool:
        raise TraceError(f"cute_py.range: unroll_full must be True or False, got {unroll_full!r}")
    if unroll_full:
        unroll = "full" if type(start) is int and type(stop) is int else "full-hint"
    if unroll == "full-hint":
        pass
    elif unroll is True or (isinstance(unroll, str) and unroll == "full"):
        if type(start) is not int or type(stop) is not int:
            raise TraceError(f"cute_py.range(unroll={unroll!r}) unrolls at trace time and needs static int "
                             f"bounds, got start={start!r}, stop={stop!r}; use unroll=k to ask the compiler "
                             f"to unroll a loop with run-time bounds")
        unroll = "full"
    elif unroll is not None and (type(unroll) is not int or not 1 <= unroll < 1 << 31):
        raise TraceError(f"cute_py.range: unroll must be None, an int in 1..2^31-1, True or \"full\", "
                         f"got {unroll!r}")
    kinds = None if carry is None else initial_kinds(carry, "cute_py.range")
    return Loop(start, stop, step, None if carry is None else tuple(carry), kinds, unroll)


class Loop:
    """A loop built by :func:`range`: iterate it once, in a kernel, to trace its body.

    States: ``new`` (not iterated yet), ``tracing`` (iterated, no body entered yet), ``body`` (a
    body is being traced, ``next`` not called), ``nexted`` (``next`` called for this body; also
    between two traced bodies), ``done`` (the loop is closed: ``result`` is valid).
    """

    def __init__(self, start: TracedInt | int, stop: TracedInt | int, step: int, carry: tuple[Any, ...] | None,
                 kinds: tuple[str, ...] | None, unroll: int | str | None) -> None:
        self._start, self._stop, self._step = start, stop, step
        self._carry, self._kinds, self._unroll = carry, kinds, unroll
        self._state = "new"
        self._next = None
        self._depth = None
        self._result = None

    def __repr__(self):
        return f"Loop(step={self._step}, carry={self._kinds}, unroll={self._unroll!r}, {self._state})"

    def bounds(self) -> tuple[TracedInt | int, TracedInt | int, int, int | str | None]:
        """``(start, stop, step, unroll)`` as checked by :func:`range`."""
        return self._start, self._stop, self._step, self._unroll

    # -- the user's side ----------------------------------------------------------------------
    def next(self, *values: TracedInt | TracedBool | TracedFloat | int | float) -> None:
        """The carried values for the next iteration (one per carried value, of the same kinds).

        Call it exactly once per traced body, directly in the body (not inside a nested
        ``if_``/``range``); ``TraceError`` otherwise.
        """
        what = "cute_py.range loop"
        if self._kinds is None:
            raise TraceError(f"{what}: next() needs carried values: create the loop with "
                             f"cute_py.range(..., carry=(initial values...))")
        if self._state == "nexted":
            raise TraceError(f"{what}: next() was already called in this iteration of the loop body; call it "
                             f"once, with all the carried values")
        if self._state != "body":
            raise TraceError(f"{what}: next() must be called inside the loop body (the loop is "
                             f"{'not iterated yet' if self._state == 'new' else 'already finished'})")
        b = check_direct_call(self._depth, values, self._kinds, what, "next()", "loop body")
        self._next = tuple(traced_carried(b, v, k) for v, k in zip(values, self._kinds))
        self._state = "nexted"

    @property
    def result(self) -> tuple[TracedInt | TracedBool | TracedFloat, ...]:
        """The carried values after the loop (a tuple; the initial values when it runs no iteration)."""
        if self._kinds is None:
            raise TraceError("cute_py.range loop: result needs carried values: create the loop with "
                             "cute_py.range(..., carry=(initial values...))")
        if self._state != "done":
            raise TraceError(f"cute_py.range loop: result is only known after the loop has been traced (the "
                             f"loop is {'not iterated yet' if self._state == 'new' else 'still being traced'})")
        return self._result

    def __iter__(self) -> Iterator[TracedInt | int
                                   | tuple[TracedInt | int, tuple[TracedInt | TracedBool | TracedFloat, ...]]]:
        if self._state != "new":
            raise TraceError("a cute_py.range loop is traced once: iterate the object range() returns "
                             "only once")
        self._state = "tracing"
        if self._unroll == "full":
            return self._unrolled()
        return self._run_time()

    # -- tracing ------------------------------------------------------------------------------
    def _initial(self, b):
        return tuple(traced_carried(b, v, k) for v, k in zip(self._carry, self._kinds)) if self._kinds else ()

    def _enter_body(self, b, f, line):
        b.open_regions.append(("cute_py.range loop", f, line))
        self._depth = len(b.open_regions)
        self._state = "body"
        self._next = None

    def _leave_body(self, b):
        """Check the body called ``next`` (when values are carried) and close its region; the next values."""
        if self._kinds and self._state != "nexted":
            raise TraceError(f"cute_py.range loop: the loop body must call loop.next(...) with the "
                             f"{len(self._kinds)} carried value(s) ({', '.join(self._kinds)}) for the next "
                             f"iteration; it was not called")
        b.open_regions.pop()
        return self._next if self._kinds else ()

    def _item(self, i, values):
        return i if self._kinds is None else (i, values)

    def _unrolled(self):
        b = current()
        f, line = user_location()
        values = self._initial(b)
        for i in _range(self._start, self._stop, self._step):
            self._enter_body(b, f, line)
            yield self._item(i, values)
            values = self._leave_body(b)
        self._result = values
        self._state = "done"

    def _run_time(self):
        b = current()
        f, line = user_location()
        values = self._initial(b)
        for start, stop, unroll in segments(self._start, self._stop, self._step, self._unroll):
            values = yield from self._one_loop(b, f, line, start, stop, unroll, values)
        self._result = values
        self._state = "done"

    def _one_loop(self, b, f, line, start, stop, unroll, values):
        """Build one run-time loop from ``start`` to ``stop`` carrying ``values``.

        Yields once (the body is traced then); returns the traced values after the loop.
        """
        step = self._step
        width = max(getattr(start, "width", 32), getattr(stop, "width", 32))
        nonneg = (type(start) is int and start >= 0) or getattr(start, "nonneg", False)
        nonneg = nonneg and step > 0
        kinds = self._kinds or ()
        start_v, stop_v = as_value(start, width), as_value(stop, width)
        llvm = b.mlir.llvm
        types = [carried_mlir_type(b, k) for k in kinds]
        header = b.new_block(b.int_type(width), *types)
        body = b.new_block()
        exit_ = b.new_block(*types)
        with b.at_end():
            llvm.BrOp([start_v, *(v.ir for v in values)], header)
        b.set_block(header)
        stop_nonneg = (type(stop) is int and stop >= 0) or getattr(stop, "nonneg", False)
        bound = TracedInt(stop_v, width, stop_nonneg)
        # the index and the carried values are the loop's own: they exist only inside it
        scope = b.push_scope("cute_py.range loop", f, line)
        iv = TracedInt(header.arguments[0], width, nonneg)
        carried = tuple(wrap_carried(header.arguments[1 + j], k) for j, k in enumerate(kinds))
        cond = (iv < bound) if step > 0 else (iv > bound)
        with b.at_end():
            llvm.CondBrOp(cond.ir, [], list(header.arguments)[1:], body, exit_)
        b.set_block(body)
        self._enter_body(b, f, line)
        yield self._item(iv, carried)
        nxt = self._leave_body(b)
        # the body was traced: step and branch back (inside the loop's scope), then leave it
        step_v = as_value(iv + step, width)
        with b.at_end():
            llvm.BrOp([step_v, *(v.ir for v in nxt)], header, loop_annotation=unroll_annotation(b, unroll))
        b.pop_scope(scope)
        b.set_block(exit_)
        return tuple(wrap_carried(a, k) for a, k in zip(exit_.arguments, kinds))


def segments(start: TracedInt | int, stop: TracedInt | int, step: int,
             k: int | str | None) -> list[tuple[TracedInt | int, TracedInt | int, int | str | None]]:
    """``(start, stop, unroll)`` of the run-time loops that make a loop unrolled by ``k``, in order.

    One loop, except for ``unroll=k`` with static bounds whose trip count ``n > k`` is not a
    multiple of ``k``: LLVM would then unroll completely (up to its pragma size threshold)
    instead of by ``k``, so the loop is split into a main loop of ``k * (n // k)`` iterations
    (unrolled by ``k`` exactly) and a remainder loop of ``n % k`` that is not unrolled.
    """
    if type(k) is int and k > 1 and type(start) is int and type(stop) is int:
        trips = len(_range(start, stop, step))
        if trips > k and trips % k:
            mid = start + (trips - trips % k) * step
            return [(start, mid, k), (mid, stop, 1)]
    return [(start, stop, k)]


def unroll_annotation(b: Any, unroll: int | str | None) -> Any:
    """The ``loop_annotation`` of a back edge for ``unroll`` (``None``: no annotation; ``"full-hint"``: LLVM
    unrolls completely, for run-time bounds it can resolve)."""
    if unroll is None:
        return None
    if unroll == "full-hint":
        return b.ir.Attribute.parse("#llvm.loop_annotation<unroll = #llvm.loop_unroll<full = true>>")
    if unroll == 1:
        text = "#llvm.loop_annotation<unroll = #llvm.loop_unroll<disable = true>>"
    else:
        text = f"#llvm.loop_annotation<unroll = #llvm.loop_unroll<count = {unroll} : i32>>"
    return b.ir.Attribute.parse(text)


# -- branches ---------------------------------------------------------------------------------


def if_(cond: TracedBool, carry: tuple[Any, ...] | list[Any] | None = None) -> Branch:
    """A run-time branch: ``with if_(cond):`` traces its body as code run where ``cond`` holds.

    ``cond`` is a run-time condition (a ``TracedBool``; for a static bool use Python's ``if``).
    Returns a :class:`Branch`; with ``carry=`` (a tuple of values), the body calls
    ``br.set(*new_values)`` once and ``br.result`` holds, after the ``with`` block, the new
    values where the branch ran and the initial ones (or ``br.otherwise()``'s) elsewhere.
    """
    if type(cond) is bool:
        raise TraceError("if_ needs a run-time condition; for a static bool use Python's `if`")
    if not isinstance(cond, TracedBool):
        raise TraceError(f"if_ needs a run-time condition (a comparison of traced values), got {cond!r}")
    kinds = None if carry is None else initial_kinds(carry, "if_")
    return Branch(cond, None if carry is None else tuple(carry), kinds)


class Branch:
    """A branch built by :func:`if_`: a context manager for its body, then ``otherwise()`` and ``result``.

    States: ``new``, ``then`` (tracing the body), ``closed`` (body done, ``otherwise()`` still
    possible), ``else`` (tracing the ``otherwise()`` body), ``done``. Blocks: the condition
    branches to ``then`` and to ``merge`` (passing the initial values), or, once ``otherwise()``
    is used, to ``then`` and ``else``; both bodies end with a branch to ``merge`` passing their
    ``set`` values, and ``merge``'s arguments are ``result``.
    """

    def __init__(self, cond: TracedBool, carry: tuple[Any, ...] | None, kinds: tuple[str, ...] | None) -> None:
        self._cond, self._carry, self._kinds = cond, carry, kinds
        self._state = "new"
        self._set = None
        self._depth = None
        self._scope = None
        self._initial_ir = ()
        self._result = ()

    def __repr__(self):
        return f"Branch(carry={self._kinds}, {self._state})"

    # -- the user's side ----------------------------------------------------------------------
    def set(self, *values: TracedInt | TracedBool | TracedFloat | int | float) -> None:
        """The carried values where this branch (or its ``otherwise()`` body) runs; once, directly in the body."""
        what = "if_ branch"
        if self._kinds is None:
            raise TraceError(f"{what}: set() needs carried values: create the branch with "
                             f"if_(cond, carry=(initial values...))")
        if self._state not in ("then", "else"):
            raise TraceError(f"{what}: set() must be called inside the branch's `with` body (the branch is "
                             f"{'not entered yet' if self._state == 'new' else 'already closed'})")
        if self._set is not None:
            raise TraceError(f"{what}: set() was already called in this branch body; call it once, with all "
                             f"the carried values")
        b = check_direct_call(self._depth, values, self._kinds, what, "set()", "branch body")
        self._set = tuple(carried_to_ir(b, v, k) for v, k in zip(values, self._kinds))

    @property
    def result(self) -> tuple[TracedInt | TracedBool | TracedFloat, ...]:
        """The carried values after the branch (a tuple): the ``set`` values where it ran, else the others."""
        if self._kinds is None:
            raise TraceError("if_ branch: result needs carried values: create the branch with "
                             "if_(cond, carry=(initial values...))")
        if self._state not in ("closed", "done"):
            raise TraceError(f"if_ branch: result is only known after the branch's `with` block (the branch "
                             f"is {'not entered yet' if self._state == 'new' else 'still being traced'})")
        return self._result

    def otherwise(self) -> AbstractContextManager[Branch]:
        """A context manager tracing the code run where the condition does not hold.

        Use it right after the ``with if_(...)`` block (no operation in between); with carried
        values its body calls :meth:`set` too.
        """
        return _Otherwise(self)

    # -- tracing ------------------------------------------------------------------------------
    def __enter__(self) -> Branch:
        if self._state != "new":
            raise TraceError("an if_ branch is traced once: use the object if_() returns in one `with`")
        b = current()
        f, line = user_location()
        kinds = self._kinds or ()
        self._initial_ir = tuple(carried_to_ir(b, v, k) for v, k in zip(self._carry or (), kinds))
        llvm = b.mlir.llvm
        then = b.new_block()
        merge = b.new_block(*(carried_mlir_type(b, k) for k in kinds))
        with b.at_end():
            self._cond_br = llvm.CondBrOp(self._cond.ir, [], list(self._initial_ir), then, merge)
        self._pred, self._then, self._merge, self._where = b.block, then, merge, (f, line)
        b.set_block(then)
        self._open(b, "if_ branch", "then")
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if exc_type is not None:
            return False  # the branch stays open; the exception propagates
        self._close(current(), "closed")
        return False

    def _open(self, b, kind, state):
        b.open_regions.append((kind, *self._where))
        self._scope = b.push_scope(kind, *self._where)
        self._depth = len(b.open_regions)
        self._state = state
        self._set = None

    def _close(self, b, state):
        if self._kinds and self._set is None:
            raise TraceError(f"if_ branch: the branch body must call br.set(...) with the {len(self._kinds)} "
                             f"carried value(s) ({', '.join(self._kinds)}); it was not called")
        with b.at_end():
            b.mlir.llvm.BrOp(list(self._set or ()), self._merge)
        b.open_regions.pop()
        b.pop_scope(self._scope)
        b.set_block(self._merge)
        self._result = tuple(wrap_carried(a, k) for a, k in zip(self._merge.arguments, self._kinds or ()))
        self._state = state

    def _enter_else(self):
        if self._state != "closed":
            state = "still being traced" if self._state in ("then", "else") else self._state
            raise TraceError(f"if_ branch: otherwise() follows the branch's closed `with` block, once (the "
                             f"branch is {state})")
        b = current()
        if b.block != self._merge or len(list(self._merge.operations)) != 0:
            raise TraceError("if_ branch: otherwise() must come right after the `with if_(...)` block, "
                             "with no operation traced in between")
        llvm = b.mlir.llvm
        else_ = self._merge.create_before()
        loc = self._cond_br.location
        self._cond_br.operation.erase()
        with b.ir.InsertionPoint(self._pred), loc:
            self._cond_br = llvm.CondBrOp(self._cond.ir, [], [], self._then, else_)
        b.set_block(else_)
        self._open(b, "if_ else branch", "else")
        return self

    def _exit_else(self, exc_type):
        if exc_type is not None:
            return False
        self._close(current(), "done")
        return False


class _Otherwise:
    """``with br.otherwise():`` — the else body of a :class:`Branch`."""

    def __init__(self, branch):
        self._branch = branch

    def __enter__(self):
        return self._branch._enter_else()

    def __exit__(self, exc_type, exc, tb):
        return self._branch._exit_else(exc_type)
