"""``cute_py.pipeline`` in kernels: what each pipeline operation emits (PTX, assembled for sm_90a), and every
misuse an error at the user's line that names the rule."""

import re
import warnings

import pytest

import cute_py as cute
from cute_py import arch, pipeline
from cute_py.compiler import TraceError
from cute_py.pipeline import Agent, CooperativeGroup, PipelineUserType, make_pipeline_state
from _trace_checks import assert_trace_error

F = cute.compiler.DeviceArraySpec


def _count(pattern, ptx):
    return len(re.findall(pattern, ptx))


# -- what the operations emit ------------------------------------------------------------------------------------


@cute.kernel
def ops_kernel(g, case, stages):
    tidx, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    bars = smem.allocate_mbarrier(2 * stages)
    if case == "async":
        p = pipeline.PipelineAsync.create(num_stages=stages, producer_group=CooperativeGroup(Agent.Warp, 1),
                                          consumer_group=CooperativeGroup(Agent.Thread, 64), barrier_storage=bars)
        s = make_pipeline_state(PipelineUserType.Producer, stages)
        c = make_pipeline_state(PipelineUserType.Consumer, stages)
        if tidx < 32:
            token = p.producer_try_acquire(s)
            p.producer_acquire(s, token)
            p.producer_commit(s)
        else:
            p.consumer_wait(c)
            p.consumer_release(c)
    elif case == "tma_store":
        st = pipeline.PipelineTmaStore.create(num_stages=stages, producer_group=CooperativeGroup(Agent.Thread, 32))
        st.producer_commit()
        st.producer_acquire()
        st.producer_tail()
    elif case == "named":
        nb = pipeline.NamedBarrier(barrier_id=3, num_threads=64)
        if tidx < 32:
            nb.arrive()
        else:
            nb.arrive_and_wait()
        pipeline.arrive_and_wait(4, 96)
        pipeline.arrive(5, 32)
        pipeline.arrive_unaligned(6, 32)
        pipeline.sync(barrier_id=7)
    elif case == "participants":
        p = pipeline.PipelineAsync.create(num_stages=stages, producer_group=CooperativeGroup(Agent.Thread, 32),
                                          consumer_group=CooperativeGroup(Agent.Thread, 32), barrier_storage=bars)
        producer, consumer = p.make_participants()
        if tidx < 32:
            for _ in range(cute.size(g)):
                h = producer.acquire_and_advance()
                h.commit()
            producer.tail()
        else:
            for _ in range(cute.size(g)):
                h = consumer.wait_and_advance()
                h.release()
    elif case == "deferred":
        pipeline.PipelineAsync.create(num_stages=stages, producer_group=CooperativeGroup(Agent.Thread, 32),
                                      consumer_group=CooperativeGroup(Agent.Thread, 32), barrier_storage=bars,
                                      defer_sync=True)
        pipeline.pipeline_init_arrive()
        pipeline.pipeline_init_wait()
    elif case == "default_storage":
        pipeline.PipelineAsync.create(num_stages=stages, producer_group=CooperativeGroup(Agent.Thread, 32),
                                      consumer_group=CooperativeGroup(Agent.ThreadBlock))


@cute.jit
def ops(g, case, stages=3, cluster=1):
    ops_kernel(g, case, stages).launch(grid=2, block=64, cluster=(cluster, 1, 1))


def compile_ops(case, stages=3, cluster=1):
    return cute.compile(ops, F("Float32", (7,)), case, stages, cluster)


def test_async_pipeline_emits_inits_waits_and_arrivals(filecheck, assemble):
    c = compile_ops("async")
    ptx = c.ptx
    # full for 32 producer threads, empty for 64 consumer threads; fenced, then the block synchronises
    filecheck(ptx, ["CHECK: mov.b32 [[P:%r[0-9]+]], 32;"] + ["CHECK: mbarrier.init.shared.b64 {{.*}}, [[P]];"] * 3
              + ["CHECK: mov.b32 [[C:%r[0-9]+]], 64;"] + ["CHECK: mbarrier.init.shared.b64 {{.*}}, [[C]];"] * 3
              + ["CHECK: fence.mbarrier_init.release.cluster;", "CHECK: bar.sync 0;"])
    # the producer's try-acquire, its conditional wait, every producer thread's arrival on full
    assert _count(r"mbarrier\.try_wait\.parity", ptx) == 3  # try_acquire, acquire, consumer_wait
    assert _count(r"mbarrier\.arrive\.shared\.b64", ptx) == 2
    assert assemble(ptx)[:4] == b"\x7fELF"


def test_tma_store_pipeline_is_bulk_groups(filecheck):
    filecheck(compile_ops("tma_store", stages=4).ptx, [
        "CHECK: cp.async.bulk.commit_group;", "CHECK: cp.async.bulk.wait_group.read 3;",
        "CHECK: cp.async.bulk.wait_group.read 0;"])


