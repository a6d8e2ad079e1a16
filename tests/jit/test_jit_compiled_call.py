"""``Compiled.__call__`` with a stand-in driver: the prepared launch, parameter refills only on change, errors."""

import pytest

import cute_py as cute
from cute_py.compiler.runtime import launch as L
from cute_py.compiler import ArgumentError
from cute_py.compiler.runtime.compiled import CallState, Compiled, SpecMismatch
from examples import tma_copy, tma_copy_pipelined


class _Result:
    CUDA_SUCCESS = 0


class FakeDriver:
    CUresult = _Result
    CUstream = int  # the driver binding's stream handle type (its CUstream(0) is the legacy default stream)

    def __init__(self, err=0):
        self.calls, self.err = [], err

    def cuLaunchKernel(self, *args):
        self.calls.append(args)
        return (self.err,)

    def cuLaunchKernelEx(self, *args):
        self.calls.append(args)
        return (self.err,)

    def cuCtxGetCurrent(self):
        return (0, 7)

    def cuGetErrorName(self, err):
        return (0, b"CUDA_ERROR_INVALID_VALUE")


@pytest.fixture
def fake_driver(monkeypatch):
    d = FakeDriver()
    monkeypatch.setitem(L._STATE, "driver", d)
    monkeypatch.setattr(L, "load_module", lambda cubin, kernels, *rest: (None, {name: f"F:{name}" for name in kernels}))
    for jf in (tma_copy, tma_copy_pipelined):  # compiled objects bound to this driver only
        monkeypatch.setattr(jf, "_compiled", {})
    return d


@pytest.fixture
def encodes(monkeypatch):
    seen = []

    def fake_encode(self, desc, address, env=None):
        seen.append(address)
        return bytes([len(seen)]) * 128

    monkeypatch.setattr(cute.compiler.Compiled, "_descriptor", fake_encode)
    return seen


def test_the_launch_is_prepared_once_and_parameters_refilled_only_on_change(fake_driver, encodes):
    a = cute.compiler.DeviceArraySpec("Float32", (256, 512), address=1 << 24)
    b = cute.compiler.DeviceArraySpec("Float32", (256, 512), address=1 << 25)
    c = cute.compile(tma_copy, a, b, (128, 64), "none")
    c(a, b)
    assert encodes == [1 << 24, 1 << 25]
    func, gx, gy, gz, bx, by, bz, smem, stream, params, extra = fake_driver.calls[0]
    # grid x: the 8 tile columns, y: the 2 tile rows (row-major rasterisation)
    assert (func, gx, gy, gz, bx, by, bz, smem, stream, extra) == ("F:tma_copy_kernel_0", 8, 2, 1, 32, 1, 1,
                                                                    128 * 64 * 4 + 8, 0, 0)
    assert params == c._blocks[0].address
    c(a, b, stream=7)  # the same buffers: no re-encoding
    assert encodes == [1 << 24, 1 << 25] and fake_driver.calls[1][8] == 7
    c(b, a)  # new addresses: both descriptors re-encoded (into the same parameter array)
    assert encodes == [1 << 24, 1 << 25, 1 << 25, 1 << 24]
    assert fake_driver.calls[2][9] == params
    assert bytes(c._blocks[0].slots[0]) == bytes([3]) * 128
    assert len(fake_driver.calls) == 3


def test_trailing_statics_may_be_left_out_and_argument_counts_are_checked(fake_driver, encodes):
    a = cute.compiler.DeviceArraySpec("Float32", (2048, 2048))
    c = cute.compile(tma_copy_pipelined, a, a, (64, 128), "none", 4, 1, None, 40)
    c(a, a)
    assert fake_driver.calls[-1][1:4] == (40, 1, 1)
    with pytest.raises(cute.compiler.ArgumentError, match="compiled for 8 arguments"):
        c(a)
    with pytest.raises(cute.compiler.ArgumentError, match="compiled for 8 arguments"):
        c(a, a, (64, 128), "none", 4, 1, None, 40, 0)  # one too many


def test_a_different_shape_is_a_spec_mismatch(fake_driver, encodes):
    a = cute.compiler.DeviceArraySpec("Float32", (256, 512))
    c = cute.compile(tma_copy, a, a, (128, 64), "none")
    with pytest.raises(SpecMismatch, match="argument 1"):
        c(a, cute.compiler.DeviceArraySpec("Float32", (256, 256)))
    assert fake_driver.calls == []


def test_a_failed_launch_raises_a_launch_error(fake_driver, encodes):
    fake_driver.err = 1
    a = cute.compiler.DeviceArraySpec("Float32", (256, 512))
    c = cute.compile(tma_copy, a, a, (128, 64), "none")
    with pytest.raises(cute.compiler.LaunchError, match="CUDA_ERROR_INVALID_VALUE"):
        c(a, a)


def test_cluster_launches_go_through_launch_kernel_ex(fake_driver, encodes, monkeypatch):
    seen = []
    monkeypatch.setattr(L, "launch", lambda *args, cooperative=False: seen.append(args + (cooperative,)))
    a = cute.compiler.DeviceArraySpec("BFloat16", (256, 512))
    c = cute.compile(tma_copy, a, a, (128, 64), "128B", (2, 1, 1))
    c(a, a)
    func, grid, block, cluster, smem, stream, params, cooperative = seen[0]
    assert cooperative is False
    assert (func, grid, block, cluster, stream) == ("F:tma_copy_kernel_0", (8, 2, 1), (32, 1, 1), (2, 1, 1), 0)
    assert params.address == c._blocks[0].address
    assert fake_driver.calls == []


