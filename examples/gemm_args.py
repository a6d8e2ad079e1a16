"""The host-side rules of kernel 13 (:mod:`examples.gemm`): its shapes, element types and options, the fused
epilogue's arguments and the scales of 8-bit inputs, each broken rule a ``CuteValueError`` naming it; and the
constants and sizes they are checked against."""

import numbers

import cute_py as cute

from .gemm_epilogue import ACTIVATIONS, EPI_BUFFERS, EPI_ROW_BYTES

__all__ = ["GEMM_TILE", "TILE_NS", "STAGES", "EPILOGUES", "CLUSTER_MS", "SPLITS", "WORKSPACE_SPLITS", "MMA_WARPGROUPS",
           "MMA_THREADS", "SMEM_LIMIT", "K_TILE_BYTES", "FP8", "k_tile", "smem_bytes", "epi_bytes", "block_scaled",
           "check_promotion", "check_fused", "check_args"]

GEMM_TILE = (128, 128, 64)             # the CTA tile of tile_n=128 (16-bit A, B); tile_n=256 gives (128, 256, 64)
TILE_NS = (128, 192, 256)              # the CTA tile's N extents
STAGES = {128: 6, 192: 4, 256: 4}      # the default stages of each tile_n: as many as shared memory holds
EPILOGUES = ("scalar", "vector", "tma")
CLUSTER_MS = (1, 2)                    # CTAs per cluster along M (2: B multicast to both)
SPLITS = (1, 2, 4, 8)                  # CTAs per tile along K (a cluster: their products summed across it)
WORKSPACE_SPLITS = tuple(range(1, 17))  # CTAs per tile along K, their products summed through a workspace
MMA_WARPGROUPS = 2
MMA_THREADS = 128 * MMA_WARPGROUPS            # the consumer warpgroups' threads
SMEM_LIMIT = 227 * 1024
K_TILE_BYTES = 128                     # a k-tile is 128 bytes of each row: 64 16-bit or 128 8-bit elements
FP8 = (cute.Float8E4M3FN, cute.Float8E5M2)


def k_tile(ab):
    """A k-tile's K extent for elements of ``ab``: 128 bytes."""
    return K_TILE_BYTES * 8 // ab.width


def smem_bytes(tile, stages, epilogue_bytes=0):
    """Shared memory of the kernel: the A and B stages (rows of 128-byte k-tiles), their barriers, the epilogue's
    buffers, alignment slack."""
    bm, bn, _ = tile
    return stages * (bm + bn) * K_TILE_BYTES + 16 * stages + epilogue_bytes + 2048


def epi_bytes():
    """The ``"tma"`` epilogue's shared memory: two 64-row subtiles of 128-byte rows per consumer warpgroup."""
    return MMA_WARPGROUPS * EPI_BUFFERS * 64 * EPI_ROW_BYTES


def check_promotion(a, block, fast_accum):
    """Whether the kernel promotes each k-tile's products out of the tensor cores into fp32 (8-bit inputs: with
    ``block`` scales always, with per-tensor scales or none unless ``fast_accum``); a CuteValueError for a
    ``fast_accum`` that is not a bool, or True where it means nothing (16-bit inputs, whose tensor cores accumulate
    in fp32) or cannot be (block scales are applied at each promotion)."""
    eight = a.element_type in FP8
    if type(fast_accum) is not bool or (fast_accum and (block or not eight)):
        why = "" if type(fast_accum) is not bool else (" with block scales (applied at each promotion)" if block else
                                                       f" with {a.element_type.name} inputs (accumulated in fp32)")
        raise cute.CuteValueError(f"gemm: fast_accum is a bool, True only with 8-bit inputs and per-tensor scales "
                                  f"or none, got {fast_accum!r}{why}")
    return eight and not fast_accum


def block_scaled(a, b, scale_a, scale_b):
    """Whether ``scale_a``/``scale_b`` are DeepSeek-V3's block scales, checked: 8-bit A and B, ``scale_a``
    ``(M, ceil(K / 128))`` and ``scale_b`` ``(ceil(N / 128), ceil(K / 128))`` Float32 (False for per-tensor
    scales or none)."""
    if scale_a is None or not hasattr(scale_a, "element_type") or cute.rank(scale_a.layout) != 2:
        return False
    (m, k), n = a.shape, b.shape[0]
    kt, nt = cute.ceil_div(k, 128), cute.ceil_div(n, 128)
    if a.element_type not in FP8:
        raise cute.CuteValueError(f"gemm: block scales (1x128 of A, 128x128 of B) take 8-bit A and B, got "
                                  f"{a.element_type.name}")
    for name, t, shape in (("scale_a", scale_a, (m, kt)), ("scale_b", scale_b, (nt, kt))):
        if (not hasattr(t, "element_type") or t.element_type is not cute.Float32 or cute.rank(t.layout) != 2
                or tuple(t.shape) != shape):
            raise cute.CuteValueError(f"gemm: with block scales {name} is Float32 of the shape {shape} (1x128 blocks "
                                      f"of A's rows, 128x128 blocks of B), got {t!r}")
    return True


