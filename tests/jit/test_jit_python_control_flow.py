"""A kernel's own Python control flow: what each construct carries, where it stays Python, and the errors that
name the variable, the rule and the user's line. What kernels compute is observed with the interpreter of the
traced MLIR (``run_kernel``: the ``mbarrier_init`` counts)."""

import pytest

import cute_py as cute
from cute_py import Int32, arch
from cute_py.compiler import TraceError
from _control_flow_helpers import compile_kernel, kernel_body, run_kernel
from _control_flow_helpers import line_of as _line_of

HERE = __file__.replace(".pyc", ".py")


def line_of(marker):
    return _line_of(marker, __file__)


def _run(k, *ns):
    c = compile_kernel(k, Int32(0))
    return [run_kernel(c.mlir, [n]) for n in ns]


def _error(k):
    with pytest.raises(TraceError) as info:
        compile_kernel(k, Int32(0))
    return str(info.value)


def test_if_elif_else_merges_the_variables_each_path_assigns():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        x, y = 1, 2
        if n < 3:
            x = n + 10
        elif n < 6:
            y = n * 2
        else:
            x, y = 7, 8
        arch.mbarrier_init(bar, x)
        arch.mbarrier_init(bar, y)

    assert _run(k, 1, 4, 9) == [[11, 2], [1, 8], [7, 8]]


def test_a_static_condition_folds_and_keeps_python_values():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        layout = cute.Layout(4)
        if cute.size(layout) == 4:  # static: only this branch is traced
            tile = (2, 2)
        else:
            tile = n  # a run-time value: never traced
        assert tile == (2, 2)
        arch.mbarrier_init(bar, tile[0] + n)

    c = compile_kernel(k, Int32(0))
    assert "llvm.cond_br" not in kernel_body(c.mlir)
    assert run_kernel(c.mlir, [3]) == [5]


def test_a_python_number_changed_under_a_run_time_condition_becomes_a_run_time_value():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        count = 0
        for i in range(n):
            if i % 2 == 0:
                count += 1
        arch.mbarrier_init(bar, count + 1)

    assert _run(k, 0, 1, 5, 8) == [[1], [2], [4], [5]]


def test_while_with_break_and_continue():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        i = 0
        total = 0
        while True:
            i += 1
            if i > n:
                break
            if i % 3 == 0:
                continue
            total += i
        arch.mbarrier_init(bar, total + 1)

    # the sum of 1..n without the multiples of 3
    assert _run(k, 0, 4, 7) == [[1], [1 + 7], [1 + 1 + 2 + 4 + 5 + 7]]


def test_return_under_a_run_time_condition_ends_the_kernel_there():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        arch.mbarrier_init(bar, 1)
        if n > 4:
            return
        for i in range(n):
            if i == 2:
                return
            arch.mbarrier_init(bar, 10 + i)
        arch.mbarrier_init(bar, 99)

    assert _run(k, 9, 1, 3) == [[1], [1, 10, 99], [1, 10, 11]]


def test_register_fragment_elements_are_carried_through_loops_and_branches():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        acc = cute.make_rmem_tensor((3,), cute.Int32)
        acc.fill(0)
        for i in range(n):
            for j in cute.range_constexpr(3):
                if (i + j) % 2 == 0:
                    acc[j] = acc[j] + i
        for j in cute.range_constexpr(3):
            arch.mbarrier_init(bar, acc[j] + 1)

    def expect(n):
        acc = [0, 0, 0]
        for i in range(n):
            for j in range(3):
                if (i + j) % 2 == 0:
                    acc[j] += i
        return [a + 1 for a in acc]

    assert _run(k, 0, 3, 6) == [expect(0), expect(3), expect(6)]


def test_a_fragment_made_in_a_run_time_loop_is_new_each_iteration_and_carried_by_the_loops_inside():
    # the fragment exists only inside the outer body: the outer loop does not carry it (each iteration makes
    # it anew, from zeros); the inner run-time loop that adds into it does
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        total = 0
        for i in range(n):
            acc = cute.make_rmem_tensor((2,), cute.Int32)
            acc.fill(0)
            if i % 2 == 1:
                acc[1] = 100
            for j in range(i):
                acc[0] = acc[0] + j
                acc[1] = acc[1] + 1
            total = total + acc[0] * 1000 + acc[1]
        arch.mbarrier_init(bar, total + 1)

    def expect(n):
        total = 0
        for i in range(n):
            acc = [0, 100 if i % 2 == 1 else 0]
            for j in range(i):
                acc[0] += j
                acc[1] += 1
            total += acc[0] * 1000 + acc[1]
        return [total + 1]

    assert _run(k, 0, 1, 4, 7) == [expect(0), expect(1), expect(4), expect(7)]


