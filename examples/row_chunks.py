"""How a chunk of a row moves between global memory and a thread's registers (the row kernels' ``row_reduce``,
``row_stage``, ``norms``, ``softmax_rows``, ``cross_entropy``).

A row is cut into chunks of ``vec`` elements; chunk ``c`` holds the row's elements ``[c * vec, c * vec + vec)``. A
chunk inside the row moves with 128-bit accesses (or the widest its alignment allows); a chunk that holds the row's
end goes element by element under a predicate, and one past it is filled (no access: only the chunks that straddle
an end run the element-by-element path, which the kernel holds for every chunk that may).

Where a matrix's row stride is not a whole number of chunks (an odd vocabulary of 16-bit logits, say), its rows
start at different distances past a 16-byte boundary. A :class:`ShiftedRow` then counts the chunks from a boundary
at or before the row's start (of ``plan.window`` elements: 1 to 8 chunks, up to a 128-byte cache line): its ``n``
elements are elements ``[lo, lo + n)`` of a window that starts on the boundary, ``lo`` known when the kernel runs
(``0 <= lo < plan.window``, the same for every tensor of the kernel, whose row strides agree modulo the window:
``row_shift.shift_chunks``). Every chunk inside the row then moves whole, in 128-bit accesses, where chunks of the
row itself could only move element by element; the two chunks that hold its ends go element by element, and those
wholly before or past it are filled.
"""

import cute_py as cute
from cute_py.atom import CopyUniversalOp

__all__ = ["ShiftedRow", "window", "matrix_row", "inside", "outside", "holds", "load_chunk", "load_at", "store_chunk",
           "whole_chunks", "VECTOR_BITS"]

VECTOR_BITS = 128


class ShiftedRow:
    """A row of a matrix as the elements ``[lo, lo + n)`` of ``view``, a window that starts on a boundary of one or
    more chunks (``lo``: the row's start past it, a run-time value). Indexing it indexes the row: ``row[j]`` is
    ``view[lo + j]``."""

    def __init__(self, view, lo):
        self.view, self.lo = view, lo

    @property
    def element_type(self):
        return self.view.element_type

    def __getitem__(self, j):
        return self.view[self.lo + j]

    def __setitem__(self, j, value):
        self.view[self.lo + j] = value


def window(row):
    """``(the tensor the chunks index, where the row starts in it)``: a ShiftedRow's window and start, or a plain
    row tensor and 0."""
    if isinstance(row, ShiftedRow):
        return row.view, row.lo
    return row, 0


def matrix_row(x, r, plan):
    """Row ``r`` (inside the matrix) of ``x`` as ``plan``'s chunks count it: ``x[r, None]``, or with
    ``plan.shifted`` a :class:`ShiftedRow` whose window starts at the boundary of ``plan.window`` elements at or
    before the row (the matrix's base is 16-byte aligned: ``row_shift.shifted_vector``) and spans every chunk of
    the plan. The offset is taken in 64 bits where the matrix holds 2**31 elements or more (32-bit offsets take
    fewer registers: measured 96 against 128 a thread for softmax's rows of 50257 bf16)."""
    if not plan.shifted:
        return x[r, None]
    unit = plan.window
    stride = x.layout.stride[0]
    lo = ((r % unit) * (stride % unit)) % unit                # (r * stride) % unit without overflow
    if x.shape[0] * stride + unit >= 2 ** 31:                 # (64-bit offsets only where 32 bits could overflow)
        r = r.to(cute.Int64)
    start = cute.assume(r * stride - lo, divby=unit)
    view = cute.make_tensor(x.iterator + start, cute.make_layout(_positions(plan) * plan.vec))
    return ShiftedRow(view, lo)


