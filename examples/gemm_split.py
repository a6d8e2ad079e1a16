"""Kernel 13's split of K through global memory (``examples.gemm`` with a ``workspace``): the CTAs of a tile need
not be a cluster, so a split is not limited to the clusters a wave holds (an H200 holds 30 clusters of 4 and 15 of
8, so 512x512 in 128 x 128 tiles could split only by 4 in clusters).

The workspace is a Float32 tensor of :func:`workspace_elements` elements, zeroed once (``torch.zeros``): first
:func:`counter_ints` Int32 counters, as many as a workspace of its size may need (one per tile), then for each tile
``split_k`` slots of its ``128 x tile_n`` fp32 partial products. The counters' place depends on the workspace's size
only, so the slots of no plan lie over the counters of another: one workspace serves GEMMs of any shapes and tiles
that fit in it, one at a time.

Each CTA of a tile writes its products to its slot (16-byte stores, a warp's 512 contiguous bytes); one thread
counts the CTA in (``atom.add.acq_rel.gpu`` after the consumers' barrier and a ``fence.acq_rel.gpu``). The first
``summing_slices(split_k)`` CTAs of the tile (``split_k`` itself for 1, 2, 4 and 8; the largest of those below
any other split, up to 16) then wait until all ``split_k`` have counted in (``ld.acquire.gpu``) and, as in a
cluster's split, each sums its slice of the tile's columns over the slots in the order 0, 1, .., ``split_k - 1``
(the same sum in the same order for every element and run) and stores it; the other CTAs are done. Each summing
CTA counts itself out again past the wait, and the last one sets the counter back to zero: a launch leaves the
counters zero for the next one.

With ``cluster_m=2`` the two CTAs of a cluster take the same split of two vertically adjacent tiles, each loading
half of their B tile and multicasting it to both, as the unsplit kernel's clusters do; where the rows of tiles are
odd, the second CTA of the last clusters computes a tile past M, sums it through its own slots and counter and
stores nothing (the workspace holds its slots: :func:`workspace_elements` counts the rows in whole clusters).

Rules, each a failed launch (``trap``) rather than a wrong sum or a hang:

- a counter found outside ``0 .. split_k - 1`` when a CTA counts in: a workspace never zeroed, or shared by two
  GEMMs running at once (one workspace serves one GEMM at a time: two streams need two). A counter that is not
  zero before the launch always shows so: the tile's ``split_k`` arrivals take it past ``split_k - 1``;
- a wait longer than ``WAIT_NS``: the CTAs of a tile wait for each other, so all of them must run at once. The
  host allows at most a CTA per SM of the device (``tiles x split_k <= SMs``; in 2x1 clusters, at most the
  clusters the device holds at once, ``gemm_plan.cluster_capacity``), which an otherwise idle GPU runs at once; a
  GPU shared with other work, or partitioned (MPS), may not.

The workspace must not overlap A, B or C (nothing checks it: their addresses are the call's)."""

import cute_py as cute
from cute_py import arch
from cute_py.atom import CopyUniversalOp

from .gemm_args import CLUSTER_MS, MMA_THREADS, SPLITS, TILE_NS
from .gemm_epilogue import split_recv_layout
from .gemm_plan import cluster_capacity, grid_ctas
from .tma_tiled import sm_count

__all__ = ["workspace_elements", "counter_ints", "check_workspace", "summing_slices", "stored_slices", "fixup_splits",
           "FIXUP_BARRIER", "WAIT_NS"]

FIXUP_BARRIER = 5                      # named barrier of the consumers (1, 2: the epilogue's; 3, 4: the ping-pong's)
COUNTER_PAD = 32                       # the counters take a multiple of 128 bytes, so the slots stay aligned
WAIT_NS = 2_000_000_000                # a CTA waits at most 2 s for the other CTAs of its tile
MAX_ELEMENTS = 2 ** 31                 # the kernel's offsets into the workspace are 32-bit


