"""A TMA tutorial-style copy written with the CuTe DSL's API: a class whose ``@cute.jit __call__`` builds the TMA
atoms and launches its ``@cute.kernel`` method; shared storage from a ``@cute.struct`` (an mbarrier and an aligned
tile) through ``utils.SmemAllocator``; ``tma_partition`` of the tiles; the load completes on the mbarrier, the
store goes through a bulk group. Every CTA copies one tile; the copy is issued by the whole warp (the DSL elects
one lane itself)."""

from typing import Type

import cute_py as cutlass
import cute_py as cute
import cute_py.utils as utils
from cute_py.nvgpu import cpasync
from cute_py.runtime import from_dlpack


class TmaTileCopy:
    def __init__(self, tile_shape=(64, 64)):
        self.tile_shape = tile_shape
        self.threads_per_cta = 32
        self.buffer_align_bytes = 1024

    @cute.jit
    def __call__(self, src: cute.Tensor, dst: cute.Tensor):
        if cutlass.const_expr(src.element_type != dst.element_type):
            raise TypeError("the source and destination element types differ")
        self.dtype: Type[cutlass.Numeric] = src.element_type
        tile_m, tile_n = self.tile_shape
        smem_layout = cute.make_layout((tile_m, tile_n), stride=(tile_n, 1))

        @cute.struct
        class SharedStorage:
            tma_barrier: cute.struct.MemRange[cutlass.Int64, 1]
            tile: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(smem_layout)],
                                    self.buffer_align_bytes]

        self.shared_storage = SharedStorage
        self.tile_bytes = cute.size_in_bytes(self.dtype, smem_layout)
        cta_tiler = cute.product_each(smem_layout.shape)
        load_atom, load_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, smem_layout,
                                                             cta_tiler)
        store_atom, store_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dst, smem_layout,
                                                               cta_tiler)
        grid = cute.ceil_div((*src.layout.shape, 1), (tile_m, tile_n, 1))
        self.kernel(load_atom, load_tensor, store_atom, store_tensor, smem_layout).launch(
            grid=grid, block=(self.threads_per_cta, 1, 1), cluster=(1, 1, 1),
            smem=self.shared_storage.size_in_bytes())

    @cute.kernel
    def kernel(self, load_atom: cute.CopyAtom, load_tensor: cute.Tensor, store_atom: cute.CopyAtom,
               store_tensor: cute.Tensor, smem_layout: cute.Layout):
        bidx, bidy, _ = cute.arch.block_idx()
        smem = utils.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        bar = storage.tma_barrier.data_ptr()

        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_expect_tx(bar, self.tile_bytes)
        cute.arch.mbarrier_init_fence()
        cute.arch.barrier()

        sTile = storage.tile.get_tensor(smem_layout)
        gSrc = cute.local_tile(load_tensor, self.tile_shape, (None, None))
        gDst = cute.local_tile(store_tensor, self.tile_shape, (None, None))
        tAs, tAg = cpasync.tma_partition(load_atom, 0, cute.make_layout(1), cute.group_modes(sTile, 0, 2),
                                         cute.group_modes(gSrc, 0, 2))
        _, tBg = cpasync.tma_partition(store_atom, 0, cute.make_layout(1), cute.group_modes(sTile, 0, 2),
                                       cute.group_modes(gDst, 0, 2))

        cute.copy(load_atom, tAg[(None, bidx, bidy)], tAs, tma_bar_ptr=bar)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(bar)
        cute.arch.mbarrier_wait(bar, 0)

        cute.copy(store_atom, tAs, tBg[(None, bidx, bidy)])
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)


def run(src, dst, tile_shape=(64, 64)):
    """Copy the torch tensor ``src`` into ``dst`` tile by tile; return the compiled kernel."""
    a, b = from_dlpack(src, assumed_align=16), from_dlpack(dst, assumed_align=16)
    compiled = cute.compile(TmaTileCopy(tile_shape), a, b)
    compiled(a, b)
    return compiled
