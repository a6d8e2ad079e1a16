"""Kernel 11 (examples/warp_specialized_copy.py): its PTX has the warp-specialised multicast pipeline — barrier
initialisation published to the cluster, try_wait loops, multicast TMA loads, remote arrivals through mapa, TMA
stores with bulk-group waits and named barriers — and assembles for sm_90a; bad arguments are refused."""

import re

import pytest

import cute_py as cute
from examples.warp_specialized_copy import CONSUMER_WARPS, warp_specialized_copy

F = cute.compiler.DeviceArraySpec
KERNEL = "warp_specialized_copy_kernel_0"


def _compile(dtype="Float32", shape=(512, 384), cluster=2, tile=(64, 64), stages=3, out_stages=2, swizzle="none",
             max_clusters=4):
    m, n = shape
    return cute.compile(warp_specialized_copy, F(dtype, (m, n)), F(dtype, (cluster * m, n)), None, tile, stages,
                        cluster, out_stages, swizzle, max_clusters)


CASES = [("Float32", 2, (64, 64), 3, 2, "none"), ("BFloat16", 2, (64, 128), 4, 2, "128B"),
         ("Float16", 4, (128, 64), 2, 1, "128B"), ("Float32", 2, (32, 32), 2, 3, "128B")]
IDS = [f"{d}-cl{c}-{t[0]}x{t[1]}-st{s}-out{o}-{sw}" for d, c, t, s, o, sw in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_pipeline_is_in_the_ptx(case, filecheck, assemble):
    dtype, cluster, tile, stages, out_stages, swizzle = case
    c = _compile(dtype, (512, 384), cluster, tile, stages, out_stages, swizzle)
    ptx = c.ptx
    # the 2 * stages barriers are initialised, fenced and published to the cluster before anyone uses them
    filecheck(ptx, [f"CHECK: .entry {KERNEL}("]
              + ["CHECK: mbarrier.init.shared{{(::cta)?}}.b64"] * (2 * stages)
              + ["CHECK: fence.mbarrier_init.release.cluster;", "CHECK: barrier.cluster.arrive.relaxed",
                 "CHECK: barrier.cluster.wait"])
    # the waits: a try_wait loop on a run-time barrier address and phase
    filecheck(ptx, ["CHECK: LAB_WAIT:",
                    "CHECK-NEXT: mbarrier.try_wait.parity.shared{{(::cta)?}}.b64 P1, [%r{{[0-9]+}}], %r{{[0-9]+}}",
                    "CHECK-NEXT: @P1 bra.uni DONE;", "CHECK-NEXT: bra.uni LAB_WAIT;"])
    # the producer arms the stage's barrier with the whole tile's bytes, then multicasts its slice
    filecheck(ptx, ["CHECK: mbarrier.arrive.expect_tx.shared{{(::cta)?}}.b64",
                    "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                    ".multicast::cluster"])
    # a consumer releases the stage on the barrier of a CTA of the cluster
    filecheck(ptx, ["CHECK: mapa.shared::cluster.u32 %rb, %r{{[0-9]+}}, %r{{[0-9]+}};",
                    "CHECK-NEXT: mbarrier.arrive.release.cta.shared::cluster.b64 _, [%rb]"])
    # the consumers publish their writes to the TMA unit, meet, and one warp stores
    filecheck(ptx, ["CHECK: fence.proxy.async.shared::cta;",
                    f"CHECK-NEXT: bar.sync 1, {32 * CONSUMER_WARPS};"])
    boxes = len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.tile\.bulk_group", ptx))
    assert boxes >= 1
    assert re.search(rf"cp\.async\.bulk\.wait_group\.read\s+{out_stages - 1};", ptx)  # the store pipeline's acquire
    assert re.search(r"cp\.async\.bulk\.wait_group\.read\s+0;", ptx)                    # its tail
    assert ptx.count("cp.async.bulk.commit_group;") >= 1
    assert len(re.findall(rf"bar\.sync\s+1, {32 * CONSUMER_WARPS};", ptx)) == 2
    # no CTA leaves before the cluster is done
    filecheck(ptx, ["CHECK: barrier.cluster.arrive{{(.aligned)?}};", "CHECK-NEXT: barrier.cluster.wait",
                    "CHECK-NEXT: ret;"])
    assert assemble(ptx)[:4] == b"\x7fELF"
    assert c.launches[0].cluster == (cluster, 1, 1)
    assert c.launches[0].block == (32 * (1 + CONSUMER_WARPS), 1, 1)


def test_without_a_cluster_the_loads_do_not_multicast_and_the_release_is_local(assemble):
    c = _compile(cluster=1)
    ptx = c.ptx
    assert ".multicast::cluster" not in ptx and "mapa" not in ptx
    assert "barrier.cluster.arrive.relaxed" not in ptx and re.search(r"bar\.sync\s+0;", ptx)
    assert re.search(r"mbarrier\.arrive\.shared(::cta)?\.b64", ptx)
    assert assemble(ptx)[:4] == b"\x7fELF"


def test_the_stage_index_is_a_run_time_value():
    # one load site, whose shared-memory address and barrier come from the carried stage index
    c = _compile()
    loads = c.ptx.count(".multicast::cluster [")
    assert loads == 1, loads


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(cluster=3), "cluster must be 1, 2 or 4"),
    (dict(stages=1), "stages must be an int in 2..8"),
    (dict(out_stages=0), "out_stages must be an int in 1..4"),
    (dict(tile=(8, 8)), "must split evenly over the 128 consumer threads"),
    (dict(shape=(500, 384)), "must be a multiple of the tile's 64"),
    (dict(swizzle="64B"), "swizzle must be 'none' or '128B'"),
    (dict(tile=(128, 256), stages=8), "bytes of shared memory"),
    (dict(dtype="Int32"), "16- or 32-bit floats"),
])
def test_bad_arguments_are_refused(kwargs, fragment):
    with pytest.raises(cute.CuteValueError, match=re.escape(fragment)):
        _compile(**kwargs)


def test_mismatched_tensors_are_refused():
    with pytest.raises(cute.CuteValueError, match=re.escape("dst must have shape (1024, 384)")):
        cute.compile(warp_specialized_copy, F("Float32", (512, 384)), F("Float32", (512, 384)))
    with pytest.raises(cute.CuteValueError, match="one element type"):
        cute.compile(warp_specialized_copy, F("Float32", (512, 384)), F("Float16", (1024, 384)))
    with pytest.raises(cute.CuteValueError, match="scales must be a tuple of 2 numbers"):
        cute.compile(warp_specialized_copy, F("Float32", (512, 384)), F("Float32", (1024, 384)), (1.0,))
