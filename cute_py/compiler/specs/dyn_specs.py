"""The run-time extents and strides of a compile's tensor arguments: naming them, and binding them per call.

A tensor argument marked dynamic (``from_dlpack(t).mark_layout_dynamic()``...) or described by a
``DeviceArraySpec`` with ``sym_int()`` entries has a spec whose entries are ints (static: compiled in) or
:class:`~cute_py.core.symbolic.SymInt` (leaves, or expressions of leaves such as the compact stride
``N * 64``). :func:`canonicalise` renames the leaves after the first argument entry they appear at
(``mA.shape[0]``), so that equal structures give equal keys in any process, whatever the user called them.

:class:`Binder` checks a call's arrays against the specs and returns the leaves' values:

- a static entry must be equal (a stride of an extent-1 mode is not checked: it is never multiplied by
  anything but 0);
- a leaf is bound at its first entry: the value must be a multiple of its divisibility and fit its width
  (32-bit leaves ``< 2**31``, 64-bit ``< 2**63``, never negative); a leaf met again must have the same value;
- an expression entry must equal its value for the bound leaves (a compact stride stays compact);
- every run-time value the kernels receive (``kernel_values``: the leaves and expressions of their arguments,
  each sub-expression included) must, for the bound leaves, fit the width the kernel computes it in (an
  expression is computed in its widest operand's width: a 32-bit product of 32-bit extents wraps past
  ``2**31``) and be a multiple of its known divisor (``cute.assume(x, divby=n)`` on the host is a promise
  checked here, at every call whose extents or strides change).

Anything else is a :class:`~cute_py.errors.SpecMismatch` naming the argument, the entry and the rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.symbolic import Decision, SymInt, describe_guard, substitute
from ...errors import ArgumentError, CuteError, CuteValueError, GuardMismatch, SpecMismatch
from .args import ArraySpec

__all__ = ["canonicalise", "spec_key", "Binder", "kernel_values"]


def _entries(spec):
    _, shape, strides, _ = spec
    return [("shape", j, v) for j, v in enumerate(shape)] + [("stride", j, v) for j, v in enumerate(strides)]


def canonicalise(args: Sequence[tuple[int, str, ArraySpec]]) -> dict[int, ArraySpec]:
    """``{argument index: spec}`` with every leaf renamed ``<parameter>.<shape|stride>[j]`` after its first entry
    (arguments in order, extents before strides). ``ArgumentError`` for a leaf that appears only inside
    expressions (no entry binds it)."""
    rename = {}
    for i, pname, spec in args:
        for kind, j, v in _entries(spec):
            if isinstance(v, SymInt) and v.is_leaf and v.name not in rename:
                rename[v.name] = SymInt.leaf(f"{pname}.{kind}[{j}]", v.width, v.known_divisor)
    out = {}
    for i, pname, spec in args:
        dtype, shape, strides, align = spec
        try:
            new = [tuple(v.evaluate(rename) if isinstance(v, SymInt) else v for v in part) for part in (shape, strides)]
        except CuteValueError:
            missing = [leaf.name for v in shape + strides if isinstance(v, SymInt) for leaf in v.leaves()
                       if leaf.name not in rename]
            raise ArgumentError(f"argument {pname}: the run-time value {missing[0]} appears only inside expressions "
                                f"of its extents or strides, so no argument can give its value; make it an extent "
                                f"or stride of its own") from None
        out[i] = ArraySpec((dtype, new[0], new[1], align))
    return out


def spec_key(spec: ArraySpec) -> tuple:
    """A hashable key of a spec: static entries as ints, run-time ones by their structure."""
    dtype, shape, strides, align = spec
    return (dtype, tuple(v if type(v) is int else repr(v) for v in shape),
            tuple(v if type(v) is int else repr(v) for v in strides), align)


_LIMITS = {32: 1 << 31, 64: 1 << 63}


def kernel_values(values: Sequence[Any]) -> list[SymInt]:
    """Every distinct symbolic node in ``values`` (the arguments recorded launches pass to their kernels, the
    extents and strides of the TMA descriptors among them), each sub-expression included, in a stable order: what
    :class:`Binder` checks at each call."""
    seen, out = set(), []

    def visit(s):
        key = repr(s)
        if key in seen:
            return
        seen.add(key)
        for a in s.args:
            if isinstance(a, SymInt):
                visit(a)
        out.append(s)

    def walk(v):
        if type(v) in (tuple, list):
            for x in v:
                walk(x)
            return
        desc = getattr(v, "descriptor", None)  # a TMA atom: its descriptor is bound at each call
        if desc is not None and hasattr(desc, "global_dims"):
            walk(tuple(desc.global_dims) + tuple(desc.global_strides))
        substitute(v, lambda s: (visit(s), s)[1])

    for v in values:
        walk(v)
    return out


class Binder:
    """Binds the leaves of the canonical specs ``specs`` (``{argument index: spec}``) to a call's arrays."""

    def __init__(self, specs: dict[int, ArraySpec], names: Sequence[str],
                 checked: Sequence[SymInt] = (), guards: Sequence[tuple] = ()) -> None:
        self.names = names
        # the host code's decisions on run-time values (see core.symbolic.Decision): each call must take them alike
        self.guards = list(guards)
        # the kernels' run-time values whose width or divisor is not implied by their leaves' contracts
        self.checked = [s for s in checked if not s.is_leaf or s.known_divisor > 1]
        self.leaves = []  # every leaf, in first-appearance order: the order of bind()'s result
        seen = set()
        self.plan = []  # (argument index, rank, [(kind, j, entry)] leaves and statics first, then expressions)
        for i in sorted(specs):
            spec = specs[i]
            first, later = [], []
            for kind, j, v in _entries(spec):
                if isinstance(v, SymInt) and v.is_leaf and v.name not in seen:
                    seen.add(v.name)
                    self.leaves.append(v)
                (later if isinstance(v, SymInt) and not v.is_leaf else first).append((kind, j, v))
            self.plan.append((i, len(spec[1]), first + later))

    def _what(self, i):
        return f"argument {i} ({self.names[i]})" if i < len(self.names) else f"argument {i}"

    def bind(self, actual: dict[int, tuple[tuple[int, ...], tuple[int, ...]]],
             scalars: dict[str, int] | None = None) -> tuple[int, ...]:
        """The leaves' values for the arrays' ``{argument index: (shape, strides)}`` (and the integer scalar
        arguments' ``scalars``, leaf name -> value, which the checks and guards may name); ``SpecMismatch`` when
        they break a rule of the module."""
        env = dict(scalars or {})
        for i, rank, entries in self.plan:
            shape, strides = actual[i]
            if len(shape) != rank:
                raise SpecMismatch(f"{self._what(i)}: compiled for rank {rank}, got shape {tuple(shape)}")
            for kind, j, e in entries:
                got = shape[j] if kind == "shape" else strides[j]
                if kind == "stride" and shape[j] == 1:
                    if isinstance(e, SymInt) and e.is_leaf and e.name not in env:
                        env[e.name] = got
                    continue
                if type(e) is int:
                    if got != e:
                        raise SpecMismatch(f"{self._what(i)}: {kind} {j} is {got}, compiled as the static {e} "
                                           f"(shape {tuple(shape)}, strides {tuple(strides)})")
                elif e.is_leaf and e.name not in env:
                    if got < 0 or got >= _LIMITS[e.width]:
                        raise SpecMismatch(f"{self._what(i)}: {kind} {j} is {got}, outside the range of the "
                                           f"{e.width}-bit run-time value {e.name} (0 <= value < 2**{e.width - 1})")
                    if got % e.known_divisor:
                        raise SpecMismatch(f"{self._what(i)}: {kind} {j} is {got}, not a multiple of "
                                           f"{e.known_divisor} (the divisibility of {e.name})")
                    env[e.name] = got
                else:
                    want = e.evaluate(env)
                    if got != want:
                        what = f"the value of {e.name} bound before" if e.is_leaf else f"{e.describe()}"
                        raise SpecMismatch(f"{self._what(i)}: {kind} {j} is {got}, but {what} is {want} "
                                           f"(shape {tuple(shape)}, strides {tuple(strides)})")
        for s in self.checked:
            self._check_value(s, env)
        if self.guards:
            bad = Decision.failed(self.guards, env)
            if bad is not None:
                raise GuardMismatch(f"the host code was compiled for {describe_guard(bad)}; this call's run-time "
                                    f"extents decide it otherwise")
        return tuple(env[leaf.name] for leaf in self.leaves)

    def _check_value(self, s, env):
        try:
            v = s.evaluate(env)
        except CuteValueError as e:
            if "is not bound" in str(e):
                return  # a value of no tensor argument of this compile (checked where it is bound)
            raise SpecMismatch(str(e)) from None
        w = s.width
        if not -_LIMITS[w] <= v < _LIMITS[w]:
            values = ", ".join(f"{k} = {env[k]}" for k in sorted({leaf.name for leaf in s.leaves()}))
            raise SpecMismatch(f"the run-time value {s.describe()} is {v} for this call ({values}), outside the "
                               f"{w}-bit range the kernel computes it in (-2**{w - 1} <= value < 2**{w - 1}); "
                               f"declare its extents or strides 64-bit (sym_int64(), mark_layout_dynamic()) "
                               f"and compile again")
        if v % s.known_divisor:
            raise SpecMismatch(f"the run-time value {s.describe()} is {v} for this call, not a multiple of "
                               f"{s.known_divisor}, which the compile assumed (cute.assume(..., divby="
                               f"{s.known_divisor}) or a divisibility mark)")

    def env(self, values: Sequence[int]) -> dict[str, int]:
        """``{leaf name: value}`` of :meth:`bind`'s result."""
        return dict(zip([leaf.name for leaf in self.leaves], values))



