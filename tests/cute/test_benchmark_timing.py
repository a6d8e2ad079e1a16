"""``testing.benchmark``'s timings without a GPU: a stand-in driver whose clock moves only when a timed call or an
L2 flush runs (each call of the benchmarked function takes the next duration of a table), so every sample, the
mean, median, min, max and spread are known; with ``cold_l2`` the flush is outside every sample and writes twice
the L2 before each call."""

import pytest

import cute_py as cute

pytest.importorskip("cuda.bindings")


class _Driver:
    """Events read a clock in microseconds; the benchmarked function advances it (``work``)."""

    class CUresult:
        CUDA_SUCCESS = 0

    class CUdevice_attribute:
        CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38

    def __init__(self, l2=50 << 20, flush_us=100.0):
        self.clock, self.events, self.l2, self.flush_us = 0.0, {}, l2, flush_us
        self.memsets, self.freed, self.destroyed = [], [], 0

    def work(self, us):
        self.clock += us

    def CUstream(self, handle):
        return handle

    def cuEventCreate(self, flags):
        k = len(self.events)
        self.events[k] = None
        return (0, k)

    def cuEventRecord(self, e, stream):
        self.events[e] = self.clock
        return (0,)

    def cuEventSynchronize(self, e):
        return (0,)

    def cuEventElapsedTime(self, a, b):
        return (0, (self.events[b] - self.events[a]) / 1e3)

    def cuEventDestroy(self, e):
        self.destroyed += 1
        return (0,)

    def cuCtxGetDevice(self):
        return (0, 0)

    def cuDeviceGetAttribute(self, attr, dev):
        return (0, self.l2)

    def cuMemAlloc(self, size):
        return (0, 0xABC000)

    def cuMemFree(self, ptr):
        self.freed.append(ptr)
        return (0,)

    def cuMemsetD8Async(self, ptr, value, size, stream):
        self.memsets.append((ptr, size))
        self.clock += self.flush_us
        return (0,)


@pytest.fixture
def fake(monkeypatch):
    import cuda.bindings

    d = _Driver()
    monkeypatch.setattr(cuda.bindings, "driver", d, raising=False)
    return d


def _timed(d, durations, **kw):
    from cute_py.testing import benchmark

    kw.setdefault("warmup_iterations", 0)
    calls = iter([0.5] * kw["warmup_iterations"] + list(durations))
    return benchmark(lambda: d.work(next(calls)), iterations=len(durations), **kw)


def test_each_call_is_a_sample_and_the_mean_is_the_dsls(fake):
    t = _timed(fake, [1.0, 2.0, 3.0, 10.0], warmup_iterations=2)
    assert float(t) == pytest.approx(4.0) and t.samples == pytest.approx((1.0, 2.0, 3.0, 10.0))
    assert (t.median, t.min, t.max) == pytest.approx((2.5, 1.0, 10.0)) and t.spread == pytest.approx(9.0 / 2.5)
    assert t * 2 == pytest.approx(8.0) and isinstance(t, float)
    assert fake.memsets == [] and fake.destroyed == len(fake.events)


def test_a_cold_l2_flush_runs_before_each_call_and_stays_out_of_its_time(fake):
    t = _timed(fake, [4.0, 1.0, 7.0], cold_l2=True)
    assert float(t) == pytest.approx(4.0) and t.samples == pytest.approx((4.0, 1.0, 7.0)) and t.median == 4.0
    assert fake.memsets == [(0xABC000, 2 * (50 << 20))] * 3 and fake.freed == [0xABC000]
    assert fake.destroyed == len(fake.events)


def test_an_odd_number_of_samples_has_its_middle_as_median(fake):
    t = _timed(fake, [9.0, 3.0, 5.0])
    assert t.median == 5.0 and "3 samples" in repr(t)


def test_cold_l2_and_cuda_graphs_do_not_go_together(fake):
    with pytest.raises(cute.CuteValueError, match="cold_l2 needs each call timed on its own"):
        _timed(fake, [1.0], cold_l2=True, use_cuda_graphs=True, stream=7)
