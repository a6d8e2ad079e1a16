"""The epilogues of kernel 13 (:mod:`examples.gemm`): a consumer thread's fp32 accumulators to C, from registers
(:func:`store_tile`) or through shared memory and TMA stores (:func:`store_tile_tma`), the reduction of a tile's
K splits across the CTAs of a cluster (:func:`reduce_splits`), and the element-wise work fused before the store:
scale, bias and activation (:func:`fuse_epilogue`).

Every function is called by the 256 threads of the two consumer warpgroups, each with its accumulators in the
warpgroup MMA's C layout: value ``i`` of a thread lies in row ``t1 + 16 t2 + 8 ((i / 2) % 2)`` of its
warpgroup's 64 rows and column ``2 t0 + i % 2 + 8 (i / 4)`` (lane ``4 t1 + t0`` of warp ``t2``). A run of
``4 j`` values from ``4 j0`` on is therefore the thread's part of the ``8 j`` columns from ``8 j0`` on: a slice of
columns of the tile is a run of values, partitioned by a tiled MMA of the slice's width.
"""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync
from cute_py.nvgpu import warp as warp_ops

__all__ = ["store_tile", "store_tile_tma", "reduce_splits", "split_recv_layout", "fuse_epilogue", "activate",
           "column_offsets", "EPI_ROW_BYTES", "EPI_BUFFERS", "ACTIVATIONS", "epi_tile", "stmatrix_subtile"]

EPI_ROW_BYTES = 128                    # "tma": a subtile row of C is 128 bytes (64 16-bit or 32 fp32 elements)
EPI_BUFFERS = 2                        # "tma": shared subtile buffers per consumer warpgroup
SPLIT_VECTOR = 4                       # fp32 values per st.async of the split reduction (16 bytes)
FUSE_CHUNK = 4                         # accumulators a thread takes through the fused epilogue at a time
ACTIVATIONS = ("relu", "silu", "gelu", "gelu_tanh")   # torch's relu, silu, gelu, gelu(approximate="tanh")
_SQRT_HALF = 0.7071067811865476
_SQRT_2_OVER_PI = 0.7978845608028654


