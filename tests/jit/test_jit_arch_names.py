"""``cute_py.arch`` names mean what the CuTe DSL's ``cute.arch`` names mean: the special register each index reads
(checked in the PTX), and ``warp_idx`` over the whole linear thread index of a 2-D or 3-D block."""

import re
import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError


def _ptx(body, block=32, cluster=(2, 1, 1), grid=2):
    @cute.kernel
    def k(out):
        words = body()
        words = words if isinstance(words, tuple) else (words,)
        arch.stg(out.engine, tuple(words), index=0) if len(words) > 1 else arch.stg32(out.engine, words)

    def host(out):
        k(out).launch(grid=grid, block=block, cluster=cluster)

    return cute.compile(host, cute.compiler.DeviceArraySpec("Int32", (64,)))


def test_block_idx_in_cluster_is_the_ctas_rank(filecheck, assemble):
    rank = []

    def body():
        r = arch.block_idx_in_cluster()
        rank.append(r)
        return r

    c = _ptx(body)
    assert isinstance(rank[0], cute.compiler.TracedInt)  # one Int32, not an (x, y, z) tuple
    filecheck(c.ptx, ["CHECK: mov.u32 [[R:%r[0-9]+]], %cluster_ctarank;", "CHECK: st.global.b32 [{{%rd[0-9]+}}], [[R]];"])
    assemble(c.ptx)


def test_cluster_dim_is_the_number_of_clusters_in_the_grid(filecheck, assemble):
    c = _ptx(lambda: arch.cluster_dim()[:2] + (arch.cluster_dim()[2], 0), grid=4)
    filecheck(c.ptx, ["CHECK-DAG: %nclusterid.x", "CHECK-DAG: %nclusterid.y", "CHECK-DAG: %nclusterid.z"])
    assert "%cluster_nctaid" not in c.ptx
    assemble(c.ptx)


def test_block_in_cluster_idx_and_dim_are_the_ctas_coordinates_and_the_cluster_shape(filecheck, assemble):
    c = _ptx(lambda: arch.block_in_cluster_idx()[:2] + arch.block_in_cluster_dim()[:2])
    filecheck(c.ptx, ["CHECK-DAG: %cluster_ctaid.x", "CHECK-DAG: %cluster_ctaid.y", "CHECK-DAG: %cluster_nctaid.x",
                      "CHECK-DAG: %cluster_nctaid.y"])
    assemble(c.ptx)
    d = _ptx(lambda: arch.cluster_shape()[0])
    assert "%cluster_nctaid.x" in d.ptx


def test_cluster_size_and_block_rank_in_cluster():
    c = _ptx(lambda: (arch.cluster_size(), arch.block_rank_in_cluster()))
    assert "%cluster_nctarank" in c.ptx and "%cluster_ctarank" in c.ptx


def test_warp_idx_of_a_one_dimensional_block_is_tid_x_over_32(filecheck):
    c = _ptx(arch.warp_idx, block=128, cluster=(1, 1, 1), grid=1)
    filecheck(c.ptx, ["CHECK: mov.u32 [[T:%r[0-9]+]], %tid.x;", "CHECK: shr.u32 {{%r[0-9]+}}, [[T]], 5;"])
    assert "%tid.y" not in c.ptx


def test_warp_idx_of_a_two_dimensional_block_counts_the_rows(filecheck):
    # block (16, 8): the thread (x, y) is the linear thread x + 16 * y, in warp (x + 16 * y) // 32
    c = _ptx(arch.warp_idx, block=(16, 8), cluster=(1, 1, 1), grid=1)
    body = re.split(r"attributes \{nvvm\.kernel[^}]*\}", c.mlir, maxsplit=1)[1]
    filecheck(body, ['CHECK-DAG: %[[X:.*]] = "cute_nvgpu.read_sreg"() {sreg = "tid.x"}',
                     'CHECK-DAG: %[[Y:.*]] = "cute_nvgpu.read_sreg"() {sreg = "tid.y"}',
                     "CHECK-DAG: %[[S:.*]] = arith.constant 16 : i32",
                     "CHECK: %[[YS:.*]] = arith.muli %[[Y]], %[[S]]",
                     "CHECK: %[[L:.*]] = arith.addi %[[X]], %[[YS]]",
                     "CHECK: arith.shrui %[[L]]"])
    assert "%tid.z" not in c.ptx


