"""Triton's matmul, the anchor of ``bench_gemm.py``: ``C = A @ B^T`` with A (M, K) and B (N, K) row-major,
fp32 accumulation, C in A's type or fp32, tiles grouped along M for L2 reuse, the configuration picked by
Triton's autotuner per shape (every configuration is a Hopper-sized tile that Triton lowers to WGMMA)."""

import triton
import triton.language as tl


def _configs():
    out = []
    for bm, bn, bk, stages, warps in ((128, 256, 64, 3, 8), (128, 256, 64, 4, 8), (256, 128, 64, 3, 8),
                                      (128, 128, 64, 4, 4), (128, 128, 64, 5, 8), (64, 256, 64, 4, 4),
                                      (128, 64, 64, 4, 4), (64, 128, 64, 5, 4)):
        out.append(triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8}, num_stages=stages,
                                 num_warps=warps))
    return out


@triton.autotune(configs=_configs(), key=["M", "N", "K"])
@triton.jit
def _matmul_abt(a_ptr, b_ptr, c_ptr, M, N, K, lda, ldb, ldc, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP_M * tiles_n
    group = pid // per_group
    first_m = group * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    tm = first_m + (pid % per_group) % rows_in_group
    tn = (pid % per_group) // rows_in_group
    rm = tm * BM + tl.arange(0, BM)
    rn = tn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_rows = a_ptr + rm[:, None] * lda
    b_rows = b_ptr + rn[None, :] * ldb
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_rows + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_rows + kk[:, None], mask=(rn[None, :] < N) & (kk[:, None] < K), other=0.0)
        acc = tl.dot(a, b, acc)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * ldc + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul_abt(a, b, c):
    """``c = a @ b.T`` (a: (M, K), b: (N, K), c: (M, N); unit column strides)."""
    m, k = a.shape
    n = b.shape[0]

    def grid(meta):
        return (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)

    _matmul_abt[grid](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0))
    return c
