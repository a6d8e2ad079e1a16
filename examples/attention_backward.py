"""Kernel 14, backward: the gradients of :func:`examples.attention` with respect to q, k and v.

::

    from examples import attention, attention_backward
    attention(q, k, v, out, lse, causal=True)
    attention_backward(q, k, v, out, lse, dout, dq, dk, dv, causal=True)   # the same causal and softmax_scale

Shapes as the forward's unpacked form: ``q``, ``out``, ``dout``, ``dq`` ``(batch, seqlen_q, heads, head_dim)``;
``k``, ``v``, ``dk``, ``dv`` ``(batch, seqlen_k, kv_heads, head_dim)``; ``lse`` the forward's ``(batch, heads,
seqlen_q)``; bf16 or fp16, head dims 64 and 128. With ``S = scale * Q K^T``, ``P = exp(S - lse)``,
``D = rowsum(dO * O)`` and ``dS = P * (dO V^T - D)``: ``dV = P^T dO``, ``dK = scale * dS^T Q``,
``dQ = scale * dS K``, each accumulated in fp32 and rounded once. With grouped KV heads, ``dK`` and ``dV`` of a
KV head sum over its query heads.

Three kernels:

1. ``_prepare``: per query row ``D`` and ``lse * log2(e)`` (``+inf`` for a row that saw no key and for the rows
   that pad the workspaces to whole 64-row blocks, so their P is 0); each row is read in 16-byte chunks by
   ``head_dim / 8`` threads whose partial sums meet by warp shuffles;
2. ``attention_backward_kernel``: a CTA per 128 keys of one KV head. Its producer warp loads the K and V tiles
   once, then the Q and dO tiles of every 64-query block that sees the keys (each query head of the group in
   turn) through a ``PipelineTmaAsync``. Each of the two consumer warpgroups owns 64 keys and, per query block,
   computes ``S^T = K Q^T`` and ``dP^T = V dO^T`` (WGMMAs from shared memory), ``P^T`` in registers while
   ``dP^T`` is still in flight (masked where a key is past the keys or past the causal diagonal: a CTA's steps
   that need the mask come first for each query head, traced apart from the others, which need none), issues
   ``dV += P^T dO`` with ``P^T`` as the register operand (its accumulator layout is the register-operand
   layout), computes ``dS^T`` while that runs, issues ``dK += dS^T Q`` the same way and writes
   ``dS`` to shared memory (``stmatrix``; a buffer per stage, so that no warpgroup waits for the other's dQ
   MMAs before the next step). When both warpgroups' ``dS`` is there, each computes a 64x64 tile of
   ``dQ = dS K`` into ``dP^T``'s registers (head dim 128: its half of the columns over all 128 keys; 64: all
   columns over its own keys), writes it to shared memory in its accumulator's register order and adds it to
   the fp32 accumulator with one TMA reduction (``cp.reduce.async.bulk.tensor ... add``; two buffers per
   warpgroup, so a reduction runs while the next block is computed). At the end it stores ``dK * scale`` and
   ``dV`` through shared memory;
3. ``_finish_dq``: ``dQ = scale * accumulator``, rounded to the input type: a warpgroup per 64 query rows reads
   each 64x64 tile back in the register order it was written in and stores the rows through shared memory in
   16-byte chunks.

The accumulator ``dqa`` is ``(tiles * 32, 128)`` fp32, zero before the call: tile ``((batch * heads + head) *
m_blocks + m) * (head_dim / 64) + c`` holds rows ``64 m ...`` and columns ``64 c ...`` of one head's ``dQ`` as
the 4096 floats from ``[32 tile, 0]`` on, value ``v`` of thread ``t`` of the tile's WGMMA at
``512 (v / 4) + 4 t + v % 4``. The fp32 accumulation order across CTAs is not fixed, so ``dq`` may differ in its
last bits between runs; ``dk`` and ``dv`` are the same bits every run.
"""

import math

import cute_py as cute
from cute_py import arch, pipeline
from cute_py.nvgpu import cpasync
from cute_py.nvgpu import warp as warp_ops
from cute_py.nvgpu import warpgroup as wg
from cute_py.utils import LayoutEnum
from cute_py.utils import hopper_helpers as hh

from .attention import LOG2E
from .attention_args import check_args, check_rows_stored_in_chunks, tokens_major
from .attention_backward_blocks import BLOCK_M, BLOCK_N, masked_blocks, query_blocks
from .attention_tiles import ATTN_THREADS, MMA_THREADS, PRODUCER_WARP, fence_operands, gemm_ss, head_rows, store_rows

