"""Run-time scopes: a value made inside a run-time loop or branch cannot be used once it has ended (a
``TraceError`` at the line of the use, naming the variable and the construct), while values made before it,
carried values, loop and branch results, and values of trace-time unrolling stay usable everywhere after.

Results are observed through ``arch.mbarrier_init(bar, count)`` and the interpreter of the traced MLIR."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py import Int32
from cute_py.compiler import TraceError
from _control_flow_helpers import compile_kernel, run_kernel
from _control_flow_helpers import line_of as _line_of

HERE = __file__.replace(".pyc", ".py")


def line_of(marker):
    return _line_of(marker, __file__)


def trace_error(kernel_fn, *kargs):
    with pytest.raises(TraceError) as info:
        compile_kernel(kernel_fn, *(kargs or (Int32(4),)))
    return str(info.value)


def _store_host(kernel_fn):
    def host(g):
        kernel_fn(g).launch(grid=1, block=1)

    return host


# -- a value computed in a run-time loop is not defined after it -------------------------------------------


def test_a_sum_accumulated_in_a_plain_loop_is_carried_out_of_it():
    # x = 0; x = x + i: the first iteration makes x the loop index itself (0 + i is i); the rewrite carries x,
    # so after the loop it reads 6, not the index's last value
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        x = 0
        for i in cute.compiler.range(0, 4):
            x = x + i
        arch.mbarrier_init(bar, x + n)

    assert run_kernel(compile_kernel(k, Int32(0)).mlir, [0]) == [6]


def test_a_sum_started_at_one_is_carried_too():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        x = 1
        for i in range(0, n):
            x = x + i
        arch.mbarrier_init(bar, x)

    assert run_kernel(compile_kernel(k, Int32(4)).mlir, [4]) == [7]
    assert run_kernel(compile_kernel(k, Int32(4)).mlir, [0]) == [1]


def test_the_carried_sum_is_six():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        loop = cute.range(0, 4, carry=(0,))
        for i, (x,) in loop:
            loop.next(x + i)
        (x,) = loop.result
        arch.mbarrier_init(bar, x + n)

    c = compile_kernel(k, Int32(0))
    assert run_kernel(c.mlir, [0]) == [6]


def test_the_loop_index_is_not_defined_after_the_loop():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        for i in cute.range(n):
            pass
        arch.mbarrier_init(bar, i)  # noqa: F821  # @index-after

    with pytest.raises(NameError, match="'i'") as info:
        compile_kernel(k, Int32(4))
    tb = info.tb
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_lineno == line_of("@index-after")


def test_a_value_first_assigned_in_a_nested_loop_and_used_after_it_names_the_loop():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        for i in cute.range(n):  # @outer
            for j in cute.range(n):  # @inner
                y = i * j
        arch.mbarrier_init(bar, y)

    msg = trace_error(k)
    assert msg.startswith(f"{HERE}:{line_of('@inner')}: y is assigned in the run-time loop but has no value before "
                          f"it"), msg
    assert "assign it before the loop" in msg


def test_a_value_of_an_inner_loop_assigned_before_it_is_carried_to_the_outer_body():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        total = 0
        for i in cute.range(n):
            y = 0
            for j in cute.range(n):
                y = i * j
            total = total + y
        arch.mbarrier_init(bar, total)

    # sum over i of i * (n - 1) = (n - 1) * n (n - 1) / 2
    assert run_kernel(compile_kernel(k, Int32(4)).mlir, [4]) == [18]


# -- a value made in a run-time branch exists only where it ran -------------------------------------------


def test_a_value_made_in_a_branch_is_an_error_after_it():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        with cute.compiler.if_(n > 2):  # @branch
            y = n * 3
        arch.mbarrier_init(bar, y)  # @branch-after

    msg = trace_error(k)
    assert f":{line_of('@branch-after')}: the run-time value of y (TracedInt(i32)) was made inside the run-time " \
           f"if_ branch at {HERE}:{line_of('@branch')}, which has ended" in msg
    assert "carried out of it by itself" in msg and "if_(..., carry=)" in msg


def test_a_value_of_the_then_body_cannot_be_used_in_the_otherwise_body():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        br = cute.compiler.if_(n > 2)
        with br:
            y = n * 3
        with br.otherwise():
            arch.mbarrier_init(bar, y + 1)  # @else-use

    assert f":{line_of('@else-use')}: the run-time value of y " in trace_error(k)


def test_a_value_made_under_elect_one_is_an_error_after_it():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        with arch.elect_one():
            lane = arch.lane_idx()
        arch.mbarrier_init(bar, lane)  # @elect-after

    assert f":{line_of('@elect-after')}: the run-time value of lane " in trace_error(k)


def test_a_condition_made_in_a_branch_is_an_error_when_it_drives_a_later_branch():
    @cute.kernel
    def k(n):
        with cute.compiler.if_(n > 2):
            c = n > 5
        with cute.compiler.if_(c):  # @cond-after
            arch.sync_threads()

    assert f":{line_of('@cond-after')}: the run-time value of c (TracedBool(?))" in trace_error(k)


def test_a_value_kept_from_another_kernel_is_an_error():
    kept = []

    @cute.kernel
    def first(n):
        kept.append(n + 1)

    @cute.kernel
    def second(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        arch.mbarrier_init(bar, kept[0])  # @other-kernel

    compile_kernel(first, Int32(1))
    msg = trace_error(second, Int32(1))
    assert f":{line_of('@other-kernel')}: a run-time value (TracedInt(i32)) belongs to a kernel that was already " \
           f"traced" in msg


# -- what stays usable ------------------------------------------------------------------------------------


def test_values_made_before_a_loop_are_usable_inside_and_after_it():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        base = n * 2
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            loop.next(acc + base)
        (acc,) = loop.result
        arch.mbarrier_init(bar, acc + base)

    c = compile_kernel(k, Int32(3))
    for n in (0, 1, 3, 5):
        assert run_kernel(c.mlir, [n]) == [n * 2 * n + n * 2], n


def test_carried_values_of_a_loop_in_a_loop_flow_out_of_both():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        outer = cute.range(n, carry=(0,))
        for i, (total,) in outer:
            inner = cute.range(i + 1, carry=(total,))
            for j, (t,) in inner:
                inner.next(t + j)
            (t,) = inner.result  # made inside the outer body: usable there
            outer.next(t)
        (total,) = outer.result
        arch.mbarrier_init(bar, total)

    c = compile_kernel(k, Int32(4))
    for n in (0, 1, 4):
        assert run_kernel(c.mlir, [n]) == [sum(j for i in range(n) for j in range(i + 1))], n


def test_branch_results_are_usable_after_the_branch():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        br = cute.compiler.if_(n > 2, carry=(n,))
        with br:
            br.set(n * 3)
        with br.otherwise():
            br.set(n - 1)
        (y,) = br.result
        arch.mbarrier_init(bar, y)

    c = compile_kernel(k, Int32(1))
    for n in (0, 2, 3, 7):
        assert run_kernel(c.mlir, [n]) == [n * 3 if n > 2 else n - 1], n


def test_values_of_static_unrolling_inside_a_run_time_loop_flow_between_unrolled_iterations():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            part = acc
            for j in range(3):  # unrolled while tracing: one straight-line body
                part = part + i * j
            loop.next(part)
        (acc,) = loop.result
        arch.mbarrier_init(bar, acc)

    c = compile_kernel(k, Int32(3))
    for n in (0, 1, 4):
        assert run_kernel(c.mlir, [n]) == [sum(3 * i for i in range(n))], n


def test_values_of_a_fully_unrolled_range_are_usable_after_it():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        last = n
        for i in cute.range(4, unroll=True):
            last = last * 2 + i
        arch.mbarrier_init(bar, last)

    c = compile_kernel(k, Int32(1))
    for n in (0, 1, 5):
        expect = n
        for i in range(4):
            expect = expect * 2 + i
        assert run_kernel(c.mlir, [n]) == [expect], n
