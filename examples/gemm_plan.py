"""The host-side plan of kernel 13 (``examples.gemm``): the defaults it chooses for a shape (split K, the tile's
N, clusters and persistence), the grid, and which stores a C allows. Nothing here emits device code."""

import functools

import cute_py as cute
from cute_py.utils import HardwareInfo

from .gemm_args import GEMM_TILE, K_TILE_BYTES, SPLITS, STAGES, TILE_NS
from .tma_tiled import sm_count

__all__ = ["recv_fits", "cluster_capacity", "auto_split", "auto_tile_n", "cluster_m_one", "through_workspace",
           "split_fill", "split_pairs", "resolve", "tma_storable", "pairs_aligned", "grid_ctas"]


def recv_fits(tile, stages):
    """Whether a tile's fp32 partial products fit over the stages (the split reduction's receive buffer)."""
    bm, bn, _ = tile
    return bm * bn * 4 <= stages * (bm + bn) * K_TILE_BYTES


def cluster_capacity(size):
    """How many clusters of ``size`` CTAs, one CTA an SM, the device holds at once
    (``HardwareInfo.get_max_active_clusters``): a cluster's CTAs share a GPC, so fewer than ``SMs // size`` where
    the GPCs' SM counts are not multiples of ``size`` (an H200's 132 SMs hold 66 clusters of 2, 30 of 4, 15 of 8
    and 7 of 16: ``H200_CLUSTERS``); without a device, an H200's where the SMs are its 132 (the default), else
    ``sm_count() // size``."""
    return _capacity(size, sm_count())


# measured: HardwareInfo().get_max_active_clusters(size) on an H200, sizes 1..16
H200_CLUSTERS = {1: 132, 2: 66, 3: 39, 4: 30, 5: 22, 6: 17, 7: 15, 8: 15, 9: 9, 10: 7, 11: 7, 12: 7, 13: 7, 14: 7,
                 15: 7, 16: 7}
WORKSPACE_K_TILES = 16                    # the least k-tiles of a split the default sums through a workspace
WORKSPACE_SPLITS_AUTO = 8                 # the largest split the default takes: workspace_elements' default size
SPLIT_FILL_K_TILES = 12                   # split_fill's fixed cost of a CTA, in k-tiles
WORKSPACE_TILE_NS = (128, 256)            # the tile widths the default splits through a workspace


@functools.lru_cache(maxsize=None)
def _capacity(size, sms):
    try:
        return HardwareInfo().get_max_active_clusters(size)
    except Exception:  # no driver or device: the device compiled for
        return H200_CLUSTERS[size] if sms == 132 and size in H200_CLUSTERS else sms // size


def auto_split(m, n, k, tile, stages, clusters=True, min_k_tiles=8):
    """The K splits of the default: doubled from 1 (to at most 8) while the CTAs stay within one wave: of the
    device's SMs, at half of them or less before doubling, and of its clusters of the doubled split (a tile's
    splits are a cluster: ``cluster_capacity``; not with ``clusters=False``, a split through a workspace); and
    each split keeps at least ``min_k_tiles`` k-tiles. 1 unless M, N and K are static."""
    bm, bn, bk = tile
    if not (type(m) is int and type(n) is int and type(k) is int) or (clusters and not recv_fits(tile, stages)):
        return 1
    tiles, k_tiles, sms = cute.ceil_div(m, bm) * cute.ceil_div(n, bn), cute.ceil_div(k, bk), sm_count()
    split = 1
    while split < SPLITS[-1] and tiles * split * 2 <= sms and k_tiles >= min_k_tiles * split * 2 and \
            (not clusters or tiles <= cluster_capacity(split * 2)):
        split *= 2
    return split


def through_workspace(m, n, k, bk=GEMM_TILE[2]):
    """``(tile_n, split_k, cluster_m)`` of the default given a workspace: a split summed through global memory where
    it keeps more of one wave busy (:func:`split_fill`) than the default's split in clusters, or as much where that
    is a split of 128 x 256 tiles (slow in clusters: H200, 896x896x16384 split by 4 either way, 425 TFLOP/s in
    clusters against 519 through a workspace; 640x640x16384 by 8, 332 against 400); else ``(None, None, None)``,
    the default's own plan. Of the splits of 2 to ``WORKSPACE_SPLITS_AUTO`` of either tile width whose CTAs fit in
    one wave, the one of most fill (the larger tile, then the smaller split, where two tie). Each split keeps
    ``WORKSPACE_K_TILES`` k-tiles or more: every CTA writes and reads its tile's products through L2, which shorter
    splits do not repay (H200: 512x512x4096 split by 8 in 8 k-tiles 0.85x the clusters' split by 4). Measured on
    an H200 over 19 shapes of 256..2048 by 256..4096 by 4096..32768 (benchmarks/RESULTS.md). ``cluster_m`` is 2
    (two tiles' CTAs of a split share B's loads) where :func:`split_pairs` says so, else 1."""
    if not (type(m) is int and type(n) is int and type(k) is int):
        return None, None, None
    tn = auto_tile_n(m, n, k, bk)
    k_tiles, sms = cute.ceil_div(k, bk), sm_count()
    cs = auto_split(m, n, k, (GEMM_TILE[0], tn, bk), STAGES[tn])
    in_clusters = split_fill(min(_ctas(m, n, (GEMM_TILE[0], tn, bk), cs), sms), cute.ceil_div(k_tiles, cs))
    plans = [(split_fill(_ctas(m, n, (GEMM_TILE[0], t, bk), s), cute.ceil_div(k_tiles, s)), t, -s)
             for t in WORKSPACE_TILE_NS for s in range(2, WORKSPACE_SPLITS_AUTO + 1)
             if _ctas(m, n, (GEMM_TILE[0], t, bk), s) <= sms and k_tiles >= WORKSPACE_K_TILES * s]
    if not plans:
        return None, None, None
    fill, t, split = max(plans)
    if fill > in_clusters or (fill == in_clusters and tn == 256 and cs > 1):
        return t, -split, 2 if split_pairs(m, n, t, -split) else 1
    return None, None, None


