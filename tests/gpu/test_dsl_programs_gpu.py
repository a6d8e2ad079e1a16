"""Four programs written with the CuTe DSL's API exactly as its public examples use it (tests/dsl_programs: the
Ampere elementwise add, a TMA load/store tutorial-style class, an asynchronous producer/consumer pipeline, and the
data-movement half of a Hopper GEMM with multicast TMA in 2x2 clusters and a pipeline), importing cute_py in
place of the DSL and changing nothing else.

Everywhere: their imports are the porting guide's, every DSL name they use is one the guide calls the same,
and each compiles to PTX that nvJitLink assembles for sm_90a. On a Hopper GPU: each runs into poisoned, guarded
buffers and matches torch bit for bit."""

import ast
import pathlib
import re
import sys

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.compiler import DeviceArraySpec  # noqa: E402
from tests.dsl_programs import async_pipeline, elementwise_add, gemm_mainloop, tma_load_store  # noqa: E402
from _tma_copy_check import hopper_torch, torch_dtype  # noqa: E402

pytestmark = pytest.mark.gpu

TESTS = pathlib.Path(__file__).resolve().parents[1]
PROGRAMS = sorted((TESTS / "dsl_programs").glob("[a-z]*.py"))
sys.path.insert(0, str(TESTS))
import porting_names as pn  # noqa: E402


# -- the programs are DSL programs -------------------------------------------------------------------------------


