"""Kernel builtins (``cute_py.arch``): thread/block/cluster indices, elect, block and cluster barriers, cp.async
groups, DSMEM addresses.

Each function emits its operation into the kernel being traced (outside a kernel it raises
:class:`~cute_py.errors.TraceError`). Indices are traced ``Int32`` values known to be
non-negative. The mbarriers are in :mod:`.arch_mbar`, named barriers and fences in :mod:`.arch_sync`.

Names and meanings follow the CuTe DSL's ``cute.arch``:

=========================  ==========================================================  ===================
name                       value                                                       PTX
=========================  ==========================================================  ===================
``thread_idx()``           (x, y, z) of the thread in its block                        ``%tid``
``block_dim()``            (x, y, z) threads per block                                 ``%ntid``
``block_idx()``            (x, y, z) of the block (CTA) in the grid                    ``%ctaid``
``grid_dim()``             (x, y, z) blocks per grid                                   ``%nctaid``
``cluster_idx()``          (x, y, z) of the cluster in the grid                        ``%clusterid``
``cluster_dim()``          (x, y, z) clusters per grid                                 ``%nclusterid``
``block_in_cluster_idx()`` (x, y, z) of the block in its cluster                       ``%cluster_ctaid``
``block_in_cluster_dim()`` (x, y, z) blocks per cluster (also ``cluster_shape()``)     ``%cluster_nctaid``
``block_idx_in_cluster()`` the block's linear rank in its cluster (an Int32)           ``%cluster_ctarank``
``cluster_size()``         blocks per cluster (an Int32)                               ``%cluster_nctarank``
``lane_idx()``             the thread's lane in its warp                               ``%laneid``
``warp_idx()``             the warp's index in the block: the linear thread index // 32
=========================  ==========================================================  ===================

``block_rank_in_cluster()`` is ``block_idx_in_cluster()`` under the name CuTe C++ and PTX use.

Cluster barriers follow the DSL: ``cluster_arrive()`` and ``cluster_wait()`` are ``barrier.cluster.arrive`` and
``barrier.cluster.wait`` (any thread may execute them alone); ``cluster_arrive(aligned=True)`` is the
``.aligned`` form, which every thread of the warp must execute together.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ...nvgpu import forms
from ...nvgpu.cpasync.ops import LoadCacheMode

from ..lang.builder import current
from ..emit import cpasync, sync
from ..emit.warp import read_sreg, read_sregs
from ..flow.control import if_
from ...errors import TraceError
from ..lang.smem import SmemAllocator
from ..lang.values import TracedBool
from ..lang.traced_int import TracedInt
from .mbar_rules import mark_election

if TYPE_CHECKING:
    from ...tensor.pointer import Pointer

__all__ = [
    "thread_idx", "block_idx", "block_dim", "grid_dim", "cluster_idx", "cluster_dim", "block_in_cluster_idx",
    "block_in_cluster_dim", "cluster_shape", "block_idx_in_cluster", "block_rank_in_cluster", "cluster_size",
    "lane_idx", "warp_idx", "make_warp_uniform", "elect_one", "sync_threads",
    "cluster_arrive", "cluster_arrive_relaxed", "cluster_wait", "cluster_sync", "cp_async_commit_group",
    "cp_async_wait_group", "cp_async_shared_global", "tma_store_arrive", "tma_store_wait", "SmemAllocator",
    "map_dsmem_ptr", "WARP_SIZE", "WARPS_PER_WARPGROUP", "THREADS_PER_WARPGROUP",
]

WARP_SIZE = 32
WARPS_PER_WARPGROUP = 4
THREADS_PER_WARPGROUP = WARP_SIZE * WARPS_PER_WARPGROUP


_sregs, _sreg = read_sregs, read_sreg


def thread_idx() -> tuple[TracedInt, TracedInt, TracedInt]:
    """``(x, y, z)``: this thread's index in its block (``%tid``)."""
    return _sregs("tid")


def block_idx() -> tuple[TracedInt, TracedInt, TracedInt]:
    """``(x, y, z)``: this block's index in the grid (``%ctaid``)."""
    return _sregs("ctaid")


def block_dim() -> tuple[TracedInt, TracedInt, TracedInt]:
    """``(x, y, z)``: the block's extent in threads (``%ntid``)."""
    return _sregs("ntid")


def grid_dim() -> tuple[TracedInt, TracedInt, TracedInt]:
    """``(x, y, z)``: the grid's extent in blocks (``%nctaid``)."""
    return _sregs("nctaid")


def cluster_idx() -> tuple[TracedInt, TracedInt, TracedInt]:
    """``(x, y, z)``: this cluster's index in the grid (``%clusterid``)."""
    return _sregs("clusterid")


