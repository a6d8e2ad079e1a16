"""The combines of the row kernels' cluster reductions (examples/row_reduce.py): each is symmetric in its operands
bit for bit, and its identity changes no value, so a butterfly over the lanes, each lane holding one CTA's partial
or the identity, gives every lane of every CTA the same bits; and the butterfly in the kernels: one partial loaded a
lane and ``log2`` steps of shuffles, where the rank-order combine loaded all of them (softmax over 13 CTAs took 128
registers a thread with nvJitLink 13.5, 96 now)."""

import math
import re
import struct

import pytest
from hypothesis import given, settings, strategies as st

import cute_py as cute
import examples as ex
from examples.cross_entropy import _max_sum_shifted
from examples.row_reduce import ADD_IDENTITY, MAX_SUM_IDENTITY, add, max_sum
from _cubin_report import cubin_resources

F = cute.compiler.DeviceArraySpec
floats = st.floats(allow_nan=True, allow_infinity=True, width=32)
# the pairs a part of a row can have: a max that is a number with a sum >= 0, a part of -inf only (max -inf, sum
# 0), or one with +inf (its sum exp(inf - inf) is NaN)
pairs = st.one_of(st.tuples(st.floats(allow_nan=False, allow_infinity=False, width=32),
                            st.floats(min_value=0.0, allow_nan=False, allow_infinity=False, width=32)),
                  st.just((-math.inf, 0.0)), st.just((math.inf, math.nan)))
COMBINES = [(max_sum, MAX_SUM_IDENTITY), (_max_sum_shifted, MAX_SUM_IDENTITY)]


def _bits(values):
    """The values' bits (a NaN as one NaN: its payload is not the point)."""
    return tuple(b"nan" if math.isnan(v) else struct.pack("<d", v) for v in values)


@settings(max_examples=400, deadline=None)
@given(a=st.tuples(floats), b=st.tuples(floats))
def test_sums_are_symmetric_and_minus_zero_changes_nothing(a, b):
    assert _bits(add(a, b)) == _bits(add(b, a))
    assert _bits(add(a, ADD_IDENTITY)) == _bits(a)         # -0.0 included; +0.0 would turn -0.0 into +0.0


@pytest.mark.parametrize("combine, identity", COMBINES)
@settings(max_examples=400, deadline=None)
@given(a=st.tuples(floats, floats), b=st.tuples(floats, floats))
def test_max_sum_pairs_combine_symmetrically(combine, identity, a, b):
    assert _bits(combine(a, b)) == _bits(combine(b, a))


@pytest.mark.parametrize("combine, identity", COMBINES)
@settings(max_examples=400, deadline=None)
@given(a=pairs)
def test_a_part_of_no_value_changes_no_max_sum_pair(combine, identity, a):
    """``(-inf, 0)`` is the pair of a part with no value: combined with any pair a part of a row's values can have
    it leaves its bits."""
    assert _bits(combine(a, identity)) == _bits(a)


@pytest.mark.parametrize("kernel, n, cluster", [("softmax_forward", 100000, 10), ("softmax_forward", 120000, 12),
                                                ("softmax_forward", 70000, 7), ("rmsnorm_forward", 100000, 13)])
def test_a_cluster_combines_its_partials_by_a_butterfly_over_the_lanes(kernel, n, cluster):
    """After the cluster's mbarrier wait: one shared-memory load a value (the lane's partial), then a shuffle a
    value for each step of ``log2`` of the cluster rounded up to a power of two, and no spills; softmax (staged by
    halves at 10 chunks a thread: 7, 10 and 12 CTAs) in at most 96 registers (nvJitLink, the compile's own
    assembler)."""
    rows, vec = F("BFloat16", (4, n)), F("BFloat16", (n,))
    c = (cute.compile(ex.softmax_forward, rows, rows) if kernel == "softmax_forward" else
         cute.compile(ex.rmsnorm_forward, rows, vec, rows, F("Float32", (4,)), 1e-6))
    (launch,) = [la for la in c.launches if la.cluster[0] > 1]
    assert launch.cluster[0] == cluster
    steps = (cluster - 1).bit_length()
    offsets = [1 << (steps - 1 - k) for k in range(steps)]
    tail = c.ptx[c.ptx.rindex("mbarrier.try_wait.parity"):]
    found = [int(o) for o in re.findall(r"shfl\.sync\.bfly\.b32\s+%r\d+\|?%?p?\d*, %r\d+, (\d+), 31, -1;", tail)]
    width = 2 if kernel == "softmax_forward" else 1
    assert found[:steps * width] == [o for o in offsets for _ in range(width)], found
    regs, frame = cubin_resources(c.cubin)[launch.name]
    assert frame == 0 and (kernel != "softmax_forward" or regs <= 96), (regs, frame)
