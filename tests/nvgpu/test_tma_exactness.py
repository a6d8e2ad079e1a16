"""TMA atoms that would touch bytes outside their tiles, or break the hardware's or the API's contract, are
rejected by a rule that names it; the configurations next to them that are exact keep working."""

import dataclasses

import numpy as np
import pytest

import cute_py as cute
from cute_py import Layout
from cute_py import reference as ref
from cute_py.nvgpu import cpasync
from cute_py.nvgpu.tma import TmaDescriptor, TmaError
from cute_py.runtime import make_fake_tensor

LOAD = cpasync.CopyBulkTensorTileG2SOp()
MCAST = cpasync.CopyBulkTensorTileG2SMulticastOp()
STORE = cpasync.CopyBulkTensorTileS2GOp()
REDUCE = cpasync.CopyReduceBulkTensorTileS2GOp()


def atom_of(dtype, shape, stride, smem, tiler, op=LOAD, mc=1):
    return cpasync.make_tiled_tma_atom(op, make_fake_tensor(dtype, shape, stride), smem, tiler, mc)


# -- the 16-byte store granule ------------------------------------------------------------------------


@pytest.mark.parametrize("op", [STORE, REDUCE], ids=["store", "reduce"])
def test_a_store_into_rows_that_do_not_end_on_16_bytes_is_rejected(op):
    # int32 rows of 10 elements (40 bytes) at a 16-element pitch: a box reaching the row end writes 48 bytes
    with pytest.raises(TmaError, match=r"whole 16-byte granules: .* 40 bytes, not a multiple of 16, .* the 8 bytes"):
        atom_of(cute.Int32, (30, 10), (16, 1), Layout((8, 12), (12, 1)), (8, 12), op)


def test_loads_from_the_same_rows_are_fine_and_stores_into_whole_granules_too():
    atom_of(cute.Int32, (30, 10), (16, 1), Layout((8, 12), (12, 1)), (8, 12), LOAD)
    atom_of(cute.Int32, (30, 12), (16, 1), Layout((8, 12), (12, 1)), (8, 12), STORE)


def test_the_reference_writes_the_granule_tail_as_an_h100_does():
    # seen on an H100 (2026-11-23): int32 view (30, 10) of (30, 16) rows, box (12, 8) from smem holding
    # 1000 + 100 r + c; the store writes columns 10 and 11 (past the view, inside the last granule) too,
    # a reduce-add adds into them, and columns 12..15 (the next granule) stay untouched
    desc = TmaDescriptor(cute.Int32, (10, 30), (64,), (12, 8), (1, 1))
    smem = np.zeros(1024, dtype=np.uint8)
    smem.view(np.int32)[:96] = [1000 + 100 * r + c for r in range(8) for c in range(12)]
    for kind, fill, row0 in [(None, -1, [1000 + c for c in range(12)] + [-1] * 4),
                             (cpasync.ReductionOp.ADD, 5, [1005 + c for c in range(12)] + [5] * 4)]:
        g = np.full(30 * 16, fill, dtype=np.int32)
        if kind is None:
            ref.tma_store(desc, smem, 0, (0, 0), g)
        else:
            ref.tma_reduce(desc, smem, 0, (0, 0), g, kind)
        assert g.reshape(30, 16)[0].tolist() == row0
        if kind is None:
            assert g.reshape(30, 16)[7, 10:].tolist() == [1710, 1711] + [fill] * 4
        assert ref.box_gmem_bytes(desc, (0, 0), write=True).size == 8 * 12 * 4
        assert ref.box_gmem_bytes(desc, (0, 0)).size == 8 * 10 * 4


def test_update_tma_descriptor_keeps_the_granule_rule_of_a_store_atom():
    atom, _ = atom_of(cute.Int32, (30, 12), (16, 1), Layout((8, 12), (12, 1)), (8, 12), STORE)
    narrow = make_fake_tensor(cute.Int32, (30, 10), (16, 1))
    desc = cute.make_ptr(cute.Int8, None, cute.AddressSpace.gmem, 64)
    with pytest.raises(TmaError, match="16-byte granules"):
        cpasync.update_tma_descriptor(atom, narrow, desc)


# -- modes merged across padding, and more than five modes -------------------------------------------


def test_modes_are_not_merged_across_padding():
    # bf16 (128, 24, 3):(320, 8, 1): the inner modes (24, 3):(8, 1) have holes; a tile of 8 along the
    # 3-element mode must not become one 187-element dim that reads the holes
    atom, _ = atom_of(cute.BFloat16, (128, 24, 3), (320, 8, 1), Layout((128, 32, 8), (256, 8, 1)), (128, 32, 8))
    d = atom.descriptor
    assert d.global_dims == (3, 24, 128) and d.global_strides == (16, 640) and d.box_dims == (8, 32, 128)
    # fp32 (100, 4):(8, 1), tile (32, 8): not a rank-1 descriptor of 796 elements over the padding
    atom, _ = atom_of(cute.Float32, (100, 4), (8, 1), Layout((32, 8), (8, 1)), (32, 8))
    assert atom.descriptor.global_dims == (4, 100) and atom.descriptor.box_dims == (8, 32)


