"""``cute_py.utils.LayoutEnum`` and the sm90 shared-memory layout helpers of ``cute_py.utils.hopper_helpers``.

The expected layouts are derived by hand from CuTe C++ (not from cute_py): the GMMA atoms of
include/cute/atom/mma_traits_sm90_gmma.hpp (``Layout_K_SW128_Atom_Bits = Sw<3,4,3> o smem_ptr_flag o
(8,1024):(1024,1)`` in bits, upcast to the element width), the atom choice of ``ss_smem_selector``
(include/cutlass/gemm/collective/builders/sm90_common.inl: the widest swizzle whose row divides the contiguous
extent), and the staging of the collectives (``tile_to_shape(atom, (MN, K, stages), Step<_2,_1,_3>)`` for
MN-major, ``Step<_1,_2,_3>`` for K-major; C++ prints a static size-1 mode with stride 0).  Each expected
string is the C++ print of the layout.

Swizzle units: the CuTe DSL returns the same outer layouts composed as ``S<B,4,3> o 0 o L`` and reads that
swizzle on byte addresses at shared memory; ``test_same_bytes_as_the_dsl_form`` checks, coordinate by
coordinate, that cute_py's flagged results address those same bytes (against a swizzle written out here).
"""

import pytest

import cute_py as cute
import cute_py.utils as utils
from cute_py.errors import CuteError, CuteTypeError, CuteValueError
from cute_py.nvgpu import cpasync
from cute_py.runtime import make_fake_tensor
from cute_py.testing import RuntimeInt
from cute_py.utils import hopper_helpers as sm90_utils
from cute_py.utils.layout import LayoutEnum, OperandMajorMode

K = cute.SmemLayoutAtomKind
ROW, COL = LayoutEnum.ROW_MAJOR, LayoutEnum.COL_MAJOR


# -- LayoutEnum -----------------------------------------------------------------------------------------------

def test_layout_enum_members_and_majorness():
    assert [m.name for m in LayoutEnum] == ["ROW_MAJOR", "COL_MAJOR"]
    assert (ROW.value, COL.value) == ("row_major", "col_major")
    #                 k_a    m_a    n_b    k_b    n_c    m_c    mma major
    table = {ROW: (True, False, False, True, True, False, OperandMajorMode.K),
             COL: (False, True, True, False, False, True, OperandMajorMode.MN)}
    for e, want in table.items():
        got = (e.is_k_major_a(), e.is_m_major_a(), e.is_n_major_b(), e.is_k_major_b(), e.is_n_major_c(),
               e.is_m_major_c(), e.mma_major_mode())
        assert got == want, e
        assert e.sm90_mma_major_mode() is want[-1]


@pytest.mark.parametrize("shape, stride, want", [
    ((512, 256, 3), (256, 1, 131072), ROW),          # A (M, K, L) K-major: mode 1 contiguous
    ((512, 256, 3), (1, 512, 131072), COL),          # M-major
    ((512, 256), (256, 1), ROW),                     # no batch mode
    ((512, 256), (1, 512), COL),
    ((1, 256, 1), (256, 1, 256), ROW),               # a size-1 mode of stride 1 does not count...
    ((256, 1, 4), (1, 1, 256), COL),
    ((1, 256), (1, 1), ROW),                         # ...so the first mode with extent > 1 wins
    (((4, 8), 64), ((64, 256), 1), ROW),             # nested modes: any leaf of stride 1
    (((4, 8), 64), ((1, 4), 32), COL),
    ((64, (2, 32)), (64, (32, 1)), ROW),
])
def test_from_tensor(shape, stride, want):
    assert LayoutEnum.from_tensor(cute.Layout(shape, stride)) is want
    if all(type(s) is int for s in shape):
        assert LayoutEnum.from_tensor(make_fake_tensor(cute.Float16, shape, stride=stride)) is want


def test_from_tensor_skips_dynamic_strides():
    # a run-time stride is not known to be 1: the first static stride 1 decides
    assert LayoutEnum.from_tensor(cute.Layout((64, 32), (RuntimeInt(1), 1))) is ROW


@pytest.mark.parametrize("tensor", [
    cute.Layout((64, 32, 4), (2048, 64, 1)),         # only the batch mode is contiguous
    cute.Layout((64, 32), (64, 2)),                  # nothing is
    cute.Layout((64, 1), (2, 1)),                    # stride 1 only on a size-1 mode
])
def test_from_tensor_rejects_operands_without_majorness(tensor):
    with pytest.raises(CuteValueError, match="leading mode"):
        LayoutEnum.from_tensor(tensor)


