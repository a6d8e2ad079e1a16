"""On a Hopper GPU: the values of TileLang's builtin names in ``cute_py.arch`` (logical warp indices, shuffles,
``shuffle_elect`` over thread extents, ``loop_break`` in a run-time loop), against formulas written here."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py import arch  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu

THREADS = 256
COLS = 12


@cute.kernel
def names_kernel(limits, out):
    tid = arch.thread_idx()[0]
    total = 0
    for i in range(limits[0]):
        if i >= limits[1]:
            arch.loop_break()
        total = total + i + 1
    values = (arch.get_lane_idx(16), arch.get_warp_idx(64), arch.get_warp_idx_sync(), arch.get_warp_group_idx(32, 2),
              arch.shfl_xor(tid, 1), arch.shfl_down(tid, 2), arch.shfl_up(tid, 3),
              arch.shfl_sync(0xFFFFFFFF, tid, 5, width=8), total)
    for c, v in enumerate(values):
        out[tid, c] = v
    for c, extent in ((9, 0), (10, 64), (11, 8)):
        out[tid, c] = 0
        with cute.compiler.if_(arch.shuffle_elect(extent)):
            out[tid, c] = 1


@cute.jit
def names(limits, out):
    names_kernel(limits, out).launch(grid=1, block=THREADS)


def _want(tid, n, stop):
    lane = tid % 32
    total = sum(i + 1 for i in range(min(n, stop)))
    return [tid % 16, tid // 64, tid // 32, tid // 64,
            tid ^ 1, tid + 2 if lane + 2 < 32 else tid, tid - 3 if lane >= 3 else tid,
            (tid // 8) * 8 + 5, total,
            int(tid == 0), int(tid % 64 == 0), int(tid % 8 == 0)]


@pytest.mark.parametrize("n, stop", [(10, 4), (10, 20), (0, 3), (7, 0)])
def test_builtin_names_compute_their_formulas(n, stop):
    spec = cute.compiler.DeviceArraySpec
    ptx = cute.compile(names, spec("Int32", (2,)), spec("Int32", (THREADS, COLS))).ptx  # built first, everywhere
    assert "shfl.sync.bfly.b32" in ptx and "activemask.b32" in ptx
    torch = hopper_torch()
    limits = torch.tensor([n, stop], dtype=torch.int32, device="cuda")
    out = torch.full((THREADS, COLS), -7, dtype=torch.int32, device="cuda")
    names(limits, out)
    torch.cuda.synchronize()
    got = out.cpu().tolist()
    for tid in range(THREADS):
        assert got[tid] == _want(tid, n, stop), f"thread {tid}"


@cute.kernel
def ring_kernel(data, out, rounds: cute.Int32):
    bx = arch.block_idx()[0]
    nb = arch.grid_dim()[0]
    tid = arch.thread_idx()[0]
    for r in range(rounds):
        if tid == 0:
            data[r, bx] = bx * 1000 + r
        arch.sync_grid()
        if tid == 0:
            out[r, bx] = data[r, (bx + 1) % nb]  # written by another block before the barrier
        arch.sync_global()


@cute.jit
def ring(data, out, rounds: cute.Int32, blocks: cute.Constexpr):
    ring_kernel(data, out, rounds).launch(grid=blocks, block=128)


def test_sync_grid_orders_every_block_around_each_barrier():
    spec = cute.compiler.DeviceArraySpec
    ptx = cute.compile(ring, spec("Int32", (8, 264)), spec("Int32", (8, 264)), cute.Int32(8), 264).ptx
    assert "%envreg1" in ptx
    torch = hopper_torch()
    from cute_py.compiler.runtime import launch as L

    blocks = 2 * 132
    for rounds in (1, 8):
        data = torch.full((8, blocks), -1, dtype=torch.int32, device="cuda")
        out = torch.full((8, blocks), -1, dtype=torch.int32, device="cuda")
        ring(data, out, rounds, blocks)
        torch.cuda.synchronize()
        want = [[((b + 1) % blocks) * 1000 + r if r < rounds else -1 for b in range(blocks)] for r in range(8)]
        assert out.cpu().tolist() == want
    most = L.resident_blocks(cute.compile(ring, data, out, cute.Int32(1), blocks)._funcs["ring_kernel_0"], 128, 0)
    out.fill_(-1)
    with pytest.raises(cute.compiler.LaunchError, match="needs every block resident at once"):
        ring(data, out, 1, most + 1)
    torch.cuda.synchronize()
    assert bool((out == -1).all())  # the refused launch ran nothing


@cute.kernel
def descriptor_kernel(fields, out):
    i = arch.thread_idx()[0]
    out[i] = arch.initialize_tcgen05_descriptor(None, fields[i, 0], fields[i, 1], fields[i, 2], 3, True, 4)


@cute.jit
def descriptors(fields, out):
    descriptor_kernel(fields, out).launch(grid=1, block=64)


def _bits(addr, lbo, sbo):
    """The tcgen05 descriptor from the PTX ISA's field table (base offset 3, absolute mode, 64B swizzle)."""
    return (((addr % (1 << 18)) >> 4) | ((lbo >> 4) % (1 << 14)) << 16 | ((sbo >> 4) % (1 << 14)) << 32 | 1 << 46
            | 3 << 49 | 1 << 52 | 4 << 61)


