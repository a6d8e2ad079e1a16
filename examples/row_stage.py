"""Row inputs staged through shared memory: each thread copies its chunks of a row (or of a weight vector) with
``cp.async`` into slots of shared memory of its own, and reads them back where it needs them.

A row kernel that holds its row in registers from the load to the store keeps the registers busy across its
reductions, and one that loads its weights after the reductions waits for them with nothing in flight. Staging
frees both: the copies need no registers while in flight, a weight vector's copies are issued at the start and
overlap the row's loads, and the staged values are read from shared memory in each pass that needs them.

Thread ``tx``'s chunk ``k`` (``plan.vec`` elements, the same chunks as :func:`row_reduce.load_row` gives it) goes to
slot ``k * plan.threads + tx``: a thread reads only the slots it wrote, so ``cp.async.wait_group`` alone orders
each copy before its reads (no barrier). A weight vector that every row of a CTA reads may be staged once a CTA
(``shared``): each row group copies its turn of the chunks, and a barrier orders the copies before the reads. The
one chunk that straddles the row's end is loaded at once (element by element under its predicate) and stored into
its slot, as is every chunk narrower than 32 bits (``cp.async`` moves 4, 8 or 16 bytes); the other chunks of the
row's last round of chunks, inside the row, are copied by ``cp.async`` like the rest. A ``ShiftedRow``'s
(``row_chunks``) chunk that holds its start goes through registers as the one that holds its end does, and a
chunk wholly outside the row is filled.
"""

from dataclasses import replace

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync

from .row_chunks import VECTOR_BITS, ShiftedRow, inside, load_chunk, outside, whole_chunks, window
from .row_reduce import ONE_INPUT, chunk_index, plan_rows
from .row_shift import SHORT_SHIFTED_CTAS, short_shifted_ctas

__all__ = ["Staged", "stage", "staged_rows", "staged_bytes", "wait_staged", "thread_slot", "staged_halves",
           "halves_plan", "halves_ctas", "STAGE_MIN_BITS", "HALVES_CLUSTER", "HALVES_VALUES", "HALVES_WIDE",
           "SHORT_HALVES_CTAS"]

STAGE_MIN_BITS = 32  # the narrowest cp.async


def staged_rows(plan):
    """Whether a row kernel on ``plan`` stages its row inputs: rows over a cluster (measured faster there:
    benchmarks/RESULTS.md); short rows, several to a CTA, keep them in registers."""
    return plan.cluster > 1


HALVES_CLUSTER = 4  # the smallest cluster whose 16-bit rows are staged and reduced by halves
HALVES_VALUES = 80  # values of a row a thread takes where its rows are staged by halves
HALVES_WIDE = 160  # the most values a thread of 16 CTAs of 128 threads may take where its rows are staged by halves


def staged_halves(plan, dtype):
    """Whether a one-input row kernel (the softmax and cross-entropy forward passes) copies a thread's chunks into
    shared memory and reduces each half of them on its own, their pairs combined (fewer values live at once, so
    more CTAs an SM): 16-bit rows over a cluster of ``HALVES_CLUSTER`` CTAs or more, or shifted rows of one CTA
    (``RowPlan.shifted``; at ``SHORT_HALVES_CTAS`` CTAs an SM; the softmax's where a row takes 64 threads or more:
    ``softmax_rows.forward_staged``), in chunks that ``cp.async`` copies. Measured for
    cross-entropy (H200, bf16): 0.76-0.78 -> 0.96-0.97 of the copy ceiling at 262144, 0.80 -> 0.91 at 131072,
    0.90-0.97 -> 0.98-1.00 at 65536, 0.99 -> 1.05 at 32768, 0.82 -> 0.96 at 40000, 0.80 -> 0.92 at 50304; slower for
    Float32 rows (1.03 -> 0.86 at 262144: 64 KiB a CTA staged). Shifted rows of one CTA, in registers at four CTAs
    an SM -> staged at six: cross-entropy 0.64 -> 0.77 at 2049, 0.65 -> 0.82 at 4097, 0.67 -> 0.77 at 8193, 0.81 ->
    0.82 at 12289; softmax 0.80 -> 0.94, 0.80 -> 0.92, 0.82 -> 0.90 and 0.72 -> 0.90 (benchmarks/RESULTS.md)."""
    wide = plan.cluster >= HALVES_CLUSTER or (plan.cluster == 1 and bool(plan.shifted))
    return wide and plan.chunks >= 2 and dtype.width == 16 and plan.vec * dtype.width >= STAGE_MIN_BITS