def test_warp_idx_of_a_three_dimensional_block_counts_every_dimension():
    c = _ptx(arch.warp_idx, block=(8, 4, 4), cluster=(1, 1, 1), grid=1)
    assert "%tid.y" in c.ptx and "%tid.z" in c.ptx


def test_make_warp_uniform_returns_its_value_and_rejects_others():
    seen = []

    def body():
        w = arch.warp_idx()
        seen.append((w, arch.make_warp_uniform(w)))
        return w

    _ptx(body, cluster=(1, 1, 1), grid=1)
    assert seen[0][0] is seen[0][1]
    with pytest.raises(TraceError, match="make_warp_uniform takes an integer"):
        _ptx(lambda: arch.make_warp_uniform(1.5), cluster=(1, 1, 1), grid=1)


def test_cluster_arrive_and_wait_are_the_dsls_unaligned_forms_unless_aligned_is_asked(filecheck):
    # the DSL's cluster_arrive(aligned=None) and cluster_wait() are barrier.cluster.arrive / .wait without .aligned
    def body():
        arch.cluster_arrive_relaxed()
        arch.cluster_arrive()
        arch.cluster_arrive(aligned=True)
        arch.cluster_arrive_relaxed(aligned=True)
        arch.cluster_wait()
        return 0

    c = _ptx(body)
    filecheck(c.ptx, ["CHECK: barrier.cluster.arrive.relaxed;", "CHECK-NEXT: barrier.cluster.arrive;",
                      "CHECK-NEXT: barrier.cluster.arrive.aligned;", "CHECK-NEXT: barrier.cluster.arrive.relaxed.aligned;",
                      "CHECK-NEXT: barrier.cluster.wait;"])
    with pytest.raises(TraceError, match=r"cluster_arrive: aligned must be None, True or False, got 'yes'"):
        _ptx(lambda: arch.cluster_arrive(aligned="yes") or 0)
    with pytest.raises(TypeError):
        arch.cluster_arrive(True)  # keyword-only, as in the DSL


def test_the_dsl_cluster_and_index_names_are_there():
    names = {"thread_idx", "block_idx", "block_dim", "grid_dim", "cluster_idx", "cluster_dim", "block_in_cluster_idx",
             "block_in_cluster_dim", "block_idx_in_cluster", "cluster_size", "lane_idx", "warp_idx",
             "make_warp_uniform", "elect_one", "sync_threads", "sync_warp", "cluster_arrive", "cluster_arrive_relaxed",
             "cluster_wait", "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_and_expect_tx", "mbarrier_expect_tx",
             "mbarrier_wait", "mbarrier_try_wait", "cp_async_commit_group", "cp_async_wait_group"}
    assert names <= set(arch.__all__)
    assert all(callable(getattr(arch, n)) for n in names)


def test_shuffle_sync_reads_a_fourth_argument_as_the_dsls_mask_and_clamp(filecheck):
    # the DSL's fourth parameter is PTX's c operand: ((32 - width) << 8) | clamp; 0x181f is a segment of 8 lanes
    def body():
        return (arch.shuffle_sync(arch.lane_idx(), 3, 0xFFFFFFFF, 0x181F), arch.shuffle_sync(arch.lane_idx(), 3, width=8),
                arch.shuffle_sync(arch.lane_idx(), 3, 0xFFFFFFFF, 16), 0)

    c = _ptx(body, cluster=(1, 1, 1), grid=1)
    assert c.ptx.count("shfl.sync.idx.b32") == 3 and c.ptx.count(", 3, 6175, -1;") == 2
    assert c.ptx.count(", 3, 16, -1;") == 1  # a clamp at lane 16, as PTX reads it
    with pytest.raises(TraceError, match=r"mask_and_clamp packs a segment mask in bits 8..12 and a clamp lane in bits "
                                         r"0..4 .* got 0x2000"):
        _ptx(lambda: arch.shuffle_sync(arch.lane_idx(), 3, 0xFFFFFFFF, 0x2000), cluster=(1, 1, 1), grid=1)
