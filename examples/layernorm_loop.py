"""LayerNorm of long rows on a persistent grid of clusters: each cluster normalises the rows ``g, g + P, g + 2P ...``
(``g`` its index, ``P`` the clusters launched), its row staged through shared memory in ``depth`` buffers taken in
turn, so that the copies of the next ``depth - 1`` rows are in flight while a row is reduced, exchanged across the
cluster and stored.

A launch of one cluster per row loads a row, reduces it and stores it with nothing in flight during the exchanges
and the store; with 16 CTAs a row, clusters also wait to be placed. Here each CTA copies its slice of a row (the
chunks :mod:`row_reduce` gives it) into a buffer of its own by ``cp.async``, reduces it, exchanges the partials
across the cluster (once, as (sum, M2) pairs, where every thread's chunks are whole; else the sum, then the squared
deviations), stores the row, and then issues the copy of its cluster's row ``depth`` rows later into the same
buffer. ``w`` and ``b`` are held in registers, staged once in shared memory, or read chunk by chunk beside each
row's store (``LoopConfig.wb``). Each element's square-and-sum and its affine output are fused multiply-adds: with
one CTA of 8 warps an SM, the Float32 instructions bound the loop (``ncu``: 2 warps a scheduler waiting on each
other's adds and products). The results agree with :mod:`norms`'s up to that rounding, and are the same on every run.

``P`` defaults to the clusters the device holds at once (:func:`loop_clusters`): more would run in a second wave,
each cluster walking its own rows, and end late; rows are numbered in Int32, so a launch's rows plus its copies
ahead stay below 2**31 (``CuteValueError`` past that).
"""

import operator
from dataclasses import dataclass

import cute_py as cute
from cute_py import arch

from .gemm_plan import cluster_capacity
from .norm_parts import deviations, every_thread_full, mean_and_squares, store_affine, store_stats, sum_m2
from .row_chunks import load_chunk
from .row_reduce import (RowPlan, RowReduction, chunk_index, cluster_start, rearm, row_coords, row_reduce,
                         store_if_row, MAX_CLUSTER)
from .row_math import elements, fold
from .row_stage import Staged, stage, staged_bytes, wait_staged

__all__ = ["layernorm_loop_kernel", "LoopConfig", "loop_plan", "loop_smem", "loop_ctas_per_sm", "loop_clusters",
           "default_loop", "launch_loop", "LOOP_SMEM", "LOOP_MIN_REGS", "LOOP_FROM", "LOOP_THREADS", "LOOP_CHUNKS"]

LOOP_SMEM = 227 * 1024   # shared memory an SM gives its CTAs (sm_90)
LOOP_MIN_REGS = 64       # registers a thread the kernel keeps at least (bounds the CTAs an SM)
LOOP_FROM = 65536        # the default takes the loop for rows longer than this (a cluster of 16 a row otherwise)
LOOP_THREADS = {16: 256, 32: 512}   # the default's threads a CTA, by the width of x's type
LOOP_CHUNKS = 8          # the default's chunks a thread at most (w and b in registers)
WB = ("global", "smem", "registers")   # where LoopConfig.wb keeps w and b


