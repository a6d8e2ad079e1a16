"""Copy operations, copy atoms, tiled copies and per-thread partitions (CuTe's ``copy_atom.hpp``).

A :class:`CopyOp` says what one instruction moves; a :class:`CopyAtom` binds it to
an element type and exposes its thread-value layouts (``thr_id``,
``layout_src_tv``, ``layout_dst_tv``: (thread, value) -> element offset within the
instruction, as CuTe's copy traits define them in bits, recast to elements).  A
:class:`TiledCopy` repeats an atom over a tile with a (thread, value) -> tile
coordinate layout; ``get_slice(t).partition_S(tensor)`` gives thread ``t``'s
``(ATOM_V, REST_V, tile modes...)`` view of a tensor.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from .core.algebra import composition
from .core.inverse import right_inverse
from .tensor.dtypes import dtype_of
from .errors import CuteTypeError, CuteValueError
from .core.int_tuple import flatten_unchecked
from .core.normalise import as_index, as_int_tuple
from .core.notation import fmt
from .core.products import product, product_each
from .core.coalescing import coalesce
from .core.layout import Layout, cosize, make_layout_unchecked
from .core.modes import slice_
from .core.recast import recast_layout
from .core.tiling import logical_product, make_layout_tv, zipped_divide
from .core.typing import Int, Shape

if TYPE_CHECKING:
    from .core.composed import ComposedLayout
    from .tensor.dtypes import DType
    from .tensor.tensor import Tensor

__all__ = [
    "CopyOp",
    "CopyUniversalOp",
    "CopyAtom",
    "TiledCopy",
    "ThrCopy",
    "make_copy_atom",
    "make_tiled_copy_tv",
    "make_tiled_copy",
]


@dataclasses.dataclass(frozen=True)
class CopyOp:
    """Base of copy operations (frozen dataclasses).  Subclasses say how many bits one
    instruction moves (``valid_bits``) and may validate the element type.  An op whose threads hold different
    bits on the source and destination sides (``ldmatrix``) defines ``bit_layouts()``: its (src, dst, ref)
    (thread, value) -> bit layouts, as CuTe's copy traits."""

    def valid_bits(self, dtype: DType) -> set[int] | None:
        """The copy widths (in bits) this operation supports for ``dtype``; ``None``: any multiple."""
        return None

    def default_bits(self, dtype: DType) -> int:
        """The width used when ``make_copy_atom`` is given none."""
        return dtype.width

    def thr_id(self) -> Layout:
        """Threads taking part in one instruction (layout of the instruction's thread ids)."""
        return Layout(1)

    def check(self, dtype: DType, num_bits: int) -> None:
        """Raise unless one instruction of ``num_bits`` bits of ``dtype`` is valid."""
        ok = self.valid_bits(dtype)
        if num_bits % dtype.width:
            raise CuteValueError(f"{type(self).__name__}: {num_bits} bits is not a whole number of {dtype.name}")
        if ok is not None and num_bits not in ok:
            raise CuteValueError(
                f"{type(self).__name__} copies {sorted(ok)} bits per instruction, not {num_bits} ({dtype.name})"
            )


@dataclasses.dataclass(frozen=True)
class CopyUniversalOp(CopyOp):
    """Plain loads and stores (``ld``/``st``, vectorised up to 128 bits)."""

    def valid_bits(self, dtype: DType) -> set[int]:
        return {w for w in (8, 16, 32, 64, 128) if w >= dtype.width and w % dtype.width == 0} or {dtype.width}


