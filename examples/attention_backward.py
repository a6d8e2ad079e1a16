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

1. ``_prepare``: per query row ``D`` and ``lse * log2(e)`` (``+inf`` for a row that saw no key, so its P is 0), and
   the row's fp32 ``dQ`` accumulator zeroed, in workspaces padded to whole 64-row blocks;
2. ``attention_backward_kernel``: a CTA per 128 keys of one KV head. Its producer warp loads the K and V tiles
   once, then the Q and dO tiles of every 64-query block that sees the keys (each query head of the group in
   turn) through a ``PipelineTmaAsync``. Each of the two consumer warpgroups owns 64 keys and, per query block,
   computes ``S^T = K Q^T`` and ``dP^T = V dO^T`` (WGMMAs from shared memory), ``P^T`` and ``dS^T`` in registers
   (masked where a key is past the keys, a query past the queries, or past the causal diagonal), then
   ``dV += P^T dO`` and ``dK += dS^T Q`` with ``P^T`` and ``dS^T`` as register operands (their accumulator layout is
   the register-operand layout), and ``dQ`` of its 64 keys ``dS K`` from ``dS`` written to shared memory, added to
   the fp32 accumulator with ``red.global.add.f32`` (the padded rows take the zeros of the masked queries);
   at the end it stores ``dK * scale`` and ``dV`` through shared memory;
3. ``_finish_dq``: ``dQ = scale * accumulator``, rounded to the input type.