@pytest.mark.parametrize("bad", [None, 3, "row_major", (64, 32)])
def test_from_tensor_rejects_non_tensors(bad):
    with pytest.raises(CuteTypeError):
        LayoutEnum.from_tensor(bad)


# -- the atom choice: ss_smem_selector ---------------------------------------------------------------------------

# (dtype, contiguous extent) -> the swizzle of the widest GMMA atom whose row divides it; rows are 128/256/512/1024
# bits for INTER/SW32/SW64/SW128, so for 16-bit types 8/16/32/64 elements, 8-bit 16/32/64/128, 32-bit 4/8/16/32
SELECT = [
    (cute.Float16, 64, "SW128"), (cute.Float16, 128, "SW128"), (cute.Float16, 32, "SW64"),
    (cute.Float16, 96, "SW64"), (cute.Float16, 16, "SW32"), (cute.Float16, 48, "SW32"),
    (cute.Float16, 8, "INTER"), (cute.Float16, 24, "INTER"), (cute.Float16, 40, "INTER"),
    (cute.BFloat16, 192, "SW128"),
    (cute.Float8E4M3FN, 128, "SW128"), (cute.Float8E4M3FN, 64, "SW64"), (cute.Float8E5M2, 32, "SW32"),
    (cute.Float8E5M2, 16, "INTER"), (cute.Int8, 256, "SW128"), (cute.Uint8, 48, "INTER"),
    (cute.TFloat32, 32, "SW128"), (cute.Float32, 16, "SW64"), (cute.Float32, 8, "SW32"), (cute.Float32, 24, "SW32"),
]


@pytest.mark.parametrize("dtype, size, swizzle", SELECT)
def test_get_smem_layout_atom(dtype, size, swizzle):
    assert sm90_utils.get_smem_layout_atom(ROW, dtype, size) is K[f"K_{swizzle}"]
    assert sm90_utils.get_smem_layout_atom(COL, dtype, size) is K[f"MN_{swizzle}"]


@pytest.mark.parametrize("dtype, size", [
    (cute.Float16, 12),        # not a multiple of 8
    (cute.Float8E4M3FN, 8),    # 64 bits: not one 16-byte row (C++ static_asserts; the DSL's INTER cannot tile it)
    (cute.Float8E4M3FN, 24),
    (cute.Float16, 0), (cute.Float16, -64), (cute.Float16, 64.0), (cute.Float16, True),
])
def test_get_smem_layout_atom_rejects(dtype, size):
    with pytest.raises(CuteValueError):
        sm90_utils.get_smem_layout_atom(ROW, dtype, size)


# -- the staged layouts -----------------------------------------------------------------------------------------

