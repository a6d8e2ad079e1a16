"""A ``Compiled`` call either launches what it was given or raises a CuteError before anything changes.

On a stand-in driver (``_recording_driver``) that records the bytes of every parameter a launch would pass:
random sequences of good and bad calls (bad scalars, bad tensors, bad streams, bad addresses) on a kernel with
run-time scalars and on a TMA kernel, each good call's launch compared with a fresh object's launch of the same
call; each run-time scalar type over hypothesis's values and types against an oracle of the rule (``struct``
packs the expected bytes), on the general path and through the jit function; streams and device addresses on
the general and the generated paths."""

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import arch
from cute_py.compiler.runtime.compiled import CallState, Compiled
from cute_py.errors import ArgumentError, CuteError
from cute_py.tensor.dtypes import Scalar
from examples import tma_copy
from _recording_driver import driver, fresh, launched_with  # noqa: F401 (the fixture)

SPEC = cute.compiler.DeviceArraySpec


@cute.kernel
def _scal_kernel(a, n, x, m):
    tidx, _, _ = arch.thread_idx()
    if tidx < n:
        a[tidx] = x
    if tidx < m:
        a[tidx] = x + 1.0


@cute.jit
def scal(a, n: cute.Int32, x: cute.Float32, m: cute.Int64):
    _scal_kernel(a, n, x, m).launch(grid=1, block=128)


@cute.kernel
def _noop(a):
    pass


@cute.jit
def streamed(a, stream):
    _noop(a).launch(grid=1, block=32, stream=stream)


@pytest.fixture(autouse=True)
def _own_compiles(monkeypatch):
    """Compiled objects of this test only (they hold the stand-in driver of the test that loaded them)."""
    for jf in (scal, tma_copy, streamed):
        monkeypatch.setattr(jf, "_compiled", {})
        monkeypatch.setattr(jf, "_last", None)


class CAI:
    """A ``__cuda_array_interface__`` producer of any address (float32, row-major)."""

    def __init__(self, address, shape=(128,)):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (address, False),
                                         "strides": None, "version": 3}


def _scal_compiled():
    return cute.compile(scal, SPEC("Float32", (128,), address=1 << 24), 5, 1.5, 7)


def _tma_compiled():
    a = SPEC("Float32", (256, 512), address=1 << 24)
    return cute.compile(tma_copy, a, a, (128, 64), "none")


# -- a failed call leaves no trace -------------------------------------------------------------------------------

_ADDRESSES = st.integers(1, 2**20).map(lambda k: k * 256)
_GOOD_SCAL = st.tuples(_ADDRESSES, st.integers(-2**31, 2**31 - 1),
                       st.floats(width=32, allow_nan=False), st.integers(-2**63, 2**63 - 1))
_BAD_INT32 = st.sampled_from(["5", 2**31, -2**31 - 1, 2.5, True, None, cute.Int64(2**40), cute.Float32(2.0)])
_BAD_INT64 = st.sampled_from(["5", 2**63, -2**63 - 1, 2.5, True, None, cute.Uint64(2**63), cute.Float32(2.0)])
_BAD_STREAM = st.sampled_from([1.5, True, "1", -1, 2**64, object()])


@st.composite
def _scal_calls(draw):
    """(args, kwargs, good?) of a call of ``scal``'s compile: good, or bad in one place."""
    address, n, x, m = draw(_GOOD_SCAL)
    args, kwargs = [CAI(address), n, x, m], {}
    what = draw(st.sampled_from(["good", "n", "x", "m", "stream", "null", "negative", "huge", "shape"]))
    if what in ("n", "m"):
        args[1 if what == "n" else 3] = draw(_BAD_INT32 if what == "n" else _BAD_INT64)
    elif what == "x":
        args[2] = draw(st.sampled_from(["1.0", 1e39, -1e39, 2**1024, True, None, cute.Int32(2**24 + 1)]))
    elif what == "stream":
        kwargs["stream"] = draw(_BAD_STREAM)
    elif what in ("null", "negative", "huge"):
        args[0] = CAI({"null": 0, "negative": -4096, "huge": 2**64}[what])
    elif what == "shape":
        args[0] = CAI(address, (64,))
    return tuple(args), kwargs, what == "good"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(_scal_calls(), min_size=2, max_size=8))
