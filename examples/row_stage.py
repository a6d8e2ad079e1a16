"""Row inputs staged through shared memory: each thread copies its chunks of a row (or of a weight vector) with
``cp.async`` into slots of shared memory of its own, and reads them back where it needs them.

A row kernel that holds its row in registers from the load to the store keeps the registers busy across its
reductions, and one that loads its weights after the reductions waits for them with nothing in flight. Staging
frees both: the copies need no registers while in flight, a weight vector's copies are issued at the start and
overlap the row's loads, and the staged values are read from shared memory in each pass that needs them.

Thread ``tx``'s chunk ``k`` (``plan.vec`` elements, the same chunks as :func:`row_reduce.load_row` gives it) goes to
slot ``k * plan.threads + tx``: a thread reads only the slots it wrote, so ``cp.async.wait_group`` alone orders
each copy before its reads (no barrier). The one chunk that straddles the row's end is loaded at once (element by
element under its predicate) and stored into its slot, as is every chunk narrower than 32 bits (``cp.async`` moves
4, 8 or 16 bytes); the other chunks of the row's last round of chunks, inside the row, are copied by ``cp.async``
like the rest.
"""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync

from .row_reduce import VECTOR_BITS, chunk_index, load_chunk, whole_chunks

__all__ = ["Staged", "stage", "staged_rows", "staged_bytes", "wait_staged", "thread_slot", "STAGE_MIN_BITS"]

STAGE_MIN_BITS = 32  # the narrowest cp.async


def staged_rows(plan):
    """Whether a row kernel on ``plan`` stages its row inputs: rows over a cluster (measured faster there:
    benchmarks/RESULTS.md); short rows, several to a CTA, keep them in registers."""
    return plan.cluster > 1


def thread_slot(buf, plan, k, tx):
    """Thread ``tx``'s slot of its chunk ``k`` in the shared-memory buffer ``buf`` (``plan.vec`` elements)."""
    return cute.local_tile(buf, (plan.vec,), (k * plan.threads + tx,))


class Staged:
    """A shared-memory buffer of this thread's chunks of one row of ``dtype`` (a 1-D tensor of ``plan.n``
    elements), filled by :meth:`load` and read by :meth:`values`; it may be loaded again with another row once this
    thread has used the values it read."""

    def __init__(self, plan, dtype):
        self.plan, self.dtype = plan, dtype
        self.tx, _, _ = arch.thread_idx()
        self.bits = plan.vec * dtype.width
        self.buf = arch.SmemAllocator().allocate_tensor(dtype, cute.Layout(plan.chunks * plan.threads * plan.vec), 16)

    def load(self, row, t, rank, fill=0.0):
        """Copy this thread's chunks of ``row``: the full ones by ``cp.async`` (not committed, not waited for); the
        one holding the row's end (``fill`` past it) and chunks narrower than 32 bits through registers. ``self``."""
        plan = self.plan
        copied = self.bits >= STAGE_MIN_BITS
        if copied:
            mode = cpasync.LoadCacheMode.GLOBAL if self.bits == VECTOR_BITS else cpasync.LoadCacheMode.ALWAYS
            atom = cute.make_copy_atom(cpasync.CopyG2SOp(mode), self.dtype, min(self.bits, VECTOR_BITS))
        for k in cute.range_constexpr(plan.chunks):
            at = chunk_index(plan, k, t, rank)
            if cute.const_expr(copied and plan.full(k)):
                _copy_chunk(atom, row, self.buf, plan, k, at, self.tx, self.bits)
            elif cute.const_expr(copied):  # the chunks that hold the row's end: whole ones by cp.async too
                _copy_or_load(atom, row, self.buf, plan, k, at, self.tx, self.bits, fill)
            else:  # a chunk too narrow for cp.async: through registers
                _load_through_registers(row, self.buf, plan, k, at, self.tx, fill, plan.full(k))
        return self

    def values(self):
        """This thread's chunks as Float32 TensorSSA, read from shared memory (after :func:`wait_staged`)."""
        return [self.raw(k).to(cute.Float32) for k in range(self.plan.chunks)]

    def raw(self, k):
        """This thread's chunk ``k`` in its own type, read from shared memory (after :func:`wait_staged`)."""
        return thread_slot(self.buf, self.plan, k, self.tx).load()


def staged_bytes(plan, dtype):
    """The shared memory of one :class:`Staged` of ``dtype`` on ``plan``."""
    return plan.chunks * plan.threads * plan.vec * dtype.width // 8


def _copy_chunk(atom, row, buf, plan, k, at, tx, bits):
    """``cp.async`` of chunk ``at`` of ``row`` into this thread's slot ``k`` (in pieces of at most 128 bits)."""
    pieces = max(1, bits // VECTOR_BITS)
    piece = plan.vec // pieces
    src = cute.local_tile(row, (plan.vec,), (at,))
    dst = thread_slot(buf, plan, k, tx)
    for h in cute.range_constexpr(pieces):
        cute.copy(atom, cute.local_tile(src, (piece,), (h,)), cute.local_tile(dst, (piece,), (h,)))


@cute.jit
def _copy_or_load(atom, row, buf, plan, k, at, tx, bits, fill):
    """Chunk ``at`` of ``row`` into this thread's slot ``k``: by ``cp.async`` where it lies inside the row, else
    element by element through registers (``fill`` past the row's end)."""
    if (at + 1) * plan.vec <= plan.n:
        _copy_chunk(atom, row, buf, plan, k, at, tx, bits)
    elif cute.const_expr(whole_chunks(plan.n, plan.vec)):  # past the row's end
        thread_slot(buf, plan, k, tx).fill(fill)
    else:
        _load_through_registers(row, buf, plan, k, at, tx, fill, False)


def _load_through_registers(row, buf, plan, k, at, tx, fill, full):
    frag = cute.make_rmem_tensor((plan.vec,), row.element_type)
    load_chunk(row, at, plan.vec, plan.n, frag, fill, full)
    thread_slot(buf, plan, k, tx).store(frag.load())


def stage(rows, plan, t, rank, fill=0.0):
    """:class:`Staged` of each of ``rows``, their copies committed as one ``cp.async`` group."""
    staged = [Staged(plan, row.element_type).load(row, t, rank, fill) for row in rows]
    arch.cp_async_commit_group()
    return staged


def wait_staged(pending=0):
    """Wait until at most the ``pending`` most recent :func:`stage` groups of this thread are still in flight."""
    arch.cp_async_wait_group(pending)
