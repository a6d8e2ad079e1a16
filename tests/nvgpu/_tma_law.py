"""Random TMA copy configurations, and the law every accepted one must satisfy, checked through the CPU
reference (tests/nvgpu/test_tma_law.py) and on a GPU (tests/nvgpu/test_tma_law_gpu.py).

The law: for every CTA tile of an accepted atom, the global bytes the descriptor's boxes touch are exactly
the bytes of the tile's elements inside the tensor -- a load reads those and puts each element at its smem
position (zeros for the tile's elements outside the tensor), a store or reduction writes those and nothing
else. Anything else must be a CuteError naming the rule.

What a tile's elements and their bytes are is computed here from the shape, strides and tiler alone
(plain integer arithmetic over numpy), not through cute_py's TMA code.
"""

import itertools

import numpy as np
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout
from cute_py import reference as ref
from cute_py.core.composed import smem_element_layout
from cute_py.nvgpu import cpasync
from cute_py.runtime import make_fake_tensor
from cute_py.tensor.engines import ArrayEngine
from cute_py.nvgpu.warpgroup.smem import SmemLayoutAtomKind as K

DTYPES = [cute.Int8, cute.Uint8, cute.Float16, cute.BFloat16, cute.Int32, cute.Float32, cute.Float64]
REDUCE_DTYPES = [cute.Int32, cute.Float32]
ATOM_KINDS = list(K)
POISON = 0xA5
MAX_ELEMS = 1 << 13


@st.composite
def tma_cases(draw, ops=("load", "store", "reduce")):
    """One configuration: element type, gmem shape and strides (ranks 1-8, permuted, padded), tile,
    smem layout (compact in some order, a swizzle atom, or a hostile one), op and multicast."""
    op = draw(st.sampled_from(ops))
    dtype = draw(st.sampled_from(REDUCE_DTYPES if op == "reduce" else DTYPES))
    if draw(st.integers(0, 2)) == 0:
        shape, order, tile, smem = draw(_swizzled(dtype))
    else:
        shape, order, tile = draw(_any_shape(dtype))
        smem = draw(_smem_layouts(tile, order, dtype))
    stride = draw(_strides(shape, order, dtype))
    mc = draw(st.sampled_from([1, 1, 2, 4])) if op == "load" else 1
    return dict(op=op, dtype=dtype, shape=shape, stride=stride, tile=tile, smem=smem, mc=mc)