def test_run_time_tcgen05_descriptors_have_the_ptx_isa_bits():
    spec = cute.compiler.DeviceArraySpec
    cute.compile(descriptors, spec("Int32", (64, 3)), spec("Uint64", (64,)))  # built first, everywhere
    torch = hopper_torch()
    import random

    rng = random.Random(7)
    rows = [[rng.randrange(0, 1 << 24) & ~15, rng.randrange(0, 1 << 18) & ~15, rng.randrange(0, 1 << 18) & ~15]
            for _ in range(64)]
    fields = torch.tensor(rows, dtype=torch.int32, device="cuda")
    out = torch.zeros(64, dtype=torch.uint64, device="cuda")
    descriptors(fields, out)
    torch.cuda.synchronize()
    got = [v & (1 << 64) - 1 for v in out.view(torch.int64).cpu().tolist()]
    assert got == [_bits(*r) for r in rows]


def test_a_blackwell_compile_is_refused_on_hopper_with_the_target_named():
    spec = cute.compiler.DeviceArraySpec
    c = cute.compile(descriptors, spec("Int32", (64, 3)), spec("Uint64", (64,)), options="--gpu-arch sm_100a")
    torch = hopper_torch()
    fields = torch.zeros((64, 3), dtype=torch.int32, device="cuda")
    out = torch.zeros(64, dtype=torch.uint64, device="cuda")
    with pytest.raises(cute.compiler.LaunchError, match=r"compiled for sm_100a \(compute capability 10\.0\); this "
                                                        r"device has compute capability 9\.0: compile it with "
                                                        r"--gpu-arch sm_90a"):
        c(fields, out)


@cute.kernel
def wgmma_descriptor_kernel(fields, out):
    i = arch.thread_idx()[0]
    d = arch.initialize_wgmma_descriptor(None, fields[i, 0], 1, fields[i, 1], fields[i, 2])
    out[i] = arch.increase_descriptor_offset(d, fields[i, 3])


@cute.jit
def wgmma_descriptors(fields, out):
    wgmma_descriptor_kernel(fields, out).launch(grid=1, block=64)


def test_run_time_wgmma_descriptors_have_the_ptx_isa_bits():
    spec = cute.compiler.DeviceArraySpec
    cute.compile(wgmma_descriptors, spec("Int32", (64, 4)), spec("Uint64", (64,)))  # built first, everywhere
    torch = hopper_torch()
    import random

    rng = random.Random(11)
    rows = [[rng.randrange(0, 1 << 18) & ~15, rng.randrange(0, 1 << 14), rng.randrange(0, 1 << 14),
             rng.randrange(0, 1 << 12) & ~15] for _ in range(64)]
    fields = torch.tensor(rows, dtype=torch.int32, device="cuda")
    out = torch.zeros(64, dtype=torch.uint64, device="cuda")
    wgmma_descriptors(fields, out)
    torch.cuda.synchronize()
    got = [v & (1 << 64) - 1 for v in out.view(torch.int64).cpu().tolist()]
    want = []
    for start, lbo, sbo, step in rows:
        d = (start >> 4) & 0x3FFF | lbo << 16 | sbo << 32 | 1 << 62
        want.append((d & ~0xFFFFFFFF) | (((d & 0xFFFFFFFF) + (step >> 4)) & 0xFFFFFFFF))
    assert got == want


def _sm70_kernel(acc_t):
    @cute.kernel
    def k(vals, out):
        t = arch.thread_idx()[0]
        a = cute.make_fragment(cute.make_layout(4), cute.Float16)
        b = cute.make_fragment(cute.make_layout(4), cute.Float16)
        c = cute.make_fragment(cute.make_layout(8), acc_t)
        for i in cute.range_constexpr(4):
            a[i] = vals[0].to(cute.Float16)
            b[i] = vals[1].to(cute.Float16)
        for i in cute.range_constexpr(8):
            c[i] = vals[2].to(acc_t)
        arch.ptx_mma_sm70("m16n16k4", "row", "col", "fp16", "fp16", "fp32" if acc_t is cute.Float32 else "fp16",
                          a, 0, b, 0, c, 0)
        for i in cute.range_constexpr(8):
            out[t, i] = c[i].to(cute.Float32)

    @cute.jit
    def host(vals, out):
        k(vals, out).launch(grid=1, block=32)

    return host


@pytest.mark.parametrize("acc", ["Float32", "Float16"])
def test_ptx_mma_sm70_adds_the_k4_products_to_every_accumulator(acc):
    # with A and B uniform the fragment order does not matter: every D element is c + 4 * a * b
    host = _sm70_kernel(getattr(cute, acc))
    spec = cute.compiler.DeviceArraySpec
    assert "mma.sync.aligned.m8n8k4" in cute.compile(host, spec("Float32", (3,)), spec("Float32", (32, 8))).ptx
    torch = hopper_torch()
    for a, b, c in ((1.0, 2.0, 0.5), (-0.75, 1.5, 3.0), (0.125, -4.0, -1.0)):
        vals = torch.tensor([a, b, c], dtype=torch.float32, device="cuda")
        out = torch.full((32, 8), float("nan"), dtype=torch.float32, device="cuda")
        host(vals, out)
        torch.cuda.synchronize()
        assert bool((out == c + 4 * a * b).all()), (a, b, c, out)