SHORT_HALVES_CTAS = 6  # CTAs an SM of shifted rows of one CTA staged by halves (at 8, 40 -> 32 registers: spills)


def halves_ctas(plan, staged, most_chunks):
    """The CTAs an SM ``row_shift.short_shifted_ctas`` gives a one-input kernel's ``plan`` of shifted rows of one
    CTA (``most_chunks`` chunks a thread at most): ``SHORT_HALVES_CTAS`` where the kernel stages them by halves
    (``staged``: :func:`staged_halves`, or a kernel's own rule within it), else ``SHORT_SHIFTED_CTAS``."""
    return short_shifted_ctas(plan, most_chunks, SHORT_HALVES_CTAS if staged else SHORT_SHIFTED_CTAS)


def halves_plan(what, n, vec, dtype, shifted=0, wide=2 * ONE_INPUT):
    """The plan of a one-input row kernel that stages by halves where it can (:func:`staged_halves`), for rows of
    ``n`` elements of ``dtype`` in chunks of ``vec``: ``plan_rows``'s at ``ONE_INPUT`` values a thread (rows that
    16 CTAs of 128 threads hold only at 128 values take them so: measured faster at 262144 bf16, 0.66 of the copy
    ceiling against 0.60 with CTAs of 256 threads), refusing what it refuses; where that plan stages its rows by
    halves, the plan at ``HALVES_VALUES`` values a thread (rows that 16 CTAs of 128 threads hold only at more: at
    up to ``wide``), if it stages them by halves too: the staged row holds no registers, so each thread may take 10
    chunks, and the cluster fewer CTAs. Measured for cross-entropy (H200, bf16, of the copy ceiling): 40000 1.00 ->
    1.05 (4 CTAs instead of 5), 50304 0.93 -> 1.06, 70000 0.91 -> 1.04, 102400 0.92 -> 1.02, 128256 0.90 -> 0.98,
    151936 0.94 -> 1.02, 65536 1.025 -> 1.03; 12 chunks a thread 0.99-1.04 (benchmarks/RESULTS.md). ``shifted``:
    plans of shifted rows (``row_reduce.RowPlan``'s ``shifted``)."""
    plan = plan_rows(what, n, vec, ONE_INPUT, wide=2 * ONE_INPUT, shifted=shifted)
    if staged_halves(plan, dtype):
        more = plan_rows(what, n, vec, HALVES_VALUES, wide=wide, shifted=shifted)
        if staged_halves(more, dtype):
            return more
    return plan


def thread_slot(buf, plan, k, tx):
    """Thread ``tx``'s slot of its chunk ``k`` in the shared-memory buffer ``buf`` (``plan.vec`` elements)."""
    return cute.local_tile(buf, (plan.vec,), (k * plan.threads + tx,))


