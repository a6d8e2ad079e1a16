"""Example kernels of the JIT (``python -m examples`` runs and checks them on a GPU).

1. ``tma_copy``: a TMA tiled copy, gmem -> smem -> gmem, one tile per CTA.
2. ``tma_copy_pipelined``: the same, persistent and pipelined over 2-8 stages.
3. ``cp_async_copy``: a cp.async tiled copy zero-filling partial edge tiles.
4. ``tma_multicast_copy``: a TMA multicast load across a cluster of 2 or 4 CTAs.
5. ``tma_reduce_add``: ``dst += src`` with TMA reductions.
6. ``tma_transpose``: a transpose through 128B-swizzled shared memory.
7. ``tma_grouped_copy``: tensors of different shapes in one launch, descriptors updated on the device.
8. ``dsmem_exchange``: ``st.async`` stores into the next CTA's shared memory around a cluster.
9. ``elementwise_add``, ``fused_silu_add``: kernels that compute (128-bit vectors, predicated tails).
10. ``softmax``, ``row_sum``: row kernels (warp shuffles, a shared-memory reduction, exp2).
11. ``warp_specialized_copy``: a producer warp's multicast TMA loads and consumer warps' scaled TMA stores,
    joined by ``cute_py.pipeline`` pipelines across a cluster.
12. ``im2col``: a conv2d's implicit-GEMM A matrix gathered by im2col TMA (``c2d_im2col``).
13. ``gemm``: ``C = A @ B^T`` in bf16/fp16 or 8-bit floats (per-tensor or DeepSeek-V3 block scales) with fp32
    accumulation: TMA loads through a ``PipelineTmaAsync`` into 128B-swizzled shared memory, two warpgroups of
    ``wgmma.mma_async``, an epilogue through shared memory (``stmatrix``) and TMA stores with a fused scale,
    bias and activation, persistent 2x1 clusters, K split across a cluster for shapes of few tiles (its
    epilogues in ``gemm_epilogue``, its argument rules in ``gemm_args``).
14. ``attention``: FlashAttention-style attention forward in bf16/fp16 (head dims 64, 128, 256; causal; grouped
    KV heads; packed variable-length batches): a producer warp's TMA loads of Q, K and V, two consumer warpgroups
    computing ``Q K^T`` from shared memory and ``P V`` with P in registers, the online softmax in between; and
    ``attention_backward`` (``dq``, ``dk``, ``dv``; head dims 64 and 128).
15. Memory-bound row kernels for rows of 1 to 262144 elements with any row stride (``row_reduce`` holds their
    shared machinery: a row read once into registers, 128-bit vectors, reductions by warp butterflies, shared
    memory, and for long rows a cluster of 2-16 CTAs exchanging partials through distributed shared memory;
    ``row_chunks`` moves a chunk of a row, rows of any stride in 128-bit chunks where their bases allow,
    ``row_stage`` stages rows through shared memory, ``row_math`` holds a thread's arithmetic):
    ``softmax_forward``, ``softmax_backward``; ``rmsnorm_forward``, ``rmsnorm_backward`` (a deterministic ``dw``),
    ``layernorm_forward`` (long rows on a persistent grid of clusters: ``layernorm_loop``);
    ``cross_entropy_forward``, ``cross_entropy_backward`` (``ignore_index``).
16. ``grouped_gemm``, ``grouped_gemm_masked`` (``examples.grouped_gemm``): kernel 13's pipeline over the experts of
    a mixture of experts in one launch, the group sizes read on the device (CUDA-graph safe).
17. ``all_reduce`` (``examples.all_reduce``) and ``SymmetricAllReduce`` (``examples.symmetric``): one-shot and
    two-shot all-reduce across GPUs on PyTorch's symmetric memory, flag barriers between blocks of the ranks.
18. ``AllGatherGemm`` (``examples.all_gather_gemm``): an all-gather of A's row shards by copy engines overlapped
    with kernel 13, whose CTAs wait on a shard's flag before loading its rows (``examples.gemm_gather``).

The multi-GPU examples (17, 18) are imported from their modules; they need ``torch.distributed``.
"""

from .attention import attention, attention_kernel
from .attention_backward import attention_backward, attention_backward_kernel
from .cp_async import cp_async_copy, cp_async_copy_kernel, cp_async_tiled_copies
from .dsmem_exchange import dsmem_exchange, dsmem_exchange_kernel
from .gemm import gemm, gemm_kernel
from .elementwise import elementwise_add, elementwise_add_kernel, fused_silu_add, fused_silu_add_kernel
from .im2col import conv_output_size, im2col, im2col_kernel
from .grouped_copy import tma_grouped_copy, tma_grouped_copy_kernel
from .multicast import tma_multicast_copy, tma_multicast_copy_kernel
from .reduce_add import tma_reduce_add, tma_reduce_kernel
from .softmax import row_sum, row_sum_kernel, softmax, softmax_kernel
from .softmax_rows import softmax_backward, softmax_backward_kernel, softmax_forward, softmax_forward_kernel
from .norms import (layernorm_forward, layernorm_forward_kernel, rmsnorm_backward, rmsnorm_backward_kernel,
                    rmsnorm_forward, rmsnorm_forward_kernel, rmsnorm_workspace_rows)
from .cross_entropy import (cross_entropy_backward, cross_entropy_backward_kernel, cross_entropy_forward,
                            cross_entropy_forward_kernel)
from .transpose import tma_transpose, tma_transpose_kernel
from .tma_tiled import (pipelined_grid, smem_tile_layout, tma_copy, tma_copy_kernel, tma_copy_pipelined,
                        tma_copy_pipelined_kernel)
from .warp_specialized_copy import warp_specialized_copy, warp_specialized_copy_kernel

__all__ = ["attention", "attention_kernel", "attention_backward", "attention_backward_kernel", "tma_copy", "tma_copy_kernel", "tma_copy_pipelined", "tma_copy_pipelined_kernel", "pipelined_grid",
           "smem_tile_layout", "cp_async_copy", "cp_async_copy_kernel", "cp_async_tiled_copies",
           "tma_multicast_copy", "tma_multicast_copy_kernel", "tma_reduce_add", "tma_reduce_kernel", "tma_transpose",
           "tma_transpose_kernel", "tma_grouped_copy", "tma_grouped_copy_kernel",
           "dsmem_exchange", "dsmem_exchange_kernel", "elementwise_add", "elementwise_add_kernel", "fused_silu_add",
           "fused_silu_add_kernel", "softmax", "softmax_kernel", "row_sum", "row_sum_kernel",
           "warp_specialized_copy", "warp_specialized_copy_kernel", "im2col", "im2col_kernel", "conv_output_size",
           "gemm", "gemm_kernel", "softmax_forward", "softmax_forward_kernel", "softmax_backward",
           "softmax_backward_kernel", "rmsnorm_forward", "rmsnorm_forward_kernel", "rmsnorm_backward",
           "rmsnorm_backward_kernel", "rmsnorm_workspace_rows", "layernorm_forward", "layernorm_forward_kernel",
           "cross_entropy_forward", "cross_entropy_forward_kernel", "cross_entropy_backward",
           "cross_entropy_backward_kernel"]
