"""An asynchronous producer/consumer pipeline written with the CuTe DSL's API: a class whose ``@cute.jit
__call__`` describes the shared storage (``@cute.struct``: the pipeline's mbarriers and a staged buffer) and
launches its ``@cute.kernel`` method; a ``pipeline.PipelineAsync`` over ``SmemAllocator`` storage joins producer
warps, which copy tiles of a row from global into shared memory with plain loads and stores, and consumer warps,
which scale them (``out = x * scale + k`` for tile ``k``, so a stage read in the wrong round shows) into ``dst``.
Each CTA walks the tiles of one row in a run-time loop; the stage index and phase are run-time values."""

import cute_py as cutlass
import cute_py as cute
import cute_py.utils as utils
import cute_py.pipeline as pipeline
from cute_py.runtime import from_dlpack


class PipelinedRowScale:
    def __init__(self, tile: int = 256, stages: int = 3, producer_warps: int = 1, consumer_warps: int = 2):
        self.tile = tile
        self.stages = stages
        self.producer_threads = 32 * producer_warps
        self.consumer_threads = 32 * consumer_warps
        self.producer_warps = producer_warps
        self.threads_per_cta = self.producer_threads + self.consumer_threads

    @cute.jit
    def __call__(self, src: cute.Tensor, dst: cute.Tensor, scale: cutlass.Float32):
        rows, cols = src.layout.shape
        if cutlass.const_expr(cols % self.tile != 0):
            raise ValueError(f"the row length {cols} is not a multiple of the tile {self.tile}")

        @cute.struct
        class SharedStorage:
            pipeline_mbar: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
            buffer: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, self.tile * self.stages], 128]

        self.shared_storage = SharedStorage
        self.kernel(src, dst, scale).launch(grid=[rows, 1, 1], block=[self.threads_per_cta, 1, 1])

    @cute.kernel
    def kernel(self, src: cute.Tensor, dst: cute.Tensor, scale: cutlass.Float32):
        tidx, _, _ = cute.arch.thread_idx()
        row, _, _ = cute.arch.block_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())

        smem = utils.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sBuf = storage.buffer.get_tensor(cute.make_layout((self.tile, self.stages)))
        pipe = pipeline.PipelineAsync.create(
            barrier_storage=storage.pipeline_mbar.data_ptr(),
            num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.producer_threads),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.consumer_threads),
        )

        gSrc = cute.local_tile(src[row, None], (self.tile,), (None,))   # (tile, num_tiles)
        gDst = cute.local_tile(dst[row, None], (self.tile,), (None,))
        num_tiles = cute.size(gSrc, mode=[1])

        if warp_idx < self.producer_warps:
            producer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
            for k in cutlass.range(num_tiles, unroll=1):
                pipe.producer_acquire(producer_state)
                for i in cutlass.range_constexpr(self.tile // self.producer_threads):
                    e = tidx + i * self.producer_threads
                    sBuf[e, producer_state.index] = gSrc[e, k]
                pipe.producer_commit(producer_state)
                producer_state.advance()
            pipe.producer_tail(producer_state)
        else:
            ctid = tidx - self.producer_threads
            consumer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            for k in cutlass.range(num_tiles, unroll=1):
                pipe.consumer_wait(consumer_state)
                for i in cutlass.range_constexpr(self.tile // self.consumer_threads):
                    e = ctid + i * self.consumer_threads
                    gDst[e, k] = sBuf[e, consumer_state.index] * scale + cutlass.Float32(k)
                pipe.consumer_release(consumer_state)
                consumer_state.advance()


def run(src, dst, scale: float, **config):
    """``dst[r, k * tile + e] = src[r, k * tile + e] * scale + k`` for the Float32 torch tensors ``src`` and
    ``dst``; return the compiled kernel."""
    a, b = from_dlpack(src), from_dlpack(dst)
    compiled = cute.compile(PipelinedRowScale(**config), a, b, cutlass.Float32(scale))
    compiled(a, b, cutlass.Float32(scale))
    return compiled
