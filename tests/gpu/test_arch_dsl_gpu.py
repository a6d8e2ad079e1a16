"""The CuTe DSL's ``cute.arch`` names on a Hopper GPU, where their behaviour is observable: named barriers between
producer and consumer warps, multicast masks from the CTA's run-time cluster coordinates, remote mbarrier arrivals
and ``store_async_dsmem`` in a cluster, shuffles / votes / reductions / integer and float instructions / atomics of
one CTA -- each compared with values computed here in numpy.

The PTX of every kernel is built and assembled everywhere; the launches need a CUDA device (sm_90) and torch, and
are skipped with the reason otherwise. Waits are bounded polls: a broken arrival fails, it does not hang.
"""

import itertools
import struct

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)
np = pytest.importorskip("numpy", reason="the comparison uses numpy")

import cute_py as cute  # noqa: E402
from cute_py import Int32, Layout, arch  # noqa: E402
from cute_py.nvgpu import cpasync  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu

POLL = 200000
FILL = -7


def _wrap32(v):
    return ((int(v) + (1 << 31)) % (1 << 32)) - (1 << 31)


def _u32(v):
    return int(v) & 0xFFFFFFFF


def _has(ptx, text):
    """Whether ``text`` is in ``ptx``, whitespace runs counted as one space."""
    return " ".join(text.split()) in " ".join(ptx.split())


def _word(mask):
    """A 16-bit mask as the Int32 stored: a traced Int16's bits, or a static mask (a Python int) as it is."""
    return mask if type(mask) is int else Int32(mask) & 0xFFFF


# -- named barriers: two producer warps, two consumer warps ---------------------------------------------


@cute.kernel
def named_barrier_kernel(out):
    tid = arch.thread_idx()[0]
    warp = arch.make_warp_uniform(arch.warp_idx())
    smem = arch.SmemAllocator()
    buf = smem.allocate_tensor(Int32, Layout(128))
    if warp < 2:  # producers: write, then arrive without waiting
        buf[tid] = tid * 3 + 1
        arch.barrier_arrive(barrier_id=1, number_of_threads=128)
        buf[tid + 64] = tid * 5 + 2
        arch.barrier_arrive(barrier_id=2, number_of_threads=128, aligned=False)
    else:  # consumers: wait for both producer warps, then read what they wrote
        arch.barrier(barrier_id=1, number_of_threads=128)
        out[tid] = buf[tid - 64]
        arch.barrier(barrier_id=2, number_of_threads=128)
        out[tid + 64] = buf[tid]


@cute.jit
def named_barriers(out):
    named_barrier_kernel(out).launch(grid=1, block=128)


def test_named_barriers_between_producer_and_consumer_warps(assemble_ptx):
    c = cute.compile(named_barriers, cute.compiler.DeviceArraySpec("Int32", (256,)))
    assert _has(c.ptx, "bar.arrive 1, 128;") and "barrier.cta.arrive" in c.ptx and _has(c.ptx, "bar.sync 2, 128;")
    assemble_ptx(c.ptx)
    torch = hopper_torch()
    out = torch.full((256,), FILL, dtype=torch.int32, device="cuda")
    named_barriers(out)
    torch.cuda.synchronize()
    got = out.cpu().numpy()
    t = np.arange(64, 128)
    assert list(got[64:128]) == list((t - 64) * 3 + 1)  # consumers read the producers' first writes
    assert list(got[128:192]) == list((t - 64) * 5 + 2)  # and their second ones
    assert list(got[:64]) == [FILL] * 64 and list(got[192:]) == [FILL] * 64


# -- multicast masks from the CTA's cluster coordinates ------------------------------------------------------

VMNK = Layout((1, 2, 2, 1))                 # rank = m + 2 n
VMNK_T = Layout((1, 2, 2, 1), (0, 2, 1, 0))  # rank = 2 m + n


