"""The TMA unit (Hopper's bulk tensor copies), one module per part:

- :mod:`.ops`: the copy operations (load, multicast load, im2col load, store, reduction) and ``ReductionOp``;
- :mod:`.desc`: the descriptor (:class:`TmaDescriptor`, its enums and rules) and its encoding by the driver;
- :mod:`.box`: the box derived from the gmem and smem layouts, and the descriptor built from it;
- :mod:`.smem`: the checks of the shared-memory side (one box per instruction, the store targets);
- :mod:`.atom`: :class:`TmaCopyAtom`, ``make_tiled_tma_atom`` and ``tma_partition``;
- :mod:`.im2col`: the im2col descriptor, atom and instruction of a 2-D convolution;
- :mod:`.multicast`: the multicast masks of a cluster.

The CuTe DSL reaches the TMA names through ``cute.nvgpu.cpasync`` (here ``cute_py.nvgpu.cpasync``); the low-level
device forms (``tma_load``, ``tma_store``...) are in :mod:`cute_py.nvgpu.forms`.
"""

from __future__ import annotations

from .atom import TmaCopyAtom, make_tiled_tma_atom, tma_partition
from .desc import (BYTES_PER_TENSORMAP, TENSORMAP_ALIGNMENT, TmaDescriptor, TmaError, TmaInterleave, TmaL2Promotion,
                   TmaOobFill, TmaSwizzle, tma_swizzle_of)
from .im2col import (Conv2dGeometry, Im2colCopyAtom, Im2colDescriptor, im2col_instruction, make_im2col_tma_atom,
                     tma_load_im2col)
from .multicast import create_tma_multicast_mask, make_layout_image_mask
from .ops import (COPY_OP_CLASSES, CopyBulkTensorIm2colG2SOp, CopyBulkTensorTileG2SMulticastOp, CopyBulkTensorTileG2SOp,
                  CopyBulkTensorTileS2GOp, CopyReduceBulkTensorTileS2GOp, ReductionOp, TmaOp, is_tma_op)

__all__ = [
    # the operations
    "ReductionOp", "TmaOp", "CopyBulkTensorTileG2SOp", "CopyBulkTensorTileG2SMulticastOp", "CopyBulkTensorIm2colG2SOp",
    "CopyBulkTensorTileS2GOp", "CopyReduceBulkTensorTileS2GOp", "is_tma_op", "COPY_OP_CLASSES",
    # the descriptor
    "TmaError", "TmaSwizzle", "TmaInterleave", "TmaL2Promotion", "TmaOobFill", "TmaDescriptor", "tma_swizzle_of",
    "BYTES_PER_TENSORMAP", "TENSORMAP_ALIGNMENT",
    # the atoms
    "TmaCopyAtom", "make_tiled_tma_atom", "tma_partition",
    "Conv2dGeometry", "Im2colCopyAtom", "Im2colDescriptor", "make_im2col_tma_atom", "im2col_instruction",
    "tma_load_im2col",
    # multicast
    "create_tma_multicast_mask", "make_layout_image_mask",
]
