"""Kernel builtins (``cute_py.arch``): thread/block/cluster indices, elect, barriers, mbarriers, fences.

Each function emits its operation into the kernel being traced (outside a kernel it raises
:class:`~cute_py.jit.errors.TraceError`). Indices are traced ``Int32`` values known to be
non-negative. mbarrier arguments are shared-memory pointers from
``SmemAllocator.allocate_mbarrier``.
"""

import contextlib

import mlir_dialects as md

from .builder import current, pointer_value
from .control import if_
from .errors import TraceError, locate
from .smem import SmemAllocator
from .values import TracedBool, TracedInt, as_value

__all__ = [
    "thread_idx", "block_idx", "block_dim", "grid_dim", "cluster_idx", "cluster_dim", "block_idx_in_cluster",
    "block_rank_in_cluster", "cluster_size", "lane_idx", "warp_idx", "elect_one", "sync_threads",
    "cluster_arrive", "cluster_wait", "cluster_sync", "cp_async_commit_group", "cp_async_wait_group",
    "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_and_expect_tx", "mbarrier_expect_tx", "mbarrier_wait",
    "mbarrier_try_wait", "fence_proxy_async", "fence_mbarrier_init", "tma_store_arrive", "tma_store_wait",
    "SmemAllocator",
]


def _sregs(prefix):
    b = current()
    nvvm, i32 = b.mlir.nvvm, b.int_type(32)
    with b.at_end():
        return tuple(TracedInt(getattr(nvvm, f"read_ptx_sreg_{prefix}_{d}")(results=[i32]), 32, True) for d in "xyz")


def thread_idx():
    """``(x, y, z)``: this thread's index in its block (``%tid``)."""
    return _sregs("tid")


def block_idx():
    """``(x, y, z)``: this block's index in the grid (``%ctaid``)."""
    return _sregs("ctaid")


def block_dim():
    """``(x, y, z)``: the block's extent in threads (``%ntid``)."""
    return _sregs("ntid")


def grid_dim():
    """``(x, y, z)``: the grid's extent in blocks (``%nctaid``)."""
    return _sregs("nctaid")


def cluster_idx():
    """``(x, y, z)``: this cluster's index in the grid (``%clusterid``)."""
    return _sregs("clusterid")


def cluster_dim():
    """``(x, y, z)``: the cluster's extent in blocks (``%cluster_nctaid``)."""
    return _sregs("cluster_nctaid")


def block_idx_in_cluster():
    """``(x, y, z)``: this block's index in its cluster (``%cluster_ctaid``)."""
    return _sregs("cluster_ctaid")


def block_rank_in_cluster():
    """This block's linear rank in its cluster (``%cluster_ctarank``), 0 .. cluster size - 1."""
    b = current()
    with b.at_end():
        return TracedInt(b.mlir.nvvm.read_ptx_sreg_cluster_ctarank(results=[b.int_type(32)]), 32, True)


def cluster_size():
    """The number of blocks in this cluster (``%cluster_nctarank``)."""
    b = current()
    with b.at_end():
        return TracedInt(b.mlir.nvvm.read_ptx_sreg_cluster_nctarank(results=[b.int_type(32)]), 32, True)


def lane_idx():
    """This thread's lane in its warp (``%laneid``)."""
    b = current()
    with b.at_end():
        return TracedInt(b.mlir.nvvm.read_ptx_sreg_laneid(results=[b.int_type(32)]), 32, True)


def warp_idx():
    """The warp's index in the block: ``tid.x // 32`` for a 1-D block (uniform across the warp)."""
    return thread_idx()[0] // 32


@contextlib.contextmanager
def elect_one():
    """``with elect_one():`` traces a body that one lane of each (fully active) warp executes (``elect.sync``)."""
    b = current()
    with b.at_end():
        leader = md.elect_sync().is_leader
    with if_(TracedBool(leader)):
        yield


def sync_threads():
    """``bar.sync 0``: wait for every thread of the block."""
    b = current()
    with b.at_end():
        b.mlir.nvvm.barrier()


def cluster_arrive(relaxed=False):
    """``barrier.cluster.arrive[.relaxed].aligned``: this thread arrives on the cluster barrier (every
    thread of every block of the cluster must arrive before ``cluster_wait`` returns)."""
    with current().at_end():
        md.cluster_arrive(relaxed=bool(relaxed))