@st.composite
def _any_shape(draw, dtype):
    eb = dtype.width // 8
    rank = draw(st.integers(1, 8))
    shape = []
    for _ in range(rank):
        budget = MAX_ELEMS // max(1, int(np.prod(shape)) if shape else 1)
        shape.append(draw(st.integers(1, max(1, min(24 if rank <= 2 else 6, budget)))))
    order = draw(st.permutations(range(rank)))
    if draw(st.booleans()):  # rows of whole 16-byte granules (TMA stores need them)
        shape[order[0]] = -(-shape[order[0]] * eb // 16) * 16 // eb
    tile = [draw(st.sampled_from(sorted({1, 2, 4, 8, 16, s, s + 1, max(1, s - 1), 2 * s}))) for s in shape]
    if draw(st.integers(0, 3)):  # mostly an inner tile of whole 16-byte granules, as TMA needs
        tile[order[0]] = draw(st.sampled_from([16 // eb or 1, 32 // eb or 1, 64 // eb or 1, 2 * max(1, 16 // eb)]))
    return tuple(shape), tuple(order), tuple(tile)


@st.composite
def _swizzled(draw, dtype):
    # a tile of a swizzle (or interleave) atom, in the atom's majorness, over a tensor of a few tiles
    kind = draw(st.sampled_from(ATOM_KINDS))
    atom = cute.make_smem_layout_atom(kind, dtype.width)
    a0, a1 = cute.product_each(atom.shape) if not hasattr(atom, "outer") else cute.product_each(atom.outer.shape)
    tile = [a0 * draw(st.sampled_from([1, 2])), a1 * draw(st.sampled_from([1, 1, 2]))]
    extra = draw(st.integers(0, 2))
    tile += [draw(st.sampled_from([1, 2])) for _ in range(extra)]
    shape = [t * draw(st.sampled_from([1, 2])) + draw(st.sampled_from([0, 0, 1, 3, -1])) for t in tile]
    shape = [max(1, x) for x in shape]
    order = [0, 1] if kind.name.startswith("MN") else [1, 0]
    order += list(range(2, 2 + extra))
    smem = cute.tile_to_shape(atom, tuple(tile))
    return tuple(shape), tuple(order), tuple(tile), smem


@st.composite
def _strides(draw, shape, order, dtype):
    # strides in memory order: each mode starts after the previous one, sometimes with padding; the padding
    # is usually a whole number of 16-byte granules (strides stay TMA-legal), sometimes anything
    eb = dtype.width // 8
    rank = len(shape)
    stride, pitch = [0] * rank, draw(st.sampled_from([1] * 9 + [2]))
    for m in order:
        stride[m] = pitch
        pad_kind = draw(st.sampled_from(["none"] * 2 + ["granule"] * 12 + ["any"]))
        extent = pitch * shape[m]
        if pad_kind == "granule":
            extent = -(-extent * eb // 16) * 16 // eb + draw(st.integers(0, 2)) * 16 // eb
        elif pad_kind == "any":
            extent += draw(st.integers(0, 5))
        pitch = max(extent, 1)
    if draw(st.integers(0, 9)) == 0 and rank > 1:  # a broadcast (stride-0) mode
        stride[draw(st.integers(0, rank - 1))] = 0
    return tuple(stride)


@st.composite
def _smem_layouts(draw, tile, gmem_order, dtype):
    kind = draw(st.sampled_from(["gmem order", "gmem order", "random order", "atom", "atom", "padded",
                                 "stride 0", "offset"]))
    rank = len(tile)
    if kind == "atom" and rank >= 2:
        atom = cute.make_smem_layout_atom(draw(st.sampled_from(ATOM_KINDS)), dtype.width)
        try:
            return cute.tile_to_shape(atom, tile)
        except cute.CuteError:
            pass
    if kind == "random order":
        order = draw(st.permutations(range(rank)))
    else:
        order = gmem_order
    # make_ordered_layout takes each mode's place in the order; `order` lists the modes innermost first
    places = [0] * rank
    for place, m in enumerate(order):
        places[m] = place
    base = cute.make_ordered_layout(tile, tuple(places)) if rank > 1 else Layout(tile[0])
    if kind == "padded" and rank > 1:
        # the innermost mode contiguous, every further mode after a padded pitch
        strides, pitch = [0] * rank, tile[order[0]] + draw(st.integers(1, 64))
        strides[order[0]] = 1
        for m in order[1:]:
            strides[m] = pitch
            pitch *= tile[m]
        return Layout(tile, tuple(strides))
    if kind == "stride 0" and rank > 1:
        strides = list(base.stride)
        strides[draw(st.integers(0, rank - 1))] = 0
        return Layout(tile, tuple(strides))
    if kind == "offset":
        sw = cute.Swizzle(draw(st.integers(0, 3)), max(0, 4 - (dtype.width // 8).bit_length() + 1), 3)
        return cute.ComposedLayout(sw, draw(st.sampled_from([8, 16, 64, 1024])), base)
    return base


OPS = {"load": cpasync.CopyBulkTensorTileG2SOp(), "mcast": cpasync.CopyBulkTensorTileG2SMulticastOp(),
       "store": cpasync.CopyBulkTensorTileS2GOp(), "reduce": cpasync.CopyReduceBulkTensorTileS2GOp()}


def build(cfg, address=None):
    """``(atom, tma_tensor)`` for the configuration, or the CuteError that rejects it."""
    g = make_fake_tensor(cfg["dtype"], cfg["shape"], cfg["stride"], assumed_align=128)
    if address is not None:
        g = cute.Tensor(cute.make_ptr(cfg["dtype"], address, cute.AddressSpace.gmem, 128), g.layout)
    op = OPS["mcast" if cfg["mc"] > 1 else cfg["op"]]
    return cpasync.make_tiled_tma_atom(op, g, cfg["smem"], cfg["tile"], cfg["mc"])


def grid(cfg):
    return tuple(-(-s // t) for s, t in zip(cfg["shape"], cfg["tile"]))


def tiles(cfg, limit=12, seed=0):
    """Tile coordinates to check: all of them, or the first, the last and a sample when there are many."""
    g = grid(cfg)
    n = int(np.prod(g))
    if n <= limit:
        picks = range(n)
    else:
        rng = np.random.default_rng(seed)
        picks = sorted({0, n - 1, *rng.choice(n, limit - 2, replace=False).tolist()})
    return [tuple(int(x) for x in np.unravel_index(i, g, order="F")) for i in picks]


def tile_elements(cfg, tile_coord):
    """``(coords, inside, offsets)`` of every element of the tile (column-major over the tile): its gmem
    coordinate, whether it is inside the tensor, and its gmem element offset (where inside)."""
    ranges = [np.arange(c * t, (c + 1) * t) for c, t in zip(tile_coord, cfg["tile"])]
    coords = np.array([c[::-1] for c in itertools.product(*ranges[::-1])], dtype=np.int64).reshape(-1, len(ranges))
    inside = np.all(coords < np.array(cfg["shape"]), axis=1)
    offsets = coords @ np.array(cfg["stride"], dtype=np.int64)
    return coords, inside, offsets


def tile_bytes(cfg, tile_coord):
    """The sorted gmem byte offsets of the tile's elements inside the tensor."""
    _, inside, offsets = tile_elements(cfg, tile_coord)
    eb = cfg["dtype"].width // 8
    return np.unique((offsets[inside][:, None] * eb + np.arange(eb)[None, :]).reshape(-1))


def gmem_bytes(cfg):
    """Bytes spanned by the tensor (its largest offset + 1 element)."""
    eb = cfg["dtype"].width // 8
    return (sum((s - 1) * d for s, d in zip(cfg["shape"], cfg["stride"])) + 1) * eb


def smem_element_function(cfg):
    """The smem layout as a function of element offsets (a byte-swizzled atom read for the element width)."""
    return smem_element_layout(cfg["smem"], cfg["dtype"].width)


def smem_positions(cfg):
    """The byte offset of each tile element (column-major over the tile) in the smem buffer, swizzle applied."""
    smem, eb = smem_element_function(cfg), cfg["dtype"].width // 8
    n = int(np.prod(cfg["tile"]))
    return np.array([smem(i) for i in range(n)], dtype=np.int64) * eb


def smem_buffer_bytes(cfg):
    smem = smem_element_function(cfg)
    outer = getattr(smem, "outer", smem)
    n = (cute.cosize(outer) + getattr(smem, "offset", 0)) * cfg["dtype"].width // 8
    return -(-n // 1024) * 1024 + 1024


def partitions(cfg, atom, tma_tensor, smem_tensor, tile_coord, cta):
    rank = len(cfg["tile"])
    g_tile = cute.local_tile(tma_tensor, cfg["tile"], tile_coord)
    return cpasync.tma_partition(atom, cta, Layout(cfg["mc"]), cute.group_modes(smem_tensor, 0, rank),
                                 cute.group_modes(g_tile, 0, rank))


def host_smem_tensor(cfg, buf):
    dtype = cfg["dtype"]
    view = buf.view(dtype.numpy_dtype or dtype.storage_dtype)
    return cute.Tensor(ArrayEngine(view, 0, dtype), smem_element_function(cfg))


def check_tile(cfg, atom, tma_tensor, tile_coord, rng):
    """Check the law on one tile through the CPU reference; returns a description of the first breach or None."""
    dtype, eb = cfg["dtype"], cfg["dtype"].width // 8
    want = tile_bytes(cfg, tile_coord)
    nbytes = smem_buffer_bytes(cfg)
    size = gmem_bytes(cfg) + 64
    _, inside, offsets = tile_elements(cfg, tile_coord)
    pos = smem_positions(cfg)
    if cfg["op"] == "load":
        src = rng.integers(1, 255, size, dtype=np.uint8)
        bufs = [np.full(nbytes, POISON, dtype=np.uint8) for _ in range(cfg["mc"])]
        touched = []
        for cta in range(cfg["mc"]):
            s_part, g_part = partitions(cfg, atom, tma_tensor, host_smem_tensor(cfg, bufs[cta]), tile_coord, cta)
            for crd, byte in ref.tma_instructions(atom, s_part, g_part):
                touched.append(ref.box_gmem_bytes(atom.descriptor, crd))
                ref.tma_load(atom.descriptor, src, crd, None, byte, mcast=bufs)
        got = np.unique(np.concatenate(touched)) if touched else np.zeros(0, np.int64)
        if not np.array_equal(got, want):
            return f"the loads read {_diff(got, want)}"
        for cta, buf in enumerate(bufs):
            for e in range(pos.size):
                exp = src[offsets[e] * eb:(offsets[e] + 1) * eb] if inside[e] else np.zeros(eb, np.uint8)
                if not np.array_equal(buf[pos[e]:pos[e] + eb], exp):
                    return (f"CTA {cta}: tile element {e} ({'inside' if inside[e] else 'outside'}) holds "
                            f"{buf[pos[e]:pos[e] + eb].tolist()} at smem byte {pos[e]}, expected {exp.tolist()}")
        return None
    # stores and reductions: smem holds distinct small values at the tile's positions
    buf = np.zeros(nbytes, dtype=np.uint8)
    store = dtype.numpy_dtype or dtype.storage_dtype
    vals = (np.arange(1, pos.size + 1) % 100 + 1).astype(store)
    for e in range(pos.size):
        buf[pos[e]:pos[e] + eb] = vals[e:e + 1].view(np.uint8)
    if cfg["op"] == "store":
        dst = np.full(size, POISON, dtype=np.uint8)
        old = dst.copy()
    else:
        dst = np.full(size, POISON, dtype=np.uint8)
        ints = dst[:size // eb * eb].view(store)
        ints[:] = (np.arange(ints.size) % 7).astype(store)
        old = dst.copy()
    s_part, g_part = partitions(cfg, atom, tma_tensor, host_smem_tensor(cfg, buf), tile_coord, 0)
    touched = []
    for crd, byte in ref.tma_instructions(atom, s_part, g_part):
        touched.append(ref.box_gmem_bytes(atom.descriptor, crd, write=True))
        if cfg["op"] == "store":
            ref.tma_store(atom.descriptor, buf, byte, crd, dst)
        else:
            ref.tma_reduce(atom.descriptor, buf, byte, crd, dst)
    got = np.unique(np.concatenate(touched)) if touched else np.zeros(0, np.int64)
    if not np.array_equal(got, want):
        return f"the {cfg['op']}s write {_diff(got, want)}"
    expect = old.copy()
    for e in np.nonzero(inside)[0]:
        o = offsets[e] * eb
        new = buf[pos[e]:pos[e] + eb].copy().view(store)  # the element's value in smem (aliased ones share one)
        if cfg["op"] == "reduce":  # accumulate: tile elements of a stride-0 gmem mode reduce into one element
            new = (expect[o:o + eb].view(store) + new).astype(store)
        expect[o:o + eb] = new.view(np.uint8)
    if not np.array_equal(dst, expect):
        bad = np.nonzero(dst != expect)[0]
        return f"gmem differs from the expected {cfg['op']} at bytes {bad[:8].tolist()} ({bad.size} in all)"
    return None


def _diff(got, want):
    extra, missing = np.setdiff1d(got, want), np.setdiff1d(want, got)
    return (f"{got.size} bytes where the tile has {want.size}: {extra.size} outside the tile (first "
            f"{extra[:6].tolist()}), {missing.size} of the tile missed (first {missing[:6].tolist()})")
