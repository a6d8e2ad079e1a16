"""The native launcher (``cute_py.compiler.runtime.native``): its law over arbitrary calls, its argument
rules, its build and disk cache, and (with torch) the generated launch paths that arm it.

The driver's ``cuLaunchKernel`` is replaced by a ctypes callback with its signature, which records each launch:
no GPU is needed. The extension is built with the machine's C compiler; without one these tests skip, saying so.
"""

import ctypes
import gc
import os
import re
import subprocess
import sys
import types
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cute_py.compiler.runtime import native as N

PROTO = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_void_p)


@pytest.fixture(scope="module")
def Launcher():
    cls = N.launcher_class()
    if cls is None:
        pytest.skip(f"no native launcher on this machine: {N.status()}")
    return cls


class Driver:
    """A stand-in ``cuLaunchKernel``: records (function, grid, block, smem, stream, params, extra) and returns the
    codes in ``fail`` ({launch number: code}) else 0."""

    def __init__(self):
        self.calls, self.fail = [], {}
        self._cb = PROTO(self._launch)
        self.address = ctypes.cast(self._cb, ctypes.c_void_p).value

    def _launch(self, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        self.calls.append((f or 0, (gx, gy, gz), (bx, by, bz), smem, stream or 0, params or 0, extra))
        return self.fail.get(len(self.calls) - 1, 0)


class Arg:
    """A tensor stand-in: only ``data_ptr()`` is read."""

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address


PLAN = ((0x1000, 2, 3, 4, 128, 1, 1, 4096, 0x2000), (0x1100, 5, 1, 1, 32, 2, 1, 0, 0x2100))


def _expected(plan, stream):
    return [(f, (gx, gy, gz), (bx, by, bz), smem, stream, params, None)
            for f, gx, gy, gz, bx, by, bz, smem, params in plan]


def _made(Launcher, driver, positions=(0, 1), max_args=3):
    seen = []
    launcher = Launcher(driver.address, positions, max_args)
    launcher.fallback = lambda *a, **k: seen.append((a, k)) or "passed on"
    return launcher, seen


# -- the law -----------------------------------------------------------------------------------------------

_STREAMS = st.one_of(st.just("absent"), st.none(), st.integers(0, 2**64 - 1), st.integers(-5, -1), st.just("text"),
                     st.just(2**64), st.floats(allow_nan=False).map(lambda x: x))


@settings(max_examples=300, deadline=None)
@given(armed=st.booleans(), n=st.integers(0, 5), positions=st.sampled_from([(0,), (0, 1), (1, 0), (2, 0), (0, 2)]),
       addresses=st.lists(st.integers(0, 2**64 - 1), min_size=3, max_size=3),
       moved=st.lists(st.booleans(), min_size=3, max_size=3),
       verdict=st.sampled_from([True, False, 1, None, "raise"]), stream=_STREAMS, other_kw=st.booleans())
def test_it_launches_exactly_the_calls_the_rule_admits_and_passes_on_every_other(
        Launcher, armed, n, positions, addresses, moved, verdict, stream, other_kw):
    """Launched iff armed, min_args <= n <= max_args (min_args: past the last tensor position), no keyword but
    ``stream`` (None or an int of 0..2**64-1), the guard returned True for the tensors in position order and
    every address is the armed one; then each launch of the plan exactly as armed, on that stream. Otherwise the
    fallback gets the call untouched (the same objects and keywords), except a raising guard, whose exception
    propagates with nothing launched."""
    driver = Driver()
    launcher, seen = _made(Launcher, driver, positions, max_args=4)
    guarded = []

    def guard(*tensors):
        guarded.append(tensors)
        if verdict == "raise":
            raise KeyError("guard")
        return verdict

    if armed:
        launcher.arm(guard, tuple(addresses[p] for p in positions), PLAN)
    args = tuple(Arg(addresses[k] ^ (1 if moved[k] and k in positions else 0)) for k in range(min(n, 3))) + \
        tuple(object() for _ in range(n - 3))
    kwargs = {} if stream == "absent" else {"stream": stream}
    if other_kw:
        kwargs["grid"] = 1
    shape_ok = max(positions) + 1 <= n <= 4
    stream_ok = stream in ("absent", None) or (type(stream) is int and 0 <= stream < 2**64)
    admitted = armed and shape_ok and stream_ok and not other_kw
    if admitted and verdict == "raise":
        with pytest.raises(KeyError):
            launcher(*args, **kwargs)
        assert driver.calls == [] and seen == []
        return
    result = launcher(*args, **kwargs)
    if admitted:
        assert guarded == [tuple(args[p] for p in positions)]
    launched = admitted and verdict is True and not any(moved[p] for p in positions)
    if launched:
        assert result is None and seen == []
        assert driver.calls == _expected(PLAN, stream if type(stream) is int else 0)
        assert launcher.hits == 1
    else:
        assert result == "passed on" and driver.calls == [] and launcher.hits == 0
        assert len(seen) == 1 and len(seen[0][0]) == len(args)
        assert all(a is b for a, b in zip(seen[0][0], args)) and seen[0][1] == kwargs


def test_a_failed_launch_stops_the_plan_and_reports_its_code_and_index(Launcher):
    driver = Driver()
    launcher, _ = _made(Launcher, driver)
    launcher.arm(lambda *t: True, (16, 32), PLAN)
    driver.fail = {1: 700}
    reports = []

    def on_error(code, index):
        reports.append((code, index))
        raise RuntimeError("launch failed")

    launcher.on_error = on_error
    with pytest.raises(RuntimeError, match="launch failed"):
        launcher(Arg(16), Arg(32))
    assert reports == [(700, 1)] and len(driver.calls) == 2 and launcher.hits == 0
    driver.fail = {2: 1}
    launcher.on_error = None  # none set: the code is still an error
    with pytest.raises(RuntimeError, match="launch 0 failed with code 1"):
        launcher(Arg(16), Arg(32))


def test_data_ptr_errors_propagate_and_a_guard_that_disarms_it_passes_the_call_on(Launcher):
    driver = Driver()
    launcher, seen = _made(Launcher, driver)
    launcher.arm(lambda *t: True, (16, 32), PLAN)

    class Bad:
        def data_ptr(self):
            raise ValueError("no address")

    class NotInt:
        def data_ptr(self):
            return "16"

    with pytest.raises(ValueError, match="no address"):
        launcher(Bad(), Arg(32))
    with pytest.raises(TypeError):
        launcher(NotInt(), Arg(32))

    def disarming(*tensors):
        launcher.disarm()
        return True

    launcher.arm(disarming, (16, 32), PLAN)
    assert launcher(Arg(16), Arg(32)) == "passed on" and driver.calls == [] and not launcher.armed
    launcher.arm(lambda *t: True, (16, 32), PLAN)
    launcher.fallback = None
    with pytest.raises(RuntimeError, match="no fallback"):
        launcher(Arg(16), Arg(99))


@pytest.mark.parametrize("addresses, plan, error", [
    ((16,), PLAN, "1 addresses for 2 tensors"),
    ((16, 32, 48), PLAN, "3 addresses for 2 tensors"),
    ((16, -32), PLAN, "OverflowError|can't convert negative"),
    ((16, "32"), PLAN, "is not an int"),
    ((16, 32), (), "1 to 8 launches, got 0"),
    ((16, 32), PLAN[:1] * 9, "1 to 8 launches, got 9"),
    ((16, 32), ((1, 2, 3),), "a launch is"),
    ((16, 32), ((1, 1, 1, 1, 1, 1, 1, 2**32, 1),), "does not fit 32 bits"),
    ((16, 32), ((1, 1, 1, 1, 1, 1, 1, 1.0, 1),), "1.0 is not an int"),
])
def test_arm_refuses_what_it_cannot_launch_and_stays_disarmed(Launcher, addresses, plan, error):
    launcher, _ = _made(Launcher, Driver())
    launcher.arm(lambda *t: True, (16, 32), PLAN)
    with pytest.raises((ValueError, TypeError, OverflowError), match=error):
        launcher.arm(lambda *t: True, addresses, plan)
    assert not launcher.armed
    with pytest.raises(TypeError, match="callable"):
        launcher.arm(3, (16, 32), PLAN)
    with pytest.raises(TypeError, match="callable"):
        launcher.fallback = 3


@pytest.mark.parametrize("args, error", [
    ((0, (0,), 1), "address is 0"),
    ((1, (), 1), "1 to 16 tensor positions, got 0"),
    ((1, tuple(range(17)), 17), "1 to 16 tensor positions, got 17"),
    ((1, (2,), 2), "tensor position 2 outside 0..1"),
    ((1, (-1,), 2), "tensor position -1"),
    ((1, [0], 2), "tuple"),
])
def test_the_constructor_refuses_a_launcher_it_could_not_run(Launcher, args, error):
    with pytest.raises((ValueError, TypeError), match=error):
        Launcher(*args)


def test_an_uninitialised_launcher_cannot_be_armed(Launcher):
    launcher = Launcher.__new__(Launcher)
    with pytest.raises(RuntimeError, match="not initialised"):
        launcher.arm(lambda *t: True, (), PLAN)


def test_the_cycle_through_its_fallback_is_collected(Launcher):
    class Owner:
        pass

    owner = Owner()
    launcher = Launcher(Driver().address, (0,), 1)
    launcher.fallback = types.MethodType(lambda self, *a: None, owner)
    owner.launcher = launcher
    gone = weakref.ref(owner)
    del owner, launcher
    gc.collect()
    assert gone() is None


@settings(max_examples=200, deadline=None)
@given(aligns=st.lists(st.sampled_from([1, 2, 16, 48, 256]), min_size=2, max_size=2),
       old=st.lists(st.integers(0, 2**40).map(lambda x: x * 256), min_size=2, max_size=2),
       new=st.lists(st.one_of(st.none(), st.integers(0, 2**48)), min_size=2, max_size=2),
       offsets=st.lists(st.integers(0, 4096), min_size=3, max_size=3), verdict=st.booleans())
def test_new_addresses_are_refilled_exactly_where_every_one_is_aligned(Launcher, aligns, old, new, offsets, verdict):
    """Armed with a refill, a call the guard accepts at new addresses is launched only when each address is a
    multiple of its tensor's alignment; then, before the launch, the owner's named attributes are None, each slot
    holds its tensor's new address plus its offset, and the new addresses are the armed ones (the same call again
    launches without a refill). Otherwise it is passed on with the slots and the attributes as they were."""
    driver = Driver()
    launcher, seen = _made(Launcher, driver)
    slots = (ctypes.c_uint64 * 3)(7, 7, 7)
    owner = types.SimpleNamespace(_last="filled", _other="kept")
    base = ctypes.addressof(slots)
    writes = ((base, 0, offsets[0]), (base + 8, 1, offsets[1]), (base + 16, 0, offsets[2]))
    launcher.arm(lambda *t: verdict, tuple(old), PLAN, (owner, ("_last",), tuple(aligns), writes))
    now = [o if n is None else n for o, n in zip(old, new)]
    result = launcher(Arg(now[0]), Arg(now[1]))
    moved = now != old
    fits = all(a % al == 0 and a != 0 for a, al in zip(now, aligns))  # a refill never writes a null address
    if verdict and (not moved or fits):
        assert result is None and seen == [] and driver.calls == _expected(PLAN, 0)
        if moved:
            assert owner._last is None and launcher.refills == 1
            assert list(slots) == [now[0] + offsets[0], now[1] + offsets[1], now[0] + offsets[2]]
        else:
            assert owner._last == "filled" and list(slots) == [7, 7, 7] and launcher.refills == 0
        launcher(Arg(now[0]), Arg(now[1]))
        assert launcher.hits == 2 and launcher.refills == int(moved)
    else:
        assert result == "passed on" and driver.calls == [] and launcher.refills == 0
        assert owner._last == "filled" and list(slots) == [7, 7, 7]
    assert owner._other == "kept"


def test_a_refill_whose_owner_refuses_the_reset_writes_nothing(Launcher):
    class Frozen:
        __slots__ = ()

    slots = (ctypes.c_uint64 * 1)(7)
    launcher, _ = _made(Launcher, Driver())
    launcher.arm(lambda *t: True, (16, 32), PLAN, (Frozen(), ("_last",), (16, 16), ((ctypes.addressof(slots), 0, 0),)))
    with pytest.raises(AttributeError):
        launcher(Arg(64), Arg(32))
    assert slots[0] == 7 and launcher.hits == 0


@pytest.mark.parametrize("refill, error", [
    ([], "a refill is a tuple"),
    ((None, (), (16, 16)), "a refill is"),
    ((None, ("_last",) * 9, (16, 16), ()), "up to 8 resets"),
    ((None, (), (16,), ()), "one alignment per tensor"),
    ((None, (), (16, 0), ()), "an alignment is 0"),
    ((None, (3,), (16, 16), ()), "attribute names"),
    ((None, (), (16, 16), ((8, 0, 0),) * 33), "32 writes"),
    ((None, (), (16, 16), ((8, 0),)), "a write is"),
    ((None, (), (16, 16), ((12, 0, 0),)), "8-byte aligned"),
    ((None, (), (16, 16), ((0, 0, 0),)), "8-byte aligned and not 0"),
    ((None, (), (16, 16), ((8, 2, 0),)), "the tensor one of 2"),
    ((None, (), (16, 16), ((8, 0, -1),)), "can't convert negative|OverflowError"),
])
def test_arm_refuses_a_refill_it_could_not_apply(Launcher, refill, error):
    launcher, _ = _made(Launcher, Driver())
    with pytest.raises((ValueError, TypeError, OverflowError), match=error):
        launcher.arm(lambda *t: True, (16, 32), PLAN, refill)
    assert not launcher.armed


# -- the build and its cache ---------------------------------------------------------------------------------

def _status_in_subprocess(env, code="print(N.status())", first="N.launcher_class()\n"):
    script = f"from cute_py.compiler.runtime import native as N\n{first}{code}"
    # the switches these tests set are not inherited from the environment the tests run in
    full = {k: v for k, v in os.environ.items()
            if k not in ("CUTE_PY_NATIVE_LAUNCH", "CC", "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM")}
    full.update(env)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=full, timeout=300,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_the_library_is_cached_checked_and_rebuilt_when_it_does_not_match(Launcher, tmp_path):
    env = {"CUTE_PY_CACHE_DIR": str(tmp_path)}
    assert _status_in_subprocess(env) == "native"
    (lib,) = [p for p in (tmp_path / "native").iterdir() if not p.name.endswith(".sha256")]
    digest = (tmp_path / "native" / (lib.name + ".sha256")).read_text()
    stamp = lib.stat().st_mtime_ns
    assert _status_in_subprocess(env) == "native" and lib.stat().st_mtime_ns == stamp  # loaded, not rebuilt
    lib.write_bytes(b"\x7fELF not a library")  # a damaged library is rebuilt, never loaded
    assert _status_in_subprocess(env) == "native"
    assert (tmp_path / "native" / (lib.name + ".sha256")).read_text() == digest
    assert lib.read_bytes()[:4] == b"\x7fELF" and len(lib.read_bytes()) > 1000
    (tmp_path / "native" / (lib.name + ".sha256")).write_text("0" * 64)  # a checksum that does not match either
    assert _status_in_subprocess(env) == "native"
    assert (tmp_path / "native" / (lib.name + ".sha256")).read_text() == digest
    assert not [p for p in (tmp_path / "native").iterdir() if p.name.startswith(".tmp-")]


def test_without_the_disk_cache_it_is_built_in_a_directory_removed_after_loading(Launcher, tmp_path):
    code = "import glob, tempfile; print(N.status(), len(glob.glob(tempfile.gettempdir() + '/cute_py_launch-*')))"
    env = {"CUTE_PY_CACHE_DIR": "", "TMPDIR": str(tmp_path)}
    assert _status_in_subprocess(env, code) == "native 0"


@pytest.mark.parametrize("env, why", [
    ({"CUTE_PY_NATIVE_LAUNCH": "0"}, "turned off"),
    ({"CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM": "1"}, "per-thread default stream"),
    ({"CC": "/nonexistent/cc"}, "could not run"),
    ({"CC": "false"}, "failed"),
])
def test_without_a_native_launcher_status_says_why(tmp_path, env, why):
    out = _status_in_subprocess(dict(env, CUTE_PY_CACHE_DIR=str(tmp_path)))
    assert why in out and out != "native"


# -- the generated launch paths (torch on the CPU; the is_cuda test of the Python checks faked) -----------------

def test_the_generated_static_path_arms_it_and_every_refill_disarms_it(Launcher, monkeypatch):
    torch = pytest.importorskip("torch")
    from cute_py.compiler.runtime import launch_paths as LP

    driver = Driver()
    monkeypatch.setitem(N._STATE, "address", driver.address)

    class T(torch.Tensor):  # the Python checks ask is_cuda: these CPU tensors say yes
        @property
        def is_cuda(self):
            return True

    a, b = (torch.zeros(16, 8).as_subclass(T) for _ in range(2))
    filled, python_launches = [], []

    from cute_py.compiler.runtime.launch import ParamBlock

    block = ParamBlock(["ptr", "Int32", "ptr"])

    class Fake:
        _scalar_args, _binder, _streams, _stream_at, _last, _native = (), None, (None,), None, None, None
        _lock = sys.modules[Launcher.__module__].Lock()  # the compiled object's lock, which its launcher takes
        _plan = ((0x1000, 2, 1, 1, 32, 1, 1, 0, block.address, None),)
        launches = [types.SimpleNamespace(params=[("ptr", (0, 0)), ("Int32", 5), ("ptr", (1, 64))])]
        _blocks = [block]
        sources, _default_stream, _ok = [("tensor", None)] * 2, 0, 0
        jit_function = types.SimpleNamespace(fn=types.SimpleNamespace(__name__="k"))

        def _fill(self, key, args):
            filled.append(key)
            if self._native is not None:
                self._native.disarm()
            block.set(0, key[0])
            block.set(1, 5)
            block.set(2, key[1] + 64)

        def _launch_kernel(self, *args):
            python_launches.append(args)
            return (0,)

    c = Fake()
    fast = tuple((i, T, torch.float32, a.shape, a.stride(), 16, True) for i in range(2))
    c._fill((a.data_ptr(), b.data_ptr()), (a, b))  # as the first call (the general path) left it
    c._last = (a.data_ptr(), b.data_ptr())
    filled.clear()

    def general(c, args, stream):
        raise LookupError("the general path")

    path = LP.make_fast_call(c, fast, (a, b), general)
    assert path.entry is path.native and isinstance(path.native, Launcher)
    assert path.native.fallback.__func__ is path.call
    c._native, call = path.native, path.entry  # as the compiled object's state machine installs it
    call(a, b)  # the Python path: launched (the parameters hold these addresses already) and armed
    assert filled == [] and len(python_launches) == 1 and c._native.armed
    call(a, b)
    call(a, b, stream=5)
    assert len(python_launches) == 1 and c._native.hits == 2
    assert [(s, p) for *_, s, p, _ in driver.calls] == [(0, block.address), (5, block.address)]

    def held():
        return [block.slots[0].value, block.slots[2].value]

    other = torch.zeros(16, 8).as_subclass(T)
    call(a, other)  # new addresses: the launcher rewrites the two pointers and forgets the Python path's record
    assert filled == [] and len(python_launches) == 1 and c._native.refills == 1 and c._last is None
    assert held() == [a.data_ptr(), other.data_ptr() + 64] and block.slots[1].value == 5
    call(a, other)
    assert c._native.hits == 4 and c._native.refills == 1
    call(a, b)  # the first addresses again: refilled for them, not replayed from the launcher's memory
    assert held() == [a.data_ptr(), b.data_ptr() + 64] and c._native.refills == 2
    odd = torch.zeros(16 * 8 + 1)[1:].view(16, 8).as_subclass(T)  # 4 bytes in: misaligned for 16
    with pytest.raises(LookupError, match="the general path"):  # passed on, and by the Python path to the general
        call(odd, b)
    assert held() == [a.data_ptr(), b.data_ptr() + 64]
    c._native.disarm()  # as a general path would: the Python path refills (its record was forgotten) and arms
    call(a, other)
    assert filled[-1] == (a.data_ptr(), other.data_ptr()) and len(python_launches) == 2 and c._native.armed


# -- addresses it cannot launch, threads, the lock --------------------------------------------------------------

@pytest.mark.parametrize("address", [-16, -1, 2**64, 2**70])
def test_an_address_outside_64_bits_is_passed_on_not_launched(Launcher, address):
    driver = Driver()
    launcher, seen = _made(Launcher, driver)
    slots = (ctypes.c_uint64 * 1)(7)
    launcher.arm(lambda *t: True, (16, 32), PLAN, (types.SimpleNamespace(_last=1), ("_last",), (16, 16),
                                                   ((ctypes.addressof(slots), 0, 0),)))
    assert launcher(Arg(address), Arg(32)) == "passed on" and driver.calls == [] and slots[0] == 7


def test_a_null_address_is_never_refilled(Launcher):
    driver = Driver()
    launcher, seen = _made(Launcher, driver)
    slots = (ctypes.c_uint64 * 1)(7)
    launcher.arm(lambda *t: True, (16, 32), PLAN, (types.SimpleNamespace(_last=1), ("_last",), (16, 16),
                                                   ((ctypes.addressof(slots), 0, 0),)))
    assert launcher(Arg(0), Arg(32)) == "passed on" and driver.calls == [] and slots[0] == 7


def test_the_lock_must_be_the_extensions(Launcher):
    with pytest.raises(TypeError, match="Lock or None"):
        Launcher(Driver().address, (0,), 1, object())
    lock = sys.modules[Launcher.__module__].Lock()
    with lock:  # a context manager, not reentrant: a second thread waits
        got = []
        th = __import__("threading").Thread(target=lambda: got.append(lock.__enter__()))
        th.start()
        th.join(0.2)
        assert th.is_alive() and got == []
    th.join(5)
    assert got == [lock]
    lock.__exit__(None, None, None)


def _new_lock_in_subprocess(tmp_path, torch_installed):
    """In a fresh process that never imports torch, with a stand-in torch package an import would find (or
    none): whether ``new_lock()`` gave the extension's lock, and whether torch stayed unloaded."""
    site = tmp_path / "site"
    if torch_installed:
        (site / "torch").mkdir(parents=True)
        (site / "torch" / "__init__.py").write_text("raise ImportError('a stand-in: never imported')\n")
    code = ("import sys\nlock = N.new_lock()\n"
            "print(type(lock) is N._STATE.get('lock'), 'torch' in sys.modules, N.status())\n")
    path = os.pathsep.join([str(site)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env = {"CUTE_PY_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": path}
    return _status_in_subprocess(env, code, first="").split(maxsplit=2)


def test_a_lock_made_before_torch_is_imported_is_the_launchers_where_torch_is_installed(Launcher, tmp_path):
    """A compiled object keeps the lock it is made with, and the native launcher takes only the extension's: so
    where torch is installed, a compiled object made before ``import torch`` (from specs, say) gets that lock, and
    a later call with torch tensors can still be launched natively. torch is not imported for it."""
    assert _new_lock_in_subprocess(tmp_path, True) == ["True", "False", "native"]


def test_without_torch_no_launcher_is_built_for_a_lock(tmp_path):
    import importlib.util

    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here: the lock is the launcher's (the test above)")
    assert _new_lock_in_subprocess(tmp_path, False) == ["False", "False", "not built yet"]


class SlowDriver(Driver):
    """A ``cuLaunchKernel`` that yields the interpreter before it reads the parameter slots (as the driver copies
    them while the GIL is free), and records what it read with the calling thread's expectation."""

    def __init__(self, slots):
        super().__init__()
        self.slots, self.local = slots, __import__("threading").local()

    def _launch(self, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        import time

        time.sleep(0)
        self.calls.append((tuple(self.slots), getattr(self.local, "expect", None)))
        return 0


def test_threads_refilling_through_the_launcher_each_launch_their_own_addresses(Launcher):
    import threading

    module = sys.modules[Launcher.__module__]
    slots = (ctypes.c_uint64 * 2)(0, 0)
    driver = SlowDriver(slots)
    lock = module.Lock()
    launcher = Launcher(driver.address, (0, 1), 2, lock)
    launcher.fallback = lambda *a, **k: pytest.fail("passed on")
    owner = types.SimpleNamespace(_last=None)
    base = ctypes.addressof(slots)
    launcher.arm(lambda *t: True, (256, 512), PLAN[:1],
                 (owner, ("_last",), (256, 256), ((base, 0, 0), (base + 8, 1, 64))))
    errors = []

    def work(t):
        try:
            a, b = Arg((1 + 2 * t) << 20), Arg((2 + 2 * t) << 20)
            driver.local.expect = (a.address, b.address + 64)
            for _ in range(200):
                launcher(a, b)
        except Exception as e:
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == [] and len(driver.calls) == 6 * 200
    wrong = [c for c in driver.calls if c[0] != c[1]]
    assert wrong == [], f"{len(wrong)} launches read another thread's addresses"


# -- the build: its switch, a library that cannot be loaded, a library of another source ------------------------

@pytest.mark.parametrize("value, off", [("OFF", True), ("False", True), (" No ", True), ("ON", False),
                                        ("True", False), ("", False)])
def test_the_switch_is_read_in_any_case(tmp_path, value, off):
    out = _status_in_subprocess({"CUTE_PY_NATIVE_LAUNCH": value, "CUTE_PY_CACHE_DIR": str(tmp_path)})
    if off:
        assert out.startswith("turned off"), out
    else:
        assert not out.startswith("turned off"), out


def test_an_unknown_switch_value_warns_and_turns_it_off(tmp_path):
    code = "import warnings\nprint(N.status())"
    script = ("import warnings\nwarnings.simplefilter('error')\nfrom cute_py.compiler.runtime import native as N\n"
              "try:\n    N.launcher_class()\nexcept RuntimeWarning as w:\n    print('warned:', w)\n")
    env = dict(os.environ, CUTE_PY_NATIVE_LAUNCH="maybe", CUTE_PY_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "warned:" in r.stdout and "'maybe'" in r.stdout and "turned off" in r.stdout
    del code


def test_a_compiler_whose_library_kills_its_loader_gives_no_launcher_and_a_living_process(Launcher, tmp_path):
    import shutil

    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    probe = subprocess.run([gcc, "-fsanitize=address", "-x", "c", "-shared", "-fPIC", "-", "-o",
                            str(tmp_path / "t.so")], input="int f(void){return 0;}", capture_output=True, text=True)
    if probe.returncode:
        pytest.skip(f"gcc cannot build with -fsanitize=address here: {probe.stderr[-200:]}")
    out = _status_in_subprocess({"CC": f"{gcc} -fsanitize=address", "CUTE_PY_CACHE_DIR": str(tmp_path / "c")})
    assert out != "native" and "child process" in out, out


def test_a_consistent_library_of_another_build_is_rebuilt(Launcher, tmp_path):
    import hashlib
    import shutil

    env = {"CUTE_PY_CACHE_DIR": str(tmp_path)}
    assert _status_in_subprocess(env) == "native"
    (lib,) = [p for p in (tmp_path / "native").iterdir() if not p.name.endswith(".sha256")]
    good = lib.read_bytes()
    # another build of a launcher (another key compiled in), with its own matching checksum next to it
    cc = shutil.which("cc") or shutil.which("gcc")
    import sysconfig

    from cute_py.compiler.runtime.native import build

    other = tmp_path / "other.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-I", sysconfig.get_paths()["include"],
                    '-DCUTE_PY_LAUNCH_KEY="not this one"', *build.C_FILES, "-o", str(other)], check=True,
                   cwd=build.source_dir())
    lib.write_bytes(other.read_bytes())
    (tmp_path / "native" / (lib.name + ".sha256")).write_text(hashlib.sha256(other.read_bytes()).hexdigest())
    assert _status_in_subprocess(env) == "native"
    assert lib.read_bytes() == good  # rebuilt from this source: the same bytes as the first build


# -- the C sources: package data of the wheel, the same code for every kernel -----------------------------------

def test_the_c_sources_are_files_of_the_package_and_none_is_kept_in_python_strings():
    import pathlib

    from cute_py.compiler.runtime.native import build

    here = pathlib.Path(build.source_dir())
    assert sorted(p.name for p in here.iterdir() if p.suffix in (".c", ".h")) == sorted(build.SOURCES)
    runtime = here.parent
    pattern = re.compile(r"#include\s*<Python\.h>|PyObject_HEAD|PyMODINIT_FUNC")
    strings = [p.name for p in runtime.rglob("*.py") if pattern.search(p.read_text())]
    assert strings == [], f"C source kept in Python modules: {strings}"


def test_a_wheel_ships_the_c_sources(tmp_path):
    """A non-editable install has the sources to build the launcher from: ``pip wheel`` of a copy of the tree
    (its package data), the wheel's file list checked."""
    import pathlib
    import shutil
    import zipfile

    from cute_py.compiler.runtime.native import build

    pytest.importorskip("setuptools")
    root = pathlib.Path(__file__).resolve().parents[1]
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, src / name)
    for package in ("cute_py", "mlir_dialects"):
        shutil.copytree(root / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    import importlib.util

    # this environment's setuptools builds the wheel when it can (its own bdist_wheel, or the wheel package);
    # otherwise pip builds it in an isolated environment with the build requirements of pyproject.toml
    local = any(importlib.util.find_spec(m) is not None for m in ("setuptools.command.bdist_wheel", "wheel"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "-w", str(tmp_path / "wheel"), "--no-deps",
                        "-q"] + (["--no-build-isolation"] if local else []),
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [s for s in build.SOURCES if f"cute_py/compiler/runtime/native/{s}" not in names]
    assert missing == [], f"the wheel lacks {missing}"


def test_without_its_sources_there_is_no_launcher_and_the_reason_says_so(tmp_path, monkeypatch):
    from cute_py.compiler.runtime.native import build

    monkeypatch.setattr(build, "source_dir", lambda: str(tmp_path))
    module, why = build.build_and_load()
    assert module is None and "C source launcher.h is not installed" in why
