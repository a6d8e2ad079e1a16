"""The order in which the benchmarks time their columns (``benchmarks/_rounds.py``): every column once a round, and over ``2 n``
rounds each column first and last equally often, and right after each other column as often as right before it
(the card is power-capped: a column always timed first, or always after a given one, would run on another clock)."""

import math
import os
import sys
from collections import Counter

import pytest
from hypothesis import given, strategies as st

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
from _rounds import calls_for, faster, paired, round_orders  # noqa: E402


@given(st.integers(1, 12), st.integers(1, 40))
def test_every_column_is_timed_once_a_round(n, rounds):
    orders = round_orders(n, rounds)
    assert len(orders) == rounds and all(sorted(o) == list(range(n)) for o in orders)


@pytest.mark.parametrize("n", range(1, 9))
def test_over_2n_rounds_no_column_is_favoured_by_its_place(n):
    orders = round_orders(n, 2 * n)
    assert Counter(o[0] for o in orders) == Counter({c: 2 for c in range(n)})
    assert Counter(o[-1] for o in orders) == Counter({c: 2 for c in range(n)})
    after = Counter((o[i], o[i + 1]) for o in orders for i in range(n - 1))
    assert all(after[a, b] == after[b, a] for a, b in after)


def test_two_columns_alternate_from_round_to_round():
    # ours, cuBLAS: each is first in every other pair of rounds
    assert round_orders(2, 6) == [[0, 1], [1, 0], [1, 0], [0, 1], [0, 1], [1, 0]]


def test_paired_takes_the_median_of_the_rounds_ratios():
    # column 1 ran at half column 0's speed in every round but one; the clock fell by 2x over the rounds
    samples = [[1.0, 2.0, 4.0, 8.0, 3.0], [2.0, 4.0, 8.0, 4.0, 6.0]]
    assert paired(samples, 0, 1) == 2.0
    assert paired(samples, 1, 0) == 0.5
    # by name, a column not timed giving nan
    named = {"ours": samples[0], "theirs": samples[1]}
    assert faster(named, "ours", "theirs") == 2.0 and faster(named, "theirs", "ours") == 0.5
    assert math.isnan(faster(named, "ours", "absent"))


@given(st.floats(1e-9, 10.0), st.integers(1, 100), st.floats(0.0, 100.0))
def test_a_timing_lasts_min_ms_or_reps_calls(seconds, reps, min_ms):
    calls = calls_for(seconds, reps, min_ms)
    assert calls >= reps and calls <= max(reps, 100000)
    assert calls == reps or calls == 100000 or calls * seconds >= min_ms * 1e-3 * (1 - 1e-12)
    assert calls in (reps, 100000) or (calls - 1) * seconds < min_ms * 1e-3


def test_a_call_of_no_measured_time_keeps_reps():
    assert calls_for(0.0, 7, 5.0) == 7 and calls_for(float("nan"), 7, 5.0) == 7
    # a time so small that min_ms over it overflows to infinity: the cap, not an OverflowError
    assert calls_for(5e-324, 7, 5.0) == 100000 and calls_for(5e-324, 0, 1.0) == 100000
    # no time to fill (min_ms 0 or below): reps, even where min_ms over the time would be minus infinity
    assert calls_for(2.2250738585e-313, 0, -1.0) == 1 and calls_for(1e-6, 3, 0.0) == 3


@given(st.floats(0.0, 10.0), st.integers(-5, 0), st.floats(-1.0, 1.0))
def test_a_timing_makes_at_least_one_call(seconds, reps, min_ms):
    assert calls_for(seconds, reps, min_ms) >= 1


class _FakeTorch:
    """A stand-in for torch's CUDA events over a clock that each timed function advances by its cost."""

    def __init__(self):
        self.now_ms = 0.0
        fake = self

        class Event:
            def __init__(self, enable_timing):
                assert enable_timing

            def record(self):
                self.at = fake.now_ms

            def synchronize(self):
                pass

            def elapsed_time(self, end):
                return end.at - self.at

        class cuda:
            pass

        cuda.Event = Event
        cuda.synchronize = staticmethod(lambda: None)
        self.cuda = cuda


def test_interleaved_times_each_function_at_its_own_cost(monkeypatch):
    """Every function's samples are its cost a call (the clock the fake events read advances by it), one sample a
    round; a function timed over at least ``min_ms``; the calls of a round in the round's order."""
    from _rounds import interleaved

    torch = _FakeTorch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    costs_ms = [0.01, 2.0, 0.5]
    calls = [[] for _ in costs_ms]

    def fn(i):
        def call():
            torch.now_ms += costs_ms[i]
            calls[i].append(torch.now_ms)
        return call

    samples = interleaved([fn(i) for i in range(3)], reps=20, rounds=6, min_ms=5.0)
    assert [len(s) for s in samples] == [6, 6, 6]
    for cost, got in zip(costs_ms, samples):
        assert all(abs(t - cost * 1e-3) < 1e-12 for t in got)
    # 3 warm-up calls, 1 to size the timing, then 6 timings of max(20, 5 ms / cost) calls
    assert [len(c) for c in calls] == [4 + 6 * 500, 4 + 6 * 20, 4 + 6 * 20]
