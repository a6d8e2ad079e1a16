"""Run-time loops inside the first trace of an enclosing run-time loop (a trial) are traced once there and stand in
for their exits (``flow.loops.TRIALS``): the kernels are the ones that tracing every loop to its settled state gives,
the same PTX for arbitrary programs, and a nested loop is traced fewer times."""

import os

from hypothesis import example, given, settings, strategies as st

from _control_flow_helpers import compile_kernel
from _random_programs import load_module, make

import cute_py as cute
from cute_py import arch
from cute_py.compiler.flow import loops


def _both(kernel, *args):
    """The PTX of ``kernel`` with the trials and without them (no disk cache: a compile each). (The traced modules
    differ in the empty blocks thrown-away traces leave behind, unreachable: dropped by the lowering.)"""
    saved, env = loops.TRIALS, os.environ.get("CUTE_PY_CACHE_DIR")
    os.environ["CUTE_PY_CACHE_DIR"] = ""
    try:
        texts = []
        for trials in (False, True):
            loops.TRIALS = trials
            texts.append(compile_kernel(kernel, *args).ptx)
        return texts
    finally:
        loops.TRIALS = saved
        if env is None:
            del os.environ["CUTE_PY_CACHE_DIR"]
        else:
            os.environ["CUTE_PY_CACHE_DIR"] = env


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**32 - 1))
@example(seed=576)
def test_trials_leave_a_random_kernel_as_settled_traces_leave_it(tmp_path_factory, seed):
    tmp_path = tmp_path_factory.mktemp("programs")
    source = make(seed)
    kernel = load_module(tmp_path / f"trial_kernel_{seed}.py", source, f"_trial_kernel_{seed}").kernel
    without, with_trials = _both(kernel, cute.Int32(0))
    assert with_trials == without, source


def _chain_kernel(counts):
    @cute.kernel
    def k(n):
        tid, _, _ = arch.thread_idx()
        total = 0
        for i in range(tid):
            x = 0
            y = 0
            z = 0
            for j in range(n):
                counts[0] += 1  # once a trace of the body
                x = y       # carried from the third trace on
                y = z       # from the second
                z = z + j   # from the first
            for j2 in range(n):
                for j3 in range(tid):
                    counts[1] += 1
                    x = x + j3
            total = total + x + i
        if total == 12345:
            arch.sync_threads()

    return k


def test_a_loop_in_a_loop_is_traced_fewer_times_into_the_same_kernel():
    counts = [0, 0]
    k = _chain_kernel(counts)
    seen = []

    def run(trials):
        saved = loops.TRIALS
        loops.TRIALS = trials
        counts[:] = [0, 0]
        try:
            os.environ["CUTE_PY_CACHE_DIR"] = ""
            text = compile_kernel(k, cute.Int32(0)).ptx
        finally:
            loops.TRIALS = saved
        seen.append(tuple(counts))
        return text

    assert run(False) == run(True)
    (inner_off, deep_off), (inner_on, deep_on) = seen
    assert inner_on < inner_off and deep_on < deep_off, seen