def split_pairs(m, n, tile_n, split):
    """Whether the default's split through a workspace takes 2x1 clusters: 128 x 128 tiles in an even number of
    rows, split by 4 or more, in clusters the device holds at once. Measured (H200, TFLOP/s, 1x1 -> 2x1):
    512x512x16384 split by 8 367 -> 406, 512x512x8192 by 8 273 -> 310, 512x1024x16384 by 4 472 -> 535; no faster
    or slower elsewhere: split by 2 or 3 (1024x1024x8192 551 -> 548, 768x768x16384 -> 510 from 515), 128 x 256
    tiles (1024x1024x16384 by 4 626 -> 619), or rows taken as one more (640x640x16384 by 5 442 against 346 by 4)."""
    rows = cute.ceil_div(m, GEMM_TILE[0])
    return tile_n == 128 and split >= 4 and rows % 2 == 0 and \
        rows * cute.ceil_div(n, tile_n) * split // 2 <= cluster_capacity(2)


def split_fill(ctas, k_tiles):
    """How much of one wave ``ctas`` CTAs of ``k_tiles`` k-tiles each keep busy, in CTAs at the full rate: each
    CTA's k-tiles over those and ``SPLIT_FILL_K_TILES`` more (its pipeline's fill and drain, and its products
    written or summed). Fitted to the H200's TFLOP/s of the splits of 2 to 8 of each tile width over 512..1024-square
    C of K 4096..16384: e.g. 768x768x8192 split by 3 in 128 x 128 tiles (108 CTAs of 43 k-tiles) 416 TFLOP/s, by 7
    in 128 x 256 tiles (126 of 19) 383."""
    return ctas * k_tiles / (k_tiles + SPLIT_FILL_K_TILES)


def _ctas(m, n, tile, split):
    return cute.ceil_div(m, tile[0]) * cute.ceil_div(n, tile[1]) * split


def auto_tile_n(m, n, k, bk=GEMM_TILE[2]):
    """The default ``tile_n``: 128 where C is wider than tall (M < N), its 128 x 256 tiles are so few that the
    default would split K by exactly 2 (``auto_split``) and K has at least 64 k-tiles; 256 otherwise (and for a
    run-time M, N or K). There 128 x 128 tiles, enough for the SMs without a split, in persistent 2x1 clusters
    were measured faster on an H100: 512x4096x4096 at 547-590 TFLOP/s against 489-498 with the split
    (``benchmarks/RESULTS.md``). On the measured shapes outside the rule it was no faster, or slower: taller than
    wide (4096x512xK), K of 512, or more tiles (2048^3, 1024x4096x4096, 512x8192x8192). Also 128 where K has at
    least 64 k-tiles and 128 x 128 tiles keep at least as many SMs busy in one wave as 128 x 256 ones (whose split
    the clusters a wave holds may cut short: ``cluster_capacity``), which then split K less: 1024x1024xK 1.4-1.9x
    faster on an H200; since a stage's WGMMA descriptors are built once, also 512x512xK (split 4 against 8)
    1.17-1.41x, 512x1024xK 1.06-1.11x and 4096x512x4096 (no split against 2) 1.10x, ties at 4096x512x8192 and
    16384."""
    if not (type(m) is int and type(n) is int and type(k) is int):
        return 256
    wide, narrow = (GEMM_TILE[0], TILE_NS[-1], bk), (GEMM_TILE[0], TILE_NS[0], bk)
    if m < n and cute.ceil_div(k, wide[2]) >= 64 and auto_split(m, n, k, wide, STAGES[wide[1]]) == 2:
        return 128
    narrow_ctas = _one_wave(m, n, k, narrow)
    if cute.ceil_div(k, wide[2]) >= 64 and narrow_ctas and _one_wave(m, n, k, wide) <= narrow_ctas:
        return 128     # as many SMs busy in one wave, or more, with a smaller split (or none)
    return 256


def _one_wave(m, n, k, tile):
    """The CTAs of the default with ``tile`` (its tiles times their split), or 0 if they take more than a wave."""
    ctas = cute.ceil_div(m, tile[0]) * cute.ceil_div(n, tile[1]) * auto_split(m, n, k, tile, STAGES[tile[1]])
    return ctas if ctas <= sm_count() else 0


