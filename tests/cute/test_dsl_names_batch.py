"""CuTe DSL names: ``repeat_like``, ``shape``, ``leading_dim`` / ``Tensor.leading_dim``, against values derived
by hand from the DSL's documented meaning."""

import pytest

import cute_py as cute
from cute_py.errors import RankError


# -- repeat_like: a tuple congruent to the target, every leaf the value ------------------------------------


@pytest.mark.parametrize("x, target, expected", [
    (0, (1, 2, 3), (0, 0, 0)),
    (1, ((1, 2), 3), ((1, 1), 1)),
    (2, 5, 2),
    (7, (), ()),
    (3, (4,), (3,)),
    (0, ((2, (3, 4)), 5, ()), ((0, (0, 0)), 0, ())),
    (None, (8, (4, 2)), (None, (None, None))),
    (0, [4, [2, 2]], (0, (0, 0))),
])
def test_repeat_like(x, target, expected):
    assert cute.repeat_like(x, target) == expected


def test_repeat_like_tuple_value_fills_each_leaf():
    assert cute.repeat_like((1, 2), (4, 8)) == ((1, 2), (1, 2))


def test_repeat_like_is_congruent_to_its_target():
    target = ((2, 3), (4, (5, 6)), 7)
    assert cute.is_congruent(cute.repeat_like(1, target), target)


# -- shape: of a layout, a tensor, an IntTuple, a tiler; mode= picks one mode -----------------------------


def test_shape_of_layout_and_mode():
    layout = cute.make_layout((2, 3, 4))
    assert cute.shape(layout) == (2, 3, 4)
    assert cute.shape(layout, mode=0) == 2
    assert cute.shape(layout, mode=2) == 4


def test_shape_of_nested_layout_with_nested_mode():
    layout = cute.make_layout(((2, 3), 4), stride=((1, 2), 6))
    assert cute.shape(layout) == ((2, 3), 4)
    assert cute.shape(layout, mode=0) == (2, 3)
    assert cute.shape(layout, mode=[0, 1]) == 3


def test_shape_of_int_tuple_is_get():
    assert cute.shape((4, (8, 2))) == (4, (8, 2))
    assert cute.shape((4, (8, 2)), mode=1) == (8, 2)
    assert cute.shape(5) == 5
    assert cute.shape(5, mode=0) == 5


def test_shape_of_tiler_of_layouts():
    tiler = (cute.make_layout((2, 3, 4)), cute.make_layout(1))
    assert cute.shape(tiler) == ((2, 3, 4), 1)
    assert cute.shape((cute.make_layout(8, stride=2), 4)) == (8, 4)
    assert cute.shape(tiler, mode=0) == (2, 3, 4)


def test_shape_of_tensor_and_composed_layout():
    t = cute.make_tensor(cute.make_ptr(cute.Float32, 0), cute.make_layout((4, 8), stride=(8, 1)))
    assert cute.shape(t) == (4, 8)
    assert cute.shape(t, mode=1) == 8
    atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, cute.Float16)
    assert cute.shape(atom) == (8, 64)


def test_shape_mode_out_of_range():
    with pytest.raises(RankError):
        cute.shape(cute.make_layout((2, 3)), mode=2)


# -- leading_dim: the first mode of static stride 1 whose extent is not 1 ---------------------------------


@pytest.mark.parametrize("shape, stride, expected", [
    ((3, 4), (4, 1), 1),                     # row-major
    ((3, 4), (1, 3), 0),                     # column-major
    ((1, 4), (1, 1), 1),                     # an extent-1 mode of stride 1 is not leading
    ((4, 4), (4, 8), None),                  # no stride 1
    (8, 1, 0),                               # a rank-1 layout
    (((2, 4), 3), ((1, 2), 8), (0, 0)),      # nested: the indices down to the leaf
    ((3, (1, 4)), (8, (1, 1)), (1, 1)),      # nested, past an extent-1 leaf
    ((5, 6, 7), (42, 7, 1), 2),
    ((2, 3), (1, 1), 0),                     # the first of two candidates
])
def test_leading_dim(shape, stride, expected):
    assert cute.leading_dim(shape, stride) == expected


def test_leading_dim_skips_run_time_strides_but_not_run_time_extents():
    n = cute.sym_int32()
    assert cute.leading_dim((4, 8), (n, 1)) == 1
    assert cute.leading_dim((n, 8), (1, n)) == 0


def test_tensor_leading_dim():
    ptr = cute.make_ptr(cute.Float16, 0)
    assert cute.make_tensor(ptr, cute.make_layout((4, 8), stride=(8, 1))).leading_dim == 1
    assert cute.make_tensor(ptr, cute.make_layout((4, 8))).leading_dim == 0
    assert cute.make_tensor(ptr, cute.make_layout((4, 8, 2), stride=(16, 2, 1))).leading_dim == 2
    assert cute.make_tensor(ptr, cute.make_layout((4, 8), stride=(16, 2))).leading_dim is None
    assert cute.make_tensor(ptr, cute.make_layout(((2, 2), 8), stride=((1, 16), 2))).leading_dim == (0, 0)


# -- make_rmem_tensor_like: the shape of src, the compact strides of make_layout_like -------------------------


