"""Warp builtins (cute_py.arch) on a Hopper GPU: one CTA of two warps writes, per thread, the results of
vector loads, shuffles, votes, elections, named barriers and a cp.async mbarrier arrival into an Int32 table,
compared column by column with the same values computed in numpy.

The PTX is built, FileChecked and assembled everywhere; the launch needs a CUDA device (sm_90) and torch, and
is skipped with the reason otherwise.
"""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)
np = pytest.importorskip("numpy", reason="the comparison uses numpy")

import cute_py as cute  # noqa: E402
from cute_py import arch  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu

THREADS = 64              # two warps
IN_WORDS = 8              # words of the input per thread
COLS = 40                 # Int32 results per thread: 160 bytes a row (a multiple of the 32-byte accesses)
FILL = -7                 # what the output holds before the launch
F32_BITS = 0x3FC00000     # 1.5f
POLL = 100000             # tries of the mbarrier wait (bounded: a broken arrival fails instead of hanging)

COLUMNS = {
    "ldg256.nc": range(0, 8), "ldg128.cg": range(8, 12), "ldg64.ca": range(12, 14), "ldg32": [14],
    "ldg32.cv": [15], "ldg32.lu": [16], "ldg32.cs": [17],
    "shuffle_sync(tid, 3, width=8)": [18], "shuffle_sync(run-time lane)": [19],
    "shuffle_sync(5)": [20], "shuffle_sync_bfly(3, width=8)": [21], "shuffle_sync_up(1)": [22],
    "shuffle_sync_down(2, width=16)": [23], "shuffle_sync_up(tid, 3, width=4)": [24],
    "shuffle_sync_down(i64, 1)": [25, 26], "shuffle_sync_bfly(f32, 1)": [27],
    "vote_ballot_sync": [28], "vote_any_sync": [29], "vote_all_sync": [30], "vote_uni_sync": [31], "activemask": [32],
    "warp_group_idx": [33], "shuffle_elect()": [34], "elect_one_sync()": [35], "shuffle_elect(mask)": [36],
    "barrier_arrive -> barrier (written)": [37], "barrier_arrive -> barrier (read back)": [38],
    "cp_async_mbarrier_arrive_noinc": [39],
}


