"""Each op, built alone in a kernel: it verifies, lowers to the expected NVVM/LLVM op, and its PTX
(checked with FileCheck against the PTX ISA spelling) assembles for sm_90a with nvJitLink.
The warp ops have their cases in test_dialect_warp.py."""

import pytest

pytest.importorskip("mlir_dialects._backend", reason="needs the MLIR Python bindings (pip install numba-cuda-mlir==0.6.0)")

import mlir_dialects as md  # noqa: E402

SH = "shared{{(::cta)?}}"  # .shared and .shared::cta name the same state space

# name -> (build(k, c), lowered-IR checks, PTX checks); k: kernel (k.a args, k.s shared), c: const_int
CASES = {
    "cp_async_cg_16_zero_fill": (
        lambda k, c: md.cp_async(k.s["tile"], k.a["g"], 16, modifier="cg", src_size=k.a["z"]),
        ["CHECK: nvvm.cp.async.shared.global"],
        ["CHECK: cp.async.cg.shared.global [{{.*}}], [{{%rd[0-9]+}}], 16, {{%r[0-9]+}};"],
    ),
    "cp_async_ca_4": (
        lambda k, c: md.cp_async(k.s["tile"], k.a["g"], 4),
        ["CHECK: nvvm.cp.async.shared.global"],
        ["CHECK: cp.async.ca.shared.global [{{.*}}], [{{%rd[0-9]+}}], 4;"],
    ),
    "cp_async_ca_8_cache_hint": (
        lambda k, c: md.cp_async(k.s["tile"], k.a["g"], 8, cache_hint=k.a["hint"]),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: cp.async.ca.shared.global.L2::cache_hint [{{%r[0-9]+}}], [{{%rd[0-9]+}}], 8, {{%rd[0-9]+}};"],
    ),
    "cp_async_cg_16_zero_fill_cache_hint": (
        lambda k, c: md.cp_async(k.s["tile"], k.a["g"], 16, modifier="cg", src_size=k.a["z"], cache_hint=k.a["hint"]),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: cp.async.cg.shared.global.L2::cache_hint [{{%r[0-9]+}}], [{{%rd[0-9]+}}], 16, {{%r[0-9]+}}, {{%rd[0-9]+}};"],
    ),
    "cp_async_commit_group": (
        lambda k, c: md.cp_async_commit_group(),
        ["CHECK: nvvm.cp.async.commit.group"],
        ["CHECK: cp.async.commit_group;"],
    ),
    "cp_async_wait_group": (
        lambda k, c: md.cp_async_wait_group(2),
        ["CHECK: nvvm.cp.async.wait.group 2"],
        ["CHECK: cp.async.wait_group 2;"],
    ),
    "cp_async_mbarrier_arrive": (
        lambda k, c: md.cp_async_mbarrier_arrive(k.s["bar"]),
        ["CHECK: nvvm.cp.async.mbarrier.arrive"],
        [f"CHECK: cp.async.mbarrier.arrive.noinc.{SH}.b64 [{{{{.*}}}}];"],
    ),
    "tma_load_2d_multicast": (
        lambda k, c: md.tma_load(k.s["tile"], k.a["desc"], k.s["bar"], [k.a["x"], k.a["y"]],
                                 multicast_mask=k.a["small"]),
        ["CHECK: llvm.addrspacecast {{.*}} : !llvm.ptr<3> to !llvm.ptr<7>",
         "CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global"],
        ["CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
         " [{{%rd[0-9]+}}], [{{%rd[0-9]+}}, {{.}}{{%r[0-9]+}}, {{%r[0-9]+}}{{.}}], [{{.*}}], {{%rs[0-9]+}};"],
    ),
    "tma_load_1d": (
        lambda k, c: md.tma_load(k.s["tile"], k.a["desc"], k.s["bar"], [k.a["x"]]),
        ["CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global"],
        ["CHECK: cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{.*}}], [{{.*}}];"],
    ),
    "tma_load_5d_cache_hint": (
        lambda k, c: md.tma_load(k.s["tile"], k.a["desc"], k.s["bar"], [k.a["x"], k.a["y"], k.a["z"], k.a["x"], k.a["y"]],
                                 cache_hint=k.a["hint"]),
        ["CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global"],
        ["CHECK: cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
         " [{{.*}}], [{{.*}}, {{.}}{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}{{.}}], [{{.*}}], {{%rd[0-9]+}};"],
    ),
    "tma_load_im2col_4d": (
        lambda k, c: md.tma_load_im2col(k.s["tile"], k.a["desc"], k.s["bar"], [k.a["x"], k.a["y"], k.a["z"], k.a["x"]],
                                        [k.a["small"], k.a["small"]]),
        ["CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}im2col"],
        ["CHECK: cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
         " [{{%rd[0-9]+}}], [{{%rd[0-9]+}}, {{.}}{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}{{.}}], [{{.*}}],"
         " {{.}}{{%rs[0-9]+}}, {{%rs[0-9]+}}{{.}};"],
    ),
    "tma_load_im2col_3d_cache_hint": (
        lambda k, c: md.tma_load_im2col(k.s["tile"], k.a["desc"], k.s["bar"], [k.a["x"], k.a["y"], k.a["z"]],
                                        [k.a["small"]], cache_hint=k.a["hint"]),
        ["CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}im2col"],
        ["CHECK: cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.L2::cache_hint"
         " [{{.*}}], [{{.*}}], [{{.*}}], {{.}}{{%rs[0-9]+}}{{.}}, {{%rd[0-9]+}};"],
    ),
    "tma_store_2d": (
        lambda k, c: md.tma_store(k.a["desc"], k.s["tile"], [k.a["x"], k.a["y"]]),
        ["CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta"],
        ["CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{{.*}}], [{{.*}}];"],
    ),
    "tma_store_3d_cache_hint": (
        lambda k, c: md.tma_store(k.a["desc"], k.s["tile"], [k.a["x"], k.a["y"], k.a["z"]], cache_hint=k.a["hint"]),
        ["CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta"],
        ["CHECK: cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group.L2::cache_hint [{{.*}}], [{{.*}}], {{%rd[0-9]+}};"],
    ),
    "tma_store_arrive": (
        lambda k, c: md.tma_store_arrive(),
        ["CHECK: nvvm.cp.async.bulk.commit.group"],
        ["CHECK: cp.async.bulk.commit_group;"],
    ),
    "tma_store_wait_read": (
        lambda k, c: md.tma_store_wait(1, read=True),
        ["CHECK: nvvm.cp.async.bulk.wait_group 1 {read}"],
        ["CHECK: cp.async.bulk.wait_group.read 1;"],
    ),
    "tma_store_wait": (
        lambda k, c: md.tma_store_wait(0),
        ["CHECK: nvvm.cp.async.bulk.wait_group 0"],
        ["CHECK: cp.async.bulk.wait_group 0;"],
    ),
    "prefetch_tensormap": (
        lambda k, c: md.prefetch_tensormap(k.a["desc"]),
        ["CHECK: nvvm.prefetch tensormap"],
        ["CHECK: prefetch{{(.param)?}}.tensormap [{{.*}}];"],
    ),
    "tma_prefetch_tile_3d": (
        lambda k, c: md.tma_prefetch_tile(k.a["desc"], [k.a["x"], k.a["y"], k.a["z"]]),
        ["CHECK: nvvm.cp.async.bulk.tensor.prefetch"],
        ["CHECK: cp.async.bulk.prefetch.tensor.3d.L2.global.tile [{{.*}}];"],
    ),
    "tensormap_replace_global_address": (
        lambda k, c: md.tensormap_replace(k.s["tmap"], "global_address", k.a["addr"]),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: tensormap.replace.tile.global_address.shared::cta.b1024.b64 [{{%r[0-9]+}}], {{%rd[0-9]+}};"],
    ),
    "tensormap_replace_global_dim": (
        lambda k, c: md.tensormap_replace(k.s["tmap"], "global_dim", k.a["x"], 2),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [{{%r[0-9]+}}], 2, {{%r[0-9]+}};"],
    ),
    "tensormap_replace_global_stride_in_global": (
        lambda k, c: md.tensormap_replace(k.a["g2"], "global_stride", k.a["addr"], 1),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: tensormap.replace.tile.global_stride.global.b1024.b64 [{{%rd[0-9]+}}], 1, {{%rd[0-9]+}};"],
    ),
    "tensormap_copy_global_to_shared": (
        lambda k, c: md.tensormap_copy(k.s["tmap"], k.a["g2"]),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: ld.global.v2.b64 {{.*}}, [{{%rd[0-9]+}}+0];", "CHECK: st.shared.v2.b64 [{{%r[0-9]+}}+0], ",
         "CHECK: ld.global.v2.b64 {{.*}}, [{{%rd[0-9]+}}+112];", "CHECK: st.shared.v2.b64 [{{%r[0-9]+}}+112], "],
    ),
    "tensormap_copy_shared_to_global": (
        lambda k, c: md.tensormap_copy(k.a["g2"], k.s["tmap"]),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: ld.shared.v2.b64 {{.*}}, [{{%r[0-9]+}}+0];", "CHECK: st.global.v2.b64 [{{%rd[0-9]+}}+0], "],
    ),
    "fence_tensormap_acquire": (
        lambda k, c: md.fence_tensormap_acquire(k.a["desc"]),
        ["CHECK: nvvm.fence.proxy.acquire"],
        ["CHECK: fence.proxy.tensormap::generic.acquire.gpu [{{.*}}], 128;"],
    ),
    "fence_tensormap_release": (
        lambda k, c: md.fence_tensormap_release(),
        ["CHECK: nvvm.fence.proxy.release"],
        ["CHECK: fence.proxy.tensormap::generic.release.gpu;"],
    ),
    "cp_fence_tensormap_release": (
        lambda k, c: md.cp_fence_tensormap_release(k.a["g2"], k.s["tmap"]),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned"
         " [{{%rd[0-9]+}}], [{{%r[0-9]+}}], 128;"],
    ),
    "mbarrier_init": (
        lambda k, c: md.mbarrier_init(k.s["bar"], c(128)),
        ["CHECK: nvvm.mbarrier.init"],
        [f"CHECK: mbarrier.init.{SH}.b64 [{{{{.*}}}}], {{{{%r[0-9]+}}}};"],
    ),
    "mbarrier_arrive": (
        lambda k, c: md.mbarrier_arrive(k.s["bar"]),
        ["CHECK: nvvm.mbarrier.arrive"],
        [f"CHECK: mbarrier.arrive.{SH}.b64 {{{{%rd[0-9]+}}}}, [{{{{.*}}}}];"],
    ),
    "mbarrier_arrive_cluster": (
        lambda k, c: md.mbarrier_arrive_cluster(k.s["bar"], k.a["peer"]),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: mapa.shared::cluster.u32 [[R:%[a-z0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};",
         "CHECK-NEXT: mbarrier.arrive.release.cluster.shared::cluster.b64 _, {{\\[}}[[R]]];"],
    ),
    "mbarrier_arrive_expect_tx": (
        lambda k, c: md.mbarrier_arrive_expect_tx(k.s["bar"], c(4096)),
        ["CHECK: nvvm.mbarrier.arrive.expect_tx"],
        [f"CHECK: mbarrier.arrive.expect_tx.{SH}.b64 {{{{.*}}}}, [{{{{.*}}}}], {{{{%r[0-9]+}}}};"],
    ),
    "mbarrier_expect_tx": (
        lambda k, c: md.mbarrier_expect_tx(k.s["bar"], c(4096)),
        ["CHECK: nvvm.mbarrier.expect_tx"],
        [f"CHECK: mbarrier.expect_tx.relaxed.cta.{SH}.b64 [{{{{.*}}}}], {{{{%r[0-9]+}}}};"],
    ),
    "mbarrier_try_wait_parity": (
        lambda k, c: md.mbarrier_try_wait_parity(k.s["bar"], k.a["z"]),
        ["CHECK: llvm.inline_asm", "CHECK: llvm.icmp \"ne\""],
        ["CHECK: mbarrier.try_wait.parity.shared::cta.b64 [[P:%[a-z0-9]+]], [{{%r[0-9]+}}], {{%r[0-9]+}};",
         "CHECK-NEXT: selp.u32 {{%r[0-9]+}}, 1, 0, [[P]];"],
    ),
    "mbarrier_wait_parity": (
        lambda k, c: md.mbarrier_wait_parity(k.s["bar"], c(0)),
        ["CHECK: nvvm.mbarrier.try_wait.parity"],
        ["CHECK: [[L:[A-Za-z_0-9]+]]:",
         f"CHECK: mbarrier.try_wait.parity.{SH}.b64 [[P:[%A-Za-z0-9]+]], [{{{{%r[0-9]+}}}}], 0, {{{{[0-9]+}}}};",
         "CHECK: @[[P]] bra{{(.uni)?}} [[D:[A-Za-z_0-9]+]];", "CHECK: bra{{(.uni)?}} [[L]];", "CHECK: [[D]]:"],
    ),
    "fence_mbarrier_init": (
        lambda k, c: md.fence_mbarrier_init(),
        ["CHECK: nvvm.fence.mbarrier.init"],
        ["CHECK: fence.mbarrier_init.release.cluster;"],
    ),
    "fence_proxy_async_shared_cta": (
        lambda k, c: md.fence_proxy_async("shared::cta"),
        ["CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}"],
        ["CHECK: fence.proxy.async.shared::cta;"],
    ),
    "fence_proxy_async_shared_cluster": (
        lambda k, c: md.fence_proxy_async("shared::cluster"),
        ["CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cluster>}"],
        ["CHECK: fence.proxy.async.shared::cluster;"],
    ),
    "fence_proxy_async_global": (
        lambda k, c: md.fence_proxy_async("global"),
        ["CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}"],
        ["CHECK: fence.proxy.async.global;"],
    ),
    "cluster_arrive": (
        lambda k, c: md.cluster_arrive(),
        ["CHECK: nvvm.cluster.arrive {aligned}"],
        ["CHECK: barrier.cluster.arrive.aligned;"],
    ),
    "cluster_arrive_relaxed": (
        lambda k, c: md.cluster_arrive(relaxed=True),
        ["CHECK: nvvm.cluster.arrive.relaxed {aligned}"],
        ["CHECK: barrier.cluster.arrive.relaxed.aligned;"],
    ),
    "cluster_wait": (
        lambda k, c: md.cluster_wait(),
        ["CHECK: nvvm.cluster.wait {aligned}"],
        ["CHECK: barrier.cluster.wait.aligned;"],
    ),
    "elect_sync": (
        lambda k, c: md.elect_sync(),
        ["CHECK: nvvm.elect.sync -> i1"],
        ["CHECK: elect.sync {{%r[0-9]+}}|{{%p[0-9]+}}, -1;"],
    ),
    "dsmem_store_b32": (
        lambda k, c: md.dsmem_store(k.s["tile"], k.a["val"], k.s["bar"], k.a["peer"]),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: mapa.shared::cluster.u32 [[A:%[a-z0-9]+]], {{%r[0-9]+}}, [[C:%r[0-9]+]];",
         "CHECK-NEXT: mapa.shared::cluster.u32 [[B:%[a-z0-9]+]], {{%r[0-9]+}}, [[C]];",
         "CHECK-NEXT: st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 {{\\[}}[[A]]], {{%r[0-9]+}}, {{\\[}}[[B]]];"],
    ),
    "dsmem_store_b64": (
        lambda k, c: md.dsmem_store(k.s["tile"], k.a["hint"], k.s["bar"], k.a["peer"]),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [{{%[a-z0-9]+}}], {{%rd[0-9]+}}, [{{%[a-z0-9]+}}];"],
    ),
    "dsmem_store_f32": (
        lambda k, c: md.dsmem_store(k.s["tile"], k.a["f"], k.s["bar"], k.a["peer"]),
        ["CHECK: llvm.inline_asm"],
        ["CHECK: st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [{{%[a-z0-9]+}}], {{%f[0-9]+|%r[0-9]+}}, [{{%[a-z0-9]+}}];"],
    ),
}

