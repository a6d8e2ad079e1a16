"""``cute_py.arch`` has the CuTe DSL's ``cute.arch`` names that make sense on sm_90a, with the DSL's parameters (the
positional ones in order, the keyword-only ones keyword-only), and only the Blackwell-only ones (and names the DSL
lists without defining) are missing."""

import inspect

import pytest

import cute_py as cute
from cute_py import arch

# the DSL's parameters (positional ones, then "|" and the keyword-only ones), read off its cute/arch modules
DSL = {
    "make_warp_uniform": "value", "elect_one": "", "mbarrier_init": "mbar_ptr cnt", "mbarrier_init_fence": "",
    "mbarrier_arrive_and_expect_tx": "mbar_ptr bytes peer_cta_rank_in_cluster relaxed scope",
    "mbarrier_expect_tx": "mbar_ptr bytes peer_cta_rank_in_cluster | scope", "mbarrier_wait": "mbar_ptr phase",
    "mbarrier_try_wait": "mbar_ptr phase", "mbarrier_conditional_try_wait": "cond mbar_ptr phase",
    "mbarrier_arrive": "mbar_ptr peer_cta_rank_in_cluster arrive_count | scope",
    "mbarrier_test_wait": "mbar_ptr phase", "lane_idx": "", "warp_idx": "", "physical_warp_id": "", "thread_idx": "",
    "block_dim": "", "block_idx": "", "grid_dim": "", "cluster_idx": "", "cluster_dim": "", "cluster_size": "",
    "block_in_cluster_idx": "", "block_in_cluster_dim": "", "block_idx_in_cluster": "", "dynamic_smem_size": "",
    "shuffle_sync": "value offset mask mask_and_clamp", "shuffle_sync_up": "value offset mask",
    "shuffle_sync_down": "value offset mask mask_and_clamp", "shuffle_sync_bfly": "value offset mask mask_and_clamp",
    "barrier": " | barrier_id number_of_threads", "barrier_arrive": " | barrier_id number_of_threads aligned",
    "sync_threads": "", "sync_warp": "mask", "fence_acq_rel_cta": "", "fence_acq_rel_cluster": "",
    "fence_acq_rel_gpu": "", "fence_acq_rel_sys": "", "cp_async_commit_group": "", "cp_async_wait_group": "n",
    "cp_async_shared_global": "dst src size modifier | cp_size", "cp_async_bulk_commit_group": "",
    "cp_async_bulk_wait_group": "group | read", "cluster_wait": "", "cluster_arrive": " | aligned",
    "cluster_arrive_relaxed": " | aligned", "vote_ballot_sync": "pred mask", "vote_any_sync": "pred mask",
    "vote_all_sync": "pred mask", "vote_uni_sync": "pred mask",
    "warp_redux_sync": "value kind mask_and_clamp | abs nan", "atomic_max_float32": "ptr value | positive_only",
    "atomic_fmax": "ptr val | sign_bit sem scope", "atomic_fmin": "ptr val | sign_bit sem scope",
    "atomic_add": "ptr val | sem scope", "atomic_and": "ptr val | sem scope", "atomic_or": "ptr val | sem scope",
    "atomic_xor": "ptr val | sem scope", "atomic_max": "ptr val | sem scope", "atomic_min": "ptr val | sem scope",
    "atomic_exch": "ptr val | sem scope", "atomic_cas": "ptr | cmp val sem scope",
    "store": "ptr val | level1_eviction_priority cop ss sem scope",
    "load": "ptr dtype | sem scope level1_eviction_priority cop ss level_prefetch_size",
    "red": "ptr val | op dtype sem scope", "popc": "value", "fence_proxy": "kind | space use_intrinsic",
    "warpgroup_reg_alloc": "reg_count", "warpgroup_reg_dealloc": "reg_count", "setmaxregister_increase": "reg_count",
    "setmaxregister_decrease": "reg_count", "fmax": "a b | abs nan ftz", "fmin": "a b | abs nan ftz",
    "rcp_approx": "a", "exp2": "a", "cvt_i8x4_to_f32x4": "src_vec4", "cvt_i8x2_to_f32x2": "src_vec2",
    "cvt_i8_bf16": "src_i8", "cvt_i8x2_to_bf16x2": "src_vec2", "cvt_i8x4_to_bf16x4": "src_vec4",
    "cvt_f32_tf32": "src_f32", "cvt_f32x2_bf16x2": "src_vec2", "smid": "", "nsmid": "", "total_smem_size": "",
    "gridid": "", "nwarpid": "", "warpsize": "", "globaltimer": "", "globaltimer_lo": "", "clock": "", "clock64": "",
    "match_sync": "mask value kind", "clz": "value", "bfind": "value", "brev": "value", "bfe": "value start length",
    "bfi": "replacement value start length", "mul_hi": "a b", "mul_wide": "a b", "mul24": "a b hi",
    "mad24": "a b c hi", "add_cc": "a b", "addc": "a b", "sub_cc": "a b", "subc": "a b", "mad_cc": "a b c",
    "madc": "a b c", "activemask": "", "lanemask_lt": "", "lanemask_le": "", "lanemask_eq": "", "lanemask_ge": "",
    "lanemask_gt": "", "add_sat_int": "a b", "sub_sat_int": "a b", "lop3": "a b c lut", "shf": "a b shift kind",
    "alloc_smem": "element_type size_in_elems alignment", "get_dyn_smem": "element_type alignment",
    "get_dyn_smem_size": "", "store_async_dsmem": "smem_ptr value mbar_ptr peer_cta_rank",
    "prmt": "src src_reg_shifted prmt_indices", "cvt_i8_bf16_intrinsic": "vec_i8 length",
}
CONSTANTS = {"WARP_SIZE": 32, "WARPS_PER_WARPGROUP": 4, "THREADS_PER_WARPGROUP": 128}
# names of the DSL's cute.arch.__all__ not offered, and why
ABSENT = {
    "fence_view_async_tmem_load": "tcgen05 (sm_100a)", "fence_view_async_tmem_store": "tcgen05 (sm_100a)",
    "fma_packed_f32x2": "packed f32x2 (sm_100a)", "mul_packed_f32x2": "packed f32x2 (sm_100a)",
    "add_packed_f32x2": "packed f32x2 (sm_100a)", "sub_packed_f32x2": "packed f32x2 (sm_100a)",
    "get_max_tmem_alloc_cols": "TMEM", "get_min_tmem_alloc_cols": "TMEM", "retrieve_tmem_ptr": "TMEM",
    "alloc_tmem": "TMEM", "relinquish_tmem_alloc_permit": "TMEM", "dealloc_tmem": "TMEM",
    "issue_clc_query": "cluster launch control (sm_100a)", "clc_response": "cluster launch control (sm_100a)",
    "cvt_i4_bf16_intrinsic": "the DSL offers it for sm_100a and later only",
    "aggr_smem_size": "%aggr_smem_size needs PTX ISA 8.1 (kernels are PTX ISA 8.0)",
    # listed in the DSL's __all__ but defined nowhere in it
    "fma_f16": "", "fma_bf16": "", "fma_packed_f16x2": "", "fma_packed_bf16x2": "",
    "fma_packed_f32x2_f16x2_f32x2_f32x2": "", "fma_packed_f32x2_bf16x2_f32x2_f32x2": "",
    "cvt_f4e2m1_f16_intrinsic": "",
}


