"""MMA operations, MMA atoms, tiled MMAs and per-thread partitions (CuTe's ``mma_atom.hpp``).

An :class:`MmaOp` says what one MMA instruction computes, ``D = A * B + C`` on an ``(M, N, K)`` tile,
and how its operands are spread over the threads that issue it.  An :class:`MmaAtom` wraps one op;
a :class:`TiledMma` repeats the atom over a grid of threads (``atom_layout_mnk``) and, optionally,
reorders the M/N/K coordinates it covers (``permutation_mnk``); ``tiled_mma.get_slice(t)`` is thread
``t``'s :class:`ThrMma`, whose ``partition_A/B/C`` give the thread's view of a tile as CuTe C++'s
``ThrMMA::partition_A/B/C`` do: ``(MMA_V, MMA_M, MMA_K, ...)`` for A (an ``(M, K)`` tensor),
``(MMA_V, MMA_N, MMA_K, ...)`` for B (an ``(N, K)`` tensor: B is K-major, "TN"), ``(MMA_V, MMA_M, MMA_N,
...)`` for C.  :func:`gemm` issues the atom over such register fragments.

**The op interface** (what any MMA op -- the warp-level ``mma.sync`` ops of :mod:`cute_py.nvgpu.warp`, or a
warpgroup op -- provides to plug into :class:`MmaAtom`, :class:`TiledMma` and :func:`gemm`):

- ``shape_mnk``: ``(M, N, K)`` of one instruction (static ints);
- ``thr_id()``: a :class:`Layout` of the instruction's threads (its size is the number of threads that
  issue one instruction together: 32 for a warp, 128 for a warpgroup);
- ``layout_a_tv()`` / ``layout_b_tv()`` / ``layout_c_tv()``: ``(thread, value) -> element`` layouts into the
  column-major ``(M, K)``, ``(N, K)`` and ``(M, N)`` tiles (CuTe's ``ALayout``/``BLayout``/``CLayout``);
  each covers its tile (a thread holding no element of an operand, such as a warpgroup op's A read from
  shared memory, uses stride 0);
- ``a_dtype``, ``b_dtype``, ``acc_dtype`` (C and D): element types of :mod:`cute_py.tensor.dtypes`;
- optionally ``make_fragment_A/B/C(tensor)``: the fragment of an operand given its partition (default: a
  register fragment like the partition, of the operand's element type; an op whose A or B come from shared
  memory as descriptors returns its descriptor tensor here);
- a kernel emission entry: ``@emits(OpClass, "dialect_op", ...)`` in the compiler's emission table,
  called once per instruction as ``entry(builder, op, D=, A=, B=, C=)`` with the four operands as tensors over
  one instruction's values (mode ``V`` of each fragment: ``D``/``C`` the accumulator values, ``A``/``B`` as
  ``make_fragment_A/B`` built them); it reads ``A``, ``B``, ``C`` and writes ``D``;
- ``check_gemm(d, a, b, c)`` (optional): extra rules on the fragments, raising a ``CuteError`` naming the rule;
- ``field_defaults()`` (optional): the op's settable fields (an enum member -> its default), which
  ``atom.set(field, value)`` / ``tiled_mma.set(...)`` change and ``get`` reads (trace-time state of the atom:
  a ``set`` holds for the instructions traced after it); with them, ``gemm_fields(fields, k)`` gives the extra
  keyword operands of the emission entry for the instructions of K block ``k`` (a warpgroup op's
  ``accumulate``: the field for ``k == 0``, true after it).

``thr_id`` may also be a property holding the layout (a :class:`Layout` attribute instead of a method).

:func:`gemm` checks the fragments' ranks and mode sizes against each other, then issues one instruction per
``(m, n, k)`` of the fragments' ``(V, M, N)`` / ``(V, M, K)`` / ``(V, N, K)`` modes: ``D = A * B + C`` with
the ``K`` blocks accumulated in order (the first into ``D`` from ``C``, the others from ``D``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from . import device
from .core.int_tuple import fmt, product
from .core.layout import Layout, make_layout_unchecked
from .core.modes import append
from .core.algebra import complement, composition
from .core.inverse import right_inverse
from .core.tiling import logical_divide, tiled_product, zipped_divide
from .core.typing import Int
from .errors import CuteTypeError, CuteValueError, TraceError
from .mma_thread import ThrMma

if TYPE_CHECKING:
    from .tensor.tensor import Tensor

__all__ = [
    "MmaOp",
    "MmaAtom",
    "TiledMma",
    "make_mma_atom",
    "make_tiled_mma",
]


@dataclasses.dataclass(frozen=True)
class MmaOp:
    """Base of MMA operations (frozen dataclasses); see the module for what a subclass provides."""

    shape_mnk = (1, 1, 1)

    def thr_id(self) -> Layout:
        """The instruction's threads."""
        raise NotImplementedError

    def layout_a_tv(self) -> Layout:
        """(thread, value) -> (m, k) index into the column-major (M, K) tile."""
        raise NotImplementedError

    def layout_b_tv(self) -> Layout:
        """(thread, value) -> (n, k) index into the column-major (N, K) tile."""
        raise NotImplementedError

    def layout_c_tv(self) -> Layout:
        """(thread, value) -> (m, n) index into the column-major (M, N) tile."""
        raise NotImplementedError