def test_a_failed_call_of_run_time_scalars_leaves_no_trace(driver, calls):
    c = fresh(_scal_compiled())
    for args, kwargs, good in calls:
        if good:
            mine = launched_with(driver, c, *args, **kwargs)
            theirs = launched_with(driver, fresh(c), *args, **kwargs)
            assert [r["params"] for r in mine] == [r["params"] for r in theirs] and len(mine) == 1
        else:
            n = len(driver.calls)
            with pytest.raises(CuteError):
                c(*args, **kwargs)
            assert len(driver.calls) == n, "a refused call launched"


@st.composite
def _tma_calls(draw):
    a, b = draw(_ADDRESSES), draw(_ADDRESSES)
    what = draw(st.sampled_from(["good", "good", "null", "negative", "huge", "shape", "misaligned", "stream"]))
    args, kwargs = [CAI(a, (256, 512)), CAI(b, (256, 512))], {}
    k = draw(st.integers(0, 1))
    if what in ("null", "negative", "huge"):
        args[k] = CAI({"null": 0, "negative": -4096, "huge": 2**64 + 256}[what], (256, 512))
    elif what == "shape":
        args[k] = CAI(a, (256, 256))
    elif what == "misaligned":
        args[k] = CAI(a + 4, (256, 512))
    elif what == "stream":
        kwargs["stream"] = draw(_BAD_STREAM)
    return tuple(args), kwargs, what == "good"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(_tma_calls(), min_size=2, max_size=8))
def test_a_failed_call_of_a_tma_kernel_leaves_no_trace(driver, calls):
    c = fresh(_tma_compiled())
    for args, kwargs, good in calls:
        if good:
            mine = launched_with(driver, c, *args, **kwargs)
            theirs = launched_with(driver, fresh(c), *args, **kwargs)
            assert [(r["params"], r["grid"]) for r in mine] == [(r["params"], r["grid"]) for r in theirs]
        else:
            n = len(driver.calls)
            with pytest.raises(CuteError):
                c(*args, **kwargs)
            assert len(driver.calls) == n


def test_the_example_of_a_half_refilled_object(driver):
    c = fresh(_scal_compiled())
    g1, g2 = CAI(1 << 24), CAI(1 << 26)
    first = launched_with(driver, c, g1, 5, 1.5, 7)
    with pytest.raises(CuteError):
        c(g2, "5", 1.5, 7)
    assert launched_with(driver, c, g1, 5, 1.5, 7)[0]["params"] == first[0]["params"]
    assert first[0]["params"][0] == (1 << 24).to_bytes(8, "little")


# -- run-time scalars: every call, every value -------------------------------------------------------------

_INT_RANGES = {"Int32": (-2**31, 2**31 - 1), "Int64": (-2**63, 2**63 - 1)}
_FLT_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]


def _values():
    ints = st.integers(-2**70, 2**70)
    return st.one_of(
        ints, st.floats(allow_nan=True), st.booleans(), st.text(max_size=3), st.none(),
        ints.filter(lambda v: -2**63 <= v < 2**63).map(np.int64), st.integers(-2**31, 2**31 - 1).map(np.int32),
        st.floats(width=32).map(np.float32), st.booleans().map(np.bool_), st.complex_numbers(max_magnitude=4),
        st.tuples(st.sampled_from(["Int8", "Int32", "Int64", "Uint32", "Uint64"]), ints).map(_scalar),
        st.tuples(st.sampled_from(["Float16", "Float32", "Float64"]), st.floats(allow_nan=False)).map(_scalar),
    )


def _scalar(kind_value):
    kind, v = kind_value
    try:
        return getattr(cute, kind)(v)
    except CuteError:
        return None


