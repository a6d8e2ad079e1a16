"""The DSL's mbarrier, barrier, fence, bulk-group and register builtins (``cute_py.arch``): the PTX each call becomes
(FileCheck), assembly for sm_90a, and one TraceError per argument rule, naming the rule and the value."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError


def compile_body(body, *, block=128, grid=2, cluster=(2, 1, 1)):
    """Compile a kernel running ``body(inp, out)`` over two Int32 arrays (no GPU needed)."""

    @cute.kernel
    def k(inp, out):
        body(inp, out)

    def host(inp, out):
        k(inp, out).launch(grid=grid, block=block, cluster=cluster or (1, 1, 1))

    spec = cute.compiler.DeviceArraySpec("Int32", (1024,))
    return cute.compile(host, spec, spec)


def rejects(body, match, **launch):
    with pytest.raises(TraceError, match=match) as info:
        compile_body(body, **launch)
    return str(info.value)


def _bars(n=4):
    return arch.SmemAllocator().allocate_mbarrier(n)


# -- mbarriers ----------------------------------------------------------------------------------------


def test_mbarrier_init_fence_and_local_arrivals(filecheck, assemble):
    def body(i, o):
        bars = _bars()
        with arch.elect_one():
            arch.mbarrier_init(bars, 2)
            arch.mbarrier_init(mbar_ptr=bars + 1, cnt=arch.lane_idx() + 1)
        arch.mbarrier_init_fence()
        arch.mbarrier_arrive(bars)
        arch.mbarrier_arrive(bars, arrive_count=3)
        arch.mbarrier_arrive(bars + 1, None, arch.lane_idx() + 1, scope="cluster")

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: mbarrier.init.shared.b64 [__cute_py_dyn_smem], {{%r[0-9]+}};",
        "CHECK: mbarrier.init.shared.b64 [__cute_py_dyn_smem+8], {{%r[0-9]+}};",
        "CHECK: fence.mbarrier_init.release.cluster;",
        "CHECK: mbarrier.arrive.shared.b64 {{%rd[0-9]+}}, [__cute_py_dyn_smem];",
        "CHECK: mbarrier.arrive.release.cta.shared::cta.b64 %st, [{{%r[0-9]+}}], {{%r[0-9]+}};",
        "CHECK: mbarrier.arrive.release.cluster.shared::cta.b64 %st, [{{%r[0-9]+}}], {{%r[0-9]+}};",
    ])
    assemble(c.ptx)


def test_remote_arrivals_map_the_mbarrier_to_the_peer(filecheck, assemble):
    def body(i, o):
        bars = _bars()
        peer = arch.block_idx_in_cluster() ^ 1
        arch.mbarrier_arrive(bars, peer)  # the DSL's default: .release.cta
        arch.mbarrier_arrive(bars, peer_cta_rank_in_cluster=1, arrive_count=2, scope="cluster")
        arch.mbarrier_arrive(arch.map_dsmem_ptr(bars + 2, peer))  # a mapped pointer: the same remote arrive
        arch.mbarrier_arrive_and_expect_tx(bars, 4096, peer, scope="cluster")
        arch.mbarrier_expect_tx(bars + 3, 256, 0)  # remote: .cluster by default

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: mapa.shared::cluster.u32 %rb, [[B:%r[0-9]+]], [[P:%r[0-9]+]];",
        "CHECK-NEXT: mbarrier.arrive.release.cta.shared::cluster.b64 _, [%rb], {{%r[0-9]+}};",
        "CHECK: mapa.shared::cluster.u32 %rb",
        "CHECK-NEXT: mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%rb], {{%r[0-9]+}};",
        "CHECK: mapa.shared::cluster.u32 %rb, {{%r[0-9]+}}, [[P]];",
        "CHECK-NEXT: mbarrier.arrive.release.cta.shared::cluster.b64 _, [%rb]",
        "CHECK: mapa.shared::cluster.u32 %rb, {{%r[0-9]+}}, [[P]];",
        "CHECK-NEXT: mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%rb], {{%r[0-9]+}};",
        "CHECK: mapa.shared::cluster.u32 %rb",
        "CHECK-NEXT: mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [%rb], {{%r[0-9]+}};",
    ])
    assemble(c.ptx)


def test_transaction_bytes_locally(filecheck, assemble):
    def body(i, o):
        bars = _bars()
        with arch.elect_one():
            arch.mbarrier_arrive_and_expect_tx(bars, 16384)
            arch.mbarrier_arrive_and_expect_tx(bars + 1, 64, scope="cluster")
            arch.mbarrier_expect_tx(bars + 2, 128)
            arch.mbarrier_expect_tx(bars + 3, 128, scope="cluster")

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: mbarrier.arrive.expect_tx.shared.b64 {{%rd[0-9]+}}, [__cute_py_dyn_smem], {{%r[0-9]+}};",
        "CHECK: mbarrier.arrive.expect_tx.release.cluster.shared::cta.b64 _, [{{%r[0-9]+}}], {{%r[0-9]+}};",
        "CHECK: mbarrier.expect_tx.relaxed.cta.shared.b64 [__cute_py_dyn_smem+16], {{%r[0-9]+}};",
        "CHECK: mbarrier.expect_tx.relaxed.cluster.shared::cta.b64 [{{%r[0-9]+}}], {{%r[0-9]+}};",
    ])
    assemble(c.ptx)


def test_waits_tests_and_the_conditional_try_wait(filecheck, assemble):
    def body(i, o):
        bars = _bars()
        tid = arch.thread_idx()[0]
        with arch.elect_one():
            for k in range(4):
                arch.mbarrier_init(bars + k, 128)
        arch.mbarrier_init_fence()
        arch.sync_threads()
        for k in range(3):
            arch.mbarrier_arrive(bars + k)
        arch.mbarrier_wait(bars, 0)
        t = arch.mbarrier_try_wait(bars, tid & 1)
        e = arch.mbarrier_test_wait(bars + 1, 1)
        w = arch.mbarrier_conditional_try_wait(tid < 64, bars + 2, 0)
        arch.stg128(o.engine, tuple(cute.compiler.select(x, 1, 0) for x in (t, e, w, True)), index=tid)
        arch.cp_async_mbarrier_arrive_noinc(bars + 3)

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: mbarrier.try_wait.parity.shared.b64",
        "CHECK: mbarrier.try_wait.parity.shared::cta.b64 %p, [{{%r[0-9]+}}], {{%r[0-9]+}};",
        "CHECK: mbarrier.test_wait.parity.shared::cta.b64 %p, [{{%r[0-9]+}}], {{%r[0-9]+}};",
        "CHECK: setp.ne.b32 %c, {{%r[0-9]+}}, 0;",
        "CHECK-NEXT: setp.eq.b32 %p, 0, 0;",
        "CHECK-NEXT: @%c mbarrier.try_wait.parity.shared::cta.b64 %p, [{{%r[0-9]+}}], {{%r[0-9]+}};",
        "CHECK: cp.async.mbarrier.arrive.noinc.shared.b64 [__cute_py_dyn_smem+24];",
    ])
    assemble(c.ptx)


@pytest.mark.parametrize("call, match", [
    (lambda b: arch.mbarrier_arrive(b, 16), r"mbarrier_arrive: peer_cta_rank_in_cluster must lie in \[0, 16\)"),
    (lambda b: arch.mbarrier_arrive(b, arrive_count=0), r"mbarrier_arrive: arrive_count must lie in \[1, 1048576\) "
                                                        r"\(mbarrier counts are 20-bit\), got 0"),
    (lambda b: arch.mbarrier_arrive(b, scope="gpu"), r"mbarrier_arrive: scope must be 'cta' or 'cluster'"),
    (lambda b: arch.mbarrier_arrive(arch.map_dsmem_ptr(b, 1), 1), "mbar_ptr is already mapped to a peer CTA"),
    (lambda b: arch.mbarrier_arrive_and_expect_tx(b, 1 << 20), r"bytes must lie in \[0, 1048576\)"),
    (lambda b: arch.mbarrier_arrive_and_expect_tx(b, 64, relaxed=True), r"relaxed=True .* needs PTX ISA 8.6"),
    (lambda b: arch.mbarrier_expect_tx(b, -1), r"mbarrier_expect_tx: bytes must lie in \[0, 1048576\)"),
    (lambda b: arch.mbarrier_wait(b, 2), "mbarrier_wait: an mbarrier phase parity is 0 or 1, got 2"),
    (lambda b: arch.mbarrier_test_wait(b, 1.0), "mbarrier_test_wait: the phase must be 0, 1 or a traced integer"),
    (lambda b: arch.mbarrier_conditional_try_wait(1, b, 0), r"cond must be a run-time condition .* or a bool, got 1"),
    (lambda b: arch.mbarrier_try_wait(b, cute.Int64(arch.lane_idx()) & 1),
     "phase must be an integer of at most 32 bits"),
])
def test_mbarrier_argument_rules(call, match):
    rejects(lambda i, o: call(_bars()), match)


def test_an_mbarrier_is_shared_memory_of_its_own():
    rejects(lambda i, o: arch.mbarrier_arrive(i.engine), "mbarrier_arrive: the mbarrier must be in shared memory")
    rejects(lambda i, o: arch.mbarrier_init(arch.SmemAllocator().allocate_tensor(cute.Int64, cute.Layout(4)).iterator,
                                            1), "lies in the data of a shared-memory tensor")


# -- named barriers --------------------------------------------------------------------------------------


def test_barriers_by_the_dsls_keywords(filecheck, assemble):
    def body(i, o):
        arch.barrier()
        arch.barrier(barrier_id=1, number_of_threads=64)
        arch.barrier(number_of_threads=128)
        arch.barrier(barrier_id=arch.warp_idx() // 2 + 2, number_of_threads=64)
        arch.barrier_arrive(barrier_id=3, number_of_threads=96)
        arch.barrier_arrive(barrier_id=4, number_of_threads=arch.warp_idx() * 32 + 32, aligned=False)
        arch.sync_threads()
        arch.sync_warp(mask=0xFFFF)

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: bar.sync 0;",
        "CHECK-NEXT: bar.sync 1, 64;",
        "CHECK-NEXT: bar.sync 0, 128;",
        "CHECK: bar.sync {{%r[0-9]+}}, 64;",
        "CHECK: bar.arrive 3, 96;",
        "CHECK: barrier.cta.arrive {{%r[0-9]+}}, {{%r[0-9]+}};",
        "CHECK: bar.sync 0;",
        "CHECK: bar.warp.sync 65535;",
    ])
    assert "barrier.cta.arrive.aligned" not in c.ptx
    assemble(c.ptx)


@pytest.mark.parametrize("call, match", [
    (lambda: arch.barrier(barrier_id=16), r"barrier: barrier_id must lie in \[0, 16\) \(the hardware has 16 named "
                                          r"barriers per CTA\), got 16"),
    (lambda: arch.barrier(barrier_id=1, number_of_threads=33), r"barrier: number_of_threads must be a positive "
                                                                r"multiple of the warp size \(32\) of at most 1024, got 33"),
    (lambda: arch.barrier(number_of_threads=2048), "of at most 1024, got 2048"),
    (lambda: arch.barrier_arrive(barrier_id=1), "barrier_arrive needs number_of_threads"),
    (lambda: arch.barrier_arrive(barrier_id=1, number_of_threads=64, aligned=None),
     "barrier_arrive: aligned must be True or False, got None"),
    (lambda: arch.barrier(barrier_id="1"), "barrier: barrier_id must be an int or a traced integer, got '1'"),
])
def test_barrier_rules(call, match):
    rejects(lambda i, o: call(), match)


def test_barriers_take_keywords_only():
    with pytest.raises(TypeError):
        arch.barrier(1, 64)
    with pytest.raises(TypeError):
        arch.barrier_arrive(1, 64)


# -- fences ---------------------------------------------------------------------------------------------


def test_fences(filecheck, assemble):
    def body(i, o):
        arch.fence_proxy("async.shared", space="cta")
        arch.fence_proxy("async.shared", space="cluster")
        arch.fence_proxy("async.global")
        arch.fence_proxy("async")
        arch.fence_proxy("alias", use_intrinsic=True)
        arch.fence_view_async_shared()
        arch.fence_acq_rel_cta()
        arch.fence_acq_rel_cluster()
        arch.fence_acq_rel_gpu()
        arch.fence_acq_rel_sys()

    c = compile_body(body)
    filecheck(c.ptx, [
        "CHECK: fence.proxy.async.shared::cta;",
        "CHECK-NEXT: fence.proxy.async.shared::cluster;",
        "CHECK-NEXT: fence.proxy.async.global;",
        "CHECK: fence.proxy.async;",
        "CHECK: fence.proxy.alias;",
        "CHECK: fence.proxy.async.shared::cta;",
        "CHECK-NEXT: fence.acq_rel.cta;",
        "CHECK-NEXT: fence.acq_rel.cluster;",
        "CHECK-NEXT: fence.acq_rel.gpu;",
        "CHECK-NEXT: fence.acq_rel.sys;",
    ])
    assemble(c.ptx)


@pytest.mark.parametrize("args, kwargs, match", [
    (("async.shared",), {}, r"fence_proxy: kind 'async.shared' needs space='cta' or space='cluster', got space=None"),
    (("async.shared",), {"space": "gpu"}, "needs space='cta' or space='cluster', got space='gpu'"),
    (("async.global",), {"space": "cta"}, "only kind 'async.shared' takes a space"),
    (("tensormap",), {}, "'tensormap' is not a proxy kind of fence.proxy"),
    (("generic",), {}, "'generic' is not a proxy kind of fence.proxy"),
    (("async.local",), {}, "fence_proxy: kind must be one of alias, async, async.global, async.shared, tensormap, "
                           "generic, got 'async.local'"),
    (("alias",), {"use_intrinsic": "yes"}, "use_intrinsic must be None, True or False"),
])
def test_fence_proxy_rules(args, kwargs, match):
    rejects(lambda i, o: arch.fence_proxy(*args, **kwargs), match)


# -- bulk groups, register reallocation, cluster barriers ---------------------------------------------------


def test_bulk_groups_and_register_reallocation(filecheck, assemble):
    def body(i, o):
        arch.cp_async_bulk_commit_group()
        arch.cp_async_bulk_wait_group(0, read=True)
        arch.cp_async_bulk_wait_group(3)
        with cute.compiler.if_(arch.warp_idx() < 4):
            arch.setmaxregister_decrease(40)
        with cute.compiler.if_(arch.warp_idx() >= 4):
            arch.setmaxregister_increase(232)
        arch.warpgroup_reg_dealloc(24)
        arch.warpgroup_reg_alloc(256)

    c = compile_body(body, block=256, grid=1, cluster=None)
    filecheck(c.ptx, [
        "CHECK: cp.async.bulk.commit_group;",
        "CHECK-NEXT: cp.async.bulk.wait_group.read 0;",
        "CHECK-NEXT: cp.async.bulk.wait_group 3;",
        "CHECK: setmaxnreg.dec.sync.aligned.u32 40;",
        "CHECK: setmaxnreg.inc.sync.aligned.u32 232;",
        "CHECK: setmaxnreg.dec.sync.aligned.u32 24;",
        "CHECK: setmaxnreg.inc.sync.aligned.u32 256;",
    ])
    assemble(c.ptx)


@pytest.mark.parametrize("call, match", [
    (lambda: arch.cp_async_bulk_wait_group(64), r"group must be a count of pending groups in 0..63, got 64"),
    (lambda: arch.cp_async_bulk_wait_group(arch.lane_idx()), "group must be a static Python int"),
    (lambda: arch.cp_async_bulk_wait_group(0, read=1), "read must be None, True or False"),
    (lambda: arch.setmaxregister_increase(250), "reg_count must be a multiple of 8 in 24..256, got 250"),
    (lambda: arch.warpgroup_reg_dealloc(16), "warpgroup_reg_dealloc: reg_count must be a multiple of 8 in 24..256"),
])
def test_group_and_register_rules(call, match):
    rejects(lambda i, o: call(), match, block=128, grid=1, cluster=None)


def test_cluster_sync_is_the_aligned_pair(filecheck):
    c = compile_body(lambda i, o: arch.cluster_sync())
    filecheck(c.ptx, ["CHECK: barrier.cluster.arrive.aligned;", "CHECK-NEXT: barrier.cluster.wait.aligned;"])
