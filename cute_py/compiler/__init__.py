"""The compiler: Python kernels traced into the ``cute_nvgpu`` dialect, compiled to PTX and a cubin, cached
and launched.

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
    compiled = cute.compile(host, src, dst)  # .mlir, .lowered, .ptx, .cubin, .stage_times, __call__

The package is one stack, each layer importing only the layers below it: ``host`` (the decorators, host
tracing, the compiles and their keys), ``trace`` (tracing kernels into one module), ``builtins`` (``cute_py.arch``,
the tile copies, math, printing), ``emit`` (the only place an instruction becomes IR; one module per hardware
unit), ``flow`` (the AST rewrite and run-time control flow), ``lang`` (the IR builder, traced values, TensorSSA,
memory, shared memory), and at the bottom ``specs`` (argument specs, annotations, options, limits), ``cache``
(keys and the disk store) and ``stages`` (trace -> mlir -> lowered -> ptx -> cubin). ``runtime`` (compiled
objects and their launches) sees only ``specs`` and ``cache``.  The decorators are ``cute_py.kernel`` and ``cute_py.jit``; this module holds them and
their helpers.  Heavy parts (the MLIR bindings, cuda-python) load on first use.
"""

from ..errors import ArgumentError, CacheError, CompileError, JitError, LaunchError, SpecMismatch, TraceError
from .builtins.copy import L2_EVICT_FIRST, L2_EVICT_LAST, L2_EVICT_NORMAL, async_copy, copy, tma_copy
from .builtins.im2col import c2d_im2col
from .builtins.thread_copy import predicate
from .specs.args import DeviceArraySpec
from .flow.control import const_expr, if_, range, range_constexpr
from .host.kernel import Compiled, JitFunction, KernelFunction, compile, jit, kernel
from .lang.registers import make_fragment, make_fragment_like, make_rmem_tensor
from .lang.smem import SmemAllocator
from .lang.values import TracedBool, TracedFloat
from .lang.traced_int import TracedInt, select
from .cache.store import stats
from .runtime.launch import sm_count

__all__ = [
    "kernel", "jit", "compile", "Compiled", "JitFunction", "KernelFunction",
    "copy", "async_copy", "tma_copy", "c2d_im2col", "make_fragment", "make_fragment_like", "make_rmem_tensor",
    "predicate",
    "range", "range_constexpr", "const_expr", "if_", "select", "SmemAllocator",
    "TracedInt", "TracedBool", "TracedFloat",
    "JitError", "TraceError", "ArgumentError", "SpecMismatch", "CompileError", "LaunchError", "CacheError",
    "stats", "DeviceArraySpec", "sm_count", "L2_EVICT_NORMAL", "L2_EVICT_FIRST", "L2_EVICT_LAST",
]
