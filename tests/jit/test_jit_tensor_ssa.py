"""Register values of whole tensors (TensorSSA): ``load``, elementwise arithmetic with broadcasting, ``to``,
``cute.where``, ``reduce``, ``cute.math`` element by element, ``store``/``fill``; and the errors for what does not
fit. The values are checked on the GPU (tests/gpu/test_dsl_programs_gpu.py, test_elementwise_gpu.py)."""

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py.compiler import TraceError  # noqa: E402
from cute_py.nvgpu.tma.ops import ReductionOp  # noqa: E402

from _trace_checks import assert_trace_error, compile_one as _compile  # noqa: E402


def test_tensor_ssa_computes_elementwise_and_reduces():
    seen = {}

    @cute.kernel
    def k(x, y, out, total):
        v = x.load()
        w = (v * 2 + y.load().to(cute.Float32)) / 3.0
        w = cute.where(w > 1.0, cute.math.exp(w), -w)
        seen["w"] = (repr(w), len(w), w.dtype)
        frag = cute.make_rmem_tensor(x.layout, cute.Float32)
        frag.store(w)
        out.store(frag.load())
        total[0] = w.reduce(ReductionOp.ADD, 0.0)
        frag.fill(0.5)
        total[1] = frag.load().reduce(lambda a, b: a + b, 0.0)

    c = _compile(k, ("Float32", (8,)), ("Int32", (8,)), ("Float32", (8,)), ("Float32", (2,)))
    assert seen["w"] == ("TensorSSA(Float32, shape=8)", 8, cute.Float32)
    assert c.ptx.count("ex2.approx.f32") == 8 and c.ptx.count("st.global.v4.b32") == 2


@cute.kernel
def size_mismatch(x, out):
    out.store(x.load())


@cute.kernel
def bad_profile(x, out):
    out[0] = x.load().reduce(ReductionOp.ADD, 0.0, reduction_profile=(None, 0))


@cute.kernel
def bad_store(x, out):
    out.store("zero")


@pytest.mark.parametrize("kernel, specs, text, fragment", [
    (size_mismatch, (("Float32", (8,)), ("Float32", (4,))), "out.store(x.load())",
     "a TensorSSA of 8 elements into a tensor of 4"),
    (bad_profile, (("Float32", (8,)), ("Float32", (1,))), "reduction_profile=(None, 0)",
     "is not weakly congruent to the shape"),
    (bad_store, (("Float32", (8,)), ("Float32", (4,))), 'out.store("zero")', "takes a TensorSSA or a number"),
])
def test_what_does_not_fit_is_a_trace_error_at_the_users_line(kernel, specs, text, fragment):
    with pytest.raises(TraceError) as e:
        _compile(kernel, *specs)
    assert_trace_error(e, kernel, text, fragment)


def test_on_the_host_load_is_the_elements_and_store_and_fill_write_them():
    import numpy as np

    t = cute.make_tensor(np.zeros(6, dtype=np.float32), cute.Layout((2, 3)))
    t.store([1, 2, 3, 4, 5, 6])
    assert t.load().nd().tolist() == [[1, 3, 5], [2, 4, 6]]  # a TensorSSA of numpy values
    t.fill(7)
    assert (t.load() == 7).nd().all()
    with pytest.raises(cute.CuteValueError, match="cannot store 2 values into a tensor of 6"):
        t.store([1, 2])


def test_a_universal_atom_without_a_width_copies_the_widest_vectors_allowed():
    from cute_py.atom import CopyUniversalOp

    @cute.kernel
    def k(x, out):
        frag = cute.make_rmem_tensor(cute.Layout(8), cute.Float32)
        auto = cute.make_copy_atom(CopyUniversalOp(), cute.Float32)
        cute.copy(auto, x, frag)
        one = cute.make_copy_atom(CopyUniversalOp(), cute.Float32, 32)
        cute.copy(one, frag, out)

    c = _compile(k, ("Float32", (8,)), ("Float32", (8,)))
    assert c.ptx.count("ld.global.v4.b32") == 2 and c.ptx.count("st.global.b32") == 8
    assert "widest" in repr(cute.make_copy_atom(CopyUniversalOp(), cute.Float32))
    assert "widest" not in repr(cute.make_copy_atom(CopyUniversalOp(), cute.Float32, 32))


def test_a_1d_tiled_copy_partitions_a_1d_tensor_its_tile_divides():
    from cute_py.atom import CopyUniversalOp

    @cute.kernel
    def k(x, out):
        tidx, _, _ = cute.arch.thread_idx()
        tiled = cute.make_tiled_copy_tv(cute.make_copy_atom(CopyUniversalOp(), cute.Float32, 128),
                                        cute.make_layout(32), cute.make_layout(4))
        thr = tiled.get_slice(tidx)
        src = thr.partition_S(x)  # a (256,) tensor by a (128,) tile
        frag = cute.make_fragment_like(src)
        cute.copy(tiled, src, frag)
        cute.copy(tiled, frag, thr.partition_D(out))

    c = _compile(k, ("Float32", (256,)), ("Float32", (256,)))
    assert c.ptx.count("ld.global.v4.b32") == 2 and c.ptx.count("st.global.v4.b32") == 2


