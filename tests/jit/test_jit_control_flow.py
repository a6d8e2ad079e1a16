"""Run-time control flow with values: loop-carried values of ``cute.range``, values out of ``if_`` (and its
``otherwise()``), and ``unroll=``.

Kernels make their results observable through ``arch.mbarrier_init(bar, count)``. The traced MLIR is
FileChecked for its block structure and, to check what it computes, run by a small interpreter of its
blocks, branches and ``arith`` ops (:func:`run_kernel`) against the same computation in Python.
"""

import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py import Float32, Int32, Int64
from _control_flow_helpers import _wrap, compile_kernel, kernel_body, ptx_loops, run_kernel
from _control_flow_helpers import line_of as _line_of


def line_of(marker):
    return _line_of(marker, __file__)


# -- loop-carried values -------------------------------------------------------------------------


@cute.kernel
def sum_kernel(n):
    bar = arch.SmemAllocator().allocate_mbarrier()
    loop = cute.range(n, carry=(0,))
    for i, (acc,) in loop:
        loop.next(acc + i)
    (acc,) = loop.result
    arch.mbarrier_init(bar, acc)


def test_a_sum_over_a_run_time_bound_is_carried_through_block_arguments(filecheck, assemble):
    c = compile_kernel(sum_kernel, Int32(10))
    filecheck(kernel_body(c.mlir), [
        "CHECK: %[[ZERO:.*]] = arith.constant 0 : i32",
        "CHECK: llvm.br ^[[HEAD:bb[0-9]+]](%{{.*}}, %[[ZERO]] : i32, i32)",
        "CHECK: ^[[HEAD]](%[[IV:.*]]: i32, %[[ACC:.*]]: i32):",
        "CHECK: %[[C:.*]] = arith.cmpi slt, %[[IV]], %arg0",
        "CHECK: llvm.cond_br %[[C]], ^[[BODY:bb[0-9]+]], ^[[EXIT:bb[0-9]+]](%[[ACC]] : i32)",
        "CHECK: ^[[BODY]]:",
        "CHECK: %[[SUM:.*]] = arith.addi %[[ACC]], %[[IV]] : i32",
        "CHECK: %[[NEXT:.*]] = arith.addi %[[IV]], %{{.*}} : i32",
        "CHECK: llvm.br ^[[HEAD]](%[[NEXT]], %[[SUM]] : i32, i32)",
        "CHECK: ^[[EXIT]](%[[RES:.*]]: i32):",
        "CHECK: cute_nvgpu.mbarrier_init\"(%{{.*}}, %[[RES]])",
    ])
    for n in (-3, 0, 1, 2, 7, 100):
        assert run_kernel(c.mlir, [n]) == [sum(range(n))], n
    assemble(c.ptx)
    assert c.ptx.count("mbarrier.init") == 1  # after the loop, once


def test_carried_kinds_keep_their_types_and_widths(filecheck, assemble):
    @cute.kernel
    def k(n, x, f):
        loop = cute.range(n, carry=(0, 1 << 40, Int64(x), True, x > 0, f, 1.5))
        for i, (a, big, wide, t, pos, g, h) in loop:
            loop.next(a + x, big + 1, wide * 2, ~t, pos ^ (i == 3), h, g)  # the floats swap places
        a, big, wide, t, pos, g, h = loop.result
        assert [type(v).__name__ for v in loop.result] == ["TracedInt"] * 3 + ["TracedBool"] * 2 + ["TracedFloat"] * 2
        assert (a.width, big.width, wide.width) == (32, 64, 64)
        bar = arch.SmemAllocator().allocate_mbarrier()
        for v in (a, Int32(big), Int32(wide), cute.compiler.select(t, 1, 0), cute.compiler.select(pos, 1, 0)):
            arch.mbarrier_init(bar, v)

    c = compile_kernel(k, Int32(5), Int32(3), Float32(2.0))
    filecheck(kernel_body(c.mlir), [
        "CHECK-DAG: %[[BIG:.*]] = arith.constant 1099511627776 : i64",
        "CHECK-DAG: %[[H:.*]] = arith.constant 1.500000e+00 : f32",
        "CHECK: llvm.br ^[[HEAD:bb[0-9]+]](%{{.*}} : i32, i32, i64, i64, i1, i1, f32, f32)",
        "CHECK: ^[[HEAD]](%{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i1, %{{.*}}: i1, "
        "%[[G:.*]]: f32, %[[HH:.*]]: f32):",
        "CHECK: llvm.cond_br %{{.*}}, ^{{bb[0-9]+}}, ^[[EXIT:bb[0-9]+]](%{{.*}} : i32, i64, i64, i1, i1, f32, f32)",
        "CHECK: llvm.br ^[[HEAD]](%{{.*}}, %[[HH]], %[[G]] : i32, i32, i64, i64, i1, i1, f32, f32)",
        "CHECK: ^[[EXIT]](%{{.*}}: i32, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i1, %{{.*}}: i1, %{{.*}}: f32, "
        "%{{.*}}: f32):",
    ])
    for n, x in ((0, 3), (1, -2), (5, 3), (6, 7), (40, 1)):
        flags = [x > 0]
        for i in range(n):
            flags.append(flags[-1] ^ (i == 3))
        expect = [_wrap(n * x, 32), _wrap((1 << 40) + n, 32), _wrap(x << n, 32), int(n % 2 == 0), int(flags[-1])]
        assert run_kernel(c.mlir, [n, x, 2.0]) == expect, (n, x)
    assemble(c.ptx)


