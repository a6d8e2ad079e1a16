"""The host-side rules of the grouped GEMM (:mod:`examples.grouped_gemm`): the shapes, element types and layouts
of A, B, C and the group sizes of each variant, and its options; each broken rule a ``CuteValueError`` naming the
rule and the values. The sizes' values live on the device and are not read here (see the kernel's clamping)."""

import cute_py as cute

from .gemm_args import SMEM_LIMIT, epi_bytes, smem_bytes

__all__ = ["check_grouped", "GROUPED_TILE_NS", "GROUPED_STAGES", "tma_storable"]

GROUPED_TILE_NS = (128, 256)            # the CTA tile's N extents
GROUPED_STAGES = {128: 6, 256: 4}       # the default stages of each: as many as shared memory holds


def _strides(t):
    return tuple(t.layout.stride)


def tma_storable(c):
    """Whether TMA can store to (and 16-byte chunks tile) the rows of ``c`` (2-D, or 3-D with experts first):
    unit column stride, 16-byte aligned pointer, every other stride and the row length whole 16-byte units."""
    unit = 128 // c.element_type.width
    *outer, col = _strides(c)
    return (col == 1 and c.iterator.alignment >= 16 and all(type(s) is int and s % unit == 0 for s in outer)
            and type(c.shape[-1]) is int and c.shape[-1] % unit == 0)


def _check_kmajor(who, name, t):
    """``t``'s last mode (K) is contiguous and its other strides are whole 16-byte units (TMA's rule)."""
    *outer, last = _strides(t)
    unit = 128 // t.element_type.width
    if last != 1:
        raise cute.CuteValueError(f"{who}: {name} must be K-major (its last mode contiguous), got the strides "
                                  f"{_strides(t)}")
    for s, e in zip(outer, t.shape[:-1]):
        if e != 1 and (type(s) is not int or s % unit):
            raise cute.CuteValueError(f"{who}: {name}'s rows must start on 16-byte boundaries (TMA loads them): "
                                      f"strides of multiples of {unit} elements (K a multiple of {unit}, or padded "
                                      f"rows), got the strides {_strides(t)}")


def check_grouped(who, a, b, c, sizes, masked, tile_n, stages):
    """Check a grouped GEMM's arguments: ``masked`` false, A ``(total_M, K)``, C ``(total_M, N)`` and ``sizes``
    the cumulative ends ``offs``; ``masked`` true, A ``(E, max_M, K)``, C ``(E, max_M, N)`` and ``sizes`` the
    row counts ``masked_m``; B ``(E, N, K)`` either way. Returns ``(E, N, K, rows)`` (``rows``: ``total_M`` or
    ``max_M``)."""
    sizes_name = "masked_m" if masked else "offs"
    rank = 3 if masked else 2
    form = "(E, max_M, K)" if masked else "(total_M, K)"
    for name, t, want in (("a", a, rank), ("b", b, 3), ("c", c, rank), (sizes_name, sizes, 1)):
        if not hasattr(t, "element_type") or not hasattr(t, "layout"):
            raise cute.CuteValueError(f"{who}: {name} must be a tensor, got {t!r}")
        if cute.rank(t.layout) != want:
            raise cute.CuteValueError(f"{who}: {name} must be {want}-D, got the shape {t.shape} (A {form}, "
                                      f"B (E, N, K), C {form[:-2]}N), {sizes_name} (E,))")
    ta, tb, tc = a.element_type, b.element_type, c.element_type
    if ta not in (cute.BFloat16, cute.Float16) or tb is not ta:
        raise cute.CuteValueError(f"{who}: A and B are both BFloat16 or both Float16, got {ta.name} and {tb.name}")
    if tc not in (cute.BFloat16, cute.Float16):
        raise cute.CuteValueError(f"{who}: C is BFloat16 or Float16 (fp32 accumulation, rounded once), got "
                                  f"{tc.name}")
    if sizes.element_type is not cute.Int32:
        raise cute.CuteValueError(f"{who}: {sizes_name} must be Int32, got {sizes.element_type.name}")
    e, n, k = b.shape
    if masked:
        ea, rows, ka = a.shape
        ec, rows_c, nc = c.shape
        same = ea == e and ec == e and rows_c == rows
    else:
        rows, ka = a.shape
        rows_c, nc = c.shape
        same = rows_c == rows
    if not same or ka != k or nc != n or cute.size(sizes) != e:
        raise cute.CuteValueError(f"{who} computes C{form[:-2]}N) = A{form} @ B(E, N, K)^T per group with "
                                  f"{sizes_name} (E,): got A {tuple(a.shape)}, B {tuple(b.shape)}, C "
                                  f"{tuple(c.shape)}, {sizes_name} ({cute.size(sizes)},)")
    if min(e, n, k, rows) < 1:
        raise cute.CuteValueError(f"{who} needs E, N, K and {'max_M' if masked else 'total_M'} >= 1, got "
                                  f"E={e}, N={n}, K={k}, {'max_M' if masked else 'total_M'}={rows}")
    if e >= 2 ** 31 or rows >= 2 ** 31:
        raise cute.CuteValueError(f"{who}: E and the rows must be below 2**31 (32-bit tile indices), got E={e}, "
                                  f"rows={rows}")
    for name, t in (("a", a), ("b", b)):
        _check_kmajor(who, name, t)
    if _strides(c)[-1] != 1:
        raise cute.CuteValueError(f"{who}: c must be row-major (N contiguous), got the strides {_strides(c)}")
    if type(tile_n) is not int or tile_n not in GROUPED_TILE_NS:
        raise cute.CuteValueError(f"{who}: tile_n must be one of {GROUPED_TILE_NS}, got {tile_n!r}")
    if type(stages) is not int or not 2 <= stages <= 6:
        raise cute.CuteValueError(f"{who}: stages must be an int in 2..6, got {stages!r}")
    tile = (128, tile_n, 64)
    need = smem_bytes(tile, stages, epi_bytes())
    if need > SMEM_LIMIT:
        raise cute.CuteValueError(f"{who}: {stages} stages of {tile[0]}x{tile[1]}x{tile[2]} tiles need {need} bytes "
                                  f"of shared memory, more than {SMEM_LIMIT}")
    return e, n, k, rows
