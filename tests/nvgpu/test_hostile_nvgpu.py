"""Fuzz of ``cute_py.nvgpu`` and the CPU reference with hostile values.

``make_tiled_tma_atom``, ``tma_partition``, ``create_tma_multicast_mask``, ``TmaDescriptor.validate``, the copy
operations, the descriptor helpers and the reference's instructions are called with each argument drawn
from a mix of plausible and hostile values (floats, numpy scalars, ``None``, strings, bools, negative,
zero and huge ints, deep nesting, lists, objects of the wrong kind). Every call returns (then an accepted
TMA atom satisfies the TMA law on its first tile) or raises a ``CuteError``: no hang, no other exception.
"""

import dataclasses
import fractions
import signal

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import Layout
from cute_py import reference as ref
from cute_py.errors import CuteError
from cute_py.nvgpu import cpasync
from cute_py.nvgpu.tma import TmaDescriptor, TmaSwizzle
from cute_py.runtime import make_fake_tensor
from cute_py.nvgpu.warpgroup.smem import SmemLayoutAtomKind as K

from _tma_law import check_tile

DEEP = 4
for _ in range(60):  # deep (the algebra's own fuzz goes to 1200; hypothesis's report printer recurses on it)
    DEEP = (DEEP,)

HOSTILE = [
    -1, 0, 3, 2**40, 2**70, -(2**40), 1.5, 2.0, float("nan"), np.int64(2), np.int32(-2), np.int16(16), np.uint16(128),
    np.float64(2.0), np.arange(4), (np.int64(64), np.int32(8)), (object(), 2), [np.int64(8), None],
    np.bool_(True), None, "4", "", True, [2, 4], [64, [8, 8]], (), ((),), (2, None), (2, 1.5), DEEP, object(),
    {2: 4}, complex(1, 2), fractions.Fraction(3, 1), Layout((64, 64), (64, 1)), Layout(4, 0), Layout((8, 8), (0, 1)),
    cute.Swizzle(3, 4, 3), cute.E(0), cute.Float32, cute.AddressSpace.smem, cpasync.CopyG2SOp(),
]

OPS = [cpasync.CopyBulkTensorTileG2SOp(), cpasync.CopyBulkTensorTileG2SMulticastOp(),
       cpasync.CopyBulkTensorTileS2GOp(), cpasync.CopyReduceBulkTensorTileS2GOp()]


def hostile():
    return st.sampled_from(HOSTILE)


@st.composite
def gmem_tensors(draw):
    dtype = draw(st.sampled_from([cute.Float16, cute.Float32, cute.Int8, cute.Float64]))
    shape = draw(st.sampled_from([(512, 256), (100, 60), (64,), (8, 16, 32), (3, 5), (256, 256, 4)]))
    stride = draw(st.sampled_from([None, "row", (1, 0, 0), (0, 1, 7)]))
    if stride == "row":
        stride, acc = [], 1
        for s in reversed(shape):
            stride.insert(0, acc)
            acc *= s
        stride = tuple(stride)
    elif stride is not None:
        stride = stride[:len(shape)]
    return make_fake_tensor(dtype, shape, stride, assumed_align=draw(st.sampled_from([16, 128, 8])))


@st.composite
def smem_layouts(draw):
    kind = draw(st.sampled_from(["plain", "atom", "hostile"]))
    if kind == "plain":
        return draw(st.sampled_from([Layout((64, 64), (64, 1)), Layout((64, 64), (1, 64)), Layout(64),
                                     Layout((8, 16, 32), (512, 32, 1)), Layout((64, 64), (72, 1))]))
    if kind == "atom":
        atom = cute.make_smem_layout_atom(draw(st.sampled_from(list(K))), draw(st.sampled_from([8, 16, 32])))
        try:
            return cute.tile_to_shape(atom, draw(st.sampled_from([(64, 64), (128, 64), (64, 128)])))
        except CuteError:
            return atom
    return draw(hostile())


def tilers():
    return st.one_of(st.sampled_from([(64, 64), (128, 64), (64,), (8, 16, 32), [64, 64], (64, 0), (-64, 64),
                                      (Layout(32, 1), Layout(64, 1)), 64]), hostile())


def _call(fn, *args, **kwargs):
    """``fn(*args)``, with a watchdog: a hang is a failure."""
    def alarm(*_):
        raise TimeoutError(f"{fn.__name__} hung on {args!r}")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(10)
    try:
        return fn(*args, **kwargs), None
    except CuteError as e:
        return None, e
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(op=st.one_of(st.sampled_from(OPS), hostile()), g=st.one_of(gmem_tensors(), hostile()),
       smem=smem_layouts(), tiler=tilers(), mc=st.one_of(st.sampled_from([1, 2, 4]), hostile()))
