"""Run-time control flow in a kernel: ``range`` (a loop) and ``if_`` (a branch), on LLVM blocks.

Static Python control flow (``for i in range(4)``, ``if static_flag:``) simply unrolls at
trace time. These two build run-time control flow instead::

    for i in cute_py.range(n):          # n: a traced or static int; the body is traced once
        ...
    with cute_py.jit.if_(tid == 0):     # the body runs only where the condition holds
        ...

Values computed inside a loop body or a branch are local to it: using them after the
loop/branch is an MLIR dominance error (loop-carried values are not supported yet), and
``break``/``return`` inside a run-time loop or branch raise :class:`TraceError`.
"""

import contextlib

from .builder import current
from .errors import TraceError, locate, user_location
from .values import TracedBool, TracedInt, as_value

__all__ = ["range", "if_"]

_range = range


def range(start, stop=None, step=1):
    """A run-time loop ``for (i = start; i < stop; i += step)`` yielding a traced ``i``.

    ``step`` must be a static non-zero int; ``start``/``stop`` may be traced or static.
    """
    if stop is None:
        start, stop = 0, start
    if type(step) is not int or step == 0:
        raise TraceError(locate(f"cute_py.range needs a static, non-zero int step, got {step!r}"))
    for name, v in (("start", start), ("stop", stop)):
        if not (type(v) is int or isinstance(v, TracedInt)):
            raise TraceError(locate(f"cute_py.range: {name} must be an int or a traced integer, got {v!r}"))
    return _loop(start, stop, step)


def _loop(start, stop, step):
    b = current()
    width = max(getattr(start, "width", 32), getattr(stop, "width", 32))
    nonneg = (type(start) is int and start >= 0) or getattr(start, "nonneg", False)
    nonneg = nonneg and step > 0
    start_v, stop_v = as_value(start, width), as_value(stop, width)
    llvm = b.mlir.llvm
    header = b.new_block(b.int_type(width))
    body = b.new_block()
    exit_ = b.new_block()
    f, line = user_location()
    with b.at_end():
        llvm.BrOp([start_v], header)
    b.set_block(header)
    iv = TracedInt(header.arguments[0], width, nonneg)
    stop_nonneg = (type(stop) is int and stop >= 0) or getattr(stop, "nonneg", False)
    bound = TracedInt(stop_v, width, stop_nonneg)
    cond = (iv < bound) if step > 0 else (iv > bound)
    with b.at_end():
        llvm.CondBrOp(cond.ir, [], [], body, exit_)
    b.set_block(body)
    b.open_regions.append(("cute_py.range loop", f, line))
    yield iv
    # the body was traced: step and branch back
    nxt = as_value(iv + step, width)
    with b.at_end():
        llvm.BrOp([nxt], header)
    b.open_regions.pop()
    b.set_block(exit_)


@contextlib.contextmanager
def if_(cond):
    """Trace the ``with`` body as a branch taken where the run-time ``cond`` holds (a bool: static)."""
    b = current()
    if type(cond) is bool:
        raise TraceError(locate("if_ needs a run-time condition; for a static bool use Python's `if`"))
    if not isinstance(cond, TracedBool):
        raise TraceError(locate(f"if_ needs a run-time condition (a comparison of traced values), got {cond!r}"))
    llvm = b.mlir.llvm
    then = b.new_block()
    merge = b.new_block()
    f, line = user_location()
    with b.at_end():
        llvm.CondBrOp(cond.ir, [], [], then, merge)
    b.set_block(then)
    b.open_regions.append(("if_ branch", f, line))
    yield
    with b.at_end():
        llvm.BrOp([], merge)
    b.open_regions.pop()
    b.set_block(merge)
