"""The data-movement half of a Hopper GEMM, written with the CuTe DSL's API as its dense GEMM example uses it:
a class holding the tile and cluster shapes; staged, swizzled shared-memory layouts of A and B from the sm90
helpers; TMA atoms that multicast A along the cluster's N mode and B along its M mode
(``make_layout_image_mask`` of the run-time cluster coordinate); a ``@cute.struct`` with the pipeline's mbarriers
and the two aligned operand buffers; a ``PipelineTmaAsync`` joining one producer warp, which TMA-loads each k-tile
of A and B (its slice of each, multicast to its cluster row or column), and four consumer warps.

In place of the MMA the consumers sum the k-tiles: thread ``t`` of CTA ``(m, n)`` adds row ``t`` of every A tile
and of every B tile it receives, and writes the sums to ``sum_a[n, m * bM + t, :]`` and ``sum_b[m, n * bN + t,
:]`` — so every CTA's copy of every operand tile is checked, whichever CTA of its cluster loaded it."""

from typing import Tuple

import cute_py as cutlass
import cute_py as cute
import cute_py.utils as utils
import cute_py.utils.hopper_helpers as sm90_utils
import cute_py.pipeline as pipeline
from cute_py.nvgpu import cpasync
from cute_py.runtime import from_dlpack


