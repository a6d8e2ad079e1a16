"""TileLang's builtin names in ``cute_py.arch``: every name of that surface listed (present, or knowingly absent
with the reason), the PTX each alias or behaviour becomes, assembly with nvJitLink, and the errors of their
rules. Values computed on a GPU are checked in tests/gpu/test_arch_names_gpu.py."""

import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError

# the 52 functions of TileLang's ``language.builtin`` surface, in its order
TILELANG_BUILTINS = (
    "access_ptr create_tma_descriptor tma_load fence_proxy_async tma_store_arrive tma_store_wait set_max_nreg "
    "inc_max_nreg dec_max_nreg annotate_producer_reg_dealloc annotate_consumer_reg_alloc no_set_max_nreg "
    "disable_warp_group_reg_alloc ptx_arrive_cluster_barrier mbarrier_wait_parity mbarrier_arrive mbarrier_expect_tx "
    "warpgroup_arrive warpgroup_commit_batch warpgroup_wait get_lane_idx get_warp_idx_sync get_warp_idx "
    "get_warp_group_idx shuffle_elect warpgroup_fence_operand wait_wgmma barrier_wait barrier_arrive shfl_xor "
    "shfl_down shfl_up sync_threads sync_warp shfl_sync sync_global sync_grid initialize_wgmma_descriptor "
    "initialize_tcgen05_descriptor increase_descriptor_offset loop_break cp_async_barrier_noinc tcgen05_mma_arrive "
    "ptx_mma_sm70 ldg32 ldg64 ldg128 ldg256 stg32 stg64 stg128 stg256").split()
# every name is offered
NOT_YET = {}


def test_every_builtin_name_is_in_cute_py_arch_or_listed_as_not_yet_offered():
    assert len(TILELANG_BUILTINS) == 52 and len(set(TILELANG_BUILTINS)) == 52
    present = {n for n in TILELANG_BUILTINS if hasattr(arch, n)}
    assert set(TILELANG_BUILTINS) - present == set(NOT_YET)
    assert present <= set(arch.__all__)


def compile_kernel(kernel_fn, n=1024, block=128, cluster=None):
    def host(inp, out):
        kernel_fn(inp, out).launch(grid=2 if cluster else 1, block=block, **({"cluster": cluster} if cluster else {}))

    spec = cute.compiler.DeviceArraySpec("Int32", (n,))
    return cute.compile(host, spec, spec)


def test_logical_warp_indices(filecheck, assemble):
    @cute.kernel
    def k(inp, out):
        tid = arch.thread_idx()[0]
        out[tid] = arch.get_lane_idx(16)
        out[tid + 128] = arch.get_warp_idx(64)
        out[tid + 256] = arch.get_warp_idx_sync()
        out[tid + 384] = arch.get_warp_group_idx(32, 2)
        out[tid + 512] = arch.get_lane_idx() + arch.get_warp_idx()

    c = compile_kernel(k)
    filecheck(c.ptx, [
        "CHECK: mov.u32 [[TID:%r[0-9]+]], %tid.x;",
        "CHECK-DAG: and.b32 {{%r[0-9]+}}, [[TID]], 15;",
        "CHECK-DAG: shr.u32 {{%r[0-9]+}}, [[TID]], 6;",
        "CHECK-DAG: shr.u32 [[W:%r[0-9]+]], [[TID]], 5;",
        "CHECK-DAG: shfl.sync.idx.b32 {{%r[0-9]+}}, [[W]], 0, 31, -1;",
        "CHECK-DAG: mov.u32 {{%r[0-9]+}}, %laneid;",
    ])
    assemble(c.ptx)


def test_shuffles_under_their_other_names(filecheck):
    @cute.kernel
    def k(inp, out):
        tid = arch.thread_idx()[0]
        v = inp[tid]
        out[tid] = arch.shfl_xor(v, 1) + arch.shfl_down(v, 2) + arch.shfl_up(v, 3) + \
            arch.shfl_sync(0xFFFFFFFF, v, 5, width=8)

    filecheck(compile_kernel(k).ptx, [
        "CHECK-DAG: shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1, 31, -1;",
        "CHECK-DAG: shfl.sync.down.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2, 31, -1;",
        "CHECK-DAG: shfl.sync.up.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 3, 0, -1;",
        "CHECK-DAG: shfl.sync.idx.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 5, 6175, -1;",  # (32 - 8) << 8 | 31
    ])


