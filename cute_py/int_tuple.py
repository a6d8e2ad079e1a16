"""IntTuples: ints and nested tuples of ints, the shapes, strides and coordinates of CuTe.

A leaf is either a Python ``int`` (a *static* value) or an instance of
:class:`Dynamic` (a value known only at run time, e.g. a traced integer inside a
kernel).  Every function here is written with arithmetic operators only, so it
evaluates on dynamic leaves too; where a decision needs a static value the
function raises :class:`~cute_py.errors.StaticValueRequired` naming it.

The recursive functions are written as case tables over (tuple, int) arguments,
as in CuTe's ``int_tuple.hpp``; each case is commented.
"""

import abc

from .errors import CuteTypeError, CuteValueError, DivisibilityError, RankError, StaticValueRequired

__all__ = [
    "Dynamic",
    "imin",
    "imax",
    "signum",
    "is_int",
    "is_tuple",
    "is_static",
    "as_int_tuple",
    "fmt",
    "get",
    "product",
    "product_each",
    "product_like",
    "size",
    "rank",
    "depth",
    "flatten",
    "unflatten",
    "sum_",
    "shape_div",
    "ceil_div",
    "round_up",
    "prefix_product",
    "suffix_product",
    "compact_col_major",
    "compact_row_major",
    "compact_order",
    "crd2idx",
    "idx2crd",
    "elem_less",
    "elem_scale",
    "inner_product",
    "is_congruent",
    "is_weakly_congruent",
    "is_compatible",
    "evenly_divides",
    "filter_zeros_tuple",
]


class Dynamic(abc.ABC):
    """Marker base class for leaves known only at run time (traced integers).

    Subclasses implement ``+ - * // %`` (and reflected forms) returning new
    dynamic values, and print as ``?``.  They must not be hashable, so that
    memoised algebra functions never cache a result computed from them.
    """

    __hash__ = None

    def min_(self, other):
        """The smaller of ``self`` and ``other`` as a run-time value."""
        raise StaticValueRequired(f"min of a run-time value is not supported by {type(self).__name__}")

    def max_(self, other):
        """The larger of ``self`` and ``other`` as a run-time value."""
        raise StaticValueRequired(f"max of a run-time value is not supported by {type(self).__name__}")

    def signum_(self):
        """-1, 0 or 1 as a run-time value."""
        raise StaticValueRequired(f"signum of a run-time value is not supported by {type(self).__name__}")


def imin(a, b):
    """``min`` of two leaves; a run-time leaf gives a run-time result."""
    if type(a) is int and type(b) is int:
        return a if a < b else b
    return a.min_(b) if isinstance(a, Dynamic) else b.min_(a)


def imax(a, b):
    """``max`` of two leaves; a run-time leaf gives a run-time result."""
    if type(a) is int and type(b) is int:
        return a if a > b else b
    return a.max_(b) if isinstance(a, Dynamic) else b.max_(a)


def signum(a):
    """-1, 0 or 1 (a run-time value computes it at run time through ``signum_``)."""
    if type(a) is int:
        return (a > 0) - (a < 0)
    return a.signum_()


def is_tuple(x):
    """True if ``x`` is a tuple (a non-leaf IntTuple)."""
    return type(x) is tuple


def is_int(x):
    """True if ``x`` is a leaf: a static ``int`` or a :class:`Dynamic` value."""
    return (type(x) is int) or isinstance(x, Dynamic)


def is_static(x):
    """True if every leaf of ``x`` is a Python ``int``."""
    if type(x) is tuple:
        return all(is_static(e) for e in x)
    return type(x) is int


