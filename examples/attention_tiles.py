"""The warpgroup pieces both attention kernels (:mod:`examples.attention`, :mod:`examples.attention_backward`)
are made of: their thread layout (two consumer warpgroups, then a producer warpgroup; the forward may take three
consumer warpgroups), a head's rows in the token-major views, the shared-memory MMA with its operand fences, and
the store of a warpgroup's 64 output rows through 128B-swizzled shared memory (``stmatrix``, then 16-byte chunks
or one TMA store)."""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync
from cute_py.nvgpu import warp as warp_ops
from cute_py.nvgpu import warpgroup as wg
from cute_py.utils import LayoutEnum
from cute_py.utils import hopper_helpers as hh

__all__ = ["BLOCK_M", "MMA_THREADS", "ATTN_THREADS", "PRODUCER_WARP", "head_rows", "fence_operands", "gemm_ss",
           "store_barriers", "store_rows", "stage_rows", "out_stage_layout", "store_box"]

BLOCK_M = 128                      # query rows per forward CTA: 64 per consumer warpgroup
MMA_THREADS = 256                  # the two consumer warpgroups
ATTN_THREADS = MMA_THREADS + 128   # + the producer warpgroup
PRODUCER_WARP = MMA_THREADS // 32


@cute.jit
def head_rows(t, offset, batch, head, tokens_mode=0):
    """The ``(rows, D)`` matrix of ``head`` of sequence ``batch`` in a ``(tokens, D, heads, batch)`` view (or the
    ``(D, rows)`` one of a ``(D, tokens, heads, batch)`` view, ``tokens_mode`` 1), from token ``offset`` on."""
    return cute.domain_offset((offset, 0) if tokens_mode == 0 else (0, offset), t[None, None, head, batch])


@cute.jit
def fence_operands(acc_s, acc_o):
    """Pin the accumulators' registers (no definition of them moves past this point) and fence them for the MMAs
    that follow (``wgmma.fence``)."""
    arch.warpgroup_fence_operand(acc_s)
    arch.warpgroup_fence_operand(acc_o)
    wg.fence()


