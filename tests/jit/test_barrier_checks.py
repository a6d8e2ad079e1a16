"""mbarrier rules the trace checks against the launch: arrival counts no block (or cluster) can give, transaction
bytes that differ from the TMA loads completing on the barrier (multicast masks included), waits on barriers
never initialised. Each rule: a TraceError at the user's line naming the values, and the correct forms compile."""

import inspect

import pytest

import cute_py as cute
from cute_py import arch, pipeline
from cute_py.compiler import TraceError
from cute_py.nvgpu import cpasync
from cute_py.pipeline import Agent, CooperativeGroup

SPEC = cute.compiler.DeviceArraySpec("Int32", (1024,))


def _compile(body, block=128, cluster=(1, 1, 1)):
    @cute.kernel
    def k(inp, out):
        body(inp, out)

    @cute.jit
    def host(inp, out):
        k(inp, out).launch(grid=2, block=block, cluster=cluster)

    return cute.compile(host, SPEC, SPEC)


def _line(fn, text):
    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(src) if text in s)


def _rejects(body, line_text, *fragments, **launch):
    with pytest.raises(TraceError) as e:
        _compile(body, **launch)
    msg = str(e.value)
    assert msg.startswith(f"{__file__}:{_line(body, line_text)}: "), msg
    for f in fragments:
        assert f in msg, msg
    return msg


# -- arrival counts no launch satisfies: the pipelines ----------------------------------------------------------

PIPELINES = {"async": pipeline.PipelineAsync, "cp_async": pipeline.PipelineCpAsync}


@pytest.mark.parametrize("kind", sorted(PIPELINES))
@pytest.mark.parametrize("side,agent,size,count", [
    ("consumer", Agent.Thread, 512, 512), ("consumer", Agent.Warp, 8, 256), ("producer", Agent.Thread, 129, 129),
    ("producer", Agent.Warp, 5, 160), ("consumer", Agent.ThreadBlockCluster, 1, None),
])
def test_pipeline_group_larger_than_the_block_is_a_trace_error(kind, side, agent, size, count):
    cls = PIPELINES[kind]

    def body(i, o):
        big, fits = CooperativeGroup(agent, size), CooperativeGroup(Agent.Thread, 128)
        p, c = (big, fits) if side == "producer" else (fits, big)
        cls.create(num_stages=2, producer_group=p, consumer_group=c)  # the create

    cluster = (2, 1, 1) if agent is Agent.ThreadBlockCluster else (1, 1, 1)
    role = "full" if side == "producer" else "empty"
    expect = [f"{cls.__name__}.create: the {role} barriers expect", f"Agent.{agent.name}", "128 threads per block"]
    if count is not None:
        expect.append(f"expect {count} arrivals")
    _rejects(body, "# the create", *expect, cluster=cluster)


@pytest.mark.parametrize("kind", sorted(PIPELINES))
def test_pipeline_groups_that_fit_compile(kind):
    def body(i, o):
        cls = PIPELINES[kind]
        cls.create(num_stages=2, producer_group=CooperativeGroup(Agent.Thread, 128),
                   consumer_group=CooperativeGroup(Agent.Warp, 4))
        cls.create(num_stages=2, producer_group=CooperativeGroup(Agent.ThreadBlock, 1),
                   consumer_group=CooperativeGroup(Agent.Thread, 1))

    assert "mbarrier.init" in _compile(body).ptx


def test_pipeline_consumers_of_the_whole_cluster_fit_with_a_consumer_mask():
    def body(i, o):
        pipeline.PipelineAsync.create(num_stages=2, producer_group=CooperativeGroup(Agent.Thread, 1),
                                      consumer_group=CooperativeGroup(Agent.Thread, 256), consumer_mask=0)

    _compile(body, cluster=(2, 1, 1))
    with pytest.raises(TraceError, match="expect 256 arrivals"):
        _compile(body, cluster=(1, 1, 1))


def test_tma_pipeline_producer_group_of_more_warps_than_the_block_is_a_trace_error():
    def body(i, o):
        pipeline.PipelineTmaAsync.create(num_stages=2, producer_group=CooperativeGroup(Agent.Warp, 1),  # the create
                                         consumer_group=CooperativeGroup(Agent.Thread, 4), tx_count=64)

    _rejects(body, "# the create", "the full barriers expect 32 arrivals", "only 4 warps", block=128)