def test_mbarrier_names_fences_and_barrier_arrive_on_an_mbarrier(filecheck, assemble):
    @cute.kernel
    def k(inp, out):
        smem = arch.SmemAllocator()
        bar = smem.allocate_mbarrier()
        with arch.elect_one():
            arch.mbarrier_init(bar, 2)
        arch.mbarrier_init_fence()
        arch.sync_threads()
        arch.barrier_arrive(bar)
        arch.cp_async_barrier_noinc(bar)
        arch.ptx_arrive_cluster_barrier(bar, 1)
        arch.fence_proxy_async()
        arch.mbarrier_wait_parity(bar, 0)
        arch.barrier_wait(bar, 1)

    c = compile_kernel(k, cluster=(2, 1, 1))
    filecheck(c.ptx, [
        "CHECK: mbarrier.init.shared{{(::cta)?}}.b64",
        "CHECK: mbarrier.arrive.shared{{(::cta)?}}.b64",
        "CHECK: cp.async.mbarrier.arrive.noinc.shared{{(::cta)?}}.b64",
        "CHECK: mapa.shared::cluster",
        "CHECK: mbarrier.arrive.release.cta.shared::cluster.b64",
        "CHECK: fence.proxy.async.shared::cta;",
        "CHECK: mbarrier.try_wait.parity",
        "CHECK: mbarrier.try_wait.parity",
    ])
    assemble(c.ptx)


def test_barrier_arrive_takes_an_mbarrier_or_a_named_barrier_not_both():
    @cute.kernel
    def k(inp, out):
        bar = arch.SmemAllocator().allocate_mbarrier()
        arch.barrier_arrive(bar, barrier_id=1, number_of_threads=64)

    with pytest.raises(TraceError, match="an mbarrier .* or barrier_id=/number_of_threads=.* not both"):
        compile_kernel(k)


def test_register_names_and_the_register_plan(filecheck, assemble):
    @cute.kernel
    def k(inp, out):
        arch.annotate_producer_reg_dealloc(40)
        arch.annotate_consumer_reg_alloc(232)
        wg = arch.warp_group_idx()
        with cute.compiler.if_(wg == 0):
            arch.warpgroup_reg_dealloc()          # the plan's 40
        with cute.compiler.if_(wg == 1):
            arch.warpgroup_reg_alloc()            # the plan's 232
        with cute.compiler.if_(wg == 2):
            arch.set_max_nreg(56, 0)
            arch.inc_max_nreg(64)
            arch.dec_max_nreg(48)

    c = compile_kernel(k, block=384)
    filecheck(c.ptx, [
        "CHECK: setmaxnreg.dec.sync.aligned.u32 40;",
        "CHECK: setmaxnreg.inc.sync.aligned.u32 232;",
        "CHECK: setmaxnreg.dec.sync.aligned.u32 56;",
        "CHECK: setmaxnreg.inc.sync.aligned.u32 64;",
        "CHECK: setmaxnreg.dec.sync.aligned.u32 48;",
    ])
    assemble(c.ptx)


@pytest.mark.parametrize("off", ["no_set_max_nreg", "disable_warp_group_reg_alloc"])
def test_a_plan_turned_off_emits_no_reallocation_and_the_defaults_are_24_and_240(off, filecheck):
    @cute.kernel
    def planned(inp, out):
        with cute.compiler.if_(arch.warp_group_idx() == 0):
            arch.warpgroup_reg_dealloc()
        with cute.compiler.if_(arch.warp_group_idx() == 1):
            arch.warpgroup_reg_alloc()

    filecheck(compile_kernel(planned, block=256).ptx, ["CHECK: setmaxnreg.dec.sync.aligned.u32 24;",
                                                       "CHECK: setmaxnreg.inc.sync.aligned.u32 240;"])

    @cute.kernel
    def off_kernel(inp, out):
        getattr(arch, off)()
        with cute.compiler.if_(arch.warp_group_idx() == 0):
            arch.warpgroup_reg_dealloc()
        with cute.compiler.if_(arch.warp_group_idx() == 1):
            arch.warpgroup_reg_alloc()
        arch.setmaxregister_decrease(32)  # an explicit count is not the plan's

    ptx = compile_kernel(off_kernel, block=256).ptx
    assert re.findall(r"setmaxnreg\.(\w+)\.sync\.aligned\.u32\s+(\d+)", ptx) == [("dec", "32")]