def as_int_tuple(x, what="value"):
    """Validate and normalise user input to an IntTuple.

    Lists become tuples, integer-like objects (``numpy.int64``...) become
    ``int``; bools, floats and strings are rejected with a :class:`CuteTypeError`.
    """
    t = type(x)
    if t is int:
        return x
    if t is tuple or t is list:
        return tuple(as_int_tuple(e, what) for e in x)
    if isinstance(x, Dynamic):
        return x
    if isinstance(x, tuple):  # tuple subclasses (coordinates) become plain tuples
        return tuple(as_int_tuple(e, what) for e in x)
    if isinstance(x, bool) or isinstance(x, (float, str, bytes)):
        raise CuteTypeError(f"{what} must be an int or a tuple of ints, got {x!r} ({t.__name__})")
    try:
        import operator

        return operator.index(x)
    except TypeError:
        raise CuteTypeError(f"{what} must be an int or a tuple of ints, got {x!r} ({t.__name__})") from None


def fmt(x):
    """Print an IntTuple in CuTe notation: ``(4,(2,8))``; a dynamic leaf prints ``?``."""
    t = type(x)
    if t is int:
        return str(x)
    if t is tuple:
        return "(" + ",".join(fmt(e) for e in x) + ")"
    if isinstance(x, Dynamic):
        return "?"
    return str(x)


def _need_static(x, what):
    if type(x) is not int:
        raise StaticValueRequired(f"{what} must be a static int, but it is only known at run time ({fmt(x)})")
    return x


def get(x, mode=()):
    """The sub-tuple of ``x`` at the (nested) mode index ``mode``.

    ``get(x, [i, j])`` is ``x[i][j]``; a leaf has one mode, ``get(5, [0]) == 5``.
    Objects with a ``shape`` attribute (layouts, tensors) are indexed by their
    ``__getitem__``.
    """
    if isinstance(mode, int):
        mode = (mode,)
    for i in mode:
        if type(x) is tuple:
            if not -len(x) <= i < len(x):
                raise RankError(f"mode {i} is out of range for {fmt(x)} of rank {len(x)}")
            x = x[i]
        elif is_int(x):
            # int: rank 1, its only mode is itself
            if i not in (0, -1):
                raise RankError(f"mode {i} is out of range for the rank-1 value {fmt(x)}")
        elif hasattr(x, "shape"):
            x = x[i]
        else:
            raise CuteTypeError(f"cannot take mode {i} of {x!r}")
    return x


def product(a):
    """Product of all leaves; ``product(()) == 1``."""
    if type(a) is tuple:
        # tuple: product of the products of the elements
        r = 1
        for e in a:
            r = r * (product(e) if type(e) is tuple else e)
        return r
    # int: itself
    return a


def product_each(a):
    """Tuple of the products of each mode; an int is wrapped: ``product_each(4) == (4,)``."""
    if type(a) is tuple:
        return tuple(product(e) for e in a)
    return (a,)


def product_like(a, guide):
    """Products of ``a`` at the leaves of ``guide`` (``a`` weakly congruent... to guide's profile)."""
    if type(guide) is tuple:
        # tuple guide: recurse mode by mode
        if type(a) is not tuple or len(a) != len(guide):
            raise RankError(f"{fmt(a)} does not have the profile of {fmt(guide)}")
        return tuple(product_like(x, g) for x, g in zip(a, guide))
    # leaf guide: the whole sub-tuple collapses to its product
    return product(a)


def _shape_of(x):
    if type(x) is tuple or is_int(x) or getattr(x, "__cute_stride__", False):
        return x
    s = getattr(x, "shape", None)
    if s is None:
        raise CuteTypeError(f"expected an IntTuple, a layout or a tensor, got {x!r}")
    return s


def size(a, mode=()):
    """Number of elements of an IntTuple, layout or tensor (of its ``mode`` if given)."""
    return product(get(_shape_of(a), mode))


def rank(a, mode=()):
    """Number of top-level modes: ``len`` of a tuple, 1 for an int."""
    x = get(_shape_of(a), mode)
    return len(x) if type(x) is tuple else 1


def depth(a, mode=()):
    """Nesting depth: 0 for an int, 1 + the deepest element for a tuple."""
    x = get(_shape_of(a), mode)
    if type(x) is tuple:
        # tuple: one level more than its deepest element (an empty tuple has depth 1)
        return 1 + max((depth(e) for e in x), default=0)
    # int: depth 0
    return 0