def _mode(layout, i):
    s, d = layout.shape, layout.stride
    if type(s) is not tuple:
        return layout
    return make_layout_unchecked(s[i], d[i])


def _size(layout, i=None):
    s = layout.shape
    if i is not None:
        s = s[i] if type(s) is tuple else s
    return product(s)


def _open_loops(scope: Any) -> list:
    """The run-time loops around ``scope`` (innermost first)."""
    loops = []
    while scope is not None:
        if "loop" in scope.kind:
            loops.append(scope)
        scope = scope.parent
    return loops


def _within(scope: Any, outer: Any) -> bool:
    """Whether the run-time scope ``scope`` is ``outer`` or inside it (``None``: the kernel's top level)."""
    while scope is not None:
        if scope is outer:
            return True
        scope = scope.parent
    return False


class MmaAtom:
    """One MMA instruction of ``op``: its shape and the thread-value layouts of its operands."""

    __slots__ = ("op", "fields", "set_in", "inherited_in")

    def __init__(self, op: MmaOp) -> None:
        if not isinstance(op, MmaOp):
            raise CuteTypeError(f"an MMA atom needs an MmaOp, got {op!r}")
        object.__setattr__(self, "op", op)
        defaults = getattr(op, "field_defaults", None)
        object.__setattr__(self, "fields", dict(defaults()) if defaults is not None else {})
        object.__setattr__(self, "set_in", {})  # field -> the run-time scope its value was set in
        object.__setattr__(self, "inherited_in", {})  # field -> run-time loops whose body read a value from before them

    def set(self, field: Any, value: Any) -> None:
        """Set the op's field ``field`` (a static bool or a traced Boolean, as the field takes) for the
        instructions traced after this call.

        The field is kept while tracing, and a run-time loop's body is traced once, so a value holds as the
        trace has it only where that is what every iteration would see:

        - inside a run-time loop, a change after a ``gemm`` of the same body that read the value set *before*
          the loop is a ``TraceError`` (the next iteration would read the new value, the trace the old one):
          set the field at the top of the body instead (``set(Field.ACCUMULATE, k > 0)`` with a traced
          Boolean, or ``False`` then ``True`` around the first k-block, as ``examples/gemm.py`` does for each
          tile), or peel the first iteration, or unroll with ``range_constexpr``; setting the value it
          already has is always allowed;
        - a value set inside a run-time branch or loop holds there; using it after the branch or loop has ended
          (where it would depend on the path taken, or on whether the loop ran) is a ``TraceError`` in
          ``gemm``."""
        if field not in self.fields:
            raise CuteValueError(f"{self.op!r} has no settable field {field} (its fields: "
                                 f"{', '.join(str(f) for f in self.fields) or 'none'})")
        ctx = device.active()
        scope = ctx.run_time_scope() if ctx is not None else None
        same = type(value) is bool and type(self.fields[field]) is bool and value == self.fields[field]
        if not same:
            for loop in _open_loops(scope):
                if any(seen is loop for seen in self.inherited_in.get(field, ())):
                    raise TraceError(
                        f"set({field}, {value!r}) inside the {loop.kind} at {loop.file}:{loop.line}, after a gemm of "
                        f"its body read the value set before the loop: the next iteration would read the new value, "
                        f"but the body is traced once with the old one; set the field at the top of the body "
                        f"(e.g. set({field}, k > 0)), peel the first iteration, or unroll with range_constexpr")
        if ctx is not None:  # a body traced again starts from the state before this set
            ctx.on_abandon(self._restorer(field))
        self.fields[field] = value
        self.set_in[field] = scope

    def _restorer(self, field: Any) -> Any:
        """A callable putting ``field``'s value and the scope it was set in back as they are now."""
        value, had, scope = self.fields[field], field in self.set_in, self.set_in.get(field)

        def restore():
            self.fields[field] = value
            if had:
                self.set_in[field] = scope
            else:
                self.set_in.pop(field, None)

        return restore

    def checked_fields(self) -> dict:
        """The fields as ``gemm`` uses them now; ``TraceError`` for one set in a run-time branch or loop that has
        ended. Records, for each open run-time loop, the fields whose value this read took from before it."""
        ctx = device.active()
        here = ctx.run_time_scope() if ctx is not None else None
        for field, scope in self.set_in.items():
            if scope is not None and not scope.open:
                raise TraceError(f"{field} was set inside the {scope.kind} at {scope.file}:{scope.line}, which has "
                                 f"ended: after it its value depends on the path taken (or on whether the loop ran); "
                                 f"set it again after the {scope.kind.split()[-1]}")
        loops = _open_loops(here)
        for field in self.fields:
            origin = self.set_in.get(field)
            seen = [s for s in self.inherited_in.get(field, ()) if s.open]
            seen += [loop for loop in loops if not _within(origin, loop) and not any(s is loop for s in seen)]
            self.inherited_in[field] = seen
        return dict(self.fields)

    def get(self, field: Any) -> Any:
        """The current value of the op's field ``field``."""
        if field not in self.fields:
            raise CuteValueError(f"{self.op!r} has no settable field {field} (its fields: "
                                 f"{', '.join(str(f) for f in self.fields) or 'none'})")
        return self.fields[field]

    def __setattr__(self, name, value):
        raise AttributeError("MmaAtom is immutable")

    @property
    def shape_mnk(self) -> tuple[int, int, int]:
        """(M, N, K) of one instruction."""
        return tuple(self.op.shape_mnk)

    @property
    def thr_id(self) -> Layout:
        """The instruction's threads (a layout of thread ids)."""
        return _op_thr_id(self.op)

    @property
    def size(self) -> int:
        """Threads that issue one instruction."""
        return _size(_op_thr_id(self.op))

    @property
    def tv_layout_A(self) -> Layout:
        """(thread, value) -> (m, k) index of the (M, K) tile."""
        return self.op.layout_a_tv()

    @property
    def tv_layout_B(self) -> Layout:
        """(thread, value) -> (n, k) index of the (N, K) tile."""
        return self.op.layout_b_tv()

    @property
    def tv_layout_C(self) -> Layout:
        """(thread, value) -> (m, n) index of the (M, N) tile."""
        return self.op.layout_c_tv()

    def make_fragment_A(self, tensor: Tensor | Layout) -> Tensor:
        """The A fragment of a partition ``tensor`` (``(V, M, K, ...)``)."""
        return _fragment(self.op, "A", tensor, self.op.a_dtype)

    def make_fragment_B(self, tensor: Tensor | Layout) -> Tensor:
        """The B fragment of a partition ``tensor`` (``(V, N, K, ...)``)."""
        return _fragment(self.op, "B", tensor, self.op.b_dtype)

    def make_fragment_C(self, tensor: Tensor | Layout) -> Tensor:
        """The accumulator fragment of a partition ``tensor`` (``(V, M, N, ...)``)."""
        return _fragment(self.op, "C", tensor, self.op.acc_dtype)

    def __repr__(self):
        return (f"MmaAtom({self.op!r}, shape_mnk={fmt(self.shape_mnk)}, thr_id={self.thr_id}, "
                f"tv_A={self.tv_layout_A}, tv_B={self.tv_layout_B}, tv_C={self.tv_layout_C})")