# (helper, layout enum, tiler / tile, dtype, stages) -> C++'s print of the staged layout, derived by hand:
# atom rows x repeats, the contiguous mode's repeats first, then the stages
GOLDEN = [
    # A K-major fp16, K = 64 -> K_SW128 (8,64):(64,1), 512 elements; (128, 64, 4): 16 x 1 x 4 atoms
    ("a", ROW, (128, 128, 64), cute.Float16, 4,
     "S<3,4,3> o smem_ptr[16b](unset) o ((8,16),(64,1),(1,4)):((64,512),(1,0),(0,8192))"),
    # A M-major bf16, M = 128 -> MN_SW128 (64,8):(1,64); (128, 64, 3): K repeats (8) first, then M (2)
    ("a", COL, (128, 256, 64), cute.BFloat16, 3,
     "S<3,4,3> o smem_ptr[16b](unset) o ((64,2),(8,8),(1,3)):((1,4096),(64,512),(0,8192))"),
    # A K-major fp8, K = 32 (256 bits) -> K_SW32 (8,32):(32,1), 256 elements
    ("a", ROW, (64, 128, 32), cute.Float8E4M3FN, 6,
     "S<1,4,3> o smem_ptr[8b](unset) o ((8,8),(32,1),(1,6)):((32,256),(1,0),(0,2048))"),
    # A K-major tf32, K = 32 (1024 bits) -> K_SW128 (8,32):(32,1)
    ("a", ROW, (128, 64, 32), cute.TFloat32, 2,
     "S<3,4,3> o smem_ptr[32b](unset) o ((8,16),(32,1),(1,2)):((32,256),(1,0),(0,4096))"),
    # A K-major fp16, K = 48 (768 bits) -> K_SW32 (8,16):(16,1), 128 elements; 8 x 3 x 2 atoms, M first
    ("a", ROW, (64, 64, 48), cute.Float16, 2,
     "S<1,4,3> o smem_ptr[16b](unset) o ((8,8),(16,3),(1,2)):((16,128),(1,1024),(0,3072))"),
    # A K-major fp16, K = 40 (640 bits) -> K_INTER (8,8):(8,1), one stage
    ("a", ROW, (64, 64, 40), cute.Float16, 1,
     "S<0,4,3> o smem_ptr[16b](unset) o ((8,8),(8,5),(1,1)):((8,64),(1,512),(0,0))"),
    # A M-major fp32, M = 64 (2048 bits) -> MN_SW128 (32,8):(1,32), 256 elements; (64, 32, 2): K first (4), M (2)
    ("a", COL, (64, 64, 32), cute.Float32, 2,
     "S<3,4,3> o smem_ptr[32b](unset) o ((32,2),(8,4),(1,2)):((1,1024),(32,256),(0,2048))"),
    # B N-major fp16, N = 256 -> MN_SW128; (256, 64, 4): K repeats 8, N repeats 4
    ("b", COL, (128, 256, 64), cute.Float16, 4,
     "S<3,4,3> o smem_ptr[16b](unset) o ((64,4),(8,8),(1,4)):((1,4096),(64,512),(0,16384))"),
    # B K-major fp8 e5m2, K = 128 -> K_SW128 (8,128):(128,1), 1024 elements
    ("b", ROW, (128, 128, 128), cute.Float8E5M2, 5,
     "S<3,4,3> o smem_ptr[8b](unset) o ((8,16),(128,1),(1,5)):((128,1024),(1,0),(0,16384))"),
    # B N-major fp16, N = 8 -> MN_INTER (8,8):(1,8), 64 elements
    ("b", COL, (64, 8, 32), cute.Float16, 2,
     "S<0,4,3> o smem_ptr[16b](unset) o ((8,1),(8,4),(1,2)):((1,0),(8,64),(0,256))"),
    # B N-major fp16, N = 32 (512 bits) -> MN_SW64 (32,8):(1,32), 256 elements
    ("b", COL, (64, 32, 64), cute.Float16, 3,
     "S<2,4,3> o smem_ptr[16b](unset) o ((32,1),(8,8),(1,3)):((1,0),(32,256),(0,2048))"),
    # B K-major bf16 with a wide N: K = 64 -> K_SW128; (256, 64, 2)
    ("b", ROW, (128, 256, 64), cute.BFloat16, 2,
     "S<3,4,3> o smem_ptr[16b](unset) o ((8,32),(64,1),(1,2)):((64,512),(1,0),(0,16384))"),
    # A K-major fp16 with a hierarchical K = (32, 4): ss_smem_selector reads size<0>(BLK_K) = 32 (512 bits) ->
    # K_SW64 (8,32):(32,1), 256 elements; the target (64, 128, 2): 8 x 4 x 2 atoms (the DSL would size all of K)
    ("a", ROW, (64, 128, (32, 4)), cute.Float16, 2,
     "S<2,4,3> o smem_ptr[16b](unset) o ((8,8),(32,4),(1,2)):((32,256),(1,2048),(0,8192))"),
    # epilogue, N-major fp16 (64, 32): N = 32 -> K_SW64 (8,32):(32,1)
    ("epi", ROW, (64, 32), cute.Float16, 4,
     "S<2,4,3> o smem_ptr[16b](unset) o ((8,8),(32,1),(1,4)):((32,256),(1,0),(0,2048))"),
    # epilogue, M-major fp32 (128, 32): M = 128 -> MN_SW128 (32,8):(1,32); N repeats (4) first, then M (4)
    ("epi", COL, (128, 32), cute.Float32, 2,
     "S<3,4,3> o smem_ptr[32b](unset) o ((32,4),(8,4),(1,2)):((1,1024),(32,256),(0,4096))"),
    # epilogue, N-major bf16 (64, 64): N = 64 -> K_SW128
    ("epi", ROW, (64, 64), cute.BFloat16, 2,
     "S<3,4,3> o smem_ptr[16b](unset) o ((8,8),(64,1),(1,2)):((64,512),(1,0),(0,4096))"),
]


def _make(which, layout, tile, dtype, stages):
    if which == "a":
        return sm90_utils.make_smem_layout_a(layout, tile, dtype, stages)
    if which == "b":
        return sm90_utils.make_smem_layout_b(layout, tile, dtype, stages)
    return sm90_utils.make_smem_layout_epi(dtype, layout, tile, stages)


@pytest.mark.parametrize("which, layout, tile, dtype, stages, want", GOLDEN)
def test_golden_staged_layouts(which, layout, tile, dtype, stages, want):
    got = _make(which, layout, tile, dtype, stages)
    assert str(got) == want
    assert cute.is_byte_swizzled(got)


