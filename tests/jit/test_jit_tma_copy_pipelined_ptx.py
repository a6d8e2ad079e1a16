"""Kernel 2 (persistent, pipelined TMA tiled copy) compiles to PTX with its pipeline, and assembles for sm_90a."""

import pytest

import cute_py as cute
from examples import tma_tiled as examples
from examples import pipelined_grid, tma_copy_pipelined

# (dtype, shape, tile, swizzle, stages, lag, max_ctas)
CASES = [
    ("Float32", (8192, 8192), (64, 128), "none", 4, 1, None),  # ~63 tiles per CTA on 132 SMs
    ("Float32", (1000, 1000), (64, 64), "none", 3, 2, 7),
    ("BFloat16", (1024, 1536), (128, 64), "128B", 2, 1, 5),
    ("Float32", (300, 200), (32, 32), "128B", 4, 3, 3),
]
IDS = [f"{d}-{s[0]}x{s[1]}-tile{t[0]}x{t[1]}-{sw}-st{st}-lag{lag}" for d, s, t, sw, st, lag, _ in CASES]


def _compile(dtype, shape, tile, swizzle, stages, lag, max_ctas):
    a = cute.compiler.DeviceArraySpec(dtype, shape)
    return cute.compile(tma_copy_pipelined, a, a, tile, swizzle, stages, lag, None, max_ctas)