class CopyAtom:
    """One copy instruction of ``op`` on elements of ``dtype``, moving ``num_bits`` bits."""

    __slots__ = ("op", "dtype", "num_bits", "thr_id", "layout_src_tv", "layout_dst_tv", "layout_ref_tv", "widest")

    def __init__(self, op: CopyOp, dtype: DType | str | Any, num_bits: int, widest: bool = False) -> None:
        if not isinstance(op, CopyOp):
            raise CuteTypeError(f"a copy atom needs a CopyOp, got {op!r}")
        dtype = dtype_of(dtype)
        op.check(dtype, num_bits)
        thr = op.thr_id()
        bit_layouts = getattr(op, "bit_layouts", None)
        if bit_layouts is not None:  # an op whose threads see the bits differently on each side
            src, dst, ref = (recast_layout(dtype.width, 1, lay) for lay in bit_layouts())
        else:
            src = dst = ref = recast_layout(dtype.width, 1, Layout((product(thr.shape), num_bits)))
        for name, v in (("op", op), ("dtype", dtype), ("num_bits", num_bits), ("thr_id", thr),
                        ("layout_src_tv", src), ("layout_dst_tv", dst), ("layout_ref_tv", ref),
                        ("widest", bool(widest))):
            object.__setattr__(self, name, v)

    def __setattr__(self, name, value):
        raise AttributeError("CopyAtom is immutable")

    @property
    def num_values(self) -> int:
        """Elements moved by one instruction per thread (``size<1>`` of the TV layout)."""
        return product(self.layout_src_tv.shape[1]) if type(self.layout_src_tv.shape) is tuple else 1

    def __repr__(self):
        return (f"CopyAtom({type(self.op).__name__}, {self.dtype.name}, {self.num_bits} bits"
                f"{' (the widest vector allowed in a kernel)' if self.widest else ''},"
                f" thr_id={self.thr_id}, src_tv={self.layout_src_tv}, dst_tv={self.layout_dst_tv})")


def make_copy_atom(op: CopyOp, dtype: DType | str | Any, num_bits_per_copy: int | None = None) -> CopyAtom:
    """The copy atom of ``op`` for ``dtype`` moving ``num_bits_per_copy`` bits per instruction.

    A ``CopyUniversalOp`` atom without ``num_bits_per_copy`` is one element in its layouts, and in a kernel copies
    with the widest vector that both tensors' layouts and alignment allow (as ``cute.copy(src, dst)``); under a
    predicate tensor of one condition per element, a vector where all its conditions hold and each element under
    its own condition where not (no element is accessed whose condition fails)."""
    dtype = dtype_of(dtype)
    bits = op.default_bits(dtype) if num_bits_per_copy is None else as_index(num_bits_per_copy, "num_bits_per_copy")
    if bits <= 0:
        raise CuteValueError(f"num_bits_per_copy must be a positive int, got {bits!r}")
    return CopyAtom(op, dtype, bits, widest=num_bits_per_copy is None and isinstance(op, CopyUniversalOp))


def _zip(layout):
    # CuTe's zip of a layout of rank-2 modes: ((a,b),(c,d)) -> ((a,c),(b,d))
    s, d = layout.shape, layout.stride
    return make_layout_unchecked(tuple(zip(*s)), tuple(zip(*d)))


def tile_shape(tiler: Any) -> Any:
    """The shape of a tile: a shape as it is; a tuple whose modes are layouts (a by-mode tiler that picks
    coordinates, as ``make_tiled_copy_C_atom`` makes) by each layout's shape, as CuTe's ``shape(Tiler_MN)``."""
    if isinstance(tiler, Layout):
        return tiler.shape
    if type(tiler) is tuple:
        return tuple(tile_shape(t) for t in tiler)
    return tiler


