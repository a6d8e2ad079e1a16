"""Kernel 14: attention on Hopper, ``O = softmax(scale * Q K^T) V`` with the log-sum-exp of each row.

::

    from examples import attention
    attention(q, k, v, out, lse)                          # q, out: (B, Sq, H, D); k, v: (B, Sk, Hkv, D)
    attention(q, k, v, out, lse, causal=True, softmax_scale=0.125)
    attention(q, k, v, out, lse, cu_seqlens_q=cq, cu_seqlens_k=ck, max_seqlen_q=n)   # packed: (T, H, D)

The layout is FlashAttention's: ``q`` and ``out`` are ``(batch, seqlen_q, heads, head_dim)``, ``k`` and ``v``
``(batch, seqlen_k, kv_heads, head_dim)`` with ``heads`` a multiple of ``kv_heads`` (grouped-query attention: query
head ``h`` reads key/value head ``h // (heads // kv_heads)``), the head dimension contiguous; ``lse`` is
``(batch, heads, seqlen_q)`` fp32, ``lse[b, h, i] = log(sum_j exp(scale * q_i . k_j))`` over the keys row ``i``
sees. With ``cu_seqlens_q`` / ``cu_seqlens_k`` (Int32 tensors of ``batch + 1`` increasing offsets) the sequences
are packed along one token mode instead: ``q``, ``out`` ``(total_q, heads, head_dim)``, ``k``, ``v``
``(total_k, kv_heads, head_dim)``, ``lse`` ``(heads, total_q)``; sequence ``b`` is rows ``cu[b] .. cu[b+1]``, and
``max_seqlen_q`` bounds its lengths (it sizes the grid). Inputs are BFloat16 or Float16 (all four alike), head
dimensions 64, 128 or 256; the products and the softmax are computed in fp32 and ``out`` is rounded once.

``causal`` masks key ``j`` from query ``i`` where ``j > i + seqlen_k - seqlen_q`` (the diagonal aligned to the
bottom right, as FlashAttention does from 2.1 on; ``torch``'s ``is_causal`` aligns it to the top left, which is the
same where the lengths are equal). A row that sees no key (a causal row above the diagonal when seqlen_q >
seqlen_k, or an empty key sequence) has ``out`` 0 and ``lse`` ``-inf``.

Each CTA computes a ``block_m x D`` block of one head's output (a tile: 128 rows, or 192 at d=64), or, on a
persistent grid (``persistent``), the tiles of ``examples.attention_schedule``'s order from its index on, one SM's
worth of CTAs apart: the producer loads a tile's Q once the consumers are done with the last one's (mbarrier
``q_free``; where shared memory has room the output goes through a buffer of its own, and Q is free once the tile's
last ``S`` is done), and the K and V rings run on from tile to tile. Where there are more tiles than CTAs,
shared memory has room for two Q buffers besides, the CTA has two consumer warpgroups and the sequences have
lengths known to the compile whose every query block sees a key (``attention_args.check_overlap``), the producer
loads each tile's Q into the buffer the tile before last used, and a consumer warpgroup's last turn of a tile
issues the first ``S`` of its next tile: the tile's output is stored while that product runs
(``examples.attention_consumer``). It has ``block_m / 64`` consumer warpgroups, then a producer warpgroup:

- the last warpgroup is the producer: it gives registers back (``setmaxnreg``, 24 a thread) and its first warp
  loads the CTA's Q tile once (TMA, its own mbarrier), then the K and V tiles of ``block_n`` keys through
  two ``PipelineTmaAsync`` rings (K and V apart, so the product with K starts before V has arrived), last key
  block first;
- the others are the consumers (240 registers a thread, 160 with three), 64 query rows each. A consumer warpgroup
  computes ``S = Q K^T`` of the last key block (``m64n{block_n}k16`` WGMMAs from shared memory) and its softmax;
  then, for each earlier block, it issues that block's ``S`` together with ``O += P V`` of the block before
  (``m64n{D}k16`` WGMMAs with A from registers, V read MN-major), waits for ``S`` only, and runs its softmax
  while ``P V`` is in flight: the mask (only in the loop over the blocks that reach past the keys or the
  diagonal, traced apart from the loop over the others), the rows' running maxima (a butterfly over the four
  threads of a row), ``exp2(S * scale * log2(e) - max)``, the sums, and the factor that rescales ``O`` once
  ``P V`` is done. The accumulator layout of ``S`` is the register-operand layout of A value for value, so
  ``P`` is ``S`` converted to 16 bits, just before the fence of the MMAs that read it.
- With ``pingpong`` (the default) the consumers take turns issuing their MMAs, in a ring (named barriers 1, 2, 3);
  on a persistent grid the ring runs on from tile to tile, so a warpgroup may begin the next tile while the next
  in the ring stores the last one's output.

At the end each consumer divides by the row sums and stores ``lse`` and ``out``: the output goes through shared
memory in 128B-swizzled rows (``stmatrix``), then one thread TMA-stores the warpgroup's ``64 x D`` box (clipped at
the sequence's end; in a packed batch its threads store 16-byte chunks of the rows that lie in the sequence). On a
persistent grid with a buffer of its own a warpgroup stores without waiting for the others.

No accumulator or ``P`` register is read on a branch while an MMA is in flight, or converted after the fence
before the MMA that reads it: the assembler would serialise every WGMMA of the kernel (ptxas notes C7520, C7519).

Key tiles past the end of ``k``/``v`` are zero-filled by TMA and masked; in a packed batch a tile may reach into
the next sequence's rows, which the mask hides too. A query tile past its sequence computes rows it never stores.
"""

