"""The ``cute_nvgpu`` MLIR dialect: Hopper copy, synchronisation, warp and numeric ops, lowered to NVVM/LLVM and PTX.

This package never imports ``cute_py``; it depends only on the MLIR Python bindings, which
load on first use of a name below (``import mlir_dialects`` alone stays cheap)::

    from mlir_dialects import make_context, tma_load, to_ptx, to_cubin

``python -m mlir_dialects --emit mlir|lowered|ptx`` prints a sample kernel using every op.
"""

import importlib

_EXPORTS = {
    "errors": ("DialectError", "BindingsNotFoundError", "VerificationError", "OperandTypeError", "LoweringError",
               "PipelineError", "AssemblyError"),
    "types": ("AddressSpace", "smem_ptr_type", "cluster_ptr_type", "gmem_ptr_type", "generic_ptr_type",
              "mbarrier_type", "tma_desc_type", "BYTES_PER_TENSORMAP"),
    "dialect": ("CuteNvgpu", "CuteOp", "all_op_classes", "load_dialect", "make_context", "verify"),
    "lowering": ("RULES", "lower", "rule_for"),
    "pipeline": ("to_ptx", "to_cubin", "lower_copy", "lower_for_ptx", "lowered_to_ptx"),
    "assembler": ("AssemblerWarning", "MIN_NVJITLINK"),
    "ops_cpasync": ("cp_async", "cp_async_commit_group", "cp_async_wait_group", "cp_async_mbarrier_arrive"),
    "ops_tma": ("tma_load", "tma_store", "tma_reduce", "tma_store_arrive", "tma_store_wait", "prefetch_tensormap",
                "tma_prefetch_tile"),
    "ops_tma_im2col": ("tma_load_im2col",),
    "ops_descriptor": ("tensormap_replace", "tensormap_copy", "fence_tensormap_acquire", "fence_tensormap_release",
                       "cp_fence_tensormap_release"),
    "ops_mbarrier": ("mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_cluster", "mbarrier_arrive_expect_tx",
                     "mbarrier_expect_tx", "mbarrier_try_wait_parity", "mbarrier_wait_parity", "fence_mbarrier_init"),
    "ops_sync": ("fence_proxy_async", "cluster_arrive", "cluster_wait", "elect_sync", "dsmem_store"),
    "ops_warp": ("bar_warp_sync", "barrier_sync", "barrier_arrive", "shfl_sync", "vote_sync", "activemask",
                 "setmaxnreg", "read_sreg", "ld_global", "st_global"),
    "ops_numeric": ("cvt_f32_to_narrow", "cvt_f8_to_f16", "math_approx", "printf"),
    "ops_mma": ("mma_sync", "ldmatrix", "stmatrix"),
    "ops_wgmma": ("wgmma_fence", "wgmma_commit_group", "wgmma_wait_group", "wgmma_mma_async", "wgmma_acc_type"),
    "sample": ("build_sample_module", "build_tma_copy_module", "kernel_module"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'mlir_dialects' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
