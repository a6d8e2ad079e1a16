"""Tracing kernels: traced integers emit arith, static Python unrolls, run-time loops and branches become
LLVM blocks, and untraceable constructs raise TraceError at the user's line."""

import re
import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError
from _control_flow_helpers import line_of, run_kernel


def _line_of(marker):
    return line_of(marker, __file__)


def compile_kernel(kernel_fn, *kargs, **launch):
    """Compile a one-launch jit function for ``kernel_fn(*kargs)`` (no device arrays)."""

    def host():
        kernel_fn(*kargs).launch(grid=launch.pop("grid", 1), block=launch.pop("block", 32), **launch)

    return cute.compile(host)


def kernel_body(mlir):
    return re.split(r"attributes \{nvvm\.kernel[^}]*\}", mlir, maxsplit=1)[1]


def test_traced_integers_emit_arith_and_fold_static_operands():
    @cute.kernel
    def k():
        tx, _, _ = arch.thread_idx()
        a = tx * 1 + 0          # folded away
        b = a * 0               # a static 0
        assert b == 0 and type(b) is int
        c = (a * 12 + 5) // 5 % 3 + a // 4 + a % 8
        with cute.compiler.if_(c == 1):
            arch.sync_threads()

    body = kernel_body(compile_kernel(k).mlir)
    assert '"cute_nvgpu.read_sreg"() {sreg = "tid.x"}' in body
    assert "arith.muli" in body and "arith.addi" in body
    assert "arith.divui" in body and "arith.remui" in body  # non-negative: unsigned division
    assert "arith.shrui" in body and "arith.andi" in body  # by powers of two: shift and mask
    assert "arith.cmpi eq" in body and "llvm.cond_br" in body


def test_floor_division_of_possibly_negative_values_follows_python():
    @cute.kernel
    def k(n):
        q = (n - 7) // 4
        r = (n - 7) % 4
        with cute.compiler.if_((q + r) == 3):
            arch.sync_threads()

    body = kernel_body(compile_kernel(k, cute.Int32(3)).mlir)
    assert "arith.divsi" in body and "arith.remsi" in body and "arith.select" in body


def test_layouts_evaluate_on_traced_coordinates():
    @cute.kernel
    def k():
        bx, by, _ = arch.block_idx()
        layout = cute.Layout((8, (4, 2)), (4, (1, 32)))
        idx = layout((bx, by))
        sw = cute.Swizzle(3, 4, 3)(idx)
        with cute.compiler.if_(sw == 17):
            arch.sync_threads()

    body = kernel_body(compile_kernel(k).mlir)
    assert body.count('"cute_nvgpu.read_sreg"() {sreg = "ctaid.') == 3
    assert "arith.xori" in body and "arith.andi" in body


def test_range_constexpr_loops_unroll_and_plain_range_is_a_run_time_loop():
    @cute.kernel
    def k():
        smem = arch.SmemAllocator()
        bars = smem.allocate_mbarrier(4)
        for i in cute.range_constexpr(4):
            arch.mbarrier_init(bars + i, 1)

    body = kernel_body(compile_kernel(k).mlir)
    assert body.count("cute_nvgpu.mbarrier_init") == 4
    assert "llvm.cond_br" not in body

    @cute.kernel
    def r():
        smem = arch.SmemAllocator()
        bars = smem.allocate_mbarrier(4)
        for i in range(4):  # as in the CuTe DSL: a run-time loop even with static bounds
            arch.mbarrier_init(bars + i, 1)

    body = kernel_body(compile_kernel(r).mlir)
    assert body.count("cute_nvgpu.mbarrier_init") == 1
    assert body.count("llvm.cond_br") == 1


def test_cute_range_is_a_run_time_loop_traced_once(filecheck):
    @cute.kernel
    def k(n):
        for i in cute.range(n):
            with cute.compiler.if_(i == 3):
                arch.sync_threads()

    c = compile_kernel(k, cute.Int32(10))
    body = kernel_body(c.mlir)
    assert body.count("cute_nvgpu.barrier_sync") == 1
    filecheck(body, [
        "CHECK: llvm.br ^[[HEAD:bb[0-9]+]](%{{.*}} : i32)",
        "CHECK: ^[[HEAD]](%[[IV:.*]]: i32):",
        "CHECK: arith.cmpi slt, %[[IV]]",
        "CHECK: llvm.cond_br",
        "CHECK: arith.addi %[[IV]]",
        "CHECK: llvm.br ^[[HEAD]]",
    ])
    assert "bar.sync" in c.ptx or "barrier.sync" in c.ptx


