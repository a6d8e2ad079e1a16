"""Which query blocks a CTA of the attention backward (``examples.attention_backward``) visits, and which of them
it masks: a CTA takes ``BLOCK_N`` keys of one KV head and steps over blocks of ``BLOCK_M`` queries. Plain
functions of ints on the host, or of traced values in the kernel (``tests/jit/test_attention_blocks.py`` checks
them row by row against what each query row sees)."""

import cute_py as cute

__all__ = ["BLOCK_N", "BLOCK_M", "query_blocks", "masked_blocks"]

BLOCK_N = 128          # keys per CTA, 64 per consumer warpgroup
BLOCK_M = 64           # queries per step


def query_blocks(n_block, seqlen_q, seqlen_k, causal):
    """``(m_blocks, m_start, m_count)``: the query blocks of ``BLOCK_M`` rows, and those the CTA of key block
    ``n_block`` visits for each query head, ``m_start .. m_blocks - 1`` (causal: the blocks before ``m_start`` see
    none of its keys). Ints on the host, or traced values in a kernel."""
    diag = seqlen_k - seqlen_q                  # key j is visible from query i when j <= i + diag (causal)
    m_blocks = (seqlen_q + BLOCK_M - 1) // BLOCK_M
    m_start = 0
    if causal:
        m_start = cute.min(m_blocks, cute.max(0, n_block * BLOCK_N - diag) // BLOCK_M)
    return m_blocks, m_start, m_blocks - m_start


def masked_blocks(n_block, m_start, m_count, seqlen_q, seqlen_k, causal):
    """How many of the visited query blocks (from ``m_start`` on, :func:`query_blocks`) need the mask, all of them
    first: every one where the key block reaches past the keys, else (causal) those whose first row does not see
    the whole key block. The others see every key of the block from every row in the queries (rows past the
    queries need no mask: their ``lse * log2(e)`` is +inf, so their P is 0)."""
    first_k = n_block * BLOCK_N
    masked = 0
    if causal:
        past = cute.max(0, first_k + BLOCK_N - 1 - (seqlen_k - seqlen_q))   # the first row that sees the whole block
        masked = cute.min(m_count, cute.max(0, (past + BLOCK_M - 1) // BLOCK_M - m_start))
    return cute.where(first_k + BLOCK_N > seqlen_k, m_count, masked)
