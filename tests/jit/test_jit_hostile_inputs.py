"""Fuzz of the kernel language and the launch with hostile values.

Kernel builtins (mbarriers, barriers, shuffles, waits, fences, register fragments, tensor indexing, shared-memory
allocation, run-time loops and branches, register counts) and the launch configuration are given a value drawn
from plausible and hostile ones (floats, numpy scalars, ``None``, strings, bools, negative, zero and huge ints,
deep nesting, lists, objects of the wrong kind). Compiling either succeeds -- and the PTX assembles -- or raises
a ``CuteError``: no hang, and no other exception escapes the library.
"""

import fractions
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py import arch
from cute_py.errors import CuteError

DEEP = 4
for _ in range(60):
    DEEP = (DEEP,)

HOSTILE = [
    -1, 0, 1, 3, 32, 2**31, 2**40, 2**70, -(2**40), 1.5, 2.0, float("nan"), np.int64(2), np.int32(-2),
    np.float64(2.0), np.bool_(True), None, "4", "", True, False, [2, 4], [], (), (1, 1, 1), (2, None), DEEP,
    object(), {2: 4}, complex(1, 2), fractions.Fraction(3, 1), cute.Layout(4), cute.Float32,
    cute.AddressSpace.smem, cute.Int32(3),
]
ARRAY = cute.compiler.DeviceArraySpec("Int32", (64,))


def _use(case, v, g):
    """Inside the kernel: the builtin ``case`` with the hostile value ``v``."""
    tid, _, _ = arch.thread_idx()
    alloc = arch.SmemAllocator()
    bar = alloc.allocate_mbarrier()
    if case == "mbarrier_init count":
        arch.mbarrier_init(bar, v)
    elif case == "mbarrier_init barrier":
        arch.mbarrier_init(v, 1)
    elif case == "mbarrier_wait phase":
        arch.mbarrier_wait(bar, v)
    elif case == "expect_tx bytes":
        arch.mbarrier_arrive_and_expect_tx(bar, v)
    elif case == "range":
        for i in cute.range(v):
            g[0] = i
    elif case == "range unroll":
        for i in cute.range(4, unroll=v):
            g[0] = i
    elif case == "if_":
        with cute.compiler.if_(v):
            g[0] = 1
    elif case == "shuffle value":
        g[0] = arch.shuffle_sync(v, 0)
    elif case == "shuffle offset":
        g[0] = arch.shuffle_sync(tid, v)
    elif case == "named barrier":
        arch.barrier(barrier_id=v)
    elif case == "cp_async_wait_group":
        arch.cp_async_wait_group(v)
    elif case == "tma_store_wait":
        arch.tma_store_wait(v)
    elif case == "setmaxregister":
        arch.setmaxregister_increase(v)
    elif case == "named barrier threads":
        arch.barrier_arrive(barrier_id=1, number_of_threads=v)
    elif case == "shuffle mask":
        g[0] = arch.shuffle_sync(tid, 0, v)
    elif case == "fence_proxy":
        arch.fence_proxy(v)
    elif case == "fence_proxy space":
        arch.fence_proxy("async.shared", space=v)
    elif case == "make_fragment":
        cute.make_fragment(v, cute.Int32)
    elif case == "fragment index":
        frag = cute.make_fragment(cute.Layout(4), cute.Int32)
        frag[v] = 1
    elif case == "gmem read":
        g[1] = g[v]
    elif case == "gmem store":
        g[0] = v
    elif case == "smem allocate":
        alloc.allocate(v)
    elif case == "smem tensor":
        alloc.allocate_tensor(cute.Float32, v)
    elif case == "vote":
        g[0] = arch.vote_ballot_sync(v)


KERNEL_CASES = ["mbarrier_init count", "mbarrier_init barrier", "mbarrier_wait phase", "expect_tx bytes", "range",
                "range unroll", "if_", "shuffle value", "shuffle offset", "named barrier", "cp_async_wait_group",
                "tma_store_wait", "setmaxregister", "named barrier threads", "shuffle mask", "fence_proxy",
                "fence_proxy space", "make_fragment", "fragment index", "gmem read",
                "gmem store", "smem allocate", "smem tensor", "vote"]
LAUNCH_CASES = ["grid", "block", "cluster", "smem"]


@cute.kernel
def _kernel(g, case, v):
    _use(case, v, g)