class FakeTorchTensor:
    """Enough of a CUDA torch tensor for ``Compiled``'s fast path (module name starting with 'torch')."""

    def __init__(self, ptr, shape=(256, 512), dtype="float32", cuda=True, strides=None):
        self.ptr, self.shape, self.dtype, self.is_cuda = ptr, shape, dtype, cuda
        self.device = "cuda:0" if cuda else "cpu"
        self.strides = (shape[1], 1) if strides is None else strides

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return self.strides

    def is_contiguous(self):
        return self.strides == (self.shape[1], 1)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": "<f4", "data": (self.ptr, False), "strides": None, "version": 3}


FakeTorchTensor.__module__ = "torch.fake"


def test_the_torch_fast_path_reads_addresses_in_argument_order(fake_driver, encodes, monkeypatch):
    import cute_py.compiler.specs.args as args_mod

    monkeypatch.setattr(args_mod, "_is_torch", lambda x: False)  # specs through __cuda_array_interface__
    a = cute.compiler.DeviceArraySpec("Float32", (256, 512), address=1 << 24)
    c = cute.compile(tma_copy, a, a, (128, 64), "none")
    t1, t2 = FakeTorchTensor(1 << 26), FakeTorchTensor(1 << 27)
    c(a, t2)  # only argument 1 is a torch tensor: no fast path yet
    assert c._fast_pointers((t1, t2)) is None
    c(t1, t2)
    assert c._fast_pointers((t1, t2)) == (1 << 26, 1 << 27)
    assert encodes[-2:] == [1 << 26, 1 << 27]
    n = len(encodes)
    c(t1, t2)  # unchanged: nothing re-encoded
    assert len(encodes) == n
    c(t2, t1)  # swapped: both re-encoded, in argument order
    assert encodes[-2:] == [1 << 27, 1 << 26]
    assert c._fast_pointers((FakeTorchTensor(1 << 26, shape=(256, 256)), t2)) is None  # another shape
    assert c._fast_pointers((FakeTorchTensor(1 << 26, cuda=False), t2)) is None        # not on the GPU
    assert c._fast_pointers((FakeTorchTensor((1 << 26) + 4), t2)) is None              # misaligned
    assert c._fast_pointers((FakeTorchTensor(1 << 26, strides=(1, 256)), t2)) is None  # same shape, not row-major
    with pytest.raises(SpecMismatch):
        c(FakeTorchTensor(1 << 26, shape=(256, 256)), t2)


def test_the_generated_launch_path_checks_like_the_general_one(fake_driver, encodes, monkeypatch):
    import cute_py.compiler.specs.args as args_mod

    monkeypatch.setattr(args_mod, "_is_torch", lambda x: False)
    a = cute.compiler.DeviceArraySpec("Float32", (256, 512), address=1 << 24)
    c = cute.compile(tma_copy, a, a, (128, 64), "none")
    t1, t2 = FakeTorchTensor(1 << 26), FakeTorchTensor(1 << 27)
    c(t1, t2)
    c(t1, t2)
    assert callable(c._fast_call) and c._state is CallState.FAST and type(c) is Compiled
    general = c._fast_pointers
    monkeypatch.setattr(c, "_fast_pointers", lambda args: pytest.fail("the general path ran"))
    n = len(encodes)
    c(t2, t1)  # new addresses through the generated path: both descriptors re-encoded, in argument order
    assert encodes[n:] == [1 << 27, 1 << 26]
    seen = []
    monkeypatch.setattr(c, "_fast_pointers", lambda args: seen.append(args) or general(args))
    for bad in (FakeTorchTensor(1 << 26, shape=(256, 256)), FakeTorchTensor((1 << 26) + 4)):
        with pytest.raises(SpecMismatch):  # declined by the generated path, rejected by the general one
            c(bad, t2)
    assert len(seen) == 2
    with pytest.raises(ArgumentError, match="arguments"):
        c(t1)
    # the argument count as the general path takes it: trailing static arguments may be given, more is an error
    monkeypatch.setattr(c, "_fast_pointers", lambda args: pytest.fail("the general path ran"))
    n = len(fake_driver.calls)
    c(t1, t2, (128, 64), "none")
    c(t1, t2, (128, 64))
    assert len(fake_driver.calls) == n + 2
    with pytest.raises(ArgumentError, match=r"compiled for 4 arguments .*got 5"):
        c(t1, t2, (128, 64), "none", 0)
    with pytest.raises(TypeError):
        c(t1, t2, tile=(128, 64))  # parameters are positional, as in the general path
    # the stream: the legacy default stream's handle when none or None is given; a handle goes to the driver
    for given, expect in (({}, 0), ({"stream": None}, 0), ({"stream": 7}, 7)):
        c(t1, t2, **given)
        assert fake_driver.calls[-1][8] == expect, given


class _NoDriverLibrary(FakeDriver):
    def cuInit(self, flags):
        raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search')


def test_without_a_driver_library_asking_the_device_is_a_launch_error(monkeypatch):
    # cuda-python imports without the driver and fails on its first call: a LaunchError saying so, which the
    # examples' SM count (persistent grids) takes as "no device" and answers with its default
    from examples import tma_tiled

    monkeypatch.setitem(L._STATE, "driver", _NoDriverLibrary())
    with pytest.raises(cute.compiler.LaunchError, match=r"cuInit failed: no NVIDIA driver library could be loaded"):
        L.sm_count()
    assert tma_tiled.sm_count() == tma_tiled.DEFAULT_SMS
