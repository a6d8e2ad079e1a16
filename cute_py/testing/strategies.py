"""Hypothesis strategies for IntTuples, shapes, strides, layouts, tilers and composable pairs.

Sizes are bounded (``max_extent``, ``max_size``...) so that laws can be checked
by enumerating every index.  Every strategy but the ``arbitrary_*`` ones only
produces inputs that the algebra accepts, so a failing property is a bug, not a
rejected input; the ``arbitrary_*`` strategies draw inputs with no regard for
admissibility (zero extents, negative and non-dividing strides), for laws stated
as "raises a CuteError or satisfies the law".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import strategies as st

from ..core.coords import prefix_product
from ..core.int_tuple import flatten, unflatten
from ..core.products import product
from ..core.layout import Layout, make_ordered_layout
from ..core.typing import IntTuple, Shape, Stride, Tiler

if TYPE_CHECKING:
    from ..core.composed import ComposedLayout
    from ..core.swizzle import Swizzle

__all__ = [
    "int_tuples",
    "shapes",
    "strides",
    "layouts",
    "compact_layouts",
    "injective_layouts",
    "layouts_with_degenerate_modes",
    "profiles",
    "tilers",
    "composable_pairs",
    "divisors",
    "swizzles",
    "composed_layouts",
    "arbitrary_layouts",
    "arbitrary_tilers",
]


def divisors(n: int) -> list[int]:
    """All positive divisors of ``n`` in increasing order."""
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def profiles(draw: st.DrawFn, n_leaves: int, max_depth: int = 2) -> IntTuple:
    """A profile with exactly ``n_leaves`` leaves: ``0`` for a lone leaf, else nested tuples of 0s."""

    def build(n, depth):
        if n == 1 and (depth == 0 or draw(st.integers(0, 3)) > 0):
            return 0
        if depth <= 1:
            return (0,) * n
        cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n - 1))) if n > 1 else []
        bounds = [0] + cuts + [n]
        return tuple(build(hi - lo, depth - 1) for lo, hi in zip(bounds, bounds[1:]))

    p = build(n_leaves, max_depth)
    if type(p) is tuple and len(p) == 1 and type(p[0]) is tuple and draw(st.integers(0, 3)) > 0:
        p = p[0]  # a lone group is mostly the whole shape, sometimes a rank-1 wrapper
    return p


def _fill(profile, leaves):
    if type(profile) is not tuple:
        return leaves[0]
    return unflatten(tuple(leaves), profile)


@st.composite
def int_tuples(draw: st.DrawFn, max_rank: int = 3, max_depth: int = 2, min_value: int = 1,
               max_value: int = 8) -> IntTuple:
    """IntTuples: an int or nested tuples (rank <= max_rank per level, depth <= max_depth)."""
    def build(depth):
        if depth == 0 or draw(st.integers(0, 3)) == 0:
            return draw(st.integers(min_value, max_value))
        n = draw(st.integers(1, max_rank))
        return tuple(build(depth - 1) for _ in range(n))

    return build(max_depth)


@st.composite
def shapes(draw: st.DrawFn, max_rank: int = 3, max_depth: int = 2, max_extent: int = 8, max_size: int = 256,
           min_extent: int = 1) -> Shape:
    """Shapes with extents >= ``min_extent`` (positive by default) and total size <= ``max_size``."""
    n = draw(st.integers(1, max_rank * max(1, max_depth - 1) if max_depth > 1 else max_rank))
    leaves = []
    budget = max_size
    for _ in range(n):
        hi = max(min_extent, min(max_extent, budget))
        e = draw(st.integers(min_extent, hi))
        leaves.append(e)
        budget = max(1, budget // e) if e else budget
    return _fill(draw(profiles(n, max_depth)), leaves)


@st.composite
def strides(draw: st.DrawFn, shape: Shape, max_stride: int = 32, allow_zero: bool = True,
            allow_negative: bool = False) -> Stride:
    """Strides congruent to ``shape``."""
    lo = -max_stride if allow_negative else (0 if allow_zero else 1)

    def build(s):
        if type(s) is tuple:
            return tuple(build(e) for e in s)
        return draw(st.integers(lo, max_stride))

    return build(shape)


@st.composite
def layouts(draw: st.DrawFn, max_rank: int = 3, max_depth: int = 2, max_extent: int = 8, max_size: int = 256,
            max_stride: int = 32, allow_zero: bool = True) -> Layout:
    """Arbitrary layouts (not necessarily injective) with non-negative strides."""
    s = draw(shapes(max_rank, max_depth, max_extent, max_size))
    return Layout(s, draw(strides(s, max_stride, allow_zero)))


@st.composite
def compact_layouts(draw: st.DrawFn, max_rank: int = 3, max_depth: int = 2, max_extent: int = 8,
                    max_size: int = 256) -> Layout:
    """Bijections onto ``[0, size)``: a shape with a random mode order (``make_ordered_layout``)."""
    s = draw(shapes(max_rank, max_depth, max_extent, max_size))
    flat = flatten(s) if type(s) is tuple else (s,)
    order = draw(st.permutations(range(len(flat))))
    order = unflatten(tuple(order), s) if type(s) is tuple else order[0]
    return make_ordered_layout(s, order)


@st.composite
def injective_layouts(draw: st.DrawFn, max_rank: int = 3, max_depth: int = 2, max_extent: int = 8,
                      max_size: int = 256, max_gap: int = 4) -> Layout:
    """Injective layouts whose sorted strides each divide the next (admissible for ``complement``).

    Built from a compact layout by widening the gaps between its modes.
    """
    s = draw(shapes(max_rank, max_depth, max_extent, max_size, min_extent=2))
    flat = list(flatten(s)) if type(s) is tuple else [s]
    order = draw(st.permutations(range(len(flat))))
    stride = [0] * len(flat)
    cur = 1
    for i in order:
        cur *= draw(st.integers(1, max_gap))
        stride[i] = cur
        cur *= flat[i]
    d = unflatten(tuple(stride), s) if type(s) is tuple else stride[0]
    return Layout(s, d)


@st.composite
def layouts_with_degenerate_modes(draw: st.DrawFn, max_rank: int = 4, max_extent: int = 6,
                                  max_size: int = 256) -> Layout:
    """Layouts that mix ordinary modes with size-1 modes and stride-0 modes."""
    base = draw(injective_layouts(max_rank=2, max_depth=1, max_extent=max_extent, max_size=max_size))
    modes = list(base) if type(base.shape) is tuple else [base]
    n_extra = draw(st.integers(1, 3))
    for _ in range(n_extra):
        kind = draw(st.sampled_from(["unit", "zero"]))
        extra = Layout(1, draw(st.integers(0, 8))) if kind == "unit" else Layout(draw(st.integers(1, 4)), 0)
        modes.insert(draw(st.integers(0, len(modes))), extra)
    return Layout(tuple(m.shape for m in modes), tuple(m.stride for m in modes))


def _divisor_tiler(draw, flat_shape):
    # a tile of one mode: (size:stride) that lands on whole prefixes of the mode's flat shape
    m = len(flat_shape)
    pre = prefix_product(tuple(flat_shape))
    j = draw(st.integers(0, m - 1))
    k = draw(st.integers(j, m - 1))
    f = draw(st.sampled_from(divisors(flat_shape[k])))
    size = product(tuple(flat_shape[j:k])) * f
    stride = pre[j]
    return Layout(size, stride if size > 1 else (stride if stride else 1))


@st.composite
def tilers(draw: st.DrawFn, layout: Layout, allow_none: bool = True, as_layout: bool = False) -> Tiler:
    """Tilers that divide ``layout``: a tuple with one element per mode (or fewer), each a layout,
    an int or ``None``; with ``as_layout=True`` a single layout tiling the whole (coalesced) layout."""
    if as_layout:
        from ..core.coalescing import coalesce

        c = coalesce(layout)
        fs = list(c.shape) if type(c.shape) is tuple else [c.shape]
        return _divisor_tiler(draw, fs)
    modes = list(layout) if type(layout.shape) is tuple else [layout]
    n = draw(st.integers(1, len(modes)))
    out = []
    for mode in modes[:n]:
        fs = list(flatten(mode.shape)) if type(mode.shape) is tuple else [mode.shape]
        kind = draw(st.sampled_from(["layout", "int", "none"] if allow_none else ["layout", "int"]))
        if kind == "none":
            out.append(None)
        elif kind == "int":
            # an int tile: a divisor of a prefix
            k = draw(st.integers(0, len(fs) - 1))
            out.append(product(tuple(fs[:k])) * draw(st.sampled_from(divisors(fs[k]))))
        else:
            out.append(_divisor_tiler(draw, fs))
    return tuple(out)


@st.composite
def composable_pairs(draw: st.DrawFn, max_size: int = 256) -> tuple[Layout, Layout]:
    """Pairs ``(A, B)`` for which ``composition(A, B)(i) == A(B(i))``: B's modes read disjoint
    digit ranges of A's (coalesced, refined) mixed-radix index, possibly past size(A), or have stride 0."""
    from ..core.coalescing import coalesce

    a = draw(layouts(max_rank=3, max_depth=2, max_extent=6, max_size=max_size, max_stride=16))
    c = coalesce(a)
    fs = list(c.shape) if type(c.shape) is tuple else [c.shape]
    # refine each digit s into (f, s // f) and compute the strides of the refined digits
    digits = []
    for x in fs:
        f = draw(st.sampled_from(divisors(x)))
        digits.extend(d for d in (f, x // f) if d > 1)
    strides_ = list(prefix_product(tuple(digits))) if digits else []
    total = product(tuple(fs))
    # cut the refined digits into contiguous ranges and keep a random subset, shuffled
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(digits) - 1)), max_size=len(digits)))) if digits else []
    bounds = [0] + [x for x in cuts if x < len(digits)] + [len(digits)]
    ranges = [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]
    chosen = draw(st.lists(st.sampled_from(ranges), unique=True, max_size=len(ranges))) if ranges else []
    modes = [(product(tuple(digits[lo:hi])), strides_[lo]) for lo, hi in chosen]
    if draw(st.booleans()):
        modes.append((draw(st.integers(1, 4)), 0))
    if draw(st.booleans()):
        modes.append((draw(st.integers(1, 4)), total * draw(st.integers(1, 3))))
    modes = draw(st.permutations(modes)) if modes else [(1, 0)]
    if len(modes) == 1 and draw(st.booleans()):
        return a, Layout(modes[0][0], modes[0][1])
    return a, Layout(tuple(m[0] for m in modes), tuple(m[1] for m in modes))


