"""Warp-level kernel builtins (shuffles, votes, named barriers, register reallocation, ldg/stg): the PTX each one becomes, assembly with nvJitLink, and
one error per argument rule, raised while tracing at the kernel's line."""

import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError

I32 = cute.Int32
I64 = cute.Int64


def compile_kernel(kernel_fn, *kargs, n=512, grid=1, block=64, cluster=None):
    """Compile ``kernel_fn(inp, out, *kargs)`` over two Int32 arrays of ``n`` words (no GPU needed)."""

    def host(inp, out):
        launch = {"grid": grid, "block": block}
        if cluster is not None:
            launch["cluster"] = cluster
        kernel_fn(inp, out, *kargs).launch(**launch)

    spec = cute.compiler.DeviceArraySpec("Int32", (n,))
    return cute.compile(host, spec, spec)


def trace_error(kernel_fn, *kargs, **launch):
    with pytest.raises(TraceError) as info:
        compile_kernel(kernel_fn, *kargs, **launch)
    return str(info.value)


# -- indices and barriers -----------------------------------------------------------------------------


def test_warp_group_idx_is_tid_over_128_broadcast_from_lane_0(filecheck):
    @cute.kernel
    def k(inp, out):
        arch.stg32(out.engine, arch.warp_group_idx(), index=arch.thread_idx()[0])

    c = compile_kernel(k, block=256)
    filecheck(c.ptx, [
        "CHECK: mov.u32 [[TID:%r[0-9]+]], %tid.x;",
        "CHECK: shr.u32 [[WG:%r[0-9]+]], [[TID]], 7;",
        "CHECK: shfl.sync.idx.b32 [[OUT:%r[0-9]+]], [[WG]], 0, 31, -1;",
        "CHECK: st.global.b32 [{{%rd[0-9]+}}], [[OUT]];",
    ])


def test_sync_warp_and_named_barriers(filecheck):
    @cute.kernel
    def k(inp, out):
        arch.sync_warp()
        arch.sync_warp(0x0000FFFF)
        arch.barrier(barrier_id=1, number_of_threads=64)
        arch.barrier_arrive(barrier_id=2, number_of_threads=128)
        arch.barrier(barrier_id=3)
        arch.barrier(barrier_id=arch.warp_idx() + 4, number_of_threads=32)

    c = compile_kernel(k, block=128)
    filecheck(c.ptx, [
        "CHECK: bar.warp.sync -1;",
        "CHECK: bar.warp.sync 65535;",
        "CHECK: bar.sync 1, 64;",
        "CHECK: bar.arrive 2, 128;",
        "CHECK: bar.sync 3;",
        "CHECK: bar.sync {{%r[0-9]+}}, 32;",
    ])


# -- shuffles -------------------------------------------------------------------------------------------

# (builtin, PTX mode, lane/offset, width, the c operand: segment mask << 8 | clamp)
SHUFFLES = [
    (arch.shuffle_sync, "idx", 5, 32, 31),
    (arch.shuffle_sync, "idx", 3, 8, (24 << 8) | 31),
    (arch.shuffle_sync_up, "up", 1, 32, 0),
    (arch.shuffle_sync_up, "up", 2, 16, 16 << 8),
    (arch.shuffle_sync_down, "down", 2, 32, 31),
    (arch.shuffle_sync_down, "down", 1, 4, (28 << 8) | 31),
    (arch.shuffle_sync_bfly, "bfly", 16, 32, 31),
    (arch.shuffle_sync_bfly, "bfly", 1, 2, (30 << 8) | 31),
]


@pytest.mark.parametrize("fn,mode,lane,width,c", SHUFFLES,
                         ids=[f"{f.__name__}-w{w}" for f, _, _, w, _ in SHUFFLES])
