"""The ``cute_nvgpu`` MLIR dialect: Hopper copy and synchronisation ops, lowered to NVVM/LLVM and PTX.

This package never imports ``cute_py``; it depends only on the MLIR Python bindings.
"""

__all__ = []
