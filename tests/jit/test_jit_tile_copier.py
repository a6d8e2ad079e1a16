"""GenericToSharedAsyncTileCopier in kernels: the PTX of a few configurations (FileCheck) assembled for sm_90a --
cp.async of 4, 8 and 16 bytes, the zero-fill form with a run-time src-size, the L2 cache-hint form per eviction
policy, the branch around threads past the thread layout, the lane index with WARP scope -- and the rules a
kernel adds (num_threads against the launch)."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError
from cute_py.nvgpu.cpasync import EvictionPolicy, GenericToSharedAsyncTileCopier, ThreadScope

pytest.importorskip("numba_cuda_mlir", reason="compiling needs the MLIR bindings (the jit extra)")


def compile_copy(copier, dtype="Float16", tile=(16, 64), block=None, bounded=False, src_rows=None):
    rows, cols = tile

    @cute.kernel
    def k(src, n):
        s = arch.SmemAllocator().allocate_tensor(src.element_type, cute.Layout(tile, (cols, 1)), byte_alignment=128)
        g = src if cute.const_expr(src_rows is not None) else cute.local_tile(src, tile, (0, 0))
        if cute.const_expr(bounded):
            copier.copy_bounded(s, g, n)
        else:
            copier.copy(s, g)
        arch.cp_async_commit_group()
        arch.cp_async_wait_group(0)

    def host(src, n: cute.Int32):
        k(src, n).launch(grid=1, block=block or copier.num_threads)

    spec = cute.compiler.DeviceArraySpec(dtype, (src_rows or rows, cols))
    return cute.compile(host, spec, 3)


@pytest.mark.parametrize("dtype, vbytes, modifier", [("Float16", 16, "cg"), ("Float16", 8, "ca"),
                                                     ("Float32", 4, "ca")])
def test_each_cp_async_size(dtype, vbytes, modifier, filecheck, assemble):
    c = GenericToSharedAsyncTileCopier(thread_layout=cute.Layout((8, 8), (8, 1)), vector_bytes=vbytes)
    compiled = compile_copy(c, dtype)
    # 16 x 64 elements over 64 threads: 16 * 64 * elem / vbytes / 64 vectors per thread
    per_thread = 16 * 64 * (2 if dtype == "Float16" else 4) // vbytes // 64
    assert compiled.ptx.count("cp.async.") - compiled.ptx.count("cp.async.commit") \
        - compiled.ptx.count("cp.async.wait") == per_thread
    filecheck(compiled.ptx, [f"CHECK: cp.async.{modifier}.shared.global [{{{{%rd?[0-9]+}}}}], "
                             f"[{{{{%rd[0-9]+}}}}], {vbytes};",
                             "CHECK-NOT: L2::cache_hint", "CHECK-NOT: createpolicy",
                             "CHECK: cp.async.commit_group;", "CHECK: cp.async.wait_group 0;"])
    assert "%laneid" not in compiled.ptx
    assemble(compiled.ptx)


def test_masked_copies_take_a_run_time_src_size(filecheck, assemble):
    c = GenericToSharedAsyncTileCopier(thread_layout=cute.Layout((8, 8), (8, 1)), masked=True)
    compiled = compile_copy(c, bounded=True)
    filecheck(compiled.ptx, ["CHECK: setp.{{[a-z]+}}.{{[su]}}32 [[P:%p[0-9]+]]",
                             "CHECK: selp.b32 [[N:%r[0-9]+]], 16, 0, [[P]];",
                             "CHECK: cp.async.cg.shared.global [{{%rd?[0-9]+}}], [{{%rd[0-9]+}}], 16, [[N]];",
                             "CHECK: cp.async.cg.shared.global [{{%rd?[0-9]+}}], [{{%rd[0-9]+}}], 16, {{%r[0-9]+}};"])
    assemble(compiled.ptx)


def test_a_static_partial_tile_zero_fills_its_missing_rows_statically(filecheck):
    c = GenericToSharedAsyncTileCopier(thread_layout=cute.Layout((8, 8), (8, 1)), masked=True)
    compiled = compile_copy(c, src_rows=8)  # copy() of the whole 8-row src: the bound is 8; the 2nd vector row is 8..15
    filecheck(compiled.ptx, ["CHECK: cp.async.cg.shared.global [{{%rd?[0-9]+}}], [{{%rd[0-9]+}}], 16{{(, 16)?}};",
                             "CHECK: cp.async.cg.shared.global [{{%rd?[0-9+]+}}], [{{%rd[0-9+]+}}], 16, 0;"])
    assert "selp" not in compiled.ptx and "setp" not in compiled.ptx


@pytest.mark.parametrize("policy", [EvictionPolicy.FIRST, EvictionPolicy.LAST])
def test_eviction_policies_use_a_created_l2_policy(policy, filecheck, assemble):
    c = GenericToSharedAsyncTileCopier(thread_layout=cute.Layout((8, 8), (8, 1)), masked=True,
                                       eviction_policy=policy)
    compiled = compile_copy(c, bounded=True)
    name = {EvictionPolicy.FIRST: "evict_first", EvictionPolicy.LAST: "evict_last"}[policy]
    filecheck(compiled.ptx, [f"CHECK: createpolicy.fractional.L2::{name}.b64 [[POL:%rd[0-9]+]], 1.0;",
                             "CHECK: cp.async.cg.shared.global.L2::cache_hint [{{%rd?[0-9]+}}], [{{%rd[0-9]+}}], 16, "
                             "{{%r[0-9]+}}, [[POL]];",
                             "CHECK: cp.async.cg.shared.global.L2::cache_hint [{{%rd?[0-9]+}}], [{{%rd[0-9]+}}], 16, "
                             "{{%r[0-9]+}}, [[POL]];"])
    assert compiled.ptx.count("createpolicy") == 1
    assemble(compiled.ptx)


def test_threads_past_the_layout_branch_around_the_copy(filecheck, assemble):
    c = GenericToSharedAsyncTileCopier(thread_layout=cute.Layout((8, 8), (8, 1)), num_threads=96)
    compiled = compile_copy(c)
    filecheck(compiled.ptx, ["CHECK: mov.u32 [[T:%r[0-9]+]], %tid.x;",
                             "CHECK: setp.{{[a-z]+}}.u32 [[P:%p[0-9]+]], [[T]], {{63|64}};",
                             "CHECK: @[[P]] bra [[SKIP:\\$L__BB[0-9_]+]];",
                             "CHECK: cp.async.cg.shared.global",
                             "CHECK: [[SKIP]]:", "CHECK-NEXT: cp.async.commit_group;"])
    assemble(compiled.ptx)
    # exactly the layout's threads: no branch
    full = compile_copy(GenericToSharedAsyncTileCopier(thread_layout=cute.Layout((8, 8), (8, 1))))
    assert "bra" not in full.ptx


def test_warp_scope_uses_the_lane(filecheck, assemble):
    c = GenericToSharedAsyncTileCopier(thread_layout=cute.Layout((4, 8), (8, 1)), thread_scope=ThreadScope.WARP)
    compiled = compile_copy(c, block=64)  # two warps: both copy the same tile (same data, same places)
    filecheck(compiled.ptx, ["CHECK: %laneid;", "CHECK: cp.async.cg.shared.global"])
    assert "%tid.x" not in compiled.ptx
    assemble(compiled.ptx)


def test_num_threads_must_match_the_launch():
    c = GenericToSharedAsyncTileCopier(thread_layout=cute.Layout((8, 8), (8, 1)), num_threads=96)
    with pytest.raises(TraceError, match=r"num_threads=96, but the kernel is launched with 128 threads"):
        compile_copy(c, block=128)


@pytest.mark.parametrize("policy", [EvictionPolicy.FIRST, EvictionPolicy.LAST])
@pytest.mark.parametrize("nvjitlink", [(13, 0), (13, 5)])
def test_the_fallback_assembler_gets_the_eviction_policy_copies_without_the_l2_hint(policy, nvjitlink, monkeypatch,
                                                                                  filecheck):
    """ptxas and nvJitLink older than 13.5 miscompile cp.async's .L2::cache_hint (an illegal instruction at run
    time): under such an assembler the copies are assembled without the hint (a performance hint only), with a
    warning naming the fix; nvJitLink 13.5 gets them as traced."""
    from mlir_dialects import assembler

    monkeypatch.setitem(assembler._STATE, "choice", None)
    monkeypatch.setitem(assembler._STATE, "warned", set())
    monkeypatch.delenv("MLIR_DIALECTS_ASSEMBLER", raising=False)
    monkeypatch.setattr(assembler, "_loaded_version", lambda: nvjitlink)
    monkeypatch.setattr(assembler, "find_ptxas", lambda: "/opt/ptxas")
    monkeypatch.setattr(assembler, "ptxas_version", lambda path: (13, 0))
    sent = []
    monkeypatch.setattr(assembler, "_ptxas", lambda path, data, arch: sent.append(data.decode()) or b"\x7fELF")
    monkeypatch.setattr(assembler, "_nvjitlink_in_process", lambda data, arch: sent.append(data.decode()) or b"\x7fELF")
    c = GenericToSharedAsyncTileCopier(thread_layout=cute.Layout((8, 8), (8, 1)), masked=True, eviction_policy=policy)
    if nvjitlink < (13, 5):
        with pytest.warns(assembler.AssemblerWarning, match=r"cp\.async with \.L2::cache_hint into code reading two "
                                                            r"uniform registers.*nvidia-nvjitlink>=13\.5\.37"):
            compiled = compile_copy(c, bounded=True)
    else:
        compiled = compile_copy(c, bounded=True)
    (assembled,) = sent
    assert assembler.prepare(compiled.ptx)[0] == assembled
    if nvjitlink < (13, 5):
        assert "L2::cache_hint" not in assembled
        filecheck(assembled, ["CHECK: cp.async.cg.shared.global [{{%rd?[0-9]+}}], [{{%rd[0-9]+}}], 16, {{%r[0-9]+}};",
                              "CHECK: cp.async.cg.shared.global [{{%rd?[0-9]+}}], [{{%rd[0-9]+}}], 16, {{%r[0-9]+}};"])
        assert assembled.count("cp.async.cg.") == compiled.ptx.count("cp.async.cg.")
    else:
        assert assembled == compiled.ptx and assembled.count(".L2::cache_hint") == 2
