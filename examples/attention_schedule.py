"""The persistent schedule of the attention forward (``examples.attention``, ``persistent=True``): which
``(query block, head, batch)`` tile a CTA computes next.

A persistent grid has one CTA per SM (fewer where there are fewer tiles). The tiles of one order of all
``m_blocks x heads x batch`` are dealt in rounds of ``grid``: in round ``r`` CTA ``c`` takes tile ``r grid + c``,
but ``r grid + grid - 1 - c`` when ``r`` is odd and the round is whole (:func:`dealt`). The order walks the
``(batch, head)`` pairs in *sections* of ``section`` consecutive pairs (heads fastest, so a section's query heads
share few key/value heads under grouped-query attention): within a section the query blocks go from the last to the
first, the section's pairs fastest (:func:`tile_at`).

Without a causal mask the tiles are equal and a section takes the pairs whose keys and values together fit a
share of L2 (``L2_SHARE``), so the tiles at work at one time read the keys and values of few heads. With a causal
mask a tile's work grows with its query block, and the order is one section of every pair: the query blocks that
see the most keys go first, the lightest fill the end, and dealing each odd round backwards hands the CTA that took
a round's heaviest tile that round's next lightest. Sections there would make the weights a saw whose teeth a
CTA's index lands on the same way every time (at d=256 and 16k rows, one pair a section, CTA 0 of 132 carried 1.8
times its share); dealt in one direction only, the heaviest CTA still carries up to 1.13 times its share
(benchmarks/RESULTS.md has the model and the measurements). Where sequences are short (``CAUSAL_SECTIONS``) the
causal order takes sections all the same, and every odd section goes from its first query block to its last
(``alternate``): a pair's tiles then run close together, and the keys and values they share are read from memory
once, not once a tile. Their size (:func:`causal_section`) is the one, up to the L2 share's, whose deal loads the
CTAs most evenly (:func:`deal_load`): at 132 CTAs the heaviest carries 1.03 times its share.
"""

import functools

import cute_py as cute

from .tma_tiled import sm_count

__all__ = ["L2_SHARE", "CAUSAL_SECTIONS", "PERSISTENT", "section_pairs", "persistent_schedule", "tile_at", "dealt",
           "causal_section", "deal_load"]

L2_SHARE = 24 * 1024 * 1024     # bytes of keys and values a section may read (an H100 has 50 MB of L2, an H200 60)
# (head dimension, query rows a tile) whose causal schedule takes sections (odd ones lightest first, of the size
# ``causal_section`` chooses), up to this many query blocks a sequence. Measured (H200, bf16, 16k tokens, against one
# section of every pair, whose tiles read 1.7-2.6x the bytes of q, k, v and out from memory at 512-1k rows): d=128 at
# 512 / 1k / 2k rows about 1.22 / 1.18 / 1.13x (16, 8 and 4 pairs a section; two runs' ratios multiplied); d=64 at
# 512 / 1k 1.02x; at 4k-16k, sections of the L2 share with every one heaviest first 0.855-0.886x (the saw of
# weights), and of causal_section's size 0.97-0.98x (benchmarks/RESULTS.md).
CAUSAL_SECTIONS = {(128, 128): 16, (64, 128): 8}
BALANCE_ROUNDS = 64  # rounds of the deal that causal_section weighs
BALANCE_TILES = 1 << 16  # and at most this many tiles of it (a grid of many CTAs: the cost of a compile stays small)
# where ``persistent=None`` takes a persistent grid, by (head dimension, causal, query rows a tile): up to this many
# query blocks a sequence (None: any). Measured on an H200 against a CTA per tile (benchmarks/RESULTS.md): tiles of
# 128 rows faster at d=64 causal (by 14% at 512 rows, 3-7% at 2k-16k) and by 4% at 512 rows otherwise; at d=128,
# with each tile's output stored while the next tile's first product runs (``attention``'s ``overlap``), 1.03-1.22x
# without the mask up to 8k rows and as fast at 16k, 1.03-1.15x with it; d=256 0.82-0.91x at 512-2k. Tiles of 192
# rows (d=64): without the mask 4-13% faster up to 1k rows, as fast at 2k, 3-4% slower from 4k on; with it 1-7%
# faster at 2k and 4k, as fast at 8k-16k.
PERSISTENT = {(64, True, 128): None, (64, False, 128): 4, (128, False, 128): None, (128, True, 128): None,
              (64, False, 192): 6, (64, True, 192): 22}