def test_modes_that_are_compact_still_merge():
    # a whole compact row block is one contiguous run: one dim
    atom, _ = atom_of(cute.Int8, (30, 16), (16, 1), Layout((8, 16), (16, 1)), (8, 16))
    assert atom.descriptor.global_dims == (480,) and atom.descriptor.box_dims == (128,)


def test_a_tile_wider_than_an_inner_mode_does_not_merge_it_with_the_next():
    # int32 (4, 2):(1, 4) compact, tile (8, 8) through a 4-wide smem atom: merging the two modes would make
    # the tile's second 4 columns (outside the tensor) alias row 1
    smem = cute.tile_to_shape(cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.MN_INTER, 32), (8, 8))
    atom, _ = atom_of(cute.Int32, (4, 2), (1, 4), smem, (8, 8), REDUCE)
    assert atom.descriptor.rank == 2


def test_more_than_five_modes_that_cannot_merge_exactly_are_rejected():
    with pytest.raises(TmaError, match=r"walks 6 gmem modes .* no two neighbouring ones merge into one exact TMA dim"):
        atom_of(cute.Float32, (4, 3, 3, 3, 3, 3), (1, 8, 32, 128, 512, 2048), Layout((4, 3, 3, 3, 3, 3)),
                (4, 3, 3, 3, 3, 3))


def test_more_than_five_modes_merge_where_exact():
    atom, _ = atom_of(cute.Float32, (2, 3, 4, 5, 6, 7), None, Layout((2, 3, 4, 5, 6, 7)), (2, 3, 4, 5, 6, 7))
    assert atom.descriptor.rank <= 5 and cute.product(atom.descriptor.box_dims) == 5040
    # modes the tile does not walk (box 1) fold together, whatever their strides
    atom, _ = atom_of(cute.Float32, (8, 3, 3, 3, 3, 3, 3), (1, 8, 32, 128, 512, 2048, 8192), Layout((8, 3, 3)),
                      (8, 3, 3))
    assert atom.descriptor.rank == 5 and atom.descriptor.box_dims[2:] == (1, 1, 1)


# -- rank-1 descriptors -------------------------------------------------------------------------------


def test_rank_1_descriptors_pass_the_driver_a_stride_list(monkeypatch):
    # the driver refuses a null globalStrides even for rank 1 (seen: CUDA_ERROR_INVALID_VALUE), which is what
    # cuda-python passes for an empty list
    from cute_py.nvgpu.tma import desc as _encode

    seen = {}

    class Driver:
        class CUresult:
            CUDA_SUCCESS = 0

        def __getattr__(self, name):
            return _Names()

        @staticmethod
        def cuInit(flags):
            return (0,)

        cuuint64_t = cuuint32_t = staticmethod(lambda x: x)

        @staticmethod
        def cuTensorMapEncodeTiled(dt, rank, address, dims, strides, box, elem, *rest):
            seen.update(rank=rank, strides=list(strides))
            return 0, type("Map", (), {"opaque": [0] * 16})()

    class _Names:
        def __getattr__(self, name):
            return name

    monkeypatch.setattr(_encode, "driver_module", lambda: Driver())
    atom, _ = atom_of(cute.Int8, (480,), (1,), Layout(128), (128,))
    assert atom.descriptor.rank == 1
    assert len(atom.descriptor.encode(1 << 20)) == 128
    assert seen == {"rank": 1, "strides": [480]}


def test_a_driver_refusal_is_an_encode_error_not_a_missing_driver(monkeypatch):
    from cute_py.nvgpu.tma import desc as _encode

    class Driver:
        class CUresult:
            CUDA_SUCCESS = 0

        def __getattr__(self, name):
            return type("N", (), {"__getattr__": lambda self, n: n})()

        cuuint64_t = cuuint32_t = staticmethod(lambda x: x)

        @staticmethod
        def cuInit(flags):
            return (0,)

        @staticmethod
        def cuGetErrorName(err):
            return 0, b"CUDA_ERROR_INVALID_VALUE"

        @staticmethod
        def cuTensorMapEncodeTiled(*args):
            return 1, None

    monkeypatch.setattr(_encode, "driver_module", lambda: Driver())
    desc = TmaDescriptor(cute.Float16, (256, 512), (512,), (64, 64), (1, 1))
    with pytest.raises(_encode.TmaEncodeError, match="cuTensorMapEncodeTiled .* CUDA_ERROR_INVALID_VALUE"):
        desc.encode(1 << 20)
    assert not issubclass(_encode.TmaEncodeError, _encode.DriverUnavailable)


