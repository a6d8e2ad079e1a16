"""Shared by the GPU tests of the JIT's TMA copy kernels: torch dtypes, bit views, the CPU reference, tensors
inside buffers of poison bytes."""

import numpy as np
import pytest

import cute_py as cute
from cute_py import reference as ref
from examples import smem_tile_layout
from cute_py.nvgpu import cpasync
from cute_py.runtime import make_fake_tensor


def _has_cuda_device():
    try:
        from cuda.bindings import driver
    except ImportError:
        return False
    try:
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return False
        err, n = driver.cuDeviceGetCount()
        return err == driver.CUresult.CUDA_SUCCESS and n > 0
    except Exception:  # no driver library on this machine
        return False


def hopper_torch():
    """torch, once a Hopper GPU is known to be there; otherwise the test is skipped with the reason (no GPU first:
    the PTX was built and assembled before this is asked)."""
    if not _has_cuda_device():
        pytest.skip("no CUDA GPU: the PTX was built and assembled, the launch needs a GPU")
    torch = pytest.importorskip("torch", reason="the GPU launch uses torch tensors (pip install torch)")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the PTX was built and assembled, the launch needs a GPU")
    major, _ = torch.cuda.get_device_capability()
    if major != 9:
        pytest.skip(f"needs a Hopper (sm_90) GPU, found compute capability {major}.x")
    return torch


def torch_dtype(torch, name):
    return {"Float32": torch.float32, "BFloat16": torch.bfloat16, "Float16": torch.float16, "Int32": torch.int32}[name]


def bits(t):
    """A host numpy view of a torch tensor's bits (bf16 as uint16)."""
    import torch

    t = t.cpu()
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()


def reference_copy(dtype, shape, tile, swizzle, src_bits):
    """The CPU reference of the same copy, from atoms built exactly as the examples build them."""
    dt = cute.dtypes.dtype_of(dtype)
    g = make_fake_tensor(dt, shape, (shape[1], 1))
    smem = smem_tile_layout(dt, tile, swizzle)
    load, load_t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), g, smem, tile)
    store, store_t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), g, smem, tile)
    src = src_bits.reshape(-1).copy()
    dst = np.zeros_like(src)
    ref.run_tma_copy(src, dst, load, load_t, store, store_t, smem, tile)
    return dst.reshape(shape)


POISON = 0x5A


def guarded(torch, shape, dtype, row_pad=0, guard=4096):
    """``(buffer, view)``: a ``shape`` tensor (rows padded by ``row_pad`` elements) inside a buffer of poison
    bytes with ``guard`` poison bytes on both sides."""
    rows, cols = shape
    esize = torch.empty((), dtype=dtype).element_size()
    n = rows * (cols + row_pad) * esize
    buf = torch.full((n + 2 * guard,), POISON, dtype=torch.uint8, device="cuda")
    view = buf[guard:guard + n].view(dtype).view(rows, cols + row_pad)[:, :cols]
    return buf, view


def check_outside(torch, buf, view, guard=4096):
    """Every byte of ``buf`` not under ``view`` is still poison."""
    mask = torch.ones(buf.numel(), dtype=torch.bool, device="cuda")
    esize = view.element_size()
    base = view.data_ptr() - buf.data_ptr()
    rows, cols = view.shape
    idx = (torch.arange(rows, device="cuda")[:, None] * view.stride(0) * esize
           + torch.arange(cols * esize, device="cuda")[None, :]).flatten() + base
    mask[idx] = False
    outside = buf[mask]
    assert bool((outside == POISON).all()), f"{int((outside != POISON).sum())} bytes outside the tensor were written"
