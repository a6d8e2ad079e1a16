"""TMA: bulk tensor copies between global memory and shared memory, their groups and prefetches."""

from typing import Optional, Sequence

from ._backend import ext, ir, llvm, nvvm
from .dialect import CuteOp, Flag, bool_attr, i32_attr, str_attr
from .lowering import finish, lowers, to_shared_cluster
from .types import AddressSpace

__all__ = [
    "TmaLoadOp",
    "TmaStoreOp",
    "TmaReduceOp",
    "TmaStoreArriveOp",
    "TmaStoreWaitOp",
    "PrefetchTensormapOp",
    "TmaPrefetchTileOp",
    "tma_load",
    "tma_store",
    "tma_reduce",
    "tma_store_arrive",
    "tma_store_wait",
    "prefetch_tensormap",
    "tma_prefetch_tile",
    "TMA_MAX_RANK",
    "TMA_REDUCTIONS",
]

TMA_MAX_RANK = 5
TMA_REDUCTIONS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")
I16, I32, I64 = ir.IntegerType[16], ir.IntegerType[32], ir.IntegerType[64]


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


class TmaStoreArriveOp(CuteOp, name="tma_store_arrive"):
    """Close the group of this thread's bulk (TMA store/reduce) copies issued since the last commit.

    PTX: cp.async.bulk.commit_group;
    """


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


class PrefetchTensormapOp(CuteOp, name="prefetch_tensormap"):
    """Bring a TMA descriptor into the cache ahead of its first use.

    PTX: prefetch.tensormap [desc];
    """

    desc: ext.Operand[llvm.PointerType]

    def verify_rules(self):
        self.expect_space("desc", self.desc, AddressSpace.GENERIC)


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


# -- builders ------------------------------------------------------------------------------


def tma_load(dst, desc, mbar, coords, *, multicast_mask=None, cache_hint=None):
    """Build ``cute_nvgpu.tma_load`` (see ``TmaLoadOp``)."""
    return TmaLoadOp.build(dst, desc, mbar, list(coords), multicast_mask=multicast_mask, cache_hint=cache_hint)


def tma_store(desc, src, coords, *, cache_hint=None, multicast_mask=None):
    """Build ``cute_nvgpu.tma_store`` (see ``TmaStoreOp``; a multicast mask is rejected)."""
    return TmaStoreOp.build(desc, src, list(coords), multicast_mask=multicast_mask, cache_hint=cache_hint)


def tma_reduce(desc, src, coords, kind="add", *, cache_hint=None, multicast_mask=None):
    """Build ``cute_nvgpu.tma_reduce`` (see ``TmaReduceOp``)."""
    return TmaReduceOp.build(desc, src, list(coords), str_attr(kind), multicast_mask=multicast_mask,
                             cache_hint=cache_hint)


def tma_store_arrive():
    """Build ``cute_nvgpu.tma_store_arrive``."""
    return TmaStoreArriveOp.build()


def tma_store_wait(count=0, *, read=False):
    """Build ``cute_nvgpu.tma_store_wait``."""
    return TmaStoreWaitOp.build(i32_attr(count), bool_attr(read))


def prefetch_tensormap(desc):
    """Build ``cute_nvgpu.prefetch_tensormap``."""
    return PrefetchTensormapOp.build(desc)


def tma_prefetch_tile(desc, coords, *, cache_hint=None):
    """Build ``cute_nvgpu.tma_prefetch_tile``."""
    return TmaPrefetchTileOp.build(desc, list(coords), cache_hint=cache_hint)


# -- lowering ------------------------------------------------------------------------------

_REDUX = {k: getattr(nvvm.TMAReduxKind, k.upper()) for k in TMA_REDUCTIONS}


@lowers(TmaLoadOp)
def lower_tma_load(op, rewriter):
    with rewriter.ip:
        nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
            to_shared_cluster(op.dst), op.desc, list(op.coords), op.mbar, [],
            multicastMask=op.multicast_mask, l2CacheHint=op.cache_hint,
        )
    finish(op, rewriter)


@lowers(TmaStoreOp)
def lower_tma_store(op, rewriter):
    with rewriter.ip:
        nvvm.CpAsyncBulkTensorSharedCTAToGlobalOp(op.desc, op.src, list(op.coords), l2CacheHint=op.cache_hint)
    finish(op, rewriter)


@lowers(TmaReduceOp)
def lower_tma_reduce(op, rewriter):
    with rewriter.ip:
        nvvm.CpAsyncBulkTensorReduceOp(op.desc, op.src, _REDUX[op.str_attr("kind")], list(op.coords),
                                       l2CacheHint=op.cache_hint)
    finish(op, rewriter)


@lowers(TmaStoreArriveOp)
def lower_tma_store_arrive(op, rewriter):
    with rewriter.ip:
        nvvm.CpAsyncBulkCommitGroupOp()
    finish(op, rewriter)


@lowers(TmaStoreWaitOp)
def lower_tma_store_wait(op, rewriter):
    with rewriter.ip:
        nvvm.CpAsyncBulkWaitGroupOp(op.int_attr("count"), read=op.bool_attr("read") or None)
    finish(op, rewriter)


@lowers(PrefetchTensormapOp)
def lower_prefetch_tensormap(op, rewriter):
    with rewriter.ip:
        nvvm.PrefetchOp(op.desc, tensormap=True)
    finish(op, rewriter)


@lowers(TmaPrefetchTileOp)
def lower_tma_prefetch_tile(op, rewriter):
    with rewriter.ip:
        nvvm.CpAsyncBulkTensorPrefetchOp(op.desc, list(op.coords), [], l2CacheHint=op.cache_hint)
    finish(op, rewriter)