def test_a_python_int_that_does_not_fit_in_32_bits_starts_an_i64_carry():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(-(1 << 31), 1 << 31, -(1 << 31) - 1))
        for _, (a, b, c) in loop:
            loop.next(a, b, c)
        assert [v.width for v in loop.result] == [32, 64, 64]

    compile_kernel(k, Int32(2))


def test_nested_loops_and_branches_carry_values_out(filecheck):
    @cute.kernel
    def k(n, m):
        bar = arch.SmemAllocator().allocate_mbarrier()
        outer = cute.range(n, carry=(0, 0))
        for i, (total, hits) in outer:
            inner = cute.range(i, m, carry=(total,))
            for j, (t,) in inner:
                inner.next(t + i * j)
            (total,) = inner.result
            br = cute.compiler.if_(i % 3 == 0, carry=(hits,))
            with br:
                br.set(hits + 1)
            (hits,) = br.result
            outer.next(total, hits)
        total, hits = outer.result
        arch.mbarrier_init(bar, total)
        arch.mbarrier_init(bar, hits)

    c = compile_kernel(k, Int32(4), Int32(6))
    body = kernel_body(c.mlir)
    assert body.count("llvm.cond_br") == 3  # two loop headers and the branch
    for n, m in ((0, 5), (1, 1), (4, 6), (7, 3), (9, 12)):
        total = sum(i * j for i in range(n) for j in range(i, m))
        assert run_kernel(c.mlir, [n, m]) == [total, len(range(0, n, 3))], (n, m)


def test_loops_without_carry_still_yield_the_index_and_negative_steps_carry_too():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        for i in cute.range(n):
            assert isinstance(i, cute.compiler.TracedInt)
            arch.mbarrier_init(bar, i)
        loop = cute.range(n, -1, -2, carry=(0,))
        for i, (acc,) in loop:
            loop.next(acc * 10 + i)
        arch.mbarrier_init(bar, loop.result[0])

    c = compile_kernel(k, Int32(3))
    for n in (-1, 0, 3, 6):
        acc = 0
        for i in range(n, -1, -2):
            acc = acc * 10 + i
        assert run_kernel(c.mlir, [n]) == list(range(n)) + [acc], n


# -- values out of branches ----------------------------------------------------------------------


def test_a_branch_sets_a_value_where_it_runs_and_keeps_the_old_one_elsewhere(filecheck, assemble):
    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        with cute.compiler.if_(x > 5, carry=(x, 7)) as br:
            br.set(x * 2, x + 1)
        y, z = br.result
        arch.mbarrier_init(bar, y)
        arch.mbarrier_init(bar, z)

    c = compile_kernel(k, Int32(1))
    filecheck(kernel_body(c.mlir), [
        "CHECK: %[[C:.*]] = arith.cmpi sgt, %arg0",
        "CHECK: %[[SEVEN:.*]] = arith.constant 7 : i32",
        "CHECK: llvm.cond_br %[[C]], ^[[THEN:bb[0-9]+]], ^[[MERGE:bb[0-9]+]](%arg0, %[[SEVEN]] : i32, i32)",
        "CHECK: ^[[THEN]]:",
        "CHECK: %[[Y:.*]] = arith.muli %arg0",
        "CHECK: %[[Z:.*]] = arith.addi %arg0",
        "CHECK: llvm.br ^[[MERGE]](%[[Y]], %[[Z]] : i32, i32)",
        "CHECK: ^[[MERGE]](%[[RY:.*]]: i32, %[[RZ:.*]]: i32):",
        "CHECK: mbarrier_init\"(%{{.*}}, %[[RY]])",
        "CHECK: mbarrier_init\"(%{{.*}}, %[[RZ]])",
    ])
    for x in (-4, 0, 5, 6, 40):
        assert run_kernel(c.mlir, [x]) == ([2 * x, x + 1] if x > 5 else [x, 7]), x
    assemble(c.ptx)


