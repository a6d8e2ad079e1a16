"""``cute_py.utils.hopper_helpers`` (the CuTe DSL's ``cutlass.utils.hopper_helpers``, imported as
``sm90_utils``): the shared-memory layouts of a Hopper GEMM's operands and epilogue, and its epilogue tile.

Each layout is CuTe C++'s: the operand's GMMA atom (``GMMA::Layout_{MN,K}_{INTER,SW32,SW64,SW128}_Atom<T>``)
chosen as ``ss_smem_selector`` chooses it -- the widest swizzle whose row (16, 32, 64 or 128 bytes) divides the
tile's contiguous extent -- tiled over ``(tile, tile, stages)`` by ``tile_to_shape`` in the order of the
collective (the contiguous mode's repeats first, the stage last).

**Swizzle units.**  The result is the byte-swizzled atom of :func:`cute_py.make_smem_layout_atom`, marked as
C++ marks it: ``S<3,4,3> o smem_ptr[16b](unset) o ((8,16),(64,1),(1,4)):((64,512),(1,0),(0,8192))`` for a
K-major fp16 A of ``(128, *, 64)`` in 4 stages.  The CuTe DSL returns the same outer layout composed with the
same swizzle behind an offset ``0`` (``S<3,4,3> o 0 o ...``) and reads that swizzle in bytes at shared-memory
pointers and TMA; both address the same bytes.  The difference shows only where the DSL reads its unflagged
form in elements (``recast_layout``, ``crd2idx``, ``make_tensor`` over a non-pointer): cute_py's flagged form
refuses bare evaluation instead (``as_position_independent_swizzle_layout`` gives the element function).

``make_trivial_tiled_mma`` builds the warpgroup MMA a GEMM of the given types and majors uses.  Not here yet:
``get_smem_store_op`` / ``sm90_get_smem_store_op``.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.composed import ComposedLayout
from ..core.tiling import tile_to_shape
from ..errors import CuteTypeError, CuteValueError
from ..nvgpu.warpgroup.smem import SmemLayoutAtomKind, element_bits, make_smem_layout_atom
from ..tensor.dtypes import DType
from .layout import LayoutEnum, OperandMajorMode

__all__ = ["get_smem_layout_atom", "make_smem_layout_a", "make_smem_layout_b", "make_smem_layout_epi",
           "compute_tile_shape_or_override", "make_trivial_tiled_mma", "get_smem_store_op"]

# (row bits of the atom, K-major kind, MN-major kind), widest first: ss_smem_selector's order
_ATOMS = ((1024, SmemLayoutAtomKind.K_SW128, SmemLayoutAtomKind.MN_SW128),
          (512, SmemLayoutAtomKind.K_SW64, SmemLayoutAtomKind.MN_SW64),
          (256, SmemLayoutAtomKind.K_SW32, SmemLayoutAtomKind.MN_SW32),
          (128, SmemLayoutAtomKind.K_INTER, SmemLayoutAtomKind.MN_INTER))


def _check_layout(layout: Any, who: str, what: str) -> None:
    if not isinstance(layout, LayoutEnum):
        raise CuteTypeError(f"{who}: {what} must be a cute_py.utils.LayoutEnum, got {layout!r}")


def _positive(value: Any, who: str, what: str) -> int:
    if type(value) is not int or value <= 0:
        raise CuteValueError(f"{who}: {what} must be a positive static int, got {value!r}")
    return value


def _extent(mode: Any, who: str, what: str) -> Any:
    """A tile mode: a positive int or a tuple of them (a hierarchical mode)."""
    if type(mode) is int:
        _positive(mode, who, what)
    elif isinstance(mode, tuple) and mode:
        for m in mode:
            _extent(m, who, what)
    else:
        raise CuteValueError(f"{who}: {what} must be a positive static int or a tuple of them, got {mode!r}")
    return mode


def _first_extent(mode: Any) -> int:
    """``size<0>`` of a tile mode, as ss_smem_selector reads it: the int itself, or its first sub-mode's size."""
    while isinstance(mode, tuple):
        mode = mode[0]
    return mode


def _size(mode: Any) -> int:
    return math.prod(_size(m) for m in mode) if isinstance(mode, tuple) else mode


