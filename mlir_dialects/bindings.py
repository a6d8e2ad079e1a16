"""The public IR façade: the parts of the MLIR Python bindings that a client of the dialect builds itself
(modules, types, insertion points and locations from ``ir``; the ``arith`` and ``llvm`` dialects for plain
integer arithmetic, loads, stores and pointers around the ``cute_nvgpu`` ops).

Importing this module loads the bindings (``BindingsNotFoundError``, an ``ImportError``, without them).
Everything else of the bindings stays private to ``mlir_dialects``.
"""

from ._backend import BINDINGS, arith, ir, llvm

__all__ = ["BINDINGS", "ir", "arith", "llvm"]
