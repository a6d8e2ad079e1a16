"""TMA in im2col mode: a load of convolution pixels (channels per pixel, pixels per column) into shared memory."""

from typing import Optional, Sequence

from ._backend import ext, llvm, nvvm
from .dialect import CuteOp
from .lowering import finish, lowers, to_shared_cluster
from .ops_tma import I16, I32, I64
from .types import AddressSpace

__all__ = ["TmaLoadIm2colOp", "tma_load_im2col", "TMA_IM2COL_RANKS"]

TMA_IM2COL_RANKS = (3, 4, 5)


class TmaLoadIm2colOp(CuteOp, name="tma_load_im2col"):
    """Load pixels of a 3-5-D tensor in im2col mode, completing bytes on an mbarrier; optional L2 hint.

    ``coords`` are ``(c, w[, h[, d]], n)``: the first pixel of the bounding-box traversal; ``offsets`` are the
    ``rank - 2`` 16-bit im2col offsets ``(w[, h[, d]])`` added to each pixel's position (the filter tap).

    PTX: cp.async.bulk.tensor.Nd.shared::cluster.global.im2col.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [desc, {coords}], [mbar], {offsets}{, policy};
    """

    dst: ext.Operand[llvm.PointerType]
    desc: ext.Operand[llvm.PointerType]
    mbar: ext.Operand[llvm.PointerType]
    coords: Sequence[ext.Operand[I32]]
    offsets: Sequence[ext.Operand[I16]]
    cache_hint: Optional[ext.Operand[I64]] = None

    def verify_rules(self):
        rank = len(self.coords)
        if rank not in TMA_IM2COL_RANKS:
            self.fail("tma-im2col-rank", f"an im2col TMA load takes 3 to 5 coordinates, got {rank}")
        if len(self.offsets) != rank - 2:
            self.fail("tma-im2col-offsets",
                      f"an im2col TMA load of {rank} coordinates takes {rank - 2} im2col offsets (one per spatial "
                      f"dim), got {len(self.offsets)}")
        for i, o in enumerate(self.offsets):
            self.expect_int(f"offset {i}", o, 16)
        self.expect_space("desc", self.desc, AddressSpace.GENERIC)
        self.expect_space("dst", self.dst, AddressSpace.SHARED, AddressSpace.SHARED_CLUSTER)
        self.expect_space("mbar", self.mbar, AddressSpace.SHARED)


def tma_load_im2col(dst, desc, mbar, coords, offsets, *, cache_hint=None):
    """Build ``cute_nvgpu.tma_load_im2col`` (see ``TmaLoadIm2colOp``)."""
    return TmaLoadIm2colOp.build(dst, desc, mbar, list(coords), list(offsets), cache_hint=cache_hint)


@lowers(TmaLoadIm2colOp)
def lower_tma_load_im2col(op, rewriter):
    with rewriter.ip:
        nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
            to_shared_cluster(op.dst), op.desc, list(op.coords), op.mbar, list(op.offsets),
            l2CacheHint=op.cache_hint, mode=nvvm.TMALoadMode.IM2COL,
        )
    finish(op, rewriter)
