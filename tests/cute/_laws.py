"""Law checkers shared by the law, golden and fuzz tests: each evaluates a result point by point.

Every checker returns ``None`` when the law holds and a short description of the first
counterexample otherwise, so a failing assertion shows what broke.  None of them calls the
operation under test: they only evaluate layouts, so a result can be checked against its
contract independently of how it was computed (for example a result printed by CuTe's C++).
"""

import cute_py as cute
from cute_py import Layout

# evaluating more points than this is left to the structural part of a check
ENUMERATION_LIMIT = 4096


def values(layout):
    """``[layout(i) for i in range(size(layout))]``."""
    return [layout(i) for i in range(cute.size(layout))]


def _as_layout(b):
    if isinstance(b, int):
        return Layout(b, 1)
    return b


def composition_counterexample(a, b, r, limit=ENUMERATION_LIMIT):
    """Where ``r(c) != a(b(c))`` for a ``c`` in the domain of ``b`` (a layout, an int, ``None`` or a tiler)."""
    if b is None:
        return None if values(r) == values(a) else f"{r} is not {a}"
    if isinstance(b, tuple):
        if cute.rank(r) != len(b):
            return f"rank of {r} is not the tiler's {len(b)}"
        for i, t in enumerate(b):
            bad = composition_counterexample(a[i], t, r[i], limit)
            if bad is not None:
                return f"mode {i}: {bad}"
        return None
    b = _as_layout(b)
    if not cute.is_compatible(b.shape, r.shape):
        return f"shape of {r} is not compatible with {b}"
    n = cute.size(b)
    for i in range(min(n, limit)):
        got, want = r(i), a(b(i))
        if got != want:
            return f"result({i}) = {got} but lhs(rhs({i})) = {want} (lhs {a}, rhs {b}, result {r})"
    return None


def complement_counterexample(layout, cotarget, c):
    """Where ``c`` fails to be the ordered, disjoint, covering complement of ``layout`` in ``[0, size(cotarget))``."""
    cv = values(c)
    if cv != sorted(cv) or len(set(cv)) != len(cv):
        return f"{c} is not ordered"
    image = set(values(layout))
    clash = set(cv[1:]) & image
    if clash:
        return f"{c} reaches {sorted(clash)[:4]}, which {layout} reaches too"
    n = cute.cosize(layout) if cotarget is None else cute.size(cotarget)
    both = {layout(i) + x for i in range(cute.size(layout)) for x in cv}
    missing = [k for k in range(n) if k not in both]
    if missing:
        return f"{layout} with its complement {c} does not cover {missing[:4]} of [0, {n})"
    return None


def left_inverse_counterexample(layout, r):
    """Where ``layout(r(layout(i))) != layout(i)``."""
    for i in range(cute.size(layout)):
        y = layout(i)
        if layout(r(y)) != y:
            return f"layout(result(layout({i}))) = {layout(r(y))}, not {y} (layout {layout}, result {r})"
    return None


def right_inverse_counterexample(layout, r):
    """Where ``layout(r(i)) != i`` for ``i < size(r)``."""
    for i in range(cute.size(r)):
        if layout(r(i)) != i:
            return f"layout(result({i})) = {layout(r(i))}, not {i} (layout {layout}, result {r})"
    return None


def divide_counterexample(layout, tiler, r):
    """A logical divide must reach every element of ``layout`` (a last partial tile pads the rest)."""
    if cute.size(r) < cute.size(layout):
        return f"{r} has fewer elements than {layout}"
    if isinstance(tiler, tuple):
        return None
    image = set(values(r)) if cute.size(r) <= ENUMERATION_LIMIT else None
    if image is not None and not set(values(layout)) <= image:
        return f"{r} misses elements of {layout}"
    return None
