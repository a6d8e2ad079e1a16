"""The low-level device operations of ``cute_py.nvgpu.cpasync`` inside traced kernels: each emits its PTX."""

import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError
from cute_py.nvgpu import cpasync
from examples import smem_tile_layout

F = cute.compiler.DeviceArraySpec
TILE = (64, 32)


@cute.kernel
def _low_level_kernel(atom, store_atom, src, flag):
    tidx, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    s_tile = smem.allocate_tensor(atom.dtype, smem_tile_layout(atom.dtype, TILE, "none"))
    bar = smem.allocate_mbarrier()
    cpasync.prefetch_descriptor(atom)
    desc = cpasync.extract_tensormap_ptr(atom)
    with arch.elect_one():
        arch.mbarrier_init(bar, 1)
        arch.mbarrier_arrive_and_expect_tx(bar, 64 * 32 * 4)
        cpasync.tma_load(atom, bar, s_tile.engine, (0, tidx))          # the atom's descriptor
        cpasync.tma_load(desc, bar, s_tile.engine + 1024, (32, 0))     # the same, by address
        arch.mbarrier_wait(bar, 0)
        cpasync.tma_store(store_atom, s_tile.engine, (0, 0))
        cpasync.tma_store_arrive()
        cpasync.tma_store_wait(0, read=True)
    # cp.async forms: 16 bytes per thread, a static and a run-time zero-fill predicate
    cpasync.cp_async_gs(16, s_tile.engine + 4 * tidx, src.engine + 4 * tidx)
    cpasync.cp_async_gs_conditional(16, s_tile.engine + 4 * tidx, src.engine + 4 * tidx, tidx < flag)
    cpasync.cp_async_gs_conditional(16, s_tile.engine + 4 * tidx, src.engine + 4 * tidx, False)
    cpasync.cp_async_shared_global(s_tile.engine + 2 * tidx, src.engine + 2 * tidx, 8, cpasync.LoadCacheMode.ALWAYS)
    arch.cp_async_commit_group()
    arch.cp_async_wait_group(1)
    cpasync.fence_tma_desc_release()


@cute.jit
def _low_level(src, dst, flag: cute.Int32):
    smem = smem_tile_layout(src.element_type, TILE, "none")
    atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, smem, TILE)
    store_atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dst, smem, TILE)
    _low_level_kernel(atom, store_atom, src, flag).launch(grid=1, block=64)


def test_low_level_forms_emit_their_ptx(filecheck, assemble):
    c = cute.compile(_low_level, F("Float32", (256, 256)), F("Float32", (256, 256)), 7)
    ptx = c.ptx
    filecheck(ptx, [
        "CHECK: prefetch.tensormap",
        "CHECK: mbarrier.init",
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
        "CHECK: cp.async.bulk.commit_group;",
        "CHECK: cp.async.bulk.wait_group.read 0;",
        "CHECK: fence.proxy.tensormap::generic.release.gpu;",
    ])
    # four cp.async: cg 16 (no src-size), cg 16 with a run-time src-size, cg 16 with src-size 0, ca 8
    cps = re.findall(r"cp\.async\.(ca|cg)\.shared\.global \[[^]]+\], \[[^]]+\], (\d+)(, [^;]+)?;", ptx)
    assert sorted((m, int(n), bool(extra)) for m, n, extra in cps) == [
        ("ca", 8, False), ("cg", 16, False), ("cg", 16, True), ("cg", 16, True)]
    assert re.search(r"cp\.async\.wait_group\s+1;", ptx)
    assemble(ptx)


@cute.kernel
def _bad_kernel(atom, which):
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(atom.dtype, smem_tile_layout(atom.dtype, TILE, "none"))
    bar = smem.allocate_mbarrier()
    if which == "coords":
        cpasync.tma_load(atom, bar, s.engine, (0, 0, 0, 0, 0, 0))
    elif which == "mask":
        cpasync.tma_load(atom, bar, s.engine, (0, 0), mcast_mask=1 << 16)
    elif which == "cp_size":
        cpasync.cp_async_shared_global(s.engine, s.engine, 12, cpasync.LoadCacheMode.ALWAYS)
    elif which == "wait":
        cpasync.tma_store_wait(64)


@cute.jit
def _bad(src, which):
    smem = smem_tile_layout(src.element_type, TILE, "none")
    atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, smem, TILE)
    _bad_kernel(atom, which).launch(grid=1, block=32)


@pytest.mark.parametrize("which,match", [("coords", "1..5 entries"), ("mask", "16-bit mask"),
                                         ("cp_size", "src must point to gmem"), ("wait", "0..63")])
def test_low_level_forms_reject_bad_arguments(which, match):
    with pytest.raises(cute.CuteError, match=match):
        cute.compile(_bad, F("Float32", (256, 256)), which)


def test_device_ops_outside_a_kernel_say_they_need_one():
    with pytest.raises(cpasync.DeviceOnlyError, match="inside a kernel"):
        cpasync.tma_store_arrive()
    with pytest.raises(TraceError, match="inside a @cute_py.kernel"):
        arch.cluster_sync()


@cute.kernel
def _update_kernel(atom, other, which):
    smem = arch.SmemAllocator()
    slot = smem.allocate(128, alignment=128)
    cpasync.copy_tensormap(atom, slot)
    if which == "dtype":
        cpasync.update_tma_descriptor(atom, other, slot)
    elif which == "smem":
        cpasync.update_tma_descriptor(atom, smem.allocate_tensor(atom.dtype, cute.Layout((64, 32), (32, 1))), slot)
    elif which == "box":
        cpasync.update_tma_descriptor(atom, other, slot)


@cute.jit
def _update(src, other, which):
    smem = smem_tile_layout(src.element_type, TILE, "none")
    atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, smem, TILE)
    _update_kernel(atom, other, which).launch(grid=1, block=32)


@pytest.mark.parametrize("other,which,match", [
    (F("BFloat16", (128, 128)), "dtype", "BFloat16 elements differ from the atom's Float32"),
    (F("Float32", (128, 128)), "smem", "needs a global-memory tensor"),
    (F("Float32", (128, 128), strides=(1, 128)), "box", "the contiguous TMA dim has gmem stride 128"),
])
def test_update_tma_descriptor_rejects_what_the_descriptor_cannot_describe(other, which, match):
    with pytest.raises(cute.CuteError, match=match):
        cute.compile(_update, F("Float32", (256, 256)), other, which)


def test_update_tma_descriptor_replaces_only_what_changes(filecheck):
    c = cute.compile(_update, F("Float32", (256, 256)), F("Float32", (100, 256)), "dtype")
    filecheck(c.ptx, [
        "CHECK: tensormap.replace.tile.global_address.shared::cta.b1024.b64",
        "CHECK-NOT: global_stride",
        "CHECK: tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [{{%r[0-9]+}}], 1, {{%r[0-9]+}};",
        "CHECK-NOT: tensormap.replace",
        "CHECK: ret;",
    ])
