"""Kernel 7: copying a list of tensors of different shapes in one launch, with per-tensor TMA descriptors
updated on the device.

::

    from examples import tma_grouped_copy
    tma_grouped_copy(workspace, (64, 64), a0, b0, a1, b1, a2, b2)    # b_i = a_i, tiles of 64 x 64

The host encodes one load and one store descriptor (for tensor 0). CTA ``i`` copies tensor
``i``: one thread copies both 128-byte descriptors from the kernel parameters into shared
memory and rewrites their global address, dims and strides for tensor ``i``
(``tensormap.replace``); after a warp barrier, the warp copies them to its slots of
``workspace`` (global memory) and releases them to the tensormap proxy
(``tensormap.cp_fenceproxy``), then acquires them (``fence.proxy.tensormap::generic.acquire``)
and copies tensor ``i`` tile by tile, TMA-loading and TMA-storing through the updated
descriptors (one mbarrier, its phase flipping per tile). ``workspace`` is a device byte array
of at least ``256 x len(tensors)`` bytes, 128-byte aligned.
"""

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync

from .tma_tiled import smem_tile_layout

__all__ = ["tma_grouped_copy", "tma_grouped_copy_kernel", "DESCRIPTOR_SLOT"]

DESCRIPTOR_SLOT = cpasync.BYTES_PER_TENSORMAP  # one 128-byte descriptor


@cute.jit
def _copy_tensor(i, load_atom, store_atom, src, dst, workspace, s_desc, s_tile, bar, tile):
    """CTA i's work: its descriptors, then every tile of src -> dst."""
    w_load = workspace.engine + 2 * DESCRIPTOR_SLOT * i
    w_store = w_load + DESCRIPTOR_SLOT
    with arch.elect_one():
        cpasync.copy_tensormap(load_atom, s_desc)
        cpasync.copy_tensormap(store_atom, s_desc + DESCRIPTOR_SLOT)
        cpasync.update_tma_descriptor(load_atom, src, s_desc)
        cpasync.update_tma_descriptor(store_atom, dst, s_desc + DESCRIPTOR_SLOT)
    arch.sync_warp()
    cpasync.cp_fence_tma_desc_release(w_load, s_desc)  # warp-wide
    cpasync.cp_fence_tma_desc_release(w_store, s_desc + DESCRIPTOR_SLOT)
    load_tensor, store_tensor = load_atom.get_tma_tensor(src.shape), store_atom.get_tma_tensor(dst.shape)
    tiles_m, tiles_n = cute.ceil_div(src.shape[0], tile[0]), cute.ceil_div(src.shape[1], tile[1])
    with arch.elect_one():
        cpasync.fence_tma_desc_acquire(w_load)
        cpasync.fence_tma_desc_acquire(w_store)
        for t in range(tiles_m * tiles_n):
            tm, tn = t // tiles_n, t % tiles_n
            tAsA, tAgA = cpasync.tma_partition(load_atom, 0, cute.Layout(1), s_tile,
                                               cute.group_modes(cute.local_tile(load_tensor, tile, (tm, tn)), 0, 2))
            tBsB, tBgB = cpasync.tma_partition(store_atom, 0, cute.Layout(1), s_tile,
                                               cute.group_modes(cute.local_tile(store_tensor, tile, (tm, tn)), 0, 2))
            if t > 0:
                arch.tma_store_wait(0, read=True)  # the previous tile's store has read shared memory
            cute.tma_copy(tAgA, tAsA, barrier=bar, tma_desc_ptr=w_load)
            arch.mbarrier_wait(bar, t & 1)
            cute.tma_copy(tBsB, tBgB, tma_desc_ptr=w_store)
            arch.tma_store_arrive()
        arch.tma_store_wait(0, read=True)


@cute.kernel
def tma_grouped_copy_kernel(load_atom, store_atom, srcs, dsts, workspace, smem_layout, tile):
    bx, _, _ = arch.block_idx()
    smem = arch.SmemAllocator()
    s_tile = cute.group_modes(smem.allocate_tensor(load_atom.dtype, smem_layout), 0, 2)
    s_desc = smem.allocate(2 * DESCRIPTOR_SLOT, alignment=128)
    bar = smem.allocate_mbarrier()
    with arch.elect_one():
        arch.mbarrier_init(bar, 1)
        arch.mbarrier_init_fence()
    for i in cute.range_constexpr(len(srcs)):  # one branch per tensor: its shapes are static
        if bx == i:
            _copy_tensor(i, load_atom, store_atom, srcs[i], dsts[i], workspace, s_desc, s_tile, bar, tile)


@cute.jit
def tma_grouped_copy(workspace, tile, *pairs):
    """Copy ``src_i`` into ``dst_i`` for ``pairs = (src_0, dst_0, src_1, dst_1, ...)`` (2-D row-major, one dtype,
    shapes differing per i) in one launch of one CTA per pair, each re-targeting a load and a store TMA
    descriptor on the device; ``tile`` is the TMA box (rows, cols)."""
    if not pairs or len(pairs) % 2:
        raise cute.CuteValueError(f"pass (src, dst) pairs after the workspace and the tile: got {len(pairs)} arrays")
    if len(pairs) // 2 > 65535:
        raise cute.CuteValueError(f"at most 65535 pairs per launch, got {len(pairs) // 2}")
    srcs, dsts = pairs[0::2], pairs[1::2]
    for i, (s, d) in enumerate(zip(srcs, dsts)):
        if tuple(s.shape) != tuple(d.shape) or s.element_type != d.element_type or len(s.shape) != 2:
            raise cute.CuteValueError(f"pair {i}: src and dst must be 2-D with the same shape and dtype, got "
                                      f"{s!r} and {d!r}")
        if s.element_type != srcs[0].element_type:
            raise cute.CuteValueError(f"every tensor must have the dtype of tensor 0 ({srcs[0].element_type.name}); "
                                      f"tensor {i} is {s.element_type.name}")
    need = 2 * DESCRIPTOR_SLOT * len(srcs)
    if cute.size(workspace.shape) * workspace.element_type.width // 8 < need:
        raise cute.CuteValueError(f"workspace must hold {need} bytes (two 128-byte descriptors per tensor)")
    if workspace.engine.alignment < 128:
        raise cute.CuteValueError(f"workspace must be 128-byte aligned, it is {workspace.engine.alignment}-byte aligned")
    smem_layout = smem_tile_layout(srcs[0].element_type, tile, "none")
    load_atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), srcs[0], smem_layout, tile)
    store_atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dsts[0], smem_layout, tile)
    workspace = cute.recast_tensor(workspace, "Uint8") if workspace.element_type.width != 8 else workspace
    tma_grouped_copy_kernel(load_atom, store_atom, srcs, dsts, workspace, smem_layout, tile).launch(
        grid=len(srcs), block=32)
