"""Elementwise kernels that compute: ``c = a + b`` and a fused ``out = bf16(silu(f32(x)) * scale + f32(y))``.

::

    from examples import elementwise_add, fused_silu_add
    elementwise_add(a, b, c)              # 1-D tensors of one type (Float32, BFloat16, Float16...), any length
    fused_silu_add(x, y, out, scale=0.5)  # BFloat16 in and out, the arithmetic in Float32

Each thread owns one 16-byte vector of each tensor (4 Float32 or 8 BFloat16 elements): a full vector moves with
one 128-bit load or store (a ``CopyUniversalOp`` atom of 128 bits into a register fragment), the arithmetic runs on
the fragment's elements, and the tail past the last full vector is done element by element under a run-time
predicate, so any length works and nothing outside the tensors is touched.
"""

import cute_py as cute
from cute_py import arch
from cute_py.atom import CopyUniversalOp

__all__ = ["elementwise_add", "elementwise_add_kernel", "fused_silu_add", "fused_silu_add_kernel", "THREADS"]

THREADS = 256
VECTOR_BITS = 128


def _vector(dtype):
    return VECTOR_BITS // dtype.width


@cute.jit
def _apply(f, inputs, out, n):
    """``out[i] = f(*(t[i] for t in inputs))`` for this thread's vector of elements (one vector access each when
    the whole vector lies inside the tensors, else element by element under a predicate)."""
    tx, _, _ = arch.thread_idx()
    bx, _, _ = arch.block_idx()
    vec = _vector(out.element_type)
    index = bx * THREADS + tx
    first = index * vec
    if first + vec <= n:  # a whole vector: 128-bit accesses
        frags = []
        for t in inputs:
            frag = cute.make_fragment(cute.Layout(vec), t.element_type)
            cute.copy(cute.make_copy_atom(CopyUniversalOp(), t.element_type, VECTOR_BITS),
                      cute.local_tile(t, (vec,), (index,)), frag)
            frags.append(frag)
        result = cute.make_fragment(cute.Layout(vec), out.element_type)
        for j in cute.range_constexpr(vec):
            result[j] = f(*(frag[j] for frag in frags))
        cute.copy(cute.make_copy_atom(CopyUniversalOp(), out.element_type, VECTOR_BITS), result,
                  cute.local_tile(out, (vec,), (index,)))
    elif first < n:  # the tail: element by element
        for j in cute.range_constexpr(vec):
            if first + j < n:
                out[first + j] = f(*(t[first + j] for t in inputs))


@cute.kernel
def elementwise_add_kernel(a, b, c, n):
    _apply(lambda x, y: x + y, (a, b), c, n)


@cute.jit
def elementwise_add(a, b, c):
    """``c = a + b`` for three 1-D tensors of one element type and length."""
    n = cute.size(c.shape)
    if cute.size(a.shape) != n or cute.size(b.shape) != n:
        raise cute.CuteValueError(f"elementwise_add needs tensors of one length, got {a.shape}, {b.shape}, "
                                  f"{c.shape}")
    per_block = THREADS * _vector(c.element_type)
    elementwise_add_kernel(a, b, c, n).launch(grid=max(1, -(-n // per_block)), block=THREADS)


@cute.kernel
def fused_silu_add_kernel(x, y, out, scale, n):
    def silu_add(u, v):
        f = u.to(cute.Float32)
        silu = f / (1.0 + cute.math.exp(-f))
        return (silu * scale + v.to(cute.Float32)).to(out.element_type)

    _apply(silu_add, (x, y), out, n)


@cute.jit
def fused_silu_add(x, y, out, scale=1.0):
    """``out = silu(x) * scale + y`` elementwise, for 1-D tensors of one length (BFloat16 or Float16 in and out),
    computed in Float32 and rounded once to ``out``'s type (``silu(t) = t / (1 + exp(-t))``)."""
    n = cute.size(out.shape)
    per_block = THREADS * _vector(out.element_type)
    fused_silu_add_kernel(x, y, out, float(scale), n).launch(grid=max(1, -(-n // per_block)), block=THREADS)
