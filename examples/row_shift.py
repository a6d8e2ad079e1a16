"""The rules of shifted rows (``row_chunks.ShiftedRow``): which row tensors a kernel reads through windows that start
on a 16- to 128-byte boundary before each row (:func:`shifted_vector`, :func:`shift_chunks`), the plan that does
(:func:`plan_for`), and the CTAs an SM its kernels ask for (:func:`shifted_ctas_per_sm`)."""

import cute_py as cute

from .row_chunks import VECTOR_BITS
from .row_reduce import row_vector

__all__ = ["plan_for", "over_cluster", "shifted_vector", "shift_chunks", "shifted_ctas_per_sm", "short_shifted_ctas",
           "SHIFT_CHUNKS", "SHORT_SHIFTED_CTAS"]


def plan_for(tensors, make, takes=None, narrow=None):
    """The plan ``make(vec, shifted)`` for the row tensors ``tensors`` of a kernel that takes shifted rows: with the
    chunk of :func:`shifted_vector` and the window of :func:`shift_chunks` where there is one and a plan holds the
    shifted row (up to ``SHIFT_CHUNKS * vec - 1`` elements longer), else with :func:`row_vector`'s chunk of
    ``narrow`` (by default ``tensors``: the tensors a kernel reads in chunks when its rows are not shifted) and
    ``shifted=0`` (``make``'s error, if any, is that plan's). ``takes``: which shifted plans the kernel takes (a
    predicate of the plan, such as :func:`over_cluster`; ``None``: every one), the others keeping the unshifted
    chunks."""
    vec = shifted_vector(tensors)
    if vec is not None:
        try:
            plan = make(vec, shift_chunks(tensors, vec))
        except cute.CuteValueError:
            plan = None
        if plan is not None and (takes is None or takes(plan)):
            return plan
    return make(row_vector(tensors if narrow is None else narrow), 0)


def over_cluster(plan):
    """Whether ``plan``'s rows go over a cluster of CTAs (:func:`plan_for`'s ``takes`` for kernels whose shifted rows
    were measured slower in one CTA)."""
    return plan.cluster > 1


SHIFT_CHUNKS = 8  # the most chunks of a shifted row's window boundary: 128 bytes of 16-byte chunks, a cache line


def shift_chunks(tensors, vec):
    """The chunks of the boundary the windows of shifted rows start on (``RowPlan.shifted``): the most, up to
    ``SHIFT_CHUNKS``, that the row strides of ``tensors`` agree modulo (each row must start equally far past the
    boundary in every tensor). Windows on 128-byte boundaries measured 1.00-1.08x those on 16-byte ones (H200, bf16,
    32001-100003: a warp's 512 bytes then start on a cache line)."""
    s = SHIFT_CHUNKS
    while s > 1 and len({t.layout.stride[0] % (s * vec) for t in tensors}) > 1:
        s //= 2
    return s


def shifted_ctas_per_sm(plan):
    """The CTAs an SM a kernel asks for on a ``shifted`` plan: as many as its rows' unshifted kernels get with the
    registers they take (88-96 a thread in CTAs of 128 threads, 39-40 in CTAs of 512: 5 and 3 CTAs); left free, the
    shifted kernels took 101-128 and 56 (the element-by-element path of the chunks at a row's ends), one CTA an SM
    fewer. ``None`` for other plans (free), and for plans of one chunk a thread more (``RowPlan.extra``: softmax
    backward's at 262143 spills 36-104 bytes at 3 CTAs of 512 threads)."""
    if not plan.shifted or plan.extra:
        return None
    return {128: 5, 512: 3}.get(plan.threads)


SHORT_SHIFTED_CTAS = 4  # CTAs of 256 threads an SM on shifted rows of one CTA (:func:`short_shifted_ctas`)


def short_shifted_ctas(plan, most_chunks=None, ctas=SHORT_SHIFTED_CTAS):
    """The CTAs an SM a one-input kernel that reduces its row once (the softmax and cross-entropy forwards) asks for
    on ``plan``: ``ctas`` (by default ``SHORT_SHIFTED_CTAS``) for shifted rows of one CTA in CTAs of 256 threads
    whose threads keep at most ``most_chunks`` chunks (``None``: any), where the assembler left free takes 65-72
    registers a thread (three CTAs an SM) and the rows' extra instructions (their first and last chunks element by
    element, 1.7x the instructions of whole rows at bf16 4097) leave the schedulers short of warps; else
    :func:`shifted_ctas_per_sm`'s. Measured (H200, bf16, of the copy ceiling): softmax forward 4097 0.72 -> 0.82,
    5001 0.74 -> 0.85, 8193 0.73 -> 0.82, 2049 0.70 -> 0.80, but 12289 (7 chunks) 0.72 -> 0.66; cross-entropy
    forward 3001 0.67 -> 0.79, 6001 0.67 -> 0.79, 12289 0.73 -> 0.82, 4097 and 8193 unchanged, but 16001 (8 chunks)
    0.62 -> 0.53 (benchmarks/RESULTS.md). Rows staged in shared memory hold fewer registers and ask for more
    (``row_stage.SHORT_HALVES_CTAS``)."""
    short = plan.shifted and plan.cluster == 1 and plan.threads == 256
    if short and (most_chunks is None or plan.chunks <= most_chunks):
        return ctas
    return shifted_ctas_per_sm(plan)


def shifted_vector(tensors):
    """The chunk of a ``shifted`` plan (``row_reduce.RowPlan``) for the row tensors ``tensors`` of one kernel: 128
    bits of the narrowest type, where :func:`row_vector` gives less because of the row strides alone; ``None`` where it
    gives that much already, or where a shifted row would not help or not be exact: a tensor that is not a matrix of
    static row stride, a base not 16-byte aligned (the windows start on 16-byte boundaries), or row strides that
    differ modulo the chunk (each row must start equally far past a boundary in every tensor)."""
    cap = VECTOR_BITS // min(t.element_type.width for t in tensors)
    if row_vector(tensors) == cap:
        return None
    strides = [tuple(t.layout.stride) if isinstance(t.layout.stride, tuple) else (t.layout.stride,)
               for t in tensors]
    if any(len(s) != 2 or type(s[0]) is not int for s in strides):
        return None
    if any(t.engine.alignment < VECTOR_BITS // 8 for t in tensors):
        return None
    if len({s[0] % cap for s in strides}) != 1:
        return None
    return cap