@pytest.mark.parametrize("call, match", [
    (lambda: arch.annotate_producer_reg_dealloc(20), "multiple of 8 in 24..256, got 20"),
    (lambda: arch.annotate_consumer_reg_alloc(250), "multiple of 8 in 24..256, got 250"),
    (lambda: arch.set_max_nreg(64, 2), "is_inc must be 1 .* or 0 .*, got 2"),
    (lambda: arch.get_lane_idx(0), "warp_size must be a positive int, got 0"),
    (lambda: arch.get_warp_group_idx(32, -1), "warps_per_group must be a positive int, got -1"),
    (lambda: arch.shuffle_elect(48), "thread_extent must be 0 .*, a multiple of 32 .* or a power of two below 32"),
    (lambda: arch.loop_break(), r"loop_break\(\) leaves the innermost loop: write it as a statement"),
])
def test_argument_rules_are_trace_errors_naming_the_value(call, match):
    @cute.kernel
    def k(inp, out):
        call()

    with pytest.raises(TraceError, match=match):
        compile_kernel(k)


def test_loop_break_is_break_in_a_run_time_loop():
    @cute.kernel
    def k(inp, out):
        tid = arch.thread_idx()[0]
        total = 0
        for i in range(inp[0]):
            if i >= inp[1]:
                arch.loop_break()
            total = total + i
        out[tid] = total

    @cute.kernel
    def no_break(inp, out):
        tid = arch.thread_idx()[0]
        total = 0
        for i in range(inp[0]):
            total = total + i
        out[tid] = total

    def exits(kernel):
        return len(re.findall(r"@!?%p\d+\s+bra", compile_kernel(kernel).ptx))

    assert exits(k) > exits(no_break)  # the break is one more exit (its values: the GPU test)