def test_otherwise_traces_the_else_branch(filecheck, assemble):
    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        br = cute.compiler.if_(x < 0, carry=(x, False))
        with br:
            arch.mbarrier_init(bar, 100)
            br.set(-x, True)
        with br.otherwise():
            arch.mbarrier_init(bar, 200)
            br.set(x, x == 0)
        mag, flag = br.result
        arch.mbarrier_init(bar, mag)
        arch.mbarrier_init(bar, cute.compiler.select(flag, 1, 0))

    c = compile_kernel(k, Int32(1))
    filecheck(kernel_body(c.mlir), [
        "CHECK: llvm.cond_br %{{.*}}, ^[[THEN:bb[0-9]+]], ^[[ELSE:bb[0-9]+]]{{$}}",
        "CHECK: ^[[THEN]]:",
        "CHECK: llvm.br ^[[MERGE:bb[0-9]+]](%{{.*}}, %{{.*}} : i32, i1)",
        "CHECK: ^[[ELSE]]:",
        "CHECK: llvm.br ^[[MERGE]](%arg0, %{{.*}} : i32, i1)",
        "CHECK: ^[[MERGE]](%{{.*}}: i32, %{{.*}}: i1):  // 2 preds",
    ])
    for x in (-7, -1, 0, 3):
        assert run_kernel(c.mlir, [x]) == [100 if x < 0 else 200, abs(x), int(x <= 0)], x
    assemble(c.ptx)


def test_otherwise_without_carried_values():
    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        br = cute.compiler.if_(x == 3)
        with br:
            arch.mbarrier_init(bar, 1)
        with br.otherwise():
            arch.mbarrier_init(bar, 2)
        arch.mbarrier_init(bar, 3)

    c = compile_kernel(k, Int32(1))
    assert run_kernel(c.mlir, [3]) == [1, 3]
    assert run_kernel(c.mlir, [4]) == [2, 3]


def test_branches_carry_bools_floats_and_i64():
    @cute.kernel
    def k(x, f):
        bar = arch.SmemAllocator().allocate_mbarrier()
        with cute.compiler.if_(x == 1, carry=(Int64(x), x > 9, f)) as br:
            br.set(1 << 33, True, 0.25)
        w, t, g = br.result
        assert (w.width, type(t).__name__, type(g).__name__) == (64, "TracedBool", "TracedFloat")
        arch.mbarrier_init(bar, Int32(w >> 32))
        arch.mbarrier_init(bar, cute.compiler.select(t, 1, 0))

    c = compile_kernel(k, Int32(1), Float32(1.0))
    assert re.search(r"\^bb\d+\(%\d+: i64, %\d+: i1, %\d+: f32\):", c.mlir)
    assert run_kernel(c.mlir, [1, 1.0]) == [2, 1]
    assert run_kernel(c.mlir, [10, 1.0]) == [0, 1]
    assert run_kernel(c.mlir, [2, 1.0]) == [0, 0]


# -- unrolling -----------------------------------------------------------------------------------


def test_full_unroll_traces_the_body_once_per_iteration_with_python_ints(filecheck):
    seen = []

    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        loop = cute.range(2, 11, 3, carry=(x,), unroll=True)
        for i, (acc,) in loop:
            seen.append(i)
            arch.mbarrier_init(bar, i)
            loop.next(acc * i)
        arch.mbarrier_init(bar, loop.result[0])
        for i in cute.range(3, unroll="full"):
            arch.mbarrier_init(bar, i + 20)

    c = compile_kernel(k, Int32(3))
    assert seen == [2, 5, 8]
    body = kernel_body(c.mlir)
    assert "llvm.cond_br" not in body and body.count("mbarrier_init") == 7
    filecheck(body, [
        "CHECK: arith.muli %arg0",
        "CHECK: arith.muli",
        "CHECK: %[[R:.*]] = arith.muli",
        "CHECK: mbarrier_init\"(%{{.*}}, %[[R]])",
    ])
    assert run_kernel(c.mlir, [3]) == [2, 5, 8, 3 * 2 * 5 * 8, 20, 21, 22]


