"""The persistent schedule of the attention forward (``examples.attention``, ``persistent=True``): which
``(query block, head, batch)`` tile a CTA computes next.

A persistent grid has one CTA per SM (fewer where there are fewer tiles); CTA ``c`` computes the tiles ``c``,
``c + grid``, ``c + 2 grid``, ... of one order of all ``m_blocks x heads x batch`` tiles. The order walks the
``(batch, head)`` pairs in *sections* of ``section`` consecutive pairs (heads fastest, so a section's query heads
share few key/value heads under grouped-query attention), whose keys and values together fit a share of L2
(``L2_SHARE``): within a section the query blocks go from the last to the first, the section's pairs fastest.
The tiles at work at one time then read the keys and values of few heads, which stay in L2, and with a causal
mask the query blocks that see the most keys start first, while the lightest fill the end of the section.

Every ``grid``-th tile of that order is not an equal share under a causal mask: where the query blocks of a
section wrap about every ``grid`` tiles, a CTA's index fixes how heavy all its tiles are (at d=256 and 16k rows,
CTA 0 of 132 gets 1.8 times its share), which is why ``PERSISTENT`` leaves long causal rows to a CTA per tile
(benchmarks/RESULTS.md has the model and the measurements).
"""

import cute_py as cute

from .tma_tiled import sm_count

__all__ = ["L2_SHARE", "PERSISTENT", "section_pairs", "persistent_schedule", "tile_at"]

L2_SHARE = 24 * 1024 * 1024     # bytes of keys and values a section may read (an H100 has 50 MB of L2, an H200 60)
# where ``persistent=None`` takes a persistent grid, by (head dimension, causal): up to this many query blocks a
# sequence (None: any). Measured on an H200 against a CTA per tile in two runs (benchmarks/RESULTS.md): faster there
# (d=64 causal by 14% at 512 rows, 7% at 2k, 1-3% at 8k and 16k; 4% at 512 rows otherwise), slower at longer rows
# (the hardware's dispatch of a CTA per tile balances a causal mask better than this static order: module docstring)
PERSISTENT = {(64, True): None, (64, False): 4, (128, False): 4, (128, True): 4}


def section_pairs(pairs, head_ratio, kv_bytes):
    """The ``(batch, head)`` pairs a section takes: as many query heads as there are in the key/value heads of
    ``kv_bytes`` bytes each (keys and values of one head of one sequence) that fit ``L2_SHARE``, whole groups of
    ``head_ratio`` query heads, at least one group and at most ``pairs``."""
    if pairs < 1 or head_ratio < 1 or kv_bytes < 1:
        raise cute.CuteValueError(f"attention: a schedule needs pairs >= 1, head_ratio >= 1 and kv_bytes >= 1, got "
                                  f"{pairs}, {head_ratio}, {kv_bytes}")
    return min(pairs, max(1, L2_SHARE // kv_bytes) * head_ratio)


@cute.jit
def tile_at(t, m_blocks, pairs, section, heads):
    """Tile ``t`` (``0 <= t < m_blocks * pairs``) of the order (see the module): ``(m_block, head, batch)``."""
    size = section * m_blocks                   # tiles of a whole section
    s = t // size
    within = t - s * size
    first = s * section
    width = cute.min(section, pairs - first)    # the last section may be narrower
    pair = first + within % width
    m_block = m_blocks - 1 - within // width
    return m_block, pair % heads, pair // heads


def persistent_schedule(persistent, heavy_first, m_blocks, heads, batch, head_ratio, kv_bytes, d, causal, packed):
    """``attention``'s ``persistent`` as the kernel's schedule ``(m_blocks, pairs, section, heads, ctas)`` and its
    grid, or ``None`` (``persistent=False``: a CTA per tile). ``True`` takes a CTA per SM of the device
    (``tma_tiled.sm_count``), a positive int that many CTAs; never more than there are tiles. ``None`` is ``True``
    where ``PERSISTENT`` says so for ``(d, causal)`` and ``m_blocks`` query blocks, for a batch of equal lengths
    (the table was measured on those: not ``packed``) and without ``heavy_first``; else ``False``."""
    if persistent is None:
        limit = PERSISTENT.get((d, causal), 0)
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
    section = section_pairs(pairs, head_ratio, max(1, kv_bytes))
    grid = min(ctas, m_blocks * pairs)
    return (m_blocks, pairs, section, heads, grid), (grid, 1, 1)
