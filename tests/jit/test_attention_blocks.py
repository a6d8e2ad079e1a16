"""Which blocks attention visits and which it masks, against a row-by-row account of what each query row sees.

- The backward (``examples.attention_backward_blocks``: ``query_blocks``, ``masked_blocks``): a query block a CTA
  skips sees none of its keys, one taken without the mask sees all of them from every row in the queries, and the
  masked blocks (a prefix of the visited ones) are exactly those that need the mask.
- The forward (``examples.attention_consumer.kv_blocks`` and ``unmasked_blocks``): a key block a query tile skips
  is seen by none of its rows, and one taken without the mask is whole and seen whole by every row in the queries;
  a tile has key blocks exactly when one of its rows sees a key, each warpgroup's own (``own_blocks``, the others
  it skips) run up to the last one a row of its own sees, and ``attention_args.every_tile_sees_a_key`` (the
  overlap's rule) holds exactly when every tile has; where ``halves_diagonal`` holds, the first warpgroup's rows
  see nothing past the first half of a tile's last key block (its first product computes that half alone).

A block taken without the mask where one is needed, or skipped where a row sees it, would give wrong results with
no error, so the rules are checked over every length of a grid around the block sizes and over arbitrary ones."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from examples.attention_consumer import halves_diagonal, kv_blocks as _kv_blocks, own_blocks as _own_blocks
from examples.attention_consumer import unmasked_blocks as _unmasked_blocks
from examples.attention_backward_blocks import BLOCK_M, BLOCK_N, masked_blocks, query_blocks
from examples.attention_args import every_tile_sees_a_key

LENGTHS = (1, 2, 63, 64, 65, 127, 128, 129, 191, 192, 193, 255, 256, 257, 300, 517, 1000)


def _check(seqlen_q, seqlen_k, causal):
    diag = seqlen_k - seqlen_q            # key j is visible from query i when j <= i + diag (causal)
    for n_block in range(-(-seqlen_k // BLOCK_N)):
        first_k = n_block * BLOCK_N
        keys = range(first_k, min(first_k + BLOCK_N, seqlen_k))       # the block's keys in the sequence
        m_blocks, m_start, m_count = query_blocks(n_block, seqlen_q, seqlen_k, causal)
        masked = masked_blocks(n_block, m_start, m_count, seqlen_q, seqlen_k, causal)
        where = f"seqlen_q={seqlen_q} seqlen_k={seqlen_k} causal={causal} key block {n_block}"
        assert m_blocks == -(-seqlen_q // BLOCK_M) and 0 <= m_start <= m_blocks, where
        assert m_count == m_blocks - m_start and 0 <= masked <= m_count, where
        for m in range(m_blocks):
            rows = range(m * BLOCK_M, min((m + 1) * BLOCK_M, seqlen_q))   # the block's rows in the queries
            sees = [[not causal or j <= i + diag for j in keys] for i in rows]
            # the tile reaches past the keys, or some row does not see every key of it
            needs_mask = first_k + BLOCK_N > seqlen_k or not all(all(s) for s in sees)
            if m < m_start:
                assert not any(any(s) for s in sees), f"{where}: query block {m} is skipped but sees a key"
            elif m < m_start + masked:
                assert needs_mask, f"{where}: query block {m} is masked but needs no mask"
            else:
                assert not needs_mask, f"{where}: query block {m} is taken without the mask but needs it"


@pytest.mark.parametrize("causal", [False, True])
def test_every_length_around_the_blocks(causal):
    for seqlen_q, seqlen_k in itertools.product(LENGTHS, LENGTHS):
        _check(seqlen_q, seqlen_k, causal)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 1500), st.integers(1, 1500), st.booleans())
def test_arbitrary_lengths(seqlen_q, seqlen_k, causal):
    _check(seqlen_q, seqlen_k, causal)


def _check_forward(seqlen_q, seqlen_k, causal, block_m, block_n):
    diag = seqlen_k - seqlen_q
    some_key = []           # whether each query block has a row that sees a key
    for m_block in range(-(-seqlen_q // block_m)):
        rows = range(m_block * block_m, min((m_block + 1) * block_m, seqlen_q))
        n = _kv_blocks(m_block, seqlen_q, seqlen_k, block_n, causal, block_m)
        whole = _unmasked_blocks(m_block * block_m, seqlen_q, seqlen_k, block_n, causal, n)
        where = f"seqlen_q={seqlen_q} seqlen_k={seqlen_k} causal={causal} tile {block_m}x{block_n} block {m_block}"
        assert 0 <= whole <= n, where
        some_key.append(any(not causal or i + diag >= 0 for i in rows))
        assert (n > 0) == some_key[-1], f"{where}: {n} key blocks"
        for j in range(-(-seqlen_k // block_n)):
            first, last = j * block_n, min((j + 1) * block_n, seqlen_k) - 1     # the block's keys in the sequence
            seen = [(last if not causal else min(last, i + diag)) - first + 1 for i in rows]    # keys row i sees
            if j >= n:
                assert all(c <= 0 for c in seen), f"{where}: key block {j} is skipped but a row sees it"
            elif j < whole:
                assert (j + 1) * block_n <= seqlen_k and all(c == block_n for c in seen), \
                    f"{where}: key block {j} is taken without the mask but is not seen whole"
            if j == n - 1 and halves_diagonal(causal, False, (seqlen_q, seqlen_k), block_m, block_n, 64):
                # the first warpgroup's rows in the queries see nothing of the first block's second half
                assert all(c <= block_n // 2 for c in seen[:64]), f"{where}: warpgroup 0 sees past the half"
        for g in range(block_m // 64):
            # a warpgroup's own blocks (the rest it skips): exactly the prefix up to the last block one of its rows
            # in the queries sees
            row0 = m_block * block_m + 64 * g
            own = _own_blocks(n, row0, seqlen_q, seqlen_k, block_n, causal)
            wg_rows = range(row0, min(row0 + 64, seqlen_q))
            seen_by = [j for j in range(n) if any(not causal or i + diag >= j * block_n for i in wg_rows)]
            assert own == (max(seen_by) + 1 if seen_by else 0), f"{where}: warpgroup {g} takes {own} blocks"
            # the blocks it takes without the mask are whole and seen whole by each of its rows in the queries
            for j in range(_unmasked_blocks(row0, seqlen_q, seqlen_k, block_n, causal, own)):
                assert (j + 1) * block_n <= seqlen_k and all(not causal or i + diag >= (j + 1) * block_n - 1
                                                             for i in wg_rows), f"{where}: warpgroup {g} block {j}"
    # the overlap of a persistent grid's tiles issues every tile's first product unconditionally
    assert every_tile_sees_a_key((seqlen_q, seqlen_k), causal, block_m) == all(some_key), (seqlen_q, seqlen_k)


TILES = ((128, 128), (128, 80), (128, 176), (192, 128), (128, 64))
FORWARD_LENGTHS = (1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 300, 517)


def test_the_first_warpgroup_takes_half_a_diagonal_block_only_where_lengths_are_known_and_aligned():
    import cute_py as cute

    assert halves_diagonal(True, False, (1024, 1024), 128, 128, 64)
    assert halves_diagonal(True, False, (1000, 1128), 128, 128, 64)
    assert halves_diagonal(True, False, (517, 261), 128, 128, 64)     # seqlen_k - seqlen_q = -256: a multiple of 128
    for causal, packed, seqlens, block_m, block_n, d in [
            (False, False, (1024, 1024), 128, 128, 64), (True, True, (0, 0), 128, 128, 64),
            (True, False, (1024, 1000), 128, 128, 64), (True, False, (cute.sym_int(), 1024), 128, 128, 64),
            (True, False, (1024, 1024.0), 128, 128, 64), (True, False, (1024, 1024), 192, 128, 64),
            (True, False, (1024, 1024), 128, 64, 64), (1, False, (1024, 1024), 128, 128, 64),
            (True, False, (1024, 1024), 128, 128, 128)]:     # (measured slower at d=128)
        assert not halves_diagonal(causal, packed, seqlens, block_m, block_n, d), (causal, seqlens, block_m, block_n, d)


def test_the_half_products_values_are_the_first_half_of_the_whole_products():
    # attention_consumer._first_softmax copies value v of the 64-key product into value v of the 128-key one: for
    # every consumer thread, the first half of its values of S lie at the same (row, key) in both, the rest past key 63
    import cute_py as cute
    from cute_py.nvgpu import warpgroup as wg
    from cute_py.utils import hopper_helpers as hh

    def coords(n, t):
        mma = hh.make_trivial_tiled_mma(cute.BFloat16, cute.BFloat16, wg.OperandMajorMode.K, wg.OperandMajorMode.K,
                                        cute.Float32, (2, 1, 1), (64, n))
        c = mma.get_slice(t).partition_C(cute.make_identity_tensor((128, n)))
        return [tuple(c[v]) for v in range(cute.size(c))]

    for t in range(256):
        whole, half = coords(128, t), coords(64, t)
        assert len(half) == 32 and whole[:32] == half and all(col >= 64 for _, col in whole[32:]), t


@pytest.mark.parametrize("causal", [False, True])
def test_forward_every_length_around_the_blocks(causal):
    for (block_m, block_n), seqlen_q, seqlen_k in itertools.product(TILES, FORWARD_LENGTHS, FORWARD_LENGTHS):
        _check_forward(seqlen_q, seqlen_k, causal, block_m, block_n)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 1200), st.integers(1, 1200), st.booleans(), st.sampled_from(TILES))
def test_forward_arbitrary_lengths(seqlen_q, seqlen_k, causal, tile):
    _check_forward(seqlen_q, seqlen_k, causal, *tile)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([64, 128, 256]), st.booleans(), st.sampled_from([128, 192]), st.integers(1, 400),
       st.integers(1, 64), st.integers(1, 8), st.booleans(), st.booleans(),
       st.one_of(st.none(), st.booleans(), st.integers(-3, 3000), st.sampled_from([2 ** 31 - 1, 2 ** 31, 2 ** 40]),
                 st.integers(1, 8).map(np.int64)))
def test_the_persistent_schedule_follows_its_table_and_never_exceeds_the_tiles(d, causal, block_m, m_blocks, heads,
                                                                              batch, packed, heavy, persistent):
    """``persistent_schedule``: ``None`` is persistent exactly where ``PERSISTENT`` names ``(d, causal, block_m)``
    with a limit of at least ``m_blocks`` (or none), for batches of equal lengths without ``heavy_first``; a grid
    never has more CTAs than tiles; numbers other than ints of 1..2**31-1 (a numpy int too) and ``heavy_first`` with
    a persistent grid are refused with the rule."""
    import cute_py as cute
    from examples.attention_schedule import PERSISTENT, persistent_schedule
    from examples.tma_tiled import sm_count

    tiles = m_blocks * heads * batch

    def call():
        return persistent_schedule(persistent, heavy, m_blocks, heads, batch, 1, 1 << 20, d, causal, block_m, packed)

    if persistent is None:
        limit = PERSISTENT.get((d, causal, block_m), 0)
        wanted = not heavy and not packed and (limit is None or m_blocks <= limit)
        got = call()
        assert (got is not None) == wanted
        ctas = sm_count()
    elif persistent is False:
        assert call() is None
        return
    elif persistent is not True and (type(persistent) is not int or not 1 <= persistent < 2 ** 31):
        with pytest.raises(cute.CuteValueError, match="a bool or a number of CTAs"):
            call()
        return
    elif heavy:
        with pytest.raises(cute.CuteValueError, match="heavy_first orders a grid of a CTA per tile"):
            call()
        return
    else:
        got = call()
        ctas = sm_count() if persistent is True else persistent
    if got is not None:
        from examples.attention_schedule import CAUSAL_SECTIONS, causal_section, section_pairs

        (mb, prs, section, hs, grid, alternate), launch = got
        assert (mb, prs, hs) == (m_blocks, heads * batch, heads)
        assert grid == min(ctas, tiles) and launch == (grid, 1, 1)
        assert 1 <= section <= prs
        # short causal sequences: sections of causal_section's size, odd ones lightest first; else the L2 share's
        # without the mask and one section with it
        assert alternate is (causal and m_blocks <= CAUSAL_SECTIONS.get((d, block_m), 0))
        if alternate:
            assert section == causal_section(m_blocks, prs, 1, 1 << 20, grid) <= section_pairs(prs, 1, 1 << 20)
        else:
            assert section == (prs if causal else section_pairs(prs, 1, 1 << 20))


def test_lengths_unknown_to_the_compile_or_empty_are_never_taken_to_give_every_tile_a_key():
    import cute_py as cute

    for seqlens in [(cute.sym_int(), 5), (5, cute.sym_int()), (0, 5), (5, 0), (5.0, 5), (None, 5), (True, 5)]:
        assert every_tile_sees_a_key(seqlens, False, 128) is False, seqlens
    assert every_tile_sees_a_key((5, 5), False, 128) and every_tile_sees_a_key((1000, 873), True, 128)
    assert not every_tile_sees_a_key((1000, 872), True, 128)