def _op_thr_id(op):
    t = op.thr_id
    return t if isinstance(t, Layout) else t()


def _fragment(op, which, tensor, dtype):
    from .tensor.tensor import make_fragment_like

    hook = getattr(op, f"make_fragment_{which}", None)
    if hook is not None:
        return hook(tensor)
    layout = getattr(tensor, "layout", tensor)
    if len(layout) < 3 and which != "C":
        raise CuteValueError(f"make_fragment_{which} takes a partition of rank >= 3 ((V, MN, K, ...)), got {layout}")
    return make_fragment_like(layout, dtype)


def make_mma_atom(op: MmaOp) -> MmaAtom:
    """The MMA atom of ``op``."""
    return MmaAtom(op)


def _perm(p, i):
    if p is None or isinstance(p, Layout):
        return p
    if type(p) is int and p > 0:
        return Layout(p)
    raise CuteTypeError(f"permutation_mnk[{i}] must be None, a positive int or a Layout, got {p!r}")


class TiledMma:
    """``atom`` repeated over the thread grid ``atom_layout_mnk``, its M/N/K coordinates reordered by
    ``permutation_mnk`` (CuTe's ``TiledMMA``)."""

    __slots__ = ("atom", "atom_layout_mnk", "permutation", "thr_layout_vmnk")

    def __init__(self, atom: MmaAtom, atom_layout_mnk: Layout, permutation_mnk: tuple = (None, None, None)) -> None:
        if not isinstance(atom, MmaAtom):
            raise CuteTypeError(f"a tiled MMA needs an MmaAtom, got {atom!r}")
        if not isinstance(atom_layout_mnk, Layout) or len(atom_layout_mnk) > 3:
            raise CuteValueError(f"atom_layout_mnk must be a layout of rank <= 3 (M, N, K), got {atom_layout_mnk!r}")
        lay = append(atom_layout_mnk, Layout(1, 0), up_to_rank=3)
        perm = tuple(permutation_mnk) + (None,) * (3 - len(permutation_mnk))
        if len(perm) != 3:
            raise CuteValueError(f"permutation_mnk has one entry per mode (M, N, K), got {len(permutation_mnk)}")
        perm = tuple(_perm(p, i) for i, p in enumerate(perm))
        vmnk = tiled_product(atom.thr_id, lay)
        object.__setattr__(self, "atom", atom)
        object.__setattr__(self, "atom_layout_mnk", lay)
        object.__setattr__(self, "permutation", perm)
        object.__setattr__(self, "thr_layout_vmnk", vmnk)
        for i in range(3):
            t, base = self.tile_size(i), atom.shape_mnk[i]
            if type(t) is int and t % base:
                raise CuteValueError(f"permutation_mnk[{i}] covers {t} elements, not a multiple of the atom's "
                                     f"{'MNK'[i]} = {base}")

    def __setattr__(self, name, value):
        raise AttributeError("TiledMma is immutable")

    # -- sizes ----------------------------------------------------------------------------------------
    @property
    def op(self) -> MmaOp:
        """The atom's operation."""
        return self.atom.op

    @property
    def size(self) -> int:
        """Number of threads."""
        return _size(self.thr_layout_vmnk)

    @property
    def thr_id(self) -> Layout:
        """The atom's threads."""
        return self.atom.thr_id

    @property
    def shape_mnk(self) -> tuple[int, int, int]:
        """(M, N, K) covered by the tiled MMA (the sizes of the permutations)."""
        return tuple(self.tile_size(i) for i in range(3))

    def permutation_mnk(self, i: int) -> Layout:
        """The permutation of mode ``i`` (M, N or K): ``atom size * threads in that mode`` when none was given."""
        p = self.permutation[i]
        if p is None:
            return Layout(self.atom.shape_mnk[i] * _size(self.thr_layout_vmnk, i + 1))
        return p

    def tile_size(self, i: int) -> int:
        """Elements of mode ``i`` (M, N, K) covered by one tile of this MMA."""
        return _size(self.permutation_mnk(i))

    get_tile_size = tile_size

    def set(self, field: Any, value: Any) -> None:
        """Set a field of the atom's op (``warpgroup.Field.ACCUMULATE``); see :meth:`MmaAtom.set`."""
        self.atom.set(field, value)

    def get(self, field: Any) -> Any:
        """A field of the atom's op; see :meth:`MmaAtom.get`."""
        return self.atom.get(field)

    # -- thread-fragment layouts ---------------------------------------------------------------------
    def _thrfrg(self, layout, im, ik, atom_tv, what):
        _check_tile(layout, (self.tile_size(im), self.tile_size(ik)), what)
        t = logical_divide(layout, (self.permutation_mnk(im), self.permutation_mnk(ik)))
        a = zipped_divide(t, (Layout(self.atom.shape_mnk[im]), Layout(self.atom.shape_mnk[ik])))
        tv = composition(a, (atom_tv, None))
        thr = (None, (Layout(_size(self.thr_layout_vmnk, im + 1)), Layout(_size(self.thr_layout_vmnk, ik + 1))))
        return zipped_divide(tv, thr)

    def thrfrg_A(self, layout: Layout) -> Layout:
        """``(M, K, ...) -> ((ThrV, (ThrM, ThrK)), (FrgV, (RestM, RestK, ...)))``."""
        return self._thrfrg(layout, 0, 2, self.atom.tv_layout_A, "A (M, K)")

    def thrfrg_B(self, layout: Layout) -> Layout:
        """``(N, K, ...) -> ((ThrV, (ThrN, ThrK)), (FrgV, (RestN, RestK, ...)))``."""
        return self._thrfrg(layout, 1, 2, self.atom.tv_layout_B, "B (N, K)")

    def thrfrg_C(self, layout: Layout) -> Layout:
        """``(M, N, ...) -> ((ThrV, (ThrM, ThrN)), (FrgV, (RestM, RestN, ...)))``."""
        return self._thrfrg(layout, 0, 1, self.atom.tv_layout_C, "C (M, N)")

    def _thridx_to_thrid(self):
        v = self.thr_layout_vmnk
        n = _size(v)
        return composition(Layout((n, 1), (1, 0)), right_inverse(Layout((v.shape, complement(v).shape),
                                                                         (v.stride, complement(v).stride))))

    def _tv(self, im, ik, keep):
        ref = Layout((self.tile_size(im), self.tile_size(ik)))
        frg = {0: self.thrfrg_A, 1: self.thrfrg_B, 2: self.thrfrg_C}[keep](ref)
        v = self.thr_layout_vmnk
        if keep != 2:  # (ThrV, (ThrM, ThrK)) or (ThrV, (ThrN, ThrK)) -> (ThrV, (ThrM, ThrN, ThrK))
            sm, sn = _size(v, 1), _size(v, 2)
            mn = Layout((sm, sn), (1, 0) if keep == 0 else (0, 1))
            frg = composition(frg, ((None, (mn, None)), None))
        return composition(frg, (self._thridx_to_thrid(), None))

    @property
    def tv_layout_A_tiled(self) -> Layout:
        """(thread index, value) -> (m, k) index of the tiled MMA's (M, K) tile (CuTe's ``get_layoutA_TV``)."""
        return self._tv(0, 2, 0)

    @property
    def tv_layout_B_tiled(self) -> Layout:
        """(thread index, value) -> (n, k) index of the tiled MMA's (N, K) tile."""
        return self._tv(1, 2, 1)

    @property
    def tv_layout_C_tiled(self) -> Layout:
        """(thread index, value) -> (m, n) index of the tiled MMA's (M, N) tile."""
        return self._tv(0, 1, 2)

    @property
    def tv_layout_A(self) -> Layout:
        """The atom's A layout (the DSL's ``TiledMma.tv_layout_A``, inherited from its ``MmaAtom``); the tiled
        MMA's is :attr:`tv_layout_A_tiled`."""
        return self.atom.tv_layout_A

    @property
    def tv_layout_B(self) -> Layout:
        """The atom's B layout (see :attr:`tv_layout_A`)."""
        return self.atom.tv_layout_B

    @property
    def tv_layout_C(self) -> Layout:
        """The atom's C layout (see :attr:`tv_layout_A`)."""
        return self.atom.tv_layout_C

    get_layoutA_TV = tv_layout_A_tiled
    get_layoutB_TV = tv_layout_B_tiled
    get_layoutC_TV = tv_layout_C_tiled

    # -- fragments ----------------------------------------------------------------------------------
    def make_fragment_A(self, tensor: Tensor | Layout) -> Tensor:
        """The A fragment of a thread's partition ``(V, M, K, ...)``."""
        return self.atom.make_fragment_A(tensor)

    def make_fragment_B(self, tensor: Tensor | Layout) -> Tensor:
        """The B fragment of a thread's partition ``(V, N, K, ...)``."""
        return self.atom.make_fragment_B(tensor)

    def make_fragment_C(self, tensor: Tensor | Layout) -> Tensor:
        """The accumulator fragment of a thread's partition ``(V, M, N, ...)``."""
        return self.atom.make_fragment_C(tensor)

    def get_slice(self, thr_idx: Int) -> ThrMma:
        """The :class:`~cute_py.mma_thread.ThrMma` of thread ``thr_idx``."""
        return ThrMma(self, thr_idx)

    get_thread_slice = get_slice

    def partition_shape_A(self, shape_mk: tuple) -> tuple:
        """The shape of a thread's A partition of an ``(M, K, ...)`` tile."""
        return self.get_slice(0).partition_A(Layout(shape_mk)).shape

    def partition_shape_B(self, shape_nk: tuple) -> tuple:
        """The shape of a thread's B partition of an ``(N, K, ...)`` tile."""
        return self.get_slice(0).partition_B(Layout(shape_nk)).shape

    def partition_shape_C(self, shape_mn: tuple) -> tuple:
        """The shape of a thread's C partition of an ``(M, N, ...)`` tile."""
        return self.get_slice(0).partition_C(Layout(shape_mn)).shape

    def __repr__(self):
        return (f"TiledMma(thr_layout_vmnk={self.thr_layout_vmnk}, permutation_mnk="
                f"{tuple(self.permutation_mnk(i) for i in range(3))}, atom={self.atom!r})")


