"""The call paths of a ``Compiled``: one state machine (``compiled.CallState``), and no class of its own per object.

On the stand-in driver (``_recording_driver``) with torch-like tensors (``FakeTorchTensor``): the first call
loads (FIRST -> CHECKED), the second call like it makes the fast path (-> FAST), a tensor unlike the recorded one
drops it (-> CHECKED) and a later call makes it again; a compile whose calls the fast path never takes ends in
CHECKED_ONLY. After every call, good or failed (refused arguments, a failed load, a failed launch), the object
is in one of the states with the attributes of that state, and its next good call launches exactly what a fresh
object launches. With the native launcher's extension built, the launcher in front of the fast path is disarmed
and dropped with it."""

import ctypes

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import arch
from cute_py.compiler.runtime import launch as L
from cute_py.compiler.runtime.compiled import CallState, Compiled
from cute_py.errors import ArgumentError, CuteError, LaunchError
from _recording_driver import driver, fresh, launched_with  # noqa: F401 (the fixture)
from test_call_state import _tma_compiled
from test_jit_compiled_call import FakeTorchTensor

FIRST, CHECKED, FAST, CHECKED_ONLY = CallState.FIRST, CallState.CHECKED, CallState.FAST, CallState.CHECKED_ONLY


class OtherTorch(FakeTorchTensor):
    """A torch tensor of another Python type, with the compiled dtype, shape and strides: the checked path takes
    it, and records it as the tensor of its position."""


OtherTorch.__module__ = "torch.fake"


@pytest.fixture(autouse=True)
def _specs_from_the_array_interface(monkeypatch):
    import cute_py.compiler.specs.args as args_mod

    monkeypatch.setattr(args_mod, "_is_torch", lambda x: False)


def state(c):
    """``c``'s state, after checking the attributes that go with it."""
    s = c._state
    assert type(c) is Compiled and "__call__" not in vars(c)
    assert (s is FIRST) == (c._plan is None)
    if s is FAST:
        assert callable(c._fast_call)
        if c._native is not None:
            assert c._entry is c._native and c._native.fallback.__func__ is c._fast_call
        else:
            assert c._entry.__func__ is c._fast_call and c._entry.__self__ is c
    else:
        assert c._fast_call is None and c._native is None and c._entry == c._checked_call
    return s


def params(records):
    return [(r["params"], r["grid"]) for r in records]


def test_the_first_call_loads_and_the_second_like_it_makes_the_fast_path(driver):
    c = fresh(_tma_compiled())
    t1, t2 = FakeTorchTensor(1 << 26), FakeTorchTensor(1 << 27)
    assert state(c) is FIRST
    with pytest.raises(CuteError):  # refused before anything is loaded
        c(t1, FakeTorchTensor(1 << 27, shape=(256, 256)))
    assert state(c) is FIRST and driver.calls == []
    launched_with(driver, c, t1, t2)
    assert state(c) is CHECKED  # loaded, the torch tensors recorded
    launched_with(driver, c, t1, t2)
    assert state(c) is FAST  # a second call like the first
    mine = launched_with(driver, c, t2, t1)  # through the fast path, at new addresses
    assert state(c) is FAST and params(mine) == params(launched_with(driver, fresh(c), t2, t1))


def test_a_failed_load_leaves_the_first_state_and_a_later_call_loads(driver, monkeypatch):
    c = fresh(_tma_compiled())
    t1, t2 = FakeTorchTensor(1 << 26), FakeTorchTensor(1 << 27)
    loader = L.load_module

    def failing(*args):
        raise LaunchError("cuModuleLoadData failed: CUDA_ERROR_OUT_OF_MEMORY")

    monkeypatch.setattr(L, "load_module", failing)
    monkeypatch.setattr(L, "check_target", lambda arch, what: None)
    with pytest.raises(LaunchError, match="OUT_OF_MEMORY"):
        c(t1, t2)
    assert state(c) is FIRST and driver.calls == []
    monkeypatch.setattr(L, "load_module", loader)
    assert params(launched_with(driver, c, t1, t2)) == params(launched_with(driver, fresh(c), t1, t2))
    assert state(c) is FAST  # the failed call had seen these tensors: this one is the second like it


