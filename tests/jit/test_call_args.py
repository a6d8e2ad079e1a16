"""Device arrays from other producers: a ``__cuda_array_interface__`` dict or a DLPack export of any form gives a
correct spec or a CuteError, never a KeyError, TypeError or IndexError of the parsing (hypothesis over malformed
dicts and DLPack-ish objects, against an oracle of the interface's rules); numpy integers are integers."""

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py.compiler.specs.args import array_spec
from cute_py.errors import CuteError
from examples import tma_copy
from _fake_device import FakeCudaArray, _DLManaged, _new_capsule
from _recording_driver import driver  # noqa: F401 (the fixture)

_ITEM = {"<f4": ("Float32", 4), "<f2": ("Float16", 2), "<i8": ("Int64", 8), "|u1": ("Uint8", 1)}


class Producer:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


def _integer(v):
    return (type(v) is int or isinstance(v, np.integer)) and not isinstance(v, (bool, np.bool_))


def _oracle(cai):
    """``((dtype, shape, strides, alignment), address)`` by the interface's rules, or ``None`` for a refusal."""
    if not isinstance(cai, dict) or not {"typestr", "shape", "data"} <= cai.keys():
        return None
    if cai.get("mask") is not None or cai["typestr"] not in _ITEM or not isinstance(cai["typestr"], str):
        return None
    name, size = _ITEM[cai["typestr"]]
    shape = cai["shape"]
    if not isinstance(shape, (tuple, list)) or not all(_integer(s) and s >= 0 for s in shape):
        return None
    shape = tuple(int(s) for s in shape)
    strides = cai.get("strides")
    if strides is None:
        strides = tuple(int(np.prod(shape[k + 1:], dtype=object)) if k + 1 < len(shape) else 1
                        for k in range(len(shape)))
    else:
        if not isinstance(strides, (tuple, list)) or len(strides) != len(shape) or \
                not all(_integer(s) and int(s) % size == 0 for s in strides):
            return None
        strides = tuple(int(s) // size for s in strides)
    data = cai["data"]
    if not isinstance(data, (tuple, list)) or len(data) != 2 or not _integer(data[0]) or \
            not 0 < int(data[0]) < 2**64:
        return None
    ptr = int(data[0])
    return (name, shape, strides, min(256, ptr & -ptr)), ptr


_INTS = st.one_of(st.integers(0, 64), st.integers(0, 64).map(np.int64), st.integers(0, 64).map(np.uint32))
_ODD = st.sampled_from([None, "4", 2.0, -1, True, (), [1], object(), np.float32(2)])


@st.composite
def _cai(draw):
    cai = {"typestr": draw(st.sampled_from(list(_ITEM) + ["<f4"] * 3 + [">f4", "<c8", 4, None])),
           "version": 3}
    rank = draw(st.integers(0, 3))
    shape = [draw(_INTS) for _ in range(rank)]
    if draw(st.integers(0, 4)) == 0:
        shape = draw(_ODD) if draw(st.booleans()) else shape + [draw(_ODD)]
    cai["shape"] = tuple(shape) if isinstance(shape, list) and draw(st.booleans()) else shape
    if draw(st.booleans()):
        size = _ITEM.get(cai["typestr"], ("", 4))[1] if isinstance(cai["typestr"], str) else 4
        n = rank + draw(st.sampled_from([0, 0, 0, 1, -1])) if isinstance(shape, list) else rank
        strides = [draw(_INTS) * size + draw(st.sampled_from([0, 0, 0, 1])) for _ in range(max(n, 0))]
        if draw(st.integers(0, 4)) == 0:
            strides.append(draw(_ODD))
        cai["strides"] = tuple(strides)
    else:
        cai["strides"] = draw(st.sampled_from([None, None, "C"]))
    address = draw(st.one_of(st.integers(1, 2**40).map(lambda a: a * 256), st.integers(-2**64, 2**65),
                             st.integers(1, 2**40).map(np.uint64), st.floats(), st.none(), st.text(max_size=2)))
    cai["data"] = draw(st.sampled_from(["pair", "pair", "pair", "single", "list", "bare"]))
    cai["data"] = {"pair": (address, False), "single": (address,), "list": [address, True], "bare": address}[cai["data"]]
    if draw(st.integers(0, 5)) == 0:
        cai["mask"] = draw(st.sampled_from([None, Producer({})]))
    for key in ("typestr", "shape", "data"):
        if draw(st.integers(0, 12)) == 0:
            del cai[key]
    return cai if draw(st.integers(0, 30)) else draw(st.sampled_from([None, [], "cai", (1, 2)]))


@settings(max_examples=600, deadline=None)
@given(cai=_cai())
def test_any_cuda_array_interface_gives_its_spec_or_a_cute_error(cai):
    expect = _oracle(cai)
    if expect is None:
        with pytest.raises(CuteError):
            array_spec(Producer(cai))
    else:
        spec, ptr = array_spec(Producer(cai))
        assert (tuple(spec), ptr) == expect
        assert all(type(v) is int for v in spec[1] + spec[2]) and type(ptr) is int


def test_a_masked_array_is_refused():
    cai = {"typestr": "<f4", "shape": (4,), "data": (1 << 20, False), "version": 3, "mask": Producer({})}
    with pytest.raises(cute.compiler.ArgumentError, match="mask"):
        array_spec(Producer(cai))


# -- DLPack-ish producers ------------------------------------------------------------------------------------

class Odd(FakeCudaArray):
    """A ``FakeCudaArray`` whose export is altered: ``device`` what ``__dlpack_device__`` returns (or raises),
    ``export`` what ``__dlpack__`` returns (or raises), ``ndim``/``null_shape`` a corrupt DLTensor."""

    def __init__(self, device=(2, 0), export="capsule", ndim=None, null_shape=False, dev_type=2, data=None):
        super().__init__("float32", (16, 8), address=1 << 32 if data is None else data)
        self.device_answer, self.export, self.null_shape = device, export, null_shape
        t = self._managed.dl_tensor
        if ndim is not None:
            t.ndim = ndim
        if null_shape:
            t.shape = ctypes.cast(None, type(t.shape))
        t.device.device_type = dev_type

    def __dlpack_device__(self):
        if isinstance(self.device_answer, Exception):
            raise self.device_answer
        return self.device_answer

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        if isinstance(self.export, Exception):
            raise self.export
        if self.export == "capsule":
            return _new_capsule(ctypes.addressof(self._managed), b"dltensor", None)
        return self.export


_DLPACK = st.builds(
    Odd, device=st.sampled_from([(2, 0), (2, 0), None, ("cuda", 0), (2,), 5, RuntimeError("no device"), (1, 0),
                                 (np.int32(2), 0), (True, 0)]),
    export=st.sampled_from(["capsule", "capsule", 5, None, BufferError("no export"), ValueError("x")]),
    ndim=st.sampled_from([None, None, -1, 0, 1, 2, 65, 2**30]), null_shape=st.booleans(),
    dev_type=st.sampled_from([2, 2, 13, 1, 7]), data=st.sampled_from([None, None, 0, 4]))


@settings(max_examples=300, deadline=None)
@given(x=_DLPACK)
def test_any_dlpack_producer_gives_its_spec_or_a_cute_error(x):
    t = x._managed.dl_tensor
    device = x.device_answer
    sane = x.export == "capsule" and type(device) is tuple and len(device) == 2 and \
        type(device[0]) in (int, np.int32) and device[0] == t.device.device_type and t.device.device_type in (2, 13) \
        and 0 <= t.ndim <= 2 and not (t.ndim and x.null_shape) and (t.data or 0) != 0
    if not sane:
        with pytest.raises(CuteError):
            array_spec(x)
        return
    spec, ptr = array_spec(x)
    shape = (16, 8)[:t.ndim]
    strides = (8, 1)[:t.ndim]
    assert tuple(spec[:3]) == ("Float32", shape, strides) and ptr == t.data


# -- numpy integers are integers, also for a compile ---------------------------------------------------------

def test_numpy_integers_in_an_interface_compile_and_launch_a_tma_kernel(driver, monkeypatch):
    monkeypatch.setattr(tma_copy, "_compiled", {})
    monkeypatch.setattr(tma_copy, "_last", None)

    def producer(address):
        return Producer({"typestr": "<f4", "shape": (np.int64(256), np.int32(512)), "version": 3,
                         "strides": (np.int64(2048), np.int64(4)), "data": (np.uint64(address), False)})

    c = cute.compile(tma_copy, producer(1 << 24), producer(1 << 25), (128, 64), "none")
    c(producer(1 << 26), producer(1 << 27))
    assert driver.calls[-1]["grid"] == (8, 2, 1)
    assert [p[:8] for p in driver.calls[-1]["params"][:2]] == [(1 << 26).to_bytes(8, "little"),
                                                                (1 << 27).to_bytes(8, "little")]


def test_numpy_integers_in_an_interface_bind_a_run_time_shaped_compile(driver, monkeypatch):
    monkeypatch.setattr(tma_copy, "_compiled", {})
    monkeypatch.setattr(tma_copy, "_last", None)
    spec = cute.compiler.DeviceArraySpec("Float32", (cute.sym_int(), cute.sym_int(divisibility=64)))
    c = cute.compile(tma_copy, spec, spec, (128, 64), "none")
    a = Producer({"typestr": "<f4", "shape": (np.int64(256), np.int64(512)), "version": 3,
                  "data": (np.uint64(1 << 26), False)})
    c(a, a)
    assert driver.calls[-1]["grid"] == (8, 2, 1)
