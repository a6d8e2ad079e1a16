"""The CuTe DSL's Ampere ``elementwise_add`` example, written with the DSL's API (tiled copies of a TV layout,
an identity tensor of coordinates, ``elem_less`` predicates in a Boolean ``make_rmem_tensor``, predicated copies
into register fragments, ``frgA.load() + frgB.load()`` as a TensorSSA, ``frgC.store``), on shapes that the tile
does not divide, into guarded buffers; equal to torch's ``a + b`` bit for bit. The PTX is built and assembled
first (everywhere); the launch needs a Hopper GPU and torch."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.atom import CopyUniversalOp  # noqa: E402
from cute_py.compiler import DeviceArraySpec  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu


@cute.kernel
def elementwise_add_kernel(gA, gB, gC, cC, shape, thr_layout, val_layout):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    blk_coord = ((None, None), bidx)
    blkA, blkB, blkC, blkCrd = gA[blk_coord], gB[blk_coord], gC[blk_coord], cC[blk_coord]
    copy_atom_load = cute.make_copy_atom(CopyUniversalOp(), gA.element_type)
    copy_atom_store = cute.make_copy_atom(CopyUniversalOp(), gC.element_type)
    tiled_copy_A = cute.make_tiled_copy_tv(copy_atom_load, thr_layout, val_layout)
    tiled_copy_B = cute.make_tiled_copy_tv(copy_atom_load, thr_layout, val_layout)
    tiled_copy_C = cute.make_tiled_copy_tv(copy_atom_store, thr_layout, val_layout)
    thr_copy_A = tiled_copy_A.get_slice(tidx)
    thr_copy_B = tiled_copy_B.get_slice(tidx)
    thr_copy_C = tiled_copy_C.get_slice(tidx)
    thrA = thr_copy_A.partition_S(blkA)
    thrB = thr_copy_B.partition_S(blkB)
    thrC = thr_copy_C.partition_S(blkC)
    frgA = cute.make_fragment_like(thrA)
    frgB = cute.make_fragment_like(thrB)
    frgC = cute.make_fragment_like(thrC)
    thrCrd = thr_copy_C.partition_S(blkCrd)
    frgPred = cute.make_rmem_tensor(thrCrd.shape, cute.Boolean)
    for i in range(0, cute.size(frgPred), 1):
        val = cute.elem_less(thrCrd[i], shape)
        frgPred[i] = val
    cute.copy(copy_atom_load, thrA, frgA, pred=frgPred)
    cute.copy(copy_atom_load, thrB, frgB, pred=frgPred)
    result = frgA.load() + frgB.load()
    frgC.store(result)
    cute.copy(copy_atom_store, frgC, thrC, pred=frgPred)


@cute.jit
def elementwise_add(mA, mB, mC, copy_bits=128):
    dtype = mA.element_type
    vector_size = copy_bits // dtype.width
    thr_layout = cute.make_ordered_layout((4, 32), order=(1, 0))
    val_layout = cute.make_ordered_layout((4, vector_size), order=(1, 0))
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)
    gA = cute.zipped_divide(mA, tiler_mn)
    gB = cute.zipped_divide(mB, tiler_mn)
    gC = cute.zipped_divide(mC, tiler_mn)
    idC = cute.make_identity_tensor(mC.shape)
    cC = cute.zipped_divide(idC, tiler=tiler_mn)
    elementwise_add_kernel(gA, gB, gC, cC, mC.shape, thr_layout, val_layout).launch(
        grid=[cute.size(gC, mode=[1]), 1, 1], block=[cute.size(tv_layout, mode=[0]), 1, 1])


SHAPES = [(3, 12), (100, 72), (1024, 512), (257, 129)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["Float32", "Float16"])
def test_the_dsl_elementwise_add_runs_as_written(dtype, shape, assemble_ptx):
    c = cute.compile(elementwise_add, *[DeviceArraySpec(dtype, shape)] * 3)
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    t = getattr(torch, dtype.lower())
    a = torch.randn(shape, device="cuda").to(t)
    b = torch.randn(shape, device="cuda").to(t)
    m, n = shape
    guard = 64
    buf = torch.full((m * n + 2 * guard,), 9.0, dtype=t, device="cuda")
    dst = buf[guard:guard + m * n].view(m, n)
    elementwise_add(a, b, dst)
    torch.cuda.synchronize()
    assert torch.equal(dst, a + b)
    assert (buf[:guard] == 9.0).all() and (buf[guard + m * n:] == 9.0).all()
