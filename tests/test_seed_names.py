"""Every public name of the five founding API documents, seed by seed: where cute_py has it, and the leading
parameters each function takes (the documents' names and order, so their calls port as written). Behaviours are
tested where each capability lives (the README's sections name them)."""

import inspect

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.nvgpu import cpasync

# (module, name) -> the leading parameter names of the document's signature (None: a value or a class)
SEED_000 = {  # TileLang's CuTe-DSL contrib ``cpasync``
    "BYTES_PER_TENSORMAP": 128, "BYTES_PER_POINTER": 8,
    "cp_async_gs": ("size", "dst", "src"), "cp_async_gs_conditional": ("size", "dst", "src", "cond"),
    "extract_tensormap_ptr": ("tma_atom",), "tma_load": ("tma_desc", "mbar", "smem_ptr", "crd"),
    "tma_store": ("tma_desc", "smem_ptr", "crd"), "tma_store_arrive": (), "tma_store_wait": ("count",),
    "cp_async_shared_global": ("dst", "src", "cp_size", "modifier"), "prefetch_tma_descriptor": ("tma_desc",),
}
SEED_001 = {  # the CuTe DSL's ``cutlass.cute.nvgpu.cpasync``
    "LoadCacheMode": None, "CopyG2SOp": None, "CopyBulkTensorTileG2SOp": None, "CopyBulkTensorTileG2SMulticastOp": None,
    "CopyBulkTensorTileS2GOp": None, "CopyReduceBulkTensorTileS2GOp": None, "CopyDsmemStoreOp": None,
    # the DSL spells the third parameter ``smem_layout_``; cute_py ``smem_layout`` (passed by position in its docs)
    "make_tiled_tma_atom": ("op", "gmem_tensor", "smem_layout", "cta_tiler", "num_multicast"),
    "tma_partition": ("atom", "cta_coord", "cta_layout", "smem_tensor", "gmem_tensor"),
    "create_tma_multicast_mask": ("cta_layout_vmnk", "cta_coord_vmnk", "mcast_mode"),
    "prefetch_descriptor": ("tma_atom",), "copy_tensormap": ("tma_atom", "tensormap_ptr"),
    "update_tma_descriptor": ("tma_atom", "gmem_tensor", "tma_desc_ptr"),
    "fence_tma_desc_acquire": ("tma_desc_ptr",),
    "cp_fence_tma_desc_release": ("tma_desc_global_ptr", "tma_desc_shared_ptr"), "fence_tma_desc_release": (),
}
SEED_004 = {  # TileLang's ``language.copy_op``
    "copy": None, "async_copy": ("src", "dst"), "tma_copy": ("src", "dst"),
    "c2d_im2col": ("img", "col", "nhw_step", "c_step", "kernel", "stride", "dilation", "pad", "eviction_policy"),
}


def _leading(fn, n):
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return tuple(p.name for p in params[:n])


@pytest.mark.parametrize("module, names", [(cpasync, SEED_000), (cpasync, SEED_001), (cute, SEED_004)],
                         ids=["seed 000", "seed 001", "seed 004"])
def test_each_name_of_the_seed_is_there_with_its_leading_parameters(module, names):
    for name, want in names.items():
        assert hasattr(module, name), name
        obj = getattr(module, name)
        if isinstance(want, int):
            assert obj == want, name
        elif isinstance(want, tuple):
            assert _leading(obj, len(want)) == want, name


def test_seed_000_and_001_names_are_exported():
    assert set(SEED_000) | set(SEED_001) <= set(cpasync.__all__)


def test_seed_002_the_tile_copier_has_the_documented_parameters_and_methods():
    cls = cpasync.GenericToSharedAsyncTileCopier
    params = inspect.signature(cls).parameters
    for name in ("thread_layout", "swizzle", "masked", "eviction_policy", "num_threads", "thread_scope"):
        assert name in params, name
    assert params["swizzle"].default is None and params["masked"].default is False
    assert _leading(cls.copy, 3) == ("self", "dst", "src")
    assert _leading(cls.copy_bounded, 4) == ("self", "dst", "src", "src_num_valid_rows")
    assert {p.name for p in cpasync.EvictionPolicy} == {"NORMAL", "FIRST", "LAST"}
    assert {s.name for s in cpasync.ThreadScope} == {"BLOCK", "WARP"}


def test_seed_003_every_builtin_name_is_in_arch():
    from tests.jit.test_arch_names import NOT_YET, TILELANG_BUILTINS

    assert NOT_YET == {}
    for name in TILELANG_BUILTINS:
        assert hasattr(arch, name), name
    signatures = {"get_warp_group_idx": ("warp_size", "warps_per_group"), "shfl_sync": ("mask", "value", "srcLane"),
                  "set_max_nreg": ("reg_count", "is_inc"), "mbarrier_wait_parity": ("mbarrier", "parity"),
                  "ptx_arrive_cluster_barrier": ("mbarrier", "cta_id"), "shuffle_elect": ("thread_extent",),
                  "access_ptr": ("base", "access_type"), "tcgen05_mma_arrive": ("mbar",),
                  "initialize_tcgen05_descriptor": ("descriptor", "start_address", "leading_byte_offset",
                                                    "stride_byte_offset", "base_offset", "leading_is_absolute",
                                                    "swizzle_mode"),
                  "ptx_mma_sm70": ("shape", "A_layout", "B_layout", "A_dtype", "B_dtype", "C_dtype", "multiplicand_a",
                                   "a_index", "multiplicand_b", "b_index", "accumulator", "c_index"),
                  "initialize_wgmma_descriptor": ("descriptor", "start_address", "layout_type_", "leading_byte_offset",
                                                  "stride_byte_offset"),
                  "warpgroup_fence_operand": ("buffer_or_ptr", "offset", "num_regs", "dtype")}
    for name, want in signatures.items():
        assert _leading(getattr(arch, name), len(want)) == want, name
    assert inspect.signature(arch.annotate_producer_reg_dealloc).parameters["reg_count"].default == 24
    assert inspect.signature(arch.annotate_consumer_reg_alloc).parameters["reg_count"].default == 240
