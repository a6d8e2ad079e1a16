"""The arguments of kernel 14 (``examples.attention``): their rules on the host, the tuned tiles and the rule a
caller's tile keeps (``check_tile``), the check of a packed batch's offsets on the device (``check_offsets``, a
kernel), and the views of q, k, v and out that its TMA loads read."""

import math
import numbers

import cute_py as cute
from cute_py import arch

from .attention_tiles import BLOCK_M

__all__ = ["HEAD_DIMS", "TILES", "WIDE_TILES", "SHORT_TILES", "padding", "BLOCK_MS", "SMEM_BYTES", "smem_bytes",
           "check_tile", "check_args", "check_offsets", "check_rows_stored_in_chunks", "tokens_major", "dim_major",
           "every_tile_sees_a_key", "check_overlap"]

HEAD_DIMS = (64, 128, 256)
# (keys per block, depth of the K and V rings) of a tile of 128 query rows by (head dimension, causal), measured on
# an H200 against the others in one run (benchmarks/RESULTS.md): 192 keys at d=64 and 80 at d=256 are faster without
# the mask, slower with it
TILES = {(64, False): (192, 3), (64, True): (128, 4), (128, False): (128, 2), (128, True): (128, 2),
         (256, False): (80, 2), (256, True): (64, 2)}
# (keys per block, ring depth, rows) of a tile of 192 query rows (three consumer warpgroups), which the default takes
# for sequences of more than ``rows`` rows: at d=64 on an H200 1.10-1.24x the 128-row tiles' TFLOP/s from 1k rows on
# without the mask and from 2k rows on with it, slower below on a CTA per tile; on a persistent grid without the mask
# 1.03-1.06x at 512 rows (benchmarks/RESULTS.md)
WIDE_TILES = {(64, False): (128, 4, 256), (64, True): (128, 4, 1024)}
# (keys per block, ring depth) a tile of 128 rows takes instead of ``TILES``' where the key length, known to the
# compile, leaves more than 1/16 of it as padding of ``TILES``' last key block and less of these: at d=256 without
# the mask on an H200 1.03x at 512 keys (80 a block pad 48), a tie at 1k (benchmarks/RESULTS.md)
SHORT_TILES = {(256, False): (64, 2)}
BLOCK_MS = (128, 192)              # query rows per tile: two or three consumer warpgroups of 64 rows
SMEM_BYTES = 227 * 1024            # a Hopper CTA's shared memory


def tokens_major(t, packed):
    """``t`` viewed as ``(tokens, D, heads, batch)`` (a packed tensor as one batch)."""
    if packed:
        tokens, heads, d = t.shape
        st, sh, sd = t.layout.stride
        shape, stride = (tokens, d, heads, 1), (st, sd, sh, st * tokens)   # a batch mode of 1 (any stride)
    else:
        b, tokens, heads, d = t.shape
        sb, st, sh, sd = t.layout.stride
        shape, stride = (tokens, d, heads, b), (st, sd, sh, sb)
    return cute.make_tensor(t.iterator, cute.make_layout(shape, stride=stride))


def dim_major(t):
    """A ``(tokens, D, heads, batch)`` view as ``(D, tokens, heads, batch)`` (V as the B operand of ``P V``)."""
    return cute.make_tensor(t.iterator, cute.select(t.layout, mode=[1, 0, 2, 3]))


def check_rows_stored_in_chunks(who, name, t):
    """``t``'s rows (one token of one head) are stored in 16-byte chunks: a 16-byte aligned pointer and token and
    head strides of whole 16-byte units."""
    unit = 128 // t.element_type.width
    # (a mode of one element never steps; a symbolic extent may be longer)
    strides = [s for s, e in zip(t.layout.stride[:-1], t.shape[:-1]) if type(e) is not int or e != 1]
    if t.iterator.alignment < 16 or any(type(s) is not int or s % unit for s in strides):
        raise cute.CuteValueError(f"{who}: {name}'s rows are stored in 16-byte chunks: its pointer must be 16-byte "
                                  f"aligned and its strides other than the head dimension's multiples of {unit}, got "
                                  f"the strides {t.layout.stride} and a {t.iterator.alignment}-byte aligned pointer")