def counter_ints(size):
    """The Int32 counters at the start of a workspace of ``size`` elements: one for each tile a split through it may
    have (a split of 2 or more, each slot at least ``128 x 128`` products: at most ``size / 32768`` tiles), padded
    to a multiple of ``COUNTER_PAD``. A function of the workspace's size alone: every plan of every C keeps its
    counters there and its slots past them, so one workspace serves GEMMs of any shapes and tiles in turn."""
    tiles = -(-size // (2 * 128 * 128))
    return -(-tiles // COUNTER_PAD) * COUNTER_PAD


def _slots(m, n, tile, split_k, cluster_m=1):
    """The slots' elements: ``split_k`` for each tile of the launch (``grid_ctas``: the rows of tiles in whole
    clusters of ``cluster_m``, where the second CTA of a cluster past M still computes and sums its tile)."""
    return split_k * grid_ctas(m, n, tile[0], tile[1], cluster_m, False) * tile[0] * tile[1]


def _fitting(slots):
    """The fewest elements of a workspace whose counters and ``slots`` elements of slots fit in it."""
    size = slots
    while size < slots + counter_ints(size):        # counter_ints grows by 32 an added 2**20 elements: a few steps
        size = slots + counter_ints(size)
    return size


def workspace_elements(m, n, split_k=8):
    """The Float32 elements of a workspace that serves every plan of an ``(m, n)`` C with up to ``split_k`` CTAs
    per tile (any tile width, either ``cluster_m``), and of any smaller C."""
    return _fitting(max(_slots(m, n, (128, tn), split_k, cm) for tn in TILE_NS for cm in CLUSTER_MS))


def check_workspace(workspace, m, n, tile, split_k, used=True, cluster_m=1):
    """The rules of a workspace for a split of ``split_k`` over ``tile``-sized tiles of an ``(m, n)`` C, in
    clusters of ``cluster_m`` tiles along M: a CuteValueError naming the broken one (with ``used=False``, a
    workspace the plan does not use: its type). Returns the elements before the slots (its :func:`counter_ints`;
    0 where unused)."""
    if not (hasattr(workspace, "element_type") and hasattr(workspace, "layout")):
        raise cute.CuteValueError(f"gemm: workspace is a 1-D Float32 tensor (workspace_elements(M, N) zeros), got "
                                  f"{workspace!r}")
    shape, stride = workspace.shape, workspace.layout.stride
    shape, stride = (shape, stride) if type(shape) is tuple else ((shape,), (stride,))
    if workspace.element_type is not cute.Float32 or len(shape) != 1:
        raise cute.CuteValueError(f"gemm: workspace is a 1-D Float32 tensor (workspace_elements(M, N) zeros), got "
                                  f"{workspace.element_type.name} of the shape {shape}")
    if not used:
        return 0
    if type(m) is not int or type(n) is not int:
        raise cute.CuteValueError(f"gemm: a split through the workspace needs a static M and N, got {(m, n)}")
    size, stride = shape[0], stride[0]
    slots = _slots(m, n, tile, split_k, cluster_m)
    # (a workspace holds its counters, then the slots: the counters' number grows with its size, so a size a few
    # elements past a multiple of 2**20 may hold fewer slots than the one below it; workspace_elements never is)
    if type(size) is not int or size < slots + counter_ints(size) or (size > 1 and stride != 1):
        raise cute.CuteValueError(f"gemm: the workspace of a {m}x{n} C split by {split_k} in {tile[0]}x{tile[1]} "
                                  f"tiles is at least {_fitting(slots)} contiguous elements (workspace_elements), "
                                  f"got {size} with the stride {stride}")
    need = slots + counter_ints(size)
    if need > MAX_ELEMENTS:
        raise cute.CuteValueError(f"gemm: a split through the workspace addresses at most {MAX_ELEMENTS} elements, "
                                  f"this one {need}: split less, or not through a workspace")
    tiles = grid_ctas(m, n, tile[0], tile[1], cluster_m, False)
    ctas = tiles * split_k
    if cluster_m == 1 and ctas > sm_count():
        raise cute.CuteValueError(f"gemm: a split through the workspace runs a tile's CTAs at once (they wait for "
                                  f"each other): {ctas} CTAs ({tiles} tiles x {split_k}) are more than the device's "
                                  f"{sm_count()} SMs; split less")
    if cluster_m > 1 and ctas // cluster_m > cluster_capacity(cluster_m):
        raise cute.CuteValueError(f"gemm: a split through the workspace runs a tile's CTAs at once (they wait for "
                                  f"each other): {ctas // cluster_m} clusters of {cluster_m} ({tiles} tiles x "
                                  f"{split_k}) are more than the {cluster_capacity(cluster_m)} the device holds at "
                                  f"once; split less")
    if workspace.iterator.alignment < 16:
        raise cute.CuteValueError(f"gemm: the workspace must be 16-byte aligned (its slots take 16-byte stores), "
                                  f"got a {workspace.iterator.alignment}-byte aligned pointer")
    return counter_ints(size)


def summing_slices(split_k):
    """How many of a tile's ``split_k`` CTAs sum the slots, each a slice of the tile's columns: the largest of
    ``SPLITS`` (1, 2, 4, 8) not above ``split_k``. The others only write their products and count themselves in."""
    return max(s for s in SPLITS if s <= split_k)


def stored_slices(split_k, through_workspace):
    """The slices a tile's columns are stored in, one a CTA: :func:`summing_slices` through a workspace, else
    ``split_k`` (a cluster's CTAs all sum)."""
    return summing_slices(split_k) if through_workspace else split_k


@cute.jit
def fixup_splits(acc, out, workspace, counters, tile, split, split_k, tidx):
    """Sum tile ``tile``'s ``split_k`` partial products through ``workspace`` (see the module): this CTA's ``acc``
    goes to its slot ``split``; a CTA that sums (``split < summing_slices(split_k)``) waits until every CTA of the
    tile has written its slot, then ``out`` becomes its slice ``split`` of the sum (the thread's values ``per *
    split ..`` of ``acc``, ``per = size(acc) / summing_slices(split_k)``), the slots added in slot order; the
    others are done once they have counted themselves in. ``counters``: the Int32 counters' elements before the
    slots."""
    slices = summing_slices(split_k)
    total = cute.size(acc)
    per = total // slices
    layout = split_recv_layout(total, split_k, MMA_THREADS)
    first = counters + tile * (split_k * MMA_THREADS * total) + layout((0, tidx, 0))    # this thread's first value
    slots = _thread_slots(workspace, first, layout, split_k)
    atom = cute.make_copy_atom(CopyUniversalOp(), cute.Float32, 128)
    part = cute.make_fragment(total, cute.Float32)
    for v in cute.range_constexpr(total):
        part[v] = acc[v]
    cute.copy(atom, part, slots[None, split])
    arch.barrier(barrier_id=FIXUP_BARRIER, number_of_threads=MMA_THREADS)     # the CTA's products are written
    if tidx == 0:
        counter = cute.recast_ptr(workspace.iterator, dtype=cute.Int32) + tile
        arch.fence_acq_rel_gpu()
        old = arch.atomic_add(counter, 1, sem="acq_rel", scope="gpu")
        if old < 0 or old >= split_k:
            arch.trap()                  # the counter was not zero before the launch: the sum would be wrong
        if cute.const_expr(slices == split_k):
            _await_and_count_out(counter, split_k, slices)
        elif split < slices:
            _await_and_count_out(counter, split_k, slices)
    if cute.const_expr(slices == split_k):
        _sum_slice(out, workspace, first, layout, atom, split, split_k, per)
    elif split < slices:
        _sum_slice(out, workspace, first, layout, atom, split, split_k, per)


@cute.jit
def _await_and_count_out(counter, split_k, slices):
    """Wait (bounded) until the tile's ``split_k`` CTAs have counted in, then count this summing CTA out: the last
    of the ``slices`` to do so sets the counter back to zero."""
    deadline = arch.globaltimer() + WAIT_NS
    while arch.load(counter, cute.Int32, sem="acquire", scope="gpu") < split_k:
        if arch.globaltimer() > deadline:
            arch.trap()              # a CTA of the tile never came (more CTAs than the device runs at once)
    if arch.atomic_add(counter, 1, sem="relaxed", scope="gpu") == split_k + slices - 1:
        arch.store(counter, 0, sem="relaxed", scope="gpu")


@cute.jit
def _sum_slice(out, workspace, first, layout, atom, split, split_k, per):
    """``out``: this CTA's slice ``split`` of every slot, added in slot order, once every slot is written."""
    arch.barrier(barrier_id=FIXUP_BARRIER, number_of_threads=MMA_THREADS)     # every slot of the tile is written
    arch.fence_acq_rel_gpu()
    mine = _thread_slots(workspace, first + split * (per // 4) * layout.stride[0][1], layout, split_k)
    more = cute.make_fragment(per, cute.Float32)
    for q in cute.range_constexpr(split_k):          # this CTA's slice of every slot, added in slot order
        for h in cute.range_constexpr(per // 4):
            cute.copy(atom, mine[(None, h), q], cute.local_tile(more, (4,), (h,)))
        for v in cute.range_constexpr(per):
            out[v] = more[v] if q == 0 else out[v] + more[v]


@cute.jit
def _thread_slots(workspace, first, layout, split_k):
    """The thread's values of every slot, ``(value, slot)``, from its first value ``first``: an element offset
    passed through an empty volatile statement, so that the compiler computes each access's address where it is
    used (from that one value) rather than all of them ahead of the main loop, where they would not fit in the
    registers the accumulators leave."""
    base = cute.make_fragment(1, cute.Int32)
    base[0] = first
    arch.warpgroup_fence_operand(base)
    return cute.make_tensor(workspace.iterator + cute.assume(base[0], divby=4),     # 16 bytes, as ``first``
                            cute.make_layout((layout.shape[0], split_k), stride=(layout.stride[0], layout.stride[2])))