@cute.kernel
def mask_kernel(out):
    bx, by, _ = arch.block_idx()
    x, y, _ = arch.block_in_cluster_idx()
    rank = arch.block_idx_in_cluster()
    row = bx + by * 4
    if arch.thread_idx()[0] == 0:
        out[row, 0] = x
        out[row, 1] = y
        out[row, 2] = rank
        out[row, 3] = _word(cute.make_layout_image_mask(VMNK, (0, x, y, 0), 1))
        out[row, 4] = _word(cute.make_layout_image_mask(VMNK, (0, x, y, 0), 2))
        out[row, 5] = _word(cpasync.create_tma_multicast_mask(VMNK, VMNK.get_flat_coord(rank), 2))
        out[row, 6] = _word(cute.make_layout_image_mask(VMNK_T, (0, x, y, 0), 1))
        out[row, 7] = _word(cpasync.create_tma_multicast_mask(VMNK, (0, x, y, 0), (1, 2)))  # static: every CTA


@cute.jit
def cluster_masks(out):
    mask_kernel(out).launch(grid=(4, 2, 1), block=32, cluster=(2, 2, 1))


def _brute(shape, stride, coord, modes):
    mask = 0
    for c in itertools.product(*[range(s) for s in shape]):
        if all(c[i] == coord[i] for i in range(len(c)) if i not in modes):
            mask |= 1 << sum(a * d for a, d in zip(c, stride))
    return mask


def test_masks_from_block_in_cluster_idx(assemble_ptx):
    c = cute.compile(cluster_masks, cute.compiler.DeviceArraySpec("Int32", (8, 8)))
    assert "%cluster_ctaid.x" in c.ptx and "%cluster_ctaid.y" in c.ptx and "%cluster_ctarank" in c.ptx
    assemble_ptx(c.ptx)
    torch = hopper_torch()
    out = torch.full((8, 8), FILL, dtype=torch.int32, device="cuda")
    cluster_masks(out)
    torch.cuda.synchronize()
    got = out.cpu().numpy()
    for bx, by in itertools.product(range(4), range(2)):
        x, y, rank = got[bx + 4 * by, :3]
        assert (x, y) == (bx % 2, by % 2) and rank == x + 2 * y, (bx, by, got[bx + 4 * by])
        crd = (0, x, y, 0)
        want = [_brute((1, 2, 2, 1), (0, 1, 2, 0), crd, {1}), _brute((1, 2, 2, 1), (0, 1, 2, 0), crd, {2}),
                _brute((1, 2, 2, 1), (0, 1, 2, 0), crd, {2}), _brute((1, 2, 2, 1), (0, 2, 1, 0), crd, {1}),
                _brute((1, 2, 2, 1), (0, 1, 2, 0), crd, {1, 2})]
        assert list(got[bx + 4 * by, 3:8]) == want, (bx, by)


# -- mbarriers across the cluster, store_async_dsmem, dynamic shared memory ----------------------------------


@cute.kernel
def cluster_mbarrier_kernel(out):
    tid = arch.thread_idx()[0]
    rank = arch.block_idx_in_cluster()
    peer = rank ^ 1
    smem = arch.SmemAllocator()
    bars = smem.allocate_mbarrier(2)
    buf = smem.allocate_tensor(Int32, Layout(4), alignment=16)
    if tid == 0:
        arch.mbarrier_init(bars, 3)      # completed by the peer's three remote arrivals
        arch.mbarrier_init(bars + 1, 1)  # completed by this CTA's arrival and the peer's 16 stored bytes
        arch.mbarrier_init_fence()
    arch.cluster_arrive()
    arch.cluster_wait()
    if tid == 0:
        arch.mbarrier_arrive_and_expect_tx(bars + 1, 16)
        arch.mbarrier_arrive(bars, peer, 2, scope="cluster")
        arch.mbarrier_arrive(arch.map_dsmem_ptr(bars, peer), scope="cluster")
        arch.store_async_dsmem(buf.iterator, (rank * 10 + 1, rank * 10 + 2, rank * 10 + 3, rank * 10 + 4), bars + 1,
                               peer)
    for _ in cute.range(POLL):
        if arch.mbarrier_conditional_try_wait(tid == 0, bars, 0):
            if tid == 0:
                out[rank, 0] = 1
        if arch.mbarrier_test_wait(bars + 1, 0):
            if tid == 0:
                out[rank, 1] = 1
    if tid == 0:
        for i in cute.range_constexpr(4):
            out[rank, 2 + i] = buf[i]
        out[rank, 6] = arch.dynamic_smem_size()
        out[rank, 7] = arch.get_dyn_smem_size()
    arch.cluster_arrive()
    arch.cluster_wait()


