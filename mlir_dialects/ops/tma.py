"""TMA: bulk tensor copies between global memory and shared memory (tile and im2col modes), their groups and
prefetches."""

from typing import Optional, Sequence

from .._backend import ext, ir, llvm, nvvm
from ..dialect import CuteOp, Flag, bool_attr, i32_attr, str_attr
from ..types import AddressSpace
from .common import finish, to_shared_cluster

__all__ = [
    "TmaLoadOp",
    "TmaStoreOp",
    "TmaReduceOp",
    "TmaStoreArriveOp",
    "TmaStoreWaitOp",
    "PrefetchTensormapOp",
    "TmaPrefetchTileOp",
    "TmaLoadIm2colOp",
    "TMA_MAX_RANK",
    "TMA_REDUCTIONS",
    "TMA_IM2COL_RANKS",
]

TMA_MAX_RANK = 5
TMA_REDUCTIONS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")
TMA_IM2COL_RANKS = (3, 4, 5)
I16, I32, I64 = ir.IntegerType[16], ir.IntegerType[32], ir.IntegerType[64]
_REDUX = {k: getattr(nvvm.TMAReduxKind, k.upper()) for k in TMA_REDUCTIONS}


class _TmaOp(CuteOp):
    """Rules shared by the ops that address a tensor through a TMA descriptor."""

    def check_rank(self):
        rank = len(self.coords)
        if not 1 <= rank <= TMA_MAX_RANK:
            self.fail("tma-rank", f"a tile-mode TMA copy takes 1 to {TMA_MAX_RANK} coordinates, got {rank}")

    def check_desc(self):
        self.expect_space("desc", self.desc, AddressSpace.GENERIC)

    def check_no_multicast(self):
        if getattr(self, "multicast_mask", None) is not None:
            self.fail(
                "tma-multicast-load-only",
                "multicast::cluster exists only for loads into shared::cluster; a store or reduction cannot multicast",
            )


class TmaLoadOp(_TmaOp, name="tma_load"):
    """Load a 1-5-D tile from global to shared memory, completing bytes on an mbarrier; optional multicast and L2 hint.

    PTX: cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes{.multicast::cluster}{.L2::cache_hint} [dst], [desc, {coords}], [mbar]{, mask}{, policy};
    """

    dst: ext.Operand[llvm.PointerType]
    desc: ext.Operand[llvm.PointerType]
    mbar: ext.Operand[llvm.PointerType]
    coords: Sequence[ext.Operand[I32]]
    multicast_mask: Optional[ext.Operand[I16]] = None
    cache_hint: Optional[ext.Operand[I64]] = None

    def verify_rules(self):
        self.check_rank()
        self.check_desc()
        self.expect_space("dst", self.dst, AddressSpace.SHARED, AddressSpace.SHARED_CLUSTER)
        self.expect_space("mbar", self.mbar, AddressSpace.SHARED)

    @classmethod
    def builder(cls, dst, desc, mbar, coords, *, multicast_mask=None, cache_hint=None):
        """Build ``cute_nvgpu.tma_load`` (see ``TmaLoadOp``)."""
        return cls.build(dst, desc, mbar, list(coords), multicast_mask=multicast_mask, cache_hint=cache_hint)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
                to_shared_cluster(self.dst), self.desc, list(self.coords), self.mbar, [],
                multicastMask=self.multicast_mask, l2CacheHint=self.cache_hint,
            )
        finish(self, rewriter)


class TmaStoreOp(_TmaOp, name="tma_store"):
    """Store a 1-5-D tile from shared to global memory, in the thread's bulk group; optional L2 hint.

    PTX: cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group{.L2::cache_hint} [desc, {coords}], [src]{, policy};
    """

    desc: ext.Operand[llvm.PointerType]
    src: ext.Operand[llvm.PointerType]
    coords: Sequence[ext.Operand[I32]]
    multicast_mask: Optional[ext.Operand[I16]] = None
    cache_hint: Optional[ext.Operand[I64]] = None

    def verify_rules(self):
        self.check_rank()
        self.check_desc()
        self.check_no_multicast()
        self.expect_space("src", self.src, AddressSpace.SHARED)

    @classmethod
    def builder(cls, desc, src, coords, *, cache_hint=None, multicast_mask=None):
        """Build ``cute_nvgpu.tma_store`` (see ``TmaStoreOp``; a multicast mask is rejected)."""
        return cls.build(desc, src, list(coords), multicast_mask=multicast_mask, cache_hint=cache_hint)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.CpAsyncBulkTensorSharedCTAToGlobalOp(self.desc, self.src, list(self.coords),
                                                      l2CacheHint=self.cache_hint)
        finish(self, rewriter)


