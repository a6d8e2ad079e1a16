"""Warp-level MMA atoms, tiled MMAs and ldmatrix/stmatrix on the CPU.

Golden values: the TV layouts are CuTe C++'s (``mma_traits_sm80.hpp``, ``copy_traits_sm75.hpp``,
``copy_traits_sm90.hpp``), copied here as literals; the lane/element maps of the reference come from the PTX
ISA's fragment tables; the partitions' expected elements are derived by hand from ``ThrMMA::partition_A/C``
(logical_divide by the permutation, zipped_divide by the atom, the atom's TV layout, then the thread grid).
"""

import numpy as np
import pytest

import cute_py as cute
from cute_py import BFloat16, Float16, Float32, Layout
from cute_py.errors import CuteError, CuteTypeError, CuteValueError, DeviceOnlyError
from cute_py.nvgpu import warp
from cute_py.reference.warp import ldmatrix, mma_a_coord, mma_b_coord, mma_c_coord, mma_sync, run_tiled_mma, stmatrix
from cute_py.tensor.tensor import Tensor
from cute_py.tensor.engines import ArrayEngine

RNG = np.random.default_rng(2024)

# CuTe's SM80 traits, as written in mma_traits_sm80.hpp
SM80_16x8_ROW = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))
SM80_8x8_ROW = Layout(((4, 8), 2), ((16, 1), 8))
A_16x8x16 = Layout(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))
B_16x8x16 = Layout(((4, 8), (2, 2)), ((16, 1), (8, 64)))


def _op(k=16, ab=Float16, acc=Float32):
    return warp.MmaF16BF16Op(ab, acc, (16, 8, k))


# -- the atom's layouts ---------------------------------------------------------------------------


@pytest.mark.parametrize("ab,acc", [(Float16, Float32), (BFloat16, Float32), (Float16, Float16)])
def test_m16n8k16_layouts_are_cutes_sm80_16x8x16_traits(ab, acc):
    atom = cute.make_mma_atom(_op(16, ab, acc))
    assert atom.shape_mnk == (16, 8, 16) and atom.size == 32 and atom.thr_id == Layout(32)
    assert atom.tv_layout_A == A_16x8x16
    assert atom.tv_layout_B == B_16x8x16
    assert atom.tv_layout_C == SM80_16x8_ROW


def test_m16n8k8_layouts_are_cutes_sm80_16x8x8_traits():
    atom = cute.make_mma_atom(_op(8))
    assert (atom.tv_layout_A, atom.tv_layout_B, atom.tv_layout_C) == (SM80_16x8_ROW, SM80_8x8_ROW, SM80_16x8_ROW)


@pytest.mark.parametrize("k", [8, 16])
def test_each_tv_layout_covers_its_tile_exactly_once(k):
    op = _op(k)
    for tv, n in ((op.layout_a_tv(), 16 * k), (op.layout_b_tv(), 8 * k), (op.layout_c_tv(), 16 * 8)):
        images = sorted(tv(i) for i in range(cute.size(tv)))
        assert images == list(range(n)), f"{tv} does not cover its {n} elements exactly once"