def test_a_tensor_unlike_the_recorded_one_drops_the_fast_path_even_when_its_call_fails(driver):
    c = fresh(_tma_compiled())
    t1, t2, o1 = FakeTorchTensor(1 << 26), FakeTorchTensor(1 << 27), OtherTorch(1 << 28)
    c(t1, t2)
    c(t1, t2)
    assert state(c) is FAST
    launch = c._launch_kernel
    c._launch_kernel = lambda *args: (1,)  # every launch fails (CUDA_ERROR_INVALID_VALUE)
    with pytest.raises(LaunchError, match="CUDA_ERROR_INVALID_VALUE"):
        c(o1, t2)
    assert state(c) is CHECKED  # dropped when the tensor was recorded, before the launch failed
    c._launch_kernel = launch
    assert params(launched_with(driver, c, o1, t2)) == params(launched_with(driver, fresh(c), o1, t2))
    assert state(c) is FAST  # the second call like the one before: made again, for the new type
    assert params(launched_with(driver, c, o1, t1)) == params(launched_with(driver, fresh(c), o1, t1))
    assert state(c) is FAST


def test_a_compile_the_fast_path_never_takes_ends_checked_only(driver):
    """Run-time scalars (and likewise stream arguments, clusters, a call form with Constexpr parameters): the
    first call that could have made the fast path finds that it does not apply, for good."""
    from test_call_state import _scal_compiled

    class Flat(FakeTorchTensor):
        def is_contiguous(self):
            return self.strides == (1,)

        @property
        def __cuda_array_interface__(self):
            return {"shape": self.shape, "typestr": "<f4", "data": (self.ptr, False), "strides": None, "version": 3}

    Flat.__module__ = "torch.fake"
    c = fresh(_scal_compiled())
    t = Flat(1 << 26, shape=(128,), strides=(1,))
    c(t, 5, 1.5, 7)
    assert state(c) is CHECKED
    c(t, 5, 1.5, 7)
    assert state(c) is CHECKED_ONLY
    c(OtherTorch(1 << 26, shape=(128,), strides=(1,)), 5, 1.5, 7)  # a new type recorded: nothing to drop
    c(t, 5, 1.5, 7)
    assert state(c) is CHECKED_ONLY


class _Flat(FakeTorchTensor):
    """A contiguous 1-D torch-like tensor of 128 Float32."""

    def is_contiguous(self):
        return True

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": "<f4", "data": (self.ptr, False), "strides": None, "version": 3}


_Flat.__module__ = "torch.fake"


def _flat(address):
    return _Flat(address, shape=(128,), strides=(1,))


@cute.kernel
def _copy_first(a, b):
    a[0] = b[0]


@cute.jit
def with_constexpr(op: cute.Constexpr, a, b):
    _copy_first(a, b).launch(grid=1, block=1)


def test_a_call_form_with_constexpr_parameters_keeps_the_checked_path_whatever_tensors_come(driver):
    a, b = _flat(1 << 24), _flat(1 << 25)
    c = cute.compile(with_constexpr, 1, a, b)
    assert c.call_form is not None and c.call_form.constexpr_at
    for _ in range(3):
        c(a, b)
    assert state(c) is CHECKED_ONLY and len(driver.calls) == 3


@cute.jit
def copy_in_clusters(a, b):
    _copy_first(a, b).launch(grid=4, block=32, cluster=(2, 1, 1))


def test_cluster_launches_take_the_generated_path_through_cuLaunchKernelEx(driver):
    """A kernel launched in clusters gets the generated path (not the native launcher, which launches plain
    kernels): ``cuLaunchKernelEx`` with its cluster dimension, the call's stream, and the parameters of the call's
    addresses, as a fresh object launches them."""
    a, b = _flat(1 << 24), _flat(1 << 25)
    c = cute.compile(copy_in_clusters, a, b)
    launched_with(driver, c, a, b)
    assert state(c) is CHECKED
    launched_with(driver, c, a, b)
    assert state(c) is FAST and c._native is None

    def seen(records):
        return [(r["func"], r["grid"], r["block"], r["cluster"], r["stream"], r["params"]) for r in records]

    for args, kwargs in [((b, a), {}), ((b, a), dict(stream=5)), ((b, a), {}), ((a, b), dict(stream=9))]:
        mine = launched_with(driver, c, *args, **kwargs)
        assert state(c) is FAST
        want = launched_with(driver, fresh(c), *args, **kwargs)
        assert seen(mine) == seen(want) and mine[0]["cluster"] == (2, 1, 1)
        assert mine[0]["stream"] == kwargs.get("stream", c._default_stream)