def test_shuffles_of_int32_use_the_mode_and_the_width_clamp(fn, mode, lane, width, c, filecheck):
    @cute.kernel
    def k(inp, out):
        (x,) = arch.ldg32(inp.engine, index=arch.thread_idx()[0])
        arch.stg32(out.engine, fn(x, lane, width=width), index=arch.thread_idx()[0])

    filecheck(compile_kernel(k).ptx, [
        "CHECK: ld.global.b32 [[X:%r[0-9]+]], [{{%rd[0-9]+}}];",
        f"CHECK: shfl.sync.{mode}.b32 [[Y:%r[0-9]+]], [[X]], {lane}, {c}, -1;",
        "CHECK: st.global.b32 [{{%rd[0-9]+}}], [[Y]];",
    ])


def test_shuffle_with_a_run_time_lane_and_mask(filecheck):
    @cute.kernel
    def k(inp, out):
        tid = arch.thread_idx()[0]
        (m,) = arch.ldg32(inp.engine)
        arch.stg32(out.engine, arch.shuffle_sync(tid, (arch.lane_idx() * 5) % 32, mask=m), index=tid)

    filecheck(compile_kernel(k).ptx, [
        "CHECK: ld.global.b32 [[M:%r[0-9]+]], [{{%rd[0-9]+}}];",
        "CHECK: shfl.sync.idx.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, 31, [[M]];",
    ])


def test_an_int64_shuffles_as_two_32_bit_halves(filecheck):
    @cute.kernel
    def k(inp, out):
        tid = arch.thread_idx()[0]
        a, b_ = arch.ldg64(inp.engine, index=tid)
        x = (I64(a) << 32) | (I64(b_) & 0xFFFFFFFF)
        y = arch.shuffle_sync_down(x, 3)
        arch.stg64(out.engine, (I32(y), I32(y >> 32)), index=tid)

    filecheck(compile_kernel(k).ptx, [
        "CHECK: ld.global.v2.b32 {[[A:%r[0-9]+]], [[B:%r[0-9]+]]}, [{{%rd[0-9]+}}];",
        "CHECK-DAG: shfl.sync.down.b32 [[LO:%r[0-9]+]], [[B]], 3, 31, -1;",
        "CHECK-DAG: shfl.sync.down.b32 [[HI:%r[0-9]+]], [[A]], 3, 31, -1;",
        "CHECK: st.global.v2.b32 [{{%rd[0-9]+}}], {[[LO]], [[HI]]};",
    ])


def test_a_float32_shuffles_and_stores_its_bits(filecheck):
    @cute.kernel
    def k(inp, out, f):
        arch.stg32(out.engine, arch.shuffle_sync_bfly(f, 1), index=arch.thread_idx()[0])

    filecheck(compile_kernel(k, cute.Float32(1.5)).ptx, [
        "CHECK: ld.param.b32 [[F:%r[0-9]+]], [k_0_param_2];",
        "CHECK: shfl.sync.bfly.b32 [[Y:%r[0-9]+]], [[F]], 1, 31, -1;",
        "CHECK: st.global.b32 [{{%rd[0-9]+}}], [[Y]];",
    ])


# -- election and votes ---------------------------------------------------------------------------------


def test_votes_and_the_active_mask(filecheck):
    @cute.kernel
    def k(inp, out):
        tid = arch.thread_idx()[0]
        (x,) = arch.ldg32(inp.engine, index=tid)
        ballot = arch.vote_ballot_sync((x & 1) == 0)
        any_ = cute.compiler.select(arch.vote_any_sync(x == 7), 1, 0)
        all_ = cute.compiler.select(arch.vote_all_sync(x > 0, mask=0xFF), 1, 0)
        uni = cute.compiler.select(arch.vote_uni_sync(x < 5), 1, 0)
        arch.stg128(out.engine, (ballot, any_, all_, uni), index=tid)
        arch.stg32(out.engine + 256, arch.activemask(), index=tid)

    filecheck(compile_kernel(k).ptx, [
        "CHECK-DAG: vote.sync.ballot.b32 {{%r[0-9]+}}, {{%p[0-9]+}}, -1;",
        "CHECK-DAG: vote.sync.any.pred {{%p[0-9]+}}, {{%p[0-9]+}}, -1;",
        "CHECK-DAG: vote.sync.all.pred {{%p[0-9]+}}, {{%p[0-9]+}}, 255;",
        "CHECK-DAG: vote.sync.uni.pred {{%p[0-9]+}}, {{%p[0-9]+}}, -1;",
        "CHECK-DAG: activemask.b32 {{%r[0-9]+}};",
    ])


