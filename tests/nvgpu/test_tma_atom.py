"""make_tiled_tma_atom: boxes, descriptors, TMA coordinate tensors, partitions, masks and every validation rule."""

import pytest

import cute_py as cute
from cute_py import Layout, parse_layout as P
from cute_py.nvgpu import cpasync
from cute_py.nvgpu.tma import TmaDescriptor, TmaError, TmaSwizzle
from cute_py.runtime import make_fake_tensor
from cute_py.nvgpu.warpgroup.smem import SmemLayoutAtomKind as K

LOAD = cpasync.CopyBulkTensorTileG2SOp()
MCAST = cpasync.CopyBulkTensorTileG2SMulticastOp()
STORE = cpasync.CopyBulkTensorTileS2GOp()


def atom_of(dtype, shape, stride, smem, tiler, op=LOAD, mc=1, align=16):
    g = make_fake_tensor(dtype, shape, stride, assumed_align=align)
    return cpasync.make_tiled_tma_atom(op, g, smem, tiler, mc)


def sw(kind, bits, shape):
    return cute.tile_to_shape(cute.make_smem_layout_atom(kind, bits), shape)


def test_k_major_fp16_tile_gives_cutes_box_tensor_and_tv_layout():
    atom, tma = atom_of(cute.Float16, (512, 256), (256, 1), Layout((64, 64), (64, 1)), (64, 64))
    d = atom.descriptor
    assert d.global_dims == (256, 512) and d.global_strides == (512,) and d.box_dims == (64, 64)
    assert d.swizzle is TmaSwizzle.NONE and d.rank == 2
    assert str(tma.layout) == "(512,256):(1@1,1@0)"
    assert str(atom.layout_src_tv) == "(1,4096):(0,1)"
    assert tma[(3, 5)] == (5, 3)


def test_swizzled_mn_major_fp32_tile():
    atom, tma = atom_of(cute.Float32, (256, 128), (1, 256), sw(K.MN_SW128, 32, (64, 32)), (64, 32))
    d = atom.descriptor
    assert d.swizzle is TmaSwizzle.B128 and d.box_dims == (32, 8) and d.smem_alignment == 1024
    assert str(tma.layout) == "(256,128):(1@0,1@1)"


def test_five_plus_gmem_modes_fold_to_rank_five():
    atom, _ = atom_of(cute.Float32, (2, 3, 4, 5, 6, 7), None, Layout((2, 3, 4, 5, 6, 7)), (2, 3, 4, 5, 6, 7))
    assert atom.descriptor.rank <= 5
    # the whole tensor is one contiguous run: folded into as few box modes as 256 allows
    assert cute.product(atom.descriptor.box_dims) == 2 * 3 * 4 * 5 * 6 * 7


def test_multicast_splits_the_box_from_the_last_dim():
    atom, _ = atom_of(cute.Float16, (256, 128), (128, 1), sw(K.K_SW128, 16, (64, 64)), (64, 64), MCAST, 4)
    assert atom.descriptor.box_dims == (64, 16)
    assert str(atom.layout_src_tv) == "(1,4096):(0,1)"  # the atom still describes the whole tile


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(dtype=cute.Float16, shape=(512, 300), stride=(300, 1), smem=Layout((64, 64), (64, 1)), tiler=(64, 64)),
         "global stride 1 is 600 bytes; TMA global strides must be multiples of 16 bytes"),
        (dict(dtype=cute.Float16, shape=(512, 256), stride=(256, 1), smem=Layout((64, 64), (1, 64)), tiler=(64, 64)),
         "majorness of the smem tile does not match"),
        (dict(dtype=cute.Float16, shape=(512, 512), stride=(512, 1), smem=Layout((8, 512), (512, 1)), tiler=(8, 512)),
         "box dim 0 is 512"),
        (dict(dtype=cute.Float16, shape=(512, 256), stride=(256, 1),
              smem=cute.composition(cute.Swizzle(1, 3, 3), Layout((64, 64), (64, 1))), tiler=(64, 64)),
         "128 bytes, wider than the 32-byte span"),
        (dict(dtype=cute.Float16, shape=(512, 256), stride=(256, 1), smem=Layout((64, 4), (4, 1)), tiler=(64, 4)),
         "must be a multiple of 16 bytes"),
        (dict(dtype=cute.Float16, shape=(512, 256), stride=(256, 1), smem=Layout((64, 32), (32, 1)), tiler=(64, 64)),
         "same size"),
        (dict(dtype=cute.Float16, shape=(512, 256), stride=(256, 1), smem=Layout((64, 64), (64, 1)), tiler=(64, 64), align=8),
         "16-byte aligned"),
        (dict(dtype=cute.Float16, shape=(256, 128), stride=(128, 1), smem=Layout((64, 64), (64, 1)), tiler=(64, 64),
              op=MCAST, mc=3), "multicast count 3 does not divide"),
        (dict(dtype=cute.Float16, shape=(512, 256), stride=(256, 1), smem=Layout((64, 64), (64, 1)), tiler=(64, 64),
              op=STORE, mc=2), "does not multicast"),
    ],
)
def test_every_rule_has_its_own_error(kwargs, message):
    with pytest.raises(cute.CuteValueError, match=message):
        atom_of(**kwargs)