def test_named_barriers(filecheck, assemble):
    with pytest.warns(UserWarning, match="id 0"):
        pipeline.NamedBarrier(0, 64)
    c = compile_ops("named")
    filecheck(c.ptx, ["CHECK: bar.arrive 3, 64;", "CHECK: bar.sync 3, 64;", "CHECK: bar.sync 4, 96;",
                      "CHECK: bar.arrive 5, 32;", "CHECK: barrier.cta.arrive %r{{[0-9]+}}, %r{{[0-9]+}};",
                      "CHECK: bar.sync 7;"])
    assert assemble(c.ptx)[:4] == b"\x7fELF"


def test_participants_walk_the_pipeline(assemble):
    c = compile_ops("participants", stages=2)
    ptx = c.ptx
    # the producer's acquire and tail (2 waits), the consumer's wait: try_wait loops on run-time stages
    assert _count(r"mbarrier\.try_wait\.parity", ptx) >= 3
    assert _count(r"mbarrier\.arrive\.shared\.b64", ptx) >= 2  # (LLVM may unroll the loops of 7)
    assert assemble(ptx)[:4] == b"\x7fELF"


def test_deferred_initialisation_without_a_cluster_syncs_the_block(filecheck):
    filecheck(compile_ops("deferred").ptx, ["CHECK: fence.mbarrier_init.release.cluster;", "CHECK: bar.sync 0;"])
    assert "barrier.cluster" not in compile_ops("deferred").ptx


def test_a_pipeline_allocates_its_barriers_when_given_none():
    c = compile_ops("default_storage", stages=5)
    assert c.ptx.count("mbarrier.init.shared") == 10
    # a ThreadBlock group counts the block's threads, read at run time
    assert "%ntid.x" in c.ptx


# -- misuse ------------------------------------------------------------------------------------------------------


WARPS = CooperativeGroup(Agent.Thread, 4)
PAIR = cute.Layout((1, 2, 1, 1))
TMA_CASES = {
    "tx_zero": dict(consumer_group=WARPS, tx_count=0),
    "mcast_count": dict(consumer_group=CooperativeGroup(Agent.Thread, 3), tx_count=1024, cta_layout_vmnk=PAIR),
    "unreachable": dict(consumer_group=CooperativeGroup(Agent.Warp, 4), tx_count=1024, cta_layout_vmnk=PAIR),
    "cluster_mismatch": dict(consumer_group=WARPS, tx_count=1024, cta_layout_vmnk=cute.Layout((1, 4, 1, 1))),
    "cluster_rank3": dict(consumer_group=WARPS, tx_count=1024, cta_layout_vmnk=cute.Layout((2, 1, 1))),
    "cluster_not_bijective": dict(consumer_group=WARPS, tx_count=1024,
                                  cta_layout_vmnk=cute.Layout((1, 2, 1, 1), (0, 2, 0, 0))),
    "mcast_mode": dict(consumer_group=WARPS, tx_count=1024, cta_layout_vmnk=PAIR, mcast_mode_mn=(0, 0)),
    "enable_signaling": dict(consumer_group=CooperativeGroup(Agent.Thread, 48), tx_count=1024, cta_layout_vmnk=PAIR,
                             enable_multicast_signaling=True),
}


@cute.kernel
def bad_kernel(g, case):
    smem = arch.SmemAllocator()
    tile = smem.allocate_tensor(cute.Float32, cute.Layout(64))
    raw = smem.allocate(64)
    bars = smem.allocate_mbarrier(4)
    few = smem.allocate_mbarrier(3)
    thread = CooperativeGroup(Agent.Thread)
    warps = CooperativeGroup(Agent.Thread, 4)
    if case == "tensor_storage":
        pipeline.PipelineAsync.create(num_stages=2, producer_group=thread, consumer_group=warps, barrier_storage=tile)
    elif case == "byte_storage":
        pipeline.PipelineAsync.create(num_stages=2, producer_group=thread, consumer_group=warps, barrier_storage=raw)
    elif case == "short_storage":
        pipeline.PipelineAsync.create(num_stages=2, producer_group=thread, consumer_group=warps, barrier_storage=few)
    elif case == "stages":
        pipeline.PipelineAsync.create(num_stages=0, producer_group=thread, consumer_group=warps, barrier_storage=bars)
    elif case == "group":
        pipeline.PipelineAsync.create(num_stages=2, producer_group=Agent.Thread, consumer_group=warps,
                                      barrier_storage=bars)
    elif case == "state_stages":
        p = pipeline.PipelineAsync.create(num_stages=2, producer_group=thread, consumer_group=warps,
                                          barrier_storage=bars)
        p.producer_acquire(make_pipeline_state(PipelineUserType.Producer, 3))
    elif case == "not_a_state":
        p = pipeline.PipelineAsync.create(num_stages=2, producer_group=thread, consumer_group=warps,
                                          barrier_storage=bars)
        p.consumer_wait(0)
    elif case == "token":
        p = pipeline.PipelineAsync.create(num_stages=2, producer_group=thread, consumer_group=warps,
                                          barrier_storage=bars)
        p.consumer_wait(make_pipeline_state(PipelineUserType.Consumer, 2), 1)
    elif case in TMA_CASES:
        pipeline.PipelineTmaAsync.create(num_stages=2, producer_group=thread, barrier_storage=bars, **TMA_CASES[case])
    elif case == "init_mismatch":
        pipeline.pipeline_init_arrive(cluster_shape_mn=(1, 1))
    elif case == "named_id":
        pipeline.NamedBarrier(16, 64)
    elif case == "named_threads":
        pipeline.NamedBarrier(1, 48)
    elif case == "wait_unaligned":
        pipeline.NamedBarrier(1, 64).wait_unaligned()
    elif case == "agent_sync":
        pipeline.agent_sync(Agent.Warp)
    elif case == "store_consumer":
        pipeline.PipelineTmaStore.create(num_stages=2, producer_group=thread).consumer_wait()
    elif case == "group_size":
        CooperativeGroup(Agent.Thread, 0)
    elif case == "mbar_index":
        pipeline.MbarrierArray(bars, 4, (pipeline.PipelineOp.AsyncThread, thread)).get_barrier(4)
    elif case == "tmastore_mbarrier":
        pipeline.MbarrierArray(bars, 4, (pipeline.PipelineOp.TmaStore, thread))