class TiledCopy:
    """``atom`` repeated over a ``tiler_mn`` tile by ``layout_tv`` ((thread, value) -> tile coordinate).

    ``tiler_mn`` is a tile shape, or a tuple of layouts, one per mode, that pick the tile's coordinates of a
    larger tile (CuTe's by-mode tilers; ``tile_shape`` is its shape)."""

    __slots__ = ("atom", "layout_tv", "tiler_mn")

    def __init__(self, atom: CopyAtom, layout_tv: Layout, tiler_mn: Shape) -> None:
        if not isinstance(atom, CopyAtom):
            raise CuteTypeError(f"a tiled copy needs a CopyAtom, got {atom!r}")
        atom_thr, atom_val = _atom_sizes(atom)
        n_thr, n_val = product(_mode(layout_tv, 0)), product(_mode(layout_tv, 1))
        if n_thr % atom_thr or n_val % atom_val:
            raise CuteValueError(
                f"the TV layout {layout_tv} has {n_thr} threads x {n_val} values, not a multiple of the "
                f"atom's {atom_thr} x {atom_val}"
            )
        object.__setattr__(self, "atom", atom)
        object.__setattr__(self, "layout_tv", layout_tv)
        object.__setattr__(self, "tiler_mn", tiler_mn)

    def __setattr__(self, name, value):
        raise AttributeError("TiledCopy is immutable")

    @property
    def size(self) -> int:
        """Number of threads."""
        return product(_mode(self.layout_tv, 0))

    def __repr__(self):
        t = self.tiler_mn
        shown = f"({','.join(str(x) for x in t)})" if type(t) is tuple and any(isinstance(x, Layout) for x in t) \
            else fmt(t)
        return f"TiledCopy(tiler_mn={shown}, layout_tv={self.layout_tv}, atom={self.atom!r})"

    def _tile2thrfrg(self, tensor_layout, ref2trg):
        atom_thr, atom_val = _atom_sizes(self.atom)
        atom_layout_tv = zipped_divide(self.layout_tv, (atom_thr, atom_val))
        trg_layout_tv = composition(atom_layout_tv, (ref2trg, None))
        thrval2mn = coalesce(_zip(trg_layout_tv), (1, (1, 1)))
        tv = composition(tensor_layout, (thrval2mn, None))
        return slice_(tv, ((None, None), None))

    def _ref2(self, which):
        a = self.atom
        return composition(right_inverse(a.layout_ref_tv), a.layout_src_tv if which == "S" else a.layout_dst_tv)

    def tidfrg_S(self, layout: Layout | ComposedLayout) -> Layout | ComposedLayout:
        """(thread, value, rest) layout of a source layout tiled by this copy."""
        return self._tile2thrfrg(zipped_divide(_check_rank(layout, self.tiler_mn), self.tiler_mn), self._ref2("S"))

    def tidfrg_D(self, layout: Layout | ComposedLayout) -> Layout | ComposedLayout:
        """(thread, value, rest) layout of a destination layout tiled by this copy."""
        return self._tile2thrfrg(zipped_divide(_check_rank(layout, self.tiler_mn), self.tiler_mn), self._ref2("D"))

    def get_layoutS_TV(self) -> Layout:
        """(thread, value) -> tile coordinate index for the source."""
        ref = Layout((tile_shape(self.tiler_mn), 1))
        return slice_(self._tile2thrfrg(ref, self._ref2("S")), (None, None, 0))

    def get_layoutD_TV(self) -> Layout:
        """(thread, value) -> tile coordinate index for the destination."""
        ref = Layout((tile_shape(self.tiler_mn), 1))
        return slice_(self._tile2thrfrg(ref, self._ref2("D")), (None, None, 0))

    @property
    def layout_src_tv_tiled(self) -> Layout:
        """The DSL's name of :meth:`get_layoutS_TV`."""
        return self.get_layoutS_TV()

    @property
    def layout_dst_tv_tiled(self) -> Layout:
        """The DSL's name of :meth:`get_layoutD_TV`."""
        return self.get_layoutD_TV()

    @property
    def layout_tv_tiled(self) -> Layout:
        """The DSL's name of ``layout_tv``: (thread, value) -> tile coordinate."""
        return self.layout_tv

    def retile(self, layout: Layout) -> Layout:
        """Regroup a thread's fragment layout ``(V, rest...)`` into ``(ATOM_V, REST_V, rest...)``."""
        from .core.recast import upcast_unchecked

        rank = len(layout)
        v = product(_mode(layout, 0))
        n_thr = self.size
        _, atom_val = _atom_sizes(self.atom)
        frg_mn = upcast_unchecked(composition(right_inverse(self.layout_tv), Layout(tile_shape(self.tiler_mn))),
                                  n_thr * v)
        frg_v = zipped_divide(logical_product(Layout(v), right_inverse(frg_mn)), Layout(atom_val))
        t = zipped_divide(layout, (v,) + tuple(product_each(frg_mn.shape)))
        vt = composition(t, (frg_v, None))
        return slice_(vt, (None, ((0,) + (None,) * (rank - 1)) if rank > 1 else 0))

    def get_slice(self, thr_idx: Int) -> ThrCopy:
        """The :class:`ThrCopy` of thread ``thr_idx``."""
        return ThrCopy(self, thr_idx)

    get_thread_slice = get_slice


