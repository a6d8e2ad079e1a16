"""Kernel 12: a conv2d's implicit-GEMM A matrix gathered by im2col TMA.

::

    from examples import im2col
    im2col(img, out, kernel=3, stride=1, dilation=1, pad=1)   # img: (N, H, W, C) NHWC CUDA array (fp16/bf16)
                                                              # out: (N*OH*OW, KH*KW*C) row-major, same dtype

``out[m, k]`` becomes ``img[n, oh*S - P + kh*D, ow*S - P + kw*D, c]`` for ``m = (n, oh, ow)`` and
``k = (kh, kw, c)`` (``c`` fastest), zero in the padding: ``torch.nn.functional.unfold`` of the NCHW image
with its columns permuted from ``(c, kh, kw)`` to ``(kh, kw, c)``.

CTA ``b`` owns the ``block_M`` output pixels of M tile ``b``. One elected thread initialises an mbarrier,
then for each K tile ``k`` (``KH*KW*C / block_K`` of them) calls ``c2d_im2col(img, col, b, k, ...)``: one
im2col TMA load of the ``(block_M, block_K)`` tile into shared memory, completing on the mbarrier; it waits
for phase ``k & 1``, TMA-stores the tile into ``out`` (rows past ``N*OH*OW`` are clipped by the store), and
waits until the store has read the tile before the next load overwrites it.
"""

import cute_py as cute
from cute_py import arch
from cute_py.demo.tour import smem_tile_layout
from cute_py.nvgpu import cpasync
from cute_py.nvgpu.tma.im2col import make_im2col_tma_atom

__all__ = ["im2col", "im2col_kernel", "conv_output_size"]


def conv_output_size(size, kernel, stride=1, dilation=1, pad=0):
    """The output extent of a convolution along one spatial dim."""
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


@cute.kernel
def im2col_kernel(img, store_atom, store_tensor, col_layout, tile, conv, k_tiles, eviction_policy=None):
    bx, _, _ = arch.block_idx()
    kernel, stride, dilation, pad = conv
    smem = arch.SmemAllocator()
    col = smem.allocate_tensor(img.dtype, col_layout)
    bar = smem.allocate_mbarrier()
    with arch.elect_one():
        arch.mbarrier_init(bar, 1)
        arch.mbarrier_init_fence()
        for k in range(k_tiles):
            cute.c2d_im2col(img, col, bx, k, kernel, stride, dilation, pad, eviction_policy, barrier=bar)
            arch.mbarrier_wait(bar, k & 1)
            t_s, t_g = cpasync.tma_partition(store_atom, 0, cute.Layout(1), cute.group_modes(col, 0, 2),
                                             cute.group_modes(cute.local_tile(store_tensor, tile, (bx, k)), 0, 2))
            cute.copy(store_atom, t_s, t_g)
            arch.tma_store_arrive()
            arch.tma_store_wait(0, read=True)  # the tile was read: the next load may overwrite it


@cute.jit
def im2col(img, out, kernel, stride=1, dilation=1, pad=0, tile=(64, 64), swizzle="none", eviction_policy=None):
    """Write the im2col matrix of the NHWC ``img`` for a square ``kernel`` (``stride``, ``dilation``, ``pad``)
    into ``out`` (``(N*OH*OW, KH*KW*C)``, row-major) through ``tile = (block_M, block_K)`` shared tiles
    (``block_K`` divides ``C``; ``swizzle`` ``"none"`` or ``"128B"``, the latter for 128-byte tile rows)."""
    n, h, w, c = img.shape
    oh, ow = conv_output_size(h, kernel, stride, dilation, pad), conv_output_size(w, kernel, stride, dilation, pad)
    if tuple(out.shape) != (n * oh * ow, kernel * kernel * c):
        raise cute.CuteValueError(f"out must be ({n * oh * ow}, {kernel * kernel * c}) (N*OH*OW, KH*KW*C), got "
                                  f"{tuple(out.shape)}")
    col_layout = smem_tile_layout(img.element_type, tile, swizzle)
    atom = make_im2col_tma_atom(img, col_layout, kernel, stride, dilation, pad)
    store_atom, store_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), out, col_layout, tile)
    im2col_kernel(atom, store_atom, store_tensor, col_layout, tile, (kernel, stride, dilation, pad),
                  atom.num_k_tiles, eviction_policy).launch(grid=atom.num_m_tiles, block=32)
