"""``cute_py.arch``: the kernel builtins, with the CuTe DSL's ``cute.arch`` names, signatures and meanings.

- indices, ``elect_one``, ``make_warp_uniform``, block and cluster barriers, cp.async groups, DSMEM addresses
  (:mod:`cute_py.compiler.builtins.arch`);
- mbarriers (:mod:`~cute_py.compiler.builtins.arch_mbar`);
- named barriers, fences, bulk-copy groups, register reallocation (:mod:`~cute_py.compiler.builtins.arch_sync`);
- the grid-wide barrier ``sync_grid`` of cooperative launches (:mod:`~cute_py.compiler.builtins.arch_grid`);
- shuffles, votes, ``activemask``, ``match_sync``, ``warp_redux_sync`` (:mod:`~cute_py.compiler.builtins.arch_warp`);
- special registers: shared-memory sizes, SM ids, clocks, lane masks (:mod:`~cute_py.compiler.builtins.arch_sreg`);
- shared memory: ``alloc_smem``, ``get_dyn_smem``, ``store_async_dsmem`` (:mod:`~cute_py.compiler.builtins.arch_smem`);
- integer instructions: ``popc``, ``clz``, ``bfe``, ``lop3``, ``prmt``... (:mod:`~cute_py.compiler.builtins.arch_int`);
- atomics, ordered loads and stores, reductions (:mod:`~cute_py.compiler.builtins.arch_atomic`);
- float instructions and conversions (:mod:`~cute_py.compiler.builtins.arch_float`);
- cute_py's own vector global loads and stores ``ldg``/``stg`` (:mod:`~cute_py.compiler.builtins.arch_global`);
- TileLang's builtin names: aliases of the above, logical warp sizes, ``loop_break``, the register plan of
  warp-specialised kernels, ``access_ptr`` (:mod:`~cute_py.compiler.builtins.arch_names`);
- TileLang's warpgroup MMA builtins: ``warpgroup_arrive``, ``warpgroup_commit_batch``, ``warpgroup_wait``,
  ``wait_wgmma``, ``warpgroup_fence_operand``, WGMMA descriptors (:mod:`~cute_py.compiler.builtins.arch_wgmma`).

The DSL's Blackwell-only names (TMEM, cluster launch control, tcgen05 fences, packed f32x2 arithmetic,
FP4 conversions) are not offered: the kernels here target sm_90a. Two tcgen05 names of TileLang's surface are
(:mod:`~cute_py.compiler.builtins.arch_tcgen05`, for compiles with ``--gpu-arch sm_100a``; built and assembled,
never run here: no Blackwell GPU). Importing this module loads the compiler.
"""

from .compiler.builtins.arch import (block_dim, block_idx, block_idx_in_cluster, block_in_cluster_dim,
                                     block_in_cluster_idx, block_rank_in_cluster, cluster_arrive,
                                     cluster_arrive_relaxed, cluster_dim, cluster_idx, cluster_shape, cluster_size,
                                     cluster_sync, cluster_wait, cp_async_commit_group, cp_async_shared_global,
                                     cp_async_wait_group, elect_one, grid_dim, lane_idx, make_warp_uniform,
                                     map_dsmem_ptr, SmemAllocator, sync_threads, thread_idx, THREADS_PER_WARPGROUP,
                                     tma_store_arrive, tma_store_wait, warp_idx, WARP_SIZE, WARPS_PER_WARPGROUP)
from .compiler.builtins.arch_atomic import (atomic_add, atomic_and, atomic_cas, atomic_exch, atomic_fmax,
                                            atomic_fmin, atomic_max, atomic_max_float32, atomic_min, atomic_or,
                                            atomic_xor, load, red, store)
from .compiler.builtins.arch_float import (cvt_f32_bf16, cvt_f32_tf32, cvt_f32x2_bf16x2, cvt_i8_bf16,
                                           cvt_i8_bf16_intrinsic, cvt_i8x2_to_bf16x2, cvt_i8x2_to_f32x2,
                                           cvt_i8x4_to_bf16x4, cvt_i8x4_to_f32x4, exp2, fmax, fmin, rcp_approx)