def flatten(a):
    """All leaves of ``a`` in one flat tuple; an int stays an int."""
    if type(a) is not tuple:
        return a
    for e in a:
        if type(e) is tuple:
            out = []
            _flatten_into(a, out)
            return tuple(out)
    return a


def _flatten_into(a, out):
    for e in a:
        if type(e) is tuple:
            _flatten_into(e, out)
        else:
            out.append(e)


def unflatten(flat, profile):
    """Inverse of :func:`flatten`: regroup the flat tuple ``flat`` like ``profile``."""
    flat = tuple(flat) if type(flat) is tuple else (flat,)
    it = iter(flat)

    def build(p):
        if type(p) is tuple:
            return tuple(build(e) for e in p)
        return next(it)

    n = len(flatten(profile)) if type(profile) is tuple else 1
    if n != len(flat):
        raise RankError(f"cannot unflatten {fmt(flat)} ({len(flat)} leaves) to the profile of {fmt(profile)} ({n} leaves)")
    return build(profile)


def sum_(a):
    """Sum of all leaves."""
    if type(a) is tuple:
        r = 0
        for e in a:
            r = r + sum_(e)
        return r
    return a


def shape_div(a, b):
    """Division for shapes, CuTe's ``shape_div``.

    - tuple, tuple: element-wise (equal ranks);
    - tuple, int: fold ``b`` through the modes of ``a``: ``shape_div((4,5,6),40) == (1,1,3)``;
    - int, tuple: ``shape_div(a, product(b))``;
    - int, int: ``ceil_div(a, b)``, requiring ``a % b == 0 or b % a == 0`` when both are static.
    """
    if type(a) is tuple:
        if type(b) is tuple:
            # tuple tuple: element-wise
            if len(a) != len(b):
                raise RankError(f"shape_div needs equal ranks, got {fmt(a)} and {fmt(b)}")
            return tuple(shape_div(x, y) for x, y in zip(a, b))
        # tuple int: divide each mode by what is left of b, carrying the rest
        out = []
        for x in a:
            out.append(shape_div(x, b))
            b = shape_div(b, x)
        return tuple(out)
    if type(b) is tuple:
        # int tuple
        return shape_div(a, product(b))
    # int int
    if type(a) is int and type(b) is int:
        if b == 0 or (a % b != 0 and b % a != 0):
            raise DivisibilityError(
                f"shape_div divisibility condition: {a} % {b} == 0 or {b} % {a} == 0 must hold"
            )
        return (a + b - 1) // b
    return (a + b - 1) // b


def ceil_div(a, b):
    """Ceiling division of IntTuples, CuTe's ``ceil_div``.

    - tuple, tuple: element-wise, missing modes of ``b`` count as 1;
    - tuple, int: fold ``b`` through the modes of ``a``;
    - int, tuple: ``ceil_div(a, product(b))``;
    - int, int: ``(a + b - 1) // b``.
    """
    if type(a) is tuple:
        if type(b) is tuple:
            # tuple tuple: element-wise, b padded with 1s
            if len(a) < len(b):
                raise RankError(f"ceil_div needs rank(a) >= rank(b), got {fmt(a)} and {fmt(b)}")
            return tuple(ceil_div(x, b[i] if i < len(b) else 1) for i, x in enumerate(a))
        # tuple int: fold
        out = []
        for x in a:
            out.append(ceil_div(x, b))
            b = ceil_div(b, x)
        return tuple(out)
    if type(b) is tuple:
        # int tuple
        return ceil_div(a, product(b))
    # int int
    if type(b) is int and b == 0:
        raise CuteValueError(f"ceil_div by zero: ceil_div({fmt(a)}, 0)")
    return (a + b - 1) // b