class Staged:
    """A shared-memory buffer of this thread's chunks of one row of ``dtype`` (a 1-D tensor of ``plan.n``
    elements), filled by :meth:`load` and read by :meth:`values`; it may be loaded again with another row once this
    thread has used the values it read.

    ``shared``: one buffer for all ``plan.rows`` row groups of the CTA (a weight vector every row reads), chunk ``k``
    of index ``t`` in a group in slot ``k * plan.group + t``, copied by the group ``k % plan.rows`` alone; every
    thread reads it after :func:`wait_staged` and a barrier of the CTA (the slots it reads were copied by others).

    ``straddle``: a ``ShiftedRow``'s 16-byte chunks that hold its start or end are copied by ``cp.async`` too
    (:func:`_copy_straddling`), not through registers (a synchronous load in every row's copies); the reader must
    take the start's elements before the row as 0 (they are the previous row's)."""

    def __init__(self, plan, dtype, shared=False, straddle=False):
        self.plan, self.dtype, self.shared, self.straddle = plan, dtype, shared, straddle
        self.tx, _, _ = arch.thread_idx()
        self.bits = plan.vec * dtype.width
        # (plan, tx) that place this thread's slots by thread_slot's rule: a shared buffer has one group's slots
        self.place = (plan, self.tx)
        if shared:
            self.place = (replace(plan, rows=1), self.tx % plan.group)
        size = plan.chunks * self.place[0].threads * plan.vec
        self.buf = arch.SmemAllocator().allocate_tensor(dtype, cute.Layout(size), 16)

    def slot(self, k):
        """This thread's slot of its chunk ``k`` (``plan.vec`` elements of shared memory)."""
        sp, lane = self.place
        return thread_slot(self.buf, sp, k, lane)

    def load(self, row, t, rank, fill=0.0):
        """Copy this thread's chunks of ``row`` (where ``shared``, those of its group's turn): the full ones by
        ``cp.async`` (not committed, not waited for); the one holding the row's end (``fill`` past it) and chunks
        narrower than 32 bits through registers. ``self``."""
        plan = self.plan
        copied = self.bits >= STAGE_MIN_BITS
        atom = None
        if copied:
            mode = cpasync.LoadCacheMode.GLOBAL if self.bits == VECTOR_BITS else cpasync.LoadCacheMode.ALWAYS
            atom = cute.make_copy_atom(cpasync.CopyG2SOp(mode), self.dtype, min(self.bits, VECTOR_BITS))
        sp, lane = self.place
        for k in cute.range_constexpr(plan.chunks):
            at = chunk_index(plan, k, t, rank)
            if cute.const_expr(self.shared and plan.rows > 1):
                _load_slot_if(self.tx // plan.group == k % plan.rows, atom, row, self.buf, sp, k, at, lane, fill)
            elif cute.const_expr(self.straddle and copied and self.bits == VECTOR_BITS and not plan.full(k)
                                 and fill == 0.0 and isinstance(row, ShiftedRow)):
                _copy_straddling(atom, row, self.buf, sp, k, at, lane)
            else:
                _load_slot(atom, row, self.buf, sp, k, at, lane, fill)
        return self

    def values(self):
        """This thread's chunks as Float32 TensorSSA, read from shared memory (after :func:`wait_staged`)."""
        return [self.raw(k).to(cute.Float32) for k in range(self.plan.chunks)]

    def raw(self, k):
        """This thread's chunk ``k`` in its own type, read from shared memory (after :func:`wait_staged`)."""
        return self.slot(k).load()


def staged_bytes(plan, dtype):
    """The shared memory of one :class:`Staged` of ``dtype`` on ``plan``."""
    return plan.chunks * plan.threads * plan.vec * dtype.width // 8


def _load_slot(atom, row, buf, plan, k, at, tx, fill):
    """Chunk ``at`` of ``row`` into thread ``tx``'s slot ``k`` of ``buf`` (``plan`` places the slots): by
    ``cp.async`` (``atom``; ``None`` for chunks narrower than 32 bits, through registers), the chunk that may hold
    the row's end as :func:`_copy_or_load`."""
    if cute.const_expr(atom is not None and plan.full(k)):
        _copy_chunk(atom, row, buf, plan, k, at, tx)
    elif cute.const_expr(atom is not None):  # the chunks that hold the row's end: whole ones by cp.async too
        _copy_or_load(atom, row, buf, plan, k, at, tx, fill)
    else:  # a chunk too narrow for cp.async: through registers
        _load_through_registers(row, buf, plan, k, at, tx, fill, plan.full(k))


@cute.jit
def _load_slot_if(mine, atom, row, buf, plan, k, at, tx, fill):
    if mine:
        _load_slot(atom, row, buf, plan, k, at, tx, fill)


def _copy_chunk(atom, row, buf, plan, k, at, tx):
    """``cp.async`` of chunk ``at`` of ``row`` into thread ``tx``'s slot ``k`` (in pieces of at most 128 bits)."""
    pieces = max(1, plan.vec * row.element_type.width // VECTOR_BITS)
    piece = plan.vec // pieces
    src = cute.local_tile(window(row)[0], (plan.vec,), (at,))
    dst = thread_slot(buf, plan, k, tx)
    for h in cute.range_constexpr(pieces):
        cute.copy(atom, cute.local_tile(src, (piece,), (h,)), cute.local_tile(dst, (piece,), (h,)))


@cute.jit
def _copy_or_load(atom, row, buf, plan, k, at, tx, fill):
    """Chunk ``at`` of ``row`` into thread ``tx``'s slot ``k``: by ``cp.async`` where it lies inside the row, else
    element by element through registers (``fill`` outside the row)."""
    if _whole_inside(row, plan, at):
        _copy_chunk(atom, row, buf, plan, k, at, tx)
    else:
        _fill_or_load(row, buf, plan, k, at, tx, fill)


@cute.jit
def _fill_or_load(row, buf, plan, k, at, tx, fill):
    """Chunk ``at`` of ``row``, not wholly inside it, into thread ``tx``'s slot ``k``: ``fill`` where it lies outside
    the row, else element by element through registers (``fill`` outside the row)."""
    if cute.const_expr(whole_chunks(plan.n, plan.vec, row)):  # past the row's end
        thread_slot(buf, plan, k, tx).fill(fill)
    elif outside(at * plan.vec, plan.vec, window(row)[1], plan.n):
        thread_slot(buf, plan, k, tx).fill(fill)
    else:
        _load_through_registers(row, buf, plan, k, at, tx, fill, False)


@cute.jit
def _copy_straddling(atom, row, buf, plan, k, at, tx):
    """Chunk ``at`` of the ``ShiftedRow`` ``row`` into thread ``tx``'s slot ``k`` by ``cp.async`` (``Staged``'s
    ``straddle``), a chunk that holds one of the row's ends included: the one that holds its start whole (the
    elements before it are the previous row's, or the gap before the row: inside the matrix, for the row starts past
    its base, and the reader must take them as 0), the one that holds its end with the bytes past it zero-filled
    (``src_size``: nothing past the row is read); one that holds both ends through registers, one outside it 0."""
    view, lo = window(row)
    first = at * plan.vec
    end = lo + plan.n
    if first + plan.vec <= end and first + plan.vec > lo:
        _copy_chunk(atom, row, buf, plan, k, at, tx)
    elif first >= lo and first < end:
        size = (end - first) * (row.element_type.width // 8)
        arch.cp_async_shared_global(thread_slot(buf, plan, k, tx).iterator, view.iterator + first, VECTOR_BITS // 8,
                                    cpasync.LoadCacheMode.GLOBAL, cp_size=size)
    else:  # outside the row, or holding both its ends
        _fill_or_load(row, buf, plan, k, at, tx, 0.0)


def _whole_inside(row, plan, at):
    """Whether chunk ``at`` lies inside ``row`` (``row_chunks.inside``)."""
    lo = window(row)[1]
    if type(lo) is int and lo == 0:
        return (at + 1) * plan.vec <= plan.n
    return inside(at * plan.vec, plan.vec, lo, plan.n)


def _load_through_registers(row, buf, plan, k, at, tx, fill, full):
    frag = cute.make_rmem_tensor((plan.vec,), row.element_type)
    load_chunk(row, at, plan.vec, plan.n, frag, fill, full)
    thread_slot(buf, plan, k, tx).store(frag.load())


def stage(rows, plan, t, rank, fill=0.0, shared=False):
    """:class:`Staged` of each of ``rows`` (``shared``: once a CTA), their copies committed as one ``cp.async``
    group."""
    staged = [Staged(plan, row.element_type, shared).load(row, t, rank, fill) for row in rows]
    arch.cp_async_commit_group()
    return staged


def wait_staged(pending=0):
    """Wait until at most the ``pending`` most recent :func:`stage` groups of this thread are still in flight."""
    arch.cp_async_wait_group(pending)
