"""``cute_py.nvgpu.warpgroup`` (the CuTe DSL's ``cute.nvgpu.warpgroup``): Hopper's warpgroup MMA.

- :class:`MmaF16BF16Op` and :class:`MmaF8Op` (:mod:`.ops`): ``wgmma.mma_async`` on Float16/BFloat16 and on
  8-bit floats, their shapes, TV layouts and kernel-side issue;
- ``GmmaDescriptorTensor`` (:mod:`.fragment`): the A/B fragments of a tiled warpgroup MMA over shared
  memory (``tiled_mma.make_fragment_A/B``), descriptors for ``cute_py.gemm``;
- ``OperandMajorMode``, ``OperandSource``, ``Field`` (:mod:`.operands`);
- the shared-memory matrix descriptor: :func:`make_gmma_desc`, :func:`encode_gmma_desc` (:mod:`.desc`);
- the shared-memory layout atoms of its operands: ``SmemLayoutAtomKind`` and
  ``make_smem_layout_atom(kind, element_type)`` (:mod:`.smem`, also ``cute_py.make_smem_layout_atom``), the DSL's
  ``cute.nvgpu.warpgroup.make_smem_layout_atom``;
- ``fence()``, ``commit_group()``, ``wait_group(n)`` (:mod:`.sync`): ``wgmma.fence``, ``wgmma.commit_group``,
  ``wgmma.wait_group``.
"""

from __future__ import annotations

from .desc import GmmaDescriptor, GmmaLayoutError, LayoutType, encode_gmma_desc, make_gmma_desc
from .fragment import GmmaDescriptorTensor
from .operands import Field, OperandMajorMode, OperandSource
from .ops import MMA_OP_CLASSES, MmaF8Op, MmaF16BF16Op, WgmmaShapeError
from .smem import SmemLayoutAtomKind, make_smem_layout_atom
from .sync import commit_group, fence, wait_group

__all__ = ["MmaF16BF16Op", "MmaF8Op", "MMA_OP_CLASSES", "GmmaDescriptorTensor", "WgmmaShapeError", "OperandMajorMode",
           "OperandSource", "Field", "GmmaDescriptor", "GmmaLayoutError", "LayoutType", "encode_gmma_desc",
           "make_gmma_desc", "fence", "commit_group", "wait_group", "SmemLayoutAtomKind", "make_smem_layout_atom"]
