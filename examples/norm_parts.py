"""The pieces of a row's normalisation that the norm kernels share (``norms``, ``layernorm_loop``): a thread's
deviations from the row's mean, the row's mean and squared deviations in one exchange, the affine store, the
per-row statistics."""

import operator

import cute_py as cute

from .row_chunks import holds, load_at, load_chunk, matrix_row, store_chunk
from .row_reduce import add, chunk_index, load_row, rearm, row_reduce
from .row_math import elements, fold

__all__ = ["store_stats", "thread_mask", "store_affine", "deviations", "every_thread_full", "mean_m2", "sum_m2",
           "mean_and_squares", "vector_chunks"]


@cute.jit
def store_stats(r, m, t, rank, pairs):
    """``out[r] = value`` for each ``(out, value)`` of ``pairs``, by one thread of the row."""
    if r < m and t == 0 and rank == 0:
        for out, value in pairs:
            out[r] = value.to(out.element_type)


def thread_mask(plan, k, t, rank, lo=0):
    """1.0 on this thread's elements of chunk ``k`` inside the row, 0.0 outside it (``None``: all inside); ``lo``:
    where a shifted row starts in its window (``row_chunks.window``), before which elements lie outside too."""
    if plan.full(k):
        return None
    first = chunk_index(plan, k, t, rank) * plan.vec
    frag = cute.make_rmem_tensor((plan.vec,), cute.Float32)
    for j in cute.range_constexpr(plan.vec):
        frag[j] = cute.where(holds(first + j, lo, plan.n), 1.0, 0.0)
    return frag.load()


def vector_chunks(v, lo, plan, t, rank):
    """This thread's chunks of the 1-D ``v`` (a norm's ``w`` or ``b``) at its row's positions, as Float32 TensorSSA
    (0 outside the row): ``load_row``'s where the row is not shifted (``lo`` 0), else element by element at the
    shifted row's positions (``row_chunks.load_at``)."""
    if type(lo) is int and lo == 0:
        return load_row(v, plan, t, rank)
    out = []
    for k in cute.range_constexpr(plan.chunks):
        frag = cute.make_rmem_tensor((plan.vec,), v.element_type)
        load_at(v, lo, chunk_index(plan, k, t, rank), plan.vec, plan.n, frag, 0.0)
        out.append(frag.load().to(cute.Float32))
    return out


@cute.jit
def store_affine(y, w, b, dev, inv, r, plan, t, rank, lo=0):
    """Row ``r`` of ``y`` (inside it): ``dev(k) * inv * w + b`` (``b`` ``None``: ``dev(k) * inv * w``) for each of
    this thread's chunks ``k`` (``dev(k)``: its values, Float32 TensorSSA), its chunks of ``w`` and ``b`` loaded one
    at a time beside the store (at a shifted row's positions where ``lo`` is its start in its window)."""
    if r < y.shape[0]:
        row = matrix_row(y, r, plan)
        for k in cute.range_constexpr(plan.chunks):
            at = chunk_index(plan, k, t, rank)
            wf = _chunk_at(w, at, k, plan, lo)
            bf = _chunk_at(b, at, k, plan, lo) if cute.const_expr(b is not None) else None
            out = cute.make_rmem_tensor((plan.vec,), y.element_type)
            v = dev(k) * inv * wf.load().to(cute.Float32)
            if cute.const_expr(b is not None):
                v = v + bf.load().to(cute.Float32)
            out.store(v.to(y.element_type))
            store_chunk(row, at, plan.vec, plan.n, out, plan.full(k))


def _chunk_at(v, at, k, plan, lo):
    """A fragment of chunk ``at`` (this thread's ``k``-th) of the 1-D ``v`` at the row's positions (0 outside the
    row)."""
    frag = cute.make_rmem_tensor((plan.vec,), v.element_type)
    if cute.const_expr(type(lo) is int and lo == 0):
        load_chunk(v, at, plan.vec, plan.n, frag, 0.0, plan.full(k))
    else:
        load_at(v, lo, at, plan.vec, plan.n, frag, 0.0, plan.full(k))
    return frag


def deviations(xs, mu, plan, t, rank, lo=0):
    """``x - mu`` for each of this thread's chunks ``xs``, 0 outside the row (:func:`thread_mask`)."""
    ds = []
    for k in cute.range_constexpr(plan.chunks):
        d = xs[k] - mu
        mask = thread_mask(plan, k, t, rank, lo)
        if cute.const_expr(mask is not None):
            d = d * mask
        ds.append(d)
    return ds


def every_thread_full(plan):
    """Whether every thread of a row holds ``chunks * vec`` of its elements (none past its end)."""
    return plan.n == plan.chunks * plan.cluster * plan.group * plan.vec


def mean_m2(xs, plan, red, slot=0, phase=0, first=True):
    """The row's mean and sum of squared deviations in one exchange (``red``'s ``slot`` in ``phase``; ``first``:
    the kernel's first, as :func:`row_reduce`): each thread's sum and its own values' squared deviations from their
    mean, combined pairwise by Chan, Golub and LeVeque's update (exact in real arithmetic, and as stable as two
    passes up to the rounding of the combines)."""
    es = elements(xs)
    c = len(es)
    s = fold(es, operator.add)
    mt = s * (1.0 / c)
    q = fold([(e - mt) * (e - mt) for e in es], operator.add)
    total, sq = row_reduce((s, q), sum_m2(c), red, slot, phase, first, counted=True)
    return total / plan.n, sq


def sum_m2(c):
    """The combine of ``(sum, M2)`` pairs of parts of ``na * c`` and ``nb * c`` values: ``M2 = M2a + M2b + (sa * eb -
    sb * ea) ** 2 / (ea * eb * (ea + eb))`` with ``ea``, ``eb`` the parts' counts; symmetric where the counts are
    equal (a butterfly's two lanes get the same bits)."""
    def combine(a, b, na, nb):
        ea, eb = na * c, nb * c
        d = a[0] * float(eb) - b[0] * float(ea)
        return a[0] + b[0], a[1] + b[1] + d * d * (1.0 / (float(ea) * eb * (ea + eb)))
    return combine


def mean_and_squares(read, plan, red, t, rank, slots=(0, 1), phase=0, looped=False, lo=0):
    """The row's mean and sum of squared deviations from it in two exchanges (``red``'s ``slots`` in ``phase``):
    the sum of this thread's chunks ``read(False)``, then of the squared deviations of ``read(True)`` (the same
    values, read again where they are staged) from the row's mean. ``looped``: inside a loop over rows (no exchange
    is the kernel's first; each slot is re-armed after its wait); ``lo``: a shifted row's start
    (:func:`thread_mask`)."""
    s = 0.0
    for v in read(False):
        s = s + v.reduce(cute.ReductionOp.ADD, 0.0, 0)
    (total,) = row_reduce((s,), add, red, slots[0], phase, not looped)
    if looped:
        rearm(red, slots[0])
    mu = total / plan.n
    q = 0.0
    for d in deviations(read(True), mu, plan, t, rank, lo):
        q = q + (d * d).reduce(cute.ReductionOp.ADD, 0.0, 0)
    (sq,) = row_reduce((q,), add, red, slots[1], phase, False)
    if looped:
        rearm(red, slots[1])
    return mu, sq
