"""Kernel 8: stores into a peer CTA's shared memory (``CopyDsmemStoreOp``, ``st.async``), around a cluster.

::

    from examples import dsmem_exchange
    dsmem_exchange(src, dst, cluster=2, vector=4)      # src, dst: (blocks, 32 * per_thread) row-major

One warp per CTA, clusters of ``cluster x 1 x 1`` CTAs. CTA ``b`` loads row ``b`` of ``src`` into
registers (``per_thread`` elements per lane) and ``st.async``-stores them, ``vector`` elements per
instruction, into the shared memory of the next CTA of its cluster, completing the bytes on that
CTA's mbarrier. Each CTA expects one row's bytes on its own mbarrier, waits, and writes what it
received to row ``b`` of ``dst``: ``dst`` is ``src`` with the rows rotated by one inside each
cluster (``dst[b] == src[previous CTA of b's cluster]``).
"""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync

__all__ = ["dsmem_exchange", "dsmem_exchange_kernel"]

WARP = 32


@cute.kernel
def dsmem_exchange_kernel(src, dst, cluster, per_thread, vector):
    tid, _, _ = arch.thread_idx()
    bx, _, _ = arch.block_idx()
    rank = arch.block_rank_in_cluster()
    dtype = src.element_type
    row = WARP * per_thread
    smem = arch.SmemAllocator()
    box = smem.allocate_tensor(dtype, cute.Layout(row))
    bar = smem.allocate_mbarrier()
    with arch.elect_one():
        arch.mbarrier_init(bar, 1)
        arch.mbarrier_init_fence()
    arch.cluster_sync()  # every CTA's mbarrier is initialised before a peer's bytes land on it
    with arch.elect_one():
        arch.mbarrier_arrive_and_expect_tx(bar, row * dtype.width // 8)
    # this lane's elements of row bx, in registers
    mine = cute.local_tile(cute.local_tile(src, (1, row), (bx, 0))[(0, None)], (per_thread,), (tid,))
    frag = cute.make_fragment(cute.Layout(per_thread), dtype)
    cute.copy(mine, frag)
    # the same elements of the next CTA's row buffer, and that CTA's mbarrier
    peer = (rank + 1) % cluster
    remote = cute.make_tensor(arch.map_dsmem_ptr(box.engine, peer), cute.Layout(row))
    atom = cute.make_copy_atom(cpasync.CopyDsmemStoreOp(), dtype, num_bits_per_copy=vector * dtype.width)
    cute.copy(atom, frag, cute.local_tile(remote, (per_thread,), (tid,)), mbar_ptr=arch.map_dsmem_ptr(bar, peer))
    arch.mbarrier_wait(bar, 0)
    got = cute.local_tile(box, (per_thread,), (tid,))
    cute.copy(got, cute.local_tile(cute.local_tile(dst, (1, row), (bx, 0))[(0, None)], (per_thread,), (tid,)))
    arch.cluster_sync()  # no CTA leaves while a peer may still store into its shared memory


@cute.jit
def dsmem_exchange(src, dst, cluster=2, vector=4):
    """Rotate the rows of the row-major ``src`` by one inside each cluster of ``cluster`` CTAs (one row per
    CTA) through ``st.async`` stores into the next CTA's shared memory; ``dst`` receives the rotated rows."""
    if cluster not in (2, 4, 8):
        raise cute.CuteValueError(f"cluster must be 2, 4 or 8 CTAs, got {cluster!r}")
    blocks, n = src.shape
    if tuple(dst.shape) != (blocks, n) or dst.element_type != src.element_type:
        raise cute.CuteValueError(f"dst must be a {src.element_type.name} tensor of shape {(blocks, n)}")
    if blocks % cluster:
        raise cute.CuteValueError(f"the {blocks} rows must be a multiple of the cluster's {cluster} CTAs")
    if n % WARP or (n // WARP) % vector:
        raise cute.CuteValueError(f"a row of {n} elements must split into {WARP} lanes of whole {vector}-element "
                                  f"stores")
    dsmem_exchange_kernel(src, dst, cluster, n // WARP, vector).launch(grid=(blocks, 1, 1), block=WARP,
                                                                      cluster=(cluster, 1, 1))