class ThrCopy:
    """One thread's view of a :class:`TiledCopy`."""

    __slots__ = ("tiled_copy", "thr_idx")

    def __init__(self, tiled_copy: TiledCopy, thr_idx: Int) -> None:
        n = tiled_copy.size
        if type(thr_idx) is int and not 0 <= thr_idx < n:
            raise CuteValueError(f"thread index {thr_idx} is out of range for a tiled copy of {n} threads")
        self.tiled_copy = tiled_copy
        self.thr_idx = thr_idx

    def _partition(self, tensor, frg):
        from .tensor.tensor import Tensor

        layout = frg(tensor.layout if isinstance(tensor, Tensor) else tensor)
        rank = len(tensor.layout if isinstance(tensor, Tensor) else tensor)
        coord = (self.thr_idx, None, None if rank == 1 else (None,) * rank)
        if isinstance(tensor, Tensor):
            return Tensor(tensor.engine, layout)[coord]
        return slice_(layout, coord)

    def partition_S(self, tensor: Tensor | Layout | ComposedLayout) -> Tensor | Layout | ComposedLayout:
        """This thread's ``(CPY_V, CPY_M, CPY_N, ...)`` view of a source tensor (or layout)."""
        return self._partition(tensor, self.tiled_copy.tidfrg_S)

    def partition_D(self, tensor: Tensor | Layout | ComposedLayout) -> Tensor | Layout | ComposedLayout:
        """This thread's ``(CPY_V, CPY_M, CPY_N, ...)`` view of a destination tensor (or layout)."""
        return self._partition(tensor, self.tiled_copy.tidfrg_D)

    def retile_S(self, tensor: Tensor | Layout) -> Tensor | Layout:
        """A register fragment regrouped for the source side of the atom."""
        return _retile(self.tiled_copy, tensor)

    retile_D = retile_S
    retile = retile_S


def _retile(tc, tensor):
    from .tensor.tensor import Tensor

    if isinstance(tensor, Tensor):
        return Tensor(tensor.engine, tc.retile(tensor.layout))
    return tc.retile(tensor)


def _mode(layout, i):
    s = layout.shape
    return s[i] if type(s) is tuple else s


def _leaves(x):
    return flatten_unchecked(x) if type(x) is tuple else (x,)


def _atom_sizes(atom):
    tv = atom.layout_ref_tv
    return product(_mode(tv, 0)), product(_mode(tv, 1))


def _check_rank(layout, tiler):
    from .core.congruence import evenly_divides
    from .core.normalise import is_static

    r = len(tiler) if type(tiler) is tuple else 1
    if type(tiler) is tuple and any(isinstance(t, Layout) for t in tiler):
        tiler = tuple(product(t.shape) if isinstance(t, Layout) else t for t in tiler)  # a by-mode tiler's extents
    if len(layout) < r:
        raise CuteValueError(f"a tensor of rank {len(layout)} cannot be partitioned by the rank-{r} tile {fmt(tiler)}")
    if is_static(layout.shape) and not evenly_divides(layout.shape, tiler):
        raise CuteValueError(f"the tiled copy's tile {fmt(tiler)} does not divide the tensor's shape {fmt(layout.shape)}")
    return layout


