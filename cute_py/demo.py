"""The tour printed by ``python -m cute_py demo``: layouts, a TMA atom, the compiled TMA copy, and a run of it.

1. a few layouts and their algebra, each law it shows checked;
2. a TMA atom of a 128B-swizzled bf16 tile: the descriptor's box, dims, strides and swizzle,
   and what ``tma_partition`` makes of one tile;
3. kernel 1 of :mod:`cute_py.jit.examples` (``tma_copy``) compiled for that configuration with
   no GPU: compile time and the TMA / mbarrier lines of its PTX;
4. the copy itself: on a CUDA GPU (through torch, else cupy) on an 8192x8192 bf16 tensor, timed
   and checked bit for bit; without one, the same tile copy through the CPU reference
   :func:`cute_py.reference.run_tma_copy` on a small array.

``demo --emit mlir|ptx`` prints the kernel's MLIR or PTX instead. Parts 3-4 and ``--emit`` need
the JIT's dependencies (``pip install -e '.[jit]'``); without them the demo says so and stops
after part 2. Everything heavy is imported inside the functions that use it.
"""

import time

from . import (
    Layout,
    blocked_product,
    coalesce,
    complement,
    composition,
    left_inverse,
    make_layout,
    raked_product,
    right_inverse,
    size,
    zipped_divide,
)

__all__ = ["tour", "tma_tour", "copy_tour", "emit", "run", "run_on_cpu", "DTYPE", "TILE", "SWIZZLE", "GPU_SHAPE",
           "CPU_SHAPE", "REPS", "JIT_INSTALL"]

DTYPE = "BFloat16"  # the element type of the demo's copy
TILE = (128, 64)  # rows x columns of one CTA tile
SWIZZLE = "128B"  # the shared-memory tile is 128B-swizzled
GPU_SHAPE = (8192, 8192)  # the tensor copied on a GPU (and the shape kernel 1 is compiled for)
CPU_SHAPE = (300, 200)  # the tensor copied by the CPU reference (edge tiles are partial)
REPS = 10  # timed runs of the GPU copy (after 3 untimed ones); the median is reported
JIT_INSTALL = "pip install -e '.[jit]'"


def _table(layout):
    rows, cols = layout.shape
    width = max(len(str(layout((r, c)))) for r in range(rows) for c in range(cols))
    lines = []
    for r in range(rows):
        lines.append("    " + " ".join(str(layout((r, c))).rjust(width) for c in range(cols)))
    return "\n".join(lines)


def _heading(out, text):
    out(f"\n== {text} ==\n")


def tour(out=print):
    """Part 1: print a few layouts and their algebra, checking each law it shows."""
    a = Layout((4, (2, 8)), (2, (1, 8)))
    out(f"A layout maps coordinates to offsets:  A = {a}")
    out(f"  A(5) = {a(5)},  A((1,(1,3))) = {a((1, (1, 3)))},  A((None,(1,None))) = {a((None, (1, None)))}")
    out(f"  coalesce(A) = {coalesce(a)}\n")

    row = make_layout((4, 6), stride=(6, 1))
    out(f"A 4x6 row-major layout {row}:")
    out(_table(row) + "\n")

    x, y = Layout((6, 2), (8, 2)), Layout((4, 3), (3, 1))
    r = composition(x, y)
    ok = all(r(i) == x(y(i)) for i in range(size(y)))
    out(f"composition({x}, {y}) = {r}   [R(i) == A(B(i)) for all i: {ok}]")
    out(f"complement((2,2):(1,6), 24) = {complement(Layout((2, 2), (1, 6)), 24)}")
    inv = right_inverse(Layout((4, 8), (1, 5)))
    out(f"right_inverse((4,8):(1,5)) = {inv};  left_inverse((2,4):(4,1)) = {left_inverse(Layout((2, 4), (4, 1)))}")

    gmem = Layout((128, 128), (128, 1))
    out(f"zipped_divide({gmem}, (64,32)) = {zipped_divide(gmem, (64, 32))}   [(tile),(tiles)]")
    block, tiles = Layout((2, 5), (5, 1)), Layout((3, 4), (1, 3))
    out(f"blocked_product({block}, {tiles}) = {blocked_product(block, tiles)}")
    out(f"raked_product({block}, {tiles})   = {raked_product(block, tiles)}")


def _smem_layout():
    from . import dtypes
    from .jit.examples import smem_tile_layout

    return smem_tile_layout(dtypes.dtype_of(DTYPE), TILE, SWIZZLE)


