"""One compiled object called from several threads on a Hopper GPU, each thread with its own tensors, streams and
run-time scalars: every byte of every result checked (a launch that took another thread's parameters would copy
into or from the wrong tensor). Also the streams the DSL accepts (torch, ``__cuda_stream__``, cuda-python
``CUstream``, numpy handles) launching on that stream, and the refused ones launching nothing.

These need a CUDA device (sm_90) and torch."""

import threading

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0)")
pytest.importorskip("numpy", reason="the GPU helpers use numpy")

import numpy as np  # noqa: E402

import cute_py as cute  # noqa: E402
from cute_py import arch  # noqa: E402
from cute_py.demo.kernel import tma_copy  # noqa: E402
from cute_py.errors import ArgumentError, CuteError  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu
SHAPE = (256, 128)
THREADS, CALLS = 2, 300


def _copy_compiled(torch):
    src = torch.randn(SHAPE, device="cuda").to(torch.float16)
    dst = torch.empty_like(src)
    c = tma_copy.compile(src, dst)
    c(src, dst)
    c(src, dst)  # the generated path (and the native launcher where it is built)
    torch.cuda.synchronize()
    assert torch.equal(dst, src)
    return c


def _run_threads(work):
    errors = []

    def guarded(t):
        try:
            work(t)
        except BaseException as e:  # reported below with the thread
            errors.append((t, e))

    threads = [threading.Thread(target=guarded, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


def test_two_threads_each_copy_their_own_tensors():
    torch = hopper_torch()
    c = _copy_compiled(torch)
    pairs = {t: [(torch.randn(SHAPE, device="cuda").to(torch.float16),
                  torch.full(SHAPE, float(-1 - t), device="cuda", dtype=torch.float16)) for _ in range(4)]
             for t in range(THREADS)}
    torch.cuda.synchronize()

    def work(t):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for k in range(CALLS):
                src, dst = pairs[t][k % 4]
                dst.fill_(-7.0)
                c(src, dst, stream=stream)
                if k % 25 == 0:  # checked as it goes, not only at the end
                    stream.synchronize()
                    assert torch.equal(dst.view(torch.int16), src.view(torch.int16)), (t, k)
            stream.synchronize()
        for src, dst in pairs[t]:
            assert torch.equal(dst.view(torch.int16), src.view(torch.int16)), t

    _run_threads(work)


def test_two_threads_on_the_default_stream_each_copy_their_own_tensors():
    torch = hopper_torch()
    c = _copy_compiled(torch)
    pairs = {t: [(torch.randn(SHAPE, device="cuda").to(torch.float16),
                  torch.zeros(SHAPE, device="cuda", dtype=torch.float16)) for _ in range(8)]
             for t in range(THREADS)}
    torch.cuda.synchronize()

    def work(t):
        for k in range(CALLS):
            src, dst = pairs[t][k % 8]
            c(src, dst)

    _run_threads(work)
    torch.cuda.synchronize()
    for t in range(THREADS):
        for src, dst in pairs[t]:
            assert torch.equal(dst.view(torch.int16), src.view(torch.int16)), t


@cute.kernel
def _fill_kernel(a, n, x):
    tidx, _, _ = arch.thread_idx()
    if tidx < n:
        a[tidx] = x


@cute.jit
def fill(a, n: cute.Int32, x: cute.Float32):
    _fill_kernel(a, n, x).launch(grid=1, block=128)


def test_two_threads_each_pass_their_own_run_time_scalars():
    torch = hopper_torch()
    bufs = {t: torch.zeros(128, device="cuda") for t in range(THREADS)}
    c = cute.compile(fill, bufs[0], 1, 1.0)

    def work(t):
        stream = torch.cuda.Stream()
        for k in range(CALLS):
            n, x = 1 + (k * 7 + t) % 128, float(k * 10 + t)
            bufs[t].zero_()  # on the default stream; ordered before the launch by a sync
            torch.cuda.synchronize()
            c(bufs[t], n, x, stream=stream)
            stream.synchronize()
            got = bufs[t].cpu()
            assert torch.all(got[:n] == x) and torch.all(got[n:] == 0), (t, k, n, x)

    _run_threads(work)


class Protocol:
    def __init__(self, stream):
        self.stream = stream

    def __cuda_stream__(self):
        return (0, self.stream.cuda_stream)


def test_streams_the_dsl_accepts_launch_on_that_stream_and_others_launch_nothing():
    torch = hopper_torch()
    from cuda.bindings import driver as cu

    c = _copy_compiled(torch)
    src = torch.randn(SHAPE, device="cuda").to(torch.float16)
    s = torch.cuda.Stream()
    for given in (s, Protocol(s), cu.CUstream(s.cuda_stream), np.uint64(s.cuda_stream), s.cuda_stream, None):
        dst = torch.zeros_like(src)
        torch.cuda.synchronize()
        c(src, dst, stream=given)
        if given is None:
            torch.cuda.synchronize()
        else:
            s.synchronize()
        assert torch.equal(dst, src), given
    dst = torch.zeros_like(src)
    torch.cuda.synchronize()
    for bad in (1.5, True, "1", -1, 2**64, object()):
        with pytest.raises(ArgumentError, match="a stream is"):
            c(src, dst, stream=bad)
    torch.cuda.synchronize()
    assert torch.count_nonzero(dst) == 0


def test_a_failed_call_does_not_change_what_the_next_call_launches():
    torch = hopper_torch()
    bufs = [torch.zeros(128, device="cuda") for _ in range(2)]
    c = cute.compile(fill, bufs[0], 1, 1.0)
    c(bufs[0], 5, 2.0)
    with pytest.raises(CuteError):
        c(bufs[1], "5", 2.0)
    with pytest.raises(CuteError):
        c(bufs[1], 2**31, 2.0)
    c(bufs[0], 6, 3.0)
    torch.cuda.synchronize()
    assert torch.all(bufs[0][:6] == 3.0) and torch.all(bufs[0][6:] == 0)
    assert torch.count_nonzero(bufs[1]) == 0
