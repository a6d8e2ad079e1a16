"""On a Hopper GPU: ``cute_py.pipeline`` at work.

- kernel 11 (examples/warp_specialized_copy.py: a producer warp's multicast TMA loads through a
  ``PipelineTmaAsync``, consumer warps scaling into TMA stores through a ``PipelineTmaStore``) on shapes with many
  tiles per CTA and fewer stages than tiles (the phases wrap many times), into a poisoned ``dst``, against torch;
- a ``PipelineAsync`` between producer warps that write shared memory with plain stores and consumer warps, and a
  ``PipelineCpAsync`` whose producers load with cp.async, each against torch;
- a ``PipelineState`` advanced in run-time loops and branches, its values stored and compared with a model.

The PTX of every kernel is built and assembled first, everywhere."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py import arch, pipeline  # noqa: E402
from cute_py.compiler import DeviceArraySpec  # noqa: E402
from cute_py.nvgpu import cpasync  # noqa: E402
from examples.warp_specialized_copy import warp_specialized_copy  # noqa: E402
from _tma_copy_check import hopper_torch, torch_dtype  # noqa: E402

pytestmark = pytest.mark.gpu

# (dtype, (M, N), tile, stages, cluster, out_stages, swizzle, max_clusters): few clusters, so each CTA walks many
# tiles through fewer stages; N not a multiple of the tile's columns (a clipped edge tile)
EXAMPLE_CASES = [
    ("Float32", (512, 1000), (64, 64), 3, 2, 2, "none", 2),      # 128 tiles, 64 per cluster, 3 stages
    ("BFloat16", (256, 1024), (64, 64), 2, 2, 1, "128B", 3),     # 64 tiles over 3 clusters (uneven)
    ("Float16", (512, 512), (128, 64), 4, 4, 2, "128B", 1),      # one cluster of 4 CTAs walks all 32 tiles
    ("Float32", (384, 320), (32, 32), 2, 1, 3, "128B", 5),       # no cluster: local releases
    ("BFloat16", (128, 4096), (64, 128), 4, 2, 2, "none", 4),
    ("Float32", (64, 64), (64, 64), 4, 2, 2, "none", None),      # a single tile: fewer tiles than stages
]
EXAMPLE_IDS = [f"{d}-{s[0]}x{s[1]}-t{t[0]}x{t[1]}-st{st}-cl{cl}-out{o}-{sw}"
               for d, s, t, st, cl, o, sw, _ in EXAMPLE_CASES]


def _spec(dtype, shape, cluster):
    m, n = shape
    return DeviceArraySpec(dtype, (m, n)), DeviceArraySpec(dtype, (cluster * m, n))


@pytest.mark.parametrize("case", EXAMPLE_CASES, ids=EXAMPLE_IDS)
def test_warp_specialized_copy_ptx_assembles(case, assemble_ptx):
    dtype, shape, tile, stages, cluster, out_stages, swizzle, max_clusters = case
    c = cute.compile(warp_specialized_copy, *_spec(dtype, shape, cluster), None, tile, stages, cluster, out_stages,
                     swizzle, max_clusters)
    assert ("multicast::cluster" in c.ptx) == (cluster > 1)
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"


@pytest.mark.parametrize("case", EXAMPLE_CASES, ids=EXAMPLE_IDS)
def test_warp_specialized_copy_matches_torch(case):
    torch = hopper_torch()
    dtype, shape, tile, stages, cluster, out_stages, swizzle, max_clusters = case
    t = torch_dtype(torch, dtype)
    m, n = shape
    g = torch.Generator(device="cuda").manual_seed(m * 31 + n)
    src = (torch.randn(shape, generator=g, device="cuda") * 8).to(t)
    scales = tuple(float(v) for v in (0.5, -3.0, 1.25, 2.0)[:cluster])
    # guard rows around dst: poisoned, and must stay so
    buf = torch.full((cluster * m + 2, n), float("nan"), dtype=t, device="cuda")
    dst = buf[1:cluster * m + 1]
    warp_specialized_copy(src, dst, scales, tile, stages, cluster, out_stages, swizzle, max_clusters)
    torch.cuda.synchronize()
    assert torch.isnan(buf[0]).all() and torch.isnan(buf[-1]).all()
    # one Float32 multiply, rounded once to the output type
    want = torch.cat([(src.float() * s).to(t) for s in scales])
    bad = (dst.view(torch.int16 if t != torch.float32 else torch.int32)
           != want.view(torch.int16 if t != torch.float32 else torch.int32))
    assert int(bad.sum()) == 0, f"{int(bad.sum())} wrong elements, first at {bad.nonzero()[:4].tolist()}"


def test_warp_specialized_copy_runs_again_with_other_data():
    # a second launch of the compiled kernel: no state survives between launches
    torch = hopper_torch()
    src = torch.randn((256, 512), device="cuda")
    for k in range(3):
        x = src + k
        dst = torch.full((512, 512), float("nan"), device="cuda")
        warp_specialized_copy(x, dst, (1.0, 2.0), (64, 64), 2, 2, 2, "none", 2)
        torch.cuda.synchronize()
        assert torch.equal(dst, torch.cat([x, x * 2]))


# -- PipelineAsync / PipelineCpAsync: producer warps and consumer warps ---------------------------------------

PRODUCER_WARPS = 2
CONSUMER_WARPS = 2
P_THREADS = 32 * PRODUCER_WARPS
C_THREADS = 32 * CONSUMER_WARPS


@cute.kernel
def async_pipeline_kernel(src, dst, tile, stages, tiles, mode):
    """Row ``b`` of ``src`` (``tiles`` tiles of ``tile`` Float32) through a ``stages``-deep pipeline:
    ``dst[b, i * tile + e] = 2 * src[b, i * tile + e] + i`` (the producers double, the consumers add the tile
    number, so a stage read in the wrong round shows)."""
    tidx, _, _ = arch.thread_idx()
    b, _, _ = arch.block_idx()
    warp = arch.make_warp_uniform(arch.warp_idx())
    smem = arch.SmemAllocator()
    buf = smem.allocate_tensor(cute.Float32, cute.Layout((tile, stages)))
    bars = smem.allocate_mbarrier(2 * stages)
    producers = pipeline.CooperativeGroup(pipeline.Agent.Warp, PRODUCER_WARPS)
    consumers = pipeline.CooperativeGroup(pipeline.Agent.Thread, C_THREADS)
    if mode == "cp_async":
        pipe = pipeline.PipelineCpAsync.create(num_stages=stages, producer_group=producers, consumer_group=consumers,
                                               barrier_storage=bars)
    else:
        pipe = pipeline.PipelineAsync.create(num_stages=stages, producer_group=producers, consumer_group=consumers,
                                             barrier_storage=bars)
    row = src[b, None]
    out = dst[b, None]
    if warp < PRODUCER_WARPS:
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
        for i in range(tiles):
            pipe.producer_acquire(state)
            stage = buf[None, state.index]
            if mode == "cp_async":
                # 16-byte cp.async copies of the raw values; the consumers double them
                atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cute.Float32, num_bits_per_copy=128)
                for k in cute.range_constexpr(tile // (4 * P_THREADS)):
                    v = tidx + k * P_THREADS
                    cute.copy(atom, cute.local_tile(row, (4,), (i * (tile // 4) + v,)),
                              cute.local_tile(stage, (4,), (v,)))
            else:
                for k in cute.range_constexpr(tile // P_THREADS):
                    e = tidx + k * P_THREADS
                    stage[e] = row[i * tile + e] * 2.0
            pipe.producer_commit(state)
            state.advance()
        pipe.producer_tail(state)
    else:
        ctid = tidx - P_THREADS
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        for i in range(tiles):
            pipe.consumer_wait(state)
            stage = buf[None, state.index]
            for k in cute.range_constexpr(tile // C_THREADS):
                e = ctid + k * C_THREADS
                x = stage[e]
                if mode == "cp_async":
                    x = x * 2.0
                out[i * tile + e] = x + i.to(cute.Float32)
            pipe.consumer_release(state)
            state.advance()


@cute.jit
def async_pipeline(src, dst, tile, stages, mode):
    rows, n = src.shape
    async_pipeline_kernel(src, dst, tile, stages, n // tile, mode).launch(grid=rows, block=P_THREADS + C_THREADS)


ASYNC_CASES = [("st_shared", 2, 256), ("st_shared", 3, 128), ("st_shared", 4, 512), ("cp_async", 2, 256),
               ("cp_async", 3, 512), ("cp_async", 4, 1024)]


def _async_spec(tile):
    return DeviceArraySpec("Float32", (3, 37 * tile))


@pytest.mark.parametrize("mode, stages, tile", ASYNC_CASES)
def test_async_pipeline_ptx_assembles(mode, stages, tile, assemble_ptx):
    c = cute.compile(async_pipeline, _async_spec(tile), _async_spec(tile), tile, stages, mode)
    ptx = c.ptx
    assert ptx.count("mbarrier.init.shared") == 2 * stages
    if mode == "cp_async":
        assert "cp.async.mbarrier.arrive.noinc.shared" in ptx and "cp.async.ca.shared.global" in ptx
    else:
        assert "mbarrier.arrive.shared" in ptx
    assert assemble_ptx(ptx)[:4] == b"\x7fELF"


@pytest.mark.parametrize("mode, stages, tile", ASYNC_CASES)
def test_async_pipeline_matches_torch(mode, stages, tile):
    torch = hopper_torch()
    g = torch.Generator(device="cuda").manual_seed(stages * 1000 + tile)
    src = torch.randn((3, 37 * tile), generator=g, device="cuda")
    dst = torch.full_like(src, float("nan"))
    async_pipeline(src, dst, tile, stages, mode)
    torch.cuda.synchronize()
    i = torch.arange(37, device="cuda", dtype=torch.float32).repeat_interleave(tile)
    want = src * 2 + i
    assert torch.equal(dst, want), int((dst != want).sum())


# -- PipelineState values after run-time loops -----------------------------------------------------------------


@cute.kernel
def state_kernel(out, n, stages):
    tidx, _, _ = arch.thread_idx()
    state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
    for i in range(n):
        state.advance()
        if i % 3 == 2:
            state.advance()
    if tidx == 0:
        out[0] = state.index
        out[1] = state.phase
        out[2] = state.count


@cute.jit
def state_host(out, n: cute.Int32, stages):
    state_kernel(out, n, stages).launch(grid=1, block=32)


@pytest.mark.parametrize("stages", [1, 2, 3, 5])
def test_state_values_after_run_time_loops(stages):
    torch = hopper_torch()
    out = torch.zeros(3, dtype=torch.int32, device="cuda")
    for n in (0, 1, 2, 3, 7, 50, 1001):
        state_host(out, n, stages)
        torch.cuda.synchronize()
        k = n + n // 3   # one advance per iteration, a second every third
        assert out.tolist() == [k % stages, 1 ^ ((k // stages) % 2), k], (n, out.tolist())
