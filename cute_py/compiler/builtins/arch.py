"""Kernel builtins (``cute_py.arch``): thread/block/cluster indices, elect, barriers, mbarriers, fences.

Each function emits its operation into the kernel being traced (outside a kernel it raises
:class:`~cute_py.errors.TraceError`). Indices are traced ``Int32`` values known to be
non-negative. mbarrier arguments are shared-memory pointers from
``SmemAllocator.allocate_mbarrier`` (or 8-byte aligned raw ``allocate`` bytes; never a tensor's
data).

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
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import mlir_dialects as md

from ...nvgpu import device_ops

from ..frontend.builder import current
from ..frontend.memory import pointer_value
from ..frontend.control import if_
from ...errors import TraceError
from ..frontend.smem import SmemAllocator, check_mbarrier_pointer
from ..frontend.values import TracedBool, TracedInt, as_value

if TYPE_CHECKING:
    from ...tensor.pointer import Pointer

__all__ = [
    "thread_idx", "block_idx", "block_dim", "grid_dim", "cluster_idx", "cluster_dim", "block_in_cluster_idx",
    "block_in_cluster_dim", "cluster_shape", "block_idx_in_cluster", "block_rank_in_cluster", "cluster_size",
    "lane_idx", "warp_idx", "make_warp_uniform", "elect_one", "sync_threads",
    "cluster_arrive", "cluster_arrive_relaxed", "cluster_wait", "cluster_sync", "cp_async_commit_group",
    "cp_async_wait_group", "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_and_expect_tx", "mbarrier_expect_tx",
    "mbarrier_wait", "mbarrier_try_wait", "fence_proxy_async", "fence_mbarrier_init", "tma_store_arrive",
    "tma_store_wait", "SmemAllocator", "map_dsmem_ptr",
]


def _sregs(prefix):
    with current().at_end():
        return tuple(TracedInt(md.read_sreg(f"{prefix}.{d}").value, 32, True) for d in "xyz")


def _sreg(name):
    with current().at_end():
        return TracedInt(md.read_sreg(name).value, 32, True)


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
    b = current()
    with b.at_end():
        leader = md.elect_sync().is_leader
    with if_(TracedBool(leader)):
        yield


def sync_threads() -> None:
    """``bar.sync 0``: wait for every thread of the block."""
    b = current()
    zero = b.const(0, 32)
    with b.at_end():
        md.barrier_sync(zero)


def cluster_arrive(relaxed: bool = False, *, aligned: bool | None = True) -> None:
    """``barrier.cluster.arrive[.relaxed].aligned``: this thread arrives on the cluster barrier (every
    thread of every block of the cluster must arrive before ``cluster_wait`` returns).

    ``aligned``: every thread of the warp executes it (the only form emitted; ``False`` is rejected).
    """
    if aligned not in (True, None):
        raise TraceError(f"cluster_arrive: only the .aligned form is supported (every thread of the warp "
                         f"arrives), got aligned={aligned!r}")
    with current().at_end():
        md.cluster_arrive(relaxed=bool(relaxed))


def cluster_arrive_relaxed(*, aligned: bool | None = True) -> None:
    """``barrier.cluster.arrive.relaxed.aligned``: :func:`cluster_arrive` without release ordering."""
    cluster_arrive(True, aligned=aligned)


def cluster_wait() -> None:
    """``barrier.cluster.wait.aligned``: wait until all threads of the cluster have arrived."""
    with current().at_end():
        md.cluster_wait()


def cluster_sync() -> None:
    """``cluster_arrive()`` then ``cluster_wait()``: a barrier over every thread of the cluster (with
    release/acquire ordering of shared-memory accesses across its blocks)."""
    cluster_arrive()
    cluster_wait()


def cp_async_commit_group() -> None:
    """``cp.async.commit_group``: close the group of this thread's cp.async copies issued so far."""
    with current().at_end():
        md.cp_async_commit_group()


def cp_async_wait_group(n: int = 0) -> None:
    """``cp.async.wait_group n``: wait until at most ``n`` (a static int, 0..7) of this thread's cp.async
    groups are pending (``n = 0``: all of its copies have landed in shared memory)."""
    if type(n) is not int or not 0 <= n <= 7:
        raise TraceError(f"cp_async_wait_group takes a static count in 0..7, got {n!r}")
    with current().at_end():
        md.cp_async_wait_group(n)


def _bar(mbar, what="mbarrier"):
    check_mbarrier_pointer(mbar, what)
    return pointer_value(mbar, f"{what}: the mbarrier")


