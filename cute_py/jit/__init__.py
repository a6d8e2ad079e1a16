"""The JIT: Python kernels traced into the ``cute_nvgpu`` dialect, compiled to PTX/cubin, cached and launched.

::

    import cute_py as cute
    from cute_py import arch

    @cute.kernel
    def k(atom, ...):
        ...                                  # arch builtins, cute.copy, cute.range, layouts on traced ints

    @cute.jit
    def host(src, dst):
        atom, tma_tensor = make_tiled_tma_atom(...)
        k(atom, ...).launch(grid=(m, n), block=32)

    host(torch_src, torch_dst)               # compiles once per specialisation, then launches
    compiled = cute.compile(host, src, dst)  # .mlir, .ptx, .cubin, __call__

Launches are checked against sm_90's limits (``limits``); compiled kernels are cached in memory and on
disk, keyed by what the traces used (``deps``, ``cache``); the PTX is assembled by an assembler known to
work (``mlir_dialects.assembler``). Heavy parts (the MLIR bindings, cuda-python) load on first use.
"""

from .args import DeviceArraySpec
from .cache import stats
from .control import if_, range
from .copy import async_copy, copy, tma_copy
from .errors import ArgumentError, CacheError, CompileError, JitError, LaunchError, TraceError
from .kernel import Compiled, JitFunction, KernelFunction, compile, jit, kernel
from .memory import make_fragment, make_fragment_like
from .smem import SmemAllocator
from .thread_copy import predicate
from .values import Float32, Int32, Int64, TracedBool, TracedInt, select

__all__ = [
    "kernel", "jit", "compile", "Compiled", "JitFunction", "KernelFunction",
    "copy", "async_copy", "tma_copy", "make_fragment", "make_fragment_like", "predicate",
    "range", "if_", "select", "SmemAllocator",
    "Int32", "Int64", "Float32", "TracedInt", "TracedBool",
    "JitError", "TraceError", "ArgumentError", "CompileError", "LaunchError", "CacheError",
    "stats", "arch", "DeviceArraySpec",
]


def __getattr__(name):
    if name == "arch":
        import importlib

        return importlib.import_module(__name__ + ".arch")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(type(__import__("sys"))):
    """``cute_py.jit`` is both this package and the ``@cute_py.jit`` decorator (once imported, the
    submodule is the attribute ``jit`` of ``cute_py``)."""

    def __call__(self, fn):
        return jit(fn)


__import__("sys").modules[__name__].__class__ = _CallableModule
