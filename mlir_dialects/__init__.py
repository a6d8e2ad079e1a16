"""The ``cute_nvgpu`` MLIR dialect: Hopper copy, synchronisation, warp and numeric ops, lowered to NVVM/LLVM and PTX.

This package never imports ``cute_py``; it depends only on the MLIR Python bindings, which
load on first use of a name below (``import mlir_dialects`` alone stays cheap)::

    from mlir_dialects import make_context, tma_load, to_ptx, to_cubin

Its names: the infrastructure below (``_FACADE``), and what the op units of ``mlir_dialects.ops`` give
(``registry.exports``): each op's builder (``tma_load``...) and class (``TmaLoadOp``...), and each unit's
``__all__``.

``python -m mlir_dialects --emit mlir|lowered|ptx`` prints a sample kernel using every op.
"""

import importlib
import importlib.util

_FACADE = {
    "errors": ("DialectError", "BindingsNotFoundError", "VerificationError", "OperandTypeError", "LoweringError",
               "PipelineError", "AssemblyError"),
    "types": ("AddressSpace", "smem_ptr_type", "cluster_ptr_type", "gmem_ptr_type", "generic_ptr_type",
              "mbarrier_type", "tma_desc_type", "BYTES_PER_TENSORMAP"),
    "dialect": ("CuteNvgpu", "CuteOp", "verify"),
    "registry": ("all_op_classes", "load_dialect", "make_context"),
    "lowering": ("RULES", "lower", "rule_for"),
    "pipeline": ("to_ptx", "to_cubin", "lower_copy"),
    "assembler": ("AssemblerWarning", "MIN_NVJITLINK"),
    "sample": ("build_sample_module", "build_tma_copy_module", "kernel_module"),
}
_WHERE = {name: module for module, names in _FACADE.items() for name in names}


def _op_exports():
    from .registry import exports

    return exports()


def __getattr__(name):
    if name == "__all__":
        value = sorted(set(_WHERE) | set(_op_exports()))
    elif name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    elif name.startswith("__") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
        # a submodule (``from mlir_dialects import assembler``) is imported without loading the ops
        raise AttributeError(f"module 'mlir_dialects' has no attribute {name!r}")
    else:
        value = _op_exports().get(name, _WHERE)
        if value is _WHERE:
            raise AttributeError(f"module 'mlir_dialects' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__getattr__("__all__")))