def cluster_dim() -> tuple[TracedInt, TracedInt, TracedInt]:
    """``(x, y, z)``: the number of clusters in each dimension of the grid (``%nclusterid``).

    The number of blocks in each dimension of a cluster is :func:`block_in_cluster_dim`.
    """
    return _sregs("nclusterid")


def block_in_cluster_idx() -> tuple[TracedInt, TracedInt, TracedInt]:
    """``(x, y, z)``: this block's index in its cluster (``%cluster_ctaid``)."""
    return _sregs("cluster_ctaid")


def block_in_cluster_dim() -> tuple[TracedInt, TracedInt, TracedInt]:
    """``(x, y, z)``: the number of blocks in each dimension of the cluster (``%cluster_nctaid``)."""
    return _sregs("cluster_nctaid")


def cluster_shape() -> tuple[TracedInt, TracedInt, TracedInt]:
    """``(x, y, z)``: the cluster's extent in blocks; the same as :func:`block_in_cluster_dim`."""
    return block_in_cluster_dim()


def block_idx_in_cluster() -> TracedInt:
    """This block's linear rank in its cluster (``%cluster_ctarank``), 0 .. cluster size - 1.

    The ``(x, y, z)`` index of the block in its cluster is :func:`block_in_cluster_idx`.
    """
    return _sreg("cluster_ctarank")


def block_rank_in_cluster() -> TracedInt:
    """This block's linear rank in its cluster (``%cluster_ctarank``): :func:`block_idx_in_cluster`."""
    return _sreg("cluster_ctarank")


def cluster_size() -> TracedInt:
    """The number of blocks in this cluster (``%cluster_nctarank``)."""
    return _sreg("cluster_nctarank")


def lane_idx() -> TracedInt:
    """This thread's lane in its warp (``%laneid``)."""
    return _sreg("laneid")


def warp_idx() -> TracedInt:
    """The warp's index in its block: the thread's linear index ``x + y * bx + z * bx * by`` over 32.

    The block's extent ``(bx, by, bz)`` is the launch's (static), so a 1-D block gives ``tid.x // 32``.
    """
    b = current()
    bx, by, bz = b.launch.block if b.launch is not None else (None, None, None)
    tx, ty, tz = thread_idx()
    if bx is None:  # no launch known: read the extents
        nx, ny, _ = block_dim()
        return (tx + ty * nx + tz * (nx * ny)) // 32
    linear = tx
    if by > 1:
        linear = linear + ty * bx
    if bz > 1:
        linear = linear + tz * (bx * by)
    return linear // 32


def make_warp_uniform(value: TracedInt | int) -> TracedInt | int:
    """``value``, which the caller guarantees is the same in every lane of the warp (e.g. ``warp_idx()``).

    The value is returned as it is: the compiler's uniformity analysis sees through the index arithmetic.
    """
    if not isinstance(value, (TracedInt, int)) or type(value) is bool:
        raise TraceError(f"make_warp_uniform takes an integer (a traced Int32 or an int), got {value!r}")
    return value


@contextlib.contextmanager
def elect_one() -> Iterator[None]:
    """``with elect_one():`` traces a body that one lane of each (fully active) warp executes (``elect.sync``)."""
    leader = sync.elect_sync()
    with if_(TracedBool(leader)):
        mark_election()
        yield


def sync_threads() -> None:
    """``bar.sync 0``: wait for every thread of the block."""
    sync.barrier_sync(current().const(0, 32))


def _aligned(aligned, name):
    if aligned is not None and type(aligned) is not bool:
        raise TraceError(f"{name}: aligned must be None, True or False, got {aligned!r}")
    return bool(aligned)


def cluster_arrive(*, aligned: bool | None = None) -> None:
    """``barrier.cluster.arrive``: this thread arrives on the cluster barrier (every thread of every block of
    the cluster must arrive before ``cluster_wait`` returns), releasing its earlier memory accesses to the
    cluster. ``aligned=True``: the ``.aligned`` form, executed by every thread of the warp together."""
    a = _aligned(aligned, "cluster_arrive")
    sync.cluster_arrive(relaxed=False, aligned=a)


def cluster_arrive_relaxed(*, aligned: bool | None = None) -> None:
    """``barrier.cluster.arrive.relaxed``: :func:`cluster_arrive` without release ordering."""
    a = _aligned(aligned, "cluster_arrive_relaxed")
    sync.cluster_arrive(relaxed=True, aligned=a)