@cute.jit
def cluster_mbarriers(out):
    cluster_mbarrier_kernel(out).launch(grid=2, block=32, cluster=(2, 1, 1), smem=4096)


def test_remote_arrivals_and_async_dsmem_stores(assemble_ptx):
    c = cute.compile(cluster_mbarriers, cute.compiler.DeviceArraySpec("Int32", (2, 8)))
    assert "mbarrier.arrive.release.cluster.shared::cluster.b64" in c.ptx and "st.async" in c.ptx
    assemble_ptx(c.ptx)
    torch = hopper_torch()
    out = torch.full((2, 8), FILL, dtype=torch.int32, device="cuda")
    cluster_mbarriers(out)
    torch.cuda.synchronize()
    got = out.cpu().numpy()
    for r in range(2):
        p = r ^ 1
        assert list(got[r]) == [1, 1, p * 10 + 1, p * 10 + 2, p * 10 + 3, p * 10 + 4, 4096, 4096], (r, got[r])


# -- one CTA: warp operations, integer and float instructions, atomics ----------------------------------------

COLS = 24
FCOLS = 6
LUT_XOR3 = 0x96


@cute.kernel
def warp_ops_kernel(inp, fin, out, fout, cells, fcells):
    t = arch.thread_idx()[0]
    x, y, z = inp[3 * t], inp[3 * t + 1], inp[3 * t + 2]
    f, g = fin[t], fin[64 + t]
    out[t, 0] = arch.shuffle_sync_up(x, 3)
    out[t, 1] = arch.shuffle_sync_down(x, 5, mask_and_clamp=(24 << 8) | 31)
    out[t, 2] = arch.shuffle_sync_bfly(x, 6)
    out[t, 3] = arch.shuffle_sync(x, 4, 0xFFFFFFFF, (24 << 8) | 5)  # within the clamp: lane 4 of the segment
    out[t, 4] = arch.shuffle_sync(x, 7, 0xFFFFFFFF, (24 << 8) | 5)  # past the clamp lane 5: its own value
    out[t, 5] = arch.vote_ballot_sync(x > 0)
    out[t, 6] = cute.where(arch.vote_any_sync(x == inp[3 * 37]), 1, 0)
    out[t, 7] = Int32(arch.activemask())
    out[t, 8] = Int32(arch.match_sync(0xFFFFFFFF, x & 3))
    out[t, 9] = Int32(arch.warp_redux_sync(x, "add"))
    out[t, 10] = arch.warp_redux_sync(x, "max")
    out[t, 11] = Int32(arch.warp_redux_sync(cute.Uint32(x), "min"))
    out[t, 12] = Int32(arch.lanemask_lt())
    out[t, 13] = arch.popc(x)
    out[t, 14] = arch.brev(x)
    out[t, 15] = arch.bfe(x, 4, 8)
    out[t, 16] = Int32(arch.clz(x))
    out[t, 17] = Int32(arch.bfind(x))
    out[t, 18] = arch.lop3(x, y, z, LUT_XOR3)
    out[t, 19] = arch.shf(x, y, 5)
    out[t, 20] = arch.mul_hi(x, y)
    out[t, 21] = arch.add_sat_int(x, y)
    out[t, 22] = arch.add_cc(x, y)
    out[t, 23] = arch.addc(z, 7)
    fout[t, 0] = arch.fmax(f, g)
    fout[t, 1] = arch.fmin(f, g)
    fout[t, 2] = arch.rcp_approx(f)
    fout[t, 3] = arch.shuffle_sync_bfly(f, 1)
    pair = arch.cvt_f32x2_bf16x2((f * 1.0e38, g))
    fout[t, 4] = cute.Float32(pair[0])
    fout[t, 5] = cute.Float32(pair[1])
    # atomics
    out[t, 24] = arch.atomic_add(cells.iterator, 1)
    arch.red(cells.iterator + 1, x & 0xFF, op="add", dtype="s32")
    arch.atomic_fmax(fcells.iterator, f)
    arch.atomic_fmin(fcells.iterator + 1, f)
    arch.atomic_max(cells.iterator + 4, x, scope="gpu")
    if t == 0:
        out[0, 25] = arch.atomic_cas(cells.iterator + 2, cmp=0, val=5)
        out[1, 25] = arch.atomic_cas(cells.iterator + 2, cmp=1, val=9)
        arch.store(cells.iterator + 3, 42, sem="release", scope="gpu")
        out[2, 25] = arch.load(cells.iterator + 3, Int32, sem="acquire", scope="gpu")
    arch.fence_acq_rel_gpu()