def test_full_unroll_of_an_empty_range_gives_the_initial_values():
    @cute.kernel
    def k(x):
        loop = cute.range(5, 5, carry=(x,), unroll=True)
        for _ in loop:
            raise AssertionError("no iteration")
        assert loop.result[0].ir == x.ir

    compile_kernel(k, Int32(3))


def _unroll_kernel(k_unroll, static_trips=None):
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        loop = cute.range(n if static_trips is None else static_trips, carry=(0,), unroll=k_unroll)
        for i, (acc,) in loop:
            arch.mbarrier_init(bar, i * 7 + 3)  # one mbarrier.init per copy of the body
            loop.next(acc + i)
        arch.mbarrier_init(bar, loop.result[0] + 1000)

    return k


@pytest.mark.parametrize("k", [2, 3, 4])
def test_unroll_k_with_a_run_time_bound_unrolls_by_k_in_ptx(k, filecheck, assemble):
    c = compile_kernel(_unroll_kernel(k), Int32(10))
    filecheck(c.mlir, [
        f"CHECK: #[[UNROLL:loop_unroll[0-9]*]] = #llvm.loop_unroll<count = {k} : i32>",
        "CHECK: #[[ANN:loop_annotation[0-9]*]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>",
        "CHECK: llvm.br ^[[HEAD:bb[0-9]+]](",
        "CHECK: ^[[HEAD]](",
        "CHECK: llvm.br ^[[HEAD]](%{{.*}}) {loop_annotation = #[[ANN]]}",
    ])
    # LLVM's runtime unrolling: k copies in the main loop, one in the remainder (a loop for k > 2), one after
    loops = ptx_loops(c.ptx)
    assert [body.count("mbarrier.init") for body in loops] == [k] + [1] * (k > 2)
    assert c.ptx.count("mbarrier.init") == k + 2
    assemble(c.ptx)
    for n in (0, 1, k - 1, k, k + 1, 3 * k + 2, 25):
        assert run_kernel(c.mlir, [n]) == [i * 7 + 3 for i in range(n)] + [sum(range(n)) + 1000], n


def test_unroll_1_forbids_unrolling():
    c = compile_kernel(_unroll_kernel(1), Int32(10))
    assert "#loop_unroll = #llvm.loop_unroll<disable = true>" in c.mlir
    assert "#loop_annotation = #llvm.loop_annotation<unroll = #loop_unroll>" in c.mlir
    assert kernel_body(c.mlir).count("{loop_annotation = #loop_annotation}") == 1
    assert c.ptx.count("mbarrier.init") == 2
    d = compile_kernel(_unroll_kernel(None), Int32(10))
    assert "loop_annotation" not in d.mlir
    assert d.ptx.count("mbarrier.init") > 2  # left to LLVM, which unrolls such a loop