def check_fused(c, bias, alpha, activation, scale_a=None, scale_b=None):
    """The fused epilogue's arguments: ``bias`` a 1-D float tensor of C's N columns (any stride), ``alpha`` a real
    number, ``activation`` one of ``ACTIVATIONS`` or ``None``, ``scale_a`` and ``scale_b`` (together or not at
    all) Float32 tensors of one element. Returns ``alpha`` as a Python float."""
    if (scale_a is None) != (scale_b is None):
        raise cute.CuteValueError("gemm: scale_a and scale_b come together (the scales of A and B)")
    for name, t in (("scale_a", scale_a), ("scale_b", scale_b)):
        if t is not None and (not hasattr(t, "element_type") or t.element_type is not cute.Float32
                              or cute.size(t) != 1):
            raise cute.CuteValueError(f"gemm: {name} is a Float32 tensor of one element (a per-tensor scale) or "
                                      f"2-D block scales, got {t!r}")
    if activation is not None and activation not in ACTIVATIONS:
        raise cute.CuteValueError(f"gemm: activation must be one of {ACTIVATIONS} or None, got {activation!r}")
    value = float(alpha) if isinstance(alpha, numbers.Real) and not isinstance(alpha, bool) else None
    if value is None or value != value:
        raise cute.CuteValueError(f"gemm: alpha must be a real number other than NaN (it scales A @ B^T), got "
                                  f"{alpha!r}")
    if bias is not None:
        if not hasattr(bias, "element_type") or cute.rank(bias.layout) != 1 or cute.size(bias) != c.shape[1]:
            raise cute.CuteValueError(f"gemm: bias must be a 1-D tensor of C's {c.shape[1]} columns, got "
                                      f"{getattr(bias, 'shape', bias)!r}")
        if bias.element_type not in (cute.Float32, cute.BFloat16, cute.Float16):
            raise cute.CuteValueError(f"gemm: bias is Float32, BFloat16 or Float16, got {bias.element_type.name}")
    return value


def check_args(a, b, c, stages, tile_n, reg_realloc, epilogue, cluster_m, persistent, group_m, split_k,
               workspace=False):
    for name, t in (("a", a), ("b", b), ("c", c)):
        if len(t.shape) != 2:
            raise cute.CuteValueError(f"gemm: {name} must be 2-D, got the shape {tuple(t.shape)}")
    (m, k), (n, kb), (mc, nc) = a.shape, b.shape, c.shape
    if kb != k or (mc, nc) != (m, n):
        raise cute.CuteValueError(f"gemm computes C (M, N) = A (M, K) @ B (N, K)^T: got A {tuple(a.shape)}, "
                                  f"B {tuple(b.shape)}, C {tuple(c.shape)}")
    if min(m, n, k) < 1:
        raise cute.CuteValueError(f"gemm needs M, N, K >= 1, got {(m, n, k)}")
    ta, tb = a.element_type, b.element_type
    if not ((ta in (cute.BFloat16, cute.Float16) and tb is ta) or (ta in FP8 and tb in FP8)):
        raise cute.CuteValueError(f"gemm: A and B are both BFloat16, both Float16, or 8-bit floats (Float8E4M3FN, "
                                  f"Float8E5M2), got {ta.name} and {tb.name}")
    if c.element_type not in (cute.Float32, cute.BFloat16, cute.Float16):
        raise cute.CuteValueError(f"gemm: C is Float32, BFloat16 or Float16, got {c.element_type.name}")
    for name, t in (("a", a), ("b", b)):
        if t.layout.stride[1] != 1:
            raise cute.CuteValueError(f"gemm: {name} must be row-major (K contiguous), got the strides "
                                      f"{t.layout.stride}")
        row = t.layout.stride[0]
        if type(row) is int and t.shape[0] != 1 and row * t.element_type.width % 128:
            raise cute.CuteValueError(f"gemm: {name}'s rows must start on 16-byte boundaries (TMA loads them): a row "
                                      f"stride of a multiple of {128 // t.element_type.width} elements (K a multiple "
                                      f"of it, or padded rows), got {row}")
    if type(stages) is not int or not 2 <= stages <= 6:
        raise cute.CuteValueError(f"gemm: stages must be an int in 2..6, got {stages!r}")
    if type(tile_n) is not int or tile_n not in TILE_NS:
        raise cute.CuteValueError(f"gemm: tile_n must be one of {TILE_NS}, got {tile_n!r}")
    if type(reg_realloc) is not bool:
        raise cute.CuteValueError(f"gemm: reg_realloc must be a bool, got {reg_realloc!r}")
    if epilogue not in EPILOGUES:
        raise cute.CuteValueError(f"gemm: epilogue must be one of {EPILOGUES}, got {epilogue!r}")
    if cluster_m is not None and (type(cluster_m) is not int or cluster_m not in CLUSTER_MS):
        raise cute.CuteValueError(f"gemm: cluster_m must be one of {CLUSTER_MS} or None, got {cluster_m!r}")
    if not (persistent is None or type(persistent) is bool or (type(persistent) is int and persistent >= 1)):
        raise cute.CuteValueError(f"gemm: persistent is None, a bool or a number of CTAs, got {persistent!r}")
    splits = WORKSPACE_SPLITS if workspace else SPLITS
    if split_k is not None and (type(split_k) is not int or split_k not in splits):
        raise cute.CuteValueError(f"gemm: split_k must be one of {SPLITS} or None (through a workspace: 1 to "
                                  f"{WORKSPACE_SPLITS[-1]}), got {split_k!r}")
    if not (group_m is None or (type(group_m) is int and 1 <= group_m < 2 ** 31)):
        raise cute.CuteValueError(f"gemm: group_m is None or a positive int below 2**31 (rows of cluster tiles per "
                                  f"group), got {group_m!r}")
    tile = (GEMM_TILE[0], tile_n, k_tile(a.element_type))
    need = smem_bytes(tile, stages, epi_bytes() if epilogue == "tma" else 0)
    if need > SMEM_LIMIT:
        raise cute.CuteValueError(f"gemm: {stages} stages of {tile[0]}x{tile[1]}x{tile[2]} tiles need {need} bytes "
                                  f"of shared memory, more than {SMEM_LIMIT}")