def _imports(tree):
    return [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_there_are_four_programs():
    assert [p.stem for p in PROGRAMS] == ["async_pipeline", "elementwise_add", "gemm_mainloop", "tma_load_store"]


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_a_program_imports_cute_py_only_as_the_porting_guide_maps_the_dsl(path):
    allowed = set(pn.import_statements(pn.DOC_FILE.read_text()))
    tree = ast.parse(path.read_text())
    nested = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    for stmt in nested:
        if "cute_py" in stmt:
            assert stmt in allowed, f"{path.name}: {stmt!r} is not an import of the porting guide's table"
        else:
            assert stmt.startswith(("from typing import", "import torch")), f"{path.name}: {stmt!r}"


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_every_dsl_name_a_program_uses_is_the_same_in_cute_py(path):
    # attribute chains on the DSL's module aliases, matched to the guide's rows by their longest prefix
    rows = {r[0]: r[1] for r in pn.read_table(pn.DOC_FILE.read_text())}
    aliases = {"cute", "cutlass", "utils", "pipeline", "cpasync", "sm90_utils", "testing", "cutlass_torch"}
    tree = ast.parse(path.read_text())
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    used = {".".join(c) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and id(n) not in inner
            for c in [pn._dotted(n)] if c and c[0] in aliases}
    assert len(used) > 10
    for name in sorted(used):
        parts = name.split(".")
        row = next((".".join(parts[:k]) for k in range(len(parts), 1, -1) if ".".join(parts[:k]) in rows), None)
        assert row is not None, f"{path.name} uses {name}, which the porting guide does not list"
        assert rows[row] == "same", f"{path.name} uses {name}: the guide says {rows[row]}"


# -- compiled to PTX everywhere ------------------------------------------------------------------------------------


def _ops(ptx, *patterns):
    return {p: len(re.findall(re.escape(p), ptx)) for p in patterns}


@pytest.mark.parametrize("dtype", ["Float32", "Float16", "BFloat16"])
def test_elementwise_add_compiles(dtype, assemble_ptx):
    specs = [DeviceArraySpec(dtype, (257, 129))] * 3
    c = cute.compile(elementwise_add.elementwise_add, *specs)
    width = 32 if dtype == "Float32" else 16
    assert re.search(rf"ld\.global(\.v\d)?\.b{width}", c.ptx) and re.search(rf"st\.global(\.v\d)?\.b{width}", c.ptx)
    assert "dsl_program_elementwise_add" in c.ptx     # the kernel's name prefix
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"


def test_tma_load_store_compiles(assemble_ptx):
    c = cute.compile(tma_load_store.TmaTileCopy((64, 64)), DeviceArraySpec("Float16", (200, 136)),
                     DeviceArraySpec("Float16", (200, 136)))
    assert _ops(c.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "mbarrier.init.shared.b64",
                "cp.async.bulk.wait_group.read") == dict.fromkeys(
        ["cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
         "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "mbarrier.init.shared.b64",
         "cp.async.bulk.wait_group.read"], 1)
    assert "elect.sync" in c.ptx                      # the warp's copy is issued by one lane
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"


def test_async_pipeline_compiles(assemble_ptx):
    spec = DeviceArraySpec("Float32", (3, 256 * 9))
    c = cute.compile(async_pipeline.PipelinedRowScale(stages=3), spec, spec, cute.Float32(1.5))
    assert c.ptx.count("mbarrier.init.shared.b64") == 6   # full and empty barriers of 3 stages
    assert "mbarrier.try_wait.parity.shared.b64" in c.ptx and "mbarrier.arrive.shared.b64" in c.ptx
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"


GEMM_CASES = [  # (M, N, K, cluster_shape_mn, ab_stage)
    ((448, 256, 480), (2, 2), 4),      # K not a multiple of 64 (TMA zero-fills), 8 k-tiles through 4 stages
    ((300, 512, 1024), (2, 2), 3),     # a whole CTA row past M (the grid rounds up to the cluster)
    ((256, 256, 192), (2, 1), 2),      # B multicast only
    ((128, 384, 320), (1, 2), 5),      # A multicast only, more stages than k-tiles
    ((256, 128, 640), (1, 1), 4),      # no cluster
]
GEMM_IDS = [f"{m}x{n}x{k}-cl{c[0]}x{c[1]}-st{s}" for (m, n, k), c, s in GEMM_CASES]


def _gemm_specs(m, n, k, cluster):
    tiles_m = -(-(-(-m // 128)) // cluster[0]) * cluster[0]
    tiles_n = -(-(-(-n // 128)) // cluster[1]) * cluster[1]
    return (DeviceArraySpec("Float16", (m, k)), DeviceArraySpec("Float16", (n, k)),
            DeviceArraySpec("Float32", (tiles_n, m, 64)), DeviceArraySpec("Float32", (tiles_m, n, 64)))


@pytest.mark.parametrize("shape, cluster, stages", GEMM_CASES, ids=GEMM_IDS)
def test_gemm_mainloop_compiles(shape, cluster, stages, assemble_ptx):
    prog = gemm_mainloop.HopperMainloop(cluster_shape_mn=cluster, ab_stage=stages)
    c = cute.compile(prog, *_gemm_specs(*shape, cluster))
    multicasts = c.ptx.count(".multicast::cluster")
    assert multicasts == (cluster[0] > 1) + (cluster[1] > 1)
    assert c.ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile") == 2
    assert c.ptx.count("mbarrier.init.shared.b64") == 2 * stages
    assert ("mbarrier.arrive.release.cta.shared::cluster.b64" in c.ptx) == (cluster != (1, 1))
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"


# -- run on a Hopper GPU -------------------------------------------------------------------------------------------


def _same_bits(torch, got, want):
    view = {2: torch.int16, 4: torch.int32}[got.element_size()]
    bad = got.contiguous().view(view) != want.contiguous().view(view)
    return int(bad.sum())


@pytest.mark.parametrize("dtype", ["Float32", "Float16", "BFloat16", "Int32"])
@pytest.mark.parametrize("shape", [(3, 12), (100, 72), (257, 129), (1024, 512)])
def test_elementwise_add_runs_into_a_guarded_buffer(dtype, shape):
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n = shape
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n)
    if dtype == "Int32":
        a, b = (torch.randint(-1000, 1000, shape, generator=g, device="cuda", dtype=t) for _ in range(2))
        poison = torch.full((m + 2, n + 8), -7, dtype=t, device="cuda")
    else:
        a, b = ((torch.randn(shape, generator=g, device="cuda") * 4).to(t) for _ in range(2))
        poison = torch.full((m + 2, n + 8), float("nan"), dtype=t, device="cuda")
    c = poison[1:m + 1, 4:n + 4]          # a strided view: row stride n + 8, offset 4 elements
    guard = poison.clone()
    from cute_py.runtime import from_dlpack
    elementwise_add.elementwise_add(from_dlpack(a), from_dlpack(b), from_dlpack(c))
    torch.cuda.synchronize()
    assert _same_bits(torch, c, a + b) == 0
    outside = torch.ones_like(poison, dtype=torch.bool)
    outside[1:m + 1, 4:n + 4] = False
    assert _same_bits(torch, poison[outside], guard[outside]) == 0, "a write outside the tensor"


def test_elementwise_add_run_and_benchmark_as_the_dsl_example_does():
    torch = hopper_torch()
    (a, b, c), us = elementwise_add.run(1024, 2048, cute.Float16, benchmark=True)
    assert torch.equal(c, a + b)
    assert us > 0
    (a, b, c), _ = elementwise_add.run(129, 65, cute.Float32, wrap=False)   # torch tensors passed directly
    assert torch.equal(c, a + b)


@pytest.mark.parametrize("dtype, shape, tile", [("Float16", (200, 136), (64, 64)), ("Float32", (128, 96), (32, 64)),
                                                ("BFloat16", (64, 64), (64, 64)), ("Float32", (65, 36), (16, 32))])
def test_tma_load_store_copies_every_element_and_nothing_else(dtype, shape, tile):
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    m, n = shape
    per16 = 16 // torch.empty((), dtype=t).element_size()
    pad = (-n) % per16 + per16                      # TMA needs 16-byte row strides: views into padded rows
    src = (torch.randn((m, n + pad), device="cuda") * 100).to(t)[:, :n]
    poison = torch.full((m + 2, n + pad), float("nan"), dtype=t, device="cuda")
    dst = poison[1:m + 1, :n]
    guard = poison.clone()
    tma_load_store.run(src, dst, tile)
    torch.cuda.synchronize()
    assert _same_bits(torch, dst, src) == 0
    outside = torch.ones_like(poison, dtype=torch.bool)
    outside[1:m + 1, :n] = False
    assert _same_bits(torch, poison[outside], guard[outside]) == 0, "a write outside the tensor"


def test_tma_load_store_refuses_an_unaligned_view_before_the_launch():
    torch = hopper_torch()
    src = torch.randn((65, 33), device="cuda")                 # 132-byte rows
    dst = torch.full((67, 33), float("nan"), device="cuda")[1:66]
    with pytest.raises(cute.CuteValueError, match="is not 16-byte aligned as claimed"):
        tma_load_store.run(src, dst, (16, 32))
    assert torch.isnan(dst).all()
    # a row of 33 floats cannot be TMA-stored without writing past it (whole 16-byte granules): an error, not a write
    src, dst = (torch.randn((64, 36), device="cuda")[:, :33] for _ in range(2))
    with pytest.raises(cute.CuteError, match="writes whole 16-byte granules"):
        tma_load_store.run(src, dst, (16, 32))


@pytest.mark.parametrize("config", [dict(), dict(stages=2, tile=128), dict(stages=4, producer_warps=2,
                                                                          consumer_warps=4, tile=512)],
                         ids=["3-stages", "2-stages", "4-stages-2p4c"])
@pytest.mark.parametrize("scale", [-2.0, 0.5])
def test_async_pipeline_matches_torch(config, scale):
    torch = hopper_torch()
    tile = config.get("tile", 256)
    rows, tiles = 5, 23
    src = torch.randn((rows, tiles * tile), device="cuda")
    dst = torch.full_like(src, float("nan"))
    async_pipeline.run(src, dst, scale, **config)
    torch.cuda.synchronize()
    k = torch.arange(tiles, device="cuda", dtype=torch.float32).repeat_interleave(tile)
    assert _same_bits(torch, dst, src * scale + k) == 0   # the scales are powers of two: one rounding either way


@pytest.mark.parametrize("shape, cluster, stages", GEMM_CASES, ids=GEMM_IDS)
def test_gemm_mainloop_delivers_every_tile_to_every_cta(shape, cluster, stages):
    torch = hopper_torch()
    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randint(-8, 8, (m, k), generator=g, device="cuda").half()
    b = torch.randint(-8, 8, (n, k), generator=g, device="cuda").half()
    _, _, sa, sb = _gemm_specs(m, n, k, cluster)
    sum_a = torch.full(sa.shape, float("nan"), device="cuda")
    sum_b = torch.full(sb.shape, float("nan"), device="cuda")
    gemm_mainloop.run(a, b, sum_a, sum_b, cluster_shape_mn=cluster, ab_stage=stages)
    torch.cuda.synchronize()
    kt = -(-k // 64)

    def tile_sums(x):   # the k-tiles of x summed (the last one zero-filled past K), exact in float32
        padded = torch.zeros((x.shape[0], kt * 64), device="cuda")
        padded[:, :k] = x.float()
        return padded.view(x.shape[0], kt, 64).sum(1)

    want_a, want_b = tile_sums(a), tile_sums(b)
    for j in range(sa.shape[0]):
        assert torch.equal(sum_a[j], want_a), f"CTA column {j}: the A tiles it received differ"
    for i in range(sb.shape[0]):
        assert torch.equal(sum_b[i], want_b), f"CTA row {i}: the B tiles it received differ"
