"""How a call's arguments map onto a compiled function's arguments.

Two conveniences of the CuTe DSL's calling convention:

- a **list or tuple of device arrays** is a valid argument (``elementwise_apply(op, [a, b], c)``): each array is
  an argument of the compile of its own (its tensor, its checks), and the host code gets the container of their
  tensors back. The number of arrays is part of the compile (another count compiles again);
- a compiled function may be called **without its ``Constexpr`` parameters**, wherever they stand
  (``compiled(inputs, result, stream)`` for ``f(op: Constexpr, inputs, result, stream)``): they were compiled in;
- a trailing run-time parameter with a **default** (a ``stream=CUstream(...)``) may be left out: the call takes
  the default, as a Python call would.

:func:`spread` makes the flat arguments of a compile; a :class:`CallForm` does the same for each call of the
compiled function (a call whose containers have another length is an ``ArgumentError``).
"""

from __future__ import annotations

from typing import Any

from ...errors import ArgumentError
from ..specs.args import is_device_array

__all__ = ["CallForm", "spread", "spread_like", "regroup"]

# the types whose every value is a device array (torch's tensor types: ``is_device_array`` decides by the type)
_ARRAY_TYPES: set[type] = set()


def _array(x: Any) -> bool:
    t = type(x)
    if t in _ARRAY_TYPES:
        return True
    if not is_device_array(x):
        return False
    if t.__module__.startswith("torch") and hasattr(t, "data_ptr"):
        _ARRAY_TYPES.add(t)
    return True


def _container(a: Any) -> bool:
    return type(a) in (list, tuple) and len(a) > 0 and all(_array(x) for x in a)


def spread(args: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...], list[tuple[int, int | None]]]:
    """``(flat arguments, tree, origin)``: every list or tuple of device arrays replaced by its arrays; ``tree``
    holds, per argument, ``None`` or ``(type, length)`` of the container it was; ``origin`` maps each flat
    argument to ``(argument index, index in its container or None)``."""
    flat, tree, origin = [], [], []
    for i, a in enumerate(args):
        if _container(a):
            tree.append((type(a), len(a)))
            flat.extend(a)
            origin.extend((i, j) for j in range(len(a)))
        else:
            tree.append(None)
            flat.append(a)
            origin.append((i, None))
    return tuple(flat), tuple(tree), origin


def spread_like(args: tuple[Any, ...], tree: tuple[Any, ...]) -> list[Any] | None:
    """The flat arguments of ``args`` if :func:`spread` gives them the tree ``tree`` (``len(args) == len(tree)``),
    else ``None``; without building the tree."""
    flat: list[Any] = []
    for a, t in zip(args, tree):
        if t is None:
            if type(a) in (list, tuple) and _container(a):
                return None
            flat.append(a)
        elif type(a) is t[0] and len(a) == t[1] and all(_array(x) for x in a):
            flat.extend(a)
        else:
            return None
    return flat


def regroup(flat: list[Any], tree: tuple[Any, ...]) -> list[Any]:
    """The arguments of ``tree`` rebuilt from the flat values (a container of the values of its arrays)."""
    out, it = [], iter(flat)
    for t in tree:
        if t is None:
            out.append(next(it))
        else:
            typ, n = t
            out.append(typ(next(it) for _ in range(n)))
    return out


class CallForm:
    """The calling convention of one compile: ``tree`` (see :func:`spread`), the positions of its ``Constexpr``
    parameters (``constexpr_at``) and the number of arguments it was compiled with (``n_args``)."""

    __slots__ = ("tree", "constexpr_at", "n_args", "name", "defaults")

    def __init__(self, tree: tuple[Any, ...], constexpr_at: tuple[int, ...], n_args: int, name: str,
                 defaults: dict[int, Any] | None = None) -> None:
        self.tree, self.constexpr_at, self.n_args, self.name = tree, frozenset(constexpr_at), n_args, name
        self.defaults = dict(defaults or {})  # position -> default of a run-time parameter a call may leave out

    @property
    def trivial(self) -> bool:
        """Whether calls pass the compile's arguments as they are."""
        return not self.constexpr_at and not self.defaults and all(t is None for t in self.tree)

    @property
    def spreads(self) -> bool:
        """Whether some argument is a container of device arrays (a call with another length is another form)."""
        return any(t is not None for t in self.tree)

    def flat(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """A call's arguments as the compile takes them. A call with fewer arguments than parameters either left
        the Constexpr ones out or trailing ones with defaults; the reading whose containers fit is taken."""
        args = tuple(args)
        k = len(self.constexpr_at)
        if k and len(args) <= self.n_args - k:
            try:
                return self._spread(self._with_defaults(self._without_constexpr(args)))
            except ArgumentError:  # not that reading: the Constexpr ones given, trailing ones left out
                pass
        return self._spread(self._with_defaults(args))

    def _without_constexpr(self, args):
        """``args`` with a placeholder at each Constexpr position (they are compiled in)."""
        it, left, out = iter(args), len(args), []
        for i in range(self.n_args):
            if i in self.constexpr_at:
                out.append(None)
            elif left:
                out.append(next(it))
                left -= 1
            else:
                break
        return tuple(out)

    def _with_defaults(self, args):
        if self.defaults and len(args) < self.n_args:  # trailing parameters left out: their defaults (the static
            last = max(self.defaults)                   # ones between are compiled in: any placeholder does)
            args = args + tuple(self.defaults.get(i) for i in range(len(args), max(last + 1, len(args))))
        return args

    def _spread(self, args):
        if all(t is None for t in self.tree):
            return args
        out = []
        for i, a in enumerate(args):
            t = self.tree[i] if i < len(self.tree) else None
            if t is None:
                out.append(a)
                continue
            typ, n = t
            if type(a) not in (list, tuple) or len(a) != n:
                raise ArgumentError(f"{self.name}: argument {i} was compiled as a {typ.__name__} of {n} device "
                                    f"arrays, got {type(a).__name__}"
                                    f"{f' of {len(a)}' if type(a) in (list, tuple) else ''}")
            out.extend(a)
        return tuple(out)
