"""``cute_py.utils.tensor_helpers``: which types DLPack cannot carry, and the tensors made for them (float8 values
converted from fp32 into byte storage; TFloat32 read from float32 storage)."""

import pytest

import cute_py as cute
from cute_py.utils.tensor_helpers import create_cute_tensor_for_fp8, is_fp8_dtype


def test_only_the_float8_types_need_byte_storage():
    assert is_fp8_dtype(cute.Float8E4M3FN) and is_fp8_dtype(cute.Float8E5M2)
    for t in (cute.Float16, cute.BFloat16, cute.TFloat32, cute.Float32, cute.Int8, cute.Uint8):
        assert not is_fp8_dtype(t)


def test_a_float8_tensor_without_its_fp32_values_is_refused():
    torch = pytest.importorskip("torch")
    with pytest.raises(cute.CuteValueError, match="Float8E5M2 tensor needs source_f32_tensor"):
        create_cute_tensor_for_fp8(torch.zeros(4, 8, dtype=torch.uint8), cute.Float8E5M2, 1)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["Float8E4M3FN", "Float8E5M2"])
def test_float8_values_land_in_the_byte_storage_as_torch_rounds_them(dtype):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU: the conversion runs on the device")
    tdt = {"Float8E4M3FN": torch.float8_e4m3fn, "Float8E5M2": torch.float8_e5m2}[dtype]
    src = torch.randn(16, 24, device="cuda") * 8
    storage = torch.full((16, 24), 0xA5, dtype=torch.uint8, device="cuda")  # poisoned bytes
    t = create_cute_tensor_for_fp8(storage, getattr(cute, dtype), 1, src)
    assert t.element_type == getattr(cute, dtype)  # its layout is dynamic: the shape is known at each call
    assert torch.equal(storage, src.to(tdt).view(torch.uint8))  # every byte as torch's own conversion
    again = torch.full((16, 24), 0xA5, dtype=torch.uint8, device="cuda")
    s = create_cute_tensor_for_fp8(again, getattr(cute, dtype), 1, src, mark_dynamic_layout=False)
    assert tuple(s.shape) == (16, 24) and torch.equal(again, storage)


@pytest.mark.gpu
def test_tfloat32_reads_float32_storage():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU: the tensor is a device tensor")
    t = create_cute_tensor_for_fp8(torch.ones(8, 4, device="cuda"), cute.TFloat32, 1)
    assert t.element_type == cute.TFloat32
    assert create_cute_tensor_for_fp8(torch.ones(8, 4, device="cuda"), cute.Float32, 1).element_type == cute.Float32