def test_a_failed_cluster_launch_on_the_generated_path_raises_and_the_next_call_launches_as_a_fresh_object(driver):
    a, b = _flat(1 << 24), _flat(1 << 25)
    c = fresh(cute.compile(copy_in_clusters, a, b))  # (not the compile another test of this process loaded)
    c(a, b)
    c(a, b)
    assert state(c) is FAST
    launch = c._launch_kernel_ex
    c._launch_kernel_ex = lambda *args: (1,)  # every launch fails (CUDA_ERROR_INVALID_VALUE)
    with pytest.raises(LaunchError, match=r"cluster=\(2, 1, 1\).*CUDA_ERROR_INVALID_VALUE"):
        c(b, a)  # new addresses: filled, then the launch fails
    c._launch_kernel_ex = launch
    mine = launched_with(driver, c, b, a)
    assert state(c) is FAST
    assert [(r["cluster"], r["params"]) for r in mine] == [(r["cluster"], r["params"])
                                                           for r in launched_with(driver, fresh(c), b, a)]


@cute.kernel
def _synced_copy(a, b):
    a[0] = b[0]
    arch.sync_grid()


@cute.jit
def synced_copy(a, b):
    _synced_copy(a, b).launch(grid=2, block=32)


def test_a_cooperative_launch_never_takes_the_generated_path(driver, monkeypatch):
    """A kernel that syncs its grid is launched cooperatively, after the residency check of ``launch.launch``: its
    calls stay on the checked path (CHECKED_ONLY), each one a cooperative launch."""
    seen = []
    monkeypatch.setattr(L, "launch", lambda *args, cooperative=False: seen.append((args[3], cooperative)))
    a, b = _flat(1 << 24), _flat(1 << 25)
    c = cute.compile(synced_copy, a, b)
    assert c.cooperative
    for _ in range(3):
        c(a, b)
    assert state(c) is CHECKED_ONLY and seen == [((1, 1, 1), True)] * 3


@cute.jit
def copy_each(pairs_a, pairs_b):
    for a, b in zip(pairs_a, pairs_b):
        _copy_first(a, b).launch(grid=1, block=1)


def test_a_compile_of_containers_takes_a_fast_path_that_spreads_them(driver):
    """Containers of device arrays (spread into one argument per array): the second call like the first makes the
    fast path, which launches what a fresh object's general path launches at new addresses; a container of
    another length is the general path's ArgumentError; a tensor unlike the compiled one in a container goes to
    the general path, which refuses it before anything is launched or changed."""
    t = [FakeTorchTensor((1 + i) << 24) for i in range(6)]
    c = cute.compile(copy_each, (t[0], t[1]), (t[2], t[3]))
    assert c.call_form is not None and c.call_form.spreads and not c.call_form.constexpr_at
    launched_with(driver, c, (t[0], t[1]), (t[2], t[3]))
    assert c._state is CHECKED
    launched_with(driver, c, (t[0], t[1]), (t[2], t[3]))
    assert c._state is FAST and callable(c._fast_call) and c._native is None
    mine = launched_with(driver, c, (t[4], t[1]), [t[2], t[5]])      # a list where a tuple was: spread the same
    assert c._state is FAST
    other = fresh(c)
    other.set_call_form(c.call_form)
    assert params(mine) == params(launched_with(driver, other, (t[4], t[1]), (t[2], t[5])))
    n = len(driver.calls)
    with pytest.raises(ArgumentError, match="compiled as a tuple of 2 device arrays, got tuple of 3"):
        c((t[0], t[1], t[4]), (t[2], t[3]))
    with pytest.raises(CuteError):
        c((t[0], FakeTorchTensor(1 << 30, shape=(128, 512))), (t[2], t[3]))
    assert len(driver.calls) == n and c._state is FAST
    again = launched_with(driver, c, (t[1], t[0]), (t[3], t[2]))
    assert params(again) == params(launched_with(driver, other, (t[1], t[0]), (t[3], t[2])))


# -- any sequence of calls ---------------------------------------------------------------------------------------