def decision_env(args: Sequence[Any], sources: Sequence[tuple], names: Sequence[str]) -> dict[str, int]:
    """The run-time leaves' values of a compile's own arguments (``{leaf name: int}``), for the host code's
    decisions (``core.symbolic.Decision``): those of each argument with run-time extents that is a real array
    (a tensor of ``from_dlpack`` marked dynamic, a torch tensor...); none for fake tensors and specs of symbolic
    extents, nor for arguments that break the marks (the call refuses them later)."""
    from .args import concrete_spec, is_static_spec

    actual, specs, scalars = {}, {}, {}
    for i, (kind, spec) in enumerate(sources):
        if kind == "scalar" and spec in ("Int32", "Int64") and i < len(args):  # an integer argument: leaf argN
            v = getattr(args[i], "value", args[i])
            if type(v) is int:
                scalars[f"arg{i}"] = v
            continue
        if kind != "tensor" or is_static_spec(spec) or i >= len(args):
            continue
        try:
            got, _ = concrete_spec(args[i])
        except Exception:  # no array behind it (a fake tensor): no values
            continue
        if is_static_spec(got):
            actual[i], specs[i] = (tuple(got[1]), tuple(got[2])), spec
    if not actual:
        return scalars
    b = Binder(specs, names)
    try:
        return {**b.env(b.bind(actual)), **scalars}
    except CuteError:
        return scalars
