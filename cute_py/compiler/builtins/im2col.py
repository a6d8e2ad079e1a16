"""``c2d_im2col``: one ``(block_M, block_K)`` tile of a conv2d's im2col matrix into shared memory, by im2col TMA.

The host builds the atom with :func:`cute_py.nvgpu.tma.im2col.make_im2col_tma_atom` (the NHWC image, the shared
tile's layout, the convolution) and passes it to the kernel; the kernel calls
``c2d_im2col(atom, col, nhw_step, c_step, kernel, stride, dilation, pad, barrier=bar)``.

The call is the producer half of the load, as ``cute_py.tma_copy`` is: the elected lane of each warp
running it (``elect.sync`` over the active lanes, as ``cute_py.copy`` issues TMA) arrives on ``barrier``
expecting the tile's bytes and issues the one im2col TMA instruction; the caller waits for the tile with
``arch.mbarrier_wait(barrier, phase)``. So run it from one warp (or under ``arch.elect_one()``) per phase of
``barrier``, an mbarrier initialised for one arrival.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import TraceError
from ...nvgpu.tma.im2col import Im2colCopyAtom, im2col_instruction, tma_load_im2col
from ...tensor.pointer import AddressSpace, Pointer
from ...tensor.tensor import Tensor
from ...tensor.engines import check_store
from .copy import L2_EVICT_FIRST, L2_EVICT_LAST, L2_EVICT_NORMAL

if TYPE_CHECKING:
    from ..lang.traced_int import TracedInt

__all__ = ["c2d_im2col", "EVICTION_POLICIES"]

# the seed's eviction policies and the 64-bit L2 cache policy (``.L2::cache_hint``) each issues with
EVICTION_POLICIES = {None: None, "evict_normal": L2_EVICT_NORMAL, "evict_first": L2_EVICT_FIRST,
                     "evict_last": L2_EVICT_LAST}


def c2d_im2col(img: Im2colCopyAtom, col: Tensor, nhw_step: TracedInt | int, c_step: TracedInt | int, kernel: int,
               stride: int, dilation: int, pad: int, eviction_policy: str | None = None, *,
               barrier: Pointer) -> None:
    """Load tile ``(nhw_step, c_step)`` of the im2col matrix of a conv2d into ``col`` (shared memory).

    ``img`` is the im2col TMA atom of the NHWC input (``make_im2col_tma_atom``), a kernel argument; ``col`` the
    ``(block_M, block_K)`` shared tile of the atom's layout. Rows of the tile are the output pixels
    ``nhw_step * block_M + i`` (``(n, oh, ow)`` flattened; rows past ``N*OH*OW`` are zeros), columns the
    ``(kh, kw, c)`` entries ``c_step * block_K + j`` (``c`` fastest); entries in the padding are zeros.
    ``kernel``, ``stride``, ``dilation``, ``pad`` must be the atom's (the descriptor encodes them).
    ``eviction_policy``: ``None``, ``"evict_normal"``, ``"evict_first"`` or ``"evict_last"`` (an L2 cache hint).
    Completes the tile's bytes on ``barrier`` (arriving once); wait with ``arch.mbarrier_wait``.
    """
    from ..lang.smem import check_mbarrier_pointer

    if not isinstance(img, Im2colCopyAtom):
        raise TraceError(f"c2d_im2col: img must be the im2col TMA atom of the image (make_im2col_tma_atom), "
                         f"got {img!r}")
    given = (kernel, stride, dilation, pad)
    if given != img.conv.conv_params():
        raise TraceError(f"c2d_im2col: (kernel, stride, dilation, pad) = {given}, but the atom's descriptor was built "
                         f"for {img.conv.conv_params()}")
    if eviction_policy not in EVICTION_POLICIES:
        raise TraceError(f"c2d_im2col: eviction_policy must be one of "
                         f"{sorted(EVICTION_POLICIES, key=str)}, got {eviction_policy!r}")
    if not (isinstance(col, Tensor) and isinstance(col.engine, Pointer) and col.engine.memspace is AddressSpace.smem):
        raise TraceError(f"c2d_im2col: col must be a shared-memory tensor, got {col!r}")
    if col.engine.dtype != img.dtype:
        raise TraceError(f"c2d_im2col: col holds {col.engine.dtype.name}, the image {img.dtype.name}")
    if not _same_tile(col, img):
        raise TraceError(f"c2d_im2col: col has the layout {col.layout}, the atom was built for {img.smem_layout}")
    need = img.descriptor.smem_alignment
    if col.engine.alignment < need:
        raise TraceError(f"c2d_im2col: the col tile must be {need}-byte aligned for a "
                         f"{img.descriptor.swizzle.name} im2col TMA, but only {col.engine.alignment}-byte alignment "
                         f"is known")
    check_store(col, "c2d_im2col")
    check_mbarrier_pointer(barrier, "c2d_im2col: barrier")
    from .arch_mbar import mbarrier_arrive_and_expect_tx

    coords, offsets = im2col_instruction(img, nhw_step, c_step)
    with _elected_lane():
        mbarrier_arrive_and_expect_tx(barrier, img.tile_bytes)
        tma_load_im2col(img, barrier, col.engine, coords, offsets, cache_hint=EVICTION_POLICIES[eviction_policy])


def _same_tile(col, atom):
    # the same element layout and the same swizzle of the bytes (an allocated tile states its swizzle on elements)
    from ...core.composed import get_nonswizzle_portion
    from ...errors import CuteError
    from ...nvgpu.tma.desc import tma_swizzle_of

    try:
        swizzle = tma_swizzle_of(col.layout, atom.dtype)
    except CuteError:
        return False
    return swizzle is atom.descriptor.swizzle and \
        get_nonswizzle_portion(col.layout) == get_nonswizzle_portion(atom.smem_layout)


def _elected_lane():
    """An ``if`` whose body runs on one lane of each warp reaching it: the lane ``elect.sync`` picks among the
    active lanes (so a call under ``elect_one()`` or ``if tidx == 0`` issues once)."""
    from ..emit.sync import elect_active_lane
    from ..flow.control import if_
    from ..lang.values import TracedBool

    return if_(TracedBool(elect_active_lane()))