# -- accepted though they broke the hardware's or the API's contract ------------------------------------


def test_a_swizzled_tile_at_a_misaligned_offset_is_rejected():
    smem = cute.ComposedLayout(cute.Swizzle(3, 3, 3), 8, Layout((64, 64), (64, 1)))
    with pytest.raises(TmaError, match="offset of 8 elements = 16 bytes .* not 128-byte aligned"):
        atom_of(cute.Float16, (512, 256), (256, 1), smem, (64, 64))
    # an offset of whole swizzle repeats keeps every instruction aligned
    atom_of(cute.Float16, (512, 256), (256, 1), cute.ComposedLayout(cute.Swizzle(3, 3, 3), 512,
                                                                    Layout((64, 64), (64, 1))), (64, 64))


def test_an_aliasing_smem_layout_is_rejected():
    with pytest.raises(TmaError, match="not injective: 64 elements of the tile share one smem element"):
        atom_of(cute.Float16, (512, 256), (256, 1), Layout((64, 64), (0, 1)), (64, 64))


def test_smem_aliasing_is_fine_where_the_gmem_tile_aliases_too():
    # CuTe's own test: a stride-0 gmem mode covered whole by the tile, and a stride-0 smem mode over it
    g = cute.Tensor(make_fake_tensor(cute.Uint16, 1).engine, Layout((128, (32, 4)), (1, (0, 128))))
    atom, _ = cpasync.make_tiled_tma_atom(LOAD, g, Layout((64, (32,)), (1, (0,))), (64, 32))
    assert atom.descriptor.box_dims == (64, 1)


def test_padded_smem_rows_that_misalign_instructions_are_rejected():
    with pytest.raises(TmaError, match="144 bytes apart; each must start at a 128-byte aligned smem address"):
        atom_of(cute.Float16, (512, 256), (256, 1), Layout((64, 64), (72, 1)), (64, 64))
    atom, _ = atom_of(cute.Float16, (512, 256), (256, 1), Layout((64, 64), (128, 1)), (64, 64))
    assert atom.descriptor.box_dims == (64, 1)  # one row per instruction, 256 bytes apart


@pytest.mark.parametrize("n", [0, 17, 32, 64, -1])
def test_num_multicast_is_a_cluster_size(n):
    with pytest.raises(cute.CuteValueError, match="1..16"):
        atom_of(cute.Float16, (256, 128), (128, 1), Layout((64, 64), (64, 1)), (64, 64), MCAST, n)


def test_num_multicast_takes_any_integer_type_and_rejects_others():
    np = pytest.importorskip("numpy")
    atom, _ = atom_of(cute.Float16, (256, 128), (128, 1), Layout((64, 64), (64, 1)), (64, 64), MCAST, np.int64(2))
    assert atom.num_multicast == 2 and type(atom.num_multicast) is int
    for bad in (2.0, True, "2", None):
        with pytest.raises(cute.CuteTypeError, match="num_multicast must be an int"):
            atom_of(cute.Float16, (256, 128), (128, 1), Layout((64, 64), (64, 1)), (64, 64), MCAST, bad)


def _partition_inputs(mc=2):
    smem = Layout((64, 64), (64, 1))
    atom, tma = atom_of(cute.Float16, (256, 128), (128, 1), smem, (64, 64), MCAST if mc > 1 else LOAD, mc)
    s = cute.make_tensor(cute.make_ptr(cute.Float16, None, cute.AddressSpace.smem, 128), smem)
    g = cute.local_tile(tma, (64, 64), (0, 0))
    return atom, cute.group_modes(s, 0, 2), cute.group_modes(g, 0, 2)


def test_tma_partition_checks_the_multicast_group():
    atom, s, g = _partition_inputs(2)
    cpasync.tma_partition(atom, 1, Layout(2), s, g)
    with pytest.raises(cute.CuteValueError, match="cta_coord 2 is outside the multicast group"):
        cpasync.tma_partition(atom, 2, Layout(2), s, g)
    with pytest.raises(cute.CuteValueError, match="cta_coord -1 is outside"):
        cpasync.tma_partition(atom, -1, Layout(2), s, g)
    with pytest.raises(cute.CuteValueError, match=r"cta_layout 4:1 must map the 2 CTA\(s\)"):
        cpasync.tma_partition(atom, 0, Layout(4), s, g)
    with pytest.raises(cute.CuteValueError, match=r"cta_layout 1:0 must map the 2 CTA\(s\)"):
        cpasync.tma_partition(atom, 0, Layout(1), s, g)