import math

import cute_py as cute
from cute_py import arch, pipeline
from cute_py.nvgpu import cpasync
from cute_py.nvgpu import warpgroup as wg
from cute_py.utils import LayoutEnum
from cute_py.utils import hopper_helpers as hh

from .attention_args import (HEAD_DIMS, SMEM_BYTES, TILES, check_args, check_offsets, check_overlap, check_tile,
                             dim_major, smem_bytes, tokens_major)
from .attention_schedule import dealt, persistent_schedule, tile_at
from .attention_consumer import (consume_overlapped, consume_tile, fragments, half_operands, halves_diagonal,
                                 issue_first, kv_blocks, row_fragments)
from .attention_tiles import ATTN_THREADS, BLOCK_M, head_rows, out_stage_layout


__all__ = ["attention", "attention_kernel", "check_offsets", "BLOCK_M", "HEAD_DIMS", "ATTN_THREADS", "TILES"]

PRODUCER_REGS = 24
CONSUMER_REGS = {2: 240, 3: 160}   # by consumer warpgroups: 128 * 24 + 256 * 240 <= 65536, 128 * 24 + 384 * 160 too
LOG2E = 1.4426950408889634


@cute.kernel
def attention_kernel(mma_qk, mma_pv, load_q, tma_q, load_k, tma_k, load_v, tma_v, o, lse, cu_q, cu_k,
                     q_layout, k_layout, v_layout, head_ratio, causal, scale_log2, seqlens, pingpong, store_o=None,
                     tma_o=None, heavy_first=False, schedule=None, o_layout=None, o_stage=None, overlap=False):
    tidx, _, _ = arch.thread_idx()
    warp = arch.make_warp_uniform(arch.warp_idx())
    d = tma_q.shape[1]
    block_n = cute.size(k_layout, mode=[0])
    stages = cute.size(k_layout, mode=[2])
    block_m = cute.size(q_layout, mode=[0])     # 64 query rows a consumer warpgroup: 2 * block_m threads
    producer_warp = block_m // 16               # the producer warpgroup's first warp
    if warp == producer_warp:
        cpasync.prefetch_descriptor(load_q)
        cpasync.prefetch_descriptor(load_k)
        cpasync.prefetch_descriptor(load_v)
    smem = arch.SmemAllocator()
    sQ = smem.allocate_tensor(load_q.dtype, q_layout, 1024)                   # (block_m, D, buffers)
    if cute.const_expr(not overlap):
        sQ = sQ[None, None, 0]                                                # (block_m, D)
    sK = smem.allocate_tensor(load_k.dtype, k_layout, 1024)                   # (block_n, D, stages)
    sV = smem.allocate_tensor(load_v.dtype, v_layout, 1024)                   # (D, block_n, stages)
    sO = sQ if o_layout is None else smem.allocate_tensor(load_q.dtype, o_layout, 1024)
    if cute.const_expr(o_stage is not None and o_layout is None):   # the TMA store's swizzled rows, over sQ
        sO = cute.make_tensor(sQ.iterator, o_stage)
    q_buffers = 2 if overlap else 1
    q_bar = smem.allocate_mbarrier(q_buffers)
    q_free = smem.allocate_mbarrier(q_buffers) if schedule is not None else None
    k_bars = smem.allocate_mbarrier(2 * stages)
    v_bars = smem.allocate_mbarrier(2 * stages)
    if tidx == 0:
        for b in cute.range_constexpr(q_buffers):
            arch.mbarrier_init(q_bar + b, 1)
            if cute.const_expr(schedule is not None):
                arch.mbarrier_init(q_free + b, 2 * block_m)      # every consumer thread, once it is done with sQ
        arch.mbarrier_init_fence()
    tile_bytes = block_n * d * load_k.dtype.width // 8
    consumers = pipeline.CooperativeGroup(pipeline.Agent.Thread, block_m // 16)
    k_pipe = pipeline.PipelineTmaAsync.create(
        num_stages=stages, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=consumers, tx_count=tile_bytes, barrier_storage=k_bars)
    v_pipe = pipeline.PipelineTmaAsync.create(
        num_stages=stages, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=consumers, tx_count=tile_bytes, barrier_storage=v_bars)
    tmas = (load_q, tma_q, load_k, tma_k, load_v, tma_v)
    smems = (sQ, sK, sV, sO, q_bar, q_free)
    args = (mma_qk, mma_pv, k_pipe, v_pipe, o, lse, cu_q, cu_k, head_ratio, causal, scale_log2, seqlens, pingpong,
            store_o, tma_o)
    if cute.const_expr(schedule is None):
        # a CTA per tile
        if cute.const_expr(heavy_first):
            # the grid (heads, batch, query blocks), the last query block first: the blocks that see the most keys
            # start first, the lightest ones fill the last wave
            head, batch, late = arch.block_idx()
            _, _, blocks = arch.grid_dim()
            m_block = blocks - 1 - late
        else:
            m_block, head, batch = arch.block_idx()
        seq = _sequence(batch, seqlens, cu_q, cu_k)
        if m_block * block_m < seq[2]:
            if warp >= producer_warp:
                arch.warpgroup_reg_dealloc(PRODUCER_REGS)
                if warp == producer_warp:
                    k_state, v_state = _ring_states(pipeline.PipelineUserType.Producer, stages)
                    _produce(tmas, smems, k_pipe, v_pipe, k_state, v_state, m_block, head, batch, seq, head_ratio,
                             block_n, causal)
                    k_pipe.producer_tail(k_state)
                    v_pipe.producer_tail(v_state)
            else:
                arch.warpgroup_reg_alloc(CONSUMER_REGS[block_m // 64])
                k_read, v_read = _ring_states(pipeline.PipelineUserType.Consumer, stages)
                if cute.const_expr(halves_diagonal(causal, cu_q is not None, seqlens, block_m, block_n, d)):
                    if warp < 4:    # warpgroup 0: the first key block over its first half (a copy of its own)
                        consume_tile(args, smems, tidx, k_read, v_read, m_block, head, batch, seq, 0, False,
                                     half_operands(sQ, sK, tidx))
                    else:
                        consume_tile(args, smems, tidx, k_read, v_read, m_block, head, batch, seq, 0, False)
                else:
                    consume_tile(args, smems, tidx, k_read, v_read, m_block, head, batch, seq, 0, False)
    else:
        # persistent: this CTA's tiles of the schedule's order, the pipelines' states carried from tile to tile;
        # the producer loads a tile's Q once the consumers are done with the one before it in that buffer (q_free)
        if warp >= producer_warp:
            arch.warpgroup_reg_dealloc(PRODUCER_REGS)
            if warp == producer_warp:
                _produce_tiles(tmas, smems, k_pipe, v_pipe, schedule, seqlens, cu_q, cu_k, head_ratio, block_n,
                               causal, overlap)
        else:
            arch.warpgroup_reg_alloc(CONSUMER_REGS[block_m // 64])
            _consume_tiles(args, smems, tidx, schedule, stages, o_layout is not None, overlap)


@cute.jit
def _produce_tiles(tmas, smems, k_pipe, v_pipe, schedule, seqlens, cu_q, cu_k, head_ratio, block_n, causal,
                   overlap):
    """The producer of a persistent grid: the loads of the CTA's tiles (:func:`_produce`), its ``i``-th tile's
    Q into buffer ``i % 2`` with ``overlap`` (else the one buffer), once the consumers are done with the tile
    before in that buffer."""
    sQ, sK, sV, sO, q_bar, q_free = smems
    m_blocks, pairs, _, _, grid, _ = schedule
    cta, _, _ = arch.block_idx()
    block_m = cute.size(sQ, mode=[0])
    stages = cute.size(sK, mode=[2])
    k_state, v_state = _ring_states(pipeline.PipelineUserType.Producer, stages)
    buffers = 2 if overlap else 1
    loaded = 0
    for t in range(cta, m_blocks * pairs, grid):
        m_block, head, batch, seq = _scheduled(t, schedule, seqlens, cu_q, cu_k)
        if m_block * block_m < seq[2]:
            b = loaded % buffers
            if loaded >= buffers:
                arch.mbarrier_wait(q_free + b, (loaded // buffers - 1) % 2)
            tile_q = sQ[None, None, b] if cute.const_expr(overlap) else sQ
            _produce(tmas, (tile_q, sK, sV, sO, q_bar + b, q_free), k_pipe, v_pipe, k_state, v_state, m_block, head,
                     batch, seq, head_ratio, block_n, causal)
            loaded = loaded + 1
    k_pipe.producer_tail(k_state)
    v_pipe.producer_tail(v_state)


@cute.jit
def _consume_tiles(args, smems, tidx, schedule, stages, own_o, overlap):
    """A consumer warpgroup of a persistent grid: the CTA's tiles in turn (:func:`_consumer_loop`). Where warpgroup
    0 sees only the first half of every tile's first key block (``attention_consumer.halves_diagonal``), it runs a
    copy of the loop of its own that computes that half alone."""
    _, _, _, _, _, _, cu_q, _, _, causal, _, seqlens, pingpong, store_o, _ = args
    sQ, sK, _, _, _, _ = smems
    groups = cute.size(sQ, mode=[0]) // 64
    k_read, v_read = _ring_states(pipeline.PipelineUserType.Consumer, stages)
    # ping-pong: the turns run on from tile to tile (each warpgroup passes its last of a tile as soon as it has
    # issued it, so that the next may start the next tile while this one stores its output); the last warpgroup
    # gives warpgroup 0 the first turn here, and warpgroup 0 takes the one left over at the end
    group = arch.make_warp_uniform(arch.warp_idx()) // 4
    if pingpong and group == groups - 1:
        arch.barrier_arrive(barrier_id=1, number_of_threads=2 * 128)
    if cute.const_expr(halves_diagonal(causal, cu_q is not None, seqlens, cute.size(sQ, mode=[0]),
                                       cute.size(sK, mode=[0]), cute.size(sQ, mode=[1]))):
        if group == 0:
            _consumer_loop(args, smems, tidx, schedule, own_o, overlap, k_read, v_read,
                           half_operands(sQ, sK, tidx))
        else:
            _consumer_loop(args, smems, tidx, schedule, own_o, overlap, k_read, v_read, None)
    else:
        _consumer_loop(args, smems, tidx, schedule, own_o, overlap, k_read, v_read, None)
    if pingpong and group == 0:
        arch.barrier(barrier_id=1, number_of_threads=2 * 128)
    if cute.const_expr(own_o and store_o is not None):
        if tidx % 128 == 0:
            arch.tma_store_wait(0, read=True)     # the last store has read its buffer before the CTA ends


@cute.jit
def _consumer_loop(args, smems, tidx, schedule, own_o, overlap, k_read, v_read, half):
    """The CTA's tiles for one consumer warpgroup (``attention_consumer.consume_tile``, or with ``overlap`` each
    tile's last turn issuing the next tile's first product: ``attention_consumer.consume_overlapped``); ``half``:
    every tile's first key block over its first half (``attention_consumer.half_operands``), or ``None``."""
    mma_qk, mma_pv, k_pipe, _, _, _, cu_q, cu_k, _, _, _, seqlens, pingpong, _, _ = args
    sQ, sK, sV, _, q_bar, _ = smems
    m_blocks, pairs, _, _, grid, _ = schedule
    cta, _, _ = arch.block_idx()
    groups = cute.size(sQ, mode=[0]) // 64
    group = arch.make_warp_uniform(arch.warp_idx()) // 4
    done = 0
    if cute.const_expr(overlap):
        ops = fragments(mma_qk, mma_pv, sQ, sK, sV, tidx)
        tSrQ, tSrK, _, _, acc_s, _, acc_o = ops
        rows = row_fragments()
        arch.mbarrier_wait(q_bar, 0)
        issue_first(mma_qk, acc_s, acc_o, tSrQ, tSrK, k_pipe, k_read, 0, pingpong, group, groups, half)
        for t in range(cta, m_blocks * pairs, grid):
            m_block, head, batch, seq = _scheduled(t, schedule, seqlens, cu_q, cu_k)
            consume_overlapped(args, smems, tidx, ops, rows, k_read, v_read, m_block, head, batch, seq, done,
                               t + grid < m_blocks * pairs, half)
            done = done + 1
        wg.wait_group(0)            # the product the last tile issued for no next tile: dropped
    else:
        for t in range(cta, m_blocks * pairs, grid):
            m_block, head, batch, seq = _scheduled(t, schedule, seqlens, cu_q, cu_k)
            if m_block * cute.size(sQ, mode=[0]) < seq[2]:
                consume_tile(args, smems, tidx, k_read, v_read, m_block, head, batch, seq, done % 2, own_o, half)
                done = done + 1


def _ring_states(kind, stages):
    """The K and V rings' states of one side (``kind``: producer or consumer), at their first stage."""
    return pipeline.make_pipeline_state(kind, stages), pipeline.make_pipeline_state(kind, stages)


@cute.jit
def _scheduled(t, schedule, seqlens, cu_q, cu_k):
    """The tile a CTA takes at loop index ``t`` of a persistent schedule (``attention_schedule.dealt``):
    ``(m_block, head, batch)`` and its sequence (:func:`_sequence`)."""
    m_blocks, pairs, section, heads, grid, alternate = schedule
    m_block, head, batch = tile_at(dealt(t, grid, m_blocks * pairs), m_blocks, pairs, section, heads, alternate)
    return m_block, head, batch, _sequence(batch, seqlens, cu_q, cu_k)


@cute.jit
def _sequence(batch, seqlens, cu_q, cu_k):
    """Sequence ``batch``'s ``(q_start, k_start, seqlen_q, seqlen_k, q_batch, k_batch)``: its first query and key
    rows and lengths, and its batch index in the token-major views (0 for a packed batch)."""
    if cute.const_expr(cu_q is not None):
        q_start, k_start = cu_q[batch], cu_k[batch]
        return q_start, k_start, cu_q[batch + 1] - q_start, cu_k[batch + 1] - k_start, 0, 0
    return 0, 0, seqlens[0], seqlens[1], batch, batch


@cute.jit
def _produce(tmas, smems, k_pipe, v_pipe, k_state, v_state, m_block, head, batch, seq, head_ratio, block_n, causal):
    """The producer's loads of one tile: its Q tile (on ``q_bar``), then the K and V tiles of the key blocks it
    sees, last first."""
    load_q, tma_q, load_k, tma_k, load_v, tma_v = tmas
    sQ, sK, sV, _, q_bar, _ = smems
    q_start, k_start, seqlen_q, seqlen_k, q_batch, k_batch = seq
    d = tma_q.shape[1]
    kv_head = head // head_ratio
    block_m = cute.size(sQ, mode=[0])
    n_blocks = kv_blocks(m_block, seqlen_q, seqlen_k, block_n, causal, block_m)
    gQ = cute.local_tile(head_rows(tma_q, q_start, q_batch, head), (block_m, d), (m_block, 0))
    tQsQ, tQgQ = cpasync.tma_partition(load_q, 0, cute.Layout(1), cute.group_modes(sQ, 0, 2),
                                       cute.group_modes(gQ, 0, 2))
    with arch.elect_one():
        arch.mbarrier_arrive_and_expect_tx(q_bar, block_m * d * load_q.dtype.width // 8)
    cute.copy(load_q, tQgQ, tQsQ, tma_bar_ptr=q_bar)
    gK = cute.local_tile(head_rows(tma_k, k_start, k_batch, kv_head), (block_n, d), (None, 0))
    gV = cute.local_tile(head_rows(tma_v, k_start, k_batch, kv_head, 1), (d, block_n), (0, None))
    tKsK, tKgK = cpasync.tma_partition(load_k, 0, cute.Layout(1), cute.group_modes(sK, 0, 2),
                                       cute.group_modes(gK, 0, 2))
    tVsV, tVgV = cpasync.tma_partition(load_v, 0, cute.Layout(1), cute.group_modes(sV, 0, 2),
                                       cute.group_modes(gV, 0, 2))
    for i in range(n_blocks):
        j = n_blocks - 1 - i
        k_pipe.producer_acquire(k_state)
        cute.copy(load_k, tKgK[None, j], tKsK[None, k_state.index], tma_bar_ptr=k_pipe.producer_get_barrier(k_state))
        k_pipe.producer_commit(k_state)
        k_state.advance()
        v_pipe.producer_acquire(v_state)
        cute.copy(load_v, tVgV[None, j], tVsV[None, v_state.index], tma_bar_ptr=v_pipe.producer_get_barrier(v_state))
        v_pipe.producer_commit(v_state)
        v_state.advance()


@cute.jit
def attention(q, k, v, out, lse, causal=False, softmax_scale=None, cu_seqlens_q=None, cu_seqlens_k=None,
              max_seqlen_q=None, pingpong=True, heavy_first=False, block_n=None, stages=None, persistent=None,
              block_m=None, overlap=None):
    """``out = softmax(softmax_scale * q k^T) v`` per head, and ``lse`` its rows' log-sum-exp (see the module for
    the shapes, the packed form, the causal mask and the kernel). ``softmax_scale`` defaults to
    ``1 / sqrt(head_dim)``; ``pingpong`` makes the consumer warpgroups take turns issuing their MMAs;
    ``heavy_first`` orders the grid by query block, last first (with ``causal`` the blocks that see the most keys
    are scheduled first), at most 65535 query blocks. ``block_n`` (keys per block, a multiple of 16 up to 256)
    and ``stages`` (the depth of the K and V rings) replace the tuned table's tile for the head dimension (or
    ``attention_args.SHORT_TILES``' where the key length pads the table's last block as it says); the tiles must
    fit the CTA's shared memory. ``block_m`` (query rows per tile) is 128 (two consumer warpgroups) or,
    at d=64 with at most 128 keys a block, 192 (three, 160 registers a thread, taking turns in a ring); by default
    192 where ``attention_args.WIDE_TILES`` says so for the sequences' length, else 128. ``persistent`` launches
    a CTA per SM (``True``; or a number of CTAs), each computing the tiles of ``examples.attention_schedule``'s
    order in turn, the producer loading the next tile's keys and values while the consumers finish the last; the
    output goes through a buffer of its own where shared memory has room for it (then the next tile's Q loads as
    soon as the last ``S`` is done), else through Q's. ``False`` launches a CTA per tile; ``None`` (the default)
    chooses by the measured table ``attention_schedule.PERSISTENT`` (a packed batch: a CTA per tile). On a
    persistent grid ``overlap`` gives Q two buffers and has each consumer warpgroup issue its next tile's first
    ``S`` before it stores a tile's output (see the module; ``attention_args.check_overlap`` has the rule): ``None``
    (the default) where the rule allows it, ``False`` never, ``True`` or a ``CuteValueError`` naming the rule.

    The shapes are part of the compile; a packed batch compiled with symbolic totals (``cute.compile`` of specs
    whose token extents are ``cute.sym_int()``, shared by q, out and lse, and by k and v) serves every total of
    the same batch size, heads and ``max_seqlen_q``. In a packed batch the offsets are read on the device, which
    checks them: they must not decrease and must stay within the tensors, and no sequence may be longer than
    ``max_seqlen_q`` rounded up to ``block_m`` (the rows the grid covers). A broken rule is printed from the
    device and the kernel traps: the launch fails, as after a device-side assertion (the CUDA context is lost)."""
    check_args(q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, causal, softmax_scale)
    packed = cu_seqlens_q is not None
    dt = q.element_type
    d = q.shape[-1]
    heads = q.shape[-2]
    if packed:
        batch, rows = cute.size(cu_seqlens_q) - 1, max_seqlen_q
        seqlens = (0, 0)
    else:
        batch, rows = q.shape[0], q.shape[1]
        seqlens = (q.shape[1], k.shape[1])
    block_n, stages, block_m = check_tile(d, causal, block_n, stages, block_m, rows, None if packed else seqlens[1])
    groups = block_m // 64
    scale = 1.0 / math.sqrt(d) if softmax_scale is None else float(softmax_scale)
    mma_qk = hh.make_trivial_tiled_mma(dt, dt, wg.OperandMajorMode.K, wg.OperandMajorMode.K, cute.Float32,
                                       (groups, 1, 1), (64, block_n))
    mma_pv = hh.make_trivial_tiled_mma(dt, dt, wg.OperandMajorMode.K, wg.OperandMajorMode.MN, cute.Float32,
                                       (groups, 1, 1), (64, d), wg.OperandSource.RMEM)
    q_layout = hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (block_m, block_n, d), dt, 1)
    k_layout = hh.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (BLOCK_M, block_n, d), dt, stages)
    v_layout = hh.make_smem_layout_b(LayoutEnum.COL_MAJOR, (BLOCK_M, d, block_n), dt, stages)
    qv, kv, vv, ov = (tokens_major(t, packed) for t in (q, k, v, out))
    g2s = cpasync.CopyBulkTensorTileG2SOp()
    load_q, tma_q = cpasync.make_tiled_tma_atom(g2s, qv, cute.slice_(q_layout, (None, None, 0)), (block_m, d))
    load_k, tma_k = cpasync.make_tiled_tma_atom(g2s, kv, cute.slice_(k_layout, (None, None, 0)), (block_n, d))
    load_v, tma_v = cpasync.make_tiled_tma_atom(g2s, dim_major(vv), cute.slice_(v_layout, (None, None, 0)),
                                                (d, block_n))
    if type(heavy_first) is not bool:
        raise cute.CuteValueError(f"attention: heavy_first must be a bool, got {heavy_first!r}")
    m_blocks = cute.ceil_div(rows, block_m)
    kv_rows = k.shape[1] if not packed else k.shape[0] // batch if type(k.shape[0]) is int else rows  # (mean)
    schedule = persistent_schedule(persistent, heavy_first, m_blocks, heads, batch, heads // k.shape[-2],
                                   2 * kv_rows * d * dt.width // 8, d, causal, block_m, packed)
    if heavy_first and m_blocks > 65535:
        raise cute.CuteValueError(f"attention: heavy_first puts the query blocks on the grid's z dimension, at most "
                                  f"65535 of {block_m} rows; {rows} rows make {m_blocks}")
    grid = (heads, batch, m_blocks) if heavy_first else (m_blocks, heads, batch)
    o_layout = None
    o_stage = None if packed else out_stage_layout(dt, d, groups)
    if schedule is not None:
        schedule, grid = schedule
        if smem_bytes(d, block_n, stages, block_m) + block_m * d * dt.width // 8 <= SMEM_BYTES:
            o_layout = cute.make_layout((block_m, d), stride=(d, 1)) if packed else o_stage
    walks = schedule is not None and grid[0] < m_blocks * schedule[1]      # a CTA with more than one tile
    overlap = check_overlap(overlap, walks, packed, seqlens, causal, d, block_n, stages, block_m)
    if overlap:
        q_layout = hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (block_m, block_n, d), dt, 2)
    if packed:
        check_offsets(cu_seqlens_q, cu_seqlens_k, q.shape[0], k.shape[0], m_blocks * block_m).launch(
            grid=(batch, 1, 1), block=32)
    store_o = tma_o = None
    if not packed:      # a packed sequence's last rows are followed by the next sequence's: no box may clip there
        store_o, tma_o = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), ov,
                                                     cute.slice_(o_stage, (None, None, 0)), (64, d))
    attention_kernel(mma_qk, mma_pv, load_q, tma_q, load_k, tma_k, load_v, tma_v, ov, lse, cu_seqlens_q,
                     cu_seqlens_k, q_layout, k_layout, v_layout, heads // k.shape[-2], causal, scale * LOG2E,
                     seqlens, pingpong, store_o, tma_o, heavy_first, schedule, o_layout, o_stage, overlap).launch(
                         grid=grid, block=128 * (groups + 1))
