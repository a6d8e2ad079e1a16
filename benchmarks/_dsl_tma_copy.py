"""Kernel 1 (one TMA tile per CTA, gmem -> smem -> gmem) written with the NVIDIA CuTe DSL (``nvidia-cutlass-dsl``),
the comparison point of the compile benchmarks. Needs the DSL installed; imported only by the benchmarks."""


def build(cutlass, cute, cpasync, dtype, tile):
    """The DSL's ``@cute.jit`` copy of ``src`` into ``dst`` (2-D, row-major, ``dtype``) in ``tile`` tiles, one
    tile per CTA, with the same steps as ``cute_py.demo.kernel.tma_copy_kernel``."""
    nbytes = tile[0] * tile[1] * dtype.width // 8

    @cute.kernel
    def dsl_copy_kernel(load_atom: cute.CopyAtom, load_t: cute.Tensor, store_atom: cute.CopyAtom,
                        store_t: cute.Tensor, smem_layout: cute.Layout):
        bx, by, _ = cute.arch.block_idx()
        smem = cutlass.utils.SmemAllocator()
        s_tile = smem.allocate_tensor(dtype, smem_layout, 128)
        bar = smem.allocate_array(cutlass.Int64, 1)
        s_grouped = cute.group_modes(s_tile, 0, 2)
        tAsA, tAgA = cpasync.tma_partition(load_atom, 0, cute.make_layout(1), s_grouped,
                                           cute.group_modes(cute.local_tile(load_t, tile, (by, bx)), 0, 2))
        tBsB, tBgB = cpasync.tma_partition(store_atom, 0, cute.make_layout(1), s_grouped,
                                           cute.group_modes(cute.local_tile(store_t, tile, (by, bx)), 0, 2))
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
            cute.arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
            cute.copy(load_atom, tAgA, tAsA, tma_bar_ptr=bar)
            cute.arch.mbarrier_wait(bar, 0)
            cute.copy(store_atom, tBsB, tBgB)
            cute.arch.cp_async_bulk_commit_group()
            cute.arch.cp_async_bulk_wait_group(0, read=True)

    @cute.jit
    def dsl_copy(src: cute.Tensor, dst: cute.Tensor):
        smem_layout = cute.make_layout(tile, stride=(tile[1], 1))
        la, lt = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, smem_layout, tile)
        sa, st = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dst, smem_layout, tile)
        grid = (cute.ceil_div(src.shape[1], tile[1]), cute.ceil_div(src.shape[0], tile[0]), 1)
        dsl_copy_kernel(la, lt, sa, st, smem_layout).launch(grid=grid, block=(32, 1, 1), smem=nbytes + 1024)

    return dsl_copy
