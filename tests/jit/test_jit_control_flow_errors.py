"""Errors of run-time control flow with values: each rule of ``cute.range(carry=...)``, ``if_(carry=...)``,
``otherwise()`` and ``unroll=`` raises a ``TraceError`` naming the user's line."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py import Float32, Int32, Int64
from _control_flow_helpers import _trace_error, compile_kernel, run_kernel
from _control_flow_helpers import line_of as _line_of


def line_of(marker):
    return _line_of(marker, __file__)


def test_next_not_called_names_the_loop():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:  # @no-next
            pass

    line = line_of("@no-next")
    assert _trace_error(k, rf"test_jit_control_flow_errors.py:{line}: cute_py.range loop: the loop body must call loop.next\(...\) "
                    r"with the 1 carried value\(s\) \(i32\)")


def test_next_not_called_in_a_fully_unrolled_iteration():
    @cute.kernel
    def k(n):
        loop = cute.range(3, carry=(n,), unroll=True)
        for i, (acc,) in loop:
            if i < 2:
                loop.next(acc + 1)

    assert _trace_error(k, r"the loop body must call loop.next")


def test_next_called_twice():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            loop.next(acc + 1)
            loop.next(acc + 2)  # @next-twice

    assert _trace_error(k, rf":{line_of('@next-twice')}: cute_py.range loop: next\(\) was already called in this iteration")


def test_next_with_the_wrong_number_of_values():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0, n))
        for i, (acc, m) in loop:
            loop.next(acc + 1)  # @next-count

    assert _trace_error(k, rf":{line_of('@next-count')}: cute_py.range loop: next\(\) takes one value per carried value: "
                    r"2 expected \(i32, i32\), got 1")


@pytest.mark.parametrize("case", ["i64 for i32", "i32 for i64", "bool for i32", "int for bool", "float for i32",
                                  "i32 for f32", "too big", "string"])
def test_next_with_a_value_of_another_kind_or_width(case):
    initial, new, message = {
        "i64 for i32": (lambda n, f: n, lambda n, f: Int64(n), r"must keep the kind of its initial value, an i32 "
                        r"integer, got TracedInt\(i64\) \(cute_py.Int32\(x\) converts an integer\)"),
        "i32 for i64": (lambda n, f: Int64(n), lambda n, f: n, r"an i64 integer, got TracedInt\(i32\)"),
        "bool for i32": (lambda n, f: 0, lambda n, f: n > 1, r"an i32 integer, got TracedBool"),
        "int for bool": (lambda n, f: n > 1, lambda n, f: 1, r"a bool, got int 1"),
        "float for i32": (lambda n, f: n, lambda n, f: f, r"an i32 integer, got TracedFloat"),
        "i32 for f32": (lambda n, f: f, lambda n, f: n, r"an f32 float, got TracedInt\(i32\)"),
        "too big": (lambda n, f: n, lambda n, f: 1 << 31, r"is an i32 integer, and 2147483648 does not fit in 32 bits"),
        "string": (lambda n, f: n, lambda n, f: "x", r"an i32 integer, got str 'x'$"),
    }[case]

    @cute.kernel
    def k(n, f):
        loop = cute.range(n, carry=(initial(n, f),))
        for i, _ in loop:
            loop.next(new(n, f))  # @next-kind

    assert _trace_error(k, rf":{line_of('@next-kind')}: cute_py.range loop next\(\): carried value 0 .*{message}", Int32(4),
                 Float32(1.0))


def test_a_python_scalar_of_the_carried_kind_is_converted():
    @cute.kernel
    def k(n, f):
        loop = cute.range(n, carry=(Int64(n), n > 0, f))
        for i, _ in loop:
            loop.next(1 << 40, False, 2)
        assert loop.result[0].width == 64

    c = compile_kernel(k, Int32(4), Float32(1.0))
    assert "arith.constant 1099511627776 : i64" in c.mlir and "arith.constant 2.000000e+00 : f32" in c.mlir


def test_result_before_the_loop_ran_and_during_it():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        loop.result  # @early-result

    assert _trace_error(k, rf":{line_of('@early-result')}: cute_py.range loop: result is only known after the loop has "
                    r"been traced \(the loop is not iterated yet\)")

    @cute.kernel
    def k2(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            loop.result  # @inner-result

    assert _trace_error(k2, rf":{line_of('@inner-result')}: .*the loop is still being traced")


def test_next_outside_the_body_and_without_carry():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            loop.next(acc)
        loop.next(1)  # @late-next

    assert _trace_error(k, rf":{line_of('@late-next')}: cute_py.range loop: next\(\) must be called inside the loop body "
                    r"\(the loop is already finished\)")

    @cute.kernel
    def k2(n):
        loop = cute.range(n)
        for i in loop:
            loop.next(i)  # @no-carry-next
        loop.result

    assert _trace_error(k2, rf":{line_of('@no-carry-next')}: cute_py.range loop: next\(\) needs carried values")

    @cute.kernel
    def k3(n):
        cute.range(n).result  # @no-carry-result

    assert _trace_error(k3, rf":{line_of('@no-carry-result')}: cute_py.range loop: result needs carried values")


def test_next_inside_a_nested_branch_is_rejected():
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            with cute.compiler.if_(i == 2):
                loop.next(acc + 1)  # @nested-next

    assert _trace_error(k, rf":{line_of('@nested-next')}: cute_py.range loop: next\(\) must be called directly in the loop "
                    r"body, not inside the nested if_ branch of .*test_jit_control_flow_errors.py:\d+")


def test_a_loop_object_is_iterated_once():
    @cute.kernel
    def k(n):
        loop = cute.range(n)
        for i in loop:
            pass
        for i in loop:  # @second-iteration
            pass

    assert _trace_error(k, rf":{line_of('@second-iteration')}: a cute_py.range loop is traced once")


@pytest.mark.parametrize("unroll, message", [
    (0, r"unroll must be None, an int in 1..2\^31-1, True or \"full\", got 0"),
    (-2, r"unroll must be .*, got -2"),
    (2.0, r"unroll must be .*, got 2.0"),
    (False, r"unroll must be .*, got False"),
    ("all", r"unroll must be .*, got 'all'"),
])
def test_invalid_unroll_values(unroll, message):
    @cute.kernel
    def k(n):
        for i in cute.range(n, unroll=unroll):  # @bad-unroll
            pass

    assert _trace_error(k, rf":{line_of('@bad-unroll')}: cute_py.range: {message}")


def test_full_unroll_needs_static_bounds():
    @cute.kernel
    def k(n):
        for i in cute.range(n, unroll=True):
            pass

    assert _trace_error(k, r"cute_py.range\(unroll=True\) unrolls at trace time and needs static int bounds, got start=0, "
                    r"stop=TracedInt\(i32\)")


@pytest.mark.parametrize("carry, message", [
    ("x", r"carry= takes a tuple of initial values, got 'x'"),
    (("x",), r"carried value 0 must be a traced Int32/Int64, bool or Float32 \(or a Python int, bool or float\), "
             r"got str 'x'"),
    ((1, 1 << 64), r"carried value 1 must be .*got int 18446744073709551616"),
    ((None,), r"carried value 0 must be .*, got NoneType None"),
])
def test_invalid_initial_carried_values(carry, message):
    @cute.kernel
    def k(n):
        for _ in cute.range(n, carry=carry):
            pass

    assert _trace_error(k, rf"cute_py.range: {message}")


def test_break_out_of_a_fully_unrolled_loop_stops_unrolling():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        for i in cute.range(4, unroll=True):
            arch.mbarrier_init(bar, i + 1)
            if i == 1:
                break

    body = compile_kernel(k, Int32(4)).mlir
    assert body.count("cute_nvgpu.mbarrier_init") == 2 and "llvm.cond_br" not in body


def test_set_not_called():
    @cute.kernel
    def k(n):
        with cute.compiler.if_(n == 1, carry=(n,)):  # @no-set
            pass

    assert _trace_error(k, rf":{line_of('@no-set')}: if_ branch: the branch body must call br.set\(...\) with the 1 carried "
                    r"value\(s\) \(i32\); it was not called")


def test_set_twice_with_the_wrong_count_or_kind():
    @cute.kernel
    def twice(n):
        with cute.compiler.if_(n == 1, carry=(n,)) as br:
            br.set(1)
            br.set(2)  # @set-twice

    assert _trace_error(twice, rf":{line_of('@set-twice')}: if_ branch: set\(\) was already called in this branch body")

    @cute.kernel
    def count(n):
        with cute.compiler.if_(n == 1, carry=(n,)) as br:
            br.set(1, 2)  # @set-count

    assert _trace_error(count, rf":{line_of('@set-count')}: if_ branch: set\(\) takes one value per carried value: 1 expected "
                        r"\(i32\), got 2")

    @cute.kernel
    def kind(n):
        with cute.compiler.if_(n == 1, carry=(n,)) as br:
            br.set(Int64(n))  # @set-kind

    assert _trace_error(kind, rf":{line_of('@set-kind')}: if_ branch set\(\): carried value 0 must keep the kind of its "
                       r"initial value, an i32 integer, got TracedInt\(i64\)")


def test_set_in_the_wrong_place():
    @cute.kernel
    def nested(n):
        with cute.compiler.if_(n == 1, carry=(n,)) as br:
            for i in cute.range(n):
                br.set(i)  # @nested-set

    assert _trace_error(nested, rf":{line_of('@nested-set')}: if_ branch: set\(\) must be called directly in the branch body, "
                         r"not inside the nested run-time loop")

    @cute.kernel
    def late(n):
        with cute.compiler.if_(n == 1, carry=(n,)) as br:
            br.set(n + 1)
        br.set(n)  # @late-set

    assert _trace_error(late, rf":{line_of('@late-set')}: if_ branch: set\(\) must be called inside the branch's `with` body "
                       r"\(the branch is already closed\)")

    @cute.kernel
    def uncarried(n):
        with cute.compiler.if_(n == 1) as br:
            br.set(n)  # @uncarried-set

    assert _trace_error(uncarried, rf":{line_of('@uncarried-set')}: if_ branch: set\(\) needs carried values")


def test_branch_result_before_the_with_block_ends():
    @cute.kernel
    def early(n):
        br = cute.compiler.if_(n == 1, carry=(n,))
        br.result  # @branch-early

    assert _trace_error(early, rf":{line_of('@branch-early')}: if_ branch: result is only known after the branch's `with` "
                        r"block \(the branch is not entered yet\)")

    @cute.kernel
    def inside(n):
        with cute.compiler.if_(n == 1, carry=(n,)) as br:
            br.set(n)
            br.result  # @branch-inside

    assert _trace_error(inside, rf":{line_of('@branch-inside')}: .*the branch is still being traced")


def test_otherwise_must_follow_the_branch_directly_and_once():
    @cute.kernel
    def gap(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        br = cute.compiler.if_(n == 1)
        with br:
            pass
        arch.mbarrier_init(bar, 1)
        with br.otherwise():  # @otherwise-gap
            pass

    assert _trace_error(gap, rf":{line_of('@otherwise-gap')}: if_ branch: otherwise\(\) must come right after the "
                      r"`with if_\(...\)` block, with no operation traced in between")

    @cute.kernel
    def twice(n):
        br = cute.compiler.if_(n == 1)
        with br:
            pass
        with br.otherwise():
            pass
        with br.otherwise():  # @otherwise-twice
            pass

    assert _trace_error(twice, rf":{line_of('@otherwise-twice')}: if_ branch: otherwise\(\) follows the branch's closed "
                        r"`with` block, once \(the branch is done\)")

    @cute.kernel
    def first(n):
        br = cute.compiler.if_(n == 1)
        with br.otherwise():  # @otherwise-first
            pass

    assert _trace_error(first, rf":{line_of('@otherwise-first')}: .*\(the branch is new\)")

    @cute.kernel
    def no_set(n):
        br = cute.compiler.if_(n == 1, carry=(n,))
        with br:
            br.set(n + 1)
        with br.otherwise():  # @otherwise-no-set
            pass

    assert _trace_error(no_set, rf":{line_of('@otherwise-no-set')}: if_ branch: the branch body must call br.set")


def test_a_branch_object_is_entered_once():
    @cute.kernel
    def k(n):
        br = cute.compiler.if_(n == 1)
        with br:
            pass
        with br:  # @branch-twice
            pass

    assert _trace_error(k, rf":{line_of('@branch-twice')}: an if_ branch is traced once")


def test_invalid_branch_carry():
    @cute.kernel
    def k(n):
        with cute.compiler.if_(n == 1, carry=(n, [1])):
            pass

    assert _trace_error(k, r"if_: carried value 1 must be a traced Int32/Int64, bool or Float32 .*got list \[1\]")


def test_a_value_defined_in_a_branch_cannot_be_carried_out_of_an_enclosing_loop():
    # values must be defined in the body or before the loop: one from a nested branch exists only where it ran
    @cute.kernel
    def k(n):
        loop = cute.range(n, carry=(0,))
        for i, (acc,) in loop:
            with cute.compiler.if_(i == 1):  # @inner-branch
                inner = acc + 5
            loop.next(inner)  # @next-inner

    assert _trace_error(k, rf":{line_of('@next-inner')}: the run-time value of inner \(TracedInt\(i32\)\) was made "
                           rf"inside the run-time if_ branch at .*test_jit_control_flow_errors.py:"
                           rf"{line_of('@inner-branch')}, which has ended", Int32(3))


def test_the_interpreter_on_a_loop_free_kernel():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        arch.mbarrier_init(bar, (n * 12 + 5) // 5 % 7)

    c = compile_kernel(k, Int32(1))
    for n in (-9, 0, 9):
        assert run_kernel(c.mlir, [n]) == [(n * 12 + 5) // 5 % 7], n