def mbarrier_init(mbar: Pointer, count: TracedInt | int = 1) -> None:
    """Initialise the mbarrier at ``mbar`` for ``count`` arrivals per phase."""
    p, c = _bar(mbar, "mbarrier_init"), as_value(count)
    with current().at_end():
        md.mbarrier_init(p, c)


def mbarrier_arrive(mbar: Pointer) -> None:
    """Arrive on the mbarrier at ``mbar``."""
    p = _bar(mbar, "mbarrier_arrive")
    with current().at_end():
        md.mbarrier_arrive(p)


def mbarrier_arrive_and_expect_tx(mbar: Pointer, nbytes: TracedInt | int) -> None:
    """Arrive on ``mbar`` and expect ``nbytes`` more bytes of transactions (TMA loads) in this phase."""
    p, n = _bar(mbar, "mbarrier_arrive_and_expect_tx"), as_value(nbytes)
    with current().at_end():
        md.mbarrier_arrive_expect_tx(p, n)


def mbarrier_expect_tx(mbar: Pointer, nbytes: TracedInt | int) -> None:
    """Expect ``nbytes`` more bytes of transactions on ``mbar`` without arriving."""
    p, n = _bar(mbar, "mbarrier_expect_tx"), as_value(nbytes)
    with current().at_end():
        md.mbarrier_expect_tx(p, n)


def mbarrier_wait(mbar: Pointer, phase: TracedInt | int) -> None:
    """Wait until the phase of parity ``phase`` (0/1, static or traced) of ``mbar`` has completed."""
    if type(phase) is int and phase not in (0, 1):
        raise TraceError(f"an mbarrier phase parity is 0 or 1, got {phase}")
    p, ph = _bar(mbar, "mbarrier_wait"), as_value(phase)
    with current().at_end():
        md.mbarrier_wait_parity(p, ph)


def mbarrier_try_wait(mbar: Pointer, phase: TracedInt | int) -> TracedBool:
    """A run-time condition: whether the phase of parity ``phase`` of ``mbar`` has completed (one test)."""
    p, ph = _bar(mbar, "mbarrier_try_wait"), as_value(phase)
    with current().at_end():
        return TracedBool(md.mbarrier_try_wait_parity(p, ph).done)


_SPACES = {"shared": "shared::cta", "shared::cta": "shared::cta", "shared::cluster": "shared::cluster",
           "global": "global"}


def fence_proxy_async(space: str = "shared::cta") -> None:
    """``fence.proxy.async.<space>``: order generic-proxy accesses before later TMA (async-proxy) ones."""
    if not isinstance(space, str) or space not in _SPACES:
        raise TraceError(f"fence_proxy_async space must be one of {sorted(_SPACES)}, got {space!r}")
    with current().at_end():
        md.fence_proxy_async(_SPACES[space])


def fence_mbarrier_init() -> None:
    """``fence.mbarrier_init.release.cluster``: make mbarrier initialisation visible to the cluster."""
    with current().at_end():
        md.fence_mbarrier_init()


# one front door: the same functions as cute_py.nvgpu.cpasync's (they emit through the op table)
tma_store_arrive = device_ops.tma_store_arrive
tma_store_wait = device_ops.tma_store_wait


def map_dsmem_ptr(ptr: Pointer, cta_rank: TracedInt | int) -> Pointer:
    """The shared-memory pointer ``ptr`` (of this CTA) mapped to CTA ``cta_rank`` of the cluster: the same offset
    in the peer's shared memory (``mapa.shared::cluster``, applied where a DSMEM store uses it). Tensors over it
    are the destinations of ``CopyDsmemStoreOp`` copies, and an mbarrier mapped this way their ``mbar_ptr``."""
    from ...tensor.pointer import AddressSpace, Pointer

    if not isinstance(ptr, Pointer) or ptr.memspace is not AddressSpace.smem:
        raise TraceError(f"map_dsmem_ptr maps a shared-memory pointer of this CTA, got {ptr!r}")
    if type(cta_rank) is int:
        if not 0 <= cta_rank < 16:
            raise TraceError(f"map_dsmem_ptr: a CTA rank in a cluster is in 0..15, got {cta_rank}")
    elif not isinstance(cta_rank, TracedInt):
        raise TraceError(f"map_dsmem_ptr: the CTA rank must be an int or a traced integer, got {cta_rank!r}")
    return ptr.at_peer(cta_rank)

