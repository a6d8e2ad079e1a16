"""A hand-built kernel (TMA load -> mbarrier wait -> TMA store) copies a 2-D fp32 tensor on a Hopper GPU.

The PTX is built, checked and assembled everywhere; the launch needs a CUDA device (sm_90)
and is skipped, with the reason, without one.
"""

import ctypes

import pytest

pytest.importorskip("mlir_dialects._backend", reason="needs the MLIR Python bindings (pip install numba-cuda-mlir==0.6.0)")
np = pytest.importorskip("numpy", reason="the GPU comparison uses numpy")

import mlir_dialects as md  # noqa: E402

ROWS, COLS = 256, 128  # the tensor, row-major fp32
BOX_ROWS, BOX_COLS = 64, 32  # one tile per CTA


def _ptx():
    from mlir_dialects.sample import sample_context

    ctx, loc = sample_context()
    with ctx, loc:
        return md.to_ptx(md.build_tma_copy_module(BOX_ROWS, BOX_COLS))


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError as e:
        pytest.skip(f"cuda-python's driver API is not installed: {e}")
    try:
        err, = driver.cuInit(0)
    except Exception as e:  # no libcuda.so at all
        pytest.skip(f"no CUDA driver: {e}")
    if err != driver.CUresult.CUDA_SUCCESS:
        pytest.skip(f"no CUDA driver/device: cuInit returned {err}")
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        pytest.skip("no CUDA device")
    err, dev = driver.cuDeviceGet(0)
    err, major = driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    if major != 9:
        pytest.skip(f"needs a Hopper (sm_90) GPU, found compute capability {major}.x")
    return driver, dev


def _ok(result):
    err, *rest = result if isinstance(result, tuple) else (result,)
    from cuda.bindings import driver

    assert err == driver.CUresult.CUDA_SUCCESS, f"CUDA driver call failed: {err}"
    return rest[0] if len(rest) == 1 else rest


def test_tma_copy_ptx_is_built_and_assembles(filecheck, assemble):
    ptx = _ptx()
    filecheck(ptx, [
        "CHECK: .entry tma_copy(",
        "CHECK: mbarrier.init.shared{{(::cta)?}}.b64",
        "CHECK: mbarrier.arrive.expect_tx.shared{{(::cta)?}}.b64",
        "CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "CHECK: mbarrier.try_wait.parity.shared{{(::cta)?}}.b64",
        "CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
        "CHECK: cp.async.bulk.commit_group;",
        "CHECK: cp.async.bulk.wait_group 0;",
    ])
    assemble(ptx)


@pytest.mark.gpu
def test_tma_load_mbarrier_tma_store_copies_a_tensor_on_the_gpu(assemble):
    cubin = assemble(_ptx())
    driver, dev = _driver()
    ctx = _ok(driver.cuDevicePrimaryCtxRetain(dev))
    _ok(driver.cuCtxSetCurrent(ctx))
    try:
        name = _ok(driver.cuDeviceGetName(64, dev))
        print(f"device: {name.decode(errors='replace').rstrip(chr(0))}")
        module = _ok(driver.cuModuleLoadData(cubin))
        kernel = _ok(driver.cuModuleGetFunction(module, b"tma_copy"))

        src = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) * 0.5 - 7.0
        dst = np.full_like(src, -1.0)
        nbytes = src.nbytes
        d_src, d_dst = _ok(driver.cuMemAlloc(nbytes)), _ok(driver.cuMemAlloc(nbytes))
        _ok(driver.cuMemcpyHtoD(d_src, src.ctypes.data, nbytes))
        _ok(driver.cuMemcpyHtoD(d_dst, dst.ctypes.data, nbytes))

        def tensor_map(ptr):
            f32 = driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32
            u32, u64 = driver.cuuint32_t, driver.cuuint64_t
            return _ok(driver.cuTensorMapEncodeTiled(
                f32, u32(2), ptr, [u64(COLS), u64(ROWS)], [u64(COLS * 4)], [u32(BOX_COLS), u32(BOX_ROWS)],
                [u32(1), u32(1)],
                driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
                driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
                driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
                driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))

        map_in, map_out = tensor_map(d_src), tensor_map(d_dst)
        params = (ctypes.c_void_p * 2)(map_in.getPtr(), map_out.getPtr())
        grid = (COLS // BOX_COLS, ROWS // BOX_ROWS, 1)
        _ok(driver.cuLaunchKernel(kernel, *grid, 1, 1, 1, 0, 0, ctypes.addressof(params), 0))
        _ok(driver.cuCtxSynchronize())
        _ok(driver.cuMemcpyDtoH(dst.ctypes.data, d_dst, nbytes))
        np.testing.assert_array_equal(dst, src)
        _ok(driver.cuMemFree(d_src))
        _ok(driver.cuMemFree(d_dst))
        _ok(driver.cuModuleUnload(module))
    finally:
        driver.cuDevicePrimaryCtxRelease(dev)