def _positions(plan):
    """Chunks of a window that cover every chunk index a thread of ``plan`` may take (``row_reduce.chunk_index``):
    only those inside the row are accessed, but a static index must lie inside the window's shape."""
    rounds = plan.chunks * plan.cluster * plan.group
    return max(rounds, plan.cluster * plan.slab + rounds // plan.cluster) if plan.slabs else rounds


def _vector_copy(src, dst, row, chunk, vec):
    """Copy chunk ``chunk`` of ``vec`` elements between ``src`` and ``dst`` (one of them ``row``, the other a register
    fragment) in accesses of at most 128 bits."""
    piece = min(vec, VECTOR_BITS // row.element_type.width)
    atom = cute.make_copy_atom(CopyUniversalOp(), row.element_type, piece * row.element_type.width)
    for h in range(vec // piece):
        at = chunk * (vec // piece) + h
        s = cute.local_tile(src, (piece,), (at if src is row else h,))
        d = cute.local_tile(dst, (piece,), (at if dst is row else h,))
        cute.copy(atom, s, d)


def inside(first, vec, lo, n):
    """Whether the chunk from ``first`` (``vec`` elements of a window) lies inside the row ``[lo, lo + n)``."""
    if type(lo) is int and lo == 0:
        return first + vec <= n
    return (first >= lo) & (first + vec <= lo + n)


def outside(first, vec, lo, n):
    """Whether the chunk from ``first`` (``vec`` elements of a window) lies wholly outside the row ``[lo, lo + n)``:
    past its end, or, in a :class:`ShiftedRow`'s window, before its start."""
    if type(lo) is int and lo == 0:
        return first >= n
    return (first >= lo + n) | (first + vec <= lo)


@cute.jit
def load_chunk(row, chunk, vec, n, frag, fill, full):
    """``frag`` = elements ``[chunk * vec, chunk * vec + vec)`` of ``row``'s window (:func:`window`), ``fill`` outside
    the row's ``n`` elements; ``full``: the chunk is known to lie inside the row."""
    view, lo = window(row)
    if cute.const_expr(full):
        _vector_copy(view, frag, view, chunk, vec)
    else:
        first = chunk * vec
        if inside(first, vec, lo, n):
            _vector_copy(view, frag, view, chunk, vec)
        elif cute.const_expr(whole_chunks(n, vec, row)):  # no chunk straddles the end: this one lies past it
            frag.fill(fill)
        elif outside(first, vec, lo, n):
            frag.fill(fill)
        else:
            for j in cute.range_constexpr(vec):
                frag[j] = fill
                if holds(first + j, lo, n):
                    frag[j] = view[first + j]


@cute.jit
def load_at(v, lo, chunk, vec, n, frag, fill):
    """``frag`` = the elements of the 1-D ``v`` (a norm's ``w`` or ``b``) at the row positions of chunk ``chunk`` of a
    shifted row's window (``v[chunk * vec - lo + j]``), ``fill`` outside ``[0, n)``: element by element, since those
    positions start anywhere past a boundary of ``v``."""
    first = chunk * vec
    for j in cute.range_constexpr(vec):
        frag[j] = fill
        if holds(first + j, lo, n):
            frag[j] = v[first + j - lo]


@cute.jit
def store_chunk(row, chunk, vec, n, frag, full):
    """Elements ``[chunk * vec, chunk * vec + vec)`` of ``row``'s window = ``frag``, nothing outside the row."""
    view, lo = window(row)
    if cute.const_expr(full):
        _vector_copy(frag, view, view, chunk, vec)
    else:
        first = chunk * vec
        if inside(first, vec, lo, n):
            _vector_copy(frag, view, view, chunk, vec)
        elif cute.const_expr(not whole_chunks(n, vec, row)):
            if _touches(first, vec, lo, n):  # (a chunk outside the row stores nothing)
                for j in cute.range_constexpr(vec):
                    if holds(first + j, lo, n):
                        view[first + j] = frag[j]


def _touches(first, vec, lo, n):
    """Whether the chunk from ``first`` holds an element of the row ``[lo, lo + n)`` (not :func:`outside`)."""
    if type(lo) is int and lo == 0:
        return first < n
    return (first < lo + n) & (first + vec > lo)


def holds(i, lo, n):
    """Whether element ``i`` of a window belongs to the row ``[lo, lo + n)``."""
    if type(lo) is int and lo == 0:
        return i < n
    return (i >= lo) & (i < lo + n)


def whole_chunks(n, vec, row=None):
    """Whether rows of ``n`` elements (an int known to the compile) are whole chunks of ``vec`` (and ``row``, where
    given, is not a :class:`ShiftedRow`): then a chunk lies either inside a row or past its end, and no chunk needs
    element-by-element accesses."""
    return isinstance(n, int) and n % vec == 0 and not isinstance(row, ShiftedRow)