@cute.jit
def bad(g, case):
    bad_kernel(g, case).launch(grid=2, block=64, cluster=(2, 1, 1))


@pytest.mark.parametrize("case, line, fragment", [
    ("tensor_storage", "barrier_storage=tile)", "barrier_storage must be a shared-memory pointer"),
    ("byte_storage", "barrier_storage=raw)", "must point to 64-bit mbarrier words"),
    ("short_storage", "barrier_storage=few)", "mbarrier 3 of the 4 it needs"),
    ("stages", "num_stages=0", "num_stages must be a static positive int"),
    ("group", "producer_group=Agent.Thread", "producer_group must be a CooperativeGroup"),
    ("state_stages", "p.producer_acquire(make_pipeline_state", "the state walks 3 stages, the pipeline has 2"),
    ("not_a_state", "p.consumer_wait(0)", "takes a PipelineState, got 0"),
    ("token", "Consumer, 2), 1)", "a try-wait token is the Boolean"),
    ("tx_zero", "**TMA_CASES[case])", "tx_count (the bytes the TMA loads of one stage bring"),
    ("mcast_count", "**TMA_CASES[case])", "must be a multiple of 2"),
    ("unreachable", "**TMA_CASES[case])", "expect 128 arrivals per stage"),
    ("cluster_mismatch", "**TMA_CASES[case])", "launched with clusters of (2, 1, 1)"),
    ("cluster_rank3", "**TMA_CASES[case])", "four flat modes (V, M, N, K)"),
    ("cluster_not_bijective", "**TMA_CASES[case])", "one to one onto the CTA ranks 0..1"),
    ("mcast_mode", "**TMA_CASES[case])", "not both 0"),
    ("enable_signaling", "**TMA_CASES[case])", "whole warps of consumer threads"),
    ("init_mismatch", "cluster_shape_mn=(1, 1))", "has 1 CTAs, but the kernel is launched with clusters of"),
    ("named_id", "NamedBarrier(16, 64)", "a named barrier id is an int in 0..15"),
    ("named_threads", "NamedBarrier(1, 48)", "positive multiple of 32"),
    ("wait_unaligned", ".wait_unaligned()", "only the aligned form of a named-barrier wait"),
    ("agent_sync", "agent_sync(Agent.Warp)", "agent_sync synchronises Agent.ThreadBlock"),
    ("store_consumer", ".consumer_wait()", "PipelineTmaStore has no consumer agent"),
    ("group_size", "CooperativeGroup(Agent.Thread, 0)", "size must be positive"),
    ("mbar_index", ".get_barrier(4)", "stage index 4 is outside the 4 stages"),
    ("tmastore_mbarrier", "PipelineOp.TmaStore, thread))", "has no mbarrier arrival"),
])
def test_misuse_is_an_error_at_the_users_line(case, line, fragment):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TraceError) as e:
            cute.compile(bad, F("Float32", (4,)), case)
    assert_trace_error(e, bad_kernel, line, fragment)


def test_named_barrier_wait_warns_that_it_arrives():
    with pytest.warns(UserWarning, match="arrive_and_wait"):
        compile_wait()


@cute.kernel
def wait_kernel(g):
    pipeline.NamedBarrier(2, 64).wait()


@cute.jit
def wait_host(g):
    wait_kernel(g).launch(grid=1, block=64)


def compile_wait():
    c = cute.compile(wait_host, F("Float32", (4,)))
    assert re.search(r"bar\.sync\s+2, 64;", c.ptx)
    return c