def _compile(case, v):
    launch = {"grid": 2, "block": 32}
    if case in LAUNCH_CASES:
        launch[case] = v

    def host(g):
        _kernel(g, case, v if case in KERNEL_CASES else 1).launch(**launch)

    return cute.compile(host, ARRAY)


def _with_watchdog(fn, *args):
    def alarm(*_):
        raise TimeoutError(f"compiling hung on {args!r}")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(30)
    try:
        return fn(*args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=st.sampled_from(KERNEL_CASES + LAUNCH_CASES), v=st.sampled_from(HOSTILE))
def test_builtins_and_launches_take_a_hostile_value_or_raise_a_cute_error(case, v, assemble):
    try:
        compiled = _with_watchdog(_compile, case, v)
    except CuteError as e:
        assert str(e)
        return
    assemble(compiled.ptx)


def test_jit_entry_points_reject_what_is_not_a_function_or_a_scalar():
    for bad in (None, 3, "f", object()):
        with pytest.raises(CuteError):
            cute.compile(bad)
    for bad in (1.5, "3", None, object(), 2**40):
        with pytest.raises(CuteError):
            cute.Int32(bad)


@pytest.mark.parametrize("case, v, match", [
    ("fence_proxy", {2: 4}, "fence_proxy: kind must be one of"),
    ("fence_proxy space", {2: 4}, r"fence_proxy: kind 'async.shared' needs space='cta' or space='cluster'"),
    ("setmaxregister", {2: 4}, "setmaxregister_increase: reg_count must be a static Python int"),
    ("make_fragment", 2**31, "fragments are limited to 65536 elements"),
    ("mbarrier_init count", 2**70, "does not fit in 32 bits"),
    ("range unroll", 2**40, r"unroll must be None, an int in 1..2\^31-1"),
    ("range", 2**70, "does not fit in 32 bits"),
])
def test_values_the_fuzz_found_are_cute_errors(case, v, match):
    with pytest.raises(CuteError, match=match):
        _with_watchdog(_compile, case, v)


# -- a helper that recurses without end while the kernel is traced ----------------------------------------------


def _endless(x):
    return _endless(x + 1)  # the recursing line


def _ping(x, n):
    return _pong(x, n + 1)


def _pong(x, n=0):
    if n < 0:  # never true: n only grows
        return x
    return _ping(x * 2, n)  # the recursing line


def _until_runtime_zero(x):
    with cute.compiler.if_(x == 0):  # a run-time condition does not end a trace-time recursion
        pass
    return _until_runtime_zero(x - 1)  # the recursing line


@pytest.mark.parametrize("where", ["body", "loop", "branch"])
@pytest.mark.parametrize("helper", [_endless, _pong, _until_runtime_zero])
def test_endless_recursion_of_a_kernel_helper_is_a_trace_error_at_its_line(helper, where):
    import inspect
    import re

    @cute.kernel
    def k(t):
        tid, _, _ = arch.thread_idx()
        if where == "body":
            t[0] = helper(t[1])
        elif where == "loop":
            for i in cute.range(tid):
                t[i] = helper(t[1])
        else:
            with cute.compiler.if_(tid == 0):
                t[0] = helper(t[1])

    @cute.jit
    def f(t):
        k(t).launch(grid=1, block=32)

    with pytest.raises(cute.compiler.TraceError) as e:
        cute.compile(f, ARRAY)
    src, first = inspect.getsourcelines(helper)
    line = first + next(i for i, s in enumerate(src) if "the recursing line" in s)
    name = helper.__name__
    assert str(e.value).startswith(f"{inspect.getsourcefile(helper)}:{line}: "), str(e.value)
    assert re.search(rf"the function {name} recursed without end while tracing the kernel k", str(e.value))
    assert "base case" in str(e.value)


def _host_endless(n):
    return _host_endless(n + 1)  # the recursing line


def test_endless_recursion_of_a_host_helper_is_a_trace_error_at_its_line():
    import inspect

    @cute.jit
    def f(t):
        _host_endless(0)

    with pytest.raises(cute.compiler.TraceError) as e:
        cute.compile(f, ARRAY)
    src, first = inspect.getsourcelines(_host_endless)
    line = first + next(i for i, s in enumerate(src) if "the recursing line" in s)
    assert str(e.value).startswith(f"{inspect.getsourcefile(_host_endless)}:{line}: "), str(e.value)
    assert "recursed without end while tracing the jit function f" in str(e.value)