from .compiler.builtins.arch_global import ldg, ldg128, ldg256, ldg32, ldg64, stg, stg128, stg256, stg32, stg64
from .compiler.builtins.arch_grid import sync_global, sync_grid
from .compiler.builtins.arch_int import (add_cc, add_sat_int, addc, bfe, bfi, bfind, brev, clz, lop3, mad24, mad_cc,
                                         madc, mul24, mul_hi, mul_wide, popc, prmt, shf, sub_cc, sub_sat_int, subc)
from .compiler.builtins.arch_mma_sm70 import ptx_mma_sm70
from .compiler.builtins.arch_names import (access_ptr, annotate_consumer_reg_alloc, annotate_producer_reg_dealloc,
                                           barrier_wait, cp_async_barrier_noinc, create_tma_descriptor, dec_max_nreg,
                                           disable_warp_group_reg_alloc, fence_proxy_async, get_lane_idx,
                                           get_warp_group_idx, get_warp_idx, get_warp_idx_sync, inc_max_nreg,
                                           loop_break, mbarrier_wait_parity, no_set_max_nreg,
                                           ptx_arrive_cluster_barrier, set_max_nreg, shfl_down, shfl_sync, shfl_up,
                                           shfl_xor, tma_load)
from .compiler.builtins.arch_mbar import (cp_async_mbarrier_arrive_noinc, mbarrier_arrive,
                                          mbarrier_arrive_and_expect_tx, mbarrier_conditional_try_wait,
                                          mbarrier_expect_tx, mbarrier_init, mbarrier_init_fence, mbarrier_test_wait,
                                          mbarrier_try_wait, mbarrier_wait)
from .compiler.builtins.arch_smem import alloc_smem, get_dyn_smem, get_dyn_smem_size, store_async_dsmem
from .compiler.builtins.arch_sreg import (clock, clock64, dynamic_smem_size, globaltimer, globaltimer_lo, gridid,
                                          lanemask_eq, lanemask_ge, lanemask_gt, lanemask_le, lanemask_lt, nsmid,
                                          nwarpid, physical_warp_id, smid, total_smem_size, warpsize)
from .compiler.builtins.arch_sync import (barrier, barrier_arrive, cp_async_bulk_commit_group,
                                          cp_async_bulk_wait_group, fence_acq_rel_cluster, fence_acq_rel_cta,
                                          fence_acq_rel_gpu, fence_acq_rel_sys, fence_proxy, fence_view_async_shared,
                                          FULL_MASK, griddepcontrol_launch_dependents, griddepcontrol_wait,
                                          setmaxregister_decrease, setmaxregister_increase, sync_warp, trap,
                                          warpgroup_reg_alloc, warpgroup_reg_dealloc)
from .compiler.builtins.arch_tcgen05 import initialize_tcgen05_descriptor, tcgen05_mma_arrive
from .compiler.builtins.arch_wgmma import (increase_descriptor_offset, initialize_wgmma_descriptor, wait_wgmma,
                                           warpgroup_arrive, warpgroup_commit_batch, warpgroup_fence_operand,
                                           warpgroup_wait)
from .compiler.builtins.arch_warp import (activemask, elect_one_sync, match_sync, shuffle_elect, shuffle_sync,
                                          shuffle_sync_bfly, shuffle_sync_down, shuffle_sync_op, shuffle_sync_up,
                                          vote_all_sync, vote_any_sync, vote_ballot_sync, vote_uni_sync,
                                          warp_group_idx, warp_redux_sync, warp_reduction, warp_reduction_max,
                                          warp_reduction_sum)