def test_a_run_time_loop_with_static_bounds_indexing_a_fragment_unrolls():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        frag = cute.make_rmem_tensor((4,), cute.Int32)
        for i in range(4):  # a run-time index cannot pick a register: this loop unrolls while tracing
            frag[i] = n * i
        arch.mbarrier_init(bar, frag[3] + 1)

    c = compile_kernel(k, Int32(0))
    assert "llvm.cond_br" not in kernel_body(c.mlir)
    assert run_kernel(c.mlir, [5]) == [16]


@pytest.mark.parametrize("unroll", [1, 2])
def test_a_run_time_loop_asked_for_with_unroll_is_not_unrolled_while_tracing_behind_the_callers_back(unroll):
    @cute.kernel
    def k(n):
        frag = cute.make_rmem_tensor((4,), cute.Int32)
        for i in cute.range(4, unroll=unroll):  # @asked
            frag[i] = n * i  # @static-needed

    msg = _error(k)
    assert f":{line_of('@asked')}: cute.range(..., unroll={unroll}) builds a run-time loop" in msg
    assert f":{line_of('@static-needed')}: a register fragment is indexed with static coordinates" in msg
    assert "range_constexpr" in msg and "unroll_full=True" in msg


def test_a_fragment_indexed_by_a_run_time_loop_with_run_time_bounds_is_an_error_naming_range_constexpr():
    @cute.kernel
    def k(n):
        frag = cute.make_rmem_tensor((4,), cute.Int32)
        for i in range(n):
            frag[i] = 1  # @dyn-index

    msg = _error(k)
    assert f":{line_of('@dyn-index')}: a register fragment is indexed with static coordinates" in msg
    assert "range_constexpr" in msg


def test_boolean_operators_and_chained_comparisons_on_run_time_values():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        a = 1 if (0 < n < 5 and not n == 3) or n == 10 else 2
        b = n > 1 and n  # a Python `and` with a run-time left side: the Boolean & of both
        arch.mbarrier_init(bar, a)
        if b:
            arch.mbarrier_init(bar, 7)

    assert _run(k, 2, 3, 10, 0) == [[1, 7], [2, 7], [1, 7], [2]]


def test_static_operands_keep_pythons_short_circuit():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        table = None
        ok = table is not None and table[n]  # table[n] is never evaluated
        x = [] or (4, 5)
        arch.mbarrier_init(bar, x[1] + (1 if ok else 0))

    assert _run(k, 1) == [[5]]


def test_for_else_and_break_of_a_python_loop():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        for t in (2, 4, 6):
            if t == 4:
                break
        else:
            t = 100
        arch.mbarrier_init(bar, t)

    assert _run(k, 0) == [[4]]


def test_const_expr_folds_and_refuses_run_time_values():
    @cute.kernel
    def ok(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        i = 0
        while cute.const_expr(i < 3):
            i += 1
        arch.mbarrier_init(bar, i)

    assert _run(ok, 0) == [[3]]

    @cute.kernel
    def bad(n):
        if cute.const_expr(n > 0):  # @const-run-time
            pass

    assert f":{line_of('@const-run-time')}: const_expr needs a value known while tracing" in _error(bad)


def test_a_variable_with_a_different_type_on_each_path_is_an_error_at_the_if():
    @cute.kernel
    def k(n):
        x = n
        if n > 0:  # @type-if
            x = n.to(cute.Float32)
        arch.mbarrier_init(arch.SmemAllocator().allocate_mbarrier(), 1)
        cute.printf("{}", x)

    msg = _error(k)
    assert f":{line_of('@type-if')}: a value of x is a Float32 on one path and a Int32 on another" in msg


def test_a_variable_bound_on_one_path_only_and_used_after_is_an_error():
    @cute.kernel
    def k(n):
        if n > 0:  # @one-path
            y = n
        cute.printf("{}", y)

    msg = _error(k)
    assert f":{line_of('@one-path')}: y is bound on one path of the run-time if and not on the other" in msg


def test_a_temporary_that_is_not_used_after_the_construct_is_not_carried():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        total = 0
        for i in range(n):
            layout = cute.Layout((2, i))  # a Python object made with a run-time value: local to the body
            total += cute.size(layout)
        arch.mbarrier_init(bar, total + 1)

    assert _run(k, 3) == [[1 + 0 + 2 + 4]]


@cute.jit
def _advance_each(state, n):
    """Advance ``state`` ``n`` times in a run-time loop; nothing here reads it afterwards (the caller does)."""
    for _ in range(n):
        state.advance()


def test_an_object_a_helper_changes_in_a_loop_is_carried_to_its_caller():
    """The helper's loop mutates its parameter's object and never reads it again; the caller's next loop and its
    read after both see every advance (a pipeline state advanced per tile by a helper, as a persistent kernel's
    consumer does)."""
    from cute_py import pipeline

    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 4)
        for _ in range(2):
            _advance_each(state, n)
        arch.mbarrier_init(bar, state.index + 10 * state.phase + 100 * state.count)

    # 2n advances over 4 stages: index 2n % 4, phase flipped per wrap, count 2n
    assert _run(k, 1, 3, 5) == [[2 + 0 + 200], [2 + 10 + 600], [2 + 0 + 1000]]


