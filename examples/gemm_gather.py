"""Kernel 13's (``examples.gemm``) hooks for a GEMM whose A arrives in shards from other GPUs while it runs
(``examples.all_gather_gemm`` drives them): A's rows come in ``world`` shards of ``shard_rows`` rows; shard ``s``
is ready once ``flags[s]`` is non-zero (a peer's copy engine wrote the rows, then the flag).

- **Order:** every CTA's M tiles are rotated by ``rank * shard_rows / bm`` tiles, so the tiles of this rank's own
  shard (already here) come first, then the shards of ranks ``rank + 1``, ``rank + 2``, ... in the order their
  copies are issued.
- **Wait:** before the first TMA load of a tile's A, the producer thread reads the flag of the tile's shard with
  acquire semantics at system scope until it is set, then fences the generic proxy against the async proxy, so
  that the TMA loads see the rows. Every wait is bounded by ``timeout_ns`` (``%globaltimer``): a shard that does
  not come is recorded in ``state[0]`` as ``1 << 8 | shard`` (the first error wins), and the tile goes on with
  whatever the buffer holds. The host learns it from ``state`` and raises; the output is then not the product.
"""

import cute_py as cute
from cute_py import arch

__all__ = ["GATHER_LATE", "gathered_tile", "wait_shard"]

GATHER_LATE = 1


@cute.jit
def gathered_tile(tm, gather, tiles_m):
    """M tile ``tm`` of the tile order, rotated so that this rank's shard comes first (``gather`` None: ``tm``)."""
    if gather is None:
        return tm
    shard_rows, rank, _, _, bm = gather
    return (tm + rank * (shard_rows // bm)) % tiles_m


@cute.jit
def wait_shard(flags, state, gather, row, deadline):
    """Wait until the shard that holds A's row ``row`` has arrived (nothing for this rank's own shard, or for a
    tile past M); bounded by ``deadline`` (see the module)."""
    shard_rows, rank, world, _, _ = gather
    shard = row // shard_rows
    if shard != rank and shard < world:
        flag = flags.iterator + shard
        while arch.load(flag, cute.Int32, sem="acquire", scope="sys") == 0:
            if arch.globaltimer() > deadline:
                arch.atomic_cas(state.iterator, cmp=0, val=GATHER_LATE * 256 + shard, sem="relaxed", scope="sys")
                break
        arch.fence_proxy("async.global")     # the rows, written before the flag, for the TMA loads