__all__ = [
    # constants
    "WARP_SIZE", "WARPS_PER_WARPGROUP", "THREADS_PER_WARPGROUP", "FULL_MASK",
    # indices
    "thread_idx", "block_idx", "block_dim", "grid_dim", "cluster_idx", "cluster_dim", "block_in_cluster_idx",
    "block_in_cluster_dim", "block_idx_in_cluster", "cluster_size", "lane_idx", "warp_idx", "physical_warp_id",
    "cluster_shape", "block_rank_in_cluster", "warp_group_idx",
    # election
    "make_warp_uniform", "elect_one", "elect_one_sync", "shuffle_elect",
    # barriers and fences
    "sync_threads", "sync_warp", "barrier", "barrier_arrive", "cluster_arrive", "cluster_arrive_relaxed",
    "cluster_wait", "cluster_sync", "fence_proxy", "fence_view_async_shared", "fence_acq_rel_cta",
    "fence_acq_rel_cluster", "fence_acq_rel_gpu", "fence_acq_rel_sys",
    # mbarriers
    "mbarrier_init", "mbarrier_init_fence", "mbarrier_arrive", "mbarrier_arrive_and_expect_tx", "mbarrier_expect_tx",
    "mbarrier_wait", "mbarrier_try_wait", "mbarrier_test_wait", "mbarrier_conditional_try_wait",
    "cp_async_mbarrier_arrive_noinc",
    # copies and their groups
    "cp_async_commit_group", "cp_async_wait_group", "cp_async_shared_global", "cp_async_bulk_commit_group",
    "cp_async_bulk_wait_group", "tma_store_arrive", "tma_store_wait",
    # warps
    "shuffle_sync", "shuffle_sync_up", "shuffle_sync_down", "shuffle_sync_bfly", "shuffle_sync_op", "warp_reduction",
    "warp_reduction_max", "warp_reduction_sum", "vote_ballot_sync",
    "vote_any_sync", "vote_all_sync", "vote_uni_sync", "activemask", "match_sync", "warp_redux_sync",
    "lanemask_lt", "lanemask_le", "lanemask_eq", "lanemask_ge", "lanemask_gt",
    # registers
    "setmaxregister_increase", "setmaxregister_decrease", "warpgroup_reg_alloc", "warpgroup_reg_dealloc",
    # programmatic dependent launch
    "griddepcontrol_wait", "griddepcontrol_launch_dependents",
    # aborting the launch
    "trap",
    # special registers
    "dynamic_smem_size", "total_smem_size", "smid", "nsmid", "nwarpid", "warpsize", "gridid", "clock", "clock64",
    "globaltimer", "globaltimer_lo",
    # shared memory
    "SmemAllocator", "alloc_smem", "get_dyn_smem", "get_dyn_smem_size", "map_dsmem_ptr", "store_async_dsmem",
    # integers
    "popc", "clz", "bfind", "brev", "bfe", "bfi", "mul_hi", "mul_wide", "mul24", "mad24", "add_cc", "addc",
    "sub_cc", "subc", "mad_cc", "madc", "add_sat_int", "sub_sat_int", "lop3", "shf", "prmt",
    # memory: atomics, ordered loads and stores, reductions
    "atomic_add", "atomic_and", "atomic_or", "atomic_xor", "atomic_max", "atomic_min", "atomic_exch", "atomic_cas",
    "atomic_fmax", "atomic_fmin", "atomic_max_float32", "load", "store", "red",
    # floats
    "fmax", "fmin", "rcp_approx", "exp2", "cvt_f32_tf32", "cvt_f32_bf16", "cvt_f32x2_bf16x2", "cvt_i8_bf16",
    "cvt_i8x2_to_bf16x2", "cvt_i8x4_to_bf16x4", "cvt_i8x2_to_f32x2", "cvt_i8x4_to_f32x4", "cvt_i8_bf16_intrinsic",
    # cute_py's vector global loads and stores
    "ldg", "stg", "ldg32", "ldg64", "ldg128", "ldg256", "stg32", "stg64", "stg128", "stg256",
    # TileLang's builtin names
    "get_lane_idx", "get_warp_idx", "get_warp_idx_sync", "get_warp_group_idx", "shfl_xor", "shfl_down", "shfl_up",
    "shfl_sync", "mbarrier_wait_parity", "barrier_wait", "ptx_arrive_cluster_barrier", "cp_async_barrier_noinc",
    "fence_proxy_async", "set_max_nreg", "inc_max_nreg", "dec_max_nreg", "annotate_producer_reg_dealloc",
    "annotate_consumer_reg_alloc", "no_set_max_nreg", "disable_warp_group_reg_alloc", "loop_break", "access_ptr",
    "create_tma_descriptor", "tma_load", "sync_grid", "sync_global", "ptx_mma_sm70",
    # Hopper's warpgroup MMA under TileLang's names
    "warpgroup_arrive", "warpgroup_commit_batch", "warpgroup_wait", "wait_wgmma", "warpgroup_fence_operand",
    "initialize_wgmma_descriptor", "increase_descriptor_offset",
    # Blackwell (compiled with --gpu-arch sm_100a)
    "tcgen05_mma_arrive", "initialize_tcgen05_descriptor",
]