__all__ = ["attention_backward", "attention_backward_kernel", "workspace_shapes", "BWD_HEAD_DIMS"]

BWD_HEAD_DIMS = (64, 128)
STAGES = 2
DQ_VALUES = 64 * 64 // 128   # values of a 64x64 dQ tile per thread of a warpgroup
DQ_BUFFERS = 2
PRODUCER_REGS = 24
CONSUMER_REGS = 240


@cute.kernel
def _prepare(o, do, lse, dsum, lse2, seqlen_q, d):
    """``d / 8`` threads per query row, each with one 16-byte chunk of ``o`` and ``do``; ``128 / (d / 8)`` rows of
    padded rows per CTA ``(x, head, batch)``."""
    bx, head, batch = arch.block_idx()
    tidx, _, _ = arch.thread_idx()
    per_row = d // 8
    row = bx * (128 // per_row) + tidx // per_row
    chunk = tidx % per_row
    acc = 0.0
    if row < seqlen_q:
        wide = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), o.element_type, num_bits_per_copy=128)
        fo = cute.make_fragment((8,), o.element_type)
        fd = cute.make_fragment((8,), o.element_type)
        cute.copy(wide, cute.local_tile(o[row, None, head, batch], (8,), (chunk,)), fo)
        cute.copy(wide, cute.local_tile(do[row, None, head, batch], (8,), (chunk,)), fd)
        for j in cute.range_constexpr(8):
            acc = cute.math.fma(fo[j].to(cute.Float32), fd[j].to(cute.Float32), acc)
    for k in cute.range_constexpr(per_row.bit_length() - 1):
        acc = acc + arch.shuffle_sync_bfly(acc, per_row >> (k + 1))
    if chunk == 0 and row < cute.size(dsum, mode=[2]):
        l2 = math.inf                  # (a padding row: its P is 0)
        if row < seqlen_q:
            x = lse[batch, head, row]
            l2 = cute.math.select(x == -math.inf, math.inf, x * LOG2E)
        dsum[batch, head, row] = acc
        lse2[batch, head, row] = l2