def test_shuffle_elect_thread_extents(filecheck):
    @cute.kernel
    def k(inp, out):
        tid = arch.thread_idx()[0]
        with cute.compiler.if_(arch.shuffle_elect(0)):
            out[0] = tid
        with cute.compiler.if_(arch.shuffle_elect(64)):
            out[1 + tid // 64] = tid
        with cute.compiler.if_(arch.shuffle_elect(8)):
            out[8 + tid // 8] = tid

    filecheck(compile_kernel(k).ptx, ["CHECK: activemask.b32", "CHECK: shfl.sync.idx.b32"])


def test_access_ptr_points_at_elements_and_checks_the_extent(filecheck):
    @cute.kernel
    def k(inp, out):
        t = cute.make_tensor(inp.iterator, cute.make_layout((32, 32), stride=(32, 1)))
        p = arch.access_ptr((t, (2, 3)), "r", 4)               # element (2, 3): 2 * 32 + 3
        q = arch.access_ptr((t, (5, 7)), "w", ignore_last_ndim=1, offset=1)   # (5, 0) + 1
        r = arch.access_ptr(t, "rw", extent=1024)
        out[0] = cute.make_tensor(p, cute.make_layout(4))[0]
        out[1] = cute.make_tensor(q, cute.make_layout(1))[0]
        out[2] = cute.make_tensor(r, cute.make_layout(1))[0]

    c = compile_kernel(k)
    filecheck(c.ptx, ["CHECK-DAG: ld.global.{{[a-z0-9]+}} {{%r[0-9]+}}, [{{%rd[0-9]+}}+268];",   # 67 * 4
                      "CHECK-DAG: ld.global.{{[a-z0-9]+}} {{%r[0-9]+}}, [{{%rd[0-9]+}}+644];"])   # 161 * 4

    @cute.kernel
    def bad(inp, out):
        t = cute.make_tensor(inp.iterator, cute.make_layout((32, 32), stride=(32, 1)))
        arch.access_ptr((t, (31, 30)), "r", 4)

    with pytest.raises(TraceError, match=r"elements 1022\.\.1025 lie outside the tensor's 1024 elements"):
        compile_kernel(bad)

    @cute.kernel
    def bad_mode(inp, out):
        arch.access_ptr(inp, "x")

    with pytest.raises(TraceError, match="access_type must be 'r', 'w', 'rw' or 1, 2, 3, got 'x'"):
        compile_kernel(bad_mode)


# -- grid-wide barrier ----------------------------------------------------------------------------------


@cute.kernel
def grid_kernel(inp, out):
    bx = arch.block_idx()[0]
    out[bx] = bx
    arch.sync_grid()
    out[bx + 64] = out[(bx + 1) % 8]
    arch.sync_global()


def test_sync_grid_reads_the_grid_workspace_and_makes_the_kernel_cooperative(filecheck, assemble):
    c = compile_kernel(grid_kernel)
    filecheck(c.ptx, [
        "CHECK: barrier.sync 0;",
        "CHECK: mov.b64 [[W:%[a-z_0-9]+]], {%envreg2, %envreg1};",
        "CHECK: fence.acq_rel.gpu;",
        "CHECK: atom.add.release.gpu.global.u32",
        "CHECK: ld.acquire.gpu.global.u32",
        "CHECK: barrier.sync 0;",
        "CHECK: mov.b64 {{%[a-z_0-9]+}}, {%envreg2, %envreg1};",  # the second barrier
    ])
    assemble(c.ptx)
    assert c.cooperative == {"grid_kernel_0"}
    assert compile_kernel(TestKernels.plain).cooperative == frozenset()


class TestKernels:
    @cute.kernel
    def plain(inp, out):
        out[0] = 1


def test_sync_grid_in_a_cluster_launch_is_a_trace_error():
    with pytest.raises(TraceError, match=r"sync_grid: the kernel .* is launched in clusters of \(2, 1, 1\); a "
                                         r"grid-wide barrier needs a cooperative launch without clusters"):
        compile_kernel(grid_kernel, cluster=(2, 1, 1))


def test_a_cooperative_kernel_is_launched_with_the_attribute_after_the_residency_check(monkeypatch, tmp_path):
    from cute_py.compiler.runtime import launch as L
    from tests.jit.test_jit_compiled_call import FakeDriver

    monkeypatch.setenv("CUTE_PY_CACHE_DIR", str(tmp_path))
    d = FakeDriver()
    monkeypatch.setitem(L._STATE, "driver", d)
    monkeypatch.setattr(L, "load_module", lambda cubin, kernels, *rest: (None, {n: 7 for n in kernels}))
    seen = []
    monkeypatch.setattr(L, "resident_blocks", lambda func, threads, smem: seen.append((func, threads, smem)) or 4)
    ex = []
    d.cuLaunchKernelEx = lambda cfg, func, params, extra: ex.append(cfg) or (0,)

    class Cfg:
        pass

    class Attr:
        def __init__(self):
            self.value = type("V", (), {})()
            self.value.clusterDim = type("C", (), {})()

    d.CUlaunchConfig, d.CUlaunchAttribute = Cfg, Attr
    d.CUlaunchAttributeID = type("I", (), {"CU_LAUNCH_ATTRIBUTE_COOPERATIVE": "coop",
                                           "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION": "cluster"})
    spec = cute.compiler.DeviceArraySpec("Int32", (1024,), address=1 << 20)

    @cute.jit
    def host(inp, out, blocks: cute.Constexpr):
        grid_kernel(inp, out).launch(grid=blocks, block=128)

    cute.compile(host, spec, spec, 4)(spec, spec)
    assert seen == [(7, 128, 0)] and d.calls == []
    (cfg,) = ex
    assert (cfg.gridDimX, cfg.blockDimX, cfg.numAttrs) == (4, 128, 1)
    assert cfg.attrs[0].id == "coop" and cfg.attrs[0].value.cooperative == 1
    from cute_py.errors import LaunchError

    with pytest.raises(LaunchError, match=r"a kernel that syncs its grid needs every block resident at once: "
                                          r"grid=\(5, 1, 1\) is 5 blocks, and at most 4 blocks of 128 threads"):
        cute.compile(host, spec, spec, 5)(spec, spec)
    assert len(ex) == 1  # nothing launched


def test_the_disk_cache_keeps_the_cooperative_launch(tmp_path):
    import json
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    code = ("import json, cute_py as cute\n"
            "from tests.jit.test_arch_names import compile_kernel, grid_kernel\n"
            "c = compile_kernel(grid_kernel)\n"
            "print(json.dumps([sorted(c.cooperative), cute.compiler.stats['disk_hits']]))")
    env = dict(os.environ, PYTHONPATH=str(root), CUTE_PY_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=root)
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first == [["grid_kernel_0"], 0] and second == [["grid_kernel_0"], 1]


# -- Blackwell: tcgen05 ------------------------------------------------------------------------------------


def _descriptor_bits(addr, lbo, sbo, base=0, absolute=0, swizzle=0):
    """The tcgen05 shared-memory descriptor, field by field from the PTX ISA's table (independent of cute_py)."""
    fields = [(0, 14, (addr % (1 << 18)) // 16), (16, 14, lbo // 16), (32, 14, sbo // 16), (46, 3, 0b001),
              (49, 3, base), (52, 1, absolute), (61, 3, swizzle)]
    return sum(v << lo for lo, _, v in fields)


@pytest.mark.parametrize("args", [(0x400, 16, 1024, 0, False, 2), (0x3FFF0, 0x3FFF0, 0x3FFF0, 7, True, 6),
                                  (0x10000 + 0x40, 128, 256, 1, False, 4), (0x1230, 0, 16, 0, False, 1)])
def test_a_static_tcgen05_descriptor_has_the_ptx_isa_bits(args):
    addr, lbo, sbo, base, absolute, swizzle = args

    @cute.kernel
    def k(inp, out):
        got = arch.initialize_tcgen05_descriptor(None, addr, lbo, sbo, base, absolute, swizzle)
        assert got == _descriptor_bits(addr, lbo, sbo, base, int(absolute), swizzle)
        out[0] = 0

    compile_kernel(k)


@cute.kernel
def tcgen05_kernel(inp, out):
    smem = arch.SmemAllocator()
    bar = smem.allocate_mbarrier()
    tile = smem.allocate_tensor(cute.Float16, cute.make_layout((64, 64)), byte_alignment=1024)
    lbo = inp[0]
    desc = arch.initialize_tcgen05_descriptor(None, tile.iterator, lbo, 1024, 0, False, 2)
    out[0] = desc
    arch.tcgen05_mma_arrive(bar)


def test_tcgen05_builtins_assemble_for_sm_100a_and_need_that_target(filecheck, assemble):
    spec, words = cute.compiler.DeviceArraySpec("Int32", (1024,)), cute.compiler.DeviceArraySpec("Uint64", (4,))

    @cute.jit
    def host(inp, out):
        tcgen05_kernel(inp, out).launch(grid=1, block=128)

    c = cute.compile(host, spec, words, options="--gpu-arch sm_100a")
    filecheck(c.ptx, [
        "CHECK: .version 8.6",
        "CHECK: .target sm_100a",
        "CHECK: mov.b64 {{%rd[0-9]+}}, {{[{]%r[0-9]+, %r[0-9]+[}]}};",
        "CHECK: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [{{%r[0-9]+}}];",
    ])
    assert c.cubin[:4] == b"\x7fELF" and c.arch == "sm_100a"
    with pytest.raises(TraceError, match=r"tcgen05_mma_arrive is a tcgen05 \(Blackwell\) instruction: compile with "
                                         r"options=\"--gpu-arch sm_100a\" \(this compile targets sm_90a\)"):
        cute.compile(host, spec, words)


@pytest.mark.parametrize("call, match", [
    (lambda: arch.initialize_tcgen05_descriptor(None, 0x408, 16, 16), r"start_address .* multiple of 16 .*got 1032"),
    (lambda: arch.initialize_tcgen05_descriptor(None, 0, 1 << 18, 16), r"leading_byte_offset must be a multiple "
                                                                        r"of 16 in 0\.\.262128 \(bytes\), got 262144"),
    (lambda: arch.initialize_tcgen05_descriptor(None, 0, 16, 24), "stride_byte_offset must be a multiple of 16"),
    (lambda: arch.initialize_tcgen05_descriptor(None, 0, 16, 16, 8), "base_offset must be an int in 0..7, got 8"),
    (lambda: arch.initialize_tcgen05_descriptor(None, 0, 16, 16, swizzle_mode=3), "swizzle_mode must be one of"),
])
def test_tcgen05_descriptor_rules(call, match):
    @cute.kernel
    def k(inp, out):
        call()

    with pytest.raises(TraceError, match=match):
        compile_kernel(k)


# -- Volta's mma.sync m8n8k4 ------------------------------------------------------------------------------


@pytest.mark.parametrize("c_dtype, ctext", [("fp32", "f32"), ("fp16", "f16")])
@pytest.mark.parametrize("layouts", [("row", "col"), ("col", "row")])
def test_ptx_mma_sm70_is_mma_m8n8k4_and_assembles(c_dtype, ctext, layouts, filecheck, assemble):
    acc_t = cute.Float32 if c_dtype == "fp32" else cute.Float16

    @cute.kernel
    def k(inp, out):
        a = cute.make_fragment(cute.make_layout(8), cute.Float16)
        b = cute.make_fragment(cute.make_layout(4), cute.Float16)
        c = cute.make_fragment(cute.make_layout(8), acc_t)
        for i in cute.range_constexpr(8):
            a[i] = 1.0
            c[i] = 0.5
        for i in cute.range_constexpr(4):
            b[i] = 2.0
        arch.ptx_mma_sm70("m16n16k4", *layouts, "fp16", "fp16", c_dtype, a, 4, b, 0, c, 0)
        out[arch.thread_idx()[0]] = cute.Int32(c[7])

    c = compile_kernel(k)
    regs = 8 if ctext == "f32" else 4
    reg = "%{{[rf][0-9]+}}"  # this LLVM prints f32 registers as %r too
    filecheck(c.ptx, [f"CHECK: mma.sync.aligned.m8n8k4.{layouts[0]}.{layouts[1]}.{ctext}.f16.f16.{ctext} "
                      "{{[{]}}" + ", ".join([reg] * regs) + "{{[}]}}, {{[{]}}" + ", ".join([reg] * 2) + "{{[}]}}"])
    assemble(c.ptx)


@pytest.mark.parametrize("args, match", [
    (("m16n8k16", "row", "col", "fp16", "fp16", "fp32"), "shape must be one of m16n16k4, m8n8k4, got 'm16n8k16'"),
    (("m8n8k4", "rows", "col", "fp16", "fp16", "fp32"), "A_layout must be 'row' or 'col', got 'rows'"),
    (("m8n8k4", "row", "col", "bf16", "fp16", "fp32"), "A_dtype must be one of fp16, float16, got 'bf16'"),
    (("m8n8k4", "row", "col", "fp16", "fp16", "int32"), "C_dtype must be one of"),
])
def test_ptx_mma_sm70_rules(args, match):
    @cute.kernel
    def k(inp, out):
        a = cute.make_fragment(cute.make_layout(4), cute.Float16)
        c = cute.make_fragment(cute.make_layout(8), cute.Float32)
        arch.ptx_mma_sm70(*args, a, 0, a, 0, c, 0)

    with pytest.raises(TraceError, match=match):
        compile_kernel(k)


def test_ptx_mma_sm70_fragment_bounds():
    @cute.kernel
    def k(inp, out):
        a = cute.make_fragment(cute.make_layout(4), cute.Float16)
        c = cute.make_fragment(cute.make_layout(8), cute.Float32)
        arch.ptx_mma_sm70("m8n8k4", "row", "col", "fp16", "fp16", "fp32", a, 2, a, 0, c, 0)

    with pytest.raises(TraceError, match=r"multiplicand_a elements 2\.\.5 \(a static index\) lie outside the "
                                         r"fragment's 4 elements"):
        compile_kernel(k)