def test_make_rmem_tensor_like_keeps_the_stride_order():
    ptr = cute.make_ptr(cute.Float16, 0)
    row = cute.make_rmem_tensor_like(cute.make_tensor(ptr, cute.make_layout((4, 8), stride=(8, 1))))
    assert row.layout == cute.make_layout((4, 8), stride=(8, 1))       # row-major stays row-major
    assert row.element_type is cute.Float16
    col = cute.make_rmem_tensor_like(cute.make_tensor(ptr, cute.make_layout((4, 8), stride=(2, 16))), cute.Float32)
    assert col.layout == cute.make_layout((4, 8), stride=(1, 4))       # compact, column-major order
    assert col.element_type is cute.Float32
    mixed = cute.make_rmem_tensor_like(cute.make_tensor(ptr, cute.make_layout((2, 3, 4), stride=(100, 1, 3))))
    assert mixed.layout == cute.make_layout((2, 3, 4), stride=(12, 1, 3))


def test_make_rmem_tensor_like_of_layouts_and_coordinate_tensors():
    # static 0 strides are kept, the other modes compact in stride order
    t = cute.make_rmem_tensor_like(cute.make_layout((2, 2, 2, 2), stride=(0, 2, 4, 1)), cute.Int32)
    assert t.layout == cute.make_layout((2, 2, 2, 2), stride=(0, 2, 4, 1))
    assert t.element_type is cute.Int32
    ident = cute.make_rmem_tensor_like(cute.make_identity_tensor((3, 5)), cute.Boolean)
    assert ident.layout == cute.make_layout((3, 5), stride=(1, 3))
    assert ident.element_type is cute.Boolean
    atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, cute.Float16)
    assert cute.make_rmem_tensor_like(atom, cute.Float16).layout == cute.make_layout((8, 64), stride=(64, 1))


def test_make_rmem_tensor_like_needs_a_dtype_without_an_element_type():
    with pytest.raises(cute.CuteValueError):
        cute.make_rmem_tensor_like(cute.make_layout((4, 8)))
    with pytest.raises(cute.CuteValueError):
        cute.make_rmem_tensor_like(cute.make_identity_tensor((3, 5)))
    with pytest.raises(cute.CuteTypeError):
        cute.make_rmem_tensor_like((4, 8), cute.Float32)


def test_make_rmem_tensor_like_host_tensor_is_zeroed_and_writable():
    t = cute.make_rmem_tensor_like(cute.make_layout((2, 3), stride=(3, 1)), cute.Float32)
    assert all(t[i, j] == 0 for i in range(2) for j in range(3))
    t[1, 2] = 5.0
    assert t[1, 2] == 5.0 and t[0, 2] == 0


# -- Numeric.is_same_kind: both floating-point, or both integer (Boolean is an integer type in the DSL) -------


@pytest.mark.parametrize("a, b, expected", [
    (cute.Float16, cute.Float32, True),
    (cute.BFloat16, cute.Float8E4M3FN, True),
    (cute.Int8, cute.Uint32, True),
    (cute.Int32, cute.Int64, True),
    (cute.Boolean, cute.Int8, True),
    (cute.Float32, cute.Int32, False),
    (cute.Uint8, cute.Float16, False),
    (cute.Boolean, cute.Float32, False),
])
def test_is_same_kind(a, b, expected):
    assert a.is_same_kind(b) is expected
    assert b.is_same_kind(a) is expected
    assert cute.Numeric.is_same_kind(a, b) is expected


# -- cute.nvgpu.LoadCacheMode and cute.nvgpu.warpgroup.make_smem_layout_atom -----------------------------------


def test_nvgpu_load_cache_mode_is_cpasyncs():
    from cute_py.nvgpu import cpasync

    assert cute.nvgpu.LoadCacheMode is cpasync.LoadCacheMode
    assert {m.name for m in cute.nvgpu.LoadCacheMode} == {"ALWAYS", "GLOBAL", "STREAMING", "LAST_USE", "NONE"}


@pytest.mark.parametrize("kind, dtype, swizzle_bits, outer", [
    # K-major: 8 rows of 16/32/64/128 bytes; MN-major: the contiguous mode first
    ("K_SW128", cute.Float16, 3, ((8, 64), (64, 1))),
    ("K_SW64", cute.Float16, 2, ((8, 32), (32, 1))),
    ("K_SW32", cute.Float32, 1, ((8, 8), (8, 1))),
    ("K_INTER", cute.Float16, 0, ((8, 8), (8, 1))),
    ("MN_SW128", cute.Float16, 3, ((64, 8), (1, 64))),
    ("MN_SW64", cute.Float16, 2, ((32, 8), (1, 32))),
    ("MN_SW128", cute.Float8E4M3FN, 3, ((128, 8), (1, 128))),
])
def test_warpgroup_make_smem_layout_atom(kind, dtype, swizzle_bits, outer):
    from cute_py.nvgpu import warpgroup

    atom = warpgroup.make_smem_layout_atom(getattr(warpgroup.SmemLayoutAtomKind, kind), dtype)
    assert atom.outer == cute.make_layout(outer[0], stride=outer[1])
    assert atom.inner == cute.make_swizzle(swizzle_bits, 4, 3)
    assert warpgroup.SmemLayoutAtomKind is cute.SmemLayoutAtomKind