# -- arrival counts: raw mbarriers -------------------------------------------------------------------------------


def _raw(count, arrive_count=1, loop=False, remote=False, parity=0):
    def body(i, o):
        bar = arch.SmemAllocator().allocate_mbarrier(1)
        with arch.elect_one():
            arch.mbarrier_init(bar, count)  # the init
        arch.mbarrier_init_fence()
        arch.sync_threads()
        if loop:
            for _ in cute.range(i[0]):
                arch.mbarrier_arrive(bar, arrive_count=arrive_count)
        elif remote:
            arch.mbarrier_arrive(bar, 1, arrive_count)
        else:
            arch.mbarrier_arrive(bar, arrive_count=arrive_count)
        arch.mbarrier_wait(bar, parity)

    return body


def test_mbarrier_init_count_beyond_the_arrivals_is_a_trace_error():
    _rejects(_raw(256), "# the init", "expects 256 arrivals", "at most 128", "block of 128 threads")
    _rejects(_raw(129), "# the init", "expects 129 arrivals")
    _rejects(_raw(300, arrive_count=2), "# the init", "at most 256")


@pytest.mark.parametrize("count,kw,launch", [
    (128, {}, {}), (256, {"arrive_count": 2}, {}), (4096, {"loop": True}, {}),
    (256, {"remote": True}, {"cluster": (2, 1, 1)}), (4096, {"parity": 1}, {}),
])
def test_mbarrier_init_counts_the_arrivals_can_reach_compile(count, kw, launch):
    assert "mbarrier.init" in _compile(_raw(count, **kw), **launch).ptx


# -- waits on barriers never initialised --------------------------------------------------------------------------


@pytest.mark.parametrize("wait", ["wait", "try_wait", "test_wait"])
def test_wait_on_an_mbarrier_never_initialised_is_a_trace_error(wait):
    def body(i, o):
        bars = arch.SmemAllocator().allocate_mbarrier(2)
        with arch.elect_one():
            arch.mbarrier_init(bars, 1)
        arch.mbarrier_init_fence()
        arch.sync_threads()
        arch.mbarrier_arrive(bars)
        arch.mbarrier_wait(bars, 0)
        getattr(arch, f"mbarrier_{wait}")(bars + 1, 0)  # the wait

    _rejects(body, "# the wait", f"mbarrier_{wait}: the mbarrier at shared-memory byte", "never initialised")


def test_waits_on_mbarriers_initialised_through_a_run_time_pointer_compile():
    def body(i, o):
        bars = arch.SmemAllocator().allocate_mbarrier(2)
        tid, _, _ = arch.thread_idx()
        with cute.compiler.if_(tid < 2):
            arch.mbarrier_init(bars + tid, 1)
        arch.mbarrier_init_fence()
        arch.sync_threads()
        arch.mbarrier_wait(bars + 1, 0)

    _compile(body)


# -- transaction bytes against the TMA loads ---------------------------------------------------------------------

TILE = (32, 32)
TILE_BYTES = 32 * 32 * 4


def _tma(expect, mcast_mask=None, cluster=(1, 1, 1), tx_arrive=True, split=False):
    """A TMA load of one 32x32 Float32 tile completing on a barrier whose phase expects ``expect`` bytes."""
    multicast = mcast_mask is not None

    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor):
        bidx, _, _ = arch.block_idx()
        smem = arch.SmemAllocator()
        bar = smem.allocate_mbarrier(1)
        layout = cute.make_layout(TILE, stride=(TILE[1], 1))
        s = smem.allocate_tensor(cute.Float32, layout, 1024)
        with arch.elect_one():
            arch.mbarrier_init(bar, 1)
        arch.mbarrier_init_fence()
        arch.cluster_arrive()
        arch.cluster_wait()
        g = cute.local_tile(tensor, TILE, (None, None))
        n = cluster[0] * cluster[1] * cluster[2]
        rank = arch.block_idx_in_cluster() if multicast else 0
        tAs, tAg = cpasync.tma_partition(atom, rank, cute.make_layout(n), cute.group_modes(s, 0, 2),
                                         cute.group_modes(g, 0, 2))
        with arch.elect_one():
            if tx_arrive:
                arch.mbarrier_arrive_and_expect_tx(bar, expect)  # the expect
            else:
                arch.mbarrier_expect_tx(bar, expect)  # the expect
                arch.mbarrier_arrive(bar)
        cute.copy(atom, tAg[(None, bidx, 0)], tAs, tma_bar_ptr=bar, mcast_mask=mcast_mask)
        if split:
            cute.copy(atom, tAg[(None, bidx, 1)], tAs, tma_bar_ptr=bar, mcast_mask=mcast_mask)
        arch.mbarrier_wait(bar, 0)

    @cute.jit
    def host(src):
        op = cpasync.CopyBulkTensorTileG2SMulticastOp() if multicast else cpasync.CopyBulkTensorTileG2SOp()
        n = cluster[0] * cluster[1] * cluster[2]
        atom, tensor = cpasync.make_tiled_tma_atom(op, src, cute.make_layout(TILE, stride=(TILE[1], 1)), TILE,
                                                   **({"num_multicast": n} if multicast else {}))
        k(atom, tensor).launch(grid=(2 * n, 1, 1), block=32, cluster=cluster)

    return cute.compile(host, cute.compiler.DeviceArraySpec("Float32", (256, 256)))