def test_epilogue_overrides():
    # smem_trg_shape replaces (EPI_M, EPI_N, stages); smem_order the tiling order (0-based)
    got = sm90_utils.make_smem_layout_epi(cute.Float16, ROW, (64, 32), 9, smem_trg_shape=(64, 64, 2))
    assert str(got) == "S<2,4,3> o smem_ptr[16b](unset) o ((8,8),(32,2),(1,2)):((32,256),(1,2048),(0,4096))"
    got = sm90_utils.make_smem_layout_epi(cute.Float16, ROW, (64, 32), 9, smem_trg_shape=(64, 64, 2),
                                          smem_order=(1, 0, 2))
    assert str(got) == "S<2,4,3> o smem_ptr[16b](unset) o ((8,8),(32,2),(1,2)):((32,512),(1,256),(0,4096))"


def _byte_swizzle(b, addr):
    """Sw<b,4,3> on a byte address, written out: bits 7.. 7+b-1 are XORed into bits 4.. 4+b-1."""
    return addr ^ ((addr & (((1 << b) - 1) << 7)) >> 3)


def _flat_outer(text):
    """The outer layout and the swizzle bits of a C++ print ``S<b,4,3> o smem_ptr[..](unset) o L``."""
    head, _, outer = text.split(" o ")
    return int(head[2]), cute.parse_layout(outer)


@pytest.mark.parametrize("which, layout, tile, dtype, stages, want", GOLDEN)
def test_same_bytes_as_the_dsl_form(which, layout, tile, dtype, stages, want):
    """The DSL returns ``S<b,4,3> o 0 o L`` (the same L) and swizzles byte addresses with it at shared memory:
    every coordinate of cute_py's result addresses the same byte, through the element function
    (``as_position_independent_swizzle_layout``), through a shared-memory tensor of the result, and through a
    shared-memory tensor of the DSL's unflagged form."""
    got = _make(which, layout, tile, dtype, stages)
    b, outer = _flat_outer(want)
    nbytes = dtype.width // 8
    ptr = cute.make_ptr(dtype, 0, cute.AddressSpace.smem, assumed_align=1024)
    element_fn = cute.as_position_independent_swizzle_layout(got)
    ours = cute.make_tensor(ptr, got).layout
    dsl_form = cute.make_tensor(ptr, cute.make_composed_layout(cute.Swizzle(b, 4, 3), 0, outer)).layout
    seen = set()
    for i in range(cute.size(outer)):
        byte = _byte_swizzle(b, outer(i) * nbytes)
        assert element_fn(i) * nbytes == byte, i
        assert ours(i) * nbytes == byte, i
        assert dsl_form(i) * nbytes == byte, i
        seen.add(byte)
    assert len(seen) == cute.size(outer)  # every element its own bytes


def test_tma_reads_the_helpers_layout_as_the_dsl_form():
    # one stage of a K-major fp16 A tile: the TMA descriptor is the one of the DSL's unflagged layout
    staged = sm90_utils.make_smem_layout_a(ROW, (128, 128, 64), cute.Float16, 4)
    stage = cute.slice_(staged, (None, None, 0))
    dsl_stage = cute.make_composed_layout(cute.Swizzle(3, 4, 3), 0, stage.outer)
    g = make_fake_tensor(cute.Float16, (512, 256), stride=(256, 1))
    op = cpasync.CopyBulkTensorTileG2SOp()
    ours, _ = cpasync.make_tiled_tma_atom(op, g, stage, (128, 64))
    theirs, _ = cpasync.make_tiled_tma_atom(op, g, dsl_stage, (128, 64))
    assert ours.descriptor.swizzle.name == "B128" and ours.descriptor.box_dims == (64, 128)
    assert ours.descriptor == theirs.descriptor