def test_elect_one_sync_and_shuffle_elect(filecheck):
    @cute.kernel
    def k(inp, out):
        tid = arch.thread_idx()[0]
        with cute.compiler.if_(arch.elect_one_sync()):
            arch.stg32(out.engine, 1, index=tid)
        with cute.compiler.if_(arch.shuffle_elect()):
            arch.stg32(out.engine + 64, 2, index=tid)
        with cute.compiler.if_(arch.lane_idx() >= 16):
            with cute.compiler.if_(arch.shuffle_elect(mask=0xFFFF0000)):
                arch.stg32(out.engine + 128, 3, index=tid)

    filecheck(compile_kernel(k).ptx, [
        "CHECK: elect.sync {{%r[0-9]+}}|{{%p[0-9]+}}, -1;",
        "CHECK: activemask.b32 [[AM:%r[0-9]+]];",
        "CHECK: shfl.sync.idx.b32 [[L:%r[0-9]+]], [[LANE:%r[0-9]+]], {{%r[0-9]+}}, 31, [[AM]];",
        "CHECK: setp.{{eq|ne}}.b32 {{%p[0-9]+}}, [[LANE]], [[L]];",
        "CHECK: shfl.sync.idx.b32 [[L2:%r[0-9]+]], [[LANE]], 16, 31, -65536;",  # the lowest lane of the mask
        "CHECK: setp.{{eq|ne}}.b32 {{%p[0-9]+}}, [[LANE]], [[L2]];",
    ])


# -- register reallocation -------------------------------------------------------------------------------


def test_setmaxregister_increase_and_decrease(filecheck, assemble):
    @cute.kernel
    def k(inp, out):
        with cute.compiler.if_(arch.warp_group_idx() == 0):
            arch.setmaxregister_decrease(40)
        with cute.compiler.if_(arch.warp_group_idx() != 0):
            arch.setmaxregister_increase(240)

    c = compile_kernel(k, block=256)
    filecheck(c.ptx, [
        "CHECK: .target sm_90a",
        "CHECK: setmaxnreg.dec.sync.aligned.u32 40;",
        "CHECK: setmaxnreg.inc.sync.aligned.u32 240;",
    ])
    assemble(c.ptx)


def _realloc_kernel(low, high, consumers_first=False):
    """Warp group 0 lowers its registers to ``low`` (none when ``None``), the others raise theirs to ``high``."""
    @cute.kernel
    def k(inp, out):
        if consumers_first:
            with cute.compiler.if_(arch.warp_group_idx() != 0):
                arch.setmaxregister_increase(high)
        if low is not None:
            with cute.compiler.if_(arch.warp_group_idx() == 0):
                arch.setmaxregister_decrease(low)
        if not consumers_first:
            with cute.compiler.if_(arch.warp_group_idx() != 0):
                arch.setmaxregister_increase(high)

    return k