def tma_tour(out=print, shape=GPU_SHAPE):
    """Part 2: print the TMA atom of a row-major ``shape`` bf16 tensor and a 128B-swizzled tile, its
    descriptor, and what ``tma_partition`` makes of one tile. Returns the atom."""
    from . import AddressSpace, dtypes, group_modes, local_tile, make_ptr, make_tensor
    from .nvgpu import cpasync
    from .runtime import make_fake_tensor

    dt = dtypes.dtype_of(DTYPE)
    rows, cols = shape
    gmem = make_fake_tensor(dt, shape, stride=(cols, 1))
    smem = _smem_layout()
    out(f"gmem tensor: {rows}x{cols} {dt.name}, row-major      {gmem.layout}")
    out(f"smem tile:   {TILE[0]}x{TILE[1]}, {SWIZZLE}-swizzled        {smem}")
    atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), gmem, smem, TILE)
    d = atom.descriptor
    out(f"make_tiled_tma_atom(CopyBulkTensorTileG2SOp(), gmem, smem, {TILE}) -> descriptor:")
    out(f"  TMA box {d.box_dims} (innermost dim first) = {d.box_bytes} bytes per instruction")
    out(f"  global dims {d.global_dims}, global strides {d.global_strides} bytes, element strides "
        f"{d.element_strides}")
    out(f"  swizzle {d.swizzle.name} ({d.swizzle.span}-byte span; the smem tile must be {d.smem_alignment}-byte "
        f"aligned), L2 promotion {d.l2_promotion.name}, out-of-bounds fill {d.oob_fill.name}")
    out(f"  TMA coordinate tensor {tma_tensor.layout}   (gmem (row, col) -> TMA (col, row))")

    coord = (1, 2)
    s_tile = make_tensor(make_ptr(dt, None, AddressSpace.smem, d.smem_alignment), smem)
    g_tile = local_tile(tma_tensor, TILE, coord)
    tAsA, tAgA = cpasync.tma_partition(atom, 0, Layout(1), group_modes(s_tile, 0, 2), group_modes(g_tile, 0, 2))
    mode0 = tAgA.layout.shape[0]
    out(f"tma_partition of the tile at block {coord}, as ((TMA box, TMA instructions), ...):")
    out(f"  smem: {tAsA.layout}")
    out(f"  gmem: {tAgA.layout}, starting at TMA coordinate {tuple(tAgA[0])}")
    out(f"  -> {size(mode0[1])} TMA instruction(s) of {size(mode0[0])} elements per tile")
    return atom


def _install_hint(reason):
    return f"The JIT is not installed ({reason}). To compile and run the kernels: {JIT_INSTALL}"


_KERNEL_HALF = ("jit_unavailable", "compile_demo_kernel", "ptx_excerpt", "kernel_tour", "find_gpu", "run_on_gpu")


def __getattr__(name):
    # the kernel half (MLIR, CUDA, torch/cupy) lives in cute_py.jit.demo_kernel and loads on first use
    if name in _KERNEL_HALF:
        import importlib

        return getattr(importlib.import_module(".jit.demo_kernel", __package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_on_cpu(shape=CPU_SHAPE, out=print):
    """Run the demo's tile copy through :func:`cute_py.reference.run_tma_copy` on a ``shape`` numpy array
    of random bf16 bits; print the check. Returns True when the output equals the input bit for bit."""
    import numpy as np

    from . import dtypes
    from . import reference as ref
    from .nvgpu import cpasync
    from .runtime import make_fake_tensor

    dt = dtypes.dtype_of(DTYPE)
    gmem = make_fake_tensor(dt, shape, stride=(shape[1], 1))
    smem = _smem_layout()
    load, load_t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), gmem, smem, TILE)
    store, store_t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), gmem, smem, TILE)
    rng = np.random.default_rng(0)
    src = rng.integers(0, 1 << 16, size=shape[0] * shape[1]).astype(dt.storage_dtype)  # bf16 bits
    dst = np.zeros_like(src)
    t0 = time.perf_counter()
    tiles = ref.run_tma_copy(src, dst, load, load_t, store, store_t, smem, TILE)
    seconds = time.perf_counter() - t0
    ok = bool(np.array_equal(src, dst))
    out(f"  cute_py.reference.run_tma_copy: {shape[0]}x{shape[1]} {DTYPE}, {tiles} tiles of {TILE[0]}x{TILE[1]} "
        f"(edge tiles clipped to the tensor), TMA load -> {SWIZZLE}-swizzled smem -> TMA store, "
        f"{1e3 * seconds:.0f} ms")
    out(f"  CPU reference: output == input bit-exactly: {ok}")
    return ok


def _kernel_half():
    from .jit import demo_kernel

    return demo_kernel


def copy_tour(out=print, cpu=False):
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
    from .jit import JitError

    try:
        return _kernel_half().run_on_gpu(backend, module, out=out)
    except JitError as e:  # the driver refused a load or a launch, or an argument did not match
        out(f"  the GPU run failed: {type(e).__name__}: {e}")
        return False


def emit(kind, out=print):
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


def run(out=print, cpu=False):
    """The whole demo (parts 1-4). Returns the exit status: 0, or 1 when the copy's check failed."""
    out("cute_py: CuTe layouts, TMA atoms and a JIT for Hopper, in Python")
    _heading(out, "1. Layouts and their algebra")
    tour(out)
    _heading(out, "2. A TMA atom and its box")
    tma_tour(out)
    _heading(out, "3. The compiled TMA copy kernel (kernel 1, cute_py.jit.examples.tma_copy)")
    t0 = time.perf_counter()
    reason = _kernel_half().jit_unavailable()
    if reason is not None:
        out(_install_hint(reason))
        return 0
    _kernel_half().kernel_tour(out, bindings_seconds=time.perf_counter() - t0)
    _heading(out, "4. Running the copy")
    ok = copy_tour(out, cpu=cpu)
    return 0 if ok else 1