def _params(fn):
    ps = inspect.signature(fn).parameters.values()
    pos = [p for p in ps if p.kind is p.POSITIONAL_OR_KEYWORD]
    kw = [p for p in ps if p.kind is p.KEYWORD_ONLY]
    return pos, kw


@pytest.mark.parametrize("name", sorted(DSL))
def test_each_dsl_name_is_there_with_the_dsls_parameters(name):
    fn = getattr(arch, name)
    assert name in arch.__all__ and callable(fn)
    text = DSL[name]
    dsl_pos, _, dsl_kw = text.partition(" | ")
    dsl_pos, dsl_kw = dsl_pos.split(), dsl_kw.split()
    pos, kw = _params(fn)
    assert [p.name for p in pos[:len(dsl_pos)]] == dsl_pos, name
    assert set(dsl_kw) <= {p.name for p in kw}, name  # keyword-only where the DSL's are
    # what cute_py adds has a default: every DSL call binds
    assert all(p.default is not p.empty for p in pos[len(dsl_pos):]) and all(
        p.default is not p.empty for p in kw if p.name not in dsl_kw), name


def test_the_constants():
    for name, value in CONSTANTS.items():
        assert getattr(arch, name) == value and name in arch.__all__


def test_absent_names_are_absent_and_listed():
    assert not any(hasattr(arch, n) for n in ABSENT)
    assert set(DSL).isdisjoint(ABSENT)


def test_cute_arch_is_cute_py_arch():
    assert cute.arch is arch
    assert all(hasattr(arch, n) for n in arch.__all__)


def test_the_older_names_are_gone():
    # renamed to the DSL's names (shuffle_sync_up, barrier, vote_*_sync, setmaxregister_*, mbarrier_init_fence...);
    # set_max_nreg, fence_proxy_async and cp_async_barrier_noinc are back as TileLang's names (test_arch_names.py)
    for old in ("shuffle_up_sync", "shuffle_down_sync", "shuffle_xor_sync", "barrier_sync", "vote_any", "vote_all",
                "vote_uni", "vote_ballot", "active_mask", "fence_mbarrier_init", "mbarrier_remote_arrive"):
        assert not hasattr(arch, old), old
