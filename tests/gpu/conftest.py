"""GPU fixtures: a CUDA context through cuda-python, or a skip that says why there is none."""

import pytest


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            from cuda import cuda as driver
        except ImportError as e:
            pytest.skip(f"cuda-python is not installed ({e})")
    return driver


@pytest.fixture(scope="session")
def cuda_context():
    """(driver module, context) on device 0; skips when there is no CUDA driver or device."""
    driver = _driver()
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:  # the driver library itself is missing
        pytest.skip(f"no CUDA driver: {e}")
    if err != driver.CUresult.CUDA_SUCCESS:
        pytest.skip(f"no CUDA driver/device: cuInit returned {err}")
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        pytest.skip("no CUDA device")
    err, dev = driver.cuDeviceGet(0)
    err, ctx = driver.cuDevicePrimaryCtxRetain(dev)
    (err,) = driver.cuCtxSetCurrent(ctx)
    yield driver, ctx
    driver.cuDevicePrimaryCtxRelease(dev)