def _tma_line():
    return _line(_tma, "# the expect")


@pytest.mark.parametrize("tx_arrive", [True, False])
@pytest.mark.parametrize("expect", [TILE_BYTES // 2, TILE_BYTES * 2, TILE_BYTES + 4, 4])
def test_expect_tx_other_than_the_tma_load_bytes_is_a_trace_error(expect, tx_arrive):
    with pytest.raises(TraceError) as e:
        _tma(expect, tx_arrive=tx_arrive)
    msg = str(e.value)
    assert msg.startswith(f"{__file__}:"), msg
    assert f"expects {expect} transaction bytes" in msg and f"{TILE_BYTES} bytes at line" in msg, msg


def test_expect_tx_of_the_tma_load_bytes_compiles():
    _tma(TILE_BYTES)
    _tma(TILE_BYTES, tx_arrive=False)
    _tma(2 * TILE_BYTES, split=True)
    with pytest.raises(TraceError, match=f"expects {TILE_BYTES} transaction bytes"):
        _tma(TILE_BYTES, split=True)


def test_multicast_mask_missing_ctas_that_expect_the_bytes_is_a_trace_error():
    # each CTA of the pair loads half the tile and multicasts it; both expect the whole tile, but the mask
    # sends both halves to CTA 0 only
    with pytest.raises(TraceError) as e:
        _tma(TILE_BYTES, mcast_mask=0b01, cluster=(2, 1, 1))
    msg = str(e.value)
    assert msg.startswith(f"{__file__}:{_tma_line()}: "), msg
    assert "multicast to mask 0b1" in msg and "cluster of 2 CTAs" in msg and "never sent" in msg, msg
    _tma(TILE_BYTES, mcast_mask=0b11, cluster=(2, 1, 1))
    with pytest.raises(TraceError, match="never sent"):
        _tma(2 * TILE_BYTES, mcast_mask=0b11, cluster=(2, 1, 1))


def test_multicast_with_a_run_time_mask_is_not_checked():
    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor):
        smem = arch.SmemAllocator()
        bar = smem.allocate_mbarrier(1)
        s = smem.allocate_tensor(cute.Float32, cute.make_layout(TILE, stride=(TILE[1], 1)), 1024)
        with arch.elect_one():
            arch.mbarrier_init(bar, 1)
        arch.mbarrier_init_fence()
        arch.cluster_arrive()
        arch.cluster_wait()
        g = cute.local_tile(tensor, TILE, (None, None))
        rank = arch.block_idx_in_cluster()
        tAs, tAg = cpasync.tma_partition(atom, rank, cute.make_layout(2), cute.group_modes(s, 0, 2),
                                         cute.group_modes(g, 0, 2))
        with arch.elect_one():
            arch.mbarrier_arrive_and_expect_tx(bar, 3 * TILE_BYTES)  # wrong, but the mask is a run-time value
        cute.copy(atom, tAg[(None, rank, 0)], tAs, tma_bar_ptr=bar, mcast_mask=(rank + 1) | 1)
        arch.mbarrier_wait(bar, 0)

    @cute.jit
    def host(src):
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), src,
                                                   cute.make_layout(TILE, stride=(TILE[1], 1)), TILE,
                                                   num_multicast=2)
        k(atom, tensor).launch(grid=(2, 1, 1), block=32, cluster=(2, 1, 1))

    cute.compile(host, cute.compiler.DeviceArraySpec("Float32", (256, 256)))
