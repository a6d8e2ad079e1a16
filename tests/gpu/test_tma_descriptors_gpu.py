"""On a GPU: descriptors built by make_tiled_tma_atom are accepted by the driver, and descriptors that
break a rule cute_py enforces are rejected by the driver too."""

import dataclasses

import pytest

import cute_py as cute
from cute_py import Layout
from cute_py.nvgpu import cpasync
from cute_py.nvgpu.tma import TmaDescriptor, TmaSwizzle
from cute_py.runtime import make_fake_tensor
from cute_py.nvgpu.warpgroup.smem import SmemLayoutAtomKind as K

pytestmark = pytest.mark.gpu

LOAD, MCAST = cpasync.CopyBulkTensorTileG2SOp(), cpasync.CopyBulkTensorTileG2SMulticastOp()


def _sw(kind, dtype, shape):
    return cute.tile_to_shape(cute.make_smem_layout_atom(kind, dtype.width), shape)


CONFIGS = [
    ("fp16 K-major no swizzle", cute.Float16, (512, 256), (256, 1), Layout((64, 64), (64, 1)), (64, 64), LOAD, 1),
    ("fp16 K-major 128B", cute.Float16, (512, 256), (256, 1), _sw(K.K_SW128, cute.Float16, (128, 64)), (128, 64), LOAD, 1),
    ("bf16 K-major 64B", cute.BFloat16, (256, 256), (256, 1), _sw(K.K_SW64, cute.BFloat16, (64, 32)), (64, 32), LOAD, 1),
    ("fp32 MN-major 128B", cute.Float32, (256, 128), (1, 256), _sw(K.MN_SW128, cute.Float32, (64, 32)), (64, 32), LOAD, 1),
    ("fp32 K-major 32B", cute.Float32, (128, 64), (64, 1), _sw(K.K_SW32, cute.Float32, (64, 16)), (64, 16), LOAD, 1),
    ("int8 K-major 128B", cute.Int8, (256, 256), (256, 1), _sw(K.K_SW128, cute.Int8, (64, 128)), (64, 128), LOAD, 1),
    ("fp16 multicast x2", cute.Float16, (256, 128), (128, 1), _sw(K.K_SW128, cute.Float16, (64, 64)), (64, 64), MCAST, 2),
    ("fp16 multicast x4", cute.Float16, (256, 128), (128, 1), _sw(K.K_SW128, cute.Float16, (64, 64)), (64, 64), MCAST, 4),
    ("fp32 3-D", cute.Float32, (8, 16, 32), (512, 32, 1), Layout((4, 8, 32), (256, 32, 1)), (4, 8, 32), LOAD, 1),
    ("fp64 partial tiles", cute.Float64, (200, 120), (120, 1), Layout((32, 16), (16, 1)), (32, 16), LOAD, 1),
]


@pytest.fixture(scope="module")
def device_buffer(cuda_context):
    driver, _ = cuda_context
    err, ptr = driver.cuMemAlloc(64 << 20)
    assert err == driver.CUresult.CUDA_SUCCESS
    yield int(ptr)
    driver.cuMemFree(ptr)


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_descriptors_built_by_cute_py_are_accepted_by_the_driver(cfg, device_buffer):
    _, dtype, shape, stride, smem, tiler, op, mc = cfg
    g = make_fake_tensor(dtype, shape, stride, assumed_align=256)
    atom, _ = cpasync.make_tiled_tma_atom(op, g, smem, tiler, mc)
    blob = atom.descriptor.encode(device_buffer)
    assert len(blob) == 128 and any(blob)


def _raw(desc, **change):
    # the same descriptor with one field changed, not validated
    return dataclasses.replace(desc, **change)


BROKEN = [
    ("global stride not a multiple of 16 bytes", dict(global_strides=(520,))),
    ("box dim above 256", dict(box_dims=(64, 512))),
    ("inner box not a multiple of 16 bytes", dict(box_dims=(4, 64))),
    ("inner box wider than the swizzle span", dict(swizzle=TmaSwizzle.B32, box_dims=(64, 64))),
    ("element stride above 8", dict(element_strides=(1, 9))),
]


@pytest.mark.parametrize("change", [b[1] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_the_driver_rejects_what_cute_py_rejects(change, device_buffer):
    from cute_py.nvgpu.tma.desc import TmaEncodeError, encode_tiled

    good = TmaDescriptor(cute.Float16, (256, 512), (512,), (64, 64), (1, 1))
    encode_tiled(good.validate(), device_buffer)
    bad = _raw(good, **change)
    with pytest.raises(cpasync.TmaError):
        bad.validate()
    with pytest.raises(TmaEncodeError, match="cuTensorMapEncodeTiled"):
        encode_tiled(bad, device_buffer)  # straight to the driver, without cute_py's checks