class TmaReduceOp(_TmaOp, name="tma_reduce"):
    """Reduce a 1-5-D tile of shared memory into global memory (add, min, max, inc, dec, and, or, xor).

    PTX: cp.reduce.async.bulk.tensor.Nd.global.shared::cta.<kind>.tile.bulk_group{.L2::cache_hint} [desc, {coords}], [src]{, policy};
    """

    desc: ext.Operand[llvm.PointerType]
    src: ext.Operand[llvm.PointerType]
    coords: Sequence[ext.Operand[I32]]
    kind: ir.StringAttr
    multicast_mask: Optional[ext.Operand[I16]] = None
    cache_hint: Optional[ext.Operand[I64]] = None

    def verify_rules(self):
        kind = self.str_attr("kind")
        if kind not in TMA_REDUCTIONS:
            self.fail("tma-reduce-kind", f"reduction must be one of {TMA_REDUCTIONS}, got {kind!r}")
        self.check_rank()
        self.check_desc()
        self.check_no_multicast()
        self.expect_space("src", self.src, AddressSpace.SHARED)

    @classmethod
    def builder(cls, desc, src, coords, kind="add", *, cache_hint=None, multicast_mask=None):
        """Build ``cute_nvgpu.tma_reduce`` (see ``TmaReduceOp``)."""
        return cls.build(desc, src, list(coords), str_attr(kind), multicast_mask=multicast_mask,
                         cache_hint=cache_hint)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.CpAsyncBulkTensorReduceOp(self.desc, self.src, _REDUX[self.str_attr("kind")], list(self.coords),
                                           l2CacheHint=self.cache_hint)
        finish(self, rewriter)


class TmaStoreArriveOp(CuteOp, name="tma_store_arrive"):
    """Close the group of this thread's bulk (TMA store/reduce) copies issued since the last commit.

    PTX: cp.async.bulk.commit_group;
    """

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.CpAsyncBulkCommitGroupOp()
        finish(self, rewriter)


class TmaStoreWaitOp(CuteOp, name="tma_store_wait"):
    """Wait until at most ``count`` bulk groups are pending (``.read``: only until their sources were read).

    PTX: cp.async.bulk.wait_group{.read} count;
    """

    count: ir.IntegerAttr
    read: Flag

    def verify_rules(self):
        n = self.int_attr("count")
        if n < 0:
            self.fail("tma-store-wait-count", f"the number of pending bulk groups must be >= 0, got {n}")

    @classmethod
    def builder(cls, count=0, *, read=False):
        """Build ``cute_nvgpu.tma_store_wait``."""
        return cls.build(i32_attr(count), bool_attr(read))

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.CpAsyncBulkWaitGroupOp(self.int_attr("count"), read=self.bool_attr("read") or None)
        finish(self, rewriter)


class PrefetchTensormapOp(CuteOp, name="prefetch_tensormap"):
    """Bring a TMA descriptor into the cache ahead of its first use.

    PTX: prefetch.tensormap [desc];
    """

    desc: ext.Operand[llvm.PointerType]

    def verify_rules(self):
        self.expect_space("desc", self.desc, AddressSpace.GENERIC)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.PrefetchOp(self.desc, tensormap=True)
        finish(self, rewriter)


class TmaPrefetchTileOp(_TmaOp, name="tma_prefetch_tile"):
    """Prefetch a 1-5-D tile of global memory into L2 through a TMA descriptor; optional L2 hint.

    PTX: cp.async.bulk.prefetch.tensor.Nd.L2.global.tile{.L2::cache_hint} [desc, {coords}]{, policy};
    """

    desc: ext.Operand[llvm.PointerType]
    coords: Sequence[ext.Operand[I32]]
    cache_hint: Optional[ext.Operand[I64]] = None

    def verify_rules(self):
        self.check_rank()
        self.check_desc()

    @classmethod
    def builder(cls, desc, coords, *, cache_hint=None):
        """Build ``cute_nvgpu.tma_prefetch_tile``."""
        return cls.build(desc, list(coords), cache_hint=cache_hint)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.CpAsyncBulkTensorPrefetchOp(self.desc, list(self.coords), [], l2CacheHint=self.cache_hint)
        finish(self, rewriter)


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

    @classmethod
    def builder(cls, dst, desc, mbar, coords, offsets, *, cache_hint=None):
        """Build ``cute_nvgpu.tma_load_im2col`` (see ``TmaLoadIm2colOp``)."""
        return cls.build(dst, desc, mbar, list(coords), list(offsets), cache_hint=cache_hint)

    def lower(self, rewriter):
        with rewriter.ip:
            nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
                to_shared_cluster(self.dst), self.desc, list(self.coords), self.mbar, list(self.offsets),
                l2CacheHint=self.cache_hint, mode=nvvm.TMALoadMode.IM2COL,
            )
        finish(self, rewriter)