def round_up(a, b):
    """Round ``a`` up to a multiple of ``b`` (element-wise for tuples, missing modes of ``b`` are 1)."""
    if type(a) is tuple and type(b) is tuple:
        if len(a) < len(b):
            raise RankError(f"round_up needs rank(a) >= rank(b), got {fmt(a)} and {fmt(b)}")
        return tuple(round_up(x, b[i] if i < len(b) else 1) for i, x in enumerate(a))
    return ((a + b - 1) // b) * b


def prefix_product(a, init=1):
    """Exclusive prefix product, hierarchical: ``prefix_product((2,(3,4))) == (1,(2,6))``."""
    if type(a) is tuple:
        if type(init) is tuple:
            # tuple tuple: element-wise
            if len(a) != len(init):
                raise RankError(f"prefix_product needs equal ranks, got {fmt(a)} and init {fmt(init)}")
            return tuple(prefix_product(x, i) for x, i in zip(a, init))
        # tuple int: running product
        out = []
        for x in a:
            out.append(prefix_product(x, init))
            init = init * product(x)
        return tuple(out)
    if type(init) is tuple:
        raise RankError(f"prefix_product of an int {fmt(a)} with a tuple init {fmt(init)}")
    # int int
    return init


def suffix_product(a, init=1):
    """Exclusive suffix product, hierarchical: ``suffix_product((2,3,4)) == (12,4,1)``."""
    if type(a) is tuple:
        if type(init) is tuple:
            # tuple tuple: element-wise
            if len(a) != len(init):
                raise RankError(f"suffix_product needs equal ranks, got {fmt(a)} and init {fmt(init)}")
            return tuple(suffix_product(x, i) for x, i in zip(a, init))
        # tuple int: running product from the right
        out = []
        for x in reversed(a):
            out.append(suffix_product(x, init))
            init = init * product(x)
        return tuple(reversed(out))
    if type(init) is tuple:
        raise RankError(f"suffix_product of an int {fmt(a)} with a tuple init {fmt(init)}")
    # int int
    return init


def _compact(shape, current, left):
    # returns (stride, current * size(shape)); static size-1 modes get stride 0 as in CuTe
    if type(shape) is tuple:
        out = [None] * len(shape)
        order = range(len(shape)) if left else range(len(shape) - 1, -1, -1)
        for i in order:
            out[i], current = _compact(shape[i], current, left)
        return tuple(out), current
    if type(shape) is int and shape == 1:
        return 0, current
    return current, current * shape


def compact_col_major(shape, current=1):
    """Column-major (LayoutLeft) compact strides; static size-1 modes get stride 0."""
    if type(current) is tuple:
        return tuple(compact_col_major(s, c) for s, c in zip(shape, current))
    return _compact(shape, current, True)[0]


def compact_row_major(shape, current=1):
    """Row-major (LayoutRight) compact strides; static size-1 modes get stride 0."""
    if type(current) is tuple:
        return tuple(compact_row_major(s, c) for s, c in zip(shape, current))
    return _compact(shape, current, False)[0]


def compact_order(shape, order):
    """Compact strides that visit the modes of ``shape`` in increasing ``order``.

    ``order`` is weakly congruent to ``shape``; a leaf of ``order`` orders a whole
    sub-shape, which is then compact column-major.  Equal orders are visited left
    to right.  ``compact_order((2,2,2,2), (0,2,3,1)) == (1,4,8,2)``.
    """
    order = as_int_tuple(order, "order")
    if not is_weakly_congruent(order, shape):
        raise RankError(f"order {fmt(order)} must be weakly congruent to shape {fmt(shape)}")
    ref_shape = flatten(product_like(shape, order))
    ref_order = flatten(order)
    if type(ref_shape) is not tuple:
        ref_shape, ref_order = (ref_shape,), (ref_order,)
    for o in ref_order:
        _need_static(o, "each element of the order of compact_order")

    def rec(s, o):
        if type(o) is tuple:
            return tuple(rec(x, y) for x, y in zip(s, o))
        start = 1
        for rs, ro in zip(ref_shape, ref_order):
            if ro < o:
                start = start * rs
        return compact_col_major(s, start)

    return rec(shape, order)


def crd2idx(coord, shape, stride=None):
    """Map a coordinate to an index.

    With ``stride``: the inner product of the (hierarchical) coordinate with the
    strides, an int coordinate being split colexicographically over a tuple mode.
    Without ``stride``: ``shape`` may be a layout (then this is ``layout(coord)``)
    or a shape, giving the colexicographic (column-major) index of ``coord``.
    """
    if stride is None:
        if hasattr(shape, "stride") and type(shape) is not tuple:
            return crd2idx(coord, shape.shape, shape.stride)
        return _crd2idx_colex(coord, shape)
    return _crd2idx(coord, shape, stride)


def _crd2idx(coord, shape, stride):
    if type(coord) is tuple:
        if type(shape) is tuple:
            # tuple tuple tuple: sum over the modes
            if len(coord) != len(shape) or len(shape) != len(stride):
                raise RankError(
                    f"coordinate {fmt(coord)} does not match the rank of shape {fmt(shape)} / stride {fmt(stride)}"
                )
            r = 0
            for c, s, d in zip(coord, shape, stride):
                r = r + _crd2idx(c, s, d)
            return r
        # tuple int int: a tuple coordinate into a leaf mode is an error (as in CuTe)
        raise RankError(f"the coordinate {fmt(coord)} is a tuple but the shape {fmt(shape)} is an int")
    if coord is None:
        raise CuteValueError("a coordinate with None slices a layout; use slice_ instead of evaluating it")
    if type(shape) is tuple:
        # int tuple tuple: split the index colexicographically over the modes
        if type(stride) is not tuple or len(shape) != len(stride):
            raise RankError(f"shape {fmt(shape)} and stride {fmt(stride)} are not congruent")
        r = 0
        last = len(shape) - 1
        for i, (s, d) in enumerate(zip(shape, stride)):
            if i == last:
                return r + _crd2idx(coord, s, d)
            p = product(s)
            r = r + _crd2idx(coord % p, s, d)
            coord = coord // p
        return r
    # int int int
    return coord * stride


def _crd2idx_colex(coord, shape):
    if type(coord) is not tuple:
        # int coordinate: already an index
        return coord
    if type(shape) is not tuple:
        raise RankError(f"coordinate {fmt(coord)} has more modes than shape {fmt(shape)}")
    # tuple tuple: flatten both to the coordinate's profile and apply Horner's rule
    if len(coord) != len(shape):
        raise RankError(f"coordinate {fmt(coord)} does not match the rank of shape {fmt(shape)}")
    fc = flatten(coord)
    fs = flatten(product_like(shape, coord))
    r = fc[-1]
    for c, s in zip(reversed(fc[:-1]), reversed(fs[:-1])):
        r = c + s * r
    return r


def idx2crd(idx, shape, stride=None):
    """Split an index into a (hierarchical) coordinate of ``shape``.

    Without ``stride`` the enumeration is colexicographic:
    ``c0 = i % s0, c1 = (i // s0) % s1, ...``.  With ``stride`` (for compact
    layouts): ``c = (i // d) % s`` per leaf.
    """
    if stride is None:
        if type(idx) is tuple:
            # tuple tuple: mode by mode
            if type(shape) is not tuple or len(idx) != len(shape):
                raise RankError(f"index {fmt(idx)} does not match the rank of shape {fmt(shape)}")
            return tuple(idx2crd(i, s) for i, s in zip(idx, shape))
        if type(shape) is tuple:
            # int tuple: colexicographic split with compact strides
            return _idx2crd_strided(idx, shape, prefix_product(shape))
        # int int: the index is the coordinate
        return idx
    return _idx2crd_strided(idx, shape, stride)


def _idx2crd_strided(idx, shape, stride):
    if type(idx) is tuple:
        # tuple tuple tuple
        if type(shape) is not tuple or len(idx) != len(shape):
            raise RankError(f"index {fmt(idx)} does not match the rank of shape {fmt(shape)}")
        return tuple(_idx2crd_strided(i, s, d) for i, s, d in zip(idx, shape, stride))
    if type(shape) is tuple:
        if type(stride) is not tuple:
            # int tuple int: compact column-major strides starting at `stride`
            stride = prefix_product(shape, stride)
        # int tuple tuple
        return tuple(_idx2crd_strided(idx, s, d) for s, d in zip(shape, stride))
    # int int int
    if type(shape) is int and shape == 1:
        return 0
    return (idx // stride) % shape


def elem_less(a, b):
    """Element-wise ``a < b`` over all modes of ``a`` (extra modes of ``b`` are ignored)."""
    if type(a) is tuple and type(b) is tuple:
        # tuple tuple: every mode of a less than the matching mode of b
        if len(a) > len(b):
            return False
        return all(elem_less(x, y) for x, y in zip(a, b))
    if type(a) is tuple or type(b) is tuple:
        raise RankError(f"elem_less of {fmt(a)} and {fmt(b)}: one is a tuple, the other an int")
    # int int
    return a < b


def elem_scale(a, b):
    """``a`` scaled leaf by leaf by the products of the matching modes of ``b``."""
    if type(a) is tuple:
        # tuple: element-wise
        if type(b) is not tuple or len(a) != len(b):
            raise RankError(f"elem_scale needs {fmt(b)} to have the rank of {fmt(a)}")
        return tuple(elem_scale(x, y) for x, y in zip(a, b))
    # int: scale by the whole of b
    return a * product(b)


def inner_product(a, b):
    """Sum of the products of matching leaves of two congruent IntTuples."""
    if type(a) is tuple and type(b) is tuple:
        # tuple tuple
        if len(a) != len(b):
            raise RankError(f"inner_product needs equal ranks, got {fmt(a)} and {fmt(b)}")
        r = 0
        for x, y in zip(a, b):
            r = r + inner_product(x, y)
        return r
    if type(a) is tuple or type(b) is tuple:
        raise RankError(f"inner_product of {fmt(a)} and {fmt(b)}: profiles differ")
    # int int
    return a * b


def is_congruent(a, b):
    """True if ``a`` and ``b`` have the same profile (same nesting, same ranks)."""
    return _congruent(_shape_of(a), _shape_of(b))


def _congruent(a, b):
    if type(a) is tuple and type(b) is tuple:
        return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b))
    return (type(a) is tuple) == (type(b) is tuple)


