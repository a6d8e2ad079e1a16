"""A Python function as the inner function of a :class:`~cute_py.core.composed.ComposedLayout`."""

from __future__ import annotations

from typing import Any

__all__: list[str] = []


class FunctionInner:
    """A Python function as the inner function of a composed layout, as the CuTe DSL allows
    (``make_composed_layout(lambda c: ..., offset, outer)``: gather and scatter tensors, custom layouts): it is
    called with ``offset + outer(coord)`` as a plain int or tuple and returns what the layout maps to. The algebra
    carries it along like a swizzle; it compares by the function's identity."""

    __cute_inner__ = True
    __slots__ = ("fn",)

    def __init__(self, fn: Any) -> None:
        object.__setattr__(self, "fn", fn)

    def __setattr__(self, name, value):
        raise AttributeError("FunctionInner is immutable")

    def __call__(self, x: Any) -> Any:
        as_coord = getattr(x, "__cute_coord__", None)
        return self.fn(as_coord() if as_coord is not None else x)

    def __eq__(self, other: object) -> bool:
        return type(other) is FunctionInner and other.fn is self.fn

    def __hash__(self) -> int:
        return hash(("FunctionInner", id(self.fn)))

    def __repr__(self):
        return getattr(self.fn, "__qualname__", None) or repr(self.fn)

    __str__ = __repr__
