"""The parameters of a compiled function's launches at a call: the values they take (constants, checked device
addresses, scalars checked against their slots, TMA descriptors encoded for the call's addresses, run-time grids
checked against the hardware's limits), and how a ``Compiled`` writes them into its parameter arrays.

A refill is two steps (:class:`ParameterArrays`): ``_prepare`` computes and checks every value and changes
nothing, ``_commit`` writes them; so a call whose values fail a check leaves the arrays as they were.
"""

from __future__ import annotations

from typing import Any

from ...core.symbolic import SymInt
from ...errors import ArgumentError, TmaEncodeError
from ...tensor.dtypes import Scalar
from .scalars import fits

__all__ = ["constant_value", "checked_address", "slot_value", "grid_for", "ParameterArrays"]


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


class ParameterArrays:
    """The refill of a ``Compiled``'s parameter arrays (``_blocks``, one ``launch.ParamBlock`` per launch) and of
    its plan's run-time grids for a call's key: its tensors' addresses, its bound extents, its scalars. A part of
    ``Compiled``, which sets what these methods read (``launches``, ``_blocks``, ``_plan``, ``_binder``, the
    argument positions, ``_native``, ``_desc_cache``); the caller holds the object's lock."""

    def _descriptor(self, desc, address, env=None):
        """The 128 bytes of ``desc`` encoded at ``address`` (bound to ``env``'s extents where it has run-time
        ones), from a cache of the last encodings."""
        bound = desc.bind(env) if env is not None and desc.is_dynamic else desc
        k = (id(desc), address, bound.global_dims, bound.global_strides)
        b = self._desc_cache.get(k)
        if b is None:
            if len(self._desc_cache) > 256:
                self._desc_cache.clear()
            try:
                b = bound.encode(address)
            except TmaEncodeError:  # the driver encodes in the current context: a thread with none gets the module's
                if not self._make_context_current():
                    raise
                b = bound.encode(address)
            self._desc_cache[k] = b
        return b

    def _fill(self, key, args):
        """Refill the parameter arrays (and the run-time grids) for ``key``; the caller holds the lock. Nothing
        changes when it raises (every value is computed and checked before the first write)."""
        prepared = self._prepare(key)
        if self._native is not None:  # it replays the parameters as they are: not while they change
            self._native.disarm()
        self._commit(*prepared)

    def _prepare(self, key):
        """``(plan, writes)`` for ``key``: the plan with the run-time grids of these extents, and per parameter
        ``(block, index, value)``, every value checked against its slot. Changes nothing."""
        scalars = {}
        if self._scalar_args:
            key, values = key
            scalars = dict(zip(self._scalar_args, values))
        env, plan = None, self._plan
        if self._binder is not None:
            static, dyn_ptrs, values = key
            ptrs = dict(zip([i for i, _ in self._tensor_args], static))
            ptrs.update(zip([i for i, _ in self._dynamic_args], dyn_ptrs))
            env = self._binder.env(values)
        else:
            ptrs = dict(zip([i for i, _ in self._tensor_args], key))
        if self._int_scalars:
            env = dict(env or {})
            env.update({f"arg{i}": scalars[i] for i in self._int_scalars if i in scalars})
        if env is not None:
            plan = tuple(grid_for(p, ln, env) if ln.dynamic_grid else p for p, ln in zip(plan, self.launches))
        writes = []
        for ln, block in zip(self.launches, self._blocks):
            for j, (kind, src) in enumerate(ln.params):
                if kind == "ptr":
                    v = checked_address(ptrs[src[0]] + src[1], ln.name, j)
                elif kind == "desc":
                    desc, (idx, off) = src
                    v = self._descriptor(desc, checked_address(ptrs[idx] + off, ln.name, j), env)
                elif isinstance(src, SymInt):
                    v = slot_value(kind, env[src.name], ln.name, j, src.name)
                elif hasattr(src, "evaluate") and isinstance(src, Scalar):  # a run-time scalar of the host code
                    v = src.evaluate(scalars)
                else:
                    idx = getattr(src, "index", None)
                    v = scalars[idx] if idx in scalars else constant_value(src)
                    v = slot_value(kind, v, ln.name, j, f"argument {idx}" if idx is not None else "a constant")
                writes.append((block, j, v))
        return plan, writes

    def _commit(self, plan, writes):
        for block, j, v in writes:
            block.set(j, v)
        self._plan = plan
