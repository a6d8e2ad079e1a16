"""Kernels 1 and 2: TMA tiled copies, one tile per CTA and persistent/pipelined.

::

    from examples import tma_copy, tma_copy_pipelined
    tma_copy(src, dst, (128, 64), "128B")     # src, dst: 2-D row-major CUDA arrays (torch, cupy...)
    tma_copy_pipelined(src, dst, (64, 128), "none", 4)

Kernel 1 (``tma_copy``): a TMA tiled copy, gmem -> smem -> gmem, one tile per CTA. It is the kernel
the demo runs, so it lives in the library (:mod:`cute_py.demo.kernel`) and is re-exported here.

Kernel 2 (``tma_copy_pipelined``): the same copy, persistent and pipelined. A grid of about
``SMs x k`` CTAs; CTA ``b`` copies tiles ``b, b + G, b + 2G, ...`` (``G`` CTAs, tiles numbered
row-major) through ``stages`` shared-memory tiles, each with a "full" mbarrier. One elected
thread runs the pipeline: it loads the first ``stages`` tiles, then for the ``i``-th tile
waits ``full[i % stages]`` with parity ``(i // stages) & 1``, TMA-stores the stage, commits
the store's bulk group, waits until the store of tile ``i - lag`` has finished *reading*
shared memory (``cp.async.bulk.wait_group.read lag``) and refills that stage with tile
``i - lag + stages``. The stage loop is unrolled (static shared-memory addresses) inside a
run-time loop over rounds of ``stages`` tiles, so the parity is the round's.
"""

import cute_py as cute
from cute_py import arch
from cute_py.compiler import L2_EVICT_FIRST, L2_EVICT_LAST
from cute_py.demo.kernel import tma_copy, tma_copy_kernel
from cute_py.demo.tour import smem_tile_layout
from cute_py.nvgpu import cpasync

__all__ = ["tma_copy", "tma_copy_kernel", "tma_copy_pipelined", "tma_copy_pipelined_kernel",
           "pipelined_grid", "smem_tile_layout"]


# -- kernel 2: persistent, pipelined ---------------------------------------------------------------

_L2_HINTS = {None: None, "evict_first": L2_EVICT_FIRST, "evict_last": L2_EVICT_LAST}
DEFAULT_SMS = 132  # the SM count assumed when no device can be asked (an H100 SXM / H200)
_SMEM_PER_SM = 228 * 1024  # shared memory of an sm_90 SM (each resident CTA also reserves 1 KB)


def sm_count():
    """The multiprocessor count of device 0, or ``DEFAULT_SMS`` without a usable CUDA driver/device."""
    try:
        return cute.compiler.sm_count()
    except Exception:  # no cuda-python, no driver, no device: compile for the default
        return DEFAULT_SMS


