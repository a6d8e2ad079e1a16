"""Timing several columns side by side on a power-capped GPU: interleaved rounds and ratios within a round.

Under sustained load a power-capped card's clock falls, and it rises again while the host checks outputs. A
column always timed first (after the idle time of the checks), or always right after a given other one, would run
on another clock than the rest. So :func:`interleaved` times every column once a round, in the orders of
:func:`round_orders`, each timing a run of back-to-back launches between two CUDA events that lasts at least
``min_ms`` (a kernel shorter than its host call is timed at the host's pace; one launch per pair of events, synced
after each, would count every launch's host time). :func:`paired` compares two columns round by round: the median
of the rounds' ratios, each taken from two timings a few milliseconds apart on one clock, which a clock drifting
over the run moves less than a ratio of the two columns' medians.
"""

import math
import statistics

__all__ = ["round_orders", "interleaved", "paired", "faster", "calls_for", "event_time"]


def round_orders(n, rounds):
    """The order of ``n`` columns in each of ``rounds`` rounds: rotated by one every second round, and reversed in
    every odd one (round ``r``: the rotation by ``r // 2``, reversed if ``r`` is odd). Over ``2 n`` rounds each
    column is first twice and last twice, and comes right after each other column as often as before it."""
    orders = []
    for r in range(rounds):
        shift = r // 2 % n
        order = list(range(shift, n)) + list(range(shift))
        orders.append(order[::-1] if r % 2 else order)
    return orders


def calls_for(seconds_a_call, reps, min_ms):
    """How many back-to-back launches one timing makes: ``reps`` (at least 1), or more where they would last less
    than ``min_ms`` milliseconds (a call measured at ``seconds_a_call``); at most 100000."""
    reps = max(1, reps)
    if seconds_a_call <= 0 or not math.isfinite(seconds_a_call) or not min_ms > 0:  # (no time to fill: reps)
        return reps
    return max(reps, math.ceil(min(100000.0, min_ms * 1e-3 / seconds_a_call)))  # (a tiny time: no infinite count)


def event_time(torch, fn, calls):
    """Seconds a call of ``fn``: ``calls`` back-to-back calls between two CUDA events, their time over ``calls``."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3 / calls


def interleaved(fns, reps=20, rounds=6, min_ms=5.0):
    """Each of ``fns``' seconds a call in each round: a list of ``rounds`` samples a function. A round times each
    function once, over ``reps`` back-to-back launches or as many as last ``min_ms`` milliseconds (the count is
    fixed per function from one timed warm-up launch, so that every round times the same work), in the orders of
    :func:`round_orders`."""
    import torch

    counts = []
    for fn in fns:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        counts.append(calls_for(event_time(torch, fn, 1), reps, min_ms))
    samples = [[] for _ in fns]
    for order in round_orders(len(fns), rounds):
        for i in order:
            samples[i].append(event_time(torch, fns[i], counts[i]))
    return samples


def paired(samples, i, j):
    """How many times faster column ``i`` ran than column ``j``: the median over the rounds of ``j``'s time over
    ``i``'s in the same round (``samples`` as :func:`interleaved` gives them)."""
    return statistics.median(tj / ti for ti, tj in zip(samples[i], samples[j]))


def faster(samples, a, b):
    """:func:`paired` of the columns named ``a`` and ``b`` of ``samples`` (a dict of each name's rounds); nan where
    ``b`` was not timed."""
    return paired([samples[a], samples[b]], 0, 1) if b in samples else float("nan")
