"""The consumer warpgroups of the attention forward (``examples.attention``): a warpgroup's 64 query rows of a tile,
from the products with each key block and the online softmax to the output and the log-sum-exp.

A tile's steps, each with the MMAs of one ping-pong turn:

- the first: ``S = Q K^T`` of the last key block alone (the key blocks run last to first), then its softmax;
- one per earlier block: that block's ``S`` with ``O += P V`` of the block before, the softmax of ``S`` while
  ``P V`` is in flight (:func:`key_blocks`);
- the last: ``O += P V`` of the first block, then the output (:func:`attention_output.finish`).

:func:`consume` runs one tile's steps in that order. On a persistent grid whose tiles all see a key, with Q in two
buffers (:func:`consume_overlapped`), a warpgroup's last turn of a tile also issues the first ``S`` of its next
tile, and the output of the tile is stored while that product is in flight: each tile but the CTA's first starts
with its first product done, and the tensor cores have work while a warpgroup stores its rows.

A warpgroup skips the steps of the key blocks none of its rows sees (:func:`own_blocks`): rows past the queries
(the last tile's later warpgroups) and, with the mask, blocks past the diagonal of its last row (those the tile's
later rows see). It still waits for and releases those blocks and passes their turns (:func:`idle_steps`), so that
the tensor cores serve the other warpgroups alone. Measured (H200, bf16, 16k tokens; the same bits): d=64 without
the mask 1.06-1.08x at 512 and 1k rows, with it 1.02-1.06x at 2k-8k; d=256 with the mask 1.01-1.04x at 512-2k
(benchmarks/RESULTS.md).

Where the causal diagonal runs from corner to corner of each tile's first key block (:func:`halves_diagonal`), the
first warpgroup's rows see only the first half of that block: its first product of each tile covers that half alone
(:func:`half_operands`), and its softmax reads only those values. The warpgroup then runs a copy of the consumer of
its own; the results are the same bits.
"""

import math

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import warpgroup as wg
from cute_py.utils import hopper_helpers as hh

from .attention_steps import pass_turn, pv, rescale_moved, softmax, to_p, turn
from .attention_output import finish, store_lse, store_out
from .attention_tiles import fence_operands, gemm_ss, head_rows

__all__ = ["kv_blocks", "unmasked_blocks", "consume_tile", "consume", "consume_overlapped", "fragments",
           "issue_first", "last_turn", "own_blocks", "idle_steps", "row_fragments", "halves_diagonal", "half_operands",
           "HALVES_DIMS"]