def get_smem_layout_atom(layout: LayoutEnum, element_type: DType, major_mode_size: int) -> SmemLayoutAtomKind:
    """The GMMA shared-memory atom kind for an operand of ``element_type`` whose contiguous mode has
    ``major_mode_size`` elements per tile: K-major atoms for ``ROW_MAJOR``, MN-major for ``COL_MAJOR``, with the
    widest swizzle (128, 64 or 32 bytes, else the 16-byte interleave) whose row divides the mode.

    @pre major_mode_size % 8 == 0 and major_mode_size * width is a multiple of 128 bits (one 16-byte row);
         CuTe C++'s ``ss_smem_selector`` static_asserts the same (the DSL returns the interleave atom anyway,
         which then cannot tile the mode)
    """
    who = "get_smem_layout_atom"
    _check_layout(layout, who, "layout")
    bits = element_bits(element_type)
    if bits > 128 or 128 % bits:
        raise CuteValueError(f"{who}: GMMA shared-memory atoms hold elements whose width divides 128 bits, got "
                             f"{bits} bits")
    size = _positive(major_mode_size, who, "major_mode_size")
    if size % 8:
        raise CuteValueError(f"{who}: major_mode_size must be a multiple of 8, got {size}")
    k_major = layout.sm90_mma_major_mode() is OperandMajorMode.K
    for row_bits, k_kind, mn_kind in _ATOMS:
        if size * bits % row_bits == 0:
            return k_kind if k_major else mn_kind
    raise CuteValueError(f"{who}: {size} elements of {bits} bits ({size * bits} bits) are not a whole number of "
                         f"16-byte rows, which every GMMA shared-memory atom needs (the interleave atom's row is "
                         f"{128 // bits} elements)")


def _staged(who: str, layout: LayoutEnum, dtype: DType, shape: tuple, major: int, stages: int) -> ComposedLayout:
    """The atom for ``layout`` tiled to ``(*shape, stages)``; ``major`` is the contiguous mode (0 or 1)."""
    _positive(stages, who, "num_stages")
    kind = get_smem_layout_atom(layout, dtype, _first_extent(shape[major]))
    atom = make_smem_layout_atom(kind, dtype)
    order = (0, 1, 2) if major == 1 else (1, 0, 2)  # the contiguous mode's repeats first (C++'s Step<_2,_1,_3>)
    return tile_to_shape(atom, (*shape, stages), order)


def _tiler_mnk(tiler: Any, who: str) -> tuple:
    if isinstance(tiler, list):
        tiler = tuple(tiler)
    if not isinstance(tiler, tuple) or len(tiler) != 3:
        raise CuteValueError(f"{who}: mma_tiler_mnk must be an (M, N, K) tuple, got {tiler!r}")
    return tuple(_extent(m, who, f"mode {i} of mma_tiler_mnk") for i, m in enumerate(tiler))


def make_smem_layout_a(a_layout: LayoutEnum, mma_tiler_mnk: tuple, a_dtype: DType,
                       num_stages: int) -> ComposedLayout:
    """The staged shared-memory layout of operand A: ``(M, K, num_stages)`` of the ``(M, N, K)`` tiler, in the
    GMMA atom that :func:`get_smem_layout_atom` picks for A's contiguous mode (K when ``a_layout`` is
    ``ROW_MAJOR``, M otherwise), tiled with the contiguous mode's repeats first.

    @post shape(result) is compatible with (M, K, num_stages); the result is CuTe C++'s
          ``tile_to_shape(ss_smem_selector<major, T, M, K>(), (M, K, stages), Step<...>)``
    """
    who = "make_smem_layout_a"
    _check_layout(a_layout, who, "a_layout")
    m, _, k = _tiler_mnk(mma_tiler_mnk, who)
    return _staged(who, a_layout, a_dtype, (m, k), 1 if a_layout.is_k_major_a() else 0, num_stages)


def make_smem_layout_b(b_layout: LayoutEnum, mma_tiler_mnk: tuple, b_dtype: DType,
                       num_stages: int) -> ComposedLayout:
    """The staged shared-memory layout of operand B: ``(N, K, num_stages)`` of the ``(M, N, K)`` tiler, in the
    GMMA atom for B's contiguous mode (K when ``b_layout`` is ``ROW_MAJOR``, N otherwise).

    @post shape(result) is compatible with (N, K, num_stages); the result is CuTe C++'s
          ``tile_to_shape(ss_smem_selector<major, T, N, K>(), (N, K, stages), Step<...>)``
    """
    who = "make_smem_layout_b"
    _check_layout(b_layout, who, "b_layout")
    _, n, k = _tiler_mnk(mma_tiler_mnk, who)
    return _staged(who, b_layout, b_dtype, (n, k), 1 if b_layout.is_k_major_b() else 0, num_stages)