@dataclass(frozen=True)
class LoopConfig:
    """How :func:`layernorm_loop_kernel` runs: ``cluster`` CTAs of ``threads`` a row, ``depth`` row buffers
    (``depth - 1`` rows copied ahead); ``w`` and ``b`` (``wb``) read from global memory beside each row's store
    (``"global"``), staged once in shared memory (``"smem"``) or loaded once into registers (``"registers"``);
    ``one_exchange``: rows that fill every thread exchange (sum, M2) pairs once instead of the sum, then the squared
    deviations; ``clusters``: the clusters launched (``None``: those the device holds at once); ``ctas_per_sm``: at
    most this many CTAs an SM (``None``: as many as shared memory, threads and ``LOOP_MIN_REGS`` registers allow;
    fewer leave each thread more registers)."""

    cluster: int
    threads: int
    depth: int = 2
    wb: str = "global"
    one_exchange: bool = False
    clusters: int | None = None
    ctas_per_sm: int | None = None

    def __post_init__(self):
        cluster, threads, depth = self.cluster, self.threads, self.depth
        if not (type(cluster) is int and 2 <= cluster <= MAX_CLUSTER and type(threads) is int and
                threads in (128, 256, 512, 1024) and type(depth) is int and 1 <= depth <= 4):
            raise cute.CuteValueError(f"layernorm_forward: a loop over rows takes clusters of 2..16 CTAs of 128..1024 "
                                      f"threads and 1..4 buffers, got cluster={cluster!r}, threads={threads!r}, "
                                      f"depth={depth!r}")
        if self.wb not in WB or type(self.one_exchange) is not bool:
            raise cute.CuteValueError(f"layernorm_forward: wb must be one of {WB} and one_exchange a bool, got "
                                      f"wb={self.wb!r}, one_exchange={self.one_exchange!r}")
        for name in ("clusters", "ctas_per_sm"):
            v = getattr(self, name)
            if v is not None and (type(v) is not int or v < 1):
                raise cute.CuteValueError(f"layernorm_forward: {name} must be None or an int >= 1, got {v!r}")