_CALLS = st.sampled_from(["good", "swapped", "other type", "shape", "misaligned", "stream", "count", "launch fails"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(_CALLS, min_size=1, max_size=12))
def test_after_any_call_the_state_is_consistent_and_the_next_good_call_launches_its_own(driver, calls):
    c = fresh(_tma_compiled())
    t1, t2, o1 = FakeTorchTensor(1 << 26), FakeTorchTensor(1 << 27), OtherTorch(1 << 28)
    for what in calls:
        args, kwargs = {"good": (t1, t2), "swapped": (t2, t1), "other type": (o1, t2),
                        "shape": (t1, FakeTorchTensor(1 << 27, shape=(256, 256))),
                        "misaligned": (FakeTorchTensor((1 << 26) + 4), t2), "count": (t1,),
                        "stream": (t1, t2), "launch fails": (t2, o1)}[what], {}
        if what == "stream":
            kwargs["stream"] = 1.5
        n = len(driver.calls)
        if what == "launch fails" and c._state is not FIRST:
            launch, c._launch_kernel = c._launch_kernel, lambda *args: (1,)
            with pytest.raises(LaunchError):
                c(*args)
            c._launch_kernel = launch
        elif what in ("good", "swapped", "other type", "launch fails"):
            assert params(launched_with(driver, c, *args)) == params(launched_with(driver, fresh(c), *args))
        else:
            with pytest.raises(CuteError):
                c(*args, **kwargs)
            assert len(driver.calls) == n
        state(c)
    assert params(launched_with(driver, c, t1, t2)) == params(launched_with(driver, fresh(c), t1, t2))
    assert state(c) in (CHECKED, FAST)


# -- with the native launcher in front of the fast path ----------------------------------------------------------

def test_the_native_launcher_is_disarmed_and_dropped_with_the_fast_path(driver, monkeypatch):
    pytest.importorskip("torch")  # the compiled object's lock is the extension's where torch is loaded
    from cute_py.compiler.runtime import launch_paths, native

    if native.launcher_class() is None:
        pytest.skip(f"no native launcher on this machine: {native.status()}")
    # the driver's cuLaunchKernel as the launcher calls it: the parameters it would copy, recorded
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_void_p)

    def launch(f, gx, gy, gz, bx, by, bz, smem, stream, p, extra):
        block = driver.blocks[p]
        driver.calls.append({"func": "native", "grid": (gx, gy, gz), "stream": stream or 0,
                             "params": tuple(bytes(s) for s in block.slots), "expect": None})
        return 0

    callback = proto(launch)
    monkeypatch.setitem(native._STATE, "address", ctypes.cast(callback, ctypes.c_void_p).value)

    def guard_of(templates, dynamic):  # torch's guard, for these stand-ins: their types, shapes and strides
        kinds = [(type(t), t.shape, t.strides) for t in templates]
        return lambda *ts: [(type(t), t.shape, t.strides) for t in ts] == kinds

    monkeypatch.setattr(launch_paths, "tensor_guard", guard_of)
    functions = {}  # function handles as the driver gives them: addresses
    monkeypatch.setattr(L, "load_module", lambda cubin, kernels, *rest: (
        None, {n: functions.setdefault(n, 0x1000 * (1 + len(functions))) for n in kernels}))
    c = fresh(_tma_compiled())
    t1, t2, o1 = FakeTorchTensor(1 << 26), FakeTorchTensor(1 << 27), OtherTorch(1 << 28)
    c(t1, t2)
    c(t1, t2)
    assert state(c) is FAST and c._native is not None
    launcher = c._native
    c(t1, t2)  # the Python fast path, which arms the launcher
    mine = launched_with(driver, c, t1, t2)
    assert launcher.armed and launcher.hits == 1 and [r["func"] for r in mine] == ["native"]
    assert params(mine) == params(launched_with(driver, fresh(c), t1, t2))
    c(o1, t2)  # refused by its guard and by the generated checks: the checked path records the new type
    assert state(c) is CHECKED and not launcher.armed and c._native is None
    c(o1, t2)
    assert state(c) is FAST and c._native is not launcher


def test_a_compiled_object_is_callable_with_the_signature_of_its_calls():
    import inspect

    c = fresh(_tma_compiled())
    assert callable(c) and str(inspect.signature(c)) == "(*args, stream=None)"
    assert "jf" in inspect.signature(Compiled).parameters  # the class: its constructor's