def make_smem_layout_epi(epi_dtype: DType, epi_layout: LayoutEnum, epi_tile: tuple, epi_stage: int,
                         smem_trg_shape: tuple | None = None,
                         smem_order: tuple | None = None) -> ComposedLayout:
    """The staged shared-memory layout of the epilogue (C/D) tile: ``(EPI_M, EPI_N, epi_stage)`` in the GMMA
    atom for the contiguous mode (N when ``epi_layout`` is ``ROW_MAJOR``, M otherwise), as C++'s
    ``sm90_get_epilogue_smem_swizzle_layout_atom`` picks it.  ``smem_trg_shape`` replaces the target shape and
    ``smem_order`` the tiling order (0-based, as ``tile_to_shape`` takes it).
    """
    who = "make_smem_layout_epi"
    _check_layout(epi_layout, who, "epi_layout")
    if isinstance(epi_tile, list):
        epi_tile = tuple(epi_tile)
    if not isinstance(epi_tile, tuple) or len(epi_tile) != 2:
        raise CuteValueError(f"{who}: epi_tile must be an (M, N) tuple, got {epi_tile!r}")
    epi_tile = tuple(_extent(m, who, f"mode {i} of epi_tile") for i, m in enumerate(epi_tile))
    major = 1 if epi_layout.is_n_major_c() else 0
    kind = get_smem_layout_atom(epi_layout, epi_dtype, _first_extent(epi_tile[major]))
    atom = make_smem_layout_atom(kind, epi_dtype)
    if smem_trg_shape is None:
        trg_shape = (*epi_tile, _positive(epi_stage, who, "epi_stage"))
    else:
        trg_shape = smem_trg_shape
    if smem_order is None:
        smem_order = (1, 0, 2) if epi_layout.is_m_major_c() else (0, 1, 2)
    return tile_to_shape(atom, trg_shape, smem_order)


def compute_tile_shape_or_override(tile_shape_mnk: tuple, element_type: DType, is_cooperative: bool = False,
                                   epi_tile_override: tuple | None = None) -> tuple:
    """The epilogue tile ``(EPI_M, EPI_N)`` of a CTA tile ``(M, N, K)``, or ``epi_tile_override`` when given.

    As CuTe C++'s ``sm90_compute_tile_shape_or_override`` with ``EpilogueTileAuto``: cooperative kernels take
    ``(min(128, M), gcd(min(32, N), N))``; others ``(min(64, M), gcd(min(n, N), N))`` with ``n = 64`` for 8-bit
    outputs when 64 divides N and 32 otherwise.  The DSL's version drops the ``gcd`` and the ``N % 64`` test, so
    for an N that 32 (or 64) does not divide it returns an EPI_N that does not tile N (``(64, 32)`` for N = 48,
    where C++ and cute_py give ``(64, 16)``); where it divides, the two agree.
    """
    if epi_tile_override is not None:
        return epi_tile_override
    who = "compute_tile_shape_or_override"
    if isinstance(tile_shape_mnk, list):
        tile_shape_mnk = tuple(tile_shape_mnk)
    if not isinstance(tile_shape_mnk, tuple) or len(tile_shape_mnk) != 3:
        raise CuteValueError(f"{who}: tile_shape_mnk must be an (M, N, K) tuple, got {tile_shape_mnk!r}")
    m, n = (_size(_extent(x, who, f"mode {i} of tile_shape_mnk")) for i, x in enumerate(tile_shape_mnk[:2]))
    bits = element_bits(element_type)
    if type(is_cooperative) is not bool:
        raise CuteTypeError(f"{who}: is_cooperative must be a bool, got {is_cooperative!r}")
    if is_cooperative:
        return (min(128, m), math.gcd(min(32, n), n))
    n_perf = 64 if bits == 8 and n % 64 == 0 else 32
    return (min(64, m), math.gcd(min(n_perf, n), n))