def epi_tile(c_dtype):
    """The ``"tma"`` epilogue's subtile of a consumer warpgroup: 64 rows of 128 bytes."""
    return (64, EPI_ROW_BYTES * 8 // c_dtype.width)


@cute.jit
def activate(x, activation):
    """``activation`` (one of :data:`ACTIVATIONS`, or ``None``: ``x`` itself) of the fp32 ``x``, as torch defines
    it: ``relu`` ``max(x, 0)`` (NaN stays NaN), ``silu`` ``x / (1 + exp(-x))`` (the PTX approximations of
    ``2^x`` and ``1 / x``, a few fp32 ulps), ``gelu`` ``x (1 + erf(x /
    sqrt 2)) / 2``, ``gelu_tanh`` ``x (1 + tanh(u)) / 2`` with ``u = sqrt(2 / pi) (x + 0.044715 x^3)``, computed
    as ``x / (1 + exp(-2 u))`` (the same function; no division, and no cancellation of ``1 + tanh(u)`` where
    ``tanh(u)`` is near -1, which leaves torch's fp32 formula 0 from about x = -9 on)."""
    if activation == "relu":
        x = cute.math.select(x < 0.0, 0.0, x)
    elif activation == "silu":
        x = x * arch.rcp_approx(1.0 + cute.math.exp(-x, fastmath=True))
    elif activation == "gelu":
        x = 0.5 * x * (1.0 + cute.math.erf(x * _SQRT_HALF))
    elif activation == "gelu_tanh":
        # (1 + tanh(u)) / 2 = 1 / (1 + exp(-2 u))
        x = x * arch.rcp_approx(1.0 + cute.math.exp(-2.0 * _SQRT_2_OVER_PI * cute.math.fma(0.044715 * x, x * x, x)))
    return x


def column_offsets(slice_mma, tile_mn):
    """The columns of a consumer thread's accumulators relative to its first one, ``(0, 1, 8, 9, 16, ..)``: the
    same for every thread of the tiled MMA ``slice_mma`` over ``tile_mn`` (checked on a few threads)."""
    ident = cute.make_identity_tensor(tile_mn)
    offsets = None
    for t in (0, 1, 37, 255):
        part = slice_mma.get_slice(t).partition_C(ident)
        cols = [part[i][1] for i in range(cute.size(part))]
        mine = tuple(col - cols[0] for col in cols)
        if offsets is not None and mine != offsets:
            raise cute.CuteValueError(f"gemm: the accumulators' columns are not one pattern for every thread "
                                      f"(thread 0: {offsets}, thread {t}: {mine})")
        offsets = mine
    return offsets


@cute.jit
def fuse_epilogue(acc, tCcC, offsets, bias, alpha, activation, n, scales=None):
    """``acc[i] = activation(alpha * scale_a * scale_b * acc[i] + bias[col])`` in fp32, in place, for each
    accumulator of a thread (in ``tCcC[0]``'s column plus ``offsets[i]``): the work fused before the store (which
    then rounds once to C's type). ``alpha`` a number (1: no product), ``scales`` ``None`` or the per-tensor
    scales ``(scale_a, scale_b)`` (one-element tensors, read once), ``bias`` a 1-D tensor of C's N columns or
    ``None``; a column past ``n`` (an edge tile's, never stored) reads no bias."""
    _, col0 = tCcC[0]
    scale = alpha
    if scales is not None:
        scale = alpha * scales[0][0] * scales[1][0]
    _fuse(acc, col0, offsets, bias, scale, activation, n)


@cute.jit
def _fuse(acc, col0, offsets, bias, alpha, activation, n):
    for q in cute.range_constexpr(cute.size(acc) // FUSE_CHUNK):
        # a chunk at a time, between fences: the compiler may not interleave all the values' work (at 128
        # accumulators a thread, that would spill)
        arch.warpgroup_fence_operand(acc, FUSE_CHUNK * q, FUSE_CHUNK)
        for i in cute.range_constexpr(FUSE_CHUNK * q, FUSE_CHUNK * (q + 1)):
            x = acc[i]
            if not (type(alpha) is float and alpha == 1.0):      # (a run-time scale always multiplies)
                x = x * alpha
            if bias is not None:
                if col0 + offsets[i] < n:
                    x = x + bias[col0 + offsets[i]].to(cute.Float32)
            acc[i] = activate(x, activation)
        arch.warpgroup_fence_operand(acc, FUSE_CHUNK * q, FUSE_CHUNK)


@cute.jit
def store_tile(acc, tCgC, tCcC, c, m, n, vector_c):
    """Write a consumer thread's accumulators to its elements of C, converted to C's type, predicated on
    ``(row, col)`` lying inside ``(m, n)``."""
    if vector_c:
        # values 2j and 2j + 1 of a thread's accumulators are two adjacent columns of one row: one store
        # of both where the pair lies inside C, C's row stride and pointer making it aligned
        out = cute.make_fragment(acc.layout, c.element_type)
        for i in cute.range_constexpr(cute.size(acc)):
            out[i] = acc[i].to(c.element_type)
        inside = cute.make_fragment(cute.size(acc) // 2, cute.Boolean)
        for j in cute.range_constexpr(cute.size(acc) // 2):
            row, col = tCcC[2 * j]
            inside[j] = row < m and col + 1 < n
        pair = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), c.element_type,
                                   num_bits_per_copy=2 * c.element_type.width)
        cute.copy(pair, out, tCgC, pred=inside)
        if not (type(n) is int and n % 2 == 0):
            # an odd N: the pair at columns (N - 1, N) stores its first element alone
            for j in cute.range_constexpr(cute.size(acc) // 2):
                row, col = tCcC[2 * j]
                if row < m and col + 1 == n:
                    tCgC[2 * j] = out[2 * j]
    else:
        for i in cute.range_constexpr(cute.size(acc)):
            row, col = tCcC[i]
            if row < m and col < n:
                tCgC[i] = acc[i].to(c.element_type)


@cute.jit
def stmatrix_subtile(acc, first, buf, epi_n, stm, lane, warp):
    """A consumer warpgroup's 16-bit ``64 x epi_n`` subtile into the shared buffer ``buf``: accumulators
    ``first ..`` of a thread, converted to ``buf``'s type, by ``stmatrix.x4`` (``stm``) of warp ``warp`` (rows
    ``16 warp ..``; see :func:`store_tile_tma` for the lanes' addresses)."""
    srow = buf[16 * warp + 8 * (lane // 8 % 2) + lane % 8, None]
    for q in cute.range_constexpr(epi_n // 16):
        out = cute.make_fragment(8, buf.element_type)
        for v in cute.range_constexpr(8):
            out[v] = acc[first + 8 * q + v].to(buf.element_type)
        cute.copy(stm, out, cute.local_tile(srow, (8,), (2 * q + lane // 16,)))


@cute.jit
def store_tile_tma(acc, store_c, tma_c, sC, epi_mma, tidx, tm, tn, bn, m, n):
    """Write a consumer warpgroup's ``64 x bn`` accumulators to C through shared memory, one ``64 x en`` subtile
    at a time: every thread writes its values of the subtile to one of the warpgroup's two buffers (converted to
    C's type: ``stmatrix`` for 16-bit C, two adjacent columns per ``st.shared`` for fp32), fences them for the
    async proxy, and the warpgroup meets on its named barrier; then thread 0 of the warpgroup issues the
    subtile's TMA store, which clips at C's edges.

    Before the barrier thread 0 waits until every store it issued has read its buffer, so after the barrier the
    next subtile's buffer (the other one) is free while the store just issued reads this one. The subtiles
    alternate buffers in a fixed order, so a warpgroup may skip a whole tile -- its rows lie past M -- but never
    one subtile, and a CTA that stores several tiles has an even number of subtiles per tile (one with an odd
    number stores one tile); a subtile past N skips only its store. Tile indices past C's
    are never formed: a tiled tensor's index is only meaningful inside its extent."""
    epi_m, epi_n = cute.size(sC, mode=[0]), cute.size(sC, mode=[1])
    subtiles = bn // epi_n
    per = cute.size(acc) // subtiles           # a subtile's accumulators of a thread: values per * s ..
    dtype = store_c.dtype
    g = tidx // 128                            # the consumer warpgroup: rows 64 g .. 64 g + 63 of the tile
    thr = epi_mma.get_slice(tidx % 128)
    issuer = tidx % 128 == 0
    pair = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=2 * dtype.width)
    stm = cute.make_copy_atom(warp_ops.StMatrix8x8x16bOp(False, 4), dtype) if dtype.width == 16 else None
    lane, warp = tidx % 32, tidx % 128 // 32
    if (2 * tm + g) * epi_m < m:
        for s in cute.range_constexpr(subtiles):
            buf = sC[None, None, EPI_BUFFERS * g + s % EPI_BUFFERS]
            if dtype.width == 16:
                # stmatrix.x4: the warp stores four 8x8 matrices, rows 16 w .. 16 w + 15 by columns 16 q ..
                # 16 q + 15 (warp w of the warpgroup); a thread's registers are its values 8 q .. 8 q + 7 of the
                # subtile, and lane l gives the address of row l % 8 (+ 8 for (l / 8) odd) of columns
                # 16 q + 8 (l / 16) ..
                stmatrix_subtile(acc, per * s, buf, epi_n, stm, lane, warp)
            else:
                tCsC = thr.partition_C(buf)
                out = cute.make_fragment(tCsC.layout.shape, dtype)
                for v in cute.range_constexpr(per):
                    out[v] = acc[per * s + v].to(dtype)
                cute.copy(pair, out, tCsC)
            arch.fence_proxy("async.shared", space="cta")    # the generic-proxy writes, before the TMA reads them
            if issuer:
                arch.tma_store_wait(0, read=True)             # the other buffer's store has read it
            arch.barrier(barrier_id=1 + g, number_of_threads=128)
            if issuer and (subtiles * tn + s) * epi_n < n:
                gC = cute.local_tile(tma_c, (epi_m, epi_n), (2 * tm + g, subtiles * tn + s))
                tCsC_box, tCgC_box = cpasync.tma_partition(store_c, 0, cute.Layout(1), cute.group_modes(buf, 0, 2),
                                                           cute.group_modes(gC, 0, 2))
                cute.copy(store_c, tCsC_box, tCgC_box)
                arch.tma_store_arrive()


def split_recv_layout(per, split_k, threads):
    """The layout of a CTA's receive buffer for the split reduction: ``(value, thread, sender)`` ->
    fp32 element, ``SPLIT_VECTOR`` consecutive values of a thread contiguous (one 16-byte store) and the
    threads' groups of them next to each other (a warp's store is 512 contiguous bytes)."""
    v = SPLIT_VECTOR
    return cute.make_layout(((v, per // v), threads, split_k), stride=((1, v * threads), v, threads * per))


@cute.jit
def reduce_splits(acc, out, recv, red_bar, split, split_k, tidx):
    """Sum a tile's ``split_k`` partial products, each computed by one CTA of the cluster over its K range,
    into ``out``: this CTA's slice ``split`` of the tile's columns (the thread's values ``per * split ..`` of
    ``acc``, ``per = size(acc) / split_k``).

    Each thread sends its values of slice ``q`` to CTA ``q`` of the cluster (``st.async``, 16 bytes at a time,
    completing bytes on that CTA's ``red_bar``), into slot ``split`` of its ``recv`` buffer at the thread's own
    positions, and writes its values of its own slice to its own slot; then it waits until the peers' bytes have
    landed and adds the slots in the order 0, 1, .., ``split_k - 1``. Every element of C is thus the same sum
    of the same partials in the same order, whichever CTA finishes first. ``recv`` lies over the pipeline's
    stages: the caller makes sure every CTA of the cluster has finished reading them (a cluster barrier)."""
    per = cute.size(acc) // split_k
    send = cute.make_copy_atom(cpasync.CopyDsmemStoreOp(), cute.Float32,
                               num_bits_per_copy=SPLIT_VECTOR * cute.Float32.width)
    for q in cute.range_constexpr(split_k):
        part = cute.make_fragment(per, cute.Float32)
        for v in cute.range_constexpr(per):
            part[v] = acc[per * q + v]
        if q == split:
            cute.copy(part, recv[None, tidx, q])
        else:
            peer = cute.make_tensor(arch.map_dsmem_ptr(recv.iterator, q), recv.layout)
            cute.copy(send, part, peer[None, tidx, split], mbar_ptr=arch.map_dsmem_ptr(red_bar, q))
    arch.mbarrier_wait(red_bar, 0)
    for v in cute.range_constexpr(per):
        total = recv[v, tidx, 0]
        for q in cute.range_constexpr(1, split_k):
            total = total + recv[v, tidx, q]
        out[v] = total
