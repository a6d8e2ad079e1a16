"""The tour printed by ``python -m cute_py demo``: layouts, a TMA atom, the compiled TMA copy, and a run of it.

1. a few layouts and their algebra, each law it shows checked;
2. a TMA atom of a 128B-swizzled bf16 tile: the descriptor's box, dims, strides and swizzle,
   and what ``tma_partition`` makes of one tile;
3. the demo's kernel (:mod:`cute_py.demo.kernel`, ``tma_copy``) compiled for that configuration with
   no GPU: compile time and the TMA / mbarrier lines of its PTX;
4. the copy itself: on a CUDA GPU (through torch, else cupy) on an 8192x8192 bf16 tensor, timed
   and checked bit for bit; without one, the same tile copy through the CPU reference
   :func:`cute_py.reference.run_tma_copy` on a small array.

``demo --emit mlir|ptx`` prints the kernel's MLIR or PTX instead. Parts 3-4 and ``--emit`` need
the compiler's dependencies (``pip install -e '.[jit]'``); without them the demo says so and stops
after part 2.  The package's halves import downward only: ``tour`` (host: layouts, the TMA atom, the
CPU run), ``kernel`` (the kernel), ``gpu`` (compiling and running it; loaded on first use).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .tour import (CPU_SHAPE, DTYPE, GPU_SHAPE, JIT_INSTALL, REPS, SWIZZLE, TILE, heading, run_on_cpu,
                   smem_tile_layout, tma_tour, tour)

__all__ = ["tour", "tma_tour", "copy_tour", "emit", "run", "run_on_cpu", "smem_tile_layout", "DTYPE", "TILE",
           "SWIZZLE", "GPU_SHAPE", "CPU_SHAPE", "REPS", "JIT_INSTALL"]


def _install_hint(reason):
    return f"The JIT is not installed ({reason}). To compile and run the kernels: {JIT_INSTALL}"




def _kernel_half():
    from . import gpu

    return gpu


def copy_tour(out: Callable[[str], object] = print, cpu: bool = False) -> bool:
    """Part 4: run the copy on a CUDA GPU when one is usable (and ``cpu`` is false), else on the CPU
    reference; say which path ran. Returns True when the copy checked out."""
    if cpu:
        out("Path: CPU reference (--cpu)")
        return run_on_cpu(out=out)
    backend, module, info = _kernel_half().find_gpu()
    if backend is None:
        out(f"Path: CPU reference (no CUDA GPU: {info})")
        return run_on_cpu(out=out)
    name, major, minor = info
    if major != 9:
        out(f"Path: CPU reference (the GPU {name} is sm_{major}{minor}; kernel 1 is built for sm_90a, Hopper)")
        return run_on_cpu(out=out)
    out(f"Path: GPU ({name}, sm_{major}{minor}, arrays from {backend})")
    from ..compiler import JitError

    try:
        return _kernel_half().run_on_gpu(backend, module, out=out)
    except JitError as e:  # the driver refused a load or a launch, or an argument did not match
        out(f"  the GPU run failed: {type(e).__name__}: {e}")
        return False


def emit(kind: str, out: Callable[[str], object] = print) -> int:
    """Print the MLIR (``kind="mlir"``) or PTX (``"ptx"``) of kernel 1 for the demo's configuration.
    Returns the exit status: 0, or 1 (with a message on stderr) when the JIT is not installed."""
    if kind not in ("mlir", "ptx"):
        raise ValueError(f"emit: kind must be 'mlir' or 'ptx', got {kind!r}")
    reason = _kernel_half().jit_unavailable()
    if reason is not None:
        import sys

        print(_install_hint(reason), file=sys.stderr)
        return 1
    compiled, _, _ = _kernel_half().compile_demo_kernel()
    out((compiled.mlir if kind == "mlir" else compiled.ptx).rstrip("\n"))
    return 0


def run(out: Callable[[str], object] = print, cpu: bool = False) -> int:
    """The whole demo (parts 1-4). Returns the exit status: 0, or 1 when the copy's check failed."""
    out("cute_py: CuTe layouts, TMA atoms and a JIT for Hopper, in Python")
    heading(out, "1. Layouts and their algebra")
    tour(out)
    heading(out, "2. A TMA atom and its box")
    tma_tour(out)
    heading(out, "3. The compiled TMA copy kernel (cute_py.demo.kernel.tma_copy)")
    t0 = time.perf_counter()
    reason = _kernel_half().jit_unavailable()
    if reason is not None:
        out(_install_hint(reason))
        return 0
    _kernel_half().kernel_tour(out, bindings_seconds=time.perf_counter() - t0)
    heading(out, "4. Running the copy")
    ok = copy_tour(out, cpu=cpu)
    return 0 if ok else 1
