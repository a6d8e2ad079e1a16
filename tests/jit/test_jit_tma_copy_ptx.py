"""Kernel 1 (TMA tiled copy) compiles to PTX with the expected TMA, mbarrier and bulk-group instructions, and assembles."""

import pytest

import cute_py as cute
from examples import tma_copy

CASES = [("Float32", "none", (128, 64)), ("Float32", "128B", (128, 64)), ("BFloat16", "none", (64, 128)),
         ("BFloat16", "128B", (128, 64))]


def _compile(dtype, swizzle, tile):
    a = cute.compiler.DeviceArraySpec(dtype, (256, 512))
    return cute.compile(tma_copy, a, a, tile, swizzle)


@pytest.mark.parametrize("typestr,swizzle,tile", CASES)
def test_tma_copy_ptx_has_tma_load_mbarrier_and_tma_store(filecheck, assemble, typestr, swizzle, tile):
    c = _compile(typestr, swizzle, tile)
    filecheck(c.ptx, [
        "CHECK: .extern .shared .align 1024 .b8 __cute_py_dyn_smem[];",
        "CHECK: .entry tma_copy_kernel_0(",
        "CHECK: .param .align 64 .b8 tma_copy_kernel_0_param_0[128]",
        "CHECK: elect.sync",
        "CHECK: mbarrier.init.shared{{(::cta)?}}.b64",
        "CHECK: mbarrier.arrive.expect_tx.shared{{(::cta)?}}.b64",
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "CHECK: mbarrier.try_wait.parity.shared{{(::cta)?}}.b64",
        "CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
        "CHECK: cp.async.bulk.commit_group;",
        "CHECK: cp.async.bulk.wait_group.read 0;",
    ])
    assert assemble(c.ptx)[:4] == b"\x7fELF"
    assert c.cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("typestr,swizzle,tile", CASES)
def test_tma_copy_issues_one_tma_per_box_and_allocates_the_tile(typestr, swizzle, tile):
    c = _compile(typestr, swizzle, tile)
    eb = 4 if typestr == "Float32" else 2
    tile_bytes = tile[0] * tile[1] * eb
    inner = tile[1] * eb if swizzle == "none" else 128
    boxes = tile_bytes // (inner * tile[0]) if swizzle == "128B" else 1
    ptx = c.ptx
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster") == boxes
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == boxes
    # the tile, then the 8-byte mbarrier
    assert c.smem == {"tma_copy_kernel_0": tile_bytes + 8}


def test_tma_copy_mlir_carries_the_user_source_locations(fake):
    c = cute.compile(tma_copy, fake((256, 512)), fake((256, 512)), (128, 64), "none")
    text = c.mlir
    assert "tma_copy_kernel_0" in text
    assert "cute_nvgpu.tma_load" in text and "cute_nvgpu.tma_store" in text
    assert "!llvm.array<16 x i64>" in text and "nvvm.grid_constant" in text


@pytest.mark.parametrize("typestr,swizzle,tile", CASES[:2])
def test_each_tma_instruction_is_issued_by_one_elected_lane_of_the_lanes_running_it(filecheck, typestr, swizzle,
                                                                                   tile):
    # as in the CuTe DSL, a TMA copy run by a whole warp is issued once; electing among the active lanes (not all
    # 32) keeps a copy under elect_one() or a one-thread branch issued once as well, with no hang
    filecheck(_compile(typestr, swizzle, tile).ptx, [
        "CHECK: activemask.b32 [[MASK:%r[0-9]+]];",
        "CHECK: elect.sync{{[[:space:]]+}}{{%r[0-9]+}}|[[P:%p[0-9]+]], [[MASK]];",
        "CHECK: @{{!?}}[[P]] bra",
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global",
        "CHECK: activemask.b32 [[MASK2:%r[0-9]+]];",
        "CHECK: elect.sync{{[[:space:]]+}}{{%r[0-9]+}}|{{%p[0-9]+}}, [[MASK2]];",
        "CHECK: cp.async.bulk.tensor.2d.global.shared::cta",
    ])