@cute.jit
def gemm_ss(mma, acc, tA, tB, stage, k_extent, a_stage=None):
    """``acc = A B^T`` over ``k_extent`` with both operands from shared memory (``tB`` of stage ``stage`` and
    ``tA`` of stage ``a_stage``, or unstaged with ``None``): the first k-block overwrites the accumulators."""
    mma.set(wg.Field.ACCUMULATE, False)
    for kb in cute.range_constexpr(k_extent // 16):
        a = tA[None, None, kb] if a_stage is None else tA[None, None, kb, a_stage]
        b = tB[None, None, kb] if stage is None else tB[None, None, kb, stage]
        cute.gemm(mma, acc, a, b, acc)
        mma.set(wg.Field.ACCUMULATE, True)


def store_barriers(groups):
    """The named barriers of :func:`store_rows` for ``groups`` consumer warpgroups: ``(all of them, the first
    warpgroup's own)``, clear of the ping-pong turns (1 .. groups) and of the backward's (1, 6 and 7)."""
    return (5, 3) if groups == 2 else (8, 9)


@cute.jit
def store_rows(acc_o, sQ, gO, group, wtid, rows, d):
    """Store a consumer warpgroup's 64 output rows: its values (rounded to the output type) go into its rows of
    ``sQ``'s shared memory, in the swizzled layout of :func:`out_stage_layout` (:func:`stage_rows`), then each
    thread copies 16-byte chunks of the rows that lie in the sequence (``row < rows``) to ``gO``. (Stored from the
    accumulators directly, the stores' predicates would put accumulator registers on divergent paths, which makes
    the assembler serialise the kernel's WGMMAs.)

    The rows of one warpgroup overlap the swizzled rows of another's operand in ``sQ``, so the consumer warpgroups
    (one per 64 rows of ``sQ``) first meet (:func:`store_barriers`): none has an MMA left that reads ``sQ``."""
    groups = cute.size(sQ, mode=[0]) // 64
    everyone, own = store_barriers(groups)
    arch.barrier(barrier_id=everyone, number_of_threads=128 * groups)
    dt = gO.element_type
    sO = cute.make_tensor(cute.recast_ptr(sQ.iterator, dtype=dt), out_stage_layout(dt, d, groups))
    buf = sO[None, None, group]
    stage_rows(acc_o, buf, wtid)
    arch.barrier(barrier_id=own + group, number_of_threads=128)
    chunk = 128 // dt.width                       # elements of a 16-byte chunk
    per_row = d // chunk
    wide = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dt, num_bits_per_copy=128)
    for i in cute.range_constexpr(64 * per_row // 128):
        c = wtid + 128 * i
        row = c // per_row
        if group * 64 + row < rows:
            frag = cute.make_fragment(chunk, dt)
            cute.copy(wide, cute.local_tile(buf[row, None], (chunk,), (c % per_row,)), frag)
            cute.copy(wide, frag, cute.local_tile(gO[group * 64 + row, None], (chunk,), (c % per_row,)))


@cute.jit
def stage_rows(acc_o, buf, wtid):
    """A consumer warpgroup's ``64 x d`` accumulators (rounded to ``buf``'s type) into ``buf``
    (:func:`out_stage_layout`'s ``(64, d)``) by ``stmatrix.x4``: warp ``w`` of the warpgroup stores rows
    ``16 w ..`` in 16-column steps, a thread's values ``8 q .. 8 q + 7`` being its pairs of columns ``16 q ..``
    (rows ``r``, ``r + 8``; columns ``+0``, ``+8``), the accumulator layout of ``m64nNk16``."""
    dt = buf.element_type
    d = cute.size(buf, mode=[1])
    stm = cute.make_copy_atom(warp_ops.StMatrix8x8x16bOp(False, 4), dt)
    lane, warp = wtid % 32, wtid // 32
    srow = buf[16 * warp + 8 * (lane // 8 % 2) + lane % 8, None]
    for q in cute.range_constexpr(d // 16):
        out = cute.make_fragment(8, dt)
        for v in cute.range_constexpr(8):
            x = acc_o[8 * q + v]
            out[v] = x.to(dt) if hasattr(x, "to") else x      # (the zeros of a block that saw no key are constants)
        cute.copy(stm, out, cute.local_tile(srow, (8,), (2 * q + lane // 16,)))


def out_stage_layout(dt, d, groups):
    """The shared memory a warpgroup's output rows go through on their way to global memory: ``(64, d, groups)``,
    a warpgroup's 64 rows in the 128B-swizzled layout of a row-major epilogue tile (``make_smem_layout_epi``), as
    a TMA store reads them, and so that the ``stmatrix`` of :func:`stage_rows` and the 16-byte reads of
    :func:`store_rows` meet no bank conflict (row-major rows of 128 bytes or more put a warp's eight rows on the
    same banks: eight-way conflicts)."""
    return hh.make_smem_layout_epi(dt, LayoutEnum.ROW_MAJOR, (64, d), groups)


@cute.jit
def store_box(acc_o, sO, group, wtid, rows, tma_out, shared_with_q):
    """Store a consumer warpgroup's 64 output rows by one TMA store: its values (rounded to the output type) go
    into its buffer ``sO[None, None, group]`` (:func:`out_stage_layout`, by :func:`stage_rows`), then thread 0
    of the warpgroup stores the ``(64, d)`` box ``tma_out[1]`` if any of its rows lies in the sequence (``rows``:
    the CTA's rows in it; the box's edge clips at the sequence's end, and a box wholly past it is not in the tiled
    output: its tile index would wrap onto the first rows).

    With ``shared_with_q`` the buffers lie over ``sQ``, whose swizzled rows of one warpgroup overlap another's
    buffer: the consumer warpgroups first meet (no MMA reads ``sQ`` any more), and the store has read its box
    before the function returns (Q's next tile or the CTA's end may follow). A buffer of its own is reused by the
    warpgroup's next tile: its thread 0 first waits until the last store has read it; after the last tile the
    caller waits (:func:`arch.tma_store_wait` with ``read``) before the CTA ends."""
    groups = cute.size(sO, mode=[2])
    everyone, own = store_barriers(groups)
    if shared_with_q:
        arch.barrier(barrier_id=everyone, number_of_threads=128 * groups)
    else:
        if wtid == 0:
            arch.tma_store_wait(0, read=True)     # the last tile's store has read this buffer
        arch.barrier(barrier_id=own + group, number_of_threads=128)
    buf = sO[None, None, group]
    stage_rows(acc_o, buf, wtid)
    arch.fence_view_async_shared()                # the rows, before the TMA unit reads them
    arch.barrier(barrier_id=own + group, number_of_threads=128)
    store_o, box = tma_out
    if wtid == 0 and rows > group * 64:
        tOsO, tOgO = cpasync.tma_partition(store_o, 0, cute.Layout(1), cute.group_modes(buf, 0, 2),
                                           cute.group_modes(box, 0, 2))
        cute.copy(store_o, tOsO, tOgO)
        arch.tma_store_arrive()
        if shared_with_q:
            arch.tma_store_wait(0, read=True)