# a CTA's warp groups share 64K registers over its threads (at most 255 per thread, whole units of 8); the highest
# increase must fit with every other warp group at the lowest count the kernel decreases to
@pytest.mark.parametrize("block, low, high, entry, fits", [
    (384, 40, 232, 168, True),    # the GEMM's plan: 232 + 2 x 40 <= 3 x 168
    (384, 24, 256, 168, True),    # 256 + 48 = 304 <= 504 (two consumers at 256 would hang: the kernel's to avoid)
    (384, None, 168, 168, True),  # nothing returned, nothing more taken
    (384, None, 176, 168, False),  # 176 + 2 x 168 = 512 > 504
    (384, 160, 200, 168, False),  # 200 + 2 x 160 = 520 > 504
    (256, 24, 256, 255, True),
    (128, None, 256, 255, False),  # one warp group: 256 > 255
    (512, 24, 160, 128, True),    # 160 + 3 x 24 = 232 <= 512
    (512, 120, 152, 128, True),   # exactly the pool: 152 + 3 x 120 = 512
    (512, 120, 160, 128, False),  # 520 > 512
])
def test_setmaxnreg_counts_the_register_pool_cannot_hold_are_refused(block, low, high, entry, fits):
    from cute_py.compiler.builtins.arch_sync import entry_registers

    assert entry_registers(block) == entry
    if fits:
        c = compile_kernel(_realloc_kernel(low, high), block=block)
        assert ".minnctapersm 1" in c.ptx
    else:
        msg = trace_error(_realloc_kernel(low, high), block=block)
        need = high + (block // 128 - 1) * (entry if low is None else low)
        assert f"setmaxnreg.inc to {high} would wait for registers forever: a {block}-thread block starts with " \
               f"{entry} registers per thread" in msg and f"needs {need}" in msg, msg


def test_setmaxnreg_pool_rule_sees_the_whole_kernel_whatever_the_order():
    # the increase traced before the decrease that makes room for it: checked when the kernel is finished
    c = compile_kernel(_realloc_kernel(40, 232, consumers_first=True), block=384)
    assert c.ptx.count("setmaxnreg") == 2


def test_only_kernels_that_reallocate_registers_get_one_cta_per_sm():
    @cute.kernel
    def k(inp, out):
        out[arch.thread_idx()[0]] = inp[arch.thread_idx()[0]]

    assert ".minnctapersm" not in compile_kernel(k, block=384).ptx


# -- vector global loads and stores -----------------------------------------------------------------------


@pytest.mark.parametrize("bits", [32, 64, 128, 256])
@pytest.mark.parametrize("cache", [None, "ca", "cg", "cs", "lu", "cv", "nc"])
def test_ldg_of_every_width_and_cache_modifier(bits, cache, filecheck, assemble):
    @cute.kernel
    def k(inp, out):
        words = arch.ldg(inp.engine, bits, cache, index=arch.thread_idx()[0])
        assert len(words) == bits // 32 and all(isinstance(w, cute.compiler.TracedInt) for w in words)
        arch.stg(out.engine, words, index=arch.thread_idx()[0])

    c = compile_kernel(k)
    cop = "" if cache is None else f".{cache}"
    n = bits // 32
    if n == 1:
        checks = [f"CHECK: ld.global{cop}.b32 %r{{{{[0-9]+}}}}, [%rd{{{{[0-9]+}}}}];"]
    elif n == 8:
        checks = [f"CHECK: ld.global{cop}.v4.b32 {{{{{{.*}}}}}}, [[[A:%rd[0-9]+]]];",
                  f"CHECK-NEXT: ld.global{cop}.v4.b32 {{{{{{.*}}}}}}, [[[A]]+16];"]
    else:
        checks = [f"CHECK: ld.global{cop}.v{n}.b32 {{{{{{.*}}}}}}, [%rd{{{{[0-9]+}}}}];"]
    filecheck(c.ptx, checks)
    assert c.ptx.count("ld.global") == (2 if n == 8 else 1)
    assemble(c.ptx)


@pytest.mark.parametrize("bits", [32, 64, 128, 256])
@pytest.mark.parametrize("cache", [None, "wb", "cg", "cs", "wt"])
def test_stg_of_every_width_and_cache_modifier(bits, cache, filecheck, assemble):
    @cute.kernel
    def k(inp, out):
        tid = arch.thread_idx()[0]
        words = tuple(tid + i for i in range(bits // 32))
        getattr(arch, f"stg{bits}")(out.engine, words, cache, index=tid)

    c = compile_kernel(k)
    cop = "" if cache is None else f".{cache}"
    n = bits // 32
    if n == 1:
        checks = [f"CHECK: st.global{cop}.b32 [%rd{{{{[0-9]+}}}}], %r{{{{[0-9]+}}}};"]
    elif n == 8:
        checks = [f"CHECK: st.global{cop}.v4.b32 [[[A:%rd[0-9]+]]], {{{{{{.*}}}}}};",
                  f"CHECK-NEXT: st.global{cop}.v4.b32 [[[A]]+16], {{{{{{.*}}}}}};"]
    else:
        checks = [f"CHECK: st.global{cop}.v{n}.b32 [%rd{{{{[0-9]+}}}}], {{{{{{.*}}}}}};"]
    filecheck(c.ptx, checks)
    assemble(c.ptx)


def test_ldg_stg_addresses_static_offsets_and_per_thread_indices(filecheck):
    @cute.kernel
    def k(inp, out):
        tid = arch.thread_idx()[0]
        w = arch.ldg128(inp.engine + 8, index=tid)        # 32 bytes in, then 16 bytes per thread
        arch.stg128(out.engine + 4, w, "cs", index=2 * tid)
        arch.stg32(out.engine + 3, (0xFFFFFFFF,))        # a static word; 0xFFFFFFFF is -1 as an i32

    c = compile_kernel(k)
    filecheck(c.ptx, [
        "CHECK-DAG: ld.param.b64 [[IN:%rd[0-9]+]], [k_0_param_0];",
        "CHECK-DAG: ld.param.b64 [[OUT:%rd[0-9]+]], [k_0_param_1];",
        "CHECK: mul.wide.u32 [[OFF:%rd[0-9]+]], {{%r[0-9]+}}, 16;",
        "CHECK: add.s64 [[T:%rd[0-9]+]], {{.*}}[[IN]]{{.*}};",
        "CHECK: add.s64 [[A:%rd[0-9]+]], [[T]], 32;",
        "CHECK: ld.global.v4.b32 {{{.*}}}, [[[A]]];",
        "CHECK: st.global.cs.v4.b32 [{{%rd[0-9]+}}], {{{.*}}};",
        "CHECK: add.s64 [[P:%rd[0-9]+]], [[OUT]], 12;",
        "CHECK: st.global.b32 [[[P]]], {{%r[0-9]+}};",
    ])
    mlir = c.mlir  # as traced: cute_nvgpu ops, lowered to PTX only by the pipeline
    assert "llvm.inline_asm" not in mlir
    assert re.search(r'%\w+:4 = "cute_nvgpu.ld_global"\(%\w+\) \{bits = 128 : i32, cache = ""', mlir)
    assert re.search(r'"cute_nvgpu.st_global"\(%\w+(, %\w+#[0-3]){4}\) \{cache = "cs"', mlir)
    assert re.search(r'"cute_nvgpu.st_global"\(%\w+, %c-1_i32\) \{cache = ""', mlir)


# -- cp.async and cluster mbarrier arrivals -----------------------------------------------------------------


def test_cp_async_mbarrier_arrive_noinc_and_a_remote_mbarrier_arrive(filecheck, assemble):
    @cute.kernel
    def k(inp, out):
        smem = arch.SmemAllocator()
        bars = smem.allocate_mbarrier(2)
        arch.mbarrier_init(bars, 64)
        arch.cp_async_mbarrier_arrive_noinc(bars)
        peer = arch.block_in_cluster_idx()[0] ^ 1
        arch.mbarrier_arrive(bars + 1, peer, scope="cluster")
        arch.mbarrier_arrive(bars + 1, 0, scope="cluster")

    c = compile_kernel(k, grid=2, cluster=(2, 1, 1))
    filecheck(c.ptx, [
        "CHECK: cp.async.mbarrier.arrive.noinc.shared.b64 [__cute_py_dyn_smem];",
        "CHECK: mapa.shared::cluster.u32 %rb, {{%r[0-9]+}}, {{%r[0-9]+}};",
        "CHECK-NEXT: mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%rb];",
        "CHECK: mapa.shared::cluster.u32",
    ])
    assert "cute_nvgpu.cp_async_mbarrier_arrive" in c.mlir and "cute_nvgpu.mbarrier_arrive_cluster" in c.mlir
    assemble(c.ptx)


# -- everything in one kernel, assembled --------------------------------------------------------------------


def test_a_kernel_using_every_builtin_assembles(assemble):
    @cute.kernel
    def k(inp, out, f):
        tid = arch.thread_idx()[0]
        lane = arch.lane_idx()
        w = arch.ldg256(inp.engine, "nc", index=tid)
        shuffled = (arch.shuffle_sync(w[0], 5), arch.shuffle_sync_bfly(w[1], 3, width=8),
                    arch.shuffle_sync_up(w[2], 1), arch.shuffle_sync_down(w[3], 2, width=16))
        big = arch.shuffle_sync_bfly(I64(tid) * 0x100000001, 1)
        arch.stg256(out.engine, shuffled + (I32(big), I32(big >> 32), arch.shuffle_sync(f, 0),
                                          arch.vote_ballot_sync(lane % 3 == 0)), "cs", index=tid)
        flags = tuple(cute.compiler.select(c, 1, 0) for c in (arch.vote_any_sync(tid == 40), arch.vote_all_sync(lane < 16),
                                                          arch.elect_one_sync(), arch.shuffle_elect()))
        arch.stg128(out.engine + 512, flags, index=tid)
        arch.stg64(out.engine + 1024, (arch.activemask(), arch.warp_group_idx()), "wt", index=tid)
        arch.sync_warp()
        arch.barrier(barrier_id=1, number_of_threads=64)
        smem = arch.SmemAllocator()
        bar = smem.allocate_mbarrier()
        arch.cp_async_mbarrier_arrive_noinc(bar)

    c = compile_kernel(k, cute.Float32(2.0), n=4096)
    cubin = assemble(c.ptx)
    assert len(cubin) > 0
    # traced, the builtins are cute_nvgpu ops; the only NVVM ops left are arch's thread and lane index reads
    body = re.split(r"attributes \{nvvm\.kernel[^}]*\}", c.mlir, maxsplit=1)[1]
    assert "llvm.inline_asm" not in body
    assert set(re.findall(r"\bnvvm\.[\w.]+", body)) <= {f"nvvm.read.ptx.sreg.{r}" for r in ("tid.x", "tid.y", "tid.z",
                                                                                           "laneid")}
    for op in ("ld_global", "st_global", "shfl_sync", "vote_sync", "activemask", "read_sreg", "bar_warp_sync",
               "barrier_sync", "elect_sync", "cp_async_mbarrier_arrive"):
        assert f'"cute_nvgpu.{op}"' in body, op


# -- argument rules: one error each, at the kernel's line -------------------------------------------------


def test_errors_name_the_kernel_line():
    @cute.kernel
    def k(inp, out):
        arch.barrier(barrier_id=16, number_of_threads=64)

    line = k.fn.__code__.co_firstlineno + 2
    msg = trace_error(k)
    assert f"test_jit_arch_warp.py:{line}:" in msg
    assert "barrier: barrier_id must lie in [0, 16) (the hardware has 16 named barriers per CTA), got 16" in msg


def test_builtins_outside_a_kernel_are_rejected():
    for call in (arch.warp_group_idx, arch.activemask, lambda: arch.sync_warp(), lambda: arch.setmaxregister_increase(240)):
        with pytest.raises(TraceError, match="call it inside a @cute_py.kernel"):
            call()


def _rejects(body, match, **launch):
    @cute.kernel
    def k(inp, out):
        body(inp, out)

    with pytest.raises(TraceError, match=match) as info:
        compile_kernel(k, **launch)
    return str(info.value)  # the message (it starts with the kernel's file:line)


def test_named_barrier_id_range():
    assert _rejects(lambda i, o: arch.barrier_arrive(barrier_id=-1, number_of_threads=64),
                    r"barrier_arrive: barrier_id must lie in \[0, 16\)")


@pytest.mark.parametrize("count", [48, 0, 1056])
def test_named_barrier_count_is_whole_warps(count):
    assert _rejects(lambda i, o: arch.barrier(barrier_id=1, number_of_threads=count),
             rf"barrier: number_of_threads must be a positive multiple of the warp size \(32\) of at most "
             rf"1024, got {count}")


def test_barrier_arrive_needs_a_count():
    assert _rejects(lambda i, o: arch.barrier_arrive(barrier_id=1), "barrier_arrive needs number_of_threads")
    with pytest.raises(TypeError):
        arch.barrier_arrive(1, 64)  # keyword-only, as in the DSL


@pytest.mark.parametrize("mask,match", [
    (0, r"mask names no lane \(0\)"),
    (1 << 32, r"mask must be a 32-bit lane mask in \[-2\^31, 0xFFFFFFFF\] .*, got 0x100000000"),
    (-(1 << 31) - 1, r"mask must be a 32-bit lane mask in \[-2\^31, 0xFFFFFFFF\] .*, got -0x80000001"),
    ("all", r"mask must be a 32-bit lane mask \(an int or a traced Int32\), got 'all'"),
])
def test_lane_masks(mask, match):
    assert _rejects(lambda i, o: arch.sync_warp(mask), match)


def test_a_traced_mask_is_32_bits():
    assert _rejects(lambda i, o: arch.vote_any_sync(arch.lane_idx() < 3, mask=I64(arch.lane_idx())),
             "vote_any_sync: mask is a 32-bit lane mask: pass an Int32, got a traced i64")


@pytest.mark.parametrize("width,match", [
    (12, "width must be a power of two in 1..32, got 12"),
    (64, "width must be a power of two in 1..32, got 64"),
])
def test_shuffle_width(width, match):
    assert _rejects(lambda i, o: arch.shuffle_sync_bfly(arch.lane_idx(), 1, width=width), "shuffle_sync_bfly: " + match)


def test_a_traced_shuffle_width_is_rejected():
    assert _rejects(lambda i, o: arch.shuffle_sync(arch.lane_idx(), 1, width=arch.lane_idx()),
             r"shuffle_sync: width must be a static Python int \(a power of two in 1..32\), got a traced value")


@pytest.mark.parametrize("fn,what", [(arch.shuffle_sync, "src_lane"), (arch.shuffle_sync_up, "delta"),
                                     (arch.shuffle_sync_down, "delta"), (arch.shuffle_sync_bfly, "lane_mask")])
def test_a_static_shuffle_lane_lies_within_the_width(fn, what):
    assert _rejects(lambda i, o: fn(arch.lane_idx(), 8, width=8),
             rf"{fn.__name__}: {what} must lie in \[0, 8\) \(less than the width 8\), got 8")


def test_shuffle_value_types():
    assert _rejects(lambda i, o: arch.shuffle_sync(arch.SmemAllocator(), 0),
             r"shuffle_sync shuffles traced numbers \(Booleans, integers and floats of up to 64 bits\), got "
             r"SmemAllocator")
    assert _rejects(lambda i, o: arch.shuffle_sync(1 << 40, 0), "shuffle_sync: a static value is shuffled as an Int32")


def test_a_vote_needs_a_condition():
    assert _rejects(lambda i, o: arch.vote_ballot_sync(arch.lane_idx()),
             r"vote_ballot_sync: the predicate must be a run-time condition .* or a bool, got TracedInt\(i32\)")


@pytest.mark.parametrize("n", [16, 20, 244, 264])
def test_setmaxregister_count(n):
    assert _rejects(lambda i, o: arch.setmaxregister_increase(n),
             f"setmaxregister_increase: reg_count must be a multiple of 8 in 24..256, got {n}")


def test_setmaxregister_count_is_static():
    assert _rejects(lambda i, o: arch.setmaxregister_decrease(arch.lane_idx()),
             r"setmaxregister_decrease: reg_count must be a static Python int")


def test_access_width():
    assert _rejects(lambda i, o: arch.ldg(i.engine, 48), r"ldg: the access width must be one of \(32, 64, 128, 256\) bits, "
                                                r"got 48")
    assert _rejects(lambda i, o: arch.stg(o.engine, (1, 2, 3)),
             r"stg stores 1, 2, 4 or 8 words of 32 bits .*got 3 words")
    assert _rejects(lambda i, o: arch.stg128(o.engine, (1, 2)), "stg128 stores 4 words of 32 bits, got 2 words")


def test_cache_modifiers():
    assert _rejects(lambda i, o: arch.ldg128(i.engine, "wb"),
             r"ldg128: cache modifier must be one of ca, cg, cs, lu, cv, nc \(or None\), got 'wb'")
    assert _rejects(lambda i, o: arch.stg64(o.engine, (1, 2), "nc"),
             r"stg64: cache modifier must be one of wb, cg, cs, wt \(or None\), got 'nc'")


@pytest.mark.parametrize("bits,offset,align", [(64, 1, 4), (128, 2, 8), (256, 4, 16), (128, 9, 4)])
def test_access_alignment(bits, offset, align):
    assert _rejects(lambda i, o: arch.ldg(i.engine + offset, bits),
             rf"ldg{bits}: a {bits}-bit access needs a {bits // 8}-byte aligned address, but the pointer .* is only "
             rf"{align}-byte aligned")


def test_an_underaligned_argument_is_rejected():
    @cute.kernel
    def k(inp, out):
        arch.stg128(out.engine, (1, 2, 3, 4))

    def host(inp, out):
        k(inp, out).launch(grid=1, block=32)

    spec = cute.compiler.DeviceArraySpec("Int32", (64,))
    odd = cute.compiler.DeviceArraySpec("Int32", (64,), address=(1 << 24) + 4)
    with pytest.raises(TraceError, match="stg128: a 128-bit access needs a 16-byte aligned address, but the pointer "
                                         r".* is only 4-byte aligned"):
        cute.compile(host, spec, odd)


def test_global_accesses_need_a_global_pointer_at_a_static_offset():
    assert _rejects(lambda i, o: arch.ldg32(arch.SmemAllocator().allocate_mbarrier()),
             "ldg32 accesses global memory, got a smem pointer")
    assert _rejects(lambda i, o: arch.ldg32(i.engine + arch.thread_idx()[0]),
             r"ldg32: the pointer .* has a run-time offset; pass the pointer at a static offset and the run-time part "
             r"as index= \(in 32-bit units\)")
    assert _rejects(lambda i, o: arch.stg32(o, (1,)), r"stg32 needs a global-memory pointer \(e.g. tensor.engine")
    assert _rejects(lambda i, o: arch.ldg64(i.engine, index=1.5), "ldg64: index must be an int or a traced integer, got 1.5")


def test_store_words_are_32_bits():
    assert _rejects(lambda i, o: arch.stg64(o.engine, (1, I64(arch.lane_idx()))),
             r"stg64: word 1 must be 32 bits wide, got a traced i64 \(convert it with Int32\(x\)\)")
    assert _rejects(lambda i, o: arch.stg32(o.engine, (1 << 32,)), "stg32: word 0 must fit in 32 bits, got 4294967296")
    assert _rejects(lambda i, o: arch.stg32(o.engine, (1.0,)), "stg32: word 0 must be an int, a traced Int32 or a Float32")


def test_mbarrier_builtins_need_shared_memory():
    assert _rejects(lambda i, o: arch.cp_async_mbarrier_arrive_noinc(i.engine),
             "cp_async_mbarrier_arrive_noinc: the mbarrier must be in shared memory, got a gmem pointer")


def test_remote_arrive_cta_rank():
    def body(i, o):
        bar = arch.SmemAllocator().allocate_mbarrier()
        arch.mbarrier_arrive(bar, 16)

    assert _rejects(body, r"mbarrier_arrive: peer_cta_rank_in_cluster must lie in \[0, 16\) \(a cluster has at most "
                          r"16 CTAs\), got 16")