def make_tiled_copy_tv(atom: CopyAtom, thr_layout: Layout, val_layout: Layout) -> TiledCopy:
    """A tiled copy where thread ``thr_layout(m, n)`` owns the ``val_layout`` block at (m, n).

    The tile is ``product_each(shape(raked_product(thr_layout, val_layout)))``.
    """
    tiler, layout_tv = make_layout_tv(thr_layout, val_layout)
    return TiledCopy(atom, layout_tv, tiler)


def make_tiled_copy_S(atom: CopyAtom, tiled_copy: TiledCopy) -> TiledCopy:
    """A tiled copy of ``atom`` whose threads and values are the source side of ``tiled_copy`` (its
    ``get_layoutS_TV`` over its tile), as CuTe's ``make_tiled_copy_S``."""
    if not isinstance(tiled_copy, TiledCopy):
        raise CuteTypeError(f"make_tiled_copy_S takes a TiledCopy, got {tiled_copy!r}")
    return TiledCopy(atom, tiled_copy.get_layoutS_TV(), tiled_copy.tiler_mn)


def make_tiled_copy_D(atom: CopyAtom, tiled_copy: TiledCopy) -> TiledCopy:
    """A tiled copy of ``atom`` whose threads and values are the destination side of ``tiled_copy``."""
    if not isinstance(tiled_copy, TiledCopy):
        raise CuteTypeError(f"make_tiled_copy_D takes a TiledCopy, got {tiled_copy!r}")
    return TiledCopy(atom, tiled_copy.get_layoutD_TV(), tiled_copy.tiler_mn)


def make_tiled_copy(atom: CopyAtom, layout_tv: Layout, tiler_mn: Shape | list[Shape]) -> TiledCopy:
    """A tiled copy from a (thread, value) -> tile layout and the tile shape ``tiler_mn``."""
    if type(layout_tv) is not Layout:
        raise CuteTypeError(f"layout_tv must be a Layout, got {layout_tv!r}")
    if type(layout_tv.shape) is not tuple or len(layout_tv.shape) != 2:
        raise CuteValueError(f"make_tiled_copy: layout_tv maps (thread, value) and must have rank 2, got {layout_tv}")
    for mode, name in ((layout_tv.shape[0], "thread"), (layout_tv.shape[1], "value")):
        n = product(mode)
        if type(n) is int and n <= 0:
            raise CuteValueError(f"make_tiled_copy: layout_tv {layout_tv} has an empty {name} mode (size {n})")
    # the tile is a shape (of positive extents): its tensor is divided by it, and get_layoutS_TV lays it out
    tiler = as_int_tuple(tiler_mn, "make_tiled_copy: tiler_mn (a tile shape)")
    for x in flatten_unchecked(tiler) if type(tiler) is tuple else (tiler,):
        if type(x) is int and x <= 0:
            raise CuteValueError(f"make_tiled_copy: the extents of tiler_mn must be positive, got {fmt(tiler)}")
    if type(tiler) is tuple and not tiler:
        raise CuteValueError("make_tiled_copy: tiler_mn must have at least one mode, got ()")
    low = sum((x - 1) * d for x, d in zip(_leaves(layout_tv.shape), _leaves(layout_tv.stride))
              if type(x) is int and type(d) is int and d < 0 and x > 1)
    if low < 0:
        raise CuteValueError(f"make_tiled_copy: layout_tv {layout_tv} maps (thread, value) to the tile index {low}; "
                             f"tile indices are >= 0")
    n, reach = product(tiler), cosize(layout_tv)
    if type(n) is int and type(reach) is int and reach > n:
        raise CuteValueError(f"make_tiled_copy: layout_tv {layout_tv} maps (thread, value) to tile indices up to "
                             f"{reach - 1}, outside the {n} elements of the tile {fmt(tiler)}")
    return TiledCopy(atom, layout_tv, tiler)