@pytest.mark.parametrize("call, exc", [
    (lambda: sm90_utils.make_smem_layout_a("row_major", (128, 128, 64), cute.Float16, 4), CuteTypeError),
    (lambda: sm90_utils.make_smem_layout_a(ROW, (128, 128), cute.Float16, 4), CuteValueError),
    (lambda: sm90_utils.make_smem_layout_a(ROW, (128, 128, 64), cute.Float16, 0), CuteValueError),
    (lambda: sm90_utils.make_smem_layout_a(ROW, (128, 128, 64), cute.Float16, 2.0), CuteValueError),
    (lambda: sm90_utils.make_smem_layout_a(ROW, (128, 128, 64), cute.Float16, True), CuteValueError),
    (lambda: sm90_utils.make_smem_layout_a(ROW, (128, 128, 64), "float16", 2), CuteTypeError),
    (lambda: sm90_utils.make_smem_layout_a(ROW, (128, 128, 36), cute.Float16, 2), CuteValueError),  # K % 8
    (lambda: sm90_utils.make_smem_layout_a(ROW, (60, 128, 64), cute.Float16, 2), CuteError),  # 8 rows ∤ 60
    (lambda: sm90_utils.make_smem_layout_a(COL, (64, 128, 60), cute.Float16, 2), CuteError),  # 8 ∤ K = 60
    (lambda: sm90_utils.make_smem_layout_a(ROW, (128, 128, -64), cute.Float16, 2), CuteValueError),
    (lambda: sm90_utils.make_smem_layout_b(ROW, (128, None, 64), cute.Float16, 2), CuteValueError),
    (lambda: sm90_utils.make_smem_layout_b(ROW, (128, 128, 8), cute.Float8E4M3FN, 2), CuteValueError),
    (lambda: sm90_utils.make_smem_layout_epi(cute.Float16, ROW, (64,), 2), CuteValueError),
    (lambda: sm90_utils.make_smem_layout_epi(cute.Float16, COL, (64, 32), 0), CuteValueError),
    (lambda: sm90_utils.make_smem_layout_epi(cute.Float16, 0, (64, 32), 2), CuteTypeError),
    (lambda: sm90_utils.compute_tile_shape_or_override((128, 128), cute.Float16), CuteValueError),
    (lambda: sm90_utils.compute_tile_shape_or_override((128, 0, 64), cute.Float16), CuteValueError),
    (lambda: sm90_utils.compute_tile_shape_or_override((128, 128, 64), cute.Float16, 1), CuteTypeError),
])
def test_hostile_inputs(call, exc):
    with pytest.raises(exc):
        call()


# -- the epilogue tile: sm90_compute_tile_shape_or_override with EpilogueTileAuto ------------------------------

@pytest.mark.parametrize("tile, dtype, coop, want", [
    ((128, 128, 64), cute.Float16, False, (64, 32)),
    ((128, 128, 64), cute.Float16, True, (128, 32)),
    ((256, 256, 64), cute.Float16, True, (128, 32)),
    ((64, 16, 64), cute.Float16, False, (64, 16)),           # min(32, 16)
    ((32, 256, 64), cute.Float32, False, (32, 32)),
    ((128, 128, 128), cute.Float8E4M3FN, False, (64, 64)),   # 8-bit output, 64 | N
    ((128, 96, 128), cute.Float8E4M3FN, False, (64, 32)),    # 64 does not divide 96: 32
    ((128, 48, 64), cute.Float16, False, (64, 16)),          # gcd(32, 48)
    ((128, 48, 64), cute.Float16, True, (128, 16)),
    ((128, 200, 64), cute.Float16, False, (64, 8)),          # gcd(32, 200)
])
def test_compute_tile_shape_or_override(tile, dtype, coop, want):
    assert sm90_utils.compute_tile_shape_or_override(tile, dtype, is_cooperative=coop) == want


def test_compute_tile_shape_override_is_returned():
    assert sm90_utils.compute_tile_shape_or_override((128, 128, 64), cute.Float16, False, (32, 64)) == (32, 64)


# -- the names of cute_py.utils ---------------------------------------------------------------------------------

def test_utils_names():
    assert utils.LayoutEnum is LayoutEnum
    assert utils.compute_tile_shape_or_override is sm90_utils.compute_tile_shape_or_override
    assert utils.sm90_get_smem_layout_atom is sm90_utils.get_smem_layout_atom
    assert utils.sm90_make_smem_layout_a is sm90_utils.make_smem_layout_a
    assert utils.sm90_make_smem_layout_b is sm90_utils.make_smem_layout_b
    assert utils.sm90_make_smem_layout_epi is sm90_utils.make_smem_layout_epi
    for name in ("LayoutEnum", "sm90_make_smem_layout_a", "compute_tile_shape_or_override"):
        assert name in dir(utils)


def test_an_element_width_no_atom_holds_is_told_in_the_atoms_terms():
    from cute_py.nvgpu.warpgroup.smem import make_smem_layout_atom
    from cute_py.utils import LayoutEnum
    from cute_py.utils import hopper_helpers as h

    with pytest.raises(cute.CuteValueError, match=r"16-byte rows hold elements whose width divides 128 bits "
                                                  r"\(1, 2, 4, 8, 16, 32, 64 or 128\), got 13 bits"):
        make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 13)
    with pytest.raises(cute.CuteValueError, match=r"hold elements whose width divides 128 bits, got 13 bits"):
        h.get_smem_layout_atom(LayoutEnum.ROW_MAJOR, 13, 64)
