"""One compiled object called from many threads, each with its own tensors (and scalars): every launch the
stand-in driver records holds its own call's parameters. The driver yields the interpreter before it reads the
parameters (as cuda-python's binding releases the GIL around ``cuLaunchKernel``), and the interpreter switches
threads as often as it can, so that a refill by one thread between another's refill and launch would be seen."""

import sys
import threading

import pytest

from cute_py.compiler.runtime.compiled import CallState
from cute_py.errors import CuteError
from examples import tma_copy
from _recording_driver import driver, fresh, launched_with  # noqa: F401 (the fixture)
from test_call_state import CAI, _generated, _scal_compiled, _tma_compiled, scal
from test_jit_compiled_call import FakeTorchTensor

THREADS, CALLS = 8, 60


@pytest.fixture(autouse=True)
def _often(monkeypatch):
    for jf in (scal, tma_copy):
        monkeypatch.setattr(jf, "_compiled", {})
        monkeypatch.setattr(jf, "_last", None)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def _hammer(driver, c, calls_of):
    """Each thread ``t`` calls ``c`` with each of ``calls_of(t)`` in turn, CALLS times; the parameters of every
    launch must be those a fresh object launches for that call (computed first, on one thread)."""
    expected = {}
    for t in range(THREADS):
        for args in calls_of(t):
            expected[id(args)] = [(r["params"], r["grid"]) for r in launched_with(driver, fresh(c), *args)]
    driver.calls.clear()
    driver.yield_first = True
    errors = []

    def work(t):
        try:
            mine = calls_of(t)
            for k in range(CALLS):
                args = mine[k % len(mine)]
                driver.local.expect = id(args)
                c(*args)
        except Exception as e:  # reported below, with the thread
            errors.append((t, e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(driver.calls) == THREADS * CALLS
    wrong = [r for r in driver.calls if [(r["params"], r["grid"])] != expected[r["expect"]]]
    assert wrong == [], f"{len(wrong)} of {len(driver.calls)} launches held another call's parameters"


def test_threads_on_the_general_path_launch_their_own_tensors(driver):
    c = fresh(_tma_compiled())
    calls = {t: [(CAI((1 + 2 * t) << 24, (256, 512)), CAI((2 + 2 * t) << 24, (256, 512))),
                 (CAI((40 + t) << 24, (256, 512)), CAI((1 + 2 * t) << 24, (256, 512)))] for t in range(THREADS)}
    _hammer(driver, c, calls.__getitem__)


def test_threads_with_run_time_scalars_launch_their_own_values(driver):
    c = fresh(_scal_compiled())
    calls = {t: [(CAI((1 + t) << 24), t, 0.5 * t, -t), (CAI((1 + t) << 24), 100 + t, 2.0, 2**40 + t)]
             for t in range(THREADS)}
    _hammer(driver, c, calls.__getitem__)


def test_threads_on_the_generated_path_launch_their_own_tensors(driver, monkeypatch):
    c, _ = _generated(driver, monkeypatch)
    calls = {t: [(FakeTorchTensor((1 + 2 * t) << 24), FakeTorchTensor((2 + 2 * t) << 24)),
                 (FakeTorchTensor((40 + t) << 24), FakeTorchTensor((1 + 2 * t) << 24))] for t in range(THREADS)}
    _hammer(driver, c, calls.__getitem__)


def test_a_thread_whose_call_fails_leaves_the_others_launches_intact(driver):
    c = fresh(_scal_compiled())
    good = {t: [(CAI((1 + t) << 24), t, 1.0, t)] for t in range(THREADS)}
    expected = {t: launched_with(driver, fresh(c), *good[t][0])[0]["params"] for t in range(THREADS)}
    driver.calls.clear()
    driver.yield_first = True
    refused = []

    def work(t):
        for k in range(CALLS):
            driver.local.expect = t
            if k % 3 == 2:
                try:
                    c(CAI((1 + t) << 24), "bad", 1.0, t)
                except CuteError:
                    refused.append(t)
            else:
                c(*good[t][0])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(refused) == THREADS * (CALLS // 3)
    assert all(r["params"] == expected[r["expect"]] for r in driver.calls)


class TorchLike(FakeTorchTensor):
    """Seen by the run-time-shaped path as a torch tensor (its module is torch's)."""


TorchLike.__module__ = "torch"


def test_threads_on_the_generated_run_time_shaped_path_launch_their_own_tensors(driver, monkeypatch):
    import cute_py as cute
    import cute_py.compiler.specs.args as args_mod

    monkeypatch.setattr(args_mod, "_is_torch", lambda x: False)
    spec = cute.compiler.DeviceArraySpec("Float32", (cute.sym_int(), cute.sym_int(divisibility=64)))
    c = fresh(cute.compile(tma_copy, spec, spec, (128, 64), "none"))
    t1, t2 = TorchLike(1 << 26), TorchLike(1 << 27)
    c(t1, t2)
    c(t1, t2)
    assert c._state is CallState.FAST

    def pair(a, b, rows):
        return TorchLike(a, shape=(rows, 512)), TorchLike(b, shape=(rows, 512))

    calls = {t: [pair((1 + 2 * t) << 24, (2 + 2 * t) << 24, 256), pair((1 + 2 * t) << 24, (2 + 2 * t) << 24, 256),
                 pair((40 + t) << 24, (1 + 2 * t) << 24, 128 * (1 + t % 3))] for t in range(THREADS)}
    _hammer(driver, c, calls.__getitem__)


@pytest.mark.parametrize("path", ["general", "generated"])
def test_threads_with_no_current_context_launch_once_it_is_made_current(driver, monkeypatch, path):
    """A thread that made no CUDA call has no current context (the driver answers CUDA_ERROR_INVALID_CONTEXT): the
    call makes the module's context current there and launches, once, with its own parameters."""
    if path == "generated":
        c, _ = _generated(driver, monkeypatch)
        calls = {t: [(FakeTorchTensor((1 + 2 * t) << 24), FakeTorchTensor((2 + 2 * t) << 24))] for t in range(THREADS)}
    else:
        c = fresh(_tma_compiled())
        calls = {t: [(CAI((1 + 2 * t) << 24, (256, 512)), CAI((2 + 2 * t) << 24, (256, 512)))] for t in range(THREADS)}
    c(*calls[0][0])  # loaded here, in the thread whose context it is
    driver.contexts_per_thread = True
    _hammer(driver, c, calls.__getitem__)
    assert driver.context_sets == THREADS  # once per thread: later calls find it current


def test_threads_with_no_current_context_encode_their_tma_descriptors_once_it_is_made_current(driver, monkeypatch):
    """The driver encodes a TMA descriptor in the calling thread's context: a thread with none gets the module's
    made current, and its launches hold descriptors of its own addresses."""
    from cute_py.compiler.runtime.compiled import Compiled
    from cute_py.errors import TmaEncodeError
    from cute_py.nvgpu.tma import TmaDescriptor
    from _recording_driver import fake_encode

    monkeypatch.setattr(Compiled, "_descriptor", _ORIGINAL_DESCRIPTOR)

    def encode(self, address=None):
        if not driver.cuCtxGetCurrent()[1]:
            raise TmaEncodeError("cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_CONTEXT")
        return fake_encode(None, self, address)

    monkeypatch.setattr(TmaDescriptor, "encode", encode)
    c = fresh(_tma_compiled())
    calls = {t: [(CAI((1 + 2 * t) << 24, (256, 512)), CAI((2 + 2 * t) << 24, (256, 512)))] for t in range(THREADS)}
    c(*calls[0][0])
    driver.contexts_per_thread = True
    _hammer(driver, c, calls.__getitem__)
    assert driver.context_sets == THREADS


def _original_descriptor():
    from cute_py.compiler.runtime.compiled import Compiled

    return Compiled._descriptor


_ORIGINAL_DESCRIPTOR = _original_descriptor()  # before the driver fixture replaces it with its stand-in