@cute.jit
def _advance_if(state, n):
    """Advance ``state`` once on a run-time condition; nothing here reads it afterwards."""
    if n > 2:
        state.advance()


def test_an_object_a_helper_changes_in_a_run_time_branch_is_carried_to_its_caller():
    from cute_py import pipeline

    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 4)
        _advance_if(state, n)
        arch.mbarrier_init(bar, state.index + 1)

    assert _run(k, 1, 3) == [[1], [2]]


@cute.jit
def _advance_via_helper(states, n):
    """On a run-time condition, hand a state unpacked from ``states`` to a helper that advances it; nothing here
    names the state again, and the change is a call's, not this function's."""
    state, _ = states
    if n > 2:
        _advance_each(state, n)


def test_an_object_passed_to_a_changing_helper_inside_a_construct_is_carried_to_its_caller():
    """A construct that only passes an object to a call (here a helper that advances it) carries it whether or not
    its name is read later: the callee may change it in place, and the caller reads it under another name (a
    pipeline state unpacked from a tuple of states, as an attention consumer's)."""
    from cute_py import pipeline

    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 8)
        _advance_via_helper((state, n), n)
        arch.mbarrier_init(bar, state.index + 1)

    # n advances where n > 2
    assert _run(k, 1, 3, 5) == [[1], [4], [6]]


def test_another_name_for_a_changed_object_sees_the_change():
    from cute_py import pipeline

    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 8)
        alias = state
        for _ in range(n):
            state.advance()
        arch.mbarrier_init(bar, alias.index + 1)

    assert _run(k, 0, 3, 5) == [[1], [4], [6]]


def test_a_python_object_that_differs_between_paths_and_is_used_after_is_an_error():
    @cute.kernel
    def k(n):
        layout = cute.Layout(4)
        if n > 0:  # @object-if
            layout = cute.Layout(8)
        cute.printf("{}", cute.size(layout))

    msg = _error(k)
    assert f":{line_of('@object-if')}: layout is Layout " in msg and "the same Python object" in msg


def test_a_loop_carried_variable_that_changes_type_is_an_error_at_the_loop():
    @cute.kernel
    def k(n):
        x = n
        for i in range(n):  # @type-loop
            x = x.to(cute.Float32) + 1.0
        cute.printf("{}", x)

    msg = _error(k)
    assert f":{line_of('@type-loop')}: " in msg and "Int32" in msg and "Float32" in msg


def test_break_under_a_run_time_condition_in_an_unrolled_loop_is_an_error():
    @cute.kernel
    def k(n):
        for i in cute.range_constexpr(4):
            if n == i:  # @unrolled-break
                break

    msg = _error(k)
    assert f":{line_of('@unrolled-break')}: `break` under a run-time condition leaves a loop unrolled" in msg


@cute.jit
def _helper_returning(n):
    if n > 0:
        return 1
    return 2


def test_a_device_function_returning_under_a_run_time_condition_is_an_error():
    @cute.kernel
    def k(n):
        _helper_returning(n)

    assert "`return` under a run-time condition" in _error(k)


@cute.jit
def _clamp(x, hi):
    if x > hi:
        x = hi
    return x


def test_a_jit_device_function_has_its_control_flow_compiled_inline():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        arch.mbarrier_init(bar, _clamp(n, 5) + 1)

    assert _run(k, 2, 9) == [[3], [6]]


def test_cute_range_with_unroll_keeps_its_meaning_in_plain_loops():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        s = 0
        for i in cute.range(0, n, 2, unroll=2):
            s += i
        arch.mbarrier_init(bar, s + 1)

    c = compile_kernel(k, Int32(0))
    assert "llvm.loop_unroll<count = 2 : i32>" in c.mlir
    assert run_kernel(c.mlir, [7]) == [1 + 0 + 2 + 4 + 6]


def test_a_loop_body_is_traced_again_only_while_its_carries_grow():
    traced = []

    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        a, b = 0, 0
        for i in range(n):
            traced.append(i)
            a = a + 1  # a static 0 that changes: one more trace carries it
            b = b + a
        arch.mbarrier_init(bar, b + 1)

    assert _run(k, 4) == [[1 + 1 + 2 + 3 + 4]]
    assert 2 <= len(traced) <= 3


def test_range_bounds_take_numpy_integers_refuse_floats_and_widen_past_32_bits():
    import numpy as np

    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        s = 0
        for i in range(np.int64(1), np.int32(4)):
            s += i
        arch.mbarrier_init(bar, s + n)
        big = (1 << 31) + 5  # an index past Int32: the loop counts in 64 bits
        for j in range(big, big + 2):
            arch.mbarrier_init(bar, (j - big + 10).to(cute.Int32))

    assert _run(k, 1) == [[7, 10, 11]]

    @cute.kernel
    def bad(n):
        for i in range(2.0):  # @float-range
            pass

    assert f":{line_of('@float-range')}: range takes integers" in _error(bad)
