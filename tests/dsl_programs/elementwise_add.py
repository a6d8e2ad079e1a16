"""Elementwise addition as the CuTe DSL's Ampere example writes it: a TV layout of 128 threads, tiled copies of
``CopyUniversalOp`` atoms, an identity tensor and ``elem_less`` predicates for the partial tiles, register
fragments, a TensorSSA addition; compiled with ``cute.compile``, timed with ``testing.benchmark``."""

from typing import Type

import cute_py as cutlass
import cute_py as cute
import cute_py.testing as testing
from cute_py.runtime import from_dlpack


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, cC: cute.Tensor, shape: cute.Shape,
               thr_layout: cute.Layout, val_layout: cute.Layout):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()

    tile = ((None, None), bidx)
    tA, tB, tC, tCrd = gA[tile], gB[tile], gC[tile], cC[tile]
    print(f"per block: {tA.type} {tCrd.type}")

    load = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gA.element_type)
    store = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gC.element_type)
    thr_load = cute.make_tiled_copy_tv(load, thr_layout, val_layout).get_slice(tidx)
    thr_store = cute.make_tiled_copy_tv(store, thr_layout, val_layout).get_slice(tidx)

    srcA = thr_load.partition_S(tA)
    srcB = thr_load.partition_S(tB)
    dstC = thr_store.partition_D(tC)
    rA = cute.make_fragment_like(srcA)
    rB = cute.make_fragment_like(srcB)
    rC = cute.make_fragment_like(dstC)

    crd = thr_store.partition_S(tCrd)
    pred = cute.make_rmem_tensor(crd.shape, cutlass.Boolean)
    for i in range(cute.size(pred)):
        pred[i] = cute.elem_less(crd[i], shape)

    cute.copy(load, srcA, rA, pred=pred)
    cute.copy(load, srcB, rB, pred=pred)
    rC.store(rA.load() + rB.load())
    cute.copy(store, rC, dstC, pred=pred)


@cute.jit
def elementwise_add(mA, mB, mC, copy_bits: cutlass.Constexpr = 128):
    vec = copy_bits // mA.element_type.width
    thr_layout = cute.make_ordered_layout((4, 32), order=(1, 0))
    val_layout = cute.make_ordered_layout((4, vec), order=(1, 0))
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)
    print(f"inputs {mA.type}, tiler {tiler_mn}, tv layout {tv_layout}")

    gA = cute.zipped_divide(mA, tiler_mn)
    gB = cute.zipped_divide(mB, tiler_mn)
    gC = cute.zipped_divide(mC, tiler_mn)
    cC = cute.zipped_divide(cute.make_identity_tensor(mC.shape), tiler=tiler_mn)

    add_kernel.set_name_prefix("dsl_program_elementwise_add")
    add_kernel(gA, gB, gC, cC, mC.shape, thr_layout, val_layout).launch(
        grid=[cute.size(gC, mode=[1]), 1, 1], block=[cute.size(tv_layout, mode=[0]), 1, 1])


def run(M: int, N: int, dtype: Type[cutlass.Numeric], wrap: bool = True, benchmark: bool = False):
    """Add two random ``M x N`` tensors on the GPU; return ``(a, b, c)`` (torch) and the time in us or None."""
    import torch
    import cute_py.torch as cutlass_torch

    torch_dtype = cutlass_torch.dtype(dtype)
    if dtype.is_integer:
        a = torch.randint(0, 10, (M, N), device="cuda", dtype=torch_dtype)
        b = torch.randint(0, 10, (M, N), device="cuda", dtype=torch_dtype)
    else:
        a = torch.randn(M, N, device="cuda", dtype=torch_dtype)
        b = torch.randn(M, N, device="cuda", dtype=torch_dtype)
    c = torch.zeros_like(a)
    # as the DSL's example: shapes and strides are run-time values, one compile serves every M x N
    args = tuple(from_dlpack(x).mark_layout_dynamic() for x in (a, b, c)) if wrap else (a, b, c)
    elementwise_add.set_name_prefix("host")
    compiled = cute.compile(elementwise_add, *args, options="--generate-line-info")
    compiled(*args)
    torch.cuda.synchronize()
    if not benchmark:
        return (a, b, c), None

    def workspace():
        x = torch.randn(M, N, device="cuda", dtype=torch_dtype)
        y = torch.randn(M, N, device="cuda", dtype=torch_dtype)
        return testing.JitArguments(*(from_dlpack(t).mark_layout_dynamic() for t in (x, y, torch.zeros_like(x))))

    us = testing.benchmark(compiled, workspace_generator=workspace, workspace_count=4, warmup_iterations=2,
                           iterations=20, stream=cutlass_torch.current_stream())
    return (a, b, c), us