def loop_plan(n, vec, config):
    """The :class:`RowPlan` of rows of ``n`` elements in chunks of ``vec`` over ``config``'s CTAs: one row a
    cluster, ``config.threads`` threads a CTA, as many chunks a thread as the row needs."""
    nv = -(-n // vec)
    return RowPlan(n, vec, config.threads, 1, config.cluster, -(-nv // (config.threads * config.cluster)))


def loop_smem(plan, config, x_dtype, w_dtype, b_dtype):
    """The shared memory a CTA takes, at most (bytes): the row buffers, ``w`` and ``b`` where staged, and the
    reductions' buffers and mbarriers (two rounds of pairs a buffer, each rounded to 16 bytes), with 2 KiB for
    alignment."""
    total = config.depth * staged_bytes(plan, x_dtype)
    if config.wb == "smem":
        total += staged_bytes(plan, w_dtype) + staged_bytes(plan, b_dtype)
    per_slot = -(-plan.warps * 8 // 16) * 16 + -(-plan.cluster * 8 // 16) * 16 + 8
    return total + 2 * config.depth * per_slot + 2048


def loop_ctas_per_sm(plan, config, x_dtype, w_dtype, b_dtype):
    """The CTAs an SM holds at once: by shared memory, threads and ``LOOP_MIN_REGS`` registers a thread (0 where
    one CTA's buffers do not fit)."""
    smem = loop_smem(plan, config, x_dtype, w_dtype, b_dtype)
    most = min(LOOP_SMEM // smem, 2048 // config.threads, 65536 // (LOOP_MIN_REGS * config.threads))
    return most if config.ctas_per_sm is None else min(most, config.ctas_per_sm)


def loop_clusters(m, ctas_per_sm, cluster):
    """The clusters of a launch for ``m`` rows: those the device holds at once with ``ctas_per_sm`` CTAs an SM
    (``cluster_capacity`` of one CTA an SM, times ``ctas_per_sm``), at most one a row."""
    return max(1, min(m, cluster_capacity(cluster) * ctas_per_sm))


def default_loop(n, vec, dtype):
    """The default :class:`LoopConfig` for rows of ``n`` elements of ``dtype`` in chunks of ``vec``, or ``False``
    (a cluster or a CTA a row): for rows longer than ``LOOP_FROM`` in whole chunks of 128 bits or more, CTAs of
    ``LOOP_THREADS`` threads, one an SM, in the smallest cluster that gives each thread at most ``LOOP_CHUNKS``
    chunks and two buffers that fit an SM, ``w`` and ``b`` in registers, one exchange; 16-bit rows only where every
    thread's chunks lie inside the row. Measured (H200, 1 GiB inputs) against a cluster a row: Float32 0.73 ->
    0.93-0.95 of the copy ceiling at 131072 and 262144 (0.71-0.72 -> 0.94-0.95 at 100000 and 200000, 0.99x at
    70000), 16-bit 0.85-0.86 -> 0.90-0.91 at 131072 and 0.83 -> 0.85-0.87 at 262144, 1.01x at 98304; 16-bit rows
    with a partial end 0.92-0.95x (70000, 200000); at 65536 the loop ran at 0.90-0.93 against 0.94-0.96
    (benchmarks/RESULTS.md)."""
    if vec * dtype.width < 128 or n <= LOOP_FROM or dtype.width not in LOOP_THREADS:
        return False
    threads = LOOP_THREADS[dtype.width]
    cluster = 2
    while cluster <= MAX_CLUSTER:
        config = LoopConfig(cluster, threads, 2, "registers", True, ctas_per_sm=1)
        plan = loop_plan(n, vec, config)
        # (chunks wider than 128 bits, where y or w is narrower than x, may need a larger cluster to fit)
        if plan.chunks <= LOOP_CHUNKS and loop_ctas_per_sm(plan, config, dtype, dtype, dtype):
            return config if dtype.width == 32 or every_thread_full(plan) else False
        cluster *= 2
    return False


def launch_loop(config, vec, x, w, b, y, mean, rstd, eps):
    """Launch :func:`layernorm_loop_kernel` on ``config``'s persistent grid; ``CuteValueError`` where one CTA's
    buffers do not fit an SM, or where its rows' Int32 numbers would wrap."""
    m, n = x.shape
    plan = loop_plan(n, vec, config)
    per_sm = loop_ctas_per_sm(plan, config, x.element_type, w.element_type, b.element_type)
    if per_sm < 1:
        smem = loop_smem(plan, config, x.element_type, w.element_type, b.element_type)
        raise cute.CuteValueError(f"layernorm_forward: {config!r} stages {smem} bytes a CTA for rows of {n}, more "
                                  f"than the {LOOP_SMEM} of an SM: take a larger cluster or fewer buffers")
    units = min(m, config.clusters) if config.clusters is not None else loop_clusters(m, per_sm, config.cluster)
    if m + 2 * config.depth * units >= 2 ** 31:
        raise cute.CuteValueError(f"layernorm_forward: a loop over rows numbers them in Int32, up to rows + 2 x "
                                  f"buffers x clusters (the copies ahead): {m} rows, {config.depth} buffers and "
                                  f"{units} clusters pass 2**31 - 1")
    layernorm_loop_kernel(x, w, b, y, mean, rstd, eps, plan, config.depth, config.wb, config.one_exchange,
                          units).launch(
        grid=units * config.cluster, block=config.threads, cluster=(config.cluster, 1, 1),
        non_portable_cluster=config.cluster > 8, min_blocks_per_mp=per_sm)


@cute.kernel
def layernorm_loop_kernel(x, w, b, y, mean, rstd, eps, plan, depth, wb, one_exchange, units):
    once = one_exchange and every_thread_full(plan)
    rounds = 1 if cute.const_expr(once) else 2
    red = RowReduction(plan, 2 if cute.const_expr(once) else 1, rounds=rounds, stages=depth)
    g, t, rank = row_coords(plan)          # g: this cluster's first row, of units clusters
    m = x.shape[0]
    kept = None
    if cute.const_expr(wb == "smem"):
        sw, sb = stage((w, b), plan, t, rank)   # a group of its own, before the rows'
        kept = (sw, sb)
    elif cute.const_expr(wb == "registers"):
        kept = (_fragments(w, plan, t, rank), _fragments(b, plan, t, rank))
    bufs = []
    for d in cute.range_constexpr(depth):  # the cluster's first rows
        bufs.append(Staged(plan, x.element_type))
        _load_row(bufs[d], x, g + d * units, m, t, rank)
    cluster_start(plan)
    arch.cluster_wait()
    mine = -(-(m - g) // units)            # the rows this cluster normalises (g < m: at most one cluster a row)
    for i in range(-(-mine // depth)):
        for h in cute.range_constexpr(depth):
            r = g + (depth * i + h) * units
            _loop_row(x, w, b, y, mean, rstd, eps, red, bufs[h], kept, r, units, depth, once, t, rank, h, i % 2)


def _fragments(v, plan, t, rank):
    """This thread's chunks of the vector ``v`` in registers of its own type."""
    frags = []
    for k in cute.range_constexpr(plan.chunks):
        f = cute.make_rmem_tensor((plan.vec,), v.element_type)
        load_chunk(v, chunk_index(plan, k, t, rank), plan.vec, plan.n, f, 0.0, plan.full(k))
        frags.append(f)
    return frags


@cute.jit
def _load_row(buf, x, r, m, t, rank):
    """Copy row ``r`` of ``x`` into ``buf`` (nothing past the matrix); one ``cp.async`` group either way."""
    if r < m:
        buf.load(x[r, None], t, rank)
    arch.cp_async_commit_group()


@cute.jit
def _loop_row(x, w, b, y, mean, rstd, eps, red, buf, kept, r, units, depth, once, t, rank, slot, phase):
    """Row ``r`` (``r >= m``: reduced, not stored) from ``buf``; then ``buf`` takes row ``r + depth * units``."""
    plan = red.plan
    m = x.shape[0]
    wait_staged(depth - 1)                 # this row's copies; the next rows' may be in flight
    if cute.const_expr(once):              # this thread's (sum, M2), then one exchange
        s, q = _chunk_m2(buf.values(), plan.vec)
        total, sq = row_reduce((s, q), sum_m2(plan.chunks * plan.vec), red, slot, phase, False, counted=True)
        rearm(red, slot)
        mu = total / plan.n
    else:
        mu, sq = mean_and_squares(lambda again: buf.values(), plan, red, t, rank, (slot, depth + slot), phase, True)
    inv = cute.math.rsqrt(sq / plan.n + eps)
    ds = deviations(buf.values(), mu, plan, t, rank)
    if cute.const_expr(kept is None):
        store_affine(y, w, b, lambda k: ds[k], inv, r, plan, t, rank)
    else:
        ws, bs = _kept_values(kept[0]), _kept_values(kept[1])
        store_if_row(y, r, plan, t, rank, _affine(ds, inv, ws, bs, plan.vec))
    store_stats(r, m, t, rank, ((mean, mu), (rstd, inv)))
    # every value of buf went into the stores above: its slots may take the cluster's row depth rows on
    _load_row(buf, x, r + depth * units, m, t, rank)


def _chunk_m2(chunks, vec):
    """The sum and the sum of squared deviations from their mean of the values of ``chunks`` (Float32 TensorSSA of
    ``vec`` values each), one chunk at a time: each chunk's pair from its own mean (the squares summed by fused
    multiply-adds), folded into the running pair by :func:`norm_parts.sum_m2`'s combine (only one chunk's values
    live at once)."""
    inv = 1.0 / vec
    s = q = None
    for k, v in enumerate(chunks):
        es = elements([v])
        cs = fold(es, operator.add)
        mc = cs * inv
        ds = [e - mc for e in es]
        cq = fold([ds[j] * ds[j] for j in range(min(4, vec))], operator.add)
        for j in range(4, vec):
            cq = cute.math.fma(ds[j], ds[j], cq)
        if s is None:
            s, q = cs, cq
        else:
            s, q = sum_m2(vec)((s, q), (cs, cq), k, 1)
    return s, q


def _affine(ds, inv, ws, bs, vec):
    """``ds * inv * w + b`` chunk by chunk (Float32 TensorSSA), the last product and the sum fused."""
    out = []
    for d, wv, bv in zip(ds, ws, bs):
        frag = cute.make_rmem_tensor((vec,), cute.Float32)
        for j in range(vec):
            frag[j] = cute.math.fma(d[j] * inv, wv[j], bv[j])
        out.append(frag.load())
    return out


def _kept_values(kept):
    """Float32 TensorSSA of a kept vector's chunks (:class:`Staged`, or register fragments)."""
    if isinstance(kept, Staged):
        return kept.values()
    return [f.load().to(cute.Float32) for f in kept]
