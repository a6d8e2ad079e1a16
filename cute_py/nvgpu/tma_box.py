"""The TMA box CuTe derives from (gmem tensor, smem layout, CTA tiler), kept exact.

``construct_tma_gbasis`` follows CuTe's ``make_tma_copy``: invert the smem layout to find its
contiguous vector, follow it into gmem modes through an identity layout of the gmem shape,
merge modes while a box mode stays <= 256, append the gmem modes the tile walks but the box
does not, and fold dims so the rank is <= 5. ``make_tma_desc`` follows ``make_tma_copy_desc``:
the descriptor of those dims and the strides of the TMA coordinate tensor.

Where CuTe would merge gmem modes into a dim that also addresses bytes outside the tile
(padding between modes, the next row past a partly covered mode, a bounding extent over
unmergeable modes), cute_py merges only what :func:`exact_dim` proves exact, and rejects
what cannot be described exactly in 5 dims.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.algebra import composition
from ..core.inverse import right_inverse
from ..core.basis import ScaledBasis, basis_get, basis_value, make_basis_like, make_identity_layout
from ..core.symbolic import SymInt
from ..errors import CuteTypeError
from ..core.int_tuple import flatten
from ..core.products import product
from ..core.coalescing import coalesce
from ..core.layout import Layout, make_layout_unchecked
from ..core.recast import recast_layout
from ..core.typing import Int, Shape, Stride
from ..tensor.fake import value_of
from .tma import TmaDescriptor, TmaError, TmaSwizzle

if TYPE_CHECKING:
    from ..tensor.dtypes import DType

__all__ = ["construct_tma_gbasis", "make_tma_desc", "tile_extents", "dim_parts", "exact_dim"]


def _flat(x):
    f = flatten(x)
    return f if type(f) is tuple else (f,)


def tile_extents(cta_v_map: Layout, gmem_layout: Layout, gmem_bits: int,
                 tma_bits: int) -> dict[tuple[int, ...], tuple[int, bool]]:
    """``{gmem mode path: (extent, contiguous)}``: how far the CTA tile reaches along each gmem mode it walks
    (in TMA elements), and whether it covers that range whole (not strided, as a layout tiler can be)."""
    walks = {}
    for size, e in zip(_flat(cta_v_map.shape), _flat(cta_v_map.stride)):
        b = _as_basis(e)
        walks.setdefault(b.modes, []).append((b.value, size))
    out = {}
    for path, modes in walks.items():
        modes.sort(key=lambda m: value_of(m[0]) if type(value_of(m[0])) is int else 0)
        extent, expect, contiguous = 1, 1, True
        for scale, size in modes:
            if type(size) is not int or size == 1:
                continue
            contiguous = contiguous and type(scale) is int and scale == expect
            expect, extent = expect * size, extent * size
        g_stride = value_of(basis_get(ScaledBasis(1, path), gmem_layout.stride) if path else gmem_layout.stride)
        if type(g_stride) is int and g_stride == 1 and gmem_bits != tma_bits:
            extent = extent * gmem_bits // tma_bits
        out[path] = (extent, contiguous)
    return out


def _coalesce_tma(tile_gstride, tile_gbasis, g_t, extents, max_inner=256):
    """CuTe's ``coalesce_256`` of the tile's gmem modes, merging only where the merged box stays exact.

    Two consecutive tile modes merge into one box mode when they are contiguous in gmem
    (``shape * stride == next stride``), the merged mode stays <= 256 (the first one also
    <= ``max_inner``, the swizzle span), and the TMA dim it makes is exact (:func:`exact_dim`):
    a box that crossed the end of a gmem mode would read (or write) the padding after it, or
    the next row's elements.
    """
    fs, fd, fb = _flat(tile_gstride.shape), _flat(tile_gstride.stride), _flat(tile_gbasis.stride)
    runs = []  # [shape, stride, tile modes (shapes), their bases]
    for s, d, b in zip(fs, fd, fb):
        if type(s) is int and s == 1:
            continue
        if runs and _can_merge(runs[-1], s, d, b, g_t, extents, max_inner if len(runs) == 1 else 256):
            run = runs[-1]
            run[0] = run[0] * s
            run[2].append(s)
            run[3].append(b)
        else:
            runs.append([s, d, [s], [b]])
    if not runs:
        return make_layout_unchecked(1, 0)
    if len(runs) == 1:
        return make_layout_unchecked(runs[0][0], runs[0][1])
    return make_layout_unchecked(tuple(r[0] for r in runs), tuple(r[1] for r in runs))


def _can_merge(run, s, d, b, g_t, extents, limit):
    t, e, shapes, bases = run
    if not all(type(x) is int for x in (s, d, t, e)) or t * e != d or s * t > limit:
        return False
    return exact_dim(dim_parts(tuple(shapes) + (s,), tuple(bases) + (b,), g_t, extents))


def _is_one(v):
    # a static 1 (a run-time value is not known to be 1, as in CuTe)
    return type(v) is int and v == 1


def _wrap(x):
    return x if type(x) is tuple else (x,)


def construct_tma_gbasis(gmem_layout: Layout, gmem_bits: int, smem_layout: Layout, cta_v_map: Layout, tma_bits: int,
                         swizzle: TmaSwizzle | None = None) -> Layout:
    """The TMA box as a layout ``tma_box_shape : gmem modes`` (basis strides), CuTe's ``construct_tma_gbasis``.

    ``gmem_layout`` is the gmem tensor's layout in elements of ``gmem_bits`` bits; ``smem_layout``
    the non-swizzled smem layout of one tile; ``cta_v_map`` the identity layout of the gmem
    shape composed with the CTA tiler; the box is counted in ``tma_bits``-bit elements.
    """
    if product(smem_layout.shape) != value_of(product(cta_v_map.shape)):
        raise TmaError(
            f"the smem layout {smem_layout} has {product(smem_layout.shape)} elements but the CTA tile has "
            f"{value_of(product(cta_v_map.shape))}: TMA requires the smem tile and the CTA tile to have the same size"
        )
    inv_smem = right_inverse(smem_layout)
    sidx2gmode_full = coalesce(composition(cta_v_map, inv_smem))
    strides = _wrap(sidx2gmode_full.stride)
    smem_rank = next((i for i, e in enumerate(strides) if not _is_one(basis_value(e))), len(strides))
    if smem_rank == 0:
        raise TmaError(
            f"no common vector between the smem layout {smem_layout} and the gmem tile {cta_v_map}: the smem "
            f"tile's contiguous elements do not follow a contiguous (stride-1) gmem mode"
        )
    shapes = _wrap(sidx2gmode_full.shape)
    if smem_rank > 1:
        sidx2gmode = make_layout_unchecked(shapes[:smem_rank], strides[:smem_rank])
    else:
        sidx2gmode = make_layout_unchecked(shapes[0], strides[0])
    tile_gstride = recast_layout(tma_bits, gmem_bits, composition(gmem_layout, sidx2gmode))
    max_inner = 256
    if swizzle is not None and swizzle is not TmaSwizzle.NONE:
        max_inner = max(1, swizzle.span * 8 // tma_bits)
    gbasis = make_identity_layout(gmem_layout.shape)
    tile_gbasis_tmp = composition(gbasis, sidx2gmode)
    tile_gbasis = make_layout_unchecked(tile_gstride.shape, tile_gbasis_tmp.stride)
    g_t = recast_layout(tma_bits, gmem_bits, gmem_layout)
    extents = tile_extents(cta_v_map, gmem_layout, gmem_bits, tma_bits)
    tma_gstride = _coalesce_tma(tile_gstride, tile_gbasis, g_t, extents, max_inner)
    tma_gbasis_tile = composition(tile_gbasis, Layout(_wrap(tma_gstride.shape)))
    used = flatten(_wrap(tma_gbasis_tile.stride))
    remaining = []
    for s, d, e in zip(_wrap(flatten(g_t.shape)), _wrap(flatten(g_t.stride)), _wrap(flatten(gbasis.stride))):
        e = _as_basis(e)
        walked = extents.get(e.modes, (1, True))[0]
        if type(d) is int and d == 0:
            # a broadcast mode: every tile element along it is one gmem element -- unless the tile reaches
            # past its end, where TMA (no stride-0 dims) could not tell the outside elements apart
            if type(s) is int and type(walked) is int and s % walked:
                raise TmaError(f"the tile walks {walked} elements of the stride-0 gmem mode {list(e.modes)} of extent "
                               f"{s}, past its end: TMA has no stride-0 dims to bounds-check it")
            continue
        if type(s) is int and s == 1 and walked == 1:
            continue  # an extent-1 mode the tile does not walk past (CuTe drops it too)
        if any(_as_basis(u) == e for u in _wrap(used)):
            continue
        remaining.append(e)
    modes = [(m_shape, m_stride) for m_shape, m_stride in zip(_wrap(tma_gbasis_tile.shape), _wrap(tma_gbasis_tile.stride))]
    modes += [(1, e) for e in remaining]
    modes = _fold_to_rank_5(modes, g_t, extents)
    return make_layout_unchecked(tuple(m[0] for m in modes), tuple(m[1] for m in modes))


def dim_parts(mode_shape: Shape, mode_stride: Stride, g_t: Layout,
              extents: dict[tuple[int, ...], tuple[int, bool]]) -> list[tuple[Int, int, bool, Int, Int]]:
    """The gmem modes one TMA dim gathers, in box order (the order the box walks them, which is the order of
    the smem tile), one entry per gmem mode: ``(box extent, tile extent, tile contiguous, gmem extent, gmem
    stride)``, with ``extents`` from :func:`tile_extents`."""
    parts, order = {}, []
    for t, e in zip(_flat(mode_shape), _flat(mode_stride)):
        path = _as_basis(e).modes
        if path not in parts:
            order.append(path)
            parts[path] = 1
        parts[path] = parts[path] * t
    g_shape, g_stride = g_t.shape, g_t.stride
    out = []
    for p in order:
        tile, contiguous = extents.get(p, (1, True))
        # host values (HostInt) count with their value: the descriptor is encoded from them
        out.append((parts[p], tile, contiguous,
                    value_of(basis_get(ScaledBasis(1, p), g_shape) if p else product(g_shape)),
                    value_of(basis_get(ScaledBasis(1, p), g_stride) if p else g_stride)))
    return out


def exact_dim(parts: Sequence[tuple[Int, int, bool, Int, Int]]) -> bool:
    """True when a TMA dim gathering the gmem modes ``parts`` (see :func:`dim_parts`) is exact: every box of
    the tiling addresses exactly the tile's elements inside the tensor, in the tile's order.

    One gmem mode is always exact (TMA bounds-checks it). Several merge into one dim of stride ``g`` (their
    gcd) and a bounding extent. Sorted by stride, that is exact when: the tile walks each mode contiguously;
    no tile crosses the end of any mode but the outermost (whose overflow must leave the dim's bound); and
    the box is 1 along all of them, or: the innermost stride is ``g``, the box covers the first modes whole
    and they are compact (each stride the previous extent times stride), then one mode in part, then only
    box 1 modes. The modes the box walks (box extent > 1) must come in increasing stride, the order the box
    fills smem.
    """
    # a gmem mode of extent 1 that the tile walks once adds nothing; one the tile walks further does
    parts = [p for p in parts if not all(type(x) is int and x == 1 for x in (p[0], p[1], p[3]))]
    if len(parts) <= 1:
        return True
    if not all(type(p[i]) is int for p in parts for i in (0, 1, 3, 4)) or not all(p[2] for p in parts):
        return False
    ordered = sorted(parts, key=lambda p: p[4])
    inner_reach = 0
    for t, tile, _, s, d in ordered[:-1]:
        if s % tile:
            return False  # a tile crosses the end of an inner mode: its elements past it alias others
        inner_reach += (s - 1) * d
    _, tile_n, _, s_n, d_n = ordered[-1]
    if s_n % tile_n and d_n <= inner_reach:
        return False  # the outermost mode's overflow would land inside the dim's bound
    if all(p[0] == 1 for p in parts):
        return True
    walked = [p[4] for p in parts if p[0] > 1]
    if walked != sorted(walked):
        return False
    g = 0
    for p in ordered:
        g = math.gcd(g, p[4])
    if ordered[0][4] != g:
        return False
    j = next((k for k, p in enumerate(ordered) if p[0] != p[3]), len(ordered) - 1)
    for k in range(j):
        if ordered[k + 1][4] != ordered[k][3] * ordered[k][4]:
            return False
    return all(p[0] == 1 for p in ordered[j + 1:])


def _fold_to_rank_5(modes, g_t, extents):
    # TMA has at most 5 dims: merge neighbouring dims while the merged dim stays exact, last ones first
    modes = list(modes)
    while len(modes) > 5:
        for i in range(len(modes) - 2, -1, -1):
            (sa, ea), (sb, eb) = modes[i], modes[i + 1]
            shape, stride = _wrap(sa) + _wrap(sb), _wrap(ea) + _wrap(eb)
            if exact_dim(dim_parts(shape, stride, g_t, extents)):
                modes[i:i + 2] = [(shape, stride)]
                break
        else:
            raise TmaError(
                f"the tile walks {len(modes)} gmem modes ({', '.join(_mode_text(m, g_t, extents) for m in modes)}) "
                f"and no two neighbouring ones merge into one exact TMA dim: TMA describes at most 5 dims, and a "
                f"merged dim must address exactly the tile's elements (no padding between the modes, inner modes "
                f"covered whole)"
            )
    return modes


def _mode_text(mode, g_t, extents):
    return "+".join(f"{t} of {s}:{d}" for t, _, _, s, d in dim_parts(mode[0], mode[1], g_t, extents))


def _basis_list(stride_mode):
    return list(flatten(stride_mode)) if type(stride_mode) is tuple else [stride_mode]


def _as_basis(e):
    return e if type(e) is ScaledBasis else ScaledBasis(1, ())


def make_tma_desc(gmem_layout: Layout, gmem_dtype: DType, tma_dtype: DType, address: int | None, address_alignment: int,
                  tma_gbasis: Layout, swizzle: TmaSwizzle, num_multicast: int, store: bool = False,
                  extents: dict[tuple[int, ...], tuple[int, bool]] | None = None) -> tuple[TmaDescriptor, Stride]:
    """The :class:`TmaDescriptor` for ``tma_gbasis`` and the strides of the TMA coordinate tensor.

    Follows CuTe's ``make_tma_copy_desc``: each TMA dim gathers the gmem modes its
    bases name (merging several with the gcd recurrence, only where :func:`exact_dim`
    holds), dim 0 must be the contiguous one, the box is the size of each TMA mode, split
    across the ``num_multicast`` CTAs from the last dim down; ``store`` marks a descriptor
    of TMA stores or reductions; with the tile's ``extents`` (:func:`tile_extents`) every
    dim gathering several gmem modes is checked exact.  Returns ``(descriptor, g_stride)``.
    """
    g_t = recast_layout(tma_dtype.width, gmem_dtype.width, gmem_layout)
    modes = _wrap(tma_gbasis.stride)
    rank = len(modes)
    gshape, gstride = g_t.shape, g_t.stride
    dims, strides = [1] * rank, [0] * rank
    for i, mode in enumerate(modes):
        bases = [_as_basis(e) for e in _basis_list(mode)]
        if extents is not None and not exact_dim(dim_parts(_wrap(tma_gbasis.shape)[i], mode, g_t, extents)):
            raise TmaError(
                f"TMA dim {i} would gather the gmem modes "
                f"{_mode_text((_wrap(tma_gbasis.shape)[i], mode), g_t, extents)} "
                f"(tile extent of gmem extent:stride) into one dim that also addresses elements outside the tile "
                f"(padding between the modes, or the next row): TMA dims must address exactly the tile's elements"
            )
        if type(mode) is not tuple:
            dims[i] = value_of(basis_get(bases[0], gshape))
            strides[i] = value_of(basis_get(bases[0], gstride))
            continue
        for e in bases:
            s_j, d_j = value_of(basis_get(e, gshape)), value_of(basis_get(e, gstride))
            old = strides[i]
            strides[i] = math.gcd(strides[i], d_j)
            if strides[i]:
                dims[i] = (dims[i] - 1) * (old // strides[i]) + (s_j - 1) * (d_j // strides[i]) + 1
            else:
                dims[i] = s_j
    for i, d in enumerate(dims):
        if not all(type(v) is int or isinstance(v, SymInt) for v in (d, strides[i])):
            raise CuteTypeError(f"TMA descriptors are built on the host from known shapes and strides (or run-time "
                                f"extents of the arguments); dim {i} is {d}:{strides[i]}")
    if type(strides[0]) is not int:
        raise TmaError(f"the contiguous TMA dim has the run-time gmem stride {strides[0].describe()}: it must be the "
                       f"static 1 (mark_layout_dynamic keeps the leading dimension's stride static; pass "
                       f"leading_dim= to name it)")
    if strides[0] != 1:
        raise TmaError(
            f"the contiguous TMA dim has gmem stride {strides[0]} (must be 1): the majorness of the smem tile does "
            f"not match the gmem tensor {gmem_layout}"
        )
    byte_strides = tuple(s * tma_dtype.width // 8 for s in strides[1:])
    box = [value_of(product(m)) for m in _wrap(tma_gbasis.shape)]
    multicast = num_multicast
    i = rank - 1
    while multicast > 1:
        if i < 0:
            raise TmaError(f"the box {box} cannot be split across {num_multicast} multicast CTAs")
        if box[i] % multicast and multicast % box[i]:
            raise TmaError(
                f"the multicast count {num_multicast} does not divide the box {box}: dim {i} has {box[i]}, "
                f"which neither divides nor is divided by the {multicast} CTAs left"
            )
        new_mult = -(-multicast // box[i])
        box[i] = -(-box[i] // multicast)
        multicast = new_mult
        i -= 1
    per_cta_bytes = product(tuple(box)) * tma_dtype.width // 8
    tile_elems = value_of(product(tma_gbasis.shape))
    if (num_multicast > 1 or product(tuple(box)) * num_multicast < tile_elems) and per_cta_bytes % 128:
        raise TmaError(
            f"each TMA instruction moves a box {box} of {per_cta_bytes} bytes; when a tile takes several "
            f"instructions (or CTAs) their smem destinations must stay 128-byte aligned, so the box must be a "
            f"multiple of 128 bytes"
        )
    desc = TmaDescriptor(
        dtype=tma_dtype,
        global_dims=tuple(dims),
        global_strides=byte_strides,
        box_dims=tuple(box),
        element_strides=(1,) * rank,
        swizzle=swizzle,
        global_address=address,
        address_alignment=address_alignment,
        store=store,
    ).validate()
    g_stride = _tma_coord_strides(gmem_layout, gmem_dtype, tma_dtype, g_t, modes, byte_strides)
    return desc, g_stride


def _tma_coord_strides(gmem_layout, gmem_dtype, tma_dtype, g_t, modes, byte_strides):
    # for each gmem mode: the TMA coordinate basis it advances (CuTe's gmem_tma_basis_stride)
    ratio_num, ratio_den = gmem_dtype.width, tma_dtype.width

    def leaf(ei):
        di = basis_get(ei, g_t.stride)
        if type(di) is int and di == 0:
            return 0
        j = next((j for j, m in enumerate(modes) if any(_as_basis(e) == ei for e in _basis_list(m))), None)
        if j is None:
            # a mode the box does not use (CuTe also drops size-1 modes here; cute_py keeps a size-1
            # mode the box does use, so a tile reaching past it reads out of bounds, not row 0 again)
            return 0
        if j == 0:
            num = value_of(basis_get(ei, gmem_layout.stride)) * ratio_num
            if num % ratio_den:
                raise TmaError(
                    f"with {tma_dtype.name} as the TMA type for {gmem_dtype.name} elements, a step along gmem mode "
                    f"{ei} moves {num}/{ratio_den} TMA elements: fractional TMA coordinates are not supported"
                )
            return ScaledBasis(num // ratio_den, (0,))
        if type(modes[j]) is not tuple:
            return ScaledBasis(1, (j,))
        scale = -(-(value_of(di) * tma_dtype.width // max(byte_strides[j - 1], 16)) // 8)
        return ScaledBasis(scale, (j,))

    basis = make_basis_like(gmem_layout.shape)
    if type(basis) is not tuple:
        return leaf(ScaledBasis(1, ()))
    return _map_basis(basis, leaf)


def _map_basis(t, fn):
    if type(t) is tuple:
        return tuple(_map_basis(x, fn) for x in t)
    return fn(t)