def _check_tile(layout, tile, what):
    from .core.int_tuple import is_static

    if len(layout) < 2:
        raise CuteValueError(f"the MMA operand {what} needs a tensor of rank >= 2, got {layout}")
    for i in range(2):
        s = product(_mode(layout, i).shape)
        if is_static(s) and s % tile[i]:
            raise CuteValueError(f"the tiled MMA's {what} tile {fmt(tile)} does not divide mode {i} of {layout} "
                                 f"({s} elements)")


def make_tiled_mma(op_or_atom: MmaOp | MmaAtom, atom_layout_mnk: Layout | tuple = (1, 1, 1),
                   permutation_mnk: tuple | None = None) -> TiledMma:
    """A tiled MMA of ``op_or_atom`` over the thread grid ``atom_layout_mnk`` (a layout or a shape, made
    column-major), its M/N/K modes reordered by ``permutation_mnk`` (each ``None``, an int ``n`` -- the
    identity on ``n`` elements, extending the tile -- or a layout)."""
    atom = op_or_atom if isinstance(op_or_atom, MmaAtom) else make_mma_atom(op_or_atom)
    if not isinstance(atom_layout_mnk, Layout):
        if not isinstance(atom_layout_mnk, (tuple, list)) or not all(type(x) is int and x > 0 for x in atom_layout_mnk):
            raise CuteValueError(f"atom_layout_mnk must be a layout or a tuple of positive ints, got {atom_layout_mnk!r}")
        atom_layout_mnk = Layout(tuple(atom_layout_mnk))
    return TiledMma(atom, atom_layout_mnk, tuple(permutation_mnk) if permutation_mnk is not None else ())