@cute.kernel
def warp_builtins_kernel(inp, out, f):
    tid = arch.thread_idx()[0]
    lane = arch.lane_idx()
    warp = arch.warp_idx()
    row = COLS * tid                                  # this thread's first word of out

    # vector loads with cache modifiers, stored back with vector stores
    w = arch.ldg256(inp.engine, "nc", index=tid)                       # inp[8t .. 8t+7]
    arch.stg256(out.engine, w, "wb", index=5 * tid)                    # cols 0..7   (32-byte units)
    arch.stg128(out.engine, arch.ldg128(inp.engine, "cg", index=2 * tid + 1), "cg", index=10 * tid + 2)  # cols 8..11
    arch.stg64(out.engine, arch.ldg64(inp.engine + 2, "ca", index=4 * tid), "cs", index=20 * tid + 6)    # cols 12..13
    arch.stg32(out.engine, arch.ldg32(inp.engine, index=IN_WORDS * tid + 7), "wt", index=row + 14)
    arch.stg32(out.engine, arch.ldg32(inp.engine, "cv", index=IN_WORDS * tid + 1), index=row + 15)
    arch.stg32(out.engine, arch.ldg32(inp.engine, "lu", index=IN_WORDS * tid + 6), index=row + 16)
    arch.stg32(out.engine, arch.ldg32(inp.engine, "cs", index=IN_WORDS * tid + 5), index=row + 17)

    # shuffles
    arch.sync_warp()
    arch.stg64(out.engine, (arch.shuffle_sync(tid, 3, width=8), arch.shuffle_sync(w[4], (lane * 5) % 32)),
             index=20 * tid + 9)                                     # cols 18..19
    arch.stg128(out.engine, (arch.shuffle_sync(w[0], 5), arch.shuffle_sync_bfly(w[1], 3, width=8),
                           arch.shuffle_sync_up(w[2], 1), arch.shuffle_sync_down(w[3], 2, width=16)),
              index=10 * tid + 5)                                    # cols 20..23
    x = (cute.Int64(w[5]) << 32) | (cute.Int64(w[6]) & 0xFFFFFFFF)
    y = arch.shuffle_sync_down(x, 1)
    arch.stg32(out.engine, arch.shuffle_sync_up(tid, 3, width=4), index=row + 24)
    arch.stg32(out.engine, (cute.Int32(y),), index=row + 25)
    arch.stg32(out.engine, (cute.Int32(y >> 32),), index=row + 26)
    arch.stg32(out.engine, arch.shuffle_sync_bfly(f, 1), index=row + 27)

    # votes and elections (the warps are converged here)
    arch.sync_warp()
    flags = (arch.vote_ballot_sync((w[0] & 1) == 0), cute.compiler.select(arch.vote_any_sync(tid == 40), 1, 0),
             cute.compiler.select(arch.vote_all_sync(tid < 48), 1, 0), cute.compiler.select(arch.vote_uni_sync(tid < 32), 1, 0))
    arch.stg128(out.engine, flags, index=10 * tid + 7)                 # cols 28..31
    arch.stg64(out.engine, (arch.activemask(), arch.warp_group_idx()), index=20 * tid + 16)  # cols 32..33
    arch.stg64(out.engine, (cute.compiler.select(arch.shuffle_elect(), 1, 0), cute.compiler.select(arch.elect_one_sync(), 1, 0)),
             index=20 * tid + 17)                                    # cols 34..35
    with cute.compiler.if_(lane >= 16):
        arch.stg32(out.engine, cute.compiler.select(arch.shuffle_elect(mask=0xFFFF0000), 1, 0), index=row + 36)
    with cute.compiler.if_(lane < 16):
        arch.stg32(out.engine, cute.compiler.select(arch.shuffle_elect(mask=0x0000FFFF), 1, 0), index=row + 36)

    # named barrier 1: warp 0 produces into warp 1's rows and arrives; warp 1 waits and reads them back
    arch.barrier(barrier_id=2, number_of_threads=THREADS)
    with cute.compiler.if_(warp == 0):
        arch.stg32(out.engine, 1000 + tid, index=row + 32 * COLS + 37)
        arch.barrier_arrive(barrier_id=1, number_of_threads=THREADS)
        arch.stg32(out.engine, 7, index=row + 38)
    with cute.compiler.if_(warp == 1):
        arch.barrier(barrier_id=1, number_of_threads=THREADS)
        arch.stg32(out.engine, arch.ldg32(out.engine, "cg", index=row + 37), index=row + 38)

    # cp.async.mbarrier.arrive.noinc: every thread's arrival is counted in the initial count
    smem = arch.SmemAllocator()
    bar = smem.allocate_mbarrier()
    with cute.compiler.if_(tid == 0):
        arch.mbarrier_init(bar, THREADS)
    arch.sync_threads()
    arch.cp_async_mbarrier_arrive_noinc(bar)
    for _ in cute.range(POLL):
        with cute.compiler.if_(arch.mbarrier_try_wait(bar, 0)):
            arch.stg32(out.engine, 1, index=row + 39)


@cute.jit
def warp_builtins(inp, out):
    warp_builtins_kernel(inp, out, cute.Float32(1.5)).launch(grid=1, block=THREADS)


