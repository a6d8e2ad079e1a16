"""The machinery the row kernels share (``softmax_rows``, ``norms``, ``cross_entropy``): how a row of ``n`` elements
spreads over threads, CTAs and clusters, the vector loads and stores of a thread's part of a row, and reductions
along a row.

A :class:`RowPlan` gives each row ``group`` threads of a CTA (several rows per CTA when rows are short) and, for rows
too long for one CTA's registers, ``cluster`` CTAs of a thread-block cluster. The row is cut into chunks of ``vec``
elements (128 bits of the narrowest type, less where a row stride or a base address allows less): chunk
``(k * cluster + rank) * group + t`` is thread ``t``'s ``k``-th in the CTA of rank ``rank`` (or, with a plan's
``slabs``, ``rank * slab + k * group + t``: each CTA an even, contiguous part of the row), so every load of a warp is
coalesced and the row is read from global memory once, into registers, and written once. A chunk inside the row
moves with 128-bit accesses (or the widest its alignment allows); the chunk that holds the row's end goes element by
element under a predicate (``row_chunks``). A plan with ``shifted`` counts each row's chunks from the 16- to
128-byte boundary at or before its start (``row_chunks.ShiftedRow``): rows whose stride is not a whole number of
chunks then move in 128-bit accesses too, all but their first and last chunk.

A reduction along a row (:func:`row_reduce`) combines a tuple of Float32 values (1, 2 or 4) with an associative
``combine``: a butterfly of ``shfl.sync.bfly`` inside each warp, then the warps of a row through shared memory, then,
on a cluster, each CTA's partial stored into every CTA's shared memory with ``st.async`` (its bytes completing on
that CTA's mbarrier), every CTA combining the partials in rank order or by a butterfly over its lanes: all CTAs of
a row get the same bits.
"""

import math
from dataclasses import dataclass

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync

from .row_chunks import VECTOR_BITS, load_chunk, matrix_row, store_chunk

__all__ = ["RowPlan", "plan_rows", "row_vector", "check_matrix", "check_vector", "check_same_shape", "check_eps",
           "ADD_IDENTITY",
           "MAX_SUM_IDENTITY", "RowReduction", "launch_rows", "row_coords", "chunk_index", "round_balance",
           "chunk_inside", "load_row", "store_row", "row_reduce", "rearm", "cluster_start", "add", "max_sum",
           "clamped_row", "store_if_row", "FLOATS", "INDEX_TYPES", "MAX_CLUSTER", "CLUSTER_GROUP", "LOG2E", "FLT_MAX",
           "ONE_INPUT", "TWO_INPUTS"]

FLOATS = ("Float32", "BFloat16", "Float16")
INDEX_TYPES = ("Int32", "Int64")
CTA_VALUES = 16384  # Float32 values of one row input that the threads of one CTA keep in registers
SHORT_THREADS = 256  # threads of a CTA that holds several short rows
MAX_CLUSTER = 16
CLUSTER_GROUP = 128  # threads of a CTA of a cluster, where the cluster allows
ONE_INPUT = 64  # Float32 values of a row a thread keeps (the ``values`` of plan_rows) with one row input
TWO_INPUTS = 32  # per input, with two row inputs
FLT_MAX = 3.4028234663852886e38


