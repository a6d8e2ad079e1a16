"""How IntTuples and user values print: CuTe's notation (:func:`fmt`) and short reprs for error messages
(:func:`short_repr`)."""

from __future__ import annotations

from .leaves import DynamicInt, divisor_of

__all__ = ["fmt", "short_repr"]


def short_repr(x: object, limit: int = 80) -> str:
    """A short, never failing ``repr`` of a user value for error messages."""
    try:
        text = str(x) if type(x) is int else repr(x)
    except Exception:  # a failing or too deep repr
        text = f"<{type(x).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fmt(x: object) -> str:
    """Print an IntTuple in CuTe notation: ``(4,(2,8))``; a dynamic leaf prints ``?``, or ``?{div=N}`` when an int
    ``N`` > 1 is known to divide it (as the CuTe DSL prints them)."""
    t = type(x)
    if t is int:
        return str(x)
    if t is tuple:
        return "(" + ",".join(fmt(e) for e in x) + ")"
    if isinstance(x, DynamicInt):
        d = divisor_of(x)
        return "?" if d <= 1 else f"?{{div={d}}}"
    return str(x)