def check_args(q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, causal, softmax_scale):
    who = "attention"
    packed = cu_seqlens_q is not None
    if (cu_seqlens_k is not None) != packed:
        raise cute.CuteValueError(f"{who}: cu_seqlens_q and cu_seqlens_k come together (a packed batch), got "
                                  f"{'cu_seqlens_q' if packed else 'cu_seqlens_k'} alone")
    rank = 3 if packed else 4
    for name, t in (("q", q), ("k", k), ("v", v), ("out", out)):
        if len(t.shape) != rank:
            form = "(total, heads, head_dim)" if packed else "(batch, seqlen, heads, head_dim)"
            raise cute.CuteValueError(f"{who}: {name} must be {form}, got the shape {tuple(t.shape)}")
        if t.layout.stride[-1] != 1:
            raise cute.CuteValueError(f"{who}: {name}'s head dimension must be contiguous, got the strides "
                                      f"{t.layout.stride}")
    dt = q.element_type
    if dt not in (cute.BFloat16, cute.Float16) or any(t.element_type is not dt for t in (k, v, out)):
        raise cute.CuteValueError(f"{who}: q, k, v and out are all BFloat16 or all Float16, got "
                                  f"{[t.element_type.name for t in (q, k, v, out)]}")
    d = q.shape[-1]
    if d not in HEAD_DIMS or k.shape[-1] != d or v.shape[-1] != d or out.shape[-1] != d:
        raise cute.CuteValueError(f"{who}: the head dimension is one of {HEAD_DIMS} for q, k, v and out alike, got "
                                  f"{[t.shape[-1] for t in (q, k, v, out)]}")
    if tuple(out.shape) != tuple(q.shape):
        raise cute.CuteValueError(f"{who}: out must have q's shape {tuple(q.shape)}, got {tuple(out.shape)}")
    if tuple(k.shape) != tuple(v.shape):
        raise cute.CuteValueError(f"{who}: k and v have one shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    for name, t in (("q", q), ("k", k)):
        if any(type(e) is int and e < 1 for e in t.shape[:-1]):
            raise cute.CuteValueError(f"{who}: {name} has an empty mode, the shape {tuple(t.shape)}: every extent must "
                                      f"be >= 1 (an empty batch has nothing to compute: make no call)")
    check_rows_stored_in_chunks(who, "out", out)
    heads, kv_heads = q.shape[-2], k.shape[-2]
    if type(heads) is not int or type(kv_heads) is not int or kv_heads < 1 or heads % kv_heads:
        raise cute.CuteValueError(f"{who}: the query heads ({heads}) must be a multiple of the key/value heads "
                                  f"({kv_heads})")
    if not packed and k.shape[0] != q.shape[0]:
        raise cute.CuteValueError(f"{who}: q and k have one batch size, got {q.shape[0]} and {k.shape[0]}")
    want = (heads, q.shape[0]) if packed else (q.shape[0], heads, q.shape[1])
    if lse.element_type is not cute.Float32 or tuple(lse.shape) != tuple(want):
        raise cute.CuteValueError(f"{who}: lse is Float32 of the shape {want}, got {lse.element_type.name} "
                                  f"{tuple(lse.shape)}")
    if packed:
        for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
            if t.element_type is not cute.Int32 or cute.rank(t.layout) != 1 or type(cute.size(t)) is not int \
                    or cute.size(t) < 2:
                raise cute.CuteValueError(f"{who}: {name} is a 1-D Int32 tensor of batch + 1 >= 2 offsets, got "
                                          f"{t.element_type.name} of the shape {t.shape}")
        if cute.size(cu_seqlens_q) != cute.size(cu_seqlens_k):
            raise cute.CuteValueError(f"{who}: cu_seqlens_q and cu_seqlens_k have one length (batch + 1), got "
                                      f"{cute.size(cu_seqlens_q)} and {cute.size(cu_seqlens_k)}")
        if type(max_seqlen_q) is not int or max_seqlen_q < 1:
            raise cute.CuteValueError(f"{who}: a packed batch needs max_seqlen_q, an int >= 1 bounding its query "
                                      f"lengths, got {max_seqlen_q!r}")
    if type(causal) is not bool:
        raise cute.CuteValueError(f"{who}: causal must be a bool, got {causal!r}")
    if softmax_scale is not None and (not isinstance(softmax_scale, numbers.Real) or isinstance(softmax_scale, bool)
                                      or not math.isfinite(softmax_scale) or softmax_scale <= 0):
        raise cute.CuteValueError(f"{who}: softmax_scale is None (1 / sqrt(head_dim)) or a finite number > 0, got "
                                  f"{softmax_scale!r}")


@cute.kernel
def check_offsets(cu_q, cu_k, total_q, total_k, covered):
    """A packed batch's offsets are read on the device, so a kernel of its own checks them before the attention
    kernel runs (thread 0 of CTA ``b`` for sequence ``b``): ``cu_seqlens_q/k`` must not decrease and must stay
    within the tensors, and ``max_seqlen_q`` must cover every sequence (the attention grid has a CTA per 128 of
    its rows, ``covered`` rows). A broken rule is printed with its values and the kernel traps, so the launch
    fails instead of leaving rows unwritten or writing outside ``out``. (Its own kernel: the ``printf`` is a call,
    and a call in the attention kernel would make the assembler serialise its WGMMAs.)"""
    batch, _, _ = arch.block_idx()
    tidx, _, _ = arch.thread_idx()
    if tidx == 0:
        q_start, k_start = cu_q[batch], cu_k[batch]
        seqlen_q, seqlen_k = cu_q[batch + 1] - q_start, cu_k[batch + 1] - k_start
        if (seqlen_q < 0 or seqlen_k < 0 or q_start < 0 or k_start < 0 or q_start + seqlen_q > total_q
                or k_start + seqlen_k > total_k or seqlen_q > covered):
            cute.printf("attention: sequence {} has query rows {}..{} of {} and keys {}..{} of {}: cu_seqlens_q and "
                        "cu_seqlens_k must increase and stay within q and k, and max_seqlen_q (the grid covers {} "
                        "rows) must be at least every sequence's length", batch, q_start, q_start + seqlen_q,
                        total_q, k_start, k_start + seqlen_k, total_k, covered)
            arch.trap()


def smem_bytes(d, block_n, stages, block_m=BLOCK_M):
    """The shared memory of the Q tile and the K and V rings (16-bit elements), with barriers and alignment."""
    return 2 * (block_m * d + 2 * stages * block_n * d) + 2048


def padding(keys, block_n):
    """The keys past ``keys`` that its last block of ``block_n`` covers."""
    return -keys % block_n


def check_tile(d, causal, block_n, stages, block_m=None, rows=0, keys=None):
    """The key block, ring depth and query rows of a tile, ``(block_n, stages, block_m)``: the caller's, checked,
    or by default 192 rows where ``WIDE_TILES`` has ``d`` and ``causal`` and sequences have more rows (``rows``)
    than it says, else 128, with the table's keys and depth for that many rows (``SHORT_TILES``' where the key
    length ``keys``, an int where the compile knows it, is padded as that table says)."""
    wide = WIDE_TILES.get((d, causal), (128, 2, None))
    if block_m is None:
        block_m = 192 if wide[2] is not None and rows > wide[2] else 128
    table = wide if block_m == 192 else TILES[d, causal]
    short = SHORT_TILES.get((d, causal))
    if block_m == 128 and block_n is None and short is not None and type(keys) is int and keys > 0:
        if 16 * padding(keys, table[0]) > keys and padding(keys, short[0]) < padding(keys, table[0]):
            table = short
    if block_n is None:
        block_n = table[0]
    if stages is None:
        stages = table[1]
    if type(block_n) is not int or block_n % 16 or not 16 <= block_n <= 256:
        raise cute.CuteValueError(f"attention: block_n (keys per block) is an int multiple of 16 from 16 to 256 (the "
                                  f"N of the S = Q K^T WGMMA, the K of P V in steps of 16), got {block_n!r}")
    if type(stages) is not int or stages < 1:
        raise cute.CuteValueError(f"attention: stages (the depth of the K and V rings) is an int >= 1, got "
                                  f"{stages!r}")
    if type(block_m) is not int or block_m not in BLOCK_MS:
        raise cute.CuteValueError(f"attention: block_m (query rows per tile) is 128 or 192 (two or three consumer "
                                  f"warpgroups of 64 rows), got {block_m!r}")
    if block_m == 192 and (d != 64 or block_n > 128):
        raise cute.CuteValueError(f"attention: block_m=192 gives each of three consumer warpgroups 160 registers a "
                                  f"thread, room for the accumulators of d=64 and at most 128 keys a block; got "
                                  f"d={d}, block_n={block_n}")
    smem = smem_bytes(d, block_n, stages, block_m)
    if smem > SMEM_BYTES:
        raise cute.CuteValueError(f"attention: the Q tile of {block_m} rows and {stages} stages of K and V tiles of "
                                  f"{block_n} keys at head dimension {d} take {smem} bytes of shared memory (with its "
                                  f"barriers and alignment), more than the {SMEM_BYTES} a CTA has: fewer stages or "
                                  f"keys per block")
    return block_n, stages, block_m


def every_tile_sees_a_key(seqlens, causal, block_m):
    """Whether every query block of sequences of the static lengths ``seqlens`` (query, key) sees a key: the first
    block's last row does (the causal diagonal at the bottom right), and so every later one. False for lengths
    known only at run time."""
    seqlen_q, seqlen_k = seqlens
    if type(seqlen_q) is not int or type(seqlen_k) is not int or seqlen_q < 1 or seqlen_k < 1:
        return False
    return not causal or block_m + seqlen_k - seqlen_q > 0


def check_overlap(overlap, persistent, packed, seqlens, causal, d, block_n, stages, block_m):
    """``attention``'s ``overlap`` as a bool: whether a persistent grid's Q has two buffers and each consumer
    warpgroup issues its next tile's first ``S`` before it stores a tile's output. The rule: a persistent grid with
    more tiles than CTAs (``persistent``: a CTA has a next tile to start; with one tile each the straight-line code
    ptxas is given needs more registers than it has, and it serialises the WGMMAs) of sequences of equal lengths
    known to the compile (not packed) whose every query block sees a key (a tile's last turn issues the next
    tile's first product without a branch), two consumer warpgroups (at 160 registers a thread three have no room
    for that product beside the output, and ptxas serialises their WGMMAs), and shared memory for two Q tiles and
    the output's beside the K and V rings. ``None`` is whether the rule holds; ``True`` where it
    does not is a ``CuteValueError`` naming the part that fails."""
    if overlap is not None and type(overlap) is not bool:
        raise cute.CuteValueError(f"attention: overlap is None (where the rule allows it), True or False, got "
                                  f"{overlap!r}")
    if overlap is False:
        return False
    smem = smem_bytes(d, block_n, stages, block_m) + 2 * block_m * d * 2
    if not persistent:
        broken = "a persistent grid with more tiles than CTAs"
    elif packed:
        broken = "sequences of lengths known to the compile (not a packed batch)"
    elif not every_tile_sees_a_key(seqlens, causal, block_m):
        broken = (f"every query block seeing a key (seqlen_q {seqlens[0]}, seqlen_k {seqlens[1]}, causal {causal}, "
                  f"{block_m} rows a block)")
    elif block_m != 128:
        broken = f"two consumer warpgroups (block_m 128, got {block_m})"
    elif smem > SMEM_BYTES:
        broken = (f"shared memory for two Q tiles and the output's beside the K and V rings ({smem} bytes of "
                  f"{SMEM_BYTES})")
    else:
        broken = None
    if overlap and broken:
        raise cute.CuteValueError(f"attention: overlap=True needs {broken}")
    return broken is None