def test_descriptor_rules_beyond_atom_construction():
    base = dict(dtype=cute.Float16, global_dims=(256, 512), global_strides=(512,), box_dims=(64, 64), element_strides=(1, 1))
    TmaDescriptor(**base).validate()
    bad = [
        (dict(global_dims=(1,) * 6, global_strides=(16,) * 5, box_dims=(8,) * 6, element_strides=(1,) * 6), "rank must be 1..5"),
        (dict(global_dims=(256, 1 << 33)), r"global dim 1 is 8589934592; TMA global dims must be in 1..2\^32"),
        (dict(global_strides=(1 << 41,)), r"must be in \(0, 2\^40\)"),
        (dict(element_strides=(1, 9)), "element stride 1 is 9"),
        (dict(box_dims=(0, 64)), "box dim 0 is 0"),
        (dict(swizzle=TmaSwizzle.B64, box_dims=(64, 8)), "wider than the 64-byte span"),
        (dict(global_address=0x1004), "16-byte aligned"),
    ]
    for change, msg in bad:
        with pytest.raises(TmaError, match=msg):
            TmaDescriptor(**{**base, **change}).validate()


def test_swizzles_that_are_not_tma_swizzles_are_rejected():
    smem = cute.composition(cute.Swizzle(3, 2, 3), Layout((8, 64), (64, 1)))  # fp16 units: base 2 = 4 bytes
    with pytest.raises(TmaError, match="TMA supports only"):
        atom_of(cute.Float16, (512, 256), (256, 1), smem, (8, 64))


def test_tma_partition_groups_tma_mode_and_iterations():
    smem = sw(K.K_SW128, 16, (128, 64))
    atom, tma = atom_of(cute.Float16, (512, 256), (256, 1), smem, (128, 64))
    gA = cute.local_tile(tma, (128, 64), (1, 2))
    sA = cute.make_tensor(cute.make_ptr(cute.Float16, None, cute.AddressSpace.smem, 1024), smem)
    tAsA, tAgA = cpasync.tma_partition(atom, 0, Layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
    assert cute.size(tAgA.layout.shape[0]) == 128 * 64
    assert tAgA[((0, 0),)] == (128, 128)  # TMA coordinates (inner, outer) of the tile's first element
    # a tile less aligned than its swizzle's repeat: make_tensor refuses it, and so does the partition of a tensor
    # built around that check
    low = cute.make_ptr(cute.Float16, None, cute.AddressSpace.smem, 128)
    with pytest.raises(cute.CuteValueError, match="1024-byte aligned"):
        cute.make_tensor(low, smem)
    from cute_py.tensor.tensor import Tensor

    with pytest.raises(TmaError, match="1024-byte aligned"):
        cpasync.tma_partition(atom, 0, Layout(1), cute.group_modes(Tensor(low, smem), 0, 2),
                              cute.group_modes(gA, 0, 2))


def test_multicast_masks():
    vmnk = Layout((1, 2, 2, 1))  # (V, M, N, K) cluster 2x2
    # CTAs that share this CTA's N coordinate differ along M: mode 1
    assert cpasync.create_tma_multicast_mask(vmnk, (0, 1, 0, 0), 1) == 0b0011
    assert cpasync.create_tma_multicast_mask(vmnk, (0, 0, 1, 0), 1) == 0b1100
    assert cpasync.create_tma_multicast_mask(vmnk, (0, 1, 1, 0), 2) == 0b1010
    assert cpasync.create_tma_multicast_mask(vmnk, (0, 0, 0, 0), (1, 2)) == 0b1111
    with pytest.raises(cute.CuteValueError, match="not a mode"):
        cpasync.create_tma_multicast_mask(vmnk, (0, 0, 0, 0), 7)


def test_cp_async_op_rules():
    ca = cpasync.CopyG2SOp()
    cg = cpasync.CopyG2SOp(cpasync.LoadCacheMode.GLOBAL)
    for bits in (32, 64, 128):
        cute.make_copy_atom(ca, cute.Float16, bits)
    cute.make_copy_atom(cg, cute.Float16, 128)
    with pytest.raises(cute.CuteValueError, match=r"cp.async.cg copies 16 bytes only, not 4"):
        cute.make_copy_atom(cg, cute.Float32, 32)
    with pytest.raises(cute.CuteValueError, match="4, 8 or 16 bytes"):
        cute.make_copy_atom(ca, cute.Float16, 16)
    with pytest.raises(cute.CuteValueError, match="STREAMING"):
        cpasync.CopyG2SOp(cpasync.LoadCacheMode.STREAMING)


def test_device_operations_validate_then_need_a_kernel():
    from cute_py.nvgpu.forms import DeviceOnlyError

    smem = cute.make_ptr(cute.Float16, None, cute.AddressSpace.smem, 16)
    gmem = cute.make_ptr(cute.Float16, None, cute.AddressSpace.gmem, 16)
    with pytest.raises(cute.CuteValueError, match=r"cp.async.cg copies 16 bytes only, not 8"):
        cpasync.cp_async_shared_global(smem, gmem, 8, cpasync.LoadCacheMode.GLOBAL)
    with pytest.raises(cute.CuteValueError, match="must point to smem"):
        cpasync.cp_async_shared_global(gmem, gmem, 16, cpasync.LoadCacheMode.GLOBAL)
    with pytest.raises(cute.CuteValueError, match="0..63"):
        cpasync.tma_store_wait(64)
    with pytest.raises(cute.CuteValueError, match="1..5 entries"):
        cpasync.tma_store(None, smem, (0,) * 6)
    with pytest.raises(DeviceOnlyError, match="inside a kernel"):
        cpasync.tma_store_arrive()
    assert cpasync.BYTES_PER_TENSORMAP == 128 and cpasync.BYTES_PER_POINTER == 8