def cluster_wait() -> None:
    """``barrier.cluster.wait``: wait until every thread of the cluster has arrived (acquiring their released
    accesses)."""
    sync.cluster_wait(aligned=False)


def cluster_sync() -> None:
    """``barrier.cluster.arrive.aligned`` then ``barrier.cluster.wait.aligned`` (CuTe C++'s ``cluster_sync()``): a
    barrier over every thread of the cluster, with release/acquire ordering of memory accesses across its
    blocks. Every thread of a warp executes it together (the ``.aligned`` forms)."""
    cluster_arrive(aligned=True)
    sync.cluster_wait(aligned=True)


def cp_async_commit_group() -> None:
    """``cp.async.commit_group``: close the group of this thread's cp.async copies issued so far."""
    cpasync.commit_group()


def cp_async_wait_group(n: int = 0) -> None:
    """``cp.async.wait_group n``: wait until at most ``n`` (a static int, 0..7) of this thread's cp.async
    groups are pending (``n = 0``: all of its copies have landed in shared memory)."""
    if type(n) is not int or not 0 <= n <= 7:
        raise TraceError(f"cp_async_wait_group takes a static count in 0..7, got {n!r}")
    cpasync.wait_group(n)


def cp_async_shared_global(dst: Pointer, src: Pointer, size: int, modifier: str | LoadCacheMode, *,
                           cp_size: TracedInt | int | None = None) -> None:
    """``cp.async.{ca,cg}.shared.global [dst], [src], size{, cp_size}``: this thread copies ``size`` bytes (4, 8
    or 16; ``"cg"`` only 16) from global memory ``src`` to shared memory ``dst`` asynchronously; with
    ``cp_size`` (0 .. size) only that many are read and the rest of the ``size`` bytes are zeroed.

    ``modifier`` is ``"ca"`` (cache in L1 and L2) or ``"cg"`` (L2 only), or a ``LoadCacheMode``. (The DSL's
    names: ``size`` is what ``cpasync.cp_async_shared_global`` calls ``cp_size``, ``cp_size`` its ``src_size``.)
    """
    modes = {"ca": LoadCacheMode.ALWAYS, "cg": LoadCacheMode.GLOBAL}
    mode = modes.get(modifier.lower()) if isinstance(modifier, str) else modifier
    if mode not in (LoadCacheMode.ALWAYS, LoadCacheMode.GLOBAL):
        raise TraceError(f"cp_async_shared_global: modifier must be 'ca' or 'cg' (cp.async caches in L1 and L2, or "
                         f"in L2 only), got {modifier!r}")
    if type(size) is not int or size not in (4, 8, 16):
        raise TraceError(f"cp_async_shared_global: size must be 4, 8 or 16 bytes (a static int), got {size!r}")
    if mode is LoadCacheMode.GLOBAL and size != 16:
        raise TraceError(f"cp_async_shared_global: the 'cg' modifier copies 16 bytes, got size={size}")
    if type(cp_size) is int and not 0 <= cp_size <= size:
        raise TraceError(f"cp_async_shared_global: cp_size (the bytes read) must lie in [0, {size}], got {cp_size}")
    forms.cp_async_shared_global(dst, src, size, mode, src_size=cp_size)


# one front door: the same functions as cute_py.nvgpu.cpasync's (they emit through the op table)
tma_store_arrive = forms.tma_store_arrive
tma_store_wait = forms.tma_store_wait


def map_dsmem_ptr(smem_ptr: Pointer, cta_rank_in_cluster: TracedInt | int) -> Pointer:
    """The shared-memory pointer ``smem_ptr`` (of this CTA) mapped to CTA ``cta_rank_in_cluster`` of the cluster: the same offset
    in the peer's shared memory (``mapa.shared::cluster``, applied where a DSMEM store uses it). Tensors over it
    are the destinations of ``CopyDsmemStoreOp`` copies, and an mbarrier mapped this way their ``mbar_ptr``."""
    from ...tensor.pointer import AddressSpace, Pointer

    ptr, cta_rank = smem_ptr, cta_rank_in_cluster
    if not isinstance(ptr, Pointer) or ptr.memspace is not AddressSpace.smem:
        raise TraceError(f"map_dsmem_ptr maps a shared-memory pointer of this CTA, got {ptr!r}")
    if type(cta_rank) is int:
        if not 0 <= cta_rank < 16:
            raise TraceError(f"map_dsmem_ptr: a CTA rank in a cluster is in 0..15, got {cta_rank}")
    elif not isinstance(cta_rank, TracedInt):
        raise TraceError(f"map_dsmem_ptr: the CTA rank must be an int or a traced integer, got {cta_rank!r}")
    return ptr.at_peer(cta_rank)

