"""The values a compiled function's launch parameters take at a call: constants, checked device addresses, scalars
checked against their slots, and run-time grids evaluated and checked against the hardware's limits."""

from __future__ import annotations

from typing import Any

from ...errors import ArgumentError
from ...tensor.dtypes import Scalar
from .scalars import fits

__all__ = ["constant_value", "checked_address", "slot_value", "grid_for"]


def constant_value(src: Any) -> Any:
    """The value of a parameter that is no argument of the call: a constant (or a Scalar of one)."""
    return src.value if isinstance(src, Scalar) else src


def checked_address(v: Any, name: str, j: int) -> Any:
    """``v`` as the device address of parameter ``j`` of launch ``name`` (``ArgumentError`` outside [1, 2**64))."""
    if type(v) is int and not 0 < v < 1 << 64:
        raise ArgumentError(f"launch of {name}: parameter {j} would be the device address {v:#x}, outside [1, 2**64)")
    return v


def slot_value(kind: str, v: Any, name: str, j: int, what: str) -> Any:
    """``v`` for a parameter slot of ``kind``, checked: a value the slot cannot hold is an ``ArgumentError``."""
    if kind == "Float32" and type(v) is int:
        try:
            v = float(v)
        except OverflowError:
            pass
    if not fits(kind, v):
        raise ArgumentError(f"launch of {name}: parameter {j} is a {kind}; {what} is {v!r}, which it cannot hold")
    return v


def grid_for(plan: tuple, ln: Any, env: dict[str, int]) -> tuple:
    """``plan`` (a launch's entry of ``Compiled._plan``) with the grid of ``ln`` evaluated for ``env``, checked
    against the hardware's limits as a static grid is when it is recorded."""
    from ..specs import limits as _limits

    grid = tuple(g if type(g) is int else g.evaluate(env) for g in ln.grid)
    rule = _limits.launch_problem(grid, ln.block, ln.cluster, None, True)
    if rule is not None:
        exprs = ", ".join(f"{'xyz'[a]} = {g.describe()}" for a, g in enumerate(ln.grid) if type(g) is not int)
        raise ArgumentError(f"launch of {ln.name}: {rule}; the grid is run-time ({exprs}), and these are the "
                            f"extents of this call")
    return (plan[0],) + grid + plan[4:]