@dataclass(frozen=True)
class RowPlan:
    """``n`` elements a row in vectors of ``vec``; ``group`` threads of a CTA per row, ``rows`` rows per CTA,
    ``cluster`` CTAs per row, ``chunks`` vectors per thread (``chunks * cluster * group * vec >= span``). ``slabs``:
    each CTA of the cluster takes a contiguous slab of :attr:`slab` chunks (the last CTA's may be shorter) instead of
    every ``cluster``-th run of ``group`` chunks (see :func:`chunk_index`). ``shifted`` (0: not shifted): the chunks
    count from the boundary of :attr:`window` elements (``shifted`` chunks) at or before the row's start
    (``row_chunks.ShiftedRow``), so a row spans :attr:`span` elements of chunks. ``extra``: a shifted plan holding one
    chunk a thread more than its kernel's values (see :func:`plan_rows`)."""
    n: int
    vec: int
    group: int
    rows: int
    cluster: int
    chunks: int
    slabs: bool = False
    shifted: int = 0
    extra: bool = False

    @property
    def window(self):
        """Elements of the boundary a ``shifted`` row's window starts on (a chunk for plans that are not shifted)."""
        return self.vec * self.shifted if self.shifted else self.vec

    @property
    def span(self):
        """Elements of the chunks that may hold a row: ``n``, and ``window - 1`` more where the row may start that
        far past a window's boundary (``shifted``)."""
        return _span(self.n, self.vec, self.shifted)

    @property
    def slab(self):
        """Chunks of a CTA's slab (``slabs``): the row's chunks over the cluster, rounded up."""
        chunks = -(-self.span // self.vec)
        return -(-chunks // self.cluster)

    @property
    def threads(self):
        return self.group * self.rows

    @property
    def warps(self):
        """Warps of one row's group in a CTA (1 for groups of a warp or less)."""
        return max(1, self.group // 32)

    def full(self, k):
        """Whether chunk ``k`` lies inside the row for every thread and CTA (a static fact; with ``shifted``, for
        every start past the boundary: the window's first ``shifted`` chunks may hold elements before it)."""
        if self.shifted and (k * self.group if self.slabs else k * self.cluster * self.group) < self.shifted:
            return False
        if self.slabs:
            return ((k + 1) * self.group <= self.slab
                    and ((self.cluster - 1) * self.slab + (k + 1) * self.group) * self.vec <= self.n)
        return (k + 1) * self.cluster * self.group * self.vec <= self.n

    def grid(self, m):
        """CTAs for ``m`` rows."""
        return -(-m // self.rows) * self.cluster


def _span(n, vec, shifted):
    """:attr:`RowPlan.span` of rows of ``n`` elements in chunks of ``vec``, ``shifted`` as the plan's."""
    return n + vec * shifted - 1 if shifted else n


def _pow2_at_least(x):
    p = 1
    while p < x:
        p *= 2
    return p


def plan_rows(what, n, vec, values, most=None, wide=None, shifted=0):
    """The plan for rows of ``n`` elements in chunks of ``vec`` when a thread may keep ``values`` Float32 values
    of each row input: enough threads (a power of two, up to ``most``, by default ``CTA_VALUES // values`` within
    256..1024) that each keeps at most ``min(values // vec, 8)`` chunks, several rows to a CTA of 256 threads when
    rows are short; rows that need more than ``values // vec`` chunks a thread take a cluster of 2..16 CTAs (of 128
    threads when 16 of them can hold the row and ``values >= 64``, or, where 16 of them cannot hold it at
    ``values``, when 16 of them can at ``wide`` values a thread, where given, and then 16; else of ``most``): the
    smallest cluster that holds the row at ``values // vec`` chunks a thread, of any size (not only a power of two:
    each cluster holds one row at a time, and a row just past a power of two would otherwise take twice the CTAs,
    so that the device holds half as many rows at once); ``CuteValueError`` past that, naming the longest row.
    ``shifted``: the plan of :class:`RowPlan`'s ``shifted`` rows (chunks for ``vec * shifted - 1`` elements more);
    a shifted row whose unshifted length the largest cluster holds, but not those elements more, takes one chunk a
    thread more (``extra``) rather than no shifted plan at all. So rows of 262082-262143 16-bit elements (a 128-byte
    window's 63 elements more than 16 CTAs of 256 threads hold at 8 chunks) take 9 chunks a thread over 15 CTAs
    (5 over 13 with two row inputs): 52-127 registers a thread and no spills, with their CTAs an SM left free
    (``row_shift.shifted_ctas_per_sm``), where no shifted plan left them element by element. Measured (H200, 1 GiB
    of rows of 262143, of the copy ceiling): bf16 softmax 0.53 -> 0.63, its backward 0.43 -> 0.77, RMSNorm 0.43 ->
    0.81, LayerNorm 0.21 -> 0.56, cross-entropy 0.62 -> 0.83 and its backward 0.74 -> 0.90; Float32 1.12-1.43x
    (benchmarks/RESULTS.md)."""
    span = _span(n, vec, shifted)
    nv = -(-span // vec)
    kmax = max(1, values // vec)
    if most is None:
        most = max(256, min(1024, CTA_VALUES // values))  # threads of one row in one CTA
    held = most * kmax * MAX_CLUSTER             # chunks the largest cluster holds at kmax
    extra = bool(shifted) and nv > held >= -(-n // vec)
    kmax += 1 if extra else 0
    group = min(most, max(1, _pow2_at_least(-(-nv // min(kmax, 8)))))
    if -(-nv // group) <= kmax:
        return RowPlan(n, vec, group, max(1, SHORT_THREADS // group), 1, -(-nv // group), shifted=shifted,
                       extra=extra)
    if -(-nv // (most * MAX_CLUSTER)) > kmax:
        longest = most * kmax * vec * MAX_CLUSTER - (span - n)
        raise cute.CuteValueError(f"{what}: a row is held in the registers of at most {MAX_CLUSTER} CTAs of a "
                                  f"cluster: at most {longest} elements per row here, got {n}")
    group, cluster = most, -(-nv // (most * kmax))
    if most >= CLUSTER_GROUP:
        small = -(-nv // (CLUSTER_GROUP * kmax))
        if values >= 64 and small <= MAX_CLUSTER:
            # with many values a thread, CTAs of 128 threads in a larger cluster keep more bytes in flight per SM
            group, cluster = CLUSTER_GROUP, small
        elif wide is not None and small > MAX_CLUSTER >= -(-nv // (CLUSTER_GROUP * max(1, wide // vec))):
            # a row 16 small CTAs hold only at more values a thread: measured faster for softmax's rows of 262144
            # bf16 than CTAs of ``most`` threads at ``values`` (more CTAs resident on an SM)
            group, cluster = CLUSTER_GROUP, MAX_CLUSTER
    return RowPlan(n, vec, group, 1, cluster, -(-nv // (group * cluster)), shifted=shifted, extra=extra)


def row_vector(tensors):
    """Elements per chunk: 128 bits of the narrowest type of ``tensors`` (2-D row-major or 1-D contiguous), less
    where a tensor's row stride or base address (in elements) allows only narrower accesses, so that every chunk of
    every row starts aligned. A chunk of a wider type moves in several 128-bit accesses."""
    cap = VECTOR_BITS // min(t.element_type.width for t in tensors)
    vec = cap
    for t in tensors:
        most = VECTOR_BITS // t.element_type.width
        v = most
        align = t.engine.alignment * 8 // t.element_type.width
        for s in (align,) + _strides(t)[:-1]:
            while s % v:
                v //= 2
        if v < most:
            vec = min(vec, v)
    return max(1, vec)


def _shape(t):
    return tuple(t.shape) if isinstance(t.shape, tuple) else (t.shape,)


def _strides(t):
    return tuple(t.layout.stride) if isinstance(t.layout.stride, tuple) else (t.layout.stride,)


def check_matrix(what, name, t, types=FLOATS):
    """``t`` is a 2-D tensor of one of ``types`` whose rows are contiguous (last stride 1 unless rows hold one
    element) and do not overlap; returns ``(m, n)``."""
    shape = _shape(t)
    if len(shape) != 2 or not all(type(s) is int for s in shape):
        raise cute.CuteValueError(f"{what}: {name} must be a 2-D (rows, n) tensor of static extents, got the shape "
                                  f"{t.shape}")
    if t.element_type.name not in types:
        raise cute.CuteTypeError(f"{what}: {name} must be of type {' or '.join(types)}, got {t.element_type.name}")
    m, n = shape
    rs, cs = _strides(t)
    if n == 0 or m == 0:
        raise cute.CuteValueError(f"{what}: {name} must have at least one row of at least one element, got the "
                                  f"shape {shape}")
    if cs != 1 and n > 1:
        raise cute.CuteValueError(f"{what}: the rows of {name} must be contiguous (last stride 1), got the strides "
                                  f"{(rs, cs)}")
    if m > 1 and rs < n:
        raise cute.CuteValueError(f"{what}: the rows of {name} must not overlap (row stride >= {n}), got the row "
                                  f"stride {rs}")
    return m, n


def check_vector(what, name, t, length, types=FLOATS):
    """``t`` is a 1-D contiguous tensor of ``length`` elements of one of ``types``."""
    shape = _shape(t)
    if shape != (length,):
        raise cute.CuteValueError(f"{what}: {name} must have the shape ({length},), got {t.shape}")
    if t.element_type.name not in types:
        raise cute.CuteTypeError(f"{what}: {name} must be of type {' or '.join(types)}, got {t.element_type.name}")
    if length > 1 and _strides(t) != (1,):
        raise cute.CuteValueError(f"{what}: {name} must be contiguous (stride 1), got the stride {_strides(t)[0]}")


def check_eps(what, eps):
    """``eps`` as a float: a real number >= 0 (``CuteValueError`` otherwise)."""
    if type(eps) not in (int, float) or not eps >= 0 or eps == float("inf"):
        raise cute.CuteValueError(f"{what}: eps must be a finite number >= 0, got {eps!r}")
    return float(eps)


def check_same_shape(what, name, t, shape, types=FLOATS):
    """``t`` is a row tensor (as :func:`check_matrix`) of ``shape``."""
    got = check_matrix(what, name, t, types)
    if got != tuple(shape):
        raise cute.CuteValueError(f"{what}: {name} must have the shape {tuple(shape)}, got {got}")


class RowReduction:
    """Shared memory for ``rounds`` reductions of ``width`` Float32 values per row (``width`` in 1, 2, 4), each round
    with its own buffers (``stages`` of them reused in turn inside a loop over rows); on a cluster, an mbarrier per
    stage that expects every CTA's partial. Build it at the top of a kernel (its mbarriers are initialised by thread
    0), then call :func:`cluster_start` once every thread is past it."""

    def __init__(self, plan, width, rounds=1, stages=1):
        smem = arch.SmemAllocator()
        self.plan, self.width, self.slots = plan, width, rounds * stages
        self.warp_bufs = [smem.allocate_tensor(cute.Float32, cute.Layout(plan.rows * plan.warps * width), 16)
                          for _ in range(self.slots)] if plan.warps > 1 else []
        self.cluster_bufs, self.bars = [], []
        if plan.cluster > 1:
            self.cluster_bufs = [smem.allocate_tensor(cute.Float32, cute.Layout(plan.cluster * width), 16)
                                 for _ in range(self.slots)]
            self.bars = [smem.allocate_mbarrier() for _ in range(self.slots)]
            _init_bars(self.bars, plan.cluster * width * 4)


@cute.jit
def _init_bars(bars, nbytes):
    tx, _, _ = arch.thread_idx()
    if tx == 0:
        for bar in bars:
            arch.mbarrier_init(bar, 1)
            arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
        arch.mbarrier_init_fence()


@cute.jit
def rearm(red, slot):
    """Expect the next phase's bytes on mbarrier ``slot`` (inside a loop, after its wait)."""
    tx, _, _ = arch.thread_idx()
    if tx == 0:
        arch.mbarrier_arrive_and_expect_tx(red.bars[slot], red.plan.cluster * red.width * 4)


def cluster_start(plan):
    """Arrive on the cluster barrier once this CTA's mbarriers are initialised (waited for before the first
    ``st.async`` into a peer); nothing without a cluster."""
    if plan.cluster > 1:
        arch.cluster_arrive_relaxed(aligned=True)


def launch_rows(kernel_call, plan, grid, one_input, clustered=True, ctas_per_sm=None):
    """Launch ``kernel_call`` (a kernel applied to its arguments) for ``plan`` on ``grid`` CTAs, in clusters of
    ``plan.cluster`` unless ``clustered`` is false. Kernels holding one row input (``one_input``) ask for 2 CTAs per
    SM (at most 128 registers a thread for CTAs of 256): more rows in flight; ``ctas_per_sm``, where given, asks for
    that many instead (the registers a thread bounded to match)."""
    kw = {"min_blocks_per_mp": max(1, 512 // plan.threads)} if one_input and plan.threads >= 256 else {}
    if ctas_per_sm is not None:
        kw["min_blocks_per_mp"] = ctas_per_sm
    if clustered:
        kw.update(cluster=(plan.cluster, 1, 1), non_portable_cluster=plan.cluster > 8)
    kernel_call.launch(grid=grid, block=plan.threads, **kw)


def row_coords(plan, clustered=True):
    """``(row, t, rank)``: the row this thread works on (unclamped), its index in the row's group, its CTA's rank
    in the cluster (0 without one; with ``clustered=False``, the CTAs of a row are consecutive blocks of a launch
    without clusters)."""
    tx, _, _ = arch.thread_idx()
    bx, _, _ = arch.block_idx()
    if plan.cluster > 1:
        rank = arch.block_rank_in_cluster() if clustered else bx % plan.cluster
        return bx // plan.cluster, tx, rank
    if plan.rows == 1:
        return bx, tx, 0
    return bx * plan.rows + tx // plan.group, tx % plan.group, 0


def chunk_index(plan, k, t, rank):
    """The index in the row of thread ``t``'s chunk ``k`` in the CTA of rank ``rank``: ``(k * cluster + rank) *
    group + t``, or with ``plan.slabs`` ``rank * slab + k * group + t`` inside the CTA's slab and an index past the
    row's end beyond it (so that every predicate of the row's end leaves such a chunk out)."""
    if plan.slabs:
        j = k * plan.group + t
        if (k + 1) * plan.group <= plan.slab:
            return rank * plan.slab + j
        return cute.where(j < plan.slab, rank * plan.slab + j, plan.cluster * plan.slab + j)
    return (k * plan.cluster + rank) * plan.group + t


def round_balance(plan):
    """The chunks of a row a CTA of ``plan``'s cluster takes on average over those the most loaded one takes, with
    the chunks dealt in rounds (:func:`chunk_index` without ``slabs``): 1.0 where the last round is whole."""
    nv = -(-plan.span // plan.vec)
    per = [sum(max(0, min(plan.group, nv - (k * plan.cluster + r) * plan.group)) for k in range(plan.chunks))
           for r in range(plan.cluster)]
    return sum(per) / len(per) / max(per)


def chunk_inside(plan, k, t, rank, lo=0):
    """Whether thread ``t``'s chunk ``k`` in the CTA of rank ``rank`` holds elements of the row (run-time where
    chunk ``k`` is not :meth:`RowPlan.full`); ``lo``: the row's start in its window (``row_chunks.window``)."""
    return chunk_index(plan, k, t, rank) * plan.vec < plan.n + lo


def load_row(row, plan, t, rank, fill=0.0):
    """This thread's chunks of ``row`` (a 1-D tensor of ``plan.n`` elements, or a ``ShiftedRow`` of a ``shifted``
    plan) as Float32 TensorSSA, ``fill`` outside the row."""
    vals = []
    for k in cute.range_constexpr(plan.chunks):
        frag = cute.make_rmem_tensor((plan.vec,), row.element_type)
        load_chunk(row, chunk_index(plan, k, t, rank), plan.vec, plan.n, frag, fill, plan.full(k))
        vals.append(frag.load().to(cute.Float32))
    return vals


def clamped_row(x, r, plan=None):
    """Row ``r`` of the matrix ``x``, or its last row for ``r`` past the end (the rows of a CTA past the matrix read
    the last one and store nothing); as ``plan``'s chunks count it (``row_chunks.matrix_row``), where given."""
    m = x.shape[0]
    r = cute.where(r < m, r, m - 1)
    return x[r, None] if plan is None else matrix_row(x, r, plan)


@cute.jit
def store_if_row(y, r, plan, t, rank, vals):
    """:func:`store_row` of ``vals`` into row ``r`` of the matrix ``y``, for ``r`` inside it."""
    if r < y.shape[0]:
        store_row(matrix_row(y, r, plan), plan, t, rank, vals)


def store_row(row, plan, t, rank, vals):
    """Store this thread's chunks ``vals`` (Float32 TensorSSA, as :func:`load_row` gives) into ``row``, rounded
    once to its type; nothing past the row's end."""
    for k in cute.range_constexpr(plan.chunks):
        out = cute.make_rmem_tensor((plan.vec,), row.element_type)
        out.store(vals[k].to(row.element_type))
        store_chunk(row, chunk_index(plan, k, t, rank), plan.vec, plan.n, out, plan.full(k))


@cute.jit
def row_reduce(vals, combine, red, slot=0, phase=0, first=True, counted=False, identity=None):
    """``combine`` of the tuple ``vals`` over every thread of the row (its warps, then its cluster), with the
    buffers of ``slot``; ``phase``: the parity of the slot's mbarrier use; ``first``: the first cluster exchange of
    the kernel (it waits for the cluster barrier of :func:`cluster_start`). With ``counted``, ``combine(a, b, na,
    nb)`` also gets how many threads' values ``a`` and ``b`` each stand for (static ints).

    The cluster's partials are combined in rank order by every thread, or, given ``identity`` (a value ``e`` with
    ``combine(a, e)`` equal to ``a`` bit for bit; by default :data:`ADD_IDENTITY` for :func:`add` and
    :data:`MAX_SUM_IDENTITY` for :func:`max_sum`, none for other combines), by a butterfly
    over the lanes of each warp, lane ``p`` holding partial ``p % s`` (``s`` the cluster's size rounded up to a
    power of two; ``e`` past the cluster): a thread loads one partial instead of all of them, and the combines
    take ``log2 s`` steps instead of ``cluster - 1``. Either way every thread of every CTA of the row gets the same
    bits (the combines are symmetric in their operands, bit for bit)."""
    plan = red.plan
    width = red.width

    def join(a, b, na, nb):
        return combine(a, b, na, nb) if counted else combine(a, b)

    half = min(plan.group, 32) // 2
    for k in cute.range_constexpr(5):
        off = 16 >> k
        if cute.const_expr(off < plan.group):  # each side stands for half // off threads
            vals = join(vals, tuple(arch.shuffle_sync_bfly(v, off) for v in vals), half // off, half // off)
    tx, _, _ = arch.thread_idx()
    if cute.const_expr(plan.warps > 1):
        buf = red.warp_bufs[slot]
        g = tx // plan.group
        w = (tx % plan.group) // 32
        if arch.lane_idx() == 0:
            for ci in cute.range_constexpr(width):
                buf[(g * plan.warps + w) * width + ci] = vals[ci]
        arch.sync_threads()
        vals = tuple(buf[g * plan.warps * width + c] for c in range(width))
        for w2 in cute.range_constexpr(1, plan.warps):
            vals = join(vals, tuple(buf[(g * plan.warps + w2) * width + c] for c in range(width)), 32 * w2, 32)
    if cute.const_expr(plan.cluster > 1):
        cbuf, bar = red.cluster_bufs[slot], red.bars[slot]
        if cute.const_expr(first):
            arch.cluster_wait()  # every CTA's mbarriers are initialised
        rank = arch.block_rank_in_cluster()
        if tx < plan.cluster:  # thread p sends this CTA's partial to CTA p
            frag = cute.make_rmem_tensor((width,), cute.Float32)
            for ci in cute.range_constexpr(width):
                frag[ci] = vals[ci]
            remote = cute.make_tensor(arch.map_dsmem_ptr(cbuf.engine, tx), cute.Layout(plan.cluster * width))
            atom = cute.make_copy_atom(cpasync.CopyDsmemStoreOp(), cute.Float32, num_bits_per_copy=32 * width)
            cute.copy(atom, frag, cute.local_tile(remote, (width,), (rank,)), mbar_ptr=arch.map_dsmem_ptr(bar, tx))
        arch.mbarrier_wait(bar, phase)
        if cute.const_expr(identity is None):
            identity = {add: ADD_IDENTITY, max_sum: MAX_SUM_IDENTITY}.get(combine)
        if cute.const_expr(identity is not None and not counted):
            vals = _lanes_butterfly(cbuf, plan.cluster, width, combine, identity)
        else:
            vals = tuple(cbuf[c] for c in range(width))
            for p in cute.range_constexpr(1, plan.cluster):
                vals = join(vals, tuple(cbuf[p * width + c] for c in range(width)), plan.group * p, plan.group)
    return vals


def _lanes_butterfly(cbuf, cluster, width, combine, identity):
    """The ``cluster`` partials of ``width`` values in ``cbuf`` combined by a butterfly over the lanes (see
    :func:`row_reduce`): every lane ends with the same bits."""
    span = _pow2_at_least(cluster)
    p = arch.lane_idx() % span
    have = p < cluster
    src = cute.min(p, cluster - 1)                # (a lane past the cluster reads a partial it does not use)
    vals = tuple(cute.math.select(have, cbuf[src * width + c], identity[c]) for c in range(width))
    for off in [span >> k for k in range(1, span.bit_length())]:     # span / 2, ..., 1
        vals = combine(vals, tuple(arch.shuffle_sync_bfly(v, off) for v in vals))
    return vals


def add(a, b):
    """The combine of sums."""
    return tuple(x + y for x, y in zip(a, b))


ADD_IDENTITY = (-0.0,)                 # x + -0.0 is x, -0.0 included
MAX_SUM_IDENTITY = (-math.inf, 0.0)    # a part of no value: its max is -inf and its sum 0 (:func:`max_sum`)


def max_sum(a, b):
    """The combine of ``(max, sum of exp(v - max))`` pairs of a softmax (a max of -inf scales its sum by 0)."""
    m = cute.max(a[0], b[0])
    safe = cute.max(m, -FLT_MAX)
    return m, a[1] * cute.math.exp2((a[0] - safe) * LOG2E) + b[1] * cute.math.exp2((b[0] - safe) * LOG2E)


LOG2E = 1.4426950408889634
