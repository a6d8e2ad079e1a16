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

The package: a front end (``frontend``: decorators and host tracing, arguments, traced values, run-time
control flow, shared memory, loads and stores, the IR builder), the builtins (``builtins``: ``cute_py.arch``
and the tile copies), one emission table keyed by op class (``emit``), the named stages trace -> mlir ->
lowered -> ptx -> cubin (``stages``), and a runtime (``runtime``: compiled objects, launches and their
limits, the caches).  The decorators are ``cute_py.kernel`` and ``cute_py.jit``; this module holds them and
their helpers.  Heavy parts (the MLIR bindings, cuda-python) load on first use.
"""

from ..errors import ArgumentError, CacheError, CompileError, JitError, LaunchError, SpecMismatch, TraceError
from .builtins.copy import L2_EVICT_FIRST, L2_EVICT_LAST, L2_EVICT_NORMAL, async_copy, copy, tma_copy
from .builtins.im2col import c2d_im2col
from .builtins.thread_copy import predicate
from .builtins import tile_copier as _tile_copier  # noqa: F401 (registers the tile copier's emission)
from .builtins import warp_mma as _warp_mma  # noqa: F401 (registers mma.sync, ldmatrix and stmatrix)
from .builtins import universal_mma as _universal_mma  # noqa: F401 (registers the universal MMA's fma)
from .builtins import wgmma as _wgmma  # noqa: F401 (registers the warpgroup MMA's emission)
from .frontend.args import DeviceArraySpec
from .frontend.control import const_expr, if_, range, range_constexpr
from .frontend.kernel import Compiled, JitFunction, KernelFunction, compile, jit, kernel
from .frontend.memory import make_fragment, make_fragment_like, make_rmem_tensor
from .frontend.smem import SmemAllocator
from .frontend.values import TracedBool, TracedFloat
from .frontend.traced_int import TracedInt, select
from .runtime.cache import stats
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
