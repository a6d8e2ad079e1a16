"""The attention backward's steps (``examples.attention_backward.query_blocks`` and ``masked_blocks``) against a
row-by-row account of what each query row of each block sees of a CTA's keys: a skipped block sees none of them,
a block taken without the mask sees all of them from every row in the queries, and the masked blocks (a prefix of
the visited ones) are exactly those that need the mask. A step taken without the mask where one is needed would
give wrong gradients with no error, so the rule is checked over every length of a grid around the block sizes
and over arbitrary ones."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from examples.attention_backward import BLOCK_M, BLOCK_N, masked_blocks, query_blocks

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