def expected(inp):
    """The table the kernel writes, computed in numpy from the input words."""
    src = inp.reshape(THREADS, IN_WORDS).astype(np.int64)
    t = np.arange(THREADS)
    lane, warp = t % 32, t // 32
    base = warp * 32
    out = np.full((THREADS, COLS), FILL, dtype=np.int64)
    out[:, 0:8] = src
    out[:, 8:12] = src[:, 4:8]
    out[:, 12:14] = src[:, 2:4]
    out[:, 14], out[:, 15], out[:, 16], out[:, 17] = src[:, 7], src[:, 1], src[:, 6], src[:, 5]

    out[:, 18] = base + (lane // 8) * 8 + 3
    out[:, 19] = src[base + (lane * 5) % 32, 4]
    out[:, 20] = src[base + 5, 0]
    out[:, 21] = src[base + (lane ^ 3), 1]
    out[:, 22] = src[base + np.where(lane >= 1, lane - 1, lane), 2]
    out[:, 23] = src[base + np.where(lane % 16 + 2 < 16, lane + 2, lane), 3]
    out[:, 24] = t - np.where(lane % 4 >= 3, 3, 0)
    s = base + np.where(lane < 31, lane + 1, lane)
    out[:, 25], out[:, 26] = src[s, 6], src[s, 5]
    out[:, 27] = F32_BITS

    even = (src[:, 0] & 1) == 0
    for wi in range(THREADS // 32):
        rows = slice(32 * wi, 32 * wi + 32)
        ballot = sum(1 << i for i in range(32) if even[32 * wi + i])
        out[rows, 28] = ballot - (1 << 32) if ballot >= 1 << 31 else ballot
        out[rows, 29] = int(40 in range(32 * wi, 32 * wi + 32))
        out[rows, 30] = int(all(x < 48 for x in range(32 * wi, 32 * wi + 32)))
    out[:, 31] = 1
    out[:, 32] = -1
    out[:, 33] = 0
    out[:, 34] = (lane == 0).astype(np.int64)
    out[:, 35] = -99  # any one lane per warp: checked separately
    out[:, 36] = ((lane == 0) | (lane == 16)).astype(np.int64)
    out[:, 37] = np.where(warp == 1, 1000 + t - 32, FILL)
    out[:, 38] = np.where(warp == 1, 1000 + t - 32, 7)
    out[:, 39] = 1
    return out


PTX_CHECKS = [
    "CHECK: .target sm_90a",
    "CHECK-DAG: ld.global.nc.v4.b32 {{{.*}}}, [[[A:%rd[0-9]+]]];",
    "CHECK-DAG: ld.global.nc.v4.b32 {{{.*}}}, [[[A]]+16];",
    "CHECK-DAG: st.global.wb.v4.b32 [[[B:%rd[0-9]+]]], {{{.*}}};",
    "CHECK-DAG: st.global.wb.v4.b32 [[[B]]+16], {{{.*}}};",
    "CHECK-DAG: ld.global.cg.v4.b32",
    "CHECK-DAG: ld.global.ca.v2.b32",
    "CHECK-DAG: ld.global.cv.b32",
    "CHECK-DAG: ld.global.lu.b32",
    "CHECK-DAG: st.global.cg.v4.b32",
    "CHECK-DAG: st.global.cs.v2.b32",
    "CHECK-DAG: st.global.wt.b32",
    "CHECK-DAG: shfl.sync.idx.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 5, 31, -1;",
    "CHECK-DAG: shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 3, 6175, -1;",
    "CHECK-DAG: shfl.sync.up.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1, 0, -1;",
    "CHECK-DAG: shfl.sync.down.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2, 4127, -1;",
    "CHECK-DAG: shfl.sync.up.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 3, 7168, -1;",
    "CHECK-DAG: vote.sync.ballot.b32",
    "CHECK-DAG: vote.sync.any.pred",
    "CHECK-DAG: vote.sync.all.pred",
    "CHECK-DAG: vote.sync.uni.pred",
    "CHECK-DAG: activemask.b32",
    "CHECK-DAG: elect.sync",
    "CHECK-DAG: bar.warp.sync -1;",
    "CHECK-DAG: bar.sync 2, 64;",
    "CHECK-DAG: bar.arrive 1, 64;",
    "CHECK-DAG: bar.sync 1, 64;",
    "CHECK-DAG: cp.async.mbarrier.arrive.noinc.shared.b64",
]




def test_warp_builtins_match_numpy(filecheck, assemble_ptx):
    in_spec = cute.compiler.DeviceArraySpec("Int32", (THREADS * IN_WORDS,))
    out_spec = cute.compiler.DeviceArraySpec("Int32", (THREADS, COLS))
    compiled = cute.compile(warp_builtins, in_spec, out_spec)
    filecheck(compiled.ptx, PTX_CHECKS)
    assert assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"

    torch = hopper_torch()
    pytest.importorskip("cuda.bindings.driver", reason="the launch goes through cuda-python's driver API")
    gen = torch.Generator(device="cpu").manual_seed(2024)
    host_in = torch.randint(-(1 << 31), (1 << 31) - 1, (THREADS * IN_WORDS,), dtype=torch.int64, generator=gen)
    inp = host_in.to(torch.int32).cuda()
    out = torch.full((THREADS, COLS), FILL, dtype=torch.int32, device="cuda")
    warp_builtins(inp, out)
    torch.cuda.synchronize()
    got = out.cpu().numpy().astype(np.int64)
    want = expected(inp.cpu().numpy())

    elected = got[:, COLUMNS["elect_one_sync()"][0]].reshape(-1, 32)
    assert set(np.unique(elected)) <= {0, 1} and list(elected.sum(axis=1)) == [1] * (THREADS // 32), \
        f"elect_one_sync must elect exactly one lane per warp, got {elected.tolist()}"
    wrong = []
    for name, cols in COLUMNS.items():
        if name == "elect_one_sync()":
            continue
        for c in cols:
            bad = np.nonzero(got[:, c] != want[:, c])[0]
            if bad.size:
                t = bad[0]
                wrong.append(f"{name} (column {c}): {bad.size} threads differ, e.g. thread {t}: got {got[t, c]}, "
                             f"want {want[t, c]}")
    assert not wrong, "\n".join(wrong)