def _expected(kind, v):
    """The bytes an Int32/Int64/Float32 parameter holds for ``v``, or ``None`` where the rule refuses it."""
    if kind in _INT_RANGES:
        lo, hi = _INT_RANGES[kind]
        if isinstance(v, Scalar):
            if v.dtype.kind not in ("int", "uint"):
                return None
            v = v.value
        elif isinstance(v, (bool, np.bool_, float, np.floating, complex, str)) or v is None:
            return None
        v = int(v)
        return struct.pack("<i" if kind == "Int32" else "<q", v) if lo <= v <= hi else None
    if isinstance(v, Scalar):
        if v.dtype.kind in ("int", "uint"):
            exact = float(v.value) == v.value and abs(v.value) <= _FLT_MAX and \
                struct.unpack("<f", struct.pack("<f", float(v.value)))[0] == v.value
            return struct.pack("<f", float(v.value)) if exact else None
        if v.dtype.kind != "float":
            return None
        f = float(v.value)
        if v.dtype.name != "Float32" and f == f and abs(f) != float("inf"):
            try:
                if struct.unpack("<f", struct.pack("<f", f))[0] != f:
                    return None
            except OverflowError:
                return None
        v = f
    elif isinstance(v, (bool, np.bool_, complex, str)) or v is None:
        return None
    try:
        return struct.pack("<f", float(v))
    except OverflowError:  # the int or float rounds past the largest float32
        return None


_SLOT = {"Int32": 1, "Float32": 2, "Int64": 3}
_GOOD = {"Int32": 5, "Float32": 1.5, "Int64": 7}