@pytest.mark.parametrize("trips", [64, 66, 3])
def test_unroll_k_with_static_bounds_gives_k_copies(trips, filecheck, assemble):
    k = 4
    c = compile_kernel(_unroll_kernel(k, trips), Int32(0))
    body = kernel_body(c.mlir)
    if trips % k == 0 or trips < k:
        assert body.count("{loop_annotation = ") == 1
    else:
        # a main loop over a multiple of k iterations and a remainder loop that is not unrolled
        assert body.count("{loop_annotation = ") == 2
        filecheck(c.mlir, [
            "CHECK-DAG: #[[COUNT:loop_unroll[0-9]*]] = #llvm.loop_unroll<count = 4 : i32>",
            "CHECK-DAG: #[[NONE:loop_unroll[0-9]*]] = #llvm.loop_unroll<disable = true>",
            "CHECK-DAG: #[[MAIN:loop_annotation[0-9]*]] = #llvm.loop_annotation<unroll = #[[COUNT]]>",
            "CHECK-DAG: #[[REST:loop_annotation[0-9]*]] = #llvm.loop_annotation<unroll = #[[NONE]]>",
            "CHECK: %[[MID:.*]] = arith.constant 64 : i32",
            "CHECK: arith.cmpi {{[su]}}lt, %{{.*}}, %[[MID]]",
            "CHECK: {loop_annotation = #[[MAIN]]}",
            "CHECK: ^[[EXIT:bb[0-9]+]](%[[ACC:.*]]: i32):",
            "CHECK: %[[MID2:.*]] = arith.constant 64 : i32",
            "CHECK: %[[STOP:.*]] = arith.constant 66 : i32",
            "CHECK: llvm.br ^{{bb[0-9]+}}(%[[MID2]], %[[ACC]] : i32, i32)",
            "CHECK: arith.cmpi {{[su]}}lt, %{{.*}}, %[[STOP]]",
            "CHECK: {loop_annotation = #[[REST]]}",
        ])
    copies = c.ptx.count("mbarrier.init") - 1
    assert copies == (trips if trips < k else k + (1 if trips % k else 0))
    assemble(c.ptx)
    assert run_kernel(c.mlir, [0]) == [i * 7 + 3 for i in range(trips)] + [sum(range(trips)) + 1000]


@pytest.mark.parametrize("bounds", [(0, 13, 1), (5, 30, 3), (20, -3, -2), (7, 7, 1), (0, 5, 1), (-9, -1, 1)])
def test_unrolled_loops_compute_what_python_computes(bounds):
    start, stop, step = bounds

    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        for unroll in (None, 1, 4, True):
            loop = cute.range(start, stop, step, carry=(x, 1), unroll=unroll)
            for i, (acc, h) in loop:
                loop.next(acc * 3 + i, h ^ (acc + i))
            acc, h = loop.result
            arch.mbarrier_init(bar, acc)
            arch.mbarrier_init(bar, h)

    c = compile_kernel(k, Int32(1))
    for x in (0, 5):
        acc, h = x, 1
        for i in range(start, stop, step):
            acc, h = _wrap(acc * 3 + i, 32), h ^ _wrap(acc + i, 32)
        assert run_kernel(c.mlir, [x]) == [acc, h] * 4, (bounds, x)


def test_static_bounds_split_for_unrolling_visit_every_index_once_in_order():
    cases = [(start, start + span, step, k) for start in (-7, 0, 3) for span in (0, 5, 11, -9, 23)
             for step in (1, 2, -1, -4) for k in (2, 3, 5) if span * step >= 0]

    @cute.kernel
    def k(x):
        bar = arch.SmemAllocator().allocate_mbarrier()
        for start, stop, step, unroll in cases:
            loop = cute.range(start, stop, step, carry=(x, 0), unroll=unroll)
            for i, (h, count) in loop:
                loop.next(h * 31 + i, count + 1)  # an order-sensitive hash of the indices
            h, count = loop.result
            arch.mbarrier_init(bar, h)
            arch.mbarrier_init(bar, count)

    c = compile_kernel(k, Int32(1))
    expect = []
    for start, stop, step, _ in cases:
        h = 1
        for i in range(start, stop, step):
            h = _wrap(h * 31 + i, 32)
        expect += [h, len(range(start, stop, step))]
    assert run_kernel(c.mlir, [1]) == expect
    split = sum(1 for s, e, st, u in cases if len(range(s, e, st)) > u and len(range(s, e, st)) % u)
    assert split > 10 and kernel_body(c.mlir).count("{loop_annotation = ") == len(cases) + split


def test_unroll_with_carried_values_and_a_run_time_start(assemble):
    @cute.kernel
    def k(lo, hi):
        bar = arch.SmemAllocator().allocate_mbarrier()
        loop = cute.range(lo, hi, 2, carry=(0, False), unroll=3)
        for i, (acc, odd) in loop:
            loop.next(acc + i, ~odd)
        acc, odd = loop.result
        arch.mbarrier_init(bar, acc)
        arch.mbarrier_init(bar, cute.compiler.select(odd, 1, 0))

    c = compile_kernel(k, Int32(0), Int32(0))
    assemble(c.ptx)
    for lo, hi in ((0, 0), (3, 4), (-5, 20), (1, 100)):
        r = range(lo, hi, 2)
        assert run_kernel(c.mlir, [lo, hi]) == [sum(r), len(r) % 2], (lo, hi)