def pipelined_grid(num_tiles, smem_bytes, ctas_per_sm=None, sms=None):
    """The persistent grid of kernel 2: ``min(num_tiles, sms x ctas_per_sm)`` CTAs.

    ``ctas_per_sm`` defaults to as many CTAs of ``smem_bytes`` as fit in an SM's shared memory
    (at most 2: more only splits the same bytes in flight across more pipelines).
    """
    sms = sm_count() if sms is None else sms
    if ctas_per_sm is None:
        ctas_per_sm = max(1, min(2, _SMEM_PER_SM // (smem_bytes + 1024)))
    return max(1, min(num_tiles, sms * ctas_per_sm))


@cute.kernel
def tma_copy_pipelined_kernel(load_atom, load_tensor, store_atom, store_tensor, smem_layout, tile, tiles, num_ctas,
                              stages, lag, l2_hint=None):
    bx, _, _ = arch.block_idx()
    dtype = load_atom.dtype
    tiles_m, tiles_n = tiles
    num_tiles = tiles_m * tiles_n
    smem = arch.SmemAllocator()
    s_tiles = [cute.group_modes(smem.allocate_tensor(dtype, smem_layout), 0, 2) for _ in range(stages)]
    full = [smem.allocate_mbarrier() for _ in range(stages)]
    nbytes = cute.size(smem_layout) * dtype.width // 8
    rounds = cute.ceil_div(cute.ceil_div(num_tiles, num_ctas), stages)  # a static bound; tiles past the end skip

    def gmem_tile(tensor, t):
        return cute.group_modes(cute.local_tile(tensor, tile, (t // tiles_n, t % tiles_n)), 0, 2)

    def load(t, s):
        tAsA, tAgA = cpasync.tma_partition(load_atom, 0, cute.Layout(1), s_tiles[s], gmem_tile(load_tensor, t))
        arch.mbarrier_arrive_and_expect_tx(full[s], nbytes)
        cute.copy(load_atom, tAgA, tAsA, tma_bar_ptr=full[s], cache_hint=l2_hint)

    def store(t, s):
        tBsB, tBgB = cpasync.tma_partition(store_atom, 0, cute.Layout(1), s_tiles[s], gmem_tile(store_tensor, t))
        cute.copy(store_atom, tBsB, tBgB, cache_hint=l2_hint)
        arch.tma_store_arrive()

    with arch.elect_one():
        for s in cute.range_constexpr(stages):
            arch.mbarrier_init(full[s], 1)
        arch.mbarrier_init_fence()
        # prologue: the first `stages` tiles of this CTA
        for s in cute.range_constexpr(stages):
            t = bx + s * num_ctas
            if t < num_tiles:
                load(t, s)
        for r in range(rounds):
            for s in cute.range_constexpr(stages):
                i = r * stages + s  # this CTA's i-th tile, in stage s
                t = bx + i * num_ctas
                if t < num_tiles:
                    arch.mbarrier_wait(full[s], r & 1)
                    store(t, s)
                    # the store of tile i - lag has read its stage: refill it with tile i - lag + stages
                    arch.tma_store_wait(lag, read=True)
                    ps = (s - lag) % stages
                    tn = t + (stages - lag) * num_ctas
                    ok = tn < num_tiles
                    if s < lag:  # in round 0 the stage is still being filled by the prologue
                        ok = ok and r > 0
                    if ok:
                        load(tn, ps)
        arch.tma_store_wait(0, read=True)  # shared memory must outlive the last stores' reads


@cute.jit
def tma_copy_pipelined(src, dst, tile=(64, 128), swizzle="none", stages=4, lag=1, ctas_per_sm=None, max_ctas=None,
                       l2_hint=None):
    """Copy ``src`` into ``dst`` (same dtype and shape, 2-D, row-major) with kernel 2: a persistent grid,
    ``stages`` shared-memory tiles per CTA (2-8), each refilled once the store of the tile ``lag`` tiles
    later has read it (``1 <= lag < stages``: ``stages - lag`` loads stay ahead of the stores).

    The grid has ``min(tiles, SMs x ctas_per_sm, max_ctas)`` CTAs (``ctas_per_sm``: see ``pipelined_grid``).
    ``l2_hint`` (``None``, ``"evict_first"``, ``"evict_last"``) adds an L2 cache policy to every load and store."""
    if l2_hint not in _L2_HINTS:
        raise cute.CuteValueError(f"l2_hint must be one of {sorted(_L2_HINTS, key=str)}, got {l2_hint!r}")
    if type(stages) is not int or not 2 <= stages <= 8:
        raise cute.CuteValueError(f"stages must be an int in 2..8, got {stages!r}")
    if type(lag) is not int or not 1 <= lag < stages:
        raise cute.CuteValueError(f"lag must be an int in 1..stages-1, got {lag!r}")
    smem_layout = smem_tile_layout(src.element_type, tile, swizzle)
    load_atom, load_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, smem_layout, tile)
    store_atom, store_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dst, smem_layout, tile)
    tiles = (cute.ceil_div(src.shape[0], tile[0]), cute.ceil_div(src.shape[1], tile[1]))
    tile_bytes = cute.size(smem_layout) * src.element_type.width // 8
    smem_bytes = stages * (-(-tile_bytes // 1024) * 1024) + 8 * stages
    num_ctas = pipelined_grid(tiles[0] * tiles[1], smem_bytes, ctas_per_sm)
    if max_ctas is not None:
        num_ctas = max(1, min(num_ctas, max_ctas))
    tma_copy_pipelined_kernel(load_atom, load_tensor, store_atom, store_tensor, smem_layout, tile, tiles, num_ctas,
                              stages, lag, _L2_HINTS[l2_hint]).launch(grid=num_ctas, block=32)