@pytest.mark.parametrize("kind", ["Int32", "Float32", "Int64"])
@pytest.mark.parametrize("through", ["compiled", "jit function"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_values())
def test_every_call_checks_each_run_time_scalar(driver, kind, through, value):
    c = _scal_compiled()
    g = CAI(1 << 24)
    args = [g, 5, 1.5, 7]
    if through == "jit function":
        # a Scalar passed to a jit function specialises it for the Scalar's own type: its values are the
        # compiled object's case (above); plain values reuse the specialisation of the last call
        assume(not isinstance(value, Scalar))
        scal._last = None
    call = c if through == "compiled" else scal
    call(*args)  # the specialisation of the last call, for the jit function (its later calls skip the checks)
    args[_SLOT[kind]] = value
    expect = _expected(kind, value)
    n = len(driver.calls)
    if expect is None:
        with pytest.raises(CuteError):
            call(*args)
        assert len(driver.calls) == n
        args[_SLOT[kind]] = _GOOD[kind]  # and nothing of it stays: the next call passes its own values
        call(*args)
        assert driver.calls[-1]["params"][_SLOT[kind]] == _expected(kind, _GOOD[kind])
    else:
        call(*args)
        assert len(driver.calls) == n + 1
        assert driver.calls[-1]["params"][_SLOT[kind]] == expect


def test_the_examples_of_scalars_passed_wrong(driver):
    c = fresh(_scal_compiled())
    g = CAI(1 << 24)
    for args in ((g, 2**31, 1.5, 7), (g, cute.Int64(2**40), 1.5, 7), (g, cute.Float32(2.0), 1.5, 7),
                 (g, 5, 1.5, 2**63), (g, 5, 1e39, 7)):
        with pytest.raises(cute.compiler.SpecMismatch, match="run-time"):
            c(*args)
    assert driver.calls == []
    c(g, cute.Int64(-3), cute.Int32(3), cute.Int32(9))  # other types, exactly converted
    assert driver.calls[-1]["params"][1:] == (struct.pack("<i", -3), struct.pack("<f", 3.0), struct.pack("<q", 9))


# -- device addresses ------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [_scal_compiled, _tma_compiled])
@pytest.mark.parametrize("address", [0, -4096, -1, 2**64, 2**64 + 256, 2**70, 1.0 * 2**24, "16777216"])
def test_device_addresses_outside_64_bits_or_null_are_refused_before_any_launch(driver, make, address):
    c = make()
    shape = (128,) if make is _scal_compiled else (256, 512)
    rest = (5, 1.5, 7) if make is _scal_compiled else (CAI(1 << 26, shape),)
    with pytest.raises(ArgumentError, match="address"):
        c(CAI(address, shape), *rest)
    assert driver.calls == []


# -- streams ---------------------------------------------------------------------------------------------

class TorchStream:
    def __init__(self, h):
        self.cuda_stream = h


TorchStream.__module__ = "torch.cuda.streams"


class Stream:  # a cupy stream: its handle is .ptr
    def __init__(self, h):
        self.ptr = h


Stream.__module__ = "cupy.cuda.stream"


class Protocol:
    def __init__(self, h):
        self.h = h

    def __cuda_stream__(self):
        return (0, self.h)


def _accepted():
    from cuda.bindings import driver as cu

    return [(None, 0), (0, 0), (7, 7), (2**64 - 1, 2**64 - 1), (np.int64(9), 9), (np.uint64(2**63), 2**63),
            (TorchStream(11), 11), (Stream(12), 12), (Protocol(13), 13), (cu.CUstream(14), 14)]


_REFUSED = [1.5, True, False, "1", -1, 2**64, object(), np.float32(1), TorchStream(-1), TorchStream(1.5),
            Stream("x"), Protocol(2**64), Protocol(None)]


class _Junk:
    def __cuda_stream__(self):
        return 5


_REFUSED.append(_Junk())


def _generated(driver, monkeypatch):
    """A TMA compile called through its generated path (torch-like tensors: ``FakeTorchTensor``)."""
    import cute_py.compiler.specs.args as args_mod
    from test_jit_compiled_call import FakeTorchTensor

    monkeypatch.setattr(args_mod, "_is_torch", lambda x: False)
    c = fresh(_tma_compiled())
    t1, t2 = FakeTorchTensor(1 << 26), FakeTorchTensor(1 << 27)
    c(t1, t2)
    c(t1, t2)
    assert c._state is CallState.FAST and type(c) is Compiled
    return c, (t1, t2)


@pytest.mark.parametrize("path", ["general", "generated"])
def test_streams_are_what_the_dsl_takes_and_nothing_else(driver, monkeypatch, path):
    if path == "general":
        c, args = fresh(_tma_compiled()), (CAI(1 << 26, (256, 512)), CAI(1 << 27, (256, 512)))
    else:
        c, args = _generated(driver, monkeypatch)
    for stream, handle in _accepted():
        c(*args, stream=stream)
        assert int(driver.calls[-1]["stream"]) == handle, stream
    n = len(driver.calls)
    for stream in _REFUSED:
        with pytest.raises(ArgumentError, match="a stream is"):
            c(*args, stream=stream)
    assert len(driver.calls) == n


def test_stream_arguments_follow_the_same_rule(driver):
    from cuda.bindings import driver as cu

    c = cute.compile(streamed, SPEC("Float32", (128,)), cu.CUstream(3))
    g = CAI(1 << 24)
    for stream, handle in _accepted()[1:]:  # None is no stream argument
        c(g, stream)
        assert int(driver.calls[-1]["stream"]) == handle, stream
    n = len(driver.calls)
    for stream in _REFUSED:
        with pytest.raises(ArgumentError, match="a stream is"):
            c(g, stream)
    assert len(driver.calls) == n


def test_scalars_with_torch_tensors_are_checked_at_every_call_too(driver, monkeypatch):
    """A compile with run-time scalars has no generated path (nor a native launcher): each call of it, torch tensors
    and all, goes through the general path's checks."""
    import cute_py.compiler.specs.args as args_mod
    from test_jit_compiled_call import FakeTorchTensor

    monkeypatch.setattr(args_mod, "_is_torch", lambda x: False)
    class Flat(FakeTorchTensor):
        def is_contiguous(self):
            return self.strides == (1,)

        @property
        def __cuda_array_interface__(self):
            return {"shape": self.shape, "typestr": "<f4", "data": (self.ptr, False), "strides": None, "version": 3}

    Flat.__module__ = "torch.fake"
    c = fresh(_scal_compiled())
    t = Flat(1 << 26, shape=(128,), strides=(1,))
    for _ in range(3):
        c(t, 5, 1.5, 7)
    assert c._state is CallState.CHECKED_ONLY and c._fast_call is None and c._native is None
    n = len(driver.calls)
    for bad in (2**31, "5", 2.0, cute.Int64(2**40)):
        with pytest.raises(CuteError):
            c(t, bad, 1.5, 7)
    assert len(driver.calls) == n


@cute.kernel
def _store_value(a, n):
    a[0] = n


@cute.jit
def store_value(a, n):
    _store_value(a, n).launch(grid=1, block=1)


def test_a_call_with_another_type_of_scalar_specialises_again(driver, monkeypatch):
    """The jit function's last specialisation is reused only for scalars of its types: a Python int after a
    cute.Float32 (or the reverse) is another compile, never the last one's parameter converted."""
    monkeypatch.setattr(store_value, "_compiled", {})
    monkeypatch.setattr(store_value, "_last", None)
    store_value(CAI(1 << 24), cute.Float32(1.5))
    first = store_value._last.compiled
    store_value(CAI(1 << 24), 5)
    second = store_value._last.compiled
    assert second is not first and [k for k, _ in second.sources] != [k for k, _ in first.sources]
    store_value(CAI(1 << 24), cute.Float32(2.5))
    assert store_value._last.compiled is first


@cute.jit
def store_maybe(a, n, b=None):
    _store_value(a, n).launch(grid=1, block=1)
    if b is not None:
        _store_value(b, n).launch(grid=1, block=1)


def test_a_call_that_passes_a_defaulted_array_reuses_the_last_specialisation(driver, monkeypatch):
    """A run-time parameter with a default, passed (an optional tensor such as a GEMM's scales or bias): the next
    call like it launches the last specialisation without building its keys again, with its own addresses."""
    monkeypatch.setattr(store_maybe, "_compiled", {})
    monkeypatch.setattr(store_maybe, "_last", None)
    store_maybe(CAI(1 << 24), 3, b=CAI(1 << 25))
    first = store_maybe._last.compiled
    specialise = store_maybe._specialise
    monkeypatch.setattr(store_maybe, "_specialise", lambda *a: pytest.fail("the call built its keys again"))
    n = len(driver.calls)
    store_maybe(CAI(1 << 26), 3, b=CAI(1 << 27))
    assert store_maybe._last.compiled is first and len(driver.calls) == n + 2
    assert driver.calls[-1]["params"] != driver.calls[-3]["params"], "the launch kept the last call's addresses"
    monkeypatch.setattr(store_maybe, "_specialise", specialise)
    store_maybe(CAI(1 << 24), 3)                          # without b: another compile
    assert store_maybe._last.compiled is not first and len(driver.calls) == n + 3


@cute.jit
def store_each(arrays, n):
    for a in arrays:
        _store_value(a, n).launch(grid=1, block=1)


def test_a_call_with_a_container_of_arrays_reuses_the_last_specialisation(driver, monkeypatch):
    """A tuple of device arrays (spread into one argument per array): the next call with a container of the same
    type and length reuses the last specialisation with its own addresses; another length, another container type
    or another array shape is another compile, never the last one's launch."""
    monkeypatch.setattr(store_each, "_compiled", {})
    monkeypatch.setattr(store_each, "_last", None)
    store_each((CAI(1 << 24), CAI(1 << 25)), 3)
    first = store_each._last.compiled
    specialise = store_each._specialise
    monkeypatch.setattr(store_each, "_specialise", lambda *a: pytest.fail("the call built its keys again"))
    n = len(driver.calls)
    store_each((CAI(1 << 26), CAI(1 << 27)), 3)
    assert store_each._last.compiled is first and len(driver.calls) == n + 2
    assert driver.calls[-1]["params"] != driver.calls[-3]["params"], "the launch kept the last call's addresses"
    monkeypatch.setattr(store_each, "_specialise", specialise)
    for other in [((CAI(1 << 24), CAI(1 << 25), CAI(1 << 26)), 3), ([CAI(1 << 24), CAI(1 << 25)], 3),
                  ((CAI(1 << 24), CAI(1 << 25, (64,))), 3), ((CAI(1 << 24), CAI(1 << 25)), 4)]:
        store_each(*other)
        assert store_each._last.compiled is not first, f"{other} launched the last call's compile"
    store_each((CAI(1 << 24), CAI(1 << 25)), 3)
    assert store_each._last.compiled is first