def test_tma_partition_checks_the_smem_tile_against_the_atoms():
    atom, s, g = _partition_inputs(1)
    other = cute.group_modes(cute.make_tensor(s.engine, Layout((64, 64), (1, 64))), 0, 2)
    with pytest.raises(TmaError, match="not laid out like the smem layout"):
        cpasync.tma_partition(atom, 0, Layout(1), other, g)
    with pytest.raises(cute.CuteTypeError, match="TMA coordinate tensor"):
        cpasync.tma_partition(atom, 0, Layout(1), s, cute.make_tensor(cute.make_ptr(cute.Float16, None,
                                                                                   cute.AddressSpace.gmem, 16),
                                                                      Layout((64, 64), (128, 1))))


def test_multicast_masks_reject_what_is_outside_the_cluster():
    vmnk = Layout((1, 2, 2, 1))
    with pytest.raises(cute.CuteValueError, match="entry 2 .* outside mode 2"):
        cpasync.create_tma_multicast_mask(vmnk, (0, 0, 2, 0), 1)
    with pytest.raises(cute.CuteValueError, match="entry 1 .* outside"):
        cpasync.create_tma_multicast_mask(vmnk, (0, -1, 0, 0), 2)
    with pytest.raises(cute.CuteValueError, match="at most 16 CTAs"):
        cpasync.create_tma_multicast_mask(Layout((1, 1 << 20, 1 << 20, 1)), (0, 0, 0, 0), 1)
    with pytest.raises(cute.CuteValueError, match="one entry per mode"):
        cpasync.create_tma_multicast_mask(vmnk, (0, 0), 1)
    with pytest.raises(cute.CuteTypeError, match="mcast_mode"):
        cpasync.create_tma_multicast_mask(vmnk, (0, 0, 0, 0), 1.0)


@pytest.mark.parametrize("field, value", [("global_dims", (256.0, 512)), ("box_dims", (64, 64.5)),
                                          ("global_strides", (512.0,)), ("element_strides", (1, True)),
                                          ("global_address", 4096.0), ("swizzle", 3), ("store", 1)])
def test_descriptor_fields_of_the_wrong_type_are_rejected(field, value):
    desc = TmaDescriptor(cute.Float16, (256, 512), (512,), (64, 64), (1, 1))
    with pytest.raises(TmaError, match=field):
        dataclasses.replace(desc, **{field: value}).validate()


def test_a_plain_store_of_different_values_into_one_broadcast_element_is_rejected():
    g = cute.Tensor(make_fake_tensor(cute.Float16, 1).engine, Layout((128, (32, 4)), (1, (0, 128))))
    with pytest.raises(TmaError, match=r"covers 32 elements of a stride-0 \(broadcast\) gmem mode that hold different"):
        cpasync.make_tiled_tma_atom(STORE, g, Layout((64, 32), (1, 64)), (64, 32))
    # one smem element for the broadcast elements: every write carries the same value
    cpasync.make_tiled_tma_atom(STORE, g, Layout((64, (32,)), (1, (0,))), (64, 32))


def test_a_swizzled_box_narrower_than_the_swizzle_span_is_rejected():
    # the driver encodes it, but on an H100 the copy faults with an illegal address
    smem = cute.ComposedLayout(cute.Swizzle(2, 2, 3), 0, Layout((16, 8), (8, 1)))  # int32: a 64B swizzle
    with pytest.raises(TmaError, match="32 bytes, narrower than the 64-byte span of the B64 swizzle"):
        atom_of(cute.Int32, (64, 8), (8, 1), smem, (16, 8))
    atom, _ = atom_of(cute.Int32, (64, 16), (16, 1), cute.ComposedLayout(cute.Swizzle(2, 2, 3), 0,
                                                                          Layout((16, 16), (16, 1))), (16, 16))
    assert atom.descriptor.box_dims == (16, 16)


def test_a_tile_walking_past_an_extent_1_mode_keeps_that_mode_as_a_dim():
    # shape (32, 8, 1), tile (32, 8, 2): the second half of the tile is outside the tensor; dropping the
    # extent-1 mode (as CuTe does) would make it store into the first half's elements again
    atom, _ = atom_of(cute.Int8, (32, 8, 1), (1, 32, 256), Layout((32, 8, 2), (1, 32, 256)), (32, 8, 2), STORE)
    assert atom.descriptor.rank == 3 or 1 in atom.descriptor.global_dims


# -- a wider internal type ------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [LOAD, STORE], ids=["load", "store"])
def test_an_internal_type_that_only_partly_covers_the_gmem_rows_is_rejected(op):
    # fp16 rows of 63 elements at a 64-element pitch: moved as 32-bit units, the last unit spans the row end
    g = make_fake_tensor(cute.Float16, (63, 32), (1, 64))
    with pytest.raises(TmaError, match=r"internal type Uint32 is wider than Float16.*contiguous run \(63 elements"):
        cpasync.make_tiled_tma_atom(op, g, Layout((64, 8)), (64, 8), internal_type=cute.Uint32)