@st.composite
def swizzles(draw: st.DrawFn, max_bits: int = 3, max_base: int = 4, max_extra_shift: int = 2,
             allow_negative: bool = True) -> Swizzle:
    """Swizzles ``S<b,m,s>`` with ``|s| >= b`` (negative shifts included by default)."""
    from ..core.swizzle import Swizzle

    b = draw(st.integers(0, max_bits))
    m = draw(st.integers(0, max_base))
    s = draw(st.integers(max(b, 1), b + max_extra_shift))
    if allow_negative and draw(st.booleans()):
        s = -s
    return Swizzle(b, m, s)


@st.composite
def composed_layouts(draw: st.DrawFn, max_size: int = 256, offset: bool = True) -> ComposedLayout:
    """``S<b,m,s> o offset o L`` with L a compact layout (often a swizzled shared-memory tile)."""
    from ..core.composed import ComposedLayout

    sw = draw(swizzles())
    outer = draw(compact_layouts(max_size=max_size))
    off = draw(st.integers(0, sw.size() - 1)) if offset else 0
    return ComposedLayout(sw, off, outer)


@st.composite
def arbitrary_layouts(draw: st.DrawFn, max_rank: int = 3, max_depth: int = 2, max_extent: int = 8,
                      max_size: int = 256, max_stride: int = 24) -> Layout:
    """Any layout of small static ints: extents in ``[0, max_extent]`` (total size <= ``max_size``), strides
    in ``[-max_stride, max_stride]``; often inadmissible for one operation or another."""
    s = draw(shapes(max_rank, max_depth, max_extent, max_size, min_extent=0))

    def build(x):
        if type(x) is tuple:
            return tuple(build(e) for e in x)
        return draw(st.integers(-max_stride, max_stride) if draw(st.integers(0, 3)) == 0 else st.integers(0, max_stride))

    return Layout(s, build(s))


@st.composite
def arbitrary_tilers(draw: st.DrawFn, layout: Layout, max_extent: int = 8) -> Tiler:
    """A tiler for ``layout`` with no regard for divisibility: a layout, an int, or a tuple of layouts, ints and
    ``None`` with at most one element per mode."""
    def tile():
        kind = draw(st.sampled_from(["layout", "int", "none"]))
        if kind == "none":
            return None
        if kind == "int":
            return draw(st.integers(1, max_extent))
        return draw(arbitrary_layouts(max_rank=2, max_depth=1, max_extent=max_extent, max_size=32, max_stride=12))

    if draw(st.booleans()):
        t = tile()
        return t if t is not None else draw(st.integers(1, max_extent))
    n = draw(st.integers(1, len(layout)))
    return tuple(tile() for _ in range(n))
