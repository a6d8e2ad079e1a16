"""The specialisation a jit function's last call used, kept so that a repeated call reuses it without building keys.

A compile whose call form spreads containers of device arrays (``call_form``) compares a new call on the spread
arguments, after checking that the call's containers have the compile's types and lengths."""

from __future__ import annotations

import enum
import math
from typing import Any

from ..cache.config_key import config_key
from .call_form import spread, spread_like

__all__ = ["LastCall"]

_FLOAT = object()  # the key of a float static: compared by value and sign, without building a key each call


class LastCall:
    """The specialisation of a jit function's last call: a new call whose statics (and instance) are the same
    reuses it without building keys (immutable statics compare by value, others by their key)."""

    __slots__ = ("compiled", "obj", "self_key", "statics", "scalars", "n", "tree")

    def __init__(self, compiled: Any, obj: Any, mkey: tuple, args: tuple) -> None:
        self.compiled, self.obj, self.n = compiled, obj, len(args)
        self.self_key = mkey[0]
        form = compiled.call_form
        self.tree = form.tree if form is not None and form.spreads else None
        if self.tree is not None:
            args = spread(args)[0]
        self.statics = []
        for i, (kind, _) in enumerate(compiled.sources):
            if kind == "static" and i < len(args):
                a = args[i]
                self.statics.append((i, a, None if _immutable(a) else _FLOAT if type(a) is float else config_key(a)))
        # run-time scalars by their type: another type of value may specialise differently (a Python int where a
        # cute.Float32 was given is a constant of another compile, not a Float32 of this one)
        self.scalars = [(i, _scalar_type(args[i])) for i, (kind, _) in enumerate(compiled.sources)
                        if kind == "scalar" and i < len(args)]

    def matches(self, obj: Any, args: tuple) -> bool:
        if len(args) != self.n or obj is not self.obj:
            return False
        try:
            if self.tree is not None:
                args = spread_like(args, self.tree)
                if args is None:
                    return False
            for i, t in self.scalars:
                if _scalar_type(args[i]) != t:
                    return False
            for i, v, k in self.statics:
                a = args[i]
                if k is None:
                    if not (a is v or (type(a) is type(v) and bool(a == v))):
                        return False
                elif k is _FLOAT:  # the same value with the same sign (-0.0 is other code than 0.0; NaN: keyed anew)
                    if not (a is v or (type(a) is float and a == v and math.copysign(1.0, a) == math.copysign(1.0, v))):
                        return False
                elif config_key(a) != k:
                    return False
            return self.self_key is None or config_key(obj, "self") == self.self_key
        except Exception:  # a value whose == is not a plain truth value, or that lost its key
            return False


def _scalar_type(x):
    return type(x), getattr(x, "dtype", None)


def _immutable(x):
    """Whether ``x`` cannot change and ``==`` tells it from any other value: ints, strings, bools, enum members,
    element types and the algebra's immutable values (layouts, swizzles), and tuples of them (not floats:
    ``-0.0 == 0.0`` though they make different code; they compare by key)."""
    t = type(x)
    if x is None or t in (int, bool, str, bytes) or isinstance(x, enum.Enum):
        return True
    if t in (tuple, frozenset):
        return all(_immutable(e) for e in x)
    return t.__module__.startswith("cute_py.") and t.__setattr__ is not object.__setattr__ and t.__hash__ is not None