def is_weakly_congruent(a, b):
    """True if the profile of ``a`` is a coarsening of the profile of ``b`` (``a <= b``)."""
    a, b = _shape_of(a), _shape_of(b)
    if type(a) is tuple and type(b) is tuple:
        # tuple tuple: same rank, weakly congruent mode by mode
        return len(a) == len(b) and all(is_weakly_congruent(x, y) for x, y in zip(a, b))
    # int anything: true; tuple int: false
    return type(a) is not tuple


def is_compatible(a, b):
    """True if every coordinate of shape ``a`` is a coordinate of shape ``b`` (``a <= b``)."""
    a, b = _shape_of(a), _shape_of(b)
    if type(a) is tuple and type(b) is tuple:
        # tuple tuple: same rank, compatible mode by mode
        return len(a) == len(b) and all(is_compatible(x, y) for x, y in zip(a, b))
    if type(a) is tuple:
        # tuple int
        return False
    # int anything: a equals the size of b
    return a == product(b)


def evenly_divides(shape, tiler):
    """True if ``tiler`` (an IntTuple or layout per mode) tiles ``shape`` with no remainder."""
    if type(tiler) is tuple:
        if type(shape) is not tuple or len(tiler) > len(shape):
            return False
        return all(evenly_divides(s, t) for s, t in zip(shape, tiler))
    t = size(tiler)
    return size(shape) == t * size(ceil_div(product(shape), t))


def filter_zeros_tuple(a, b=None):
    """Replace the modes of ``b`` paired with a static 0 in ``a`` by 1s (``b`` defaults to ``a``)."""
    if b is None:
        b = a
    if type(a) is tuple:
        return tuple(filter_zeros_tuple(x, y) for x, y in zip(a, b))
    if type(a) is int and a == 0:
        return _ones_like(b)
    return b


def _ones_like(x):
    if type(x) is tuple:
        return tuple(_ones_like(e) for e in x)
    return 1