def make_trivial_tiled_mma(a_dtype: DType, b_dtype: DType, a_leading_mode: Any, b_leading_mode: Any,
                           acc_dtype: DType, atom_layout_mnk: tuple, tiler_mn: tuple,
                           a_source: Any = None) -> Any:
    """The tiled warpgroup MMA ``make_tiled_mma(MmaF16BF16Op(a_dtype, acc_dtype, (*tiler_mn, 16), a_source,
    a_leading_mode, b_leading_mode), atom_layout_mnk)`` -- for 8-bit floats ``MmaF8Op(a_dtype, b_dtype,
    acc_dtype, (*tiler_mn, 32), ...)`` --: one instruction of ``tiler_mn`` = ``(64, N)`` per warpgroup, the
    warpgroups laid out by ``atom_layout_mnk``.

    @pre a_dtype is b_dtype, Float16 or BFloat16; or each of them Float8E4M3FN or Float8E5M2 (``CuteTypeError``
         otherwise); the op's rules (``WgmmaShapeError``): tiler_mn[0] == 64, tiler_mn[1] a multiple of 8 in
         8..256, 8-bit operands K-major
    """
    from ..mma import make_tiled_mma
    from ..nvgpu.warpgroup.operands import OperandSource
    from ..nvgpu.warpgroup.ops import MmaF8Op, MmaF16BF16Op
    from ..tensor.dtypes import BFloat16, Float8E4M3FN, Float8E5M2, Float16, dtype_of

    who = "make_trivial_tiled_mma"
    a, b = dtype_of(a_dtype), dtype_of(b_dtype)
    f8 = (Float8E4M3FN, Float8E5M2)
    if a not in (Float16, BFloat16, *f8):
        raise CuteTypeError(f"{who}: a warpgroup MMA of {a.name} inputs is not available (Float16, BFloat16, "
                            f"Float8E4M3FN and Float8E5M2 are)")
    if (a is not b) and not (a in f8 and b in f8):
        raise CuteTypeError(f"{who}: A and B have one element type (or two 8-bit floats), got {a.name} and "
                            f"{b.name}")
    if isinstance(tiler_mn, list):
        tiler_mn = tuple(tiler_mn)
    if not isinstance(tiler_mn, tuple) or len(tiler_mn) != 2:
        raise CuteValueError(f"{who}: tiler_mn must be an (M, N) tuple, got {tiler_mn!r}")
    src = OperandSource.SMEM if a_source is None else a_source
    if a in f8:
        op = MmaF8Op(a, b, acc_dtype, (*tiler_mn, 32), src, a_leading_mode, b_leading_mode)
    else:
        op = MmaF16BF16Op(a, acc_dtype, (*tiler_mn, 16), src, a_leading_mode, b_leading_mode)
    return make_tiled_mma(op, tuple(atom_layout_mnk))


def get_smem_store_op(layout_d: LayoutEnum, elem_ty_d: DType, elem_ty_acc: DType) -> Any:
    """The copy atom an epilogue stores its accumulators to shared memory with: ``stmatrix`` (4 matrices,
    transposed for an M-major output) for 16-bit outputs, else the universal copy, as the DSL's
    ``sm90_get_smem_store_op``.

    @pre layout_d is a LayoutEnum; elem_ty_d and elem_ty_acc are element types (``CuteTypeError`` otherwise)
    """
    from ..atom import CopyUniversalOp, make_copy_atom
    from ..nvgpu.warp.ops import StMatrix8x8x16bOp
    from ..tensor.dtypes import dtype_of

    if not isinstance(layout_d, LayoutEnum):
        raise CuteTypeError(f"get_smem_store_op: layout_d must be a LayoutEnum, got {layout_d!r}")
    d = dtype_of(elem_ty_d)
    dtype_of(elem_ty_acc)
    if d.width == 16:
        return make_copy_atom(StMatrix8x8x16bOp(layout_d.is_m_major_c(), 4), d)
    return make_copy_atom(CopyUniversalOp(), d)


# the names the DSL's cutlass.utils gives these helpers
sm90_get_smem_store_op = get_smem_store_op
sm90_get_smem_layout_atom = get_smem_layout_atom
sm90_make_smem_layout_a = make_smem_layout_a
sm90_make_smem_layout_b = make_smem_layout_b
sm90_make_smem_layout_epi = make_smem_layout_epi
