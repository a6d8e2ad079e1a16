"""``cute_py.utils``: the helpers of the CuTe DSL's ``cutlass.utils`` that kernels use — the shared-memory
allocator, the layout enum of a GEMM operand and the Hopper shared-memory layout helpers.  Each loads on
first use."""

# name -> submodule of cute_py.utils that defines it
_LAZY = {
    "SmemAllocator": "smem_allocator",
    "get_smem_capacity_in_bytes": "smem_allocator",
    "LayoutEnum": "layout",
    "HardwareInfo": "hardware_info",
    "PersistentTileSchedulerParams": "tile_scheduler",
    "StaticPersistentTileScheduler": "tile_scheduler",
    "WorkTileInfo": "tile_scheduler",
    "compute_tile_shape_or_override": "hopper_helpers",
    "sm90_get_smem_layout_atom": "hopper_helpers",
    "sm90_make_smem_layout_a": "hopper_helpers",
    "sm90_make_smem_layout_b": "hopper_helpers",
    "sm90_make_smem_layout_epi": "hopper_helpers",
    "sm90_get_smem_store_op": "hopper_helpers",
    "tensor_helpers": None,
}


def __getattr__(name):
    where = _LAZY.get(name)
    if where is None and name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    if where is None and name in _LAZY:  # a submodule
        return importlib.import_module(f".{name}", __name__)
    return getattr(importlib.import_module(f".{where}", __name__), name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