def _boxes(dtype, tile, swizzle):
    eb = 4 if dtype == "Float32" else 2
    return 1 if swizzle == "none" else tile[1] * eb // 128


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_pipelined_copy_ptx_has_the_pipeline(filecheck, assemble, case):
    dtype, shape, tile, swizzle, stages, lag, max_ctas = case
    c = _compile(*case)
    name = "tma_copy_pipelined_kernel_0"
    lines = [
        "CHECK: .extern .shared .align 1024 .b8 __cute_py_dyn_smem[];",
        f"CHECK: .entry {name}(",
        f"CHECK: .param .align 64 .b8 {name}_param_0[128]",
        f"CHECK: .param .align 64 .b8 {name}_param_1[128]",
        "CHECK: elect.sync",
        "CHECK: mov.u32 {{%r[0-9]+}}, %ctaid.x;",
    ]
    lines += ["CHECK: mbarrier.init.shared{{(::cta)?}}.b64"] * stages
    lines += ["CHECK: fence.mbarrier_init.release.cluster;"]
    # the prologue loads the first stages (the later ones may be folded away for few tiles)
    lines += ["CHECK: mbarrier.arrive.expect_tx.shared{{(::cta)?}}.b64",
              "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"]
    # the steady state: wait for the stage's phase, store it, then refill a stage whose store has read it
    lines += ["CHECK: mbarrier.try_wait.parity.shared{{(::cta)?}}.b64",
              "CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
              "CHECK: cp.async.bulk.commit_group;",
              f"CHECK: cp.async.bulk.wait_group.read {lag};",
              "CHECK: mbarrier.arrive.expect_tx.shared{{(::cta)?}}.b64",
              "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
              # the loop's back edge, then every store group has read shared memory before exit
              "CHECK: bra.uni",
              "CHECK: cp.async.bulk.wait_group.read 0;",
              "CHECK: ret;"]
    filecheck(c.ptx, lines)
    assert assemble(c.ptx)[:4] == b"\x7fELF"
    assert c.cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_pipelined_copy_unrolls_the_stages_with_static_smem_and_counts(case):
    dtype, shape, tile, swizzle, stages, lag, max_ctas = case
    c = _compile(*case)
    ptx = c.ptx
    boxes = _boxes(dtype, tile, swizzle)
    tiles = -(-shape[0] // tile[0]) * -(-shape[1] // tile[1])
    grid = c.launches[0].grid
    assert grid == (min(tiles, max_ctas or tiles, pipelined_grid(tiles, c.smem["tma_copy_pipelined_kernel_0"])), 1, 1)
    # one wait / store group / bulk wait per unrolled stage (+1 final wait), at most 2 load sites per stage
    assert ptx.count("mbarrier.try_wait.parity") == stages
    assert ptx.count("cp.async.bulk.commit_group;") == stages
    assert ptx.count("cp.async.bulk.wait_group.read") == stages + 1
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == stages * boxes
    assert boxes <= ptx.count("cp.async.bulk.tensor.2d.shared::cluster") <= 3 * stages * boxes  # LLVM may duplicate
    assert ptx.count("mbarrier.init.shared") == stages
    eb = 4 if dtype == "Float32" else 2
    tile_bytes = tile[0] * tile[1] * eb
    align = 1024 if swizzle == "128B" else 128
    step = -(-tile_bytes // align) * align
    assert c.smem == {"tma_copy_pipelined_kernel_0": step * (stages - 1) + tile_bytes + 8 * stages}


def test_pipelined_copy_grid_is_persistent_and_bounded():
    assert pipelined_grid(10_000, 32 * 1024 * 4, sms=132) == 132           # 128 KB: one CTA per SM
    assert pipelined_grid(10_000, 32 * 1024 * 3, sms=132) == 264           # 96 KB: two
    assert pipelined_grid(10_000, 32 * 1024 * 3, ctas_per_sm=3, sms=132) == 396
    assert pipelined_grid(20, 1024, sms=132) == 20                         # never more CTAs than tiles
    assert examples.sm_count() >= 1


def test_pipelined_copy_more_tiles_than_ctas_runs_a_loop_with_round_parity():
    c = _compile("Float32", (4096, 4096), (64, 64), "none", 2, 1, 16)
    assert c.launches[0].grid == (16, 1, 1)
    ptx = c.ptx
    # the phase parity is the round's low bit, computed in the loop (not a constant 0)
    assert "mbarrier.try_wait.parity.shared.b64 P1, [%r" in ptx
    # every stage has a prologue load and a refill load in the loop (LLVM may duplicate a block)
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster") >= 4
    assert ptx.count("mbarrier.arrive.expect_tx") == ptx.count("cp.async.bulk.tensor.2d.shared::cluster")


def test_pipelined_copy_with_no_more_tiles_than_stages_has_no_refill():
    a = cute.compiler.DeviceArraySpec("Float32", (64, 128))
    c = cute.compile(tma_copy_pipelined, a, a, (64, 64), "none", 4, 1)
    assert c.launches[0].grid == (2, 1, 1)
    assert c.ptx.count("cp.async.bulk.tensor.2d.shared::cluster") == 1  # tile bx, in stage 0 only
    assert c.ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == 1


@pytest.mark.parametrize("stages,lag", [(1, 1), (9, 1), (3, 0), (3, 3), ("2", 1)])
def test_pipelined_copy_rejects_bad_pipelines(stages, lag):
    a = cute.compiler.DeviceArraySpec("Float32", (256, 256))
    with pytest.raises(cute.CuteValueError, match="stages|lag"):
        cute.compile(tma_copy_pipelined, a, a, (64, 64), "none", stages, lag)


def test_pipelined_copy_mlir_has_a_runtime_loop_and_the_dialect_ops():
    a = cute.compiler.DeviceArraySpec("Float32", (1024, 1024))
    c = cute.compile(tma_copy_pipelined, a, a, (64, 64), "none", 3, 1, None, 8)
    text = c.mlir
    assert "cute_nvgpu.tma_load" in text and "cute_nvgpu.tma_store" in text
    assert "llvm.cond_br" in text and "nvvm.grid_constant" in text


def test_pipelined_copy_l2_hint_adds_a_cache_policy_to_every_tma(assemble):
    a = cute.compiler.DeviceArraySpec("Float32", (1 << 14, 256))
    c = cute.compile(tma_copy_pipelined, a, a, (64, 256), "none", 3, 1, None, None, "evict_first")
    tma = [ln for ln in c.ptx.splitlines() if "cp.async.bulk.tensor" in ln]
    assert tma and all(".L2::cache_hint" in ln for ln in tma)
    assert str(0x12F0000000000000) in c.ptx or "0x12F0000000000000" in c.ptx.upper().replace("0X", "0x")
    assemble(c.ptx)
    with pytest.raises(cute.CuteValueError, match="l2_hint"):
        cute.compile(tma_copy_pipelined, a, a, (64, 256), "none", 3, 1, None, None, "evict_sometimes")
