"""CPU (numpy) execution of the warp-level tensor-core instructions, with the PTX ISA's semantics.

A warp instruction is executed for all 32 lanes at once; operands are per-lane arrays ``(32, V)``
(lane, value), the values of a lane in the order of its registers (the first element in a register's
low half first).  The lane/element maps below are written from the PTX ISA's fragment descriptions
(``groupID = lane / 4``, ``threadID_in_group = lane % 4``), independently of the CuTe layouts of
:mod:`cute_py.nvgpu.warp`; the tests check that both agree.

- :func:`mma_sync`: ``mma.sync.aligned.m16n8k{8,16}.row.col``: ``D = A * B + C``, products and sums in
  float32 (Float16 accumulators are rounded to float16 at the end);
- :func:`ldmatrix`: ``ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16`` from a flat shared-memory
  array of 16-bit elements, given each lane's row address (in elements);
- :func:`stmatrix`: the reverse;
- :func:`run_tiled_mma`: a whole tiled MMA on one tile, every thread's fragments built by its
  ``partition_A/B/C``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .errors import CuteValueError

if TYPE_CHECKING:
    from .mma import TiledMma
    from .nvgpu.warp import LdMatrix8x8x16bOp, MmaF16BF16Op, StMatrix8x8x16bOp

__all__ = ["mma_a_coord", "mma_b_coord", "mma_c_coord", "mma_sync", "ldmatrix", "stmatrix", "run_tiled_mma"]


def mma_a_coord(k: int, lane: int, i: int) -> tuple[int, int]:
    """(row m, column k) of A element ``a_i`` of ``lane`` in ``m16n8k{k}`` (PTX ISA)."""
    g, t = lane // 4, lane % 4
    row = g + 8 * ((i >> 1) & 1)
    col = 2 * t + (i & 1) + (8 * (i >> 2) if k == 16 else 0)
    return row, col


def mma_b_coord(k: int, lane: int, i: int) -> tuple[int, int]:
    """(row k, column n) of B element ``b_i`` of ``lane`` in ``m16n8k{k}`` (PTX ISA)."""
    g, t = lane // 4, lane % 4
    return 2 * t + (i & 1) + 8 * (i >> 1), g


def mma_c_coord(lane: int, i: int) -> tuple[int, int]:
    """(row m, column n) of accumulator ``c_i`` / ``d_i`` of ``lane`` in ``m16n8k*`` (PTX ISA)."""
    g, t = lane // 4, lane % 4
    return g + 8 * (i >> 1), 2 * t + (i & 1)


def _need(a, shape, what):
    a = np.asarray(a)
    if a.shape != shape:
        raise CuteValueError(f"{what} must have the shape {shape} (lane, value), got {a.shape}")
    return a


def mma_sync(op: MmaF16BF16Op, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per-lane ``D`` of one ``mma.sync`` of ``op`` given per-lane ``a`` ``(32, K/2)``, ``b`` ``(32, K/4)``,
    ``c`` ``(32, 4)``."""
    m, n, k = op.shape_mnk
    a = _need(a, (32, k // 2), "a").astype(np.float32)
    b = _need(b, (32, k // 4), "b").astype(np.float32)
    c = _need(c, (32, 4), "c").astype(np.float32)
    A, B, C = np.zeros((m, k), np.float32), np.zeros((k, n), np.float32), np.zeros((m, n), np.float32)
    for lane in range(32):
        for i in range(k // 2):
            A[mma_a_coord(k, lane, i)] = a[lane, i]
        for i in range(k // 4):
            B[mma_b_coord(k, lane, i)] = b[lane, i]
        for i in range(4):
            C[mma_c_coord(lane, i)] = c[lane, i]
    D = (A.astype(np.float64) @ B.astype(np.float64) + C).astype(np.float32)
    if op.acc_dtype.name == "Float16":
        D = D.astype(np.float16).astype(np.float32)
    return np.array([[D[mma_c_coord(lane, i)] for i in range(4)] for lane in range(32)], np.float32)


def _rows(op, row_addr):
    row_addr = np.asarray(row_addr)
    if row_addr.shape != (32,):
        raise CuteValueError(f"row addresses are one per lane (32), got the shape {row_addr.shape}")
    # matrix j, row r is addressed by lane 8 j + r (the lanes beyond 8 * num_matrices are ignored)
    return [[int(row_addr[8 * j + r]) for r in range(8)] for j in range(op.num_matrices)]


def ldmatrix(op: LdMatrix8x8x16bOp, smem: np.ndarray, row_addr: np.ndarray) -> np.ndarray:
    """Per-lane values ``(32, 2 * num_matrices)`` of one ``ldmatrix``: ``smem`` a flat array of 16-bit elements,
    ``row_addr[lane]`` the element offset of the 8-element row that lane addresses."""
    rows = _rows(op, row_addr)
    out = np.zeros((32, 2 * op.num_matrices), smem.dtype)
    for j, addrs in enumerate(rows):
        mat = np.stack([smem[a:a + 8] for a in addrs])  # (row, col)
        if op.transpose:
            mat = mat.T
        for lane in range(32):
            out[lane, 2 * j:2 * j + 2] = mat[lane // 4, 2 * (lane % 4):2 * (lane % 4) + 2]
    return out


def stmatrix(op: StMatrix8x8x16bOp, smem: np.ndarray, row_addr: np.ndarray, values: np.ndarray) -> None:
    """One ``stmatrix``: lane values ``(32, 2 * num_matrices)`` into the rows of ``smem`` that the lanes address."""
    rows = _rows(op, row_addr)
    values = _need(values, (32, 2 * op.num_matrices), "values")
    for j, addrs in enumerate(rows):
        mat = np.zeros((8, 8), smem.dtype)
        for lane in range(32):
            mat[lane // 4, 2 * (lane % 4):2 * (lane % 4) + 2] = values[lane, 2 * j:2 * j + 2]
        if op.transpose:
            mat = mat.T
        for r, a in enumerate(addrs):
            smem[a:a + 8] = mat[r]


def _gather(t):
    """The values of a host tensor in its flat order."""
    from .core.products import product

    return np.array([t[i] for i in range(product(t.layout.shape))])


class _flat_index:
    """Element ``coord`` of a partition of a flat host array: its engine's offset plus its layout's index."""

    def __init__(self, t):
        self.offset, self.layout = t.engine.offset, t.layout

    def __call__(self, coord):
        return self.offset + self.layout(coord)


def run_tiled_mma(tiled_mma: TiledMma, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``D`` of one tile of ``tiled_mma`` (an op of :func:`mma_sync`): ``A`` ``(M, K)``, ``B`` ``(N, K)``, ``C``
    ``(M, N)``, each thread's fragments taken by ``partition_A/B/C`` of a column-major view of the tile, each
    instruction executed over the lanes of its warp, ``D`` written back through ``partition_C``."""
    from .core.layout import Layout
    from .core.products import product
    from .tensor.tensor import Tensor
    from .tensor.engines import ArrayEngine

    M, K = A.shape
    N = B.shape[0]
    if B.shape[1] != K or C.shape != (M, N):
        raise CuteValueError(f"run_tiled_mma: A {A.shape}, B {B.shape}, C {C.shape} are not (M,K), (N,K), (M,N)")
    op = tiled_mma.op
    fa, fb, fc = (np.asarray(x, np.float32).reshape(-1, order="F").copy() for x in (A, B, C))
    D = np.zeros(M * N, np.float32)
    views = []
    for t in range(tiled_mma.size):
        s = tiled_mma.get_slice(t)
        views.append(tuple(_flat_index(s_part) for s_part in (
            s.partition_A(Tensor(ArrayEngine(fa), Layout((M, K)))),
            s.partition_B(Tensor(ArrayEngine(fb), Layout((N, K)))),
            s.partition_C(Tensor(ArrayEngine(fc), Layout((M, N)))))))
    la, lb, lc = (v.layout for v in views[0])
    shp = lambda lay, i: product(lay.shape[i])  # noqa: E731
    mm, nn, kk = shp(lc, 1), shp(lc, 2), shp(la, 2)
    va, vb, vc = shp(la, 0), shp(lb, 0), shp(lc, 0)
    acc = {t: {} for t in range(tiled_mma.size)}
    for k in range(kk):
        for m in range(mm):
            for n in range(nn):
                for w in range(tiled_mma.size // 32):
                    lanes = range(32 * w, 32 * w + 32)
                    a = np.array([[fa[views[t][0]((v, m, k))] for v in range(va)] for t in lanes])
                    b = np.array([[fb[views[t][1]((v, n, k))] for v in range(vb)] for t in lanes])
                    c = np.array([[acc[t].get((v, m, n), fc[views[t][2]((v, m, n))]) for v in range(vc)]
                                  for t in lanes])
                    d = mma_sync(op, a, b, c)
                    for j, t in enumerate(lanes):
                        for v in range(vc):
                            acc[t][(v, m, n)] = d[j, v]
    for t in range(tiled_mma.size):
        for (v, m, n), x in acc[t].items():
            D[views[t][2]((v, m, n))] = x
    return D.reshape((M, N), order="F")