The fp32 ``dQ`` accumulation order across CTAs is not fixed, so ``dq`` may differ in its last bits between runs;
``dk`` and ``dv`` are the same bits every run.
"""

import math

import cute_py as cute
from cute_py import arch, pipeline
from cute_py.nvgpu import cpasync
from cute_py.nvgpu import warpgroup as wg
from cute_py.utils import LayoutEnum
from cute_py.utils import hopper_helpers as hh

from .attention import (ATTN_THREADS, LOG2E, MMA_THREADS, PRODUCER_WARP, fence_operands, gemm_ss, head_rows,
                        store_rows)
from .attention_args import check_args, check_rows_stored_in_chunks, tokens_major

__all__ = ["attention_backward", "attention_backward_kernel", "BWD_HEAD_DIMS"]

BWD_HEAD_DIMS = (64, 128)
BLOCK_N = 128          # keys per CTA, 64 per consumer warpgroup
BLOCK_M = 64           # queries per step
STAGES = 2
PRODUCER_REGS = 24
CONSUMER_REGS = 240


@cute.kernel
def _prepare(o, do, lse, dsum, lse2, dqa, seqlen_q, d):
    """Thread ``i`` of CTA ``(x, head, batch)``: query row ``128 x + i`` (one thread per padded row)."""
    bx, head, batch = arch.block_idx()
    tidx, _, _ = arch.thread_idx()
    row = bx * 128 + tidx
    if row < cute.size(dsum, mode=[2]):
        acc = 0.0
        l2 = 0.0
        if row < seqlen_q:
            for j in cute.range_constexpr(d):
                acc = acc + o[row, j, head, batch].to(cute.Float32) * do[row, j, head, batch].to(cute.Float32)
            x = lse[batch, head, row]
            l2 = cute.math.select(x == -math.inf, math.inf, x * LOG2E)
        dsum[batch, head, row] = acc
        lse2[batch, head, row] = l2
        for j in cute.range_constexpr(d):
            dqa[batch, head, row, j] = 0.0


@cute.kernel
def _finish_dq(dqa, dq, seqlen_q, d, scale):
    bx, head, batch = arch.block_idx()
    tidx, _, _ = arch.thread_idx()
    row = bx * 128 + tidx
    if row < seqlen_q:
        for j in cute.range_constexpr(d):
            dq[row, j, head, batch] = (dqa[batch, head, row, j] * scale).to(dq.element_type)


@cute.kernel
def attention_backward_kernel(mma_s, mma_kv, mma_dq, load_q, tma_q, load_do, tma_do, load_k, tma_k, load_v, tma_v,
                              dk, dv, dqa, lse2, dsum, k_layout, q_layout, q_mn_layout, k_mn_layout, ds_layout,
                              head_ratio, causal, scale, seqlens):
    n_block, kv_head, batch = arch.block_idx()
    tidx, _, _ = arch.thread_idx()
    warp = arch.make_warp_uniform(arch.warp_idx())
    d = tma_q.shape[1]
    seqlen_q, seqlen_k = seqlens
    if warp == PRODUCER_WARP:
        for atom in (load_q, load_do, load_k, load_v):
            cpasync.prefetch_descriptor(atom)
    smem = arch.SmemAllocator()
    sK = smem.allocate_tensor(load_k.dtype, k_layout, 1024)          # (128 keys, D, 1)
    sV = smem.allocate_tensor(load_v.dtype, k_layout, 1024)
    sQ = smem.allocate_tensor(load_q.dtype, q_layout, 1024)          # (64 queries, D, stages)
    sdO = smem.allocate_tensor(load_do.dtype, q_layout, 1024)
    sdS = smem.allocate_tensor(load_q.dtype, ds_layout, 1024)        # (64 queries, 64 keys, 2 warpgroups)
    kv_bar = smem.allocate_mbarrier(1)
    bars = smem.allocate_mbarrier(2 * STAGES)
    if tidx == 0:
        arch.mbarrier_init(kv_bar, 1)
        arch.mbarrier_init_fence()
    loads = pipeline.PipelineTmaAsync.create(
        num_stages=STAGES, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, MMA_THREADS // 32),
        tx_count=2 * BLOCK_M * d * load_q.dtype.width // 8, barrier_storage=bars)
    diag = seqlen_k - seqlen_q                  # key j is visible from query i when j <= i + diag (causal)
    m_blocks = (seqlen_q + BLOCK_M - 1) // BLOCK_M
    m_start = 0
    if causal:
        m_start = cute.min(m_blocks, cute.max(0, n_block * BLOCK_N - diag) // BLOCK_M)
    m_count = m_blocks - m_start
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
                loads.producer_acquire(state)
                cute.copy(load_q, tQgQ, tQsQ[None, state.index], tma_bar_ptr=loads.producer_get_barrier(state))
                cute.copy(load_do, tOgO, tOsO[None, state.index], tma_bar_ptr=loads.producer_get_barrier(state))
                loads.producer_commit(state)
                state.advance()
            loads.producer_tail(state)
    else:
        arch.warpgroup_reg_alloc(CONSUMER_REGS)
        _consume(mma_s, mma_kv, mma_dq, sK, sV, sQ, sdO, sdS, q_mn_layout, k_mn_layout, kv_bar, loads, dk, dv, dqa,
                 lse2, dsum, tidx, n_block, kv_head, batch, head_ratio, m_start, m_count, steps, seqlen_q, seqlen_k,
                 causal, scale)


@cute.jit
def _consume(mma_s, mma_kv, mma_dq, sK, sV, sQ, sdO, sdS, q_mn_layout, k_mn_layout, kv_bar, loads, dk, dv, dqa,
             lse2, dsum, tidx, n_block, kv_head, batch, head_ratio, m_start, m_count, steps, seqlen_q, seqlen_k,
             causal, scale):
    d = cute.size(sQ, mode=[1])
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
    # the warpgroup's dS (queries x its 64 keys) and its 64 keys of K as the B operand of dQ = dS K
    sdS_w = sdS[None, None, group]
    tQrdS = mma_dq.make_fragment_A(thr_dq.partition_A(sdS_w))               # (1, 1, 4)
    cQ = thr_dq.partition_C(cute.make_identity_tensor((BLOCK_M, 64)))
    n_vals = cute.size(acc_s)
    lse_f = cute.make_fragment(n_vals // 2, cute.Float32)      # per column of the thread: lse * log2(e), D
    d_f = cute.make_fragment(n_vals // 2, cute.Float32)
    read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
    arch.mbarrier_wait(kv_bar, 0)
    for t in range(steps):
        head = kv_head * head_ratio + t // m_count
        m = m_start + t % m_count
        first_q = m * BLOCK_M
        for v in cute.range_constexpr(n_vals):
            if (v // 2) % 2 == 0:
                _, col = cS[v]
                lse_f[v % 2 + 2 * (v // 4)] = lse2[batch, head, first_q + col]
                d_f[v % 2 + 2 * (v // 4)] = dsum[batch, head, first_q + col]
        loads.consumer_wait(read)
        fence_operands(acc_s, acc_dp)
        gemm_ss(mma_s, acc_s, tSrK, tSrQ, read.index, d)
        gemm_ss(mma_s, acc_dp, tSrV, tSrdO, read.index, d)
        wg.commit_group()
        wg.wait_group(0)
        arch.warpgroup_fence_operand(acc_s)
        arch.warpgroup_fence_operand(acc_dp)
        first_k = n_block * BLOCK_N
        for v in cute.range_constexpr(n_vals):
            row, col = cS[v]
            key = first_k + row
            query = first_q + col
            hidden = key >= seqlen_k or query >= seqlen_q
            if causal:
                hidden = hidden or key > query + diag
            k = v % 2 + 2 * (v // 4)
            p = cute.math.exp2(cute.math.fma(acc_s[v], scale * LOG2E, -lse_f[k]), fastmath=True)
            p = cute.math.select(hidden, 0.0, p)
            ds = p * (acc_dp[v] - d_f[k])
            tKVrP[v] = p.to(tKVrP.element_type)
            tKVrdS[v] = ds.to(tKVrdS.element_type)
            # dS^T's value (key, query) is dS[query, key of the warpgroup]
            sdS_w[col, row - group * 64] = tKVrdS[v]
        arch.warpgroup_fence_operand(tKVrP)
        arch.warpgroup_fence_operand(tKVrdS)
        fence_operands(acc_dv, acc_dk)
        for kb in cute.range_constexpr(BLOCK_M // 16):
            cute.gemm(mma_kv, acc_dv, tKVrP[None, None, kb], tKVrdO[None, None, kb, read.index], acc_dv)
        for kb in cute.range_constexpr(BLOCK_M // 16):
            cute.gemm(mma_kv, acc_dk, tKVrdS[None, None, kb], tKVrQ[None, None, kb, read.index], acc_dk)
        wg.commit_group()
        # dQ of the warpgroup's keys: dS (from shared memory) times its 64 keys of K, 64 columns at a time
        arch.fence_view_async_shared()
        arch.barrier(barrier_id=1 + group, number_of_threads=128)
        for c in cute.range_constexpr(d // 64):
            gKc = cute.local_tile(sK_mn[None, None, 0], (64, 64), (c, group))     # (64 columns, 64 keys)
            tQrK = mma_dq.make_fragment_B(thr_dq.partition_B(gKc))
            acc_dq = mma_dq.make_fragment_C(cQ)
            fence_operands(acc_dq, acc_dq)
            gemm_ss(mma_dq, acc_dq, tQrdS, tQrK, None, 64)
            wg.commit_group()
            wg.wait_group(0)
            arch.warpgroup_fence_operand(acc_dq)
            for v in cute.range_constexpr(cute.size(acc_dq)):
                r, col = cQ[v]
                arch.red(dqa.iterator + dqa.layout((batch, head, first_q + r, c * 64 + col)), acc_dq[v], op="add",
                         dtype="f32")
        arch.warpgroup_fence_operand(acc_dv)
        arch.warpgroup_fence_operand(acc_dk)
        loads.consumer_release(read)
        read.advance()
        # every thread of the warpgroup has read dS before the next step writes it
        arch.barrier(barrier_id=1 + group, number_of_threads=128)
    for v in cute.range_constexpr(cute.size(acc_dk)):
        acc_dk[v] = acc_dk[v] * scale
    arch.warpgroup_fence_operand(acc_dk)
    rows = seqlen_k - n_block * BLOCK_N
    gdK = cute.local_tile(head_rows(dk, 0, batch, kv_head), (BLOCK_N, d), (n_block, 0))
    gdV = cute.local_tile(head_rows(dv, 0, batch, kv_head), (BLOCK_N, d), (n_block, 0))
    store_rows(acc_dk, cKV, sK, gdK, group, wtid, rows, d)
    store_rows(acc_dv, cKV, sV, gdV, group, wtid, rows, d)


def _check(q, k, v, out, lse, dout, dq, dk, dv, causal, softmax_scale):
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
    for name, t in (("dk", dk), ("dv", dv)):
        check_rows_stored_in_chunks(who, name, t)


@cute.jit
def _backward(q, k, v, out, lse, dout, dq, dk, dv, dsum, lse2, dqa, causal=False, softmax_scale=None):
    _check(q, k, v, out, lse, dout, dq, dk, dv, causal, softmax_scale)
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
    ds_layout = hh.make_smem_layout_a(LayoutEnum.COL_MAJOR, (BLOCK_M, d, 64), dt, 2)
    qv, kv, vv, ov, dov, dqv, dkv, dvv = (tokens_major(t, False) for t in (q, k, v, out, dout, dq, dk, dv))
    g2s = cpasync.CopyBulkTensorTileG2SOp()
    load_q, tma_q = cpasync.make_tiled_tma_atom(g2s, qv, cute.slice_(q_layout, (None, None, 0)), (BLOCK_M, d))
    load_do, tma_do = cpasync.make_tiled_tma_atom(g2s, dov, cute.slice_(q_layout, (None, None, 0)), (BLOCK_M, d))
    load_k, tma_k = cpasync.make_tiled_tma_atom(g2s, kv, cute.slice_(k_layout, (None, None, 0)), (BLOCK_N, d))
    load_v, tma_v = cpasync.make_tiled_tma_atom(g2s, vv, cute.slice_(k_layout, (None, None, 0)), (BLOCK_N, d))
    rows = cute.ceil_div(cute.size(dsum, mode=[2]), 128)
    _prepare(ov, dov, lse, dsum, lse2, dqa, sq, d).launch(grid=(rows, heads, b), block=128)
    attention_backward_kernel(mma_s, mma_kv, mma_dq, load_q, tma_q, load_do, tma_do, load_k, tma_k, load_v, tma_v,
                              dkv, dvv, dqa, lse2, dsum, k_layout, q_layout, q_mn_layout, k_mn_layout, ds_layout,
                              heads // kv_heads, causal, scale, (sq, sk)).launch(
        grid=(cute.ceil_div(sk, BLOCK_N), kv_heads, b), block=ATTN_THREADS)
    _finish_dq(dqa, dqv, sq, d, scale).launch(grid=(cute.ceil_div(sq, 128), heads, b), block=128)


def attention_backward(q, k, v, out, lse, dout, dq, dk, dv, causal=False, softmax_scale=None):
    """``dq``, ``dk``, ``dv`` of :func:`examples.attention` (torch tensors; see the module), with the forward's
    ``causal`` and ``softmax_scale``. Allocates its fp32 workspaces (``D``, ``lse * log2(e)``, the ``dQ``
    accumulator) with torch, padded to whole blocks of 64 query rows."""
    import torch

    b, sq, h, d = q.shape
    padded = -(-sq // BLOCK_M) * BLOCK_M
    dsum = torch.empty(b, h, padded, device=q.device, dtype=torch.float32)
    lse2 = torch.empty_like(dsum)
    dqa = torch.empty(b, h, padded, d, device=q.device, dtype=torch.float32)
    _backward(q, k, v, out, lse, dout, dq, dk, dv, dsum, lse2, dqa, causal, softmax_scale)
