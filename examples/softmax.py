"""Row kernels: ``softmax`` along the rows of a 2-D tensor, and ``row_sum``.

One CTA of 256 threads per row. Each thread loads its chunks of the row (128-bit vectors where the row allows,
element by element under a predicate at the end of the row), computes in Float32 and keeps the row in registers;
the row's maximum and sum combine across the warp with ``shuffle_xor`` and across the warps through shared memory.
``softmax`` computes ``exp2((x - max) * log2(e)) / sum`` and rounds once to the output type.
"""

import math

import cute_py as cute
from cute_py import arch

from .row_chunks import load_chunk, store_chunk

THREADS = 256
WARPS = THREADS // 32
MAX_CHUNKS = 16  # vectors of a row one thread keeps in registers
LOG2E = 1.4426950408889634


def _vector(dtype, n):
    """Elements per access: up to 128 bits, dividing the row length (so every row starts aligned)."""
    v = 128 // dtype.width
    while n % v:
        v //= 2
    return v


@cute.jit
def _block_reduce(v, combine, buf):
    """``combine`` of ``v`` over the CTA: a butterfly in each warp, then the warps' results through ``buf``."""
    for k in cute.range_constexpr(5):
        v = combine(v, arch.shuffle_sync_bfly(v, 16 >> k))
    if arch.lane_idx() == 0:
        buf[arch.warp_idx()] = v
    arch.sync_threads()
    v = buf[0]
    for w in cute.range_constexpr(1, WARPS):
        v = combine(v, buf[w])
    return v


def _load_row(xr, tx, vec, n, fill):
    """This thread's chunks of the row, as Float32 TensorSSA."""
    vals = []
    for k in cute.range_constexpr(cute.ceil_div(n, THREADS * vec)):
        frag = cute.make_rmem_tensor((vec,), xr.element_type)
        load_chunk(xr, tx + k * THREADS, vec, n, frag, fill, False)
        vals.append(frag.load().to(cute.Float32))
    return vals


@cute.kernel
def softmax_kernel(x, y, n):
    r, _, _ = arch.block_idx()
    tx, _, _ = arch.thread_idx()
    smem = arch.SmemAllocator()
    red_max = smem.allocate_tensor(cute.Float32, cute.Layout(WARPS))
    red_sum = smem.allocate_tensor(cute.Float32, cute.Layout(WARPS))
    vec = _vector(x.element_type, n)
    vals = _load_row(x[r, None], tx, vec, n, -math.inf)
    m = -math.inf
    for v in vals:
        m = cute.max(m, v.reduce(cute.ReductionOp.MAX, -math.inf, 0))
    m = _block_reduce(m, cute.max, red_max)
    exps = [cute.math.exp2((v - m) * LOG2E) for v in vals]
    s = 0.0
    for e in exps:
        s = s + e.reduce(cute.ReductionOp.ADD, 0.0, 0)
    inv = 1.0 / _block_reduce(s, lambda a, b: a + b, red_sum)
    yr = y[r, None]
    for k in cute.range_constexpr(len(exps)):
        out = cute.make_rmem_tensor((vec,), y.element_type)
        out.store((exps[k] * inv).to(y.element_type))
        store_chunk(yr, tx + k * THREADS, vec, n, out, False)


@cute.kernel
def row_sum_kernel(x, y, n):
    r, _, _ = arch.block_idx()
    tx, _, _ = arch.thread_idx()
    buf = arch.SmemAllocator().allocate_tensor(cute.Float32, cute.Layout(WARPS))
    s = 0.0
    for v in _load_row(x[r, None], tx, _vector(x.element_type, n), n, 0.0):
        s = s + v.reduce(cute.ReductionOp.ADD, 0.0, 0)
    s = _block_reduce(s, lambda a, b: a + b, buf)
    if tx == 0:
        y[r] = s.to(y.element_type)


def _check_rows(x, n_out, what):
    if len(x.shape) != 2:
        raise cute.CuteValueError(f"{what} takes a 2-D row-major tensor, got the shape {x.shape}")
    m, n = x.shape
    vec = _vector(x.element_type, n)
    if cute.ceil_div(n, THREADS * vec) > MAX_CHUNKS:
        raise cute.CuteValueError(f"{what} keeps a row in registers: at most {THREADS * vec * MAX_CHUNKS} "
                                  f"{x.element_type.name} elements per row, got {n}")
    return m, n


@cute.jit
def softmax(x, y):
    """``y = softmax(x)`` along the rows of 2-D row-major ``x`` (Float32, Float16 or BFloat16; ``y`` of the same
    shape, any of those types), computed in Float32."""
    m, n = _check_rows(x, None, "softmax")
    if tuple(y.shape) != (m, n):
        raise cute.CuteValueError(f"softmax: y must have the shape of x {x.shape}, got {y.shape}")
    softmax_kernel(x, y, n).launch(grid=m, block=THREADS)


@cute.jit
def row_sum(x, y):
    """``y[r] = sum(x[r, :])`` for 2-D row-major ``x``, accumulated in Float32 (``y``: 1-D of ``x.shape[0]``)."""
    m, n = _check_rows(x, None, "row_sum")
    if (y.shape if isinstance(y.shape, tuple) else (y.shape,)) != (m,):
        raise cute.CuteValueError(f"row_sum: y must have the shape ({m},), got {y.shape}")
    row_sum_kernel(x, y, n).launch(grid=m, block=THREADS)