@cute.jit
def kv_blocks(m_block, seqlen_q, seqlen_k, block_n, causal, block_m):
    """The key blocks a query block of ``block_m`` rows sees: ``0 .. n`` (``n`` may be 0)."""
    n = (seqlen_k + block_n - 1) // block_n
    if causal:
        # the last row of the block sees keys up to row + seqlen_k - seqlen_q
        last = cute.min(seqlen_k, (m_block + 1) * block_m + seqlen_k - seqlen_q)
        n = cute.max(0, cute.min(n, (last + block_n - 1) // block_n))
    return n


@cute.jit
def unmasked_blocks(first_row, seqlen_q, seqlen_k, block_n, causal, n_blocks):
    """How many key blocks from block 0 on the query block sees whole: inside the keys and (causal) on or below
    the diagonal for its first row."""
    n = seqlen_k // block_n
    if causal:
        n = cute.min(n, cute.max(0, first_row + seqlen_k - seqlen_q + 1) // block_n)
    return cute.min(n, n_blocks)


@cute.jit
def fragments(mma_qk, mma_pv, sQ, sK, sV, tidx):
    """A consumer thread's operands and accumulators: ``(tSrQ, tSrK, tOrV, cS, acc_s, tOrP, acc_o)``, the
    descriptors of Q (with ``sQ``'s buffer mode, if any), K and V, the ``(row, col)`` of each S value, and the
    register fragments of S, P and O."""
    thr_qk = mma_qk.get_slice(tidx)
    thr_pv = mma_pv.get_slice(tidx)
    block_m = cute.size(sQ, mode=[0])
    block_n = cute.size(sK, mode=[0])
    d = cute.size(sQ, mode=[1])
    tSrQ = mma_qk.make_fragment_A(thr_qk.partition_A(sQ))          # (1, 1, D/16[, buffers]) descriptors
    tSrK = mma_qk.make_fragment_B(thr_qk.partition_B(sK))          # (1, 1, D/16, stages)
    tOrV = mma_pv.make_fragment_B(thr_pv.partition_B(sV))          # (1, 1, block_n/16, stages)
    cS = thr_qk.partition_C(cute.make_identity_tensor((block_m, block_n)))   # (row, col) of each S value
    acc_s = mma_qk.make_fragment_C(cS)
    tOrP = mma_pv.make_fragment_A(thr_pv.partition_A(cute.make_layout((block_m, block_n))))
    acc_o = mma_pv.make_fragment_C(thr_pv.partition_C(cute.make_identity_tensor((block_m, d))))
    return tSrQ, tSrK, tOrV, cS, acc_s, tOrP, acc_o


HALVES_DIMS = (64,)  # the head dimensions whose first warpgroup computes half of a tile's diagonal block


def halves_diagonal(causal, packed, seqlens, block_m, block_n, d):
    """Whether warpgroup 0 computes only the first half of every tile's first key block (the last one, on the causal
    diagonal): causal, tiles of ``block_m == block_n == 128``, sequence lengths known to the compile whose difference
    is a multiple of ``block_n``, and a head dimension of ``HALVES_DIMS``. The diagonal then runs from corner to
    corner of that block, and the warpgroup's 64 rows see at most its first 64 keys (fewer where the keys end inside
    the block). Measured (H200, causal, 16k tokens, the same bits as before): d=64 1.053x at 512 rows and 1.026x at
    1k; d=128 0.978-0.990x up to 2k and 1.001x at 4k, so d=128 keeps one consumer for both warpgroups
    (benchmarks/RESULTS.md)."""
    return (causal is True and not packed and block_m == 128 and block_n == 128 and d in HALVES_DIMS
            and all(type(s) is int for s in seqlens) and (seqlens[1] - seqlens[0]) % block_n == 0)


@cute.jit
def half_operands(sQ, sK, tidx):
    """The first ``S = Q K^T`` of a tile over the first half of its key block (:func:`halves_diagonal`):
    ``(mma, K's operand, acc)``, an MMA 64 keys wide, the descriptors of the first half of each K stage, and its
    accumulators (a thread's values in the order of the first half of ``acc_s``'s)."""
    dt = sQ.element_type
    block_m = cute.size(sQ, mode=[0])
    half = cute.size(sK, mode=[0]) // 2
    mma = hh.make_trivial_tiled_mma(dt, dt, wg.OperandMajorMode.K, wg.OperandMajorMode.K, cute.Float32,
                                    (block_m // 64, 1, 1), (64, half))
    thr = mma.get_slice(tidx)
    first = cute.local_tile(sK, (half, cute.size(sK, mode=[1]), cute.size(sK, mode=[2])), (0, 0, 0))
    acc = mma.make_fragment_C(thr.partition_C(cute.make_identity_tensor((block_m, half))))
    return mma, mma.make_fragment_B(thr.partition_B(first)), acc


@cute.jit
def _first_product(mma_qk, acc_s, tSrQ, tSrK, stage, q_buffer, half):
    """A tile's first ``S = Q K^T`` of the K block in ``stage``: over the whole block, or with ``half``
    (:func:`half_operands`) over its first half, into ``half``'s accumulators."""
    d = cute.size(tSrQ, mode=[2]) * 16
    if cute.const_expr(half is None):
        gemm_ss(mma_qk, acc_s, tSrQ, tSrK, stage, d, q_buffer)
    else:
        mma_h, tSrK_h, acc_h = half
        gemm_ss(mma_h, acc_h, tSrQ, tSrK_h, stage, d, q_buffer)


@cute.jit
def issue_first(mma_qk, acc_s, acc_o, tSrQ, tSrK, k_pipe, k_read, q_buffer, pingpong, group, groups, half=None):
    """The first step's MMAs: wait for the key block, take the turn, issue ``S = Q K^T`` (Q of buffer
    ``q_buffer``, or unbuffered with ``None``; over the first half of the block with ``half``) and pass the turn
    on."""
    k_pipe.consumer_wait(k_read)
    turn(pingpong, group)
    fence_operands(acc_s if half is None else half[2], acc_o)
    _first_product(mma_qk, acc_s, tSrQ, tSrK, k_read.index, q_buffer, half)
    wg.commit_group()
    pass_turn(pingpong, group, True, groups)


@cute.jit
def _first_softmax(acc_s, cS, k_pipe, k_read, rows, tile, half=None):
    """The first step's end: wait for its ``S``, release the key block and run its softmax (``rows``: the
    running maxima and sums and the correction factors; with ``half``, over the first half of the block, the
    other half's probabilities 0)."""
    row_max, row_sum, corr = rows
    n_blocks, block_n, first_row, seqlen_q, seqlen_k, causal, scale_log2 = tile
    wg.wait_group(0)
    live = None
    if cute.const_expr(half is None):
        arch.warpgroup_fence_operand(acc_s)
    else:
        acc_h = half[2]
        arch.warpgroup_fence_operand(acc_h)
        live = cute.size(acc_h)
        for v in cute.range_constexpr(live):
            acc_s[v] = acc_h[v]
    k_pipe.consumer_release(k_read)
    k_read.advance()
    softmax(acc_s, cS, row_max, row_sum, corr, n_blocks - 1, block_n, first_row, seqlen_q, seqlen_k, causal,
            scale_log2, True, live)


@cute.jit
def key_blocks(mma_qk, mma_pv, ops, k_pipe, v_pipe, k_read, v_read, rows, tile, q_buffer, pingpong, group,
               groups, own_rows=False):
    """The steps of the key blocks between the first and the last: the blocks that need the mask come first (the
    key blocks run last to first); the loop over them and the loop over the others are traced apart, so that no
    branch on the mask lies between the MMAs (the assembler would serialise them). With ``own_rows`` the blocks
    that need it are those of the warpgroup's own rows, else of the tile's: later warpgroups of a causal tile then
    take fewer steps with the mask. Measured (H200, bf16, 16k tokens; the same bits): d=64 with the mask
    (tiles of 192 rows) 1.03x at 2k and 1.02x at 4k, d=256 1.00-1.01x; on the persistent grid's overlapped tiles of
    d=128 with the mask, where the count is the same, 0.97-1.00x, so :func:`consume_overlapped` keeps the tile's
    (benchmarks/RESULTS.md)."""
    tSrQ, tSrK, tOrV, cS, acc_s, tOrP, acc_o = ops
    row_max, row_sum, corr = rows
    n_blocks, block_n, first_row, seqlen_q, seqlen_k, causal, scale_log2 = tile
    d = cute.size(tSrQ, mode=[2]) * 16
    whole = unmasked_blocks(first_row + 64 * group if own_rows else first_row, seqlen_q, seqlen_k, block_n, causal,
                            n_blocks)
    bounds = (1, cute.max(1, n_blocks - whole), n_blocks)
    for phase in cute.range_constexpr(2):
        for i in range(bounds[phase], bounds[phase + 1]):
            # S of block j and O += P V of block j + 1 in flight together; the softmax of S runs while P V does
            j = n_blocks - 1 - i
            k_pipe.consumer_wait(k_read)
            v_pipe.consumer_wait(v_read)
            turn(pingpong, group)
            to_p(acc_s, tOrP)          # P of block j + 1, converted just before the MMAs that read it
            fence_operands(acc_s, acc_o)
            gemm_ss(mma_qk, acc_s, tSrQ, tSrK, k_read.index, d, q_buffer)
            wg.commit_group()
            pv(mma_pv, acc_o, tOrP, tOrV, v_read.index, block_n)
            wg.commit_group()
            pass_turn(pingpong, group, True, groups)
            wg.wait_group(1)
            arch.warpgroup_fence_operand(acc_s)
            softmax(acc_s, cS, row_max, row_sum, corr, j, block_n, first_row, seqlen_q, seqlen_k, causal,
                    scale_log2, phase == 0)
            wg.wait_group(0)
            arch.warpgroup_fence_operand(acc_o)
            # (released only now: the release's signalling lanes branch, and no branch may lie in the flight of
            # an MMA reading registers, or the assembler serialises every MMA)
            k_pipe.consumer_release(k_read)
            k_read.advance()
            v_pipe.consumer_release(v_read)
            v_read.advance()
            rescale_moved(acc_o, corr)


@cute.jit
def last_turn(mma_pv, ops, v_pipe, v_read, block_n, pingpong, group, groups, carried, next_s=None, half=None):
    """The last step's MMAs, once the V block is in: ``O += P V`` of the first key block, then, with ``next_s``
    (``(mma_qk, K stage, Q buffer)``), the next tile's first ``S = Q K^T`` (over the first half of its block with
    ``half``); the wait for ``P V`` alone, and the V block released. ``carried``: the turns run on from tile to
    tile, so the turn passes as soon as the MMAs are issued; else after they are done (the last warpgroup's pass
    left out)."""
    tSrQ, tSrK, tOrV, _, acc_s, tOrP, acc_o = ops
    turn(pingpong, group)
    to_p(acc_s, tOrP)
    fence_operands(acc_s, acc_o)
    if cute.const_expr(half is not None and next_s is not None):
        arch.warpgroup_fence_operand(half[2])
    pv(mma_pv, acc_o, tOrP, tOrV, v_read.index, block_n)
    wg.commit_group()
    if cute.const_expr(next_s is not None):
        mma_qk, k_stage, q_buffer = next_s
        _first_product(mma_qk, acc_s, tSrQ, tSrK, k_stage, q_buffer, half)
        wg.commit_group()
    if cute.const_expr(carried):
        pass_turn(pingpong, group, True, groups)   # the next warpgroup goes on (into the next tile)
    wg.wait_group(0 if next_s is None else 1)
    arch.warpgroup_fence_operand(acc_o)
    if cute.const_expr(not carried):
        pass_turn(pingpong, group, False, groups)  # (a branch: not while the MMA reading P is in flight)
    v_pipe.consumer_release(v_read)
    v_read.advance()


@cute.jit
def own_blocks(n_blocks, row0, seqlen_q, seqlen_k, block_n, causal):
    """How many of its tile's ``n_blocks`` key blocks (from block 0 on) the warpgroup whose 64 rows start at
    ``row0`` sees: none where its rows all lie past the queries or (causal) above the first key, else those up to
    its last row's diagonal."""
    n = cute.min(n_blocks, kv_blocks(row0 // 64, seqlen_q, seqlen_k, block_n, causal, 64))
    return cute.math.select(row0 < seqlen_q, n, 0)


@cute.jit
def idle_steps(k_pipe, v_pipe, k_read, v_read, steps, pingpong, group, groups, carried, whole):
    """The first ``steps`` steps of a tile for a warpgroup whose rows see none of their key blocks: it waits for
    and releases each key and value block and takes and passes each turn as a warpgroup that sees them does
    (:func:`issue_first`, :func:`key_blocks`), and issues no MMA, so that the tensor cores serve the others alone.
    With ``whole`` these are all the tile's steps, and the last turn (:func:`last_turn`'s, passed as ``carried``
    says) follows; else the value block of the next step is released too (the warpgroup's own first step, next,
    reads only a key block)."""
    k_pipe.consumer_wait(k_read)
    turn(pingpong, group)
    pass_turn(pingpong, group, True, groups)
    k_pipe.consumer_release(k_read)
    k_read.advance()
    for _ in range(1, steps):
        k_pipe.consumer_wait(k_read)
        v_pipe.consumer_wait(v_read)
        turn(pingpong, group)
        pass_turn(pingpong, group, True, groups)
        k_pipe.consumer_release(k_read)
        k_read.advance()
        v_pipe.consumer_release(v_read)
        v_read.advance()
    v_pipe.consumer_wait(v_read)
    if cute.const_expr(whole):
        turn(pingpong, group)
        pass_turn(pingpong, group, carried, groups)
    v_pipe.consumer_release(v_read)
    v_read.advance()


@cute.jit
def _init_rows(rows):
    """The running maxima (``-inf``) and sums (0) of a thread's two rows, at the start of a tile."""
    row_max, row_sum, _ = rows
    for r in cute.range_constexpr(2):
        row_max[r] = -math.inf
        row_sum[r] = 0.0


@cute.jit
def row_fragments():
    """A thread's running maxima, sums and correction factors: its S values lie in two rows."""
    return (cute.make_fragment(2, cute.Float32), cute.make_fragment(2, cute.Float32),
            cute.make_fragment(2, cute.Float32))


@cute.jit
def consume_tile(args, smems, tidx, k_read, v_read, m_block, head, batch, seq, q_phase, own_o, half=None):
    """A consumer warpgroup's part of one tile (:func:`consume`), with its TMA store box of the output."""
    (mma_qk, mma_pv, k_pipe, v_pipe, o, lse, cu_q, cu_k, head_ratio, causal, scale_log2, seqlens, pingpong, store_o,
     tma_o) = args
    sQ, sK, sV, sO, q_bar, q_free = smems
    q_start, _, seqlen_q, seqlen_k, q_batch, _ = seq
    d = cute.size(sQ, mode=[1])
    block_n = cute.size(sK, mode=[0])
    block_m = cute.size(sQ, mode=[0])
    out_box = _out_box(store_o, tma_o, batch, head, m_block, block_m, d)
    n_blocks = kv_blocks(m_block, seqlen_q, seqlen_k, block_n, causal, block_m)
    consume(mma_qk, mma_pv, sQ, sK, sV, q_bar, k_pipe, v_pipe, o, lse, tidx, m_block, head, q_start,
            q_batch, seqlen_q, seqlen_k, n_blocks, block_n, causal, scale_log2, cu_q is not None, pingpong,
            (store_o, out_box, not (q_free is not None and own_o)),
            (k_read, v_read, q_phase, q_free, sO, q_free is not None and own_o), half)


@cute.jit
def _out_box(store_o, tma_o, batch, head, m_block, block_m, d):
    """The warpgroup's 64 rows of out, the box of its TMA store (``None`` without one)."""
    out_box = None
    if cute.const_expr(store_o is not None):
        out_box = cute.local_tile(head_rows(tma_o, 0, batch, head), (64, d),
                                  (block_m // 64 * m_block + arch.make_warp_uniform(arch.warp_idx()) // 4, 0))
    return out_box


@cute.jit
def consume(mma_qk, mma_pv, sQ, sK, sV, q_bar, k_pipe, v_pipe, o, lse, tidx, m_block, head, q_start, q_batch,
            seqlen_q, seqlen_k, n_blocks, block_n, causal, scale_log2, packed, pingpong, tma_out, tile_state,
            half=None):
    """A consumer warpgroup's rows of one tile (see the module): the products with each key block, the online
    softmax, the output and the log-sum-exp. ``tile_state``: the pipelines' read states, the phase of ``q_bar`` to
    wait for, and (persistent) ``q_free``, on which every consumer thread arrives once it is done with ``sQ``, with
    ``sO``, the shared memory the output goes through (``sQ`` itself, or a buffer of its own: then ``q_free`` is
    arrived on as soon as the last ``S = Q K^T`` is done). ``half``: the first key block over its first half
    (:func:`half_operands`)."""
    d = cute.size(sQ, mode=[1])
    block_m = cute.size(sQ, mode=[0])
    groups = block_m // 64
    k_read, v_read, q_phase, q_free, sO, early = tile_state
    ops = fragments(mma_qk, mma_pv, sQ, sK, sV, tidx)
    tSrQ, tSrK, _, cS, acc_s, _, acc_o = ops
    gO = cute.local_tile(head_rows(o, q_start, q_batch, head), (block_m, d), (m_block, 0))
    acc_o.fill(0.0)
    rows = row_fragments()
    row_max, row_sum, corr = rows
    _init_rows(rows)
    first_row = m_block * block_m
    group = arch.make_warp_uniform(arch.warp_idx()) // 4      # the consumer warpgroup: 0 .. groups - 1
    arch.mbarrier_wait(q_bar, q_phase)
    carried = q_free is not None        # persistent: the turns run on from tile to tile
    if cute.const_expr(not carried):
        if n_blocks > 0 and pingpong and group == groups - 1:
            arch.barrier_arrive(barrier_id=1, number_of_threads=2 * 128)         # warpgroup 0 issues first
    n_own = own_blocks(n_blocks, first_row + 64 * group, seqlen_q, seqlen_k, block_n, causal)
    if n_own > 0:
        if n_own < n_blocks:
            # the tile's first blocks lie past the diagonal of every row of the warpgroup
            idle_steps(k_pipe, v_pipe, k_read, v_read, n_blocks - n_own, pingpong, group, groups, carried, False)
        tile = (n_own, block_n, first_row, seqlen_q, seqlen_k, causal, scale_log2)
        issue_first(mma_qk, acc_s, acc_o, tSrQ, tSrK, k_pipe, k_read, None, pingpong, group, groups, half)
        _first_softmax(acc_s, cS, k_pipe, k_read, rows, tile, half)
        key_blocks(mma_qk, mma_pv, ops, k_pipe, v_pipe, k_read, v_read, rows, tile, None, pingpong, group, groups,
                   True)
        if cute.const_expr(early):
            arch.mbarrier_arrive(q_free)        # every S = Q K^T of the tile is done
        v_pipe.consumer_wait(v_read)
        last_turn(mma_pv, ops, v_pipe, v_read, block_n, pingpong, group, groups, carried)
        finish(acc_o, row_max, row_sum, corr, cS, sO, gO, lse, tidx, group, first_row, seqlen_q, q_start,
               q_batch, head, packed, scale_log2, d, tma_out)
    else:
        if n_blocks > 0:
            idle_steps(k_pipe, v_pipe, k_read, v_read, n_blocks, pingpong, group, groups, carried, True)
        # no key to see (or no query row): out 0, lse -inf
        for r in cute.range_constexpr(2):
            row, _ = cS[2 * r]
            q_row = first_row + row
            if tidx % 4 == 0 and q_row < seqlen_q:
                store_lse(lse, -math.inf, packed, head, q_start, q_batch, q_row)
        if cute.const_expr(early):
            arch.mbarrier_arrive(q_free)
        store_out(acc_o, sO, gO, group, tidx % 128, seqlen_q - first_row, d, tma_out)
    if cute.const_expr(q_free is not None and not early):
        arch.mbarrier_arrive(q_free)            # the output has gone through sQ (a TMA store has read it)


@cute.jit
def consume_overlapped(args, smems, tidx, ops, rows, k_read, v_read, m_block, head, batch, seq, done, has_next,
                       half=None):
    """A consumer warpgroup's part of one tile of a persistent grid whose tiles all see a key, Q in two buffers and
    the output in a buffer of its own (see the module), after ``done`` tiles of its CTA: tile ``i`` has Q in
    buffer ``i % 2``, loaded in the phase ``i // 2 % 2`` of that buffer's ``q_bar``. The tile's first ``S`` is in
    flight on entry; with ``has_next`` the warpgroup's last turn issues the first ``S`` of its next tile (Q of the
    other buffer, once loaded), whose wait is the next call's. Without, it issues the same product on what the shared
    memory holds, without waiting for a load: no load comes, and the caller waits for it and drops it (so that a
    CTA's last tile is traced as the others are, and no branch lies between the MMAs). ``half``: every tile's
    first key block over its first half (:func:`half_operands`)."""
    mma_qk, mma_pv, k_pipe, v_pipe, o, lse, _, _, _, causal, scale_log2, _, pingpong, store_o, tma_o = args
    sQ, sK, sV, sO, q_bar, q_free = smems
    _, _, _, cS, acc_s, _, acc_o = ops
    row_max, row_sum, corr = rows
    q_start, _, seqlen_q, seqlen_k, q_batch, _ = seq
    d = cute.size(sQ, mode=[1])
    block_n = cute.size(sK, mode=[0])
    block_m = cute.size(sQ, mode=[0])
    groups = block_m // 64
    group = arch.make_warp_uniform(arch.warp_idx()) // 4
    n_blocks = kv_blocks(m_block, seqlen_q, seqlen_k, block_n, causal, block_m)
    first_row = m_block * block_m
    buffer = done % 2
    tile = (n_blocks, block_n, first_row, seqlen_q, seqlen_k, causal, scale_log2)
    gO = cute.local_tile(head_rows(o, q_start, q_batch, head), (block_m, d), (m_block, 0))
    acc_o.fill(0.0)
    _init_rows(rows)
    _first_softmax(acc_s, cS, k_pipe, k_read, rows, tile, half)
    key_blocks(mma_qk, mma_pv, ops, k_pipe, v_pipe, k_read, v_read, rows, tile, buffer, pingpong, group, groups)
    arch.mbarrier_arrive(q_free + buffer)       # every S = Q K^T of the tile is done
    nxt = (done + 1) % 2
    v_pipe.consumer_wait(v_read)
    if has_next:                                # (no MMA is in flight here)
        arch.mbarrier_wait(q_bar + nxt, (done + 1) // 2 % 2)
        k_pipe.consumer_wait(k_read)
    last_turn(mma_pv, ops, v_pipe, v_read, block_n, pingpong, group, groups, True, (mma_qk, k_read.index, nxt),
              half)
    out_box = _out_box(store_o, tma_o, batch, head, m_block, block_m, d)
    finish(acc_o, row_max, row_sum, corr, cS, sO, gO, lse, tidx, group, first_row, seqlen_q, q_start, q_batch,
           head, False, scale_log2, d, (store_o, out_box, False))