def test_run_time_scalar_parameters_come_from_annotations_or_wrappers():
    @cute.kernel
    def k(n, m):
        with cute.compiler.if_(n < m):
            arch.sync_threads()

    @cute.jit
    def host(n: cute.Int32, m):
        k(n, m).launch(grid=1, block=32)

    c = host.compile(5, cute.Int64(7))
    assert "%arg0: i32, %arg1: i64" in c.mlir
    assert "arith.extsi" in c.mlir  # the i32 is widened to compare with the i64


def plain_helper(tx):
    if tx == 0:  # @plain-if
        arch.sync_threads()


@cute.jit
def jit_helper(tx):
    if tx == 0:
        arch.sync_threads()


def test_if_on_a_traced_value_in_a_plain_helper_names_its_line_and_the_fix():
    @cute.kernel
    def k():
        tx, _, _ = arch.thread_idx()
        plain_helper(tx)

    line = _line_of("@plain-if")
    with pytest.raises(TraceError, match=rf"test_jit_tracing.py:{line}: a run-time condition drives .*decorate that "
                                         r"function with @cute.jit"):
        compile_kernel(k)


def test_a_jit_helper_called_in_a_kernel_has_its_control_flow_compiled():
    @cute.kernel
    def k():
        tx, _, _ = arch.thread_idx()
        jit_helper(tx)

    body = kernel_body(compile_kernel(k).mlir)
    assert body.count("llvm.cond_br") == 1 and body.count("cute_nvgpu.barrier_sync") == 1


def test_int_of_a_traced_value_is_rejected_with_the_users_line():
    @cute.kernel
    def k():
        tx, _, _ = arch.thread_idx()
        int(tx)

    with pytest.raises(TraceError, match=r"test_jit_tracing.py:\d+: a run-time integer has no Python int value"):
        compile_kernel(k)


def test_break_out_of_a_run_time_loop_leaves_it():
    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        for i in cute.range(n):
            if i == 2:
                break
            arch.mbarrier_init(bar, i)

    c = compile_kernel(k, cute.Int32(4))
    assert run_kernel(c.mlir, [5]) == [0, 1]
    assert run_kernel(c.mlir, [1]) == [0]


def test_algebra_errors_while_tracing_carry_the_users_line():
    @cute.kernel
    def k():
        bx, _, _ = arch.block_idx()
        cute.complement(cute.Layout((2, 2), (1, 1)), 8)

    with pytest.raises(cute.NotInjectiveError, match=r"test_jit_tracing.py:\d+: complement needs an injective"):
        compile_kernel(k)


def test_device_operations_outside_a_kernel_are_rejected():
    with pytest.raises(TraceError, match="call it inside a @cute_py.kernel"):
        arch.thread_idx()


def test_a_kernel_is_launched_from_a_jit_function():
    @cute.kernel
    def k():
        pass

    with pytest.raises(cute.compiler.JitError, match="launch the kernel k from a @cute_py.jit function"):
        k()


def test_grid_dimensions_must_be_static_positive_ints():
    @cute.kernel
    def k():
        pass

    with pytest.raises(cute.compiler.ArgumentError, match="grid dimensions must be static positive ints"):
        compile_kernel(k, grid=(0, 1))


def test_launch_records_block_cluster_and_kernel_names():
    @cute.kernel
    def k():
        arch.sync_threads()

    c = compile_kernel(k, grid=(4, 2), block=(64, 2), cluster=(2, 1))
    (ln,) = c.launches
    assert (ln.grid, ln.block, ln.cluster) == ((4, 2, 1), (64, 2, 1), (2, 1, 1))
    assert c.kernel_names == ["k_0"] and ".entry k_0(" in c.ptx


def test_import_cute_py_loads_neither_mlir_nor_cuda():
    import subprocess
    import sys

    # how long the import takes is measured by benchmarks/bench_import.py, not asserted here
    code = ("import sys; import cute_py; "
            "print([m for m in sys.modules if m.split('.')[0] in ('numba_cuda_mlir', 'mlir', 'cuda', 'mlir_dialects') "
            "or m.startswith('cute_py.compiler')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_each_kernel_carries_its_launchs_block_as_maxntid():
    # the back end then keeps the registers per thread within what the block can hold: a launch of a kernel
    # needing more registers than 65536 / threads would fail (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) instead
    @cute.kernel
    def k(out):
        out[arch.thread_idx()[0]] = 1

    @cute.jit
    def host(out):
        k(out).launch(grid=1, block=(16, 4, 1))
        k(out).launch(grid=2, block=384)

    ptx = cute.compile(host, cute.compiler.DeviceArraySpec("Int32", (512,))).ptx
    assert re.findall(r"\.maxntid (\d+), (\d+), (\d+)", ptx) == [("16", "4", "1"), ("384", "1", "1")]
