"""The arithmetic of one thread's part of a row, at as few instructions an element as the row kernels' laws allow.

A kernel that reads two bytes an element and writes nothing per element (cross-entropy's forward) must retire about
eight elements a clock on each SM of an H200 to keep up with its memory; there every instruction an element counts:

- :func:`fold` combines values in a few interleaved chains (independent steps in flight) instead of one;
- :func:`exp2_fma` is ``2 ** (v * log2(e) - shl)`` as one fused multiply-add and one ``ex2.approx.ftz`` (``shl``,
  the shift times ``log2(e)``, computed once a row), where ``(v - shift) * log2(e)`` and ``ex2.approx`` with
  subnormal results kept cost six instructions. A result below ``2 ** -126`` flushes to zero; callers that keep
  such results add ``bias`` to the exponent and scale back (see :func:`exp2_fma`).
- :func:`fast_shift` says whether the shift times ``log2(e)`` is finite: for a shift beyond ``FLT_MAX / log2(e)``
  (logits above about ``2.36e38``) the fused form would overflow, and a kernel takes its plain form there.
"""

import cute_py as cute

from .row_reduce import LOG2E

__all__ = ["fold", "elements", "chunks", "fma_each", "dot_fma", "exp2_fma", "fast_shift", "LOG2E", "EXP_BIAS"]

EXP_BIAS = 64.0  # added to an exponent so that ``ex2.approx.ftz`` keeps results down to 2 ** -190, then scaled back


def fold(values, f, ways=4):
    """``f`` over the non-empty list ``values`` in ``ways`` interleaved chains (value ``i`` joins chain ``i %
    ways``), then the chains' results pairwise: independent steps in flight without keeping every value live at
    once (a balanced tree over 128 exponentials made ptxas hold all of them: 254 registers against 162), in the
    same static order every time (deterministic)."""
    vs = list(values)
    if not vs:
        raise cute.CuteValueError("fold: needs at least one value")
    if type(ways) is not int or ways < 1:
        raise cute.CuteValueError(f"fold: ways must be an int >= 1, got {ways!r}")
    acc = vs[:ways]
    for i in range(ways, len(vs)):
        acc[i % ways] = f(acc[i % ways], vs[i])
    while len(acc) > 1:
        acc = [f(acc[i], acc[i + 1]) if i + 1 < len(acc) else acc[i] for i in range(0, len(acc), 2)]
    return acc[0]


def elements(vals):
    """The elements of a list of TensorSSA, in order."""
    return [v[i] for v in vals for i in range(len(v))]


def chunks(flat, vec):
    """The Float32 values ``flat`` as TensorSSA of ``vec`` elements each (as :func:`row_reduce.load_row` gives)."""
    out = []
    for k in range(0, len(flat), vec):
        frag = cute.make_rmem_tensor((vec,), cute.Float32)
        for j in range(vec):
            frag[j] = flat[k + j]
        out.append(frag.load())
    return out


def fma_each(a, b, c):
    """``a * b + c`` element by element, each rounded once: ``a`` a Float32 TensorSSA, ``b`` and ``c`` TensorSSA (or
    lists) of its length, indexed, or Float32 scalars, taken whole."""
    n = len(a)
    frag = cute.make_rmem_tensor((n,), cute.Float32)
    for j in range(n):
        frag[j] = cute.math.fma(a[j], _at(b, j), _at(c, j))
    return frag.load()


def _at(v, j):
    return v[j] if hasattr(v, "__getitem__") else v


def dot_fma(pairs, ways=4):
    """The sum of ``a[j] * b[j]`` over the TensorSSA pairs ``(a, b)`` of ``pairs``, by fused multiply-adds into
    ``ways`` interleaved accumulators (product ``i`` joins accumulator ``i % ways``), then the accumulators
    pairwise (:func:`fold`)."""
    prods = [(a[j], b[j]) for a, b in pairs for j in range(len(a))]
    acc = [x * y for x, y in prods[:ways]]
    for i in range(ways, len(prods)):
        acc[i % ways] = cute.math.fma(prods[i][0], prods[i][1], acc[i % ways])
    return fold(acc, lambda p, q: p + q, ways)


def exp2_fma(e, shl, bias=0.0):
    """``ex2.approx.ftz(fma(e, log2(e), bias - shl))`` of one Float32 ``e``: ``2 ** (bias + (e - shift) *
    log2(e))`` with ``shl = shift * log2(e)`` (finite: see :func:`fast_shift`), results below ``2 ** -126``
    flushed to zero."""
    return cute.math.exp2(cute.math.fma(e, LOG2E, bias - shl), fastmath=True)


def fast_shift(shl):
    """Whether ``shl`` (a shift times ``log2(e)``) is finite, so that :func:`exp2_fma` may take it."""
    return abs(shl) < float("inf")