def test_reduce_with_a_profile_keeps_the_modes_marked_none():
    from cute_py import arch
    from _control_flow_helpers import compile_kernel, run_kernel

    @cute.kernel
    def k(n):
        bar = arch.SmemAllocator().allocate_mbarrier()
        t = cute.make_rmem_tensor((2, (3, 2)), cute.Int32)
        for i in cute.range_constexpr(12):
            t[i] = n * i + 1  # flat (column-major) index i
        v = t.load()
        rows = v.reduce(cute.ReductionOp.ADD, 0, (None, 1))
        assert rows.shape == (2,)
        inner = v.reduce(cute.ReductionOp.MAX, 0, (None, (1, None)))
        assert inner.shape == (2, 2)
        for j in cute.range_constexpr(2):
            arch.mbarrier_init(bar, rows[j])
        for j in cute.range_constexpr(4):
            arch.mbarrier_init(bar, inner[j])
        arch.mbarrier_init(bar, v.reduce(cute.ReductionOp.ADD, 0, 0))
        assert v.reduce(cute.ReductionOp.ADD, 0, None) is v

    n = 3
    vals = [n * i + 1 for i in range(12)]  # element (r, (a, b)) at flat index r + 2 * (a + 3 * b)
    rows = [sum(vals[r + 2 * m] for m in range(6)) for r in range(2)]
    inner = [max(vals[r + 2 * (a + 3 * b)] for a in range(3)) for b in range(2) for r in range(2)]
    assert run_kernel(compile_kernel(k, cute.Int32(0)).mlir, [n]) == rows + inner + [sum(vals)]


def test_reduce_refuses_a_profile_that_does_not_match_the_shape():
    @cute.kernel
    def k(n):
        t = cute.make_rmem_tensor((2, 3), cute.Int32)
        t.load().reduce(cute.ReductionOp.ADD, 0, (None, 1, 1))

    from _control_flow_helpers import compile_kernel

    with pytest.raises(TraceError, match="not weakly congruent to the shape"):
        compile_kernel(k, cute.Int32(0))


def test_load_and_store_of_memory_tensors_move_whole_vectors():
    @cute.kernel
    def k(x, out):
        v = x.load()
        out.store((v * 2.0).to(out.element_type))

    c = _compile(k, ("Float32", (8,)), ("Float32", (8,)))
    assert c.ptx.count("ld.global.v4.b32") == 2 and c.ptx.count("st.global.v4.b32") == 2
    c = _compile(k, ("BFloat16", (16,)), ("BFloat16", (16,)))
    assert c.ptx.count("ld.global.v4.b32") == 2 and c.ptx.count("st.global.v4.b32") == 2

    @cute.kernel
    def strided(x, out):  # every other element: no vector covers it, element by element
        out.store(x[None, 0].load())

    c = _compile(strided, ("Float32", (4, 2)), ("Float32", (4,)))
    assert c.ptx.count("ld.global.v4") == 0 and c.ptx.count("st.global.v4.b32") == 1


def test_cute_reduction_op_is_the_dsls_tensor_reduction_not_the_tma_kinds():
    from cute_py.nvgpu import cpasync

    assert [m.name for m in cute.ReductionOp] == ["ADD", "MUL", "MAX", "MIN"]
    assert cute.ReductionOp is not cpasync.ReductionOp and "INC" in cpasync.ReductionOp.__members__


def test_max_and_min_of_python_numbers_are_those_a_kernel_computes():
    """``cute.max``/``cute.min`` of Python floats follow IEEE 754 ``maximum``/``minimum``, as the kernels' floats do
    (``arith.maximumf``): NaN if either operand is NaN (in either order: Python's ``max(0.0, nan)`` is 0.0), -0.0
    below +0.0, so swapping the operands never changes the bits; ints stay Python ints."""
    import math
    import struct

    from hypothesis import given, settings, strategies as st

    def bits(x):
        return "nan" if math.isnan(x) else struct.pack("<d", float(x))

    @settings(max_examples=300, deadline=None)
    @given(a=st.floats(), b=st.floats())
    def law(a, b):
        for f, pick in ((cute.max, max), (cute.min, min)):
            got = f(a, b)
            assert bits(got) == bits(f(b, a))
            if math.isnan(a) or math.isnan(b):
                assert math.isnan(got)
            else:
                assert got == pick(a, b)

    law()
    assert bits(cute.max(0.0, -0.0)) == bits(cute.max(-0.0, 0.0)) == bits(0.0)
    assert bits(cute.min(0.0, -0.0)) == bits(cute.min(-0.0, 0.0)) == bits(-0.0)
    assert cute.max(3, 4, 2) == 4 and type(cute.max(3, 4)) is int and cute.min(2, 1.5) == 1.5