for _kind in ("add", "min", "max", "inc", "dec", "and", "or", "xor"):
    CASES[f"tma_reduce_{_kind}"] = (
        lambda k, c, kind=_kind: md.tma_reduce(k.a["desc"], k.s["tile"], [k.a["x"], k.a["y"]], kind),
        [f"CHECK: nvvm.cp.async.bulk.tensor.reduce {{{{.*}}}} {{redKind = #nvvm.tma_redux_kind<{_kind}>"],
        [f"CHECK: cp.reduce.async.bulk.tensor.2d.global.shared::cta.{_kind}.tile.bulk_group [{{{{.*}}}}], [{{{{.*}}}}];"],
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_verifies_lowers_and_assembles_for_sm_90a(case, op_case):
    op_case(*CASES[case])


def test_every_op_has_a_filecheck_case_and_a_lowering_rule():
    from test_dialect_mma import CASES as MMA_CASES  # the numeric, warp, MMA and WGMMA ops' cases, beside
    from test_dialect_numeric import CASES as NUMERIC_CASES  # their verifier tests
    from test_dialect_warp import CASES as WARP_CASES
    from test_dialect_inline_ptx import CASES as INLINE_PTX_CASES  # the ops of the builtins' inline PTX
    from test_dialect_wgmma import CASES as WGMMA_CASES

    ops = {c.OPERATION_NAME.split(".")[1] for c in md.all_op_classes()}
    cases = (set(CASES) | set(WARP_CASES) | set(NUMERIC_CASES) | set(MMA_CASES) | set(WGMMA_CASES)
             | set(INLINE_PTX_CASES))
    missing = [op for op in sorted(ops) if not any(case == op or case.startswith(op + "_") for case in cases)]
    assert not missing, f"ops with no FileCheck case: {missing}"
    assert {name.split(".")[1] for name in md.RULES} == ops