@cute.kernel
def _finish_dq(mma_o, dqa, dq, seqlen_q, d, scale, row_layout):
    """CTA ``(m, head, batch)``, one warpgroup: query rows ``64 m ...`` of ``dq``. Each thread reads back (16 bytes
    at a time) the values its namesake in the WGMMAs wrote, which are its values of a ``64 x d`` accumulator
    (``mma_o``'s: the tile of columns ``64 c ..`` is its values ``32 c ..``); they go out through
    shared memory (swizzled rows) in 16-byte chunks (``attention_tiles.store_rows``)."""
    m, head, batch = arch.block_idx()
    tidx, _, _ = arch.thread_idx()
    heads = cute.size(dq, mode=[2])
    m_blocks = cute.ceil_div(seqlen_q, BLOCK_M)
    smem = arch.SmemAllocator()
    sO = smem.allocate_tensor(dq.element_type, row_layout, 1024)             # (64 rows, d)
    cO = mma_o.get_slice(tidx).partition_C(cute.make_identity_tensor((BLOCK_M, d)))
    acc = mma_o.make_fragment_C(cO)
    wide = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.Float32, num_bits_per_copy=128)
    vals = cute.make_fragment(4, cute.Float32)
    for c in cute.range_constexpr(d // 64):
        tile = ((batch * heads + head) * m_blocks + m) * (d // 64) + c
        for u in cute.range_constexpr(DQ_VALUES // 4):
            cute.copy(wide, cute.local_tile(dqa[tile * DQ_VALUES + 4 * u + tidx // 32, None], (4,), (tidx % 32,)),
                      vals)
            for i in cute.range_constexpr(4):
                acc[DQ_VALUES * c + 4 * u + i] = vals[i] * scale
    store_rows(acc, sO, cute.local_tile(head_rows(dq, 0, batch, head), (BLOCK_M, d), (m, 0)), 0, tidx,
               seqlen_q - m * BLOCK_M, d)


@cute.kernel
def attention_backward_kernel(mma_s, mma_kv, mma_dq, load_q, tma_q, load_do, tma_do, load_k, tma_k, load_v, tma_v,
                              load_l, tma_l, load_dsum, tma_dsum, reduce_dq, tma_dqa, dk, dv, k_layout, q_layout,
                              q_mn_layout, k_mn_layout, ds_layout, dq_layout, row_layout, head_ratio, causal, scale,
                              seqlens):
    n_block, kv_head, batch = arch.block_idx()
    tidx, _, _ = arch.thread_idx()
    warp = arch.make_warp_uniform(arch.warp_idx())
    d = tma_q.shape[1]
    seqlen_q, seqlen_k = seqlens
    if warp == PRODUCER_WARP:
        for atom in (load_q, load_do, load_k, load_v, load_l, load_dsum, reduce_dq):
            cpasync.prefetch_descriptor(atom)
    smem = arch.SmemAllocator()
    sK = smem.allocate_tensor(load_k.dtype, k_layout, 1024)          # (128 keys, D, 1)
    sV = smem.allocate_tensor(load_v.dtype, k_layout, 1024)
    sQ = smem.allocate_tensor(load_q.dtype, q_layout, 1024)          # (64 queries, D, stages)
    sdO = smem.allocate_tensor(load_do.dtype, q_layout, 1024)
    sdS = smem.allocate_tensor(load_q.dtype, ds_layout, 1024)        # (64 queries, 128 keys, stages)
    sdQ = smem.allocate_tensor(cute.Float32, dq_layout, 128)         # (4096 values, 2 x 2 buffers)
    sL = smem.allocate_tensor(cute.Float32, row_layout, 128)         # (64 queries, stages): lse * log2(e)
    sD = smem.allocate_tensor(cute.Float32, row_layout, 128)         # (64 queries, stages): D
    kv_bar = smem.allocate_mbarrier(1)
    bars = smem.allocate_mbarrier(2 * STAGES)
    if tidx == 0:
        arch.mbarrier_init(kv_bar, 1)
        arch.mbarrier_init_fence()
    loads = pipeline.PipelineTmaAsync.create(
        num_stages=STAGES, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, MMA_THREADS // 32),
        tx_count=2 * BLOCK_M * (d * load_q.dtype.width // 8 + 4), barrier_storage=bars)
    m_blocks, m_start, m_count = query_blocks(n_block, seqlen_q, seqlen_k, causal)
    steps = head_ratio * m_count
    if warp >= PRODUCER_WARP:
        arch.warpgroup_reg_dealloc(PRODUCER_REGS)
        if warp == PRODUCER_WARP:
            gK = cute.local_tile(head_rows(tma_k, 0, batch, kv_head), (BLOCK_N, d), (n_block, 0))
            gV = cute.local_tile(head_rows(tma_v, 0, batch, kv_head), (BLOCK_N, d), (n_block, 0))
            tKsK, tKgK = cpasync.tma_partition(load_k, 0, cute.Layout(1), cute.group_modes(sK[None, None, 0], 0, 2),
                                               cute.group_modes(gK, 0, 2))
            tVsV, tVgV = cpasync.tma_partition(load_v, 0, cute.Layout(1), cute.group_modes(sV[None, None, 0], 0, 2),
                                               cute.group_modes(gV, 0, 2))
            with arch.elect_one():
                arch.mbarrier_arrive_and_expect_tx(kv_bar, 2 * BLOCK_N * d * load_k.dtype.width // 8)
            cute.copy(load_k, tKgK, tKsK, tma_bar_ptr=kv_bar)
            cute.copy(load_v, tVgV, tVsV, tma_bar_ptr=kv_bar)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, STAGES)
            for t in range(steps):
                head = kv_head * head_ratio + t // m_count
                m = m_start + t % m_count
                gQ = cute.local_tile(head_rows(tma_q, 0, batch, head), (BLOCK_M, d), (m, 0))
                gdO = cute.local_tile(head_rows(tma_do, 0, batch, head), (BLOCK_M, d), (m, 0))
                tQsQ, tQgQ = cpasync.tma_partition(load_q, 0, cute.Layout(1), cute.group_modes(sQ, 0, 2),
                                                   cute.group_modes(gQ, 0, 2))
                tOsO, tOgO = cpasync.tma_partition(load_do, 0, cute.Layout(1), cute.group_modes(sdO, 0, 2),
                                                   cute.group_modes(gdO, 0, 2))
                tLsL, tLgL = cpasync.tma_partition(load_l, 0, cute.Layout(1), sL,
                                                   cute.local_tile(tma_l[None, head, batch], (BLOCK_M,), (m,)))
                tDsD, tDgD = cpasync.tma_partition(load_dsum, 0, cute.Layout(1), sD,
                                                   cute.local_tile(tma_dsum[None, head, batch], (BLOCK_M,), (m,)))
                loads.producer_acquire(state)
                bar = loads.producer_get_barrier(state)
                cute.copy(load_q, tQgQ, tQsQ[None, state.index], tma_bar_ptr=bar)
                cute.copy(load_do, tOgO, tOsO[None, state.index], tma_bar_ptr=bar)
                cute.copy(load_l, tLgL, tLsL[None, state.index], tma_bar_ptr=bar)
                cute.copy(load_dsum, tDgD, tDsD[None, state.index], tma_bar_ptr=bar)
                loads.producer_commit(state)
                state.advance()
            loads.producer_tail(state)
    else:
        arch.warpgroup_reg_alloc(CONSUMER_REGS)
        _consume(mma_s, mma_kv, mma_dq, reduce_dq, tma_dqa, sK, sV, sQ, sdO, sdS, sdQ, sL, sD, q_mn_layout,
                 k_mn_layout, kv_bar, loads, dk, dv, tidx, n_block, kv_head, batch, head_ratio, m_blocks, m_start,
                 m_count, seqlen_q, seqlen_k, causal, scale)


@cute.jit
def _consume(mma_s, mma_kv, mma_dq, reduce_dq, tma_dqa, sK, sV, sQ, sdO, sdS, sdQ, sL, sD, q_mn_layout, k_mn_layout,
             kv_bar, loads, dk, dv, tidx, n_block, kv_head, batch, head_ratio, m_blocks, m_start, m_count,
             seqlen_q, seqlen_k, causal, scale):
    d = cute.size(sQ, mode=[1])
    heads = cute.size(dk, mode=[2]) * head_ratio
    group = arch.make_warp_uniform(arch.warp_idx()) // 4
    wtid = tidx % 128
    diag = seqlen_k - seqlen_q
    sQ_mn = cute.make_tensor(sQ.iterator, q_mn_layout)        # the same bytes as (D, queries, stages)
    sdO_mn = cute.make_tensor(sdO.iterator, q_mn_layout)
    sK_mn = cute.make_tensor(sK.iterator, k_mn_layout)        # (D, 128 keys, 1)
    thr_s = mma_s.get_slice(tidx)
    thr_kv = mma_kv.get_slice(tidx)
    thr_dq = mma_dq.get_slice(wtid)
    tSrK = mma_s.make_fragment_A(thr_s.partition_A(sK[None, None, 0]))        # (1, 1, D/16)
    tSrV = mma_s.make_fragment_A(thr_s.partition_A(sV[None, None, 0]))
    tSrQ = mma_s.make_fragment_B(thr_s.partition_B(sQ))                      # (1, 1, D/16, stages)
    tSrdO = mma_s.make_fragment_B(thr_s.partition_B(sdO))
    tKVrdO = mma_kv.make_fragment_B(thr_kv.partition_B(sdO_mn))              # (1, 1, 64/16, stages)
    tKVrQ = mma_kv.make_fragment_B(thr_kv.partition_B(sQ_mn))
    cS = thr_s.partition_C(cute.make_identity_tensor((BLOCK_N, BLOCK_M)))   # (key, query) of each value
    acc_s = mma_s.make_fragment_C(cS)
    acc_dp = mma_s.make_fragment_C(cS)
    tKVrP = mma_kv.make_fragment_A(thr_kv.partition_A(cute.make_layout((BLOCK_N, BLOCK_M))))
    tKVrdS = mma_kv.make_fragment_A(thr_kv.partition_A(cute.make_layout((BLOCK_N, BLOCK_M))))
    cKV = thr_kv.partition_C(cute.make_identity_tensor((BLOCK_N, d)))
    acc_dk = mma_kv.make_fragment_C(cKV)
    acc_dv = mma_kv.make_fragment_C(cKV)
    acc_dk.fill(0.0)
    acc_dv.fill(0.0)
    # dQ = dS K, a 64x64 tile per warpgroup: columns 64 c ... over the keys of part p
    parts = d // 64                               # the warpgroups' column tiles (2 at D 128, 1 at D 64)
    c = group % parts
    keys = BLOCK_N * parts // 2
    tQrdS = mma_dq.make_fragment_A(thr_dq.partition_A(cute.local_tile(sdS, (BLOCK_M, keys, STAGES),
                                                                      (0, group // parts, 0))))
    tQrK = mma_dq.make_fragment_B(thr_dq.partition_B(cute.local_tile(sK_mn[None, None, 0], (64, keys),
                                                                     (c, group // parts))))
    read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
    first_k = n_block * BLOCK_N
    # per query head, the blocks that need the mask come first (masked_blocks); the loop over them and the loop over
    # the others are traced apart, so that no branch on the mask lies between the MMAs (the assembler would
    # serialise them)
    bounds = (0, masked_blocks(n_block, m_start, m_count, seqlen_q, seqlen_k, causal), m_count)
    frags = (tSrK, tSrV, tSrQ, tSrdO, tKVrdO, tKVrQ, cS, acc_s, acc_dp, tKVrP, tKVrdS, acc_dk, acc_dv, tQrdS, tQrK)
    arch.mbarrier_wait(kv_bar, 0)
    for h in range(head_ratio):
        for phase in cute.range_constexpr(2):
            for i in range(bounds[phase], bounds[phase + 1]):
                t = h * m_count + i
                _step(mma_s, mma_kv, mma_dq, reduce_dq, tma_dqa, frags, sdS, sdQ, sL, sD, loads, read, group, wtid,
                      first_k, (m_start + i) * BLOCK_M, seqlen_k, diag, causal, scale, phase == 0, t,
                      _dq_tile(batch, kv_head * head_ratio + h, m_start + i, c, heads, m_blocks, parts), keys, d)
    # (store_rows first waits for both warpgroups: their dQ MMAs have read K before dK goes through its memory)
    if wtid == 0:
        arch.tma_store_wait(0, read=True)
    for v in cute.range_constexpr(cute.size(acc_dk)):
        acc_dk[v] = acc_dk[v] * scale
    arch.warpgroup_fence_operand(acc_dk)
    rows = seqlen_k - n_block * BLOCK_N
    gdK = cute.local_tile(head_rows(dk, 0, batch, kv_head), (BLOCK_N, d), (n_block, 0))
    gdV = cute.local_tile(head_rows(dv, 0, batch, kv_head), (BLOCK_N, d), (n_block, 0))
    store_rows(acc_dk, sK, gdK, group, wtid, rows, d)
    store_rows(acc_dv, sV, gdV, group, wtid, rows, d)


@cute.jit
def _step(mma_s, mma_kv, mma_dq, reduce_dq, tma_dqa, frags, sdS, sdQ, sL, sD, loads, read, group, wtid, first_k,
          first_q, seqlen_k, diag, causal, scale, masked, t, tile, keys, d):
    """One query block of a consumer warpgroup (see the module), ``t``-th of the CTA: its ``P^T`` masked where
    ``masked`` says so (a key past the keys or, causal, past a query's diagonal), else as computed."""
    (tSrK, tSrV, tSrQ, tSrdO, tKVrdO, tKVrQ, cS, acc_s, acc_dp, tKVrP, tKVrdS, acc_dk, acc_dv, tQrdS, tQrK) = frags
    n_vals = cute.size(acc_s)
    loads.consumer_wait(read)
    fence_operands(acc_s, acc_s)                   # (not acc_dp: the previous dQ may still be written there)
    gemm_ss(mma_s, acc_s, tSrK, tSrQ, read.index, d)
    wg.commit_group()
    fence_operands(acc_dp, acc_dp)
    gemm_ss(mma_s, acc_dp, tSrV, tSrdO, read.index, d)
    wg.commit_group()
    wg.wait_group(1)                               # S^T is there; dP^T may still run
    arch.warpgroup_fence_operand(acc_s)
    for v in cute.range_constexpr(n_vals):
        row, col = cS[v]
        p = cute.math.exp2(cute.math.fma(acc_s[v], scale * LOG2E, -sL[col, read.index]), fastmath=True)
        if masked:
            key = first_k + row
            hidden = key >= seqlen_k
            if causal:
                hidden = hidden or key > first_q + col + diag
            p = cute.math.select(hidden, 0.0, p)
        acc_s[v] = p
        tKVrP[v] = acc_s[v].to(tKVrP.element_type)
    arch.warpgroup_fence_operand(tKVrP)
    fence_operands(acc_dv, acc_dk)
    for kb in cute.range_constexpr(BLOCK_M // 16):
        cute.gemm(mma_kv, acc_dv, tKVrP[None, None, kb], tKVrdO[None, None, kb, read.index], acc_dv)
    wg.commit_group()
    wg.wait_group(1)                               # dP^T is there; dV may still run
    arch.warpgroup_fence_operand(acc_dp)
    for v in cute.range_constexpr(n_vals):
        _, col = cS[v]
        tKVrdS[v] = (acc_s[v] * (acc_dp[v] - sD[col, read.index])).to(tKVrdS.element_type)
    arch.warpgroup_fence_operand(tKVrdS)
    fence_operands(acc_dv, acc_dk)
    for kb in cute.range_constexpr(BLOCK_M // 16):
        cute.gemm(mma_kv, acc_dk, tKVrdS[None, None, kb], tKVrQ[None, None, kb, read.index], acc_dk)
    wg.commit_group()
    # dS goes into the buffer of the step's stage: a warpgroup writes a buffer again STAGES steps later, past the
    # barrier below of a step in between, which the other warpgroup reaches only after this step's dQ MMAs
    buf = read.index
    _store_ds(tKVrdS, sdS[None, None, buf], group, wtid)
    # both warpgroups' dS is in shared memory (and visible to the MMAs' proxy)
    arch.fence_view_async_shared()
    arch.barrier(barrier_id=1, number_of_threads=MMA_THREADS)
    fence_operands(acc_dp, acc_dp)
    gemm_ss(mma_dq, acc_dp, tQrdS, tQrK, None, keys, buf)          # dQ into dP^T's registers
    wg.commit_group()
    wg.wait_group(0)
    arch.warpgroup_fence_operand(acc_dv)
    arch.warpgroup_fence_operand(acc_dk)
    arch.warpgroup_fence_operand(acc_dp)
    loads.consumer_release(read)
    read.advance()
    _reduce_dq(reduce_dq, tma_dqa, acc_dp, sdQ, group, wtid, t, tile)


@cute.jit
def _store_ds(tKVrdS, sdS, group, wtid):
    """Write the warpgroup's ``dS^T`` (keys ``64 group ..`` by 64 queries, in the accumulator's layout) into
    ``sdS`` (queries by keys, the queries of a key contiguous) with ``stmatrix``: a key of ``dS^T`` is a row of
    ``sdS``'s memory. Warp ``w`` stores keys ``16 w ..`` of the warpgroup's, 16 queries per ``stmatrix.x4``
    (values ``8 q ..`` of the thread); lane ``l`` names the row of key ``l % 8 (+ 8 for (l / 8) odd)`` at the
    queries ``16 q + 8 (l / 16) ..``."""
    dt = tKVrdS.element_type
    stm = cute.make_copy_atom(warp_ops.StMatrix8x8x16bOp(False, 4), dt)
    lane, warp = wtid % 32, wtid // 32
    key_row = sdS[None, 64 * group + 16 * warp + 8 * (lane // 8 % 2) + lane % 8]
    for q in cute.range_constexpr(cute.size(tKVrdS) // 8):
        out = cute.make_fragment(8, dt)
        for v in cute.range_constexpr(8):
            out[v] = tKVrdS[8 * q + v]
        cute.copy(stm, out, cute.local_tile(key_row, (8,), (2 * q + lane // 16,)))


def _dq_tile(batch, head, m, c, heads, m_blocks, parts):
    """The accumulator tile of rows ``64 m ..`` and columns ``64 c ..`` of ``head``'s dQ."""
    return ((batch * heads + head) * m_blocks + m) * parts + c


@cute.jit
def _reduce_dq(reduce_dq, tma_dqa, acc_dq, sdQ, group, wtid, j, tile):
    """Add the warpgroup's dQ tile to the accumulator's ``tile``: its values go into the warpgroup's
    shared-memory buffer ``j % 2`` in register order (values ``4 u .. 4 u + 3`` of thread ``w`` at ``512 u + 4 w``:
    16-byte stores, a warp's 512 bytes contiguous), and one thread issues the TMA reduction of the 16 KB. That
    thread first waits until the reduction issued from the same buffer two tiles ago has read it."""
    buf = group * DQ_BUFFERS + j % DQ_BUFFERS
    if wtid == 0:
        arch.tma_store_wait(DQ_BUFFERS - 1, read=True)
    arch.barrier(barrier_id=6 + group, number_of_threads=128)
    wide = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.Float32, num_bits_per_copy=128)
    for u in cute.range_constexpr(DQ_VALUES // 4):
        vals = cute.make_fragment(4, cute.Float32)
        for i in cute.range_constexpr(4):
            vals[i] = acc_dq[4 * u + i]
        cute.copy(wide, vals, cute.local_tile(sdQ[None, buf], (4,), (u * 128 + wtid,)))
    arch.fence_view_async_shared()
    arch.barrier(barrier_id=6 + group, number_of_threads=128)
    if wtid == 0:
        box = cute.make_tensor(sdQ[None, buf].iterator, cute.make_layout((DQ_VALUES, 128), stride=(128, 1)))
        tDsD, tDgD = cpasync.tma_partition(reduce_dq, 0, cute.Layout(1), cute.group_modes(box, 0, 2),
                                           cute.group_modes(cute.local_tile(tma_dqa, (DQ_VALUES, 128), (tile, 0)),
                                                            0, 2))
        cute.copy(reduce_dq, tDsD, tDgD)
        arch.tma_store_arrive()


def workspace_shapes(b, sq, heads, d):
    """The shapes of ``_backward``'s fp32 workspaces for ``q`` of shape ``(b, sq, heads, d)``: ``D`` and
    ``lse * log2(e)`` ``(b, heads, padded rows)``, and the ``dQ`` accumulator ``(tiles * 32, 128)`` (zeroed by the
    caller)."""
    m_blocks = -(-sq // BLOCK_M)
    return (b, heads, m_blocks * BLOCK_M), (b, heads, m_blocks * BLOCK_M), \
        (b * heads * m_blocks * (d // 64) * DQ_VALUES, 128)


def _check(q, k, v, out, lse, dout, dq, dk, dv, dsum, lse2, dqa, causal, softmax_scale):
    check_args(q, k, v, out, lse, None, None, None, causal, softmax_scale)
    who = "attention_backward"
    if q.shape[-1] not in BWD_HEAD_DIMS:
        raise cute.CuteValueError(f"{who}: head dimensions {BWD_HEAD_DIMS}, got {q.shape[-1]}")
    for name, t, like in (("dout", dout, q), ("dq", dq, q), ("dk", dk, k), ("dv", dv, k)):
        if tuple(t.shape) != tuple(like.shape) or t.element_type is not q.element_type:
            raise cute.CuteValueError(f"{who}: {name} must be {q.element_type.name} of the shape {tuple(like.shape)}, "
                                      f"got {t.element_type.name} {tuple(t.shape)}")
        if t.layout.stride[-1] != 1:
            raise cute.CuteValueError(f"{who}: {name}'s head dimension must be contiguous, got the strides "
                                      f"{t.layout.stride}")
    for name, t in (("out", out), ("dout", dout), ("dk", dk), ("dv", dv)):
        check_rows_stored_in_chunks(who, name, t)
    shapes = workspace_shapes(*q.shape)
    if shapes[2][0] >= 2 ** 31:
        raise cute.CuteValueError(f"{who}: the dQ accumulator's {shapes[2][0]} rows pass the TMA's 32-bit "
                                  f"coordinates (batch x heads x seqlen_q x head_dim / 128 < 2^31)")
    for name, t, shape in zip(("dsum", "lse2", "dqa"), (dsum, lse2, dqa), shapes):
        compact = cute.make_ordered_layout(shape, order=tuple(reversed(range(len(shape)))))
        steps = [(st, want) for st, want, e in zip(t.layout.stride, compact.stride, shape) if e != 1]
        if tuple(t.shape) != shape or t.element_type is not cute.Float32 or any(st != want for st, want in steps):
            raise cute.CuteValueError(f"{who}: the workspace {name} must be a row-major Float32 tensor of the shape "
                                      f"{shape}, got {t.element_type.name} {tuple(t.shape)} with the strides "
                                      f"{tuple(t.layout.stride)}")
        if t.iterator.alignment < 16:
            raise cute.CuteValueError(f"{who}: the workspace {name} must be 16-byte aligned (the TMA's rule), got a "
                                      f"{t.iterator.alignment}-byte aligned pointer")


@cute.jit
def _backward(q, k, v, out, lse, dout, dq, dk, dv, dsum, lse2, dqa, causal=False, softmax_scale=None):
    """The three kernels of the module; ``dsum``, ``lse2`` and ``dqa`` are fp32 workspaces of the shapes
    :func:`workspace_shapes` gives, ``dqa`` zero."""
    _check(q, k, v, out, lse, dout, dq, dk, dv, dsum, lse2, dqa, causal, softmax_scale)
    dt = q.element_type
    b, sq, heads, d = q.shape
    sk, kv_heads = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(d) if softmax_scale is None else float(softmax_scale)
    K, MN = wg.OperandMajorMode.K, wg.OperandMajorMode.MN
    mma_s = hh.make_trivial_tiled_mma(dt, dt, K, K, cute.Float32, (2, 1, 1), (64, BLOCK_M))
    mma_kv = hh.make_trivial_tiled_mma(dt, dt, K, MN, cute.Float32, (2, 1, 1), (64, d), wg.OperandSource.RMEM)
    mma_dq = hh.make_trivial_tiled_mma(dt, dt, MN, MN, cute.Float32, (1, 1, 1), (64, 64))
    k_layout = hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (BLOCK_N, BLOCK_M, d), dt, 1)
    k_mn_layout = hh.make_smem_layout_b(LayoutEnum.COL_MAJOR, (BLOCK_M, d, BLOCK_N), dt, 1)
    q_layout = hh.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (BLOCK_N, BLOCK_M, d), dt, STAGES)
    q_mn_layout = hh.make_smem_layout_b(LayoutEnum.COL_MAJOR, (BLOCK_N, d, BLOCK_M), dt, STAGES)
    ds_layout = hh.make_smem_layout_a(LayoutEnum.COL_MAJOR, (BLOCK_M, d, BLOCK_N), dt, STAGES)
    dq_layout = cute.make_layout((DQ_VALUES * 128, 2 * DQ_BUFFERS))
    row_layout = cute.make_layout((BLOCK_M, STAGES))
    qv, kv, vv, ov, dov, dqv, dkv, dvv = (tokens_major(t, False) for t in (q, k, v, out, dout, dq, dk, dv))
    g2s = cpasync.CopyBulkTensorTileG2SOp()
    load_q, tma_q = cpasync.make_tiled_tma_atom(g2s, qv, cute.slice_(q_layout, (None, None, 0)), (BLOCK_M, d))
    load_do, tma_do = cpasync.make_tiled_tma_atom(g2s, dov, cute.slice_(q_layout, (None, None, 0)), (BLOCK_M, d))
    load_k, tma_k = cpasync.make_tiled_tma_atom(g2s, kv, cute.slice_(k_layout, (None, None, 0)), (BLOCK_N, d))
    load_v, tma_v = cpasync.make_tiled_tma_atom(g2s, vv, cute.slice_(k_layout, (None, None, 0)), (BLOCK_N, d))
    rows_view = [cute.make_tensor(t.iterator, cute.select(t.layout, mode=[2, 1, 0])) for t in (lse2, dsum)]
    load_l, tma_l = cpasync.make_tiled_tma_atom(g2s, rows_view[0], cute.make_layout((BLOCK_M,)), (BLOCK_M,))
    load_dsum, tma_dsum = cpasync.make_tiled_tma_atom(g2s, rows_view[1], cute.make_layout((BLOCK_M,)), (BLOCK_M,))
    reduce_dq, tma_dqa = cpasync.make_tiled_tma_atom(
        cpasync.CopyReduceBulkTensorTileS2GOp(), dqa, cute.make_layout((DQ_VALUES, 128), stride=(128, 1)),
        (DQ_VALUES, 128))
    per_cta = 128 // (d // 8)
    _prepare(ov, dov, lse, dsum, lse2, sq, d).launch(grid=(cute.size(dsum, mode=[2]) // per_cta, heads, b),
                                                     block=128)
    attention_backward_kernel(mma_s, mma_kv, mma_dq, load_q, tma_q, load_do, tma_do, load_k, tma_k, load_v, tma_v,
                              load_l, tma_l, load_dsum, tma_dsum, reduce_dq, tma_dqa, dkv, dvv, k_layout, q_layout,
                              q_mn_layout, k_mn_layout, ds_layout, dq_layout, row_layout, heads // kv_heads, causal,
                              scale, (sq, sk)).launch(grid=(cute.ceil_div(sk, BLOCK_N), kv_heads, b),
                                                      block=ATTN_THREADS)
    mma_o = hh.make_trivial_tiled_mma(dt, dt, K, MN, cute.Float32, (1, 1, 1), (64, d))    # (its C layout only)
    _finish_dq(mma_o, dqa, dqv, sq, d, scale, cute.make_layout((BLOCK_M, d), stride=(d, 1))).launch(
        grid=(cute.ceil_div(sq, BLOCK_M), heads, b), block=128)


def attention_backward(q, k, v, out, lse, dout, dq, dk, dv, causal=False, softmax_scale=None, stream=None):
    """``dq``, ``dk``, ``dv`` of :func:`examples.attention` (torch tensors; see the module), with the forward's
    ``causal`` and ``softmax_scale``. Allocates its fp32 workspaces (``D``, ``lse * log2(e)``, the zeroed ``dQ``
    accumulator) with torch, on torch's current stream: pass that stream as ``stream`` when it is not the legacy
    default one (a custom operator's backward, a CUDA-graph capture)."""
    import torch

    shapes = workspace_shapes(*q.shape)
    dsum, lse2 = (torch.empty(shape, device=q.device, dtype=torch.float32) for shape in shapes[:2])
    dqa = torch.zeros(shapes[2], device=q.device, dtype=torch.float32)
    _backward(q, k, v, out, lse, dout, dq, dk, dv, dsum, lse2, dqa, causal, softmax_scale, stream=stream)