def cluster_m_one(m, n):
    """Whether 8-bit inputs promoted into fp32 with per-tensor scales take one CTA a cluster by default: where M
    or N (static) is below 4096. Measured on an H200 in interleaved rounds over the sweep of
    ``benchmarks/bench_gemm.py --fp8``: there 1.01-1.13x the 2x1 clusters' TFLOP/s on 15 of the 17 shapes (e.g.
    512x4096x16384 1.12x, 1024x8192x8192 1.11x), at 4096 or more on both sides 0.94-1.03x (e.g. 16384^3 0.97x,
    where the shared B loads save L2 traffic); ``benchmarks/RESULTS.md``."""
    return type(m) is int and type(n) is int and min(m, n) < 4096


def resolve(m, n, k, tile, stages, cluster_m, persistent, split_k, workspace=False):
    """``(cluster_m, persistent, split_k)`` with the defaults (``None``) chosen: split K where the tiles are too
    few for the SMs (``auto_split``) unless a cluster along M or persistence was asked for; otherwise 2x1
    clusters of persistent CTAs. A split of K takes the cluster (``split_k`` CTAs per tile) and one tile per CTA,
    so it excludes the other two; with ``workspace`` it is summed through global memory instead (no receive buffer
    over the stages), one tile per CTA, in clusters of ``cluster_m`` (default 1) CTAs that take the same split of
    adjacent tiles."""
    if split_k is None:
        asked = cluster_m not in (None, 1) or persistent not in (None, False)
        split_k = 1 if asked else auto_split(m, n, k, tile, stages)
    if split_k == 1:
        cluster_m = 2 if cluster_m is None else cluster_m
        persistent = True if persistent is None else persistent
        if type(persistent) is int and persistent < cluster_m:
            raise cute.CuteValueError(f"gemm: persistent is a bool or a number of CTAs >= cluster_m ({cluster_m}), "
                                      f"got {persistent!r}")
        return cluster_m, persistent, 1
    if persistent not in (None, False) or (cluster_m not in (None, 1) and not workspace):
        raise cute.CuteValueError(f"gemm: split_k={split_k} makes a cluster of {split_k} CTAs per tile, one tile each: "
                                  f"it needs cluster_m 1 and persistent False, got cluster_m={cluster_m!r}, "
                                  f"persistent={persistent!r}" if not workspace else
                                  f"gemm: split_k={split_k} through a workspace takes one tile a CTA: it needs "
                                  f"persistent False, got persistent={persistent!r}")
    bm, bn, bk = tile
    if type(k) is not int or cute.ceil_div(k, bk) < split_k:
        raise cute.CuteValueError(f"gemm: split_k={split_k} needs a static K of at least {split_k} k-tiles of {bk}, "
                                  f"got K={k!r}")
    if not workspace and not recv_fits(tile, stages):
        raise cute.CuteValueError(f"gemm: split_k={split_k} sums the {bm}x{bn} fp32 partial products over the "
                                  f"stages' shared memory: {stages} stages of {bm}x{bn}x{bk} tiles are too few "
                                  f"(at least {cute.ceil_div(bm * bn * 4, (bm + bn) * K_TILE_BYTES)})")
    return cluster_m or 1, False, split_k


def tma_storable(c):
    """Whether TMA can store to ``c``: unit column stride, a static row stride of a multiple of 16 bytes and a
    16-byte aligned pointer (TMA's rules for a global tensor), and rows of a static multiple of 16 bytes (a TMA
    store writes whole 16-byte granules, so a box reaching the end of a shorter row would write past it)."""
    row_stride, col_stride = c.layout.stride
    bits = c.element_type.width
    return (col_stride == 1 and type(row_stride) is int and row_stride * bits % 128 == 0
            and type(c.shape[1]) is int and c.shape[1] * bits % 128 == 0 and c.iterator.alignment >= 16)


def pairs_aligned(c):
    """Whether every pair of adjacent columns ``(j, j + 1)`` with ``j`` even starts on a boundary of the pair's
    size in ``c``: unit column stride, a static even row stride and a pointer aligned to two elements."""
    row_stride, col_stride = c.layout.stride
    return (col_stride == 1 and type(row_stride) is int and row_stride % 2 == 0
            and c.iterator.alignment >= c.element_type.width // 4)


def grid_ctas(m, n, bm, bn, cluster_m, persistent):
    """The launch's grid: a cluster per cluster tile, or, when persistent, as many clusters as fit the CTAs
    ``persistent`` gives (an int, or ``True``: the device's SMs), fewer where C has fewer cluster tiles."""
    tiles = cute.ceil_div(cute.ceil_div(m, bm), cluster_m) * cute.ceil_div(n, bn)
    if persistent is False:
        return tiles * cluster_m
    ctas = sm_count() if persistent is True else persistent
    clusters = ctas // cluster_m
    if type(tiles) is int:
        clusters = min(clusters, tiles)
    return clusters * cluster_m