def test_make_tiled_tma_atom_accepts_exactly_or_raises_a_cute_error(op, g, smem, tiler, mc):
    result, error = _call(cpasync.make_tiled_tma_atom, op, g, smem, tiler, mc)
    if error is not None:
        assert str(error)
        return
    atom, tma_tensor = result
    # an accepted atom copies its first tile exactly (the TMA law)
    shape = cute.product_each(g.shape)
    tile = tuple(tiler) if isinstance(tiler, (tuple, list)) else (tiler,)
    if all(type(t) is int for t in tile) and len(tile) == len(shape):
        cfg = dict(op="load" if op.direction == "G2S" else ("store" if type(op) is cpasync.CopyBulkTensorTileS2GOp
                                                            else "reduce"),
                   dtype=g.element_type, shape=shape, stride=cute.product_each(g.stride), tile=tile, smem=smem,
                   mc=atom.num_multicast)
        if cfg["op"] != "reduce" or g.element_type in (cute.Float32, cute.Int32):
            breach = check_tile(cfg, atom, tma_tensor, (0,) * len(shape), np.random.default_rng(0))
            assert breach is None, f"{cfg}: {breach}"


def _good_atom():
    smem = Layout((64, 64), (64, 1))
    atom, tma = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(),
                                            make_fake_tensor(cute.Float16, (256, 128), (128, 1)), smem, (64, 64), 2)
    s = cute.make_tensor(cute.make_ptr(cute.Float16, None, cute.AddressSpace.smem, 128), smem)
    return atom, cute.group_modes(s, 0, 2), cute.group_modes(cute.local_tile(tma, (64, 64), (0, 0)), 0, 2)


ATOM, S_TILE, G_TILE = _good_atom()


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(which=st.integers(0, 4), value=st.one_of(hostile(), st.integers(-3, 5)))
def test_tma_partition_with_one_hostile_argument(which, value):
    args = [ATOM, 1, Layout(2), S_TILE, G_TILE]
    args[which] = value
    result, error = _call(cpasync.tma_partition, *args)
    if error is None:
        s_part, g_part = result
        assert cute.size(s_part) == cute.size(g_part) == 64 * 64


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(layout=st.one_of(st.sampled_from([Layout((1, 2, 2, 1)), Layout((1, 4, 4, 1)), Layout((2, 2)),
                                         Layout((1, 2, 2, 1), (0, 2, 1, 0))]), hostile()),
       coord=st.one_of(st.tuples(*[st.integers(-1, 4)] * 4), st.tuples(st.integers(0, 1), st.integers(0, 1)),
                       hostile()),
       mode=st.one_of(st.integers(-1, 4), st.tuples(st.integers(0, 3), st.integers(0, 3)), hostile()))
def test_multicast_masks_of_hostile_clusters(layout, coord, mode):
    mask, error = _call(cpasync.create_tma_multicast_mask, layout, coord, mode)
    if error is None:
        assert type(mask) is int and 0 < mask < 1 << 16
        # the law: the mask holds this CTA and exactly the CTAs that differ from it only in the multicast modes
        modes = (mode,) if type(mode) is int else tuple(mode)
        ranks = {layout(c): c for c in _coords(layout.shape)}
        me = layout(tuple(coord))
        want = {r for r, c in ranks.items() if all(c[i] == coord[i] for i in range(len(coord)) if i not in modes)}
        assert me in want and mask == sum(1 << r for r in want)


def _coords(shape):
    import itertools

    return itertools.product(*[range(s) for s in shape])


FIELDS = ["dtype", "global_dims", "global_strides", "box_dims", "element_strides", "swizzle", "interleave",
          "l2_promotion", "oob_fill", "global_address", "address_alignment", "store"]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(FIELDS), value=st.one_of(hostile(), st.tuples(st.integers(-2, 300), st.integers(-2, 300))))
def test_descriptors_with_one_hostile_field_validate_or_raise(field, value):
    desc = TmaDescriptor(cute.Float16, (256, 512), (512,), (64, 64), (1, 1), TmaSwizzle.B128)
    bad = dataclasses.replace(desc, **{field: value})
    result, error = _call(bad.validate)
    if error is None:
        # what validates is a descriptor the hardware takes: every box instruction reads inside the bounds
        assert all(1 <= b <= 256 for b in bad.box_dims) and all(1 <= d <= 1 << 32 for d in bad.global_dims)
        assert ref.box_gmem_bytes(bad, (0,) * bad.rank).size > 0


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(args=st.tuples(hostile(), hostile()))
def test_copy_operations_reject_hostile_options(args):
    for make in (lambda a, b: cpasync.CopyG2SOp(a), lambda a, b: cpasync.CopyReduceBulkTensorTileS2GOp(a),
                 lambda a, b: cute.make_copy_atom(cpasync.CopyG2SOp(), a, b),
                 lambda a, b: cpasync.tma_store_wait(a), lambda a, b: cpasync.cp_async_shared_global(a, b, 16,
                                                                                                    cpasync.LoadCacheMode.GLOBAL),
                 lambda a, b: cpasync.tma_load(ATOM, a, b, (0, 0)), lambda a, b: cpasync.update_tma_descriptor(ATOM, a, b),
                 lambda a, b: cpasync.copy_tensormap(ATOM, a)):
        _call(make, *args)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(crd=st.one_of(st.tuples(st.integers(-300, 600), st.integers(-300, 600)), hostile()),
       byte=st.one_of(st.sampled_from([0, 128, 1024, 64, -128]), hostile()))