@cute.jit
def warp_ops(inp, fin, out, fout, cells, fcells):
    warp_ops_kernel(inp, fin, out, fout, cells, fcells).launch(grid=1, block=64)


def _bf16_satfinite(v):
    """Round a float32 to the nearest BFloat16 (ties to even), saturated to the largest finite one."""
    if np.isnan(v):
        return float("nan")
    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    r = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    out = struct.unpack("<f", struct.pack("<I", (r << 16) & 0xFFFFFFFF))[0]
    biggest = struct.unpack("<f", struct.pack("<I", 0x7F7F0000))[0]
    return max(-biggest, min(biggest, out))


def expected_warp_ops(inp, fin):
    xs, ys, zs = inp[0::3].astype(np.int64), inp[1::3].astype(np.int64), inp[2::3].astype(np.int64)
    want = np.zeros((64, COLS), dtype=np.int64)
    for t in range(64):
        lane, base = t % 32, t - t % 32
        x, y, z = int(xs[t]), int(ys[t]), int(zs[t])
        ux = _u32(x)
        warp = range(base, base + 32)
        want[t, 0] = xs[t - 3] if lane >= 3 else x
        want[t, 1] = xs[t + 5] if lane % 8 + 5 < 8 else x
        want[t, 2] = xs[base + (lane ^ 6)]
        want[t, 3] = xs[base + (lane // 8) * 8 + 4]
        want[t, 4] = x
        want[t, 5] = _wrap32(sum(1 << (s - base) for s in warp if xs[s] > 0))
        want[t, 6] = int(any(xs[s] == inp[3 * 37] for s in warp))
        want[t, 7] = -1
        want[t, 8] = _wrap32(sum(1 << (s - base) for s in warp if (xs[s] & 3) == (x & 3)))
        want[t, 9] = _wrap32(sum(int(xs[s]) for s in warp))
        want[t, 10] = max(int(xs[s]) for s in warp)
        want[t, 11] = _wrap32(min(_u32(xs[s]) for s in warp))
        want[t, 12] = (1 << lane) - 1
        want[t, 13] = bin(ux).count("1")
        want[t, 14] = _wrap32(int(f"{ux:032b}"[::-1], 2))
        field = (ux >> 4) & 0xFF
        want[t, 15] = field - 256 if field & 0x80 else field
        want[t, 16] = 32 - ux.bit_length()
        v = x if x >= 0 else ~x
        want[t, 17] = v.bit_length() - 1 if v else -1
        want[t, 18] = _wrap32(x ^ y ^ z)
        want[t, 19] = _wrap32(((((_u32(y) << 32) | ux) << 5) >> 32) & 0xFFFFFFFF)
        want[t, 20] = _wrap32((x * y) >> 32)
        want[t, 21] = max(-(1 << 31), min((1 << 31) - 1, x + y))
        want[t, 22] = _wrap32(x + y)
        want[t, 23] = _wrap32(z + 7 + ((ux + _u32(y)) >> 32))
    return want


def test_warp_integer_float_and_atomic_instructions(assemble_ptx):
    spec = cute.compiler.DeviceArraySpec
    c = cute.compile(warp_ops, spec("Int32", (192,)), spec("Float32", (128,)), spec("Int32", (64, COLS + 2)),
                     spec("Float32", (64, FCOLS)), spec("Int32", (8,)), spec("Float32", (2,)))
    for ptx in ("shfl.sync.up.b32", "vote.sync.ballot.b32", "match.any.sync.b32", "redux.sync.add.s32", "popc.b32",
                "lop3.b32", "add.cc.u32", "addc.u32", "max.f32", "rcp.approx.ftz.f32", "atom.global.add",
                "red.global.add.s32", "atom.global.cas.b32", "st.release.gpu.global", "ld.acquire.gpu.global"):
        assert ptx in c.ptx, ptx
    assemble_ptx(c.ptx)
    torch = hopper_torch()
    gen = torch.Generator(device="cpu").manual_seed(7)
    inp = torch.randint(-(1 << 31), (1 << 31) - 1, (192,), dtype=torch.int64, generator=gen).to(torch.int32)
    inp[3 * 37] = inp[3 * 5]  # a value that warp 0 holds too
    fin = (torch.randn(128, generator=gen) * 3).to(torch.float32)
    fin[:64] = torch.where(fin[:64].abs() < 1e-3, torch.full_like(fin[:64], 0.5), fin[:64])
    fin[64 + 3] = float("inf")
    out = torch.full((64, COLS + 2), FILL, dtype=torch.int32, device="cuda")
    fout = torch.zeros((64, FCOLS), dtype=torch.float32, device="cuda")
    cells = torch.tensor([0, 0, 0, 0, -(1 << 31), 0, 0, 0], dtype=torch.int32, device="cuda")
    fcells = torch.tensor([float("-inf"), float("inf")], dtype=torch.float32, device="cuda")
    warp_ops(inp.cuda(), fin.cuda(), out, fout, cells, fcells)
    torch.cuda.synchronize()
    got, fgot = out.cpu().numpy().astype(np.int64), fout.cpu().numpy()
    ins, fins = inp.numpy(), fin.numpy()
    want = expected_warp_ops(ins, fins)
    wrong = [f"column {k}: thread {t} got {got[t, k]}, want {want[t, k]}"
             for k in range(COLS) for t in range(64) if got[t, k] != want[t, k]]
    assert not wrong, "\n".join(wrong[:20])
    f, g = fins[:64], fins[64:]
    assert np.array_equal(fgot[:, 0], np.fmax(f, g)) and np.array_equal(fgot[:, 1], np.fmin(f, g))
    assert np.allclose(fgot[:, 2], 1.0 / f, rtol=2.0 ** -21)
    assert np.array_equal(fgot[:, 3], f[np.arange(64) ^ 1])
    with np.errstate(over="ignore"):  # Float32 products, as in the kernel: large ones overflow to +-inf
        scaled = f * np.float32(1.0e38)
    sat = [_bf16_satfinite(v) for v in scaled]
    assert np.array_equal(fgot[:, 4], np.array(sat, dtype=np.float32), equal_nan=True)
    assert np.array_equal(fgot[:, 5], np.array([_bf16_satfinite(v) for v in g], dtype=np.float32))
    assert fgot[3, 5] == _bf16_satfinite(float("inf")) < float("inf")  # satfinite: inf becomes the largest finite
    # atomics
    assert sorted(got[:, 24]) == list(range(64))  # each thread saw a distinct old count
    cells_got, fcells_got = cells.cpu().numpy(), fcells.cpu().numpy()
    assert cells_got[0] == 64 and cells_got[1] == int((ins[0::3].astype(np.int64) & 0xFF).sum())
    assert list(got[0:3, 25]) == [0, 5, 42] and cells_got[2] == 5 and cells_got[3] == 42
    assert cells_got[4] == ins[0::3].max()
    assert fcells_got[0] == f.max() and fcells_got[1] == f.min()
