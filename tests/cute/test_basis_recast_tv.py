"""Basis strides and identity layouts, recasting, TV layouts and shared-memory atoms."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cute_py as cute
from cute_py import E, Layout, ScaledBasis, Swizzle, parse_layout as P
from cute_py.errors import CuteTypeError, CuteValueError, DivisibilityError, RankError
from cute_py.nvgpu.warpgroup.smem import SmemLayoutAtomKind as K
from cute_py.testing import compact_layouts, layouts, shapes


def values(layout):
    return [layout(i) for i in range(cute.size(layout))]


# -- basis strides -------------------------------------------------------------------------------


def test_basis_strides_print_like_cute():
    assert str(E(0)) == "1@0" and str(2 * E(1)) == "2@1" and str(E(0, 1)) == "1@1@0"
    assert str(E([1, 0])) == "1@0@1"
    assert str(cute.make_identity_layout((4, 8))) == "(4,8):(1@0,1@1)"
    from cute_py.core.notation import fmt

    assert fmt(cute.make_basis_like((2, (3, 4)))) == "(1@0,(1@0@1,1@1@1))"
    assert str(Layout((512, 256), (E(1), E(0)))) == "(512,256):(1@1,1@0)"
    assert E(0) + E(1) == (1, 1) and E(1) + E(0, 1) == ((0, 1), 1)
    assert cute.basis_get(E(1, 0), (4, (2, 3))) == 2 and cute.basis_value(3 * E(1)) == 3


@given(shapes(max_size=256), st.data())
def test_an_identity_layout_maps_each_coordinate_to_itself(shape, data):
    ident = cute.make_identity_layout(shape)
    i = data.draw(st.integers(0, cute.size(shape) - 1))
    c = cute.idx2crd(i, shape)
    assert ident(c) == c
    assert ident(i) == c


def test_tma_coordinate_layouts_tile_like_any_layout():
    # a 512x256 gmem tensor whose TMA coordinates are transposed (DESIGN's example)
    tma = Layout((512, 256), (E(1), E(0)))
    tiles = cute.zipped_divide(tma, (64, 32))
    assert str(tiles) == "((64,32),(8,8)):((1@1,1@0),(64@1,32@0))"
    assert tiles((3, 5), (2, 1)) == (5 + 32, 3 + 128)
    assert cute.cosize(tma) == 512 * 256
    ld = cute.logical_divide(cute.make_identity_layout((512, 256)), (Layout(64, 1), Layout(32, 1)))
    assert str(ld) == "((64,8),(32,8)):((1@0,64@0),(1@1,32@1))"
    assert str(cute.coalesce(Layout((4, 8), (E(0), 4 * E(0))))) == "32:1@0"


def test_composition_with_a_basis_stride_selects_the_named_mode():
    a = P("(4,(2,3)):(1,(4,8))")
    assert str(cute.composition(a, Layout(2, E(1, 0)))) == "2:4"
    ident = cute.make_identity_layout((4, 8))
    swapped = cute.composition(ident, Layout((2, 2), (E(1), E(0))))
    assert values(swapped) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_inverses_of_basis_strided_layouts_are_rejected():
    with pytest.raises(CuteTypeError, match="integer strides"):
        cute.right_inverse(cute.make_identity_layout((4, 8)))


# -- recasting -------------------------------------------------------------------------------------


def test_recast_golden_values():
    assert str(cute.recast_layout(32, 16, P("(8,64):(64,1)"))) == "(8,32):(32,1)"
    assert str(cute.recast_layout(8, 16, P("(8,64):(64,1)"))) == "(8,128):(128,1)"
    assert str(cute.recast_layout(32, 16, P("S<3,3,3> o 0 o (8,64):(64,1)"))) == "S<3,2,3> o 0 o (8,32):(32,1)"
    assert str(cute.upcast(P("(4,(2,8)):(2,(1,16))"), 2)) == "(4,(1,8)):(1,(1,8))"
    assert str(cute.downcast(P("(4,8):(1,4)"), 2)) == "(8,8):(1,8)"
    assert cute.upcast(Swizzle(3, 4, 3), 2) == Swizzle(3, 3, 3)
    assert cute.upcast(Swizzle(3, 1, 3), 4) == Swizzle(2, 0, 3)
    assert cute.downcast(Swizzle(3, 2, 3), 4) == Swizzle(3, 4, 3)


@given(compact_layouts(max_size=256), st.sampled_from([2, 4, 8]))
def test_downcast_then_upcast_is_the_identity(layout, n):
    if not any(d == 1 for d in cute.flatten((layout.stride,))):
        return
    down = cute.downcast(layout, n)
    assert cute.size(down) == cute.size(layout) * n
    assert cute.upcast(down, n) == layout


@given(st.sampled_from([8, 16, 32, 64]), st.sampled_from([8, 16, 32, 64]), st.sampled_from(list(K)))
def test_recast_there_and_back_is_the_identity_on_smem_atoms(a, b, kind):
    atom = cute.make_smem_layout_atom(kind, a)
    there = cute.recast_layout(b, a, atom)
    back = cute.recast_layout(a, b, there)
    assert back == atom
    # the same bytes: a b-bit element covers b/a a-bit elements
    assert cute.size(there) * b == cute.size(atom) * a


def test_recasts_round_as_cute_and_say_when_they_are_not_exact():
    with pytest.raises(DivisibilityError, match="stride 3 must divide or be divisible by 2"):
        cute.upcast(P("(4,4):(1,3)"), 2)
    # CuTe's rounding (layout.hpp upcast): ceil_div of the extent, the stride 0 kept
    assert str(cute.upcast(P("4:1"), 8)) == "1:1"
    assert str(cute.upcast(P("6:1"), 4)) == "2:1"
    assert str(cute.recast_layout(32, 16, P("8:0"))) == "8:0"
    assert str(cute.recast_layout(64, 16, P("2:1"))) == "1:1"
    assert str(cute.upcast(P("(3,4):(2,8)"), 4)) == "(2,4):(1,2)"
    assert cute.upcast_exactness(P("4:1"), 8) == "its contiguous run (4 elements at stride 1) is not a whole number of 8-element units"
    assert "not a whole number" in cute.upcast_exactness(P("(3,4):(2,8)"), 4)
    assert cute.upcast_exactness(P("8:0"), 2) == "it reaches one element, not a whole 2-element unit"
    assert cute.upcast_exactness(P("(8,4):(1,16)"), 4) is None
    assert cute.upcast_exactness(P("(8,4):(1,10)"), 4) == "its stride 10 is not a multiple of 4"
    assert cute.recast_exactness(64, 16, P("2:1")) is not None
    assert cute.recast_exactness(32, 48, P("(4,4):(1,4)")) is None  # upcast by 2, then downcast by 3: exact
    assert cute.recast_exactness(32, 48, P("(3,4):(1,4)")) is not None
    # exact across modes: 32 contiguous elements are 4 units of 8
    assert str(cute.upcast(P("(4,8):(1,4)"), 8)) == "(1,4):(1,1)"
    with pytest.raises(CuteValueError, match="stride 1"):
        cute.downcast(P("(4,8):(2,8)"), 2)
    with pytest.raises(CuteValueError, match="power of two"):
        cute.recast_layout(48, 16, P("S<3,3,3> o 0 o (8,64):(64,1)"))
    with pytest.raises(CuteValueError, match="positive int"):
        cute.recast_layout(0, 16, P("8:1"))


# -- TV layouts ------------------------------------------------------------------------------------


def test_make_layout_tv_golden():
    tiler, tv = cute.make_layout_tv(P("(2,3):(3,1)"), P("(2,2):(2,1)"))
    assert tiler == (4, 6)
    assert str(tv) == "((3,2),(2,2)):((8,2),(4,1))"


@given(compact_layouts(max_rank=2, max_depth=1, max_size=32), compact_layouts(max_rank=2, max_depth=1, max_size=16))
def test_a_tv_layout_covers_the_tile_exactly_once(thr, val):
    try:
        tiler, tv = cute.make_layout_tv(thr, val)
    except RankError as e:
        # CuTe's raked_product(thr, val) zips (val part, thr): a one-mode tuple val part with a leaf thr has no zip
        part = cute.logical_product(thr, val)[1]
        assert max(cute.rank(thr), cute.rank(val)) == 1 and type(part.shape) is tuple and type(thr.shape) is not tuple, e
        return
    n = cute.product(tiler)
    assert cute.size(tv) == n == cute.size(thr) * cute.size(val)
    owners = sorted(tv((t, v)) for t in range(cute.size(thr)) for v in range(cute.size(val)))
    assert owners == list(range(n))


# -- shared-memory atoms ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, bits, expected, elements",
    [
        (K.K_SW128, 16, "S<3,4,3> o smem_ptr[16b](unset) o (8,64):(64,1)", "S<3,3,3> o 0 o (8,64):(64,1)"),
        (K.K_SW128, 32, "S<3,4,3> o smem_ptr[32b](unset) o (8,32):(32,1)", "S<3,2,3> o 0 o (8,32):(32,1)"),
        (K.K_SW128, 8, "S<3,4,3> o smem_ptr[8b](unset) o (8,128):(128,1)", "S<3,4,3> o 0 o (8,128):(128,1)"),
        (K.K_SW64, 16, "S<2,4,3> o smem_ptr[16b](unset) o (8,32):(32,1)", "S<2,3,3> o 0 o (8,32):(32,1)"),
        (K.K_SW32, 16, "S<1,4,3> o smem_ptr[16b](unset) o (8,16):(16,1)", "S<1,3,3> o 0 o (8,16):(16,1)"),
        (K.K_INTER, 16, "S<0,4,3> o smem_ptr[16b](unset) o (8,8):(8,1)", "(8,8):(8,1)"),
        (K.MN_SW128, 16, "S<3,4,3> o smem_ptr[16b](unset) o (64,8):(1,64)", "S<3,3,3> o 0 o (64,8):(1,64)"),
        (K.MN_SW64, 32, "S<2,4,3> o smem_ptr[32b](unset) o (16,8):(1,16)", "S<2,2,3> o 0 o (16,8):(1,16)"),
        (K.MN_INTER, 8, "S<0,4,3> o smem_ptr[8b](unset) o (16,8):(1,16)", "(16,8):(1,16)"),
    ],
)
def test_smem_layout_atoms_per_element_width(kind, bits, expected, elements):
    # byte-swizzled as CuTe C++ prints them; as functions of element offsets as its position-independent form
    atom = cute.make_smem_layout_atom(kind, bits)
    assert str(atom) == expected
    assert str(cute.as_position_independent_swizzle_layout(atom)) == elements


def test_smem_atoms_are_swizzled_bijections_of_their_span():
    for kind in K:
        for bits in (8, 16, 32):
            atom = cute.as_position_independent_swizzle_layout(cute.make_smem_layout_atom(kind, bits))
            assert sorted(values(atom)) == list(range(cute.size(atom)))
            assert cute.size(atom) * bits == 8 * 8 * kind.swizzle_bytes
    with pytest.raises(CuteTypeError, match="SmemLayoutAtomKind"):
        cute.make_smem_layout_atom("K_SW128", 16)


def test_tma_tensor_doc_examples():
    # media/docs/cpp/cute/0z_tma_tensors.md
    assert str(5 * E(1)) == "5@1" and str(5 * E(0, 1)) == "5@1@0"
    assert str(E(0, 0)) == "1@0@0" and str(E(1, 1)) == "1@1@1"
    combo = 2 * (2 * E(0, 1)) + 3 * E(1) + 4 * (5 * E(1)) + 7 * E(0, 0)
    assert combo == ((7, 4), 23)
    a = Layout((4, 5), (E(0), E(1)))
    b = Layout((4, 5), (E(1), E(0)))
    assert [[a((i, j)) for j in range(5)] for i in range(4)][1] == [(1, 0), (1, 1), (1, 2), (1, 3), (1, 4)]
    assert [[b((i, j)) for j in range(5)] for i in range(4)][1] == [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)]
    intro = P("((128,64),2,3,1):((1@0,1@1),64@1,1@2,1@3)")
    assert intro(((5, 7), 1, 2, 0)) == (5, 7 + 64, 2, 0)