def test_reference_instructions_with_hostile_coordinates_and_addresses(crd, byte):
    desc = TmaDescriptor(cute.Float32, (100, 60), (400,), (32, 8), (1, 1)).validate()
    g = np.zeros(6000, dtype=np.float32)
    smem = np.zeros(4096, dtype=np.uint8)
    for call in (lambda: ref.tma_load(desc, g, crd, smem, byte), lambda: ref.tma_store(desc, smem, byte, crd, g),
                 lambda: ref.tma_reduce(desc, smem, byte, crd, g), lambda: ref.box_gmem_bytes(desc, crd, write=True)):
        _call(call)


# -- numpy integers are ints; bools and floats are not ------------------------------------------


def test_numpy_integers_are_element_widths_and_copy_widths():
    import pytest
    from cute_py.errors import CuteTypeError

    assert cute.make_smem_layout_atom(K.K_SW128, np.int64(16)) == cute.make_smem_layout_atom(K.K_SW128, 16)
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.Float16, num_bits_per_copy=np.int64(128))
    assert atom.num_bits == 128 and type(atom.num_bits) is int
    for bad in (True, 16.0):
        with pytest.raises(CuteTypeError):
            cute.make_smem_layout_atom(K.K_SW128, bad)
    for bad in (True, 128.0, "128"):
        with pytest.raises(CuteTypeError, match="num_bits_per_copy"):
            cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.Float16, num_bits_per_copy=bad)


def test_numpy_integers_are_im2col_strides_and_pads():
    import pytest
    from cute_py.errors import CuteTypeError
    from cute_py.nvgpu.tma.im2col import make_im2col_tma_atom

    img = make_fake_tensor("Float16", (2, 9, 9, 64), (9 * 9 * 64, 9 * 64, 64, 1), assumed_align=16)
    col = Layout((64, 16), (16, 1))
    want = make_im2col_tma_atom(img, col, 3, 2, 1, 1).descriptor
    got = make_im2col_tma_atom(img, col, np.int64(3), np.int32(2), np.int64(1), np.int64(1)).descriptor
    assert got == want
    assert all(type(x) is int for x in got.element_strides + got.lower_corner + got.upper_corner)
    for stride, pad in ((True, 1), (2.0, 1), (2, False), (2, 1.0)):
        with pytest.raises(CuteTypeError):
            make_im2col_tma_atom(img, col, 3, stride, 1, pad)


def test_a_multicast_mask_of_a_negative_stride_is_a_value_error():
    import pytest
    from cute_py.errors import CuteValueError
    from cute_py.nvgpu.tma.multicast import make_layout_image_mask

    for lay, coord, mode in ((Layout((1, 2, 2, 1), (0, -1, 2, 0)), (0, 1, 0, 0), 2),
                             (Layout((1, 2, 2, 1), (0, 1, -2, 0)), (0, 1, 0, 0), 1),
                             (Layout((2, 2, 2, 1), (-1, 4, 2, 0)), (1, 1, 0, 0), 2)):
        with pytest.raises(CuteValueError, match="negative stride"):
            cpasync.create_tma_multicast_mask(lay, coord, mode)
    with pytest.raises(CuteValueError, match="negative stride"):
        make_layout_image_mask(Layout(4, -1), (0,), 0)
    # a negative stride on a mode of extent 1 reaches no other position
    assert cpasync.create_tma_multicast_mask(Layout((1, 2, 2, 1), (-3, 1, 2, 0)), (0, 1, 0, 0), 2) == 0b1010


def test_an_array_is_no_cta_coordinate_tiler_or_multicast_count():
    import pytest
    from cute_py.errors import CuteTypeError
    from cute_py.nvgpu.tma.im2col import Conv2dGeometry

    g = make_fake_tensor(cute.Float16, (512, 256), (1, 512), assumed_align=16)
    op, smem = cpasync.CopyBulkTensorTileG2SOp(), Layout((64, 64), (64, 1))
    for tiler, mc in ((np.arange(4), 1), ((64, 64), np.arange(4)), ((64, np.arange(2)), 1)):
        with pytest.raises(CuteTypeError):
            cpasync.make_tiled_tma_atom(op, g, smem, tiler, mc)
    with pytest.raises(CuteTypeError, match="kernel"):
        Conv2dGeometry(1, 8, 8, 16, np.arange(3))


def test_an_array_is_no_entry_of_a_multicast_coordinate():
    import pytest
    from cute_py.errors import CuteTypeError

    for coord in ((np.arange(2),), (np.array([1]),), (np.True_,)):
        with pytest.raises(CuteTypeError, match="coordinate"):
            cute.make_layout_image_mask(Layout(4, 1), coord, 0)
    assert cute.make_layout_image_mask(Layout((2, 2), (1, 2)), (np.int64(1), None), 1) == 0b1010