@pytest.mark.parametrize("k", [8, 16])
def test_the_tv_layouts_agree_with_the_ptx_isa_fragment_tables(k):
    op = _op(k)
    for lane in range(32):
        for i in range(k // 2):
            m, kk = mma_a_coord(k, lane, i)
            assert op.layout_a_tv()((lane, i)) == m + 16 * kk
        for i in range(k // 4):
            kk, n = mma_b_coord(k, lane, i)
            assert op.layout_b_tv()((lane, i)) == n + 8 * kk
        for i in range(4):
            m, n = mma_c_coord(lane, i)
            assert op.layout_c_tv()((lane, i)) == m + 16 * n


def test_isa_fragment_maps_by_hand():
    # PTX ISA, m16n8k16 f16: lane 5 (group 1, thread 1) holds a0=(1,2) a3=(9,3) a4=(1,10) a7=(9,11); b3=(11,1)
    assert [mma_a_coord(16, 5, i) for i in (0, 3, 4, 7)] == [(1, 2), (9, 3), (1, 10), (9, 11)]
    assert mma_b_coord(16, 5, 3) == (11, 1)
    assert mma_c_coord(31, 3) == (15, 7)


@pytest.mark.parametrize("k,ab,acc", [(16, Float16, Float32), (16, BFloat16, Float32), (8, Float16, Float32),
                                      (8, BFloat16, Float32), (16, Float16, Float16)])
def test_the_atom_law_scatter_run_gather_is_a_matmul(k, ab, acc):
    op = _op(k, ab, acc)
    A = RNG.standard_normal((16, k)).astype(np.float16).astype(np.float32)
    B = RNG.standard_normal((8, k)).astype(np.float16).astype(np.float32)
    C = RNG.standard_normal((16, 8)).astype(np.float16).astype(np.float32)
    fa, fb, fc = (x.reshape(-1, order="F") for x in (A, B, C))
    ta, tb, tc = op.layout_a_tv(), op.layout_b_tv(), op.layout_c_tv()
    a = np.array([[fa[ta((t, v))] for v in range(k // 2)] for t in range(32)])
    b = np.array([[fb[tb((t, v))] for v in range(k // 4)] for t in range(32)])
    c = np.array([[fc[tc((t, v))] for v in range(4)] for t in range(32)])
    d = mma_sync(op, a, b, c)
    D = np.zeros(128, np.float32)
    for t in range(32):
        for v in range(4):
            D[tc((t, v))] = d[t, v]
    tol = 2e-2 if acc is Float16 else 1e-5
    np.testing.assert_allclose(D.reshape((16, 8), order="F"), A @ B.T + C, rtol=tol, atol=tol)


# -- the op's rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize("args,match", [
    ((Float32, Float32, (16, 8, 16)), r"ab_dtype must be Float16 or BFloat16, got Float32"),
    ((BFloat16, Float16, (16, 8, 16)), r"Float16 accumulators need Float16 inputs, got BFloat16"),
    ((Float16, BFloat16, (16, 8, 16)), r"acc_dtype must be Float32 or Float16, got BFloat16"),
    ((Float16, Float32, (16, 8, 32)), r"shape_mnk must be \(16, 8, 8\) or \(16, 8, 16\), got \(16, 8, 32\)"),
    ((Float16, Float32, (8, 8, 4)), r"shape_mnk must be"),
])
def test_bad_mma_ops_are_rejected_naming_the_rule(args, match):
    with pytest.raises(CuteValueError, match=match):
        warp.MmaF16BF16Op(*args)


def test_an_mma_atom_needs_an_mma_op():
    with pytest.raises(CuteTypeError, match="needs an MmaOp"):
        cute.make_mma_atom(warp.LdMatrix8x8x16bOp())


def test_the_ptx_name():
    assert _op(16, BFloat16).ptx == "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
    assert _op(8, Float16, Float16).ptx == "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16"


# -- tiled MMA: thread layout, TV layouts, partitions --------------------------------------------------


def test_tiled_mma_2x2x1_sizes_and_thread_layout():
    tm = cute.make_tiled_mma(_op(), (2, 2, 1))
    assert tm.size == 128
    assert tm.thr_layout_vmnk == Layout((32, 2, 2, 1), (1, 32, 64, 0))
    assert tm.shape_mnk == (32, 16, 16)
    tm = cute.make_tiled_mma(_op(), (2, 2, 1), (32, 32, 16))
    assert tm.shape_mnk == (32, 32, 16)


def test_tiled_tv_layout_c_covers_the_tile_once_and_a_b_are_replicated_across_the_other_mode():
    tm = cute.make_tiled_mma(_op(), (2, 2, 1), (32, 32, 16))
    for tv, n, times in ((tm.tv_layout_C_tiled, 32 * 32, 1), (tm.tv_layout_A_tiled, 32 * 16, 2),
                         (tm.tv_layout_B_tiled, 32 * 16, 2)):
        counts = np.bincount([tv(i) for i in range(cute.size(tv))], minlength=n)
        assert counts.tolist() == [times] * n


def _hand_a(t, i, rm, rk, perm_m):
    """(m, k) of A that thread t's fragment element (i, rm, rk) holds, derived from ThrMMA::partition_A for
    atom layout (2, 2, 1): lane = t % 32, ThrM = (t // 32) % 2; the position p = atom_m + 16 ThrM in the
    permuted M tile of 32 maps through the permutation, then the rest mode steps whole tiles of 32."""
    lane, tm = t % 32, (t // 32) % 2
    am, ak = mma_a_coord(16, lane, i)
    return perm_m(am + 16 * tm) + 32 * rm, ak + 16 * rk


def _hand_c(t, i, rm, rn, perm_m):
    """(m, n) of C for element (i, rm, rn): ThrN = t // 64 picks the atom column 8 ThrN of each 16 covered
    by the threads; the N rest mode (the permutation's 32 is 2 x 16, then whole tiles) steps 16."""
    lane, tm, tn = t % 32, (t // 32) % 2, t // 64
    cm, cn = mma_c_coord(lane, i)
    return perm_m(cm + 16 * tm) + 32 * rm, cn + 8 * tn + 16 * rn


@pytest.mark.parametrize("perm_name", ["identity", "interleaved"])
def test_partitions_hold_the_elements_derived_from_the_cpp_definitions(perm_name):
    if perm_name == "identity":
        perm, perm_m = (32, 32, 16), (lambda p: p)
    else:  # (16, 2):(2, 1): position p = p0 + 16 p1 of the M tile is row 2 p0 + p1
        perm, perm_m = (Layout((16, 2), (2, 1)), 32, 16), (lambda p: 2 * (p % 16) + p // 16)
    tm = cute.make_tiled_mma(_op(), (2, 2, 1), perm)
    idx = np.arange(64 * 64)  # each element holds its column-major index m + 64 k
    A = Tensor(ArrayEngine(idx), Layout((64, 64)))
    C = Tensor(ArrayEngine(idx), Layout((64, 64)))
    for t in (0, 5, 37, 64, 101, 127):
        thr = tm.get_slice(t)
        pa, pc = thr.partition_A(A), thr.partition_C(C)
        assert cute.product(pa.layout.shape[0]) == 8 and cute.size(pa) == 8 * 2 * 4
        assert cute.product(pc.layout.shape[0]) == 4 and cute.size(pc) == 4 * 2 * 4
        for i in range(8):
            for rm in range(2):
                for rk in range(4):
                    m, k = _hand_a(t, i, rm, rk, perm_m)
                    assert pa[(i, rm, rk)] == m + 64 * k, (t, i, rm, rk)
        for i in range(4):
            for rm in range(2):
                for rn in range(4):
                    m, n = _hand_c(t, i, rm, rn, perm_m)
                    assert pc[(i, rm, rn)] == m + 64 * n, (t, i, rm, rn)


def test_partition_b_by_hand():
    tm = cute.make_tiled_mma(_op(), (2, 2, 1), (32, 32, 16))
    for t in (3, 70, 127):
        pb = tm.get_slice(t).partition_B(Tensor(ArrayEngine(np.arange(64 * 64)), Layout((64, 64))))
        lane, tn = t % 32, t // 64
        for i in range(4):
            for rn in range(4):
                for rk in range(4):
                    k, n = mma_b_coord(16, lane, i)
                    assert pb[(i, rn, rk)] == (n + 8 * tn + 16 * rn) + 64 * (k + 16 * rk)


def test_partition_of_a_tensor_keeps_the_tensors_memory():
    tm = cute.make_tiled_mma(_op(), (2, 2, 1), (32, 32, 16))
    data = np.arange(64 * 64, dtype=np.float32)
    t = Tensor(ArrayEngine(data), Layout((64, 64), (64, 1)))  # row-major (M, K)
    pa = tm.get_slice(37).partition_A(t)
    m, k = _hand_a(37, 3, 1, 2, lambda p: p)
    assert pa[(3, 1, 2)] == data[64 * m + k]


def test_partition_shapes_and_fragments():
    tm = cute.make_tiled_mma(_op(), (2, 2, 1), (32, 32, 16))
    assert cute.product_each(tm.partition_shape_C((64, 64))) == (4, 2, 4)
    thr = tm.get_slice(0)
    frag = thr.partition_fragment_C(Layout((64, 64)))
    assert frag.element_type is Float32 and cute.size(frag) == 32
    fa = tm.make_fragment_A(thr.partition_A(Layout((64, 64))))
    assert fa.element_type is Float16 and cute.size(fa) == 64


@pytest.mark.parametrize("ab,acc,perm,atoms", [
    (Float16, Float32, None, (2, 2, 1)),
    (BFloat16, Float32, (32, 32, 16), (2, 2, 1)),
    (Float16, Float32, (Layout((16, 2), (2, 1)), 32, 16), (2, 2, 1)),
    (Float16, Float16, None, (1, 2, 1)),
    (BFloat16, Float32, None, (4, 1, 1)),
])
def test_a_whole_tiled_mma_through_the_partitions_is_a_matmul(ab, acc, perm, atoms):
    tm = cute.make_tiled_mma(_op(16, ab, acc), atoms, perm)
    M, N, K = (2 * s for s in tm.shape_mnk)
    A = RNG.standard_normal((M, K)).astype(np.float16).astype(np.float32)
    B = RNG.standard_normal((N, K)).astype(np.float16).astype(np.float32)
    C = RNG.standard_normal((M, N)).astype(np.float16).astype(np.float32)
    D = run_tiled_mma(tm, A, B, C)
    tol = 5e-2 if acc is Float16 else 1e-4
    np.testing.assert_allclose(D, A @ B.T + C, rtol=tol, atol=tol)


def test_tiled_mma_rules():
    with pytest.raises(CuteValueError, match=r"permutation_mnk\[1\] covers 12 elements, not a multiple of the "
                                             r"atom's N = 8"):
        cute.make_tiled_mma(_op(), (1, 1, 1), (16, 12, 16))
    with pytest.raises(CuteTypeError, match=r"permutation_mnk\[0\] must be None, a positive int or a Layout"):
        cute.make_tiled_mma(_op(), (1, 1, 1), ("x", None, None))
    with pytest.raises(CuteValueError, match="atom_layout_mnk must be"):
        cute.make_tiled_mma(_op(), (2, 0, 1))
    tm = cute.make_tiled_mma(_op(), (2, 2, 1))
    with pytest.raises(CuteValueError, match="thread index 128 is out of range for a tiled MMA of 128 threads"):
        tm.get_slice(128)
    with pytest.raises(CuteValueError, match=r"does not divide mode 0"):
        tm.get_slice(0).partition_C(Layout((48, 16)))


def test_gemm_outside_a_kernel_is_a_device_only_error_after_its_checks():
    tm = cute.make_tiled_mma(_op(), (1, 1, 1))
    thr = tm.get_slice(0)
    c = thr.partition_fragment_C(Layout((16, 8)))
    a = thr.partition_fragment_A(Layout((16, 16)))
    b = thr.partition_fragment_B(Layout((8, 16)))
    with pytest.raises(DeviceOnlyError, match="gemm is a device operation"):
        cute.gemm(tm, c, a, b, c)
    b2 = thr.partition_fragment_B(Layout((16, 16)))
    with pytest.raises(CuteValueError, match="the modes disagree"):
        cute.gemm(tm, c, a, b2, c)
    with pytest.raises(CuteTypeError, match="gemm needs an MMA atom"):
        cute.gemm(object(), c, a, b, c)


# -- ldmatrix / stmatrix ------------------------------------------------------------------------------

# CuTe's bit layouts: (LDSM_N dst, LDSM_T dst) for x1, x2, x4
LDSM = {
    1: (Layout((32, 32), (32, 1)), Layout(((4, 8), (16, 2)), ((256, 16), (1, 128)))),
    2: (Layout((32, (32, 2)), (32, (1, 1024))), Layout(((4, 8), (16, 2, 2)), ((256, 16), (1, 128, 1024)))),
    4: (Layout((32, (32, 4)), (32, (1, 1024))), Layout(((4, 8), (16, 2, 4)), ((256, 16), (1, 128, 1024)))),
}
ROWS = {1: Layout(((8, 4), 128), ((128, 0), 1)), 2: Layout(((16, 2), 128), ((128, 0), 1)), 4: Layout((32, 128), (128, 1))}


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_and_stmatrix_bit_layouts_are_cutes_traits(n, trans):
    ld = warp.LdMatrix8x8x16bOp(trans, n).bit_layouts()
    st = warp.StMatrix8x8x16bOp(trans, n).bit_layouts()
    regs = LDSM[n][1 if trans else 0]
    assert ld == (ROWS[n], regs, regs)
    assert st == (regs, ROWS[n], regs)


def _row_addresses(n):
    """Each lane's row: rows scattered over a 4096-element buffer, 16-byte aligned, none overlapping."""
    starts = RNG.permutation(4096 // 8)[:32] * 8
    return starts


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("dtype", [Float16, BFloat16])
def test_ldmatrix_reference_moves_each_element_where_the_atoms_layouts_say(n, trans, dtype):
    atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(trans, n), dtype)
    smem = np.arange(4096, dtype=np.float32)
    addr = _row_addresses(n)
    got = ldmatrix(atom.op, smem, addr)
    dst = atom.layout_dst_tv  # (lane, value) -> element e of the matrices: row e // 8 is lane (e // 8)'s row
    assert got.shape == (32, 2 * n) and cute.size(dst) == 32 * 2 * n
    for lane in range(32):
        for v in range(2 * n):
            e = dst((lane, v))
            assert got[lane, v] == smem[addr[e // 8] + e % 8], (lane, v)


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_writes_every_addressed_element_once_and_nothing_else(n, trans):
    atom = cute.make_copy_atom(warp.StMatrix8x8x16bOp(trans, n), Float16)
    poison = -1.0
    smem = np.full(4096, poison, np.float32)
    addr = _row_addresses(n)
    values = RNG.standard_normal((32, 2 * n)).astype(np.float32)
    stmatrix(atom.op, smem, addr, values)
    src = atom.layout_src_tv
    expect = np.full(4096, poison, np.float32)
    for lane in range(32):
        for v in range(2 * n):
            e = src((lane, v))
            expect[addr[e // 8] + e % 8] = values[lane, v]
    np.testing.assert_array_equal(smem, expect)
    assert np.count_nonzero(smem != poison) == 64 * n


def test_ldmatrix_reverses_stmatrix():
    for trans in (False, True):
        smem = np.zeros(4096, np.float32)
        addr = _row_addresses(4)
        values = RNG.standard_normal((32, 8)).astype(np.float32)
        stmatrix(warp.StMatrix8x8x16bOp(trans, 4), smem, addr, values)
        np.testing.assert_array_equal(ldmatrix(warp.LdMatrix8x8x16bOp(trans, 4), smem, addr), values)


def _flat(t):
    return [t.engine.offset + t.layout(i) for i in range(cute.size(t))]


@pytest.mark.parametrize("which", ["A", "B"])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_through_make_tiled_copy_fills_exactly_the_mma_fragment(which, trans):
    """The kernel's walk (instruction j: shared-memory elements 8 j .. 8 j + 7 of the thread's partition_S,
    register elements of the retiled fragment 8 j .. 8 j + 7) over every warp, executed by the reference
    ldmatrix, leaves each thread's fragment equal to its partition_A/B of the shared-memory tile."""
    tm = cute.make_tiled_mma(_op(), (2, 2, 1), (32, 32, 16))
    atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(trans, 4), Float16)
    tc = (cute.make_tiled_copy_A if which == "A" else cute.make_tiled_copy_B)(atom, tm)
    smem = RNG.permutation(64 * 64).astype(np.float32)
    # K-major tiles for ldmatrix, MN-major ones for ldmatrix.trans
    S = Tensor(ArrayEngine(smem), Layout((64, 64), (1, 64) if trans else (64, 1)))
    for w in range(4):
        lanes = range(32 * w, 32 * w + 32)
        rows, view, frag_idx, part_idx = {}, {}, {}, {}
        for t in lanes:
            thr = tm.get_slice(t)
            part = thr.partition_A(S) if which == "A" else thr.partition_B(S)
            frag = tm.make_fragment_A(part) if which == "A" else tm.make_fragment_B(part)
            rows[t] = _flat(tc.get_slice(t).partition_S(S))
            view[t] = _flat(tc.get_slice(t).retile(frag))
            frag_idx[t], part_idx[t] = _flat(frag), _flat(part)
        regs = {t: np.zeros(64, np.float32) for t in lanes}
        for j in range(len(rows[32 * w]) // 8):
            for t in lanes:
                assert rows[t][8 * j:8 * j + 8] == list(range(rows[t][8 * j], rows[t][8 * j] + 8))
            got = ldmatrix(atom.op, smem, np.array([rows[t][8 * j] for t in lanes]))
            for i, t in enumerate(lanes):
                for v in range(8):
                    regs[t][view[t][8 * j + v]] = got[i, v]
        for t in lanes:
            np.testing.assert_array_equal([regs[t][f] for f in frag_idx[t]], smem[part_idx[t]])


@pytest.mark.parametrize("args,err,match", [
    ((False, 3), CuteValueError, "num_matrices must be 1, 2 or 4, got 3"),
    ((1, 4), CuteTypeError, "transpose must be a bool"),
])
def test_bad_matrix_ops_are_rejected(args, err, match):
    for cls in (warp.LdMatrix8x8x16bOp, warp.StMatrix8x8x16bOp):
        with pytest.raises(err, match=match):
            cls(*args)


def test_matrix_atoms_move_16_bit_elements_only():
    with pytest.raises(CuteValueError, match=r"moves 16-bit elements \(b16\), not Float32"):
        cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), Float32)
    with pytest.raises(CuteError, match="copies \\[128\\] bits per instruction, not 64"):
        cute.make_copy_atom(warp.StMatrix8x8x16bOp(False, 4), Float16, 64)