def section_pairs(pairs, head_ratio, kv_bytes):
    """The ``(batch, head)`` pairs a section takes: as many query heads as there are in the key/value heads of
    ``kv_bytes`` bytes each (keys and values of one head of one sequence) that fit ``L2_SHARE``, whole groups of
    ``head_ratio`` query heads, at least one group and at most ``pairs``."""
    if pairs < 1 or head_ratio < 1 or kv_bytes < 1:
        raise cute.CuteValueError(f"attention: a schedule needs pairs >= 1, head_ratio >= 1 and kv_bytes >= 1, got "
                                  f"{pairs}, {head_ratio}, {kv_bytes}")
    return min(pairs, max(1, L2_SHARE // kv_bytes) * head_ratio)


@cute.jit
def tile_at(t, m_blocks, pairs, section, heads, alternate=False):
    """Tile ``t`` (``0 <= t < m_blocks * pairs``) of the order (see the module): ``(m_block, head, batch)``; with
    ``alternate`` (a constant) the odd sections walk their query blocks from the first to the last."""
    size = section * m_blocks                   # tiles of a whole section
    s = t // size
    within = t - s * size
    first = s * section
    width = cute.min(section, pairs - first)    # the last section may be narrower
    pair = first + within % width
    step = within // width
    m_block = m_blocks - 1 - step
    if cute.const_expr(alternate):
        m_block = cute.where(s % 2 == 1, step, m_block)
    return m_block, pair % heads, pair // heads


@cute.jit
def dealt(t, grid, tiles):
    """The index in the order of the tile a CTA takes at loop index ``t`` (CTA ``t % grid``'s tiles are
    ``t = cta, cta + grid, ...`` below ``tiles``): ``t`` itself, but in a whole odd round ``r`` (``r = t // grid``
    odd, ``(r + 1) grid <= tiles``) the round's tile counted from its other end, so that over all CTAs every tile
    is taken once and in the round of its loop index."""
    r = t // grid
    mirrored = t + grid - 1 - 2 * (t - r * grid)
    return cute.where(r % 2 == 1, cute.where(r < tiles // grid, mirrored, t), t)


def deal_load(m_blocks, pairs, section, grid, alternate, rounds=BALANCE_ROUNDS, most=None):
    """The key blocks the most loaded of ``grid`` CTAs takes over the mean, in the first ``rounds`` rounds of the
    deal (:func:`dealt`) of the order (:func:`tile_at`) at equal lengths (and its first ``most`` tiles, where given),
    where a tile weighs ``m_block + 1``; the same arithmetic as those two in plain integers, so that a host may weigh
    many orders."""
    tiles = m_blocks * pairs
    grid = min(grid, tiles)
    whole = tiles // grid
    size = section * m_blocks
    load = [0] * grid
    for t in range(min(tiles, rounds * grid, tiles if most is None else most)):
        r, c = divmod(t, grid)
        u = t + grid - 1 - 2 * c if r % 2 == 1 and r < whole else t
        s, within = divmod(u, size)
        step = within // min(section, pairs - s * section)
        load[c] += (step if alternate and s % 2 == 1 else m_blocks - 1 - step) + 1
    return max(load) * grid / sum(load)


@functools.lru_cache(maxsize=256)
def causal_section(m_blocks, pairs, head_ratio, kv_bytes, grid):
    """The pairs a section of a short causal schedule takes (odd sections lightest first): of whole groups of
    ``head_ratio`` query heads, powers of two of them up to the L2 share's (:func:`section_pairs`) and that share,
    the one whose deal over ``grid`` CTAs loads the most loaded CTA least (:func:`deal_load`, to 0.1%), the
    smaller on ties (its tiles run closer together). Every size is correct; the choice weighs at most
    ``BALANCE_TILES`` tiles of each deal."""
    most = section_pairs(pairs, head_ratio, kv_bytes)
    sizes = {most}
    size = head_ratio
    while size < most:
        sizes.add(size)
        size *= 2
    return min(sizes, key=lambda n: (round(deal_load(m_blocks, pairs, n, grid, True, most=BALANCE_TILES), 3), n))


def persistent_schedule(persistent, heavy_first, m_blocks, heads, batch, head_ratio, kv_bytes, d, causal, block_m,
                        packed):
    """``attention``'s ``persistent`` as the kernel's schedule ``(m_blocks, pairs, section, heads, ctas,
    alternate)`` and its grid, or ``None`` (``persistent=False``: a CTA per tile). ``True`` takes a CTA per SM of
    the device (``tma_tiled.sm_count``), a positive int that many CTAs; never more than there are tiles. ``None``
    is ``True`` where ``PERSISTENT`` says so for ``(d, causal, block_m)`` and ``m_blocks`` query blocks, for the
    batches the table was measured on (equal lengths: not ``packed``) and without ``heavy_first``; else ``False``.
    ``alternate``: a short causal sequence's order, in sections of :func:`causal_section`'s size whose odd ones go
    lightest first (``CAUSAL_SECTIONS``; see the module)."""
    if persistent is None:
        limit = PERSISTENT.get((d, causal, block_m), 0)
        persistent = not heavy_first and not packed and (limit is None or m_blocks <= limit)
    if persistent is False:
        return None
    if persistent is True:
        ctas = sm_count()
    elif type(persistent) is int and 1 <= persistent < 2 ** 31:
        ctas = persistent
    else:
        raise cute.CuteValueError(f"attention: persistent is a bool or a number of CTAs from 1 to 2**31 - 1, got "
                                  f"{persistent!r}")
    if heavy_first:
        raise cute.CuteValueError("attention: heavy_first orders a grid of a CTA per tile; a persistent grid has an "
                                  "order of its own (examples.attention_schedule): ask for one of them")
    pairs = heads * batch
    if m_blocks * pairs >= 2 ** 31:
        raise cute.CuteValueError(f"attention: a persistent schedule numbers its tiles in Int32, got {m_blocks} "
                                  f"query blocks x {pairs} (batch, head) pairs")
    short = causal and m_blocks <= CAUSAL_SECTIONS.get((d, block_m), 0)
    grid = min(ctas, m_blocks * pairs)
    if short:
        section = causal_section(m_blocks, pairs, head_ratio, max(1, kv_bytes), grid)
    else:
        section = pairs if causal else section_pairs(pairs, head_ratio, max(1, kv_bytes))
    return (m_blocks, pairs, section, heads, grid, short), (grid, 1, 1)