def cluster_wait():
    """``barrier.cluster.wait.aligned``: wait until all threads of the cluster have arrived."""
    with current().at_end():
        md.cluster_wait()


def cluster_sync():
    """``cluster_arrive()`` then ``cluster_wait()``: a barrier over every thread of the cluster (with
    release/acquire ordering of shared-memory accesses across its blocks)."""
    cluster_arrive()
    cluster_wait()


def cp_async_commit_group():
    """``cp.async.commit_group``: close the group of this thread's cp.async copies issued so far."""
    with current().at_end():
        md.cp_async_commit_group()


def cp_async_wait_group(n=0):
    """``cp.async.wait_group n``: wait until at most ``n`` (a static int, 0..7) of this thread's cp.async
    groups are pending (``n = 0``: all of its copies have landed in shared memory)."""
    if type(n) is not int or not 0 <= n <= 7:
        raise TraceError(locate(f"cp_async_wait_group takes a static count in 0..7, got {n!r}"))
    with current().at_end():
        md.cp_async_wait_group(n)


def _bar(mbar):
    return pointer_value(mbar, "the mbarrier")


def mbarrier_init(mbar, count=1):
    """Initialise the mbarrier at ``mbar`` for ``count`` arrivals per phase."""
    p, c = _bar(mbar), as_value(count)
    with current().at_end():
        md.mbarrier_init(p, c)


def mbarrier_arrive(mbar):
    """Arrive on the mbarrier at ``mbar``."""
    p = _bar(mbar)
    with current().at_end():
        md.mbarrier_arrive(p)


def mbarrier_arrive_and_expect_tx(mbar, nbytes):
    """Arrive on ``mbar`` and expect ``nbytes`` more bytes of transactions (TMA loads) in this phase."""
    p, n = _bar(mbar), as_value(nbytes)
    with current().at_end():
        md.mbarrier_arrive_expect_tx(p, n)


def mbarrier_expect_tx(mbar, nbytes):
    """Expect ``nbytes`` more bytes of transactions on ``mbar`` without arriving."""
    p, n = _bar(mbar), as_value(nbytes)
    with current().at_end():
        md.mbarrier_expect_tx(p, n)


def mbarrier_wait(mbar, phase):
    """Wait until the phase of parity ``phase`` (0/1, static or traced) of ``mbar`` has completed."""
    if type(phase) is int and phase not in (0, 1):
        raise TraceError(locate(f"an mbarrier phase parity is 0 or 1, got {phase}"))
    p, ph = _bar(mbar), as_value(phase)
    with current().at_end():
        md.mbarrier_wait_parity(p, ph)


def mbarrier_try_wait(mbar, phase):
    """A run-time condition: whether the phase of parity ``phase`` of ``mbar`` has completed (one test)."""
    p, ph = _bar(mbar), as_value(phase)
    with current().at_end():
        return TracedBool(md.mbarrier_try_wait_parity(p, ph).done)


_SPACES = {"shared": "shared::cta", "shared::cta": "shared::cta", "shared::cluster": "shared::cluster",
           "global": "global"}


def fence_proxy_async(space="shared::cta"):
    """``fence.proxy.async.<space>``: order generic-proxy accesses before later TMA (async-proxy) ones."""
    if space not in _SPACES:
        raise TraceError(locate(f"fence_proxy_async space must be one of {sorted(_SPACES)}, got {space!r}"))
    with current().at_end():
        md.fence_proxy_async(_SPACES[space])


def fence_mbarrier_init():
    """``fence.mbarrier_init.release.cluster``: make mbarrier initialisation visible to the cluster."""
    with current().at_end():
        md.fence_mbarrier_init()


def tma_store_arrive():
    """``cp.async.bulk.commit_group``: close the group of TMA stores issued so far by this thread."""
    with current().at_end():
        md.tma_store_arrive()


def tma_store_wait(count=0, read=False):
    """``cp.async.bulk.wait_group[.read] count``: wait until at most ``count`` store groups are pending."""
    if type(count) is not int or not 0 <= count <= 63:
        raise TraceError(locate(f"tma_store_wait takes a static count in 0..63, got {count!r}"))
    with current().at_end():
        md.tma_store_wait(count, read=bool(read))


# the warp-level builtins (shuffles, votes, named barriers, setmaxnreg, ldg/stg, ...) live in arch_warp
from . import arch_warp as _warp  # noqa: E402

__all__ += list(_warp.__all__)
globals().update({_name: getattr(_warp, _name) for _name in _warp.__all__})