class HopperMainloop:
    def __init__(self, tile_shape_mnk: Tuple[int, int, int] = (128, 128, 64),
                 cluster_shape_mn: Tuple[int, int] = (2, 2), ab_stage: int = 4):
        self.tile_shape_mnk = tile_shape_mnk
        self.cluster_shape_mn = cluster_shape_mn
        self.ab_stage = ab_stage
        self.num_consumer_warps = 4
        self.producer_warp_idx = 4
        self.threads_per_cta = 32 * (self.num_consumer_warps + 1)
        self.buffer_align_bytes = 1024
        self.num_mcast_ctas_a = cluster_shape_mn[1]
        self.num_mcast_ctas_b = cluster_shape_mn[0]
        self.is_a_mcast = self.num_mcast_ctas_a > 1
        self.is_b_mcast = self.num_mcast_ctas_b > 1

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, sum_a: cute.Tensor, sum_b: cute.Tensor):
        self.a_dtype = a.element_type
        self.b_dtype = b.element_type
        if cutlass.const_expr(self.tile_shape_mnk[0] != 32 * self.num_consumer_warps
                              or self.tile_shape_mnk[1] != 32 * self.num_consumer_warps):
            raise ValueError("each consumer thread owns one row of the A and B tiles")
        self.cta_layout_mnk = cute.make_layout((*self.cluster_shape_mn, 1))
        a_smem_layout_staged = sm90_utils.make_smem_layout_a(utils.LayoutEnum.from_tensor(a), self.tile_shape_mnk,
                                                             self.a_dtype, self.ab_stage)
        b_smem_layout_staged = sm90_utils.make_smem_layout_b(utils.LayoutEnum.from_tensor(b), self.tile_shape_mnk,
                                                             self.b_dtype, self.ab_stage)
        bm, bn, bk = self.tile_shape_mnk
        tma_atom_a, tma_tensor_a = self._make_tma_atom_and_tensor(a, a_smem_layout_staged, (bm, bk),
                                                                  self.num_mcast_ctas_a)
        tma_atom_b, tma_tensor_b = self._make_tma_atom_and_tensor(b, b_smem_layout_staged, (bn, bk),
                                                                  self.num_mcast_ctas_b)

        @cute.struct
        class SharedStorage:
            mainloop_pipeline_array_ptr: cute.struct.MemRange[cutlass.Int64, self.ab_stage * 2]
            sA: cute.struct.Align[cute.struct.MemRange[self.a_dtype, cute.cosize(a_smem_layout_staged)],
                                  self.buffer_align_bytes]
            sB: cute.struct.Align[cute.struct.MemRange[self.b_dtype, cute.cosize(b_smem_layout_staged)],
                                  self.buffer_align_bytes]

        self.shared_storage = SharedStorage
        grid = cute.round_up((cute.ceil_div(a.layout.shape[0], bm), cute.ceil_div(b.layout.shape[0], bn), 1),
                             (*self.cluster_shape_mn, 1))
        self.kernel(tma_atom_a, tma_tensor_a, tma_atom_b, tma_tensor_b, sum_a, sum_b, self.cta_layout_mnk,
                    a_smem_layout_staged, b_smem_layout_staged).launch(
            grid=grid, block=[self.threads_per_cta, 1, 1], cluster=(*self.cluster_shape_mn, 1))

    @staticmethod
    def _make_tma_atom_and_tensor(tensor, smem_layout_staged, smem_tile, mcast_dim):
        op = cpasync.CopyBulkTensorTileG2SMulticastOp() if mcast_dim > 1 else cpasync.CopyBulkTensorTileG2SOp()
        smem_layout = cute.slice_(smem_layout_staged, (None, None, 0))
        return cpasync.make_tiled_tma_atom(op, tensor, smem_layout, smem_tile, num_multicast=mcast_dim)

    @cute.kernel
    def kernel(self, tma_atom_a: cute.CopyAtom, mA_mk: cute.Tensor, tma_atom_b: cute.CopyAtom, mB_nk: cute.Tensor,
               sum_a: cute.Tensor, sum_b: cute.Tensor, cta_layout_mnk: cute.Layout,
               a_smem_layout_staged: cute.ComposedLayout, b_smem_layout_staged: cute.ComposedLayout):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == self.producer_warp_idx:
            cpasync.prefetch_descriptor(tma_atom_a)
            cpasync.prefetch_descriptor(tma_atom_b)
        bidx, bidy, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()

        cta_rank_in_cluster = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cluster_coord_mnk = cta_layout_mnk.get_flat_coord(cta_rank_in_cluster)
        a_mcast_mask = cute.make_layout_image_mask(cta_layout_mnk, cluster_coord_mnk, mode=1)
        b_mcast_mask = cute.make_layout_image_mask(cta_layout_mnk, cluster_coord_mnk, mode=0)
        a_mcast_mask = a_mcast_mask if self.is_a_mcast else 0
        b_mcast_mask = b_mcast_mask if self.is_b_mcast else 0
        a_smem_layout = cute.slice_(a_smem_layout_staged, (None, None, 0))
        b_smem_layout = cute.slice_(b_smem_layout_staged, (None, None, 0))
        tma_copy_bytes = (cute.size_in_bytes(self.a_dtype, a_smem_layout)
                          + cute.size_in_bytes(self.b_dtype, b_smem_layout))

        smem = utils.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        mcast_size = self.num_mcast_ctas_a + self.num_mcast_ctas_b - 1
        mainloop_pipeline = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.mainloop_pipeline_array_ptr.data_ptr(),
            num_stages=self.ab_stage,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, mcast_size * self.num_consumer_warps),
            tx_count=tma_copy_bytes,
            cta_layout_vmnk=cute.make_layout((1, *cta_layout_mnk.shape)),
            defer_sync=True,
        )
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_shape_mn, is_relaxed=True)

        sA = storage.sA.get_tensor(a_smem_layout_staged.outer, swizzle=a_smem_layout_staged.inner)
        sB = storage.sB.get_tensor(b_smem_layout_staged.outer, swizzle=b_smem_layout_staged.inner)
        tile_coord_mnk = (bidx, bidy, None)
        gA_mk = cute.local_tile(mA_mk, self.tile_shape_mnk, tile_coord_mnk, proj=(1, None, 1))   # (bM, bK, RestK)
        gB_nk = cute.local_tile(mB_nk, self.tile_shape_mnk, tile_coord_mnk, proj=(None, 1, 1))   # (bN, bK, RestK)

        a_cta_layout = cute.make_layout(cute.slice_(cta_layout_mnk, (0, None, 0)).shape)
        tAsA, tAgA = cpasync.tma_partition(tma_atom_a, cluster_coord_mnk[1], a_cta_layout,
                                           cute.group_modes(sA, 0, 2), cute.group_modes(gA_mk, 0, 2))
        b_cta_layout = cute.make_layout(cute.slice_(cta_layout_mnk, (None, 0, 0)).shape)
        tBsB, tBgB = cpasync.tma_partition(tma_atom_b, cluster_coord_mnk[0], b_cta_layout,
                                           cute.group_modes(sB, 0, 2), cute.group_modes(gB_nk, 0, 2))
        k_tile_cnt = cute.size(gA_mk, mode=[2])
        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_shape_mn)

        if warp_idx == self.producer_warp_idx:
            producer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.ab_stage)
            for k_tile in cutlass.range(k_tile_cnt, unroll=1):
                mainloop_pipeline.producer_acquire(producer_state)
                cute.copy(tma_atom_a, tAgA[(None, producer_state.count)], tAsA[(None, producer_state.index)],
                          tma_bar_ptr=mainloop_pipeline.producer_get_barrier(producer_state),
                          mcast_mask=a_mcast_mask)
                cute.copy(tma_atom_b, tBgB[(None, producer_state.count)], tBsB[(None, producer_state.index)],
                          tma_bar_ptr=mainloop_pipeline.producer_get_barrier(producer_state),
                          mcast_mask=b_mcast_mask)
                mainloop_pipeline.producer_commit(producer_state)
                producer_state.advance()
            mainloop_pipeline.producer_tail(producer_state)
        else:
            bk = self.tile_shape_mnk[2]
            acc_a = cute.make_rmem_tensor((bk,), cutlass.Float32)
            acc_b = cute.make_rmem_tensor((bk,), cutlass.Float32)
            acc_a.fill(0.0)
            acc_b.fill(0.0)
            consumer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ab_stage)
            for k_tile in cutlass.range(k_tile_cnt, unroll=1):
                mainloop_pipeline.consumer_wait(consumer_state)
                for j in cutlass.range_constexpr(bk):
                    acc_a[j] = acc_a[j] + sA[tidx, j, consumer_state.index].to(cutlass.Float32)
                    acc_b[j] = acc_b[j] + sB[tidx, j, consumer_state.index].to(cutlass.Float32)
                mainloop_pipeline.consumer_release(consumer_state)
                consumer_state.advance()
            row_a = bidx * self.tile_shape_mnk[0] + tidx
            row_b = bidy * self.tile_shape_mnk[1] + tidx
            if row_a < sum_a.shape[1] and bidy < sum_a.shape[0]:
                for j in cutlass.range_constexpr(bk):
                    sum_a[bidy, row_a, j] = acc_a[j]
            if row_b < sum_b.shape[1] and bidx < sum_b.shape[0]:
                for j in cutlass.range_constexpr(bk):
                    sum_b[bidx, row_b, j] = acc_b[j]
        # no CTA leaves while a peer of its cluster may still multicast into it or arrive on its barriers
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()


def run(a, b, sum_a, sum_b, **config):
    """Sum the k-tiles of the K-major torch tensors ``a`` (M, K) and ``b`` (N, K) in every CTA that receives them
    into ``sum_a`` (tiles_n, M, bK) and ``sum_b`` (tiles_m, N, bK), Float32; return the compiled kernel."""
    args = [from_dlpack(t, assumed_align=16) for t in (a, b, sum_a, sum_b)]
    compiled = cute.compile(HopperMainloop(**config), *args)
    compiled(*args)
    return compiled
