"""On a Hopper GPU: the ``cute_py.arch`` indices of a cluster launch (with their CuTe DSL meanings), a
non-portable cluster of 16 CTAs, loop-carried values, and the cubin of loops split for unrolling (the PTX an
old nvJitLink crashed on) loaded by the driver.

Each test builds and checks its PTX first (everywhere); the launch needs a CUDA device (sm_90) and torch and is
skipped with the reason otherwise.
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

GRID, BLOCK, CLUSTER = (4, 2, 1), (16, 4, 1), (2, 2, 1)
THREADS = BLOCK[0] * BLOCK[1]
BLOCKS = GRID[0] * GRID[1]
COLS = ["bx", "by", "bz", "cx", "cy", "cz", "ncx", "ncy", "ncz", "ix", "iy", "iz", "dx", "dy", "dz", "rank", "size",
        "warp", "lane", "tid"]


@cute.kernel
def indices_kernel(out):
    tx, ty, tz = arch.thread_idx()
    bx, by, bz = arch.block_idx()
    tid = tx + ty * BLOCK[0]
    row = (bx + by * GRID[0]) * THREADS + tid
    values = (arch.block_idx() + arch.cluster_idx() + arch.cluster_dim() + arch.block_in_cluster_idx()
              + arch.block_in_cluster_dim() + (arch.block_idx_in_cluster(), arch.cluster_size(), arch.warp_idx(),
                                               arch.lane_idx(), tid))
    for c, v in enumerate(values):
        out[row, c] = v


@cute.jit
def indices(out):
    indices_kernel(out).launch(grid=GRID, block=BLOCK, cluster=CLUSTER)


def expected_indices():
    rows = []
    for by in range(GRID[1]):
        for bx in range(GRID[0]):
            for ty in range(BLOCK[1]):
                for tx in range(BLOCK[0]):
                    tid = tx + ty * BLOCK[0]
                    ix, iy = bx % CLUSTER[0], by % CLUSTER[1]
                    rows.append([bx, by, 0, bx // CLUSTER[0], by // CLUSTER[1], 0,
                                 GRID[0] // CLUSTER[0], GRID[1] // CLUSTER[1], 1, ix, iy, 0, *CLUSTER,
                                 ix + iy * CLUSTER[0], CLUSTER[0] * CLUSTER[1], tid // 32, tid % 32, tid])
    return np.array(rows, dtype=np.int64)


def test_cluster_indices_have_the_dsl_meanings(filecheck, assemble_ptx):
    spec = cute.compiler.DeviceArraySpec("Int32", (BLOCKS * THREADS, len(COLS)))
    compiled = cute.compile(indices, spec)
    filecheck(compiled.ptx, ["CHECK-DAG: %nclusterid.x", "CHECK-DAG: %cluster_ctaid.y", "CHECK-DAG: %cluster_nctaid.x",
                             "CHECK-DAG: %cluster_ctarank", "CHECK-DAG: %cluster_nctarank", "CHECK-DAG: %clusterid.x",
                             "CHECK-DAG: %tid.y"])
    assert assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"

    torch = hopper_torch()
    out = torch.full((BLOCKS * THREADS, len(COLS)), -1, dtype=torch.int32, device="cuda")
    indices(out)
    torch.cuda.synchronize()
    got = out.cpu().numpy().astype(np.int64)
    want = expected_indices()
    wrong = [f"{name}: got {got[np.nonzero(got[:, c] != want[:, c])[0][0], c]}, want "
             f"{want[np.nonzero(got[:, c] != want[:, c])[0][0], c]} (row {np.nonzero(got[:, c] != want[:, c])[0][0]})"
             for c, name in enumerate(COLS) if (got[:, c] != want[:, c]).any()]
    assert not wrong, "\n".join(wrong)


@cute.kernel
def rank_kernel(out):
    bx, _, _ = arch.block_idx()
    out[bx, 0] = arch.block_idx_in_cluster()
    out[bx, 1] = arch.cluster_size()


@cute.jit
def ranks(out):
    rank_kernel(out).launch(grid=32, block=32, cluster=16, non_portable_cluster=True)


def test_a_non_portable_cluster_of_16_ctas_launches_with_the_opt_in(assemble_ptx):
    compiled = cute.compile(ranks, cute.compiler.DeviceArraySpec("Int32", (32, 2)))
    (ln,) = compiled.launches
    assert ln.cluster == (16, 1, 1) and ln.non_portable_cluster
    assert assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"

    torch = hopper_torch()
    out = torch.full((32, 2), -1, dtype=torch.int32, device="cuda")
    ranks(out)
    torch.cuda.synchronize()
    got = out.cpu().numpy()
    assert got[:, 0].tolist() == [i % 16 for i in range(32)] and got[:, 1].tolist() == [16] * 32


@cute.kernel
def carried_sum_kernel(out, n):
    loop = cute.range(0, 4, carry=(0,))
    for i, (x,) in loop:
        loop.next(x + i)
    (x,) = loop.result
    out[0] = x
    loop = cute.range(n, carry=(0,))
    for i, (x,) in loop:
        loop.next(x + i)
    (x,) = loop.result
    out[1] = x


@cute.jit
def carried_sum(out, n: cute.Int32):
    carried_sum_kernel(out, n).launch(grid=1, block=1)


def test_a_carried_sum_stores_the_sum(assemble_ptx):
    compiled = cute.compile(carried_sum, cute.compiler.DeviceArraySpec("Int32", (2,)), cute.Int32(10))
    assert assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"

    torch = hopper_torch()
    out = torch.full((2,), -1, dtype=torch.int32, device="cuda")
    carried_sum(out, 10)
    torch.cuda.synchronize()
    assert out.cpu().tolist() == [6, 45]


CASES = [(start, start + span, step, k) for start in (-7, 0, 3) for span in (0, 5, 11, -9, 23)
         for step in (1, 2, -1, -4) for k in (2, 3, 5) if span * step >= 0]


@cute.kernel
def split_loops_kernel(out, x):
    for j, (start, stop, step, unroll) in enumerate(CASES):
        loop = cute.range(start, stop, step, carry=(x, 0), unroll=unroll)
        for i, (h, count) in loop:
            loop.next(h * 31 + i, count + 1)  # an order-sensitive hash of the indices
        h, count = loop.result
        out[2 * j] = h
        out[2 * j + 1] = count


@cute.jit
def split_loops(out, x: cute.Int32):
    split_loops_kernel(out, x).launch(grid=1, block=1)


def _wrap32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def test_loops_split_for_unrolling_assemble_load_and_visit_every_index_once_in_order():
    # nvJitLink 13.0 crashed on this PTX: the assembler in use must be one that assembles it (see
    # mlir_dialects.assembler), and the driver must load and run the cubin it makes
    from mlir_dialects import assembler

    compiled = cute.compile(split_loops, cute.compiler.DeviceArraySpec("Int32", (2 * len(CASES),)), cute.Int32(1))
    assert compiled.cubin[:4] == b"\x7fELF"
    uses = assembler.assembler_in_use()
    if uses == "nvjitlink":
        assert assembler.load_nvjitlink()[1] >= assembler.MIN_NVJITLINK

    torch = hopper_torch()
    out = torch.full((2 * len(CASES),), -1, dtype=torch.int32, device="cuda")
    split_loops(out, 1)
    torch.cuda.synchronize()
    want = []
    for start, stop, step, _ in CASES:
        h = 1
        for i in range(start, stop, step):
            h = _wrap32(h * 31 + i)
        want += [h, len(range(start, stop, step))]
    assert out.cpu().tolist() == want, f"assembled with {uses}"
