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

__all__ = ["ShiftedRow", "window", "matrix_row", "inside", "outside", "holds", "load_chunk", "load_at", "pairs",
           "shift_in", "store_chunk", "whole_chunks", "VECTOR_BITS"]

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
def load_at(v, lo, chunk, vec, n, frag, fill, full=False, narrow=False):
    """``frag`` = the elements of the 1-D ``v`` (a norm's ``w`` or ``b``) at the row positions of chunk ``chunk`` of a
    shifted row's window (``v[chunk * vec - lo + j]``), ``fill`` outside ``[0, n)``; ``full``: the chunk is known to
    lie inside the row. Those positions start anywhere past a chunk boundary of ``v``. Where ``v``'s 16-bit elements
    move in pairs (:func:`pairs`, and a ``fill`` of 0) they are taken from the two chunks of ``v`` that hold them,
    whole chunks in 128-bit accesses, and shifted in registers (:func:`shift_in`); else, or with ``narrow`` (fewer
    registers), element by element (measured faster for Float32, RESULTS.md)."""
    if cute.const_expr(pairs(v, vec) and type(fill) in (int, float) and fill == 0 and not narrow):
        c = chunk - (lo >> (vec.bit_length() - 1))  # v's chunk that holds position chunk * vec - lo + s ...
        s = lo & (vec - 1)                           # ... at its element 0 (the chunk's first s come before it)
        low = cute.make_rmem_tensor((vec // 2,), cute.Int32)
        high = cute.make_rmem_tensor((vec // 2,), cute.Int32)
        low.fill(0)
        high.fill(0)
        if cute.const_expr(full):
            # inside the row: c starts at its position s >= 0, and the chunk before it ends at s - 1 < n, or is not
            # read where c is 0 (then s is 0: c's first element is the row's); only c may hold v's end
            words = cute.recast_tensor(v, cute.Int32)
            _vector_copy(words, low, words, cute.where(c >= 1, c - 1, 0), vec // 2)
            _load_words(v, c, vec, n, high)
        else:
            if c >= 1:
                _load_words(v, c - 1, vec, n, low)
            if c >= 0:
                _load_words(v, c, vec, n, high)
        shift_in(low, high, s, cute.recast_tensor(frag, cute.Int32))
    else:
        first = chunk * vec
        for j in cute.range_constexpr(vec):
            frag[j] = fill
            if holds(first + j, lo, n):
                frag[j] = v[first + j - lo]


def pairs(v, vec):
    """Whether :func:`load_at` reads the 1-D ``v`` in whole chunks of ``vec`` elements held as 32-bit words: 16-bit
    elements in chunks of 128 bits (the chunk of 16-bit rows; a Float32 row's chunk of 4 keeps the element-by-element
    reads) that start aligned for 128-bit accesses."""
    return v.element_type.width * vec == VECTOR_BITS == 16 * vec and v.engine.alignment * 8 >= VECTOR_BITS


@cute.jit
def _load_words(v, c, vec, n, words):
    """Chunk ``c >= 0`` of the 16-bit ``v`` as ``vec // 2`` 32-bit words (two elements each, the first in the low
    half; 0 past ``v``'s end): whole in 128-bit accesses, the chunk that holds ``v``'s end element by element."""
    first = c * vec
    if first + vec <= n:
        view = cute.recast_tensor(v, cute.Int32)
        _vector_copy(view, words, view, c, vec // 2)
    elif first < n:
        half = cute.recast_tensor(v, cute.Uint16)
        for i in cute.range_constexpr(vec // 2):
            word = cute.Int32(0)
            if first + 2 * i < n:
                word = half[first + 2 * i].to(cute.Int32)
            if first + 2 * i + 1 < n:
                word = word | (half[first + 2 * i + 1].to(cute.Int32) << 16)
            words[i] = word


def shift_in(low, high, s, out):
    """``out`` = 16-bit elements ``vec - s .. 2 * vec - s`` of ``low`` followed by ``high`` (fragments of ``vec //
    2`` 32-bit words, two elements each, the first in the low half; ``0 <= s < vec`` known when the kernel runs):
    the last ``s`` elements of ``low``, then the first ``vec - s`` of ``high``. The words move whole (a select for
    each bit of the shift), and a shift by an odd count then takes each word's halves from two words (``prmt``)."""
    words = cute.size(out)
    e = 2 * words - s
    t = [low[i] for i in range(words)] + [high[i] for i in range(words)]
    t = _shift(t, e >> 1, words, words + 1)
    pick = cute.where((e & 1) != 0, 0x5432, 0x3210)      # bytes 2-5 of a pair of words, or bytes 0-3
    for i in range(words):
        out[i] = cute.arch.prmt(t[i], t[i + 1], pick)


def _shift(t, by, most, need):
    """The first ``need`` values of ``t[by:]`` (``0 <= by <= most``, ``most`` a power of two; ``by`` known when the
    kernel runs): a shift by each bit of ``by`` in turn, the largest first, each a select of the values the later
    shifts still read."""
    bit = most
    while bit >= 1:
        keep = need + bit - 1
        moved = (by & bit) != 0
        t = [cute.where(moved, t[i + bit], t[i]) if i + bit < len(t) else t[i] for i in range(keep)] + t[keep:]
        bit //= 2
    return t[:need]


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
