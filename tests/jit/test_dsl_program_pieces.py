"""The pieces NVIDIA's CuTe DSL examples need beyond the names of earlier rounds: compile options as objects,
fake streams, settable element types, pointers that carry a swizzle, ``Pointer.align``, the universal MMA,
``make_tiled_copy_C_atom``/``S``/``D``, tensors carried by run-time loops, run-time scalar expressions of the host
code, calls without Constexpr parameters and with lists of arrays, and the rules that changed with them."""

import math
import operator
import re
import struct

import pytest
from hypothesis import given, settings, strategies as st

import cute_py as cute
from cute_py.compiler.specs.args import DeviceArraySpec
from cute_py.compiler.host.call_form import CallForm, regroup, spread, spread_like
from cute_py.compiler.specs.host_scalars import RunTimeScalar, ScalarExpr
from cute_py.core.tiling import make_fragment_like_layout
from cute_py.errors import ArgumentError, CuteTypeError, CuteValueError, StaticValueRequired, TraceError
from cute_py.runtime import from_dlpack, make_fake_stream

from _fake_device import FakeCudaArray

pytest.importorskip("numba_cuda_mlir", reason="compiling needs the MLIR bindings (the jit extra)")

F = lambda dt, shape: DeviceArraySpec(dt, shape)  # noqa: E731


def kernel_ptx(c):
    return c.ptx


# -- names of the package --------------------------------------------------------------------------------


def test_dtype_reads_the_names_of_the_types_only():
    assert cute.dtype("Float16") is cute.Float16 and cute.dtype("Float8E4M3FN") is cute.Float8E4M3FN
    for bad in ("float16", "torch.float16", 16, None):
        with pytest.raises(TypeError, match="can't interpret"):
            cute.dtype(bad)


def test_dsl_user_op_keeps_the_function_and_where_takes_loc_and_ip():
    def f(x, *, loc=None, ip=None):
        return x

    assert cute.dsl_user_op(f) is f
    with pytest.raises(ArgumentError):
        cute.dsl_user_op(3)


def test_float_types_have_inf_nan_and_zero_ints_have_zero_only():
    assert cute.Float32.inf == math.inf and math.isnan(cute.Float16.nan) and cute.Float32.zero == 0.0
    assert cute.Int32.zero == 0 and cute.Boolean.zero is False
    with pytest.raises(AttributeError, match="no floating-point type"):
        cute.Int32.inf


def test_an_integer_constant_is_an_index_and_a_float_one_is_not():
    assert cute.elem_less(cute.Int32(-1), 0) is True
    assert cute.make_layout(cute.Int32(4)).shape == 4
    with pytest.raises(TypeError):
        cute.make_layout(cute.Float32(4.0))


# -- compile options as objects --------------------------------------------------------------------------


@cute.kernel
def _k_copy(a, b):
    t, _, _ = cute.arch.thread_idx()
    b[t] = a[t]


@cute.jit
def _launch_copy(a, b):
    _k_copy(a, b).launch(grid=1, block=32)


def test_compile_subscript_options_are_the_options_string():
    plain = cute.compile(_launch_copy, F("float32", (32,)), F("float32", (32,)))
    lined = cute.compile[cute.GenerateLineInfo(True)](_launch_copy, F("float32", (32,)), F("float32", (32,)))
    bare_class = cute.compile[cute.GenerateLineInfo](_launch_copy, F("float32", (32,)), F("float32", (32,)))
    assert ".loc" not in plain.ptx and ".loc" in lined.ptx and bare_class.ptx == lined.ptx
    both = cute.compile[cute.GenerateLineInfo(True), cute.OptLevel(2)](_launch_copy, F("float32", (32,)),
                                                                       F("float32", (32,)))
    assert ".loc" in both.ptx
    with pytest.raises(CuteValueError, match="options of the CuTe DSL that cute_py does not support: --keep-sass"):
        cute.compile[cute.KeepSASS(True)](_launch_copy, F("float32", (32,)), F("float32", (32,)))
    with pytest.raises(CuteValueError, match="takes compile options"):
        cute.compile[3]
    with pytest.raises(CuteValueError, match="given twice"):
        cute.compile[cute.OptLevel(1), cute.OptLevel(2)]
    with pytest.raises(CuteValueError, match="OptLevel takes 0, 1, 2 or 3"):
        cute.OptLevel(7)


# -- streams ---------------------------------------------------------------------------------------------


@cute.jit
def _launch_on(a, b, stream):
    _k_copy(a, b).launch(grid=1, block=32, stream=stream)


def test_a_fake_stream_compiles_a_stream_parameter_and_is_refused_at_a_call():
    c = cute.compile(_launch_on, F("float32", (32,)), F("float32", (32,)), make_fake_stream())
    assert c.sources[2][0] == "stream"
    a, b = FakeCudaArray("float32", (32,)), FakeCudaArray("float32", (32,), address=1 << 33)
    with pytest.raises(ArgumentError, match="stands for a stream at compile time only"):
        c(a, b, make_fake_stream())
    with pytest.raises(ArgumentError, match="TVM-FFI"):
        make_fake_stream(use_tvm_ffi_env_stream=True)


# -- element types and pointers --------------------------------------------------------------------------


def test_element_type_is_settable_to_a_type_of_the_same_width_only():
    t = from_dlpack(FakeCudaArray("float16", (4, 8)), assumed_align=16)
    t.element_type = cute.BFloat16
    assert t.element_type is cute.BFloat16 and t.engine.address == 1 << 32 and t.engine.alignment == 16
    with pytest.raises(CuteTypeError, match="would read the 16-bit elements .* as 32-bit ones"):
        t.element_type = cute.Float32
    with pytest.raises(CuteTypeError, match="over a pointer"):
        cute.make_identity_tensor((2, 2)).element_type = cute.Int32
    with pytest.raises(AttributeError):
        t.layout = cute.Layout(4)


def test_pointer_align_rounds_up_as_the_dsl_and_keeps_what_is_known():
    p = cute.make_ptr(cute.Float16, 0x1002, cute.AddressSpace.gmem, assumed_align=2)
    q = p.align(16)
    assert q.address == 0x1010 and q.alignment == 16 and q.offset - p.offset == 7
    aligned = cute.make_ptr(cute.Float16, 0x1000, cute.AddressSpace.gmem, assumed_align=16)
    assert aligned.align(16) is aligned and aligned.align(8) is aligned
    for bad in (3, 0, -16):
        with pytest.raises(CuteValueError, match="power of two"):
            p.align(bad)
    with pytest.raises(CuteValueError, match="below the 2-byte elements"):
        p.align(1)
    unknown = cute.make_ptr(cute.Float16, None, cute.AddressSpace.gmem, assumed_align=2)
    with pytest.raises(StaticValueRequired, match="not known here"):
        unknown.align(16)


@cute.kernel
def _k_align(a, b):
    t, _, _ = cute.arch.thread_idx()
    g = cute.domain_offset(t, a)  # a run-time start: only 4-byte aligned
    v = cute.make_tensor(g.iterator.align(16), cute.make_layout(4))
    r = cute.make_fragment_like(v)
    cute.autovec_copy(v, r)
    cute.basic_copy(r, cute.local_tile(b, (4,), (t,)))


@cute.jit
def _launch_align(a, b):
    _k_align(a, b).launch(grid=1, block=8)


def test_align_in_a_kernel_rounds_the_address_and_licenses_vector_loads():
    c = cute.compile(_launch_align, F("float32", (64,)), F("float32", (32,)))
    ptx = c.ptx
    assert re.search(r"and\.b64\s+%rd\d+, %rd\d+, 15;", ptx) or "and.b64" in ptx, ptx
    assert re.search(r"ld\.global\.v4\.(b32|f32)", ptx), ptx  # the rounded pointer is 16-byte aligned


def test_a_pointer_carrying_a_swizzle_makes_a_byte_swizzled_tensor():
    p = cute.make_ptr(cute.Float16, 0, cute.AddressSpace.smem, assumed_align=1024)
    q = cute.recast_ptr(p, cute.Swizzle(3, 4, 3), dtype=cute.Float32)
    assert q.swizzle == cute.Swizzle(3, 4, 3) and q.dtype is cute.Float32 and "S<3,4,3>" in repr(q)
    t = cute.make_tensor(q, cute.Layout((8, 32), (32, 1)))
    assert t.engine.swizzle is None  # the swizzle moved into the layout
    # each (row, column) at the byte the swizzle of byte addresses says
    for r in range(8):
        for col in range(32):
            assert t.layout((r, col)) * 4 == cute.Swizzle(3, 4, 3)(4 * (32 * r + col))
    flagged = cute.make_composed_layout(cute.Swizzle(3, 4, 3), 0, cute.Layout((8, 32), (32, 1)))
    assert cute.recast_ptr(q, dtype=cute.Float16).swizzle == q.swizzle  # bytes, whatever the element
    with pytest.raises(CuteValueError, match="takes no other swizzle"):
        cute.recast_ptr(q, cute.Swizzle(2, 4, 3))
    with pytest.raises(CuteValueError, match="goes with a shared-memory pointer"):
        cute.recast_ptr(cute.make_ptr(cute.Float16, 0, cute.AddressSpace.gmem, 16), cute.Swizzle(3, 4, 3))
    with pytest.raises(CuteTypeError, match="takes a plain layout"):
        cute.make_tensor(q, flagged)
    assert cute.recast_ptr(p, cute.Swizzle(0, 4, 3)) is p  # an identity swizzle is none


# -- the universal MMA and the tiled copies of the epilogue ------------------------------------------------


def test_mma_universal_op_is_one_thread_one_value():
    op = cute.nvgpu.MmaUniversalOp(cute.Float32)
    assert op.shape_mnk == (1, 1, 1) and op.thr_id() == cute.Layout(1)
    for tv in (op.layout_a_tv(), op.layout_b_tv(), op.layout_c_tv()):
        assert tv == cute.Layout((1, 1), (0, 0))
    tm = cute.make_tiled_mma(op, cute.make_layout((16, 16, 1), stride=(16, 1, 0)))
    assert tm.size == 256 and tm.tile_size(0) == 16 and tm.tile_size(1) == 16
    with pytest.raises(CuteValueError, match="abacc_dtype must be one of"):
        cute.nvgpu.MmaUniversalOp(cute.Float8E4M3FN)


@cute.kernel
def _k_fma(a, b, c):
    t, _, _ = cute.arch.thread_idx()
    tm = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cute.Float32), cute.make_layout((4, 8, 1), stride=(8, 1, 0)))
    thr = tm.get_slice(t)
    fa = thr.make_fragment_A(thr.partition_A(a))
    fb = thr.make_fragment_B(thr.partition_B(b))
    tc = thr.partition_C(c)
    fc = thr.make_fragment_C(tc)
    fc.fill(0.0)
    cute.autovec_copy(thr.partition_A(a), fa)
    cute.autovec_copy(thr.partition_B(b), fb)
    cute.gemm(tm, fc, fa, fb, fc)
    cute.autovec_copy(fc, tc)


@cute.jit
def _launch_fma(a, b, c):
    _k_fma(cute.make_tensor(a.iterator, cute.make_layout((4, 2), stride=(2, 1))),
           cute.make_tensor(b.iterator, cute.make_layout((8, 2), stride=(2, 1))),
           cute.make_tensor(c.iterator, cute.make_layout((4, 8), stride=(8, 1)))).launch(grid=1, block=32)


def test_the_universal_mma_is_one_fma_per_instruction():
    c = cute.compile(_launch_fma, F("float32", (8,)), F("float32", (16,)), F("float32", (32,)))
    assert len(re.findall(r"\bfma\.rn\.f32\b", c.ptx)) == 2, c.ptx  # K = 2: two per thread


def test_a_thread_slice_makes_fragments_without_partitioning_again():
    tm = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cute.Float32), cute.make_layout((4, 8, 1), stride=(8, 1, 0)))
    thr = tm.get_slice(3)
    part = thr.partition_A(cute.Layout((4, 2), (2, 1)))
    assert thr.make_fragment_A(cute.make_tensor(cute.make_ptr(cute.Float32, 0, cute.AddressSpace.smem, 16),
                                                part)).layout.shape == part.shape
    assert thr.tv_layout_A == tm.tv_layout_A == tm.atom.tv_layout_A  # the DSL's: the atom's layout
    assert tm.tv_layout_A_tiled == tm.get_layoutA_TV and thr.size == tm.size


def test_make_tiled_copy_c_atom_covers_exactly_the_values_one_copy_moves():
    from cute_py.nvgpu import warpgroup as wg

    op = wg.MmaF16BF16Op(cute.Float16, cute.Float32, (64, 128, 16))
    tm = cute.make_tiled_mma(op, (2, 1, 1))
    atom = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), cute.Float16)
    tc = cute.make_tiled_copy_C_atom(atom, tm)
    c_tv = tm.tv_layout_C_tiled
    copy_v = cute.size(atom.layout_src_tv, mode=[1])
    mma_tiler = (tm.tile_size(0), tm.tile_size(1))
    tile2mma = cute.composition(cute.Layout(mma_tiler), tc.tiler_mn)
    # law: thread t's value v of the copy is the accumulator (t, v) of the tiled MMA, for every t and v < copy_V
    for t in range(cute.size(c_tv, mode=[0])):
        for v in range(copy_v):
            assert tile2mma(tc.layout_tv((t, v))) == c_tv((t, v))
    # make_tiled_copy_S/D keep the tile and take the side's TV layout
    s = cute.make_tiled_copy_S(cute.make_copy_atom(cute.CopyUniversalOp(), cute.Float16), tc)
    assert s.tiler_mn == tc.tiler_mn and s.layout_tv == tc.get_layoutS_TV()
    d = cute.make_tiled_copy_D(cute.make_copy_atom(cute.CopyUniversalOp(), cute.Float16), tc)
    assert d.layout_tv == tc.get_layoutD_TV() == tc.layout_dst_tv_tiled
    two = cute.make_copy_atom(cute.CopyUniversalOp(), cute.Float16, num_bits_per_copy=32)
    with pytest.raises(CuteValueError, match="moves 2 values per thread, more than the 1 accumulators"):
        cute.make_tiled_copy_C_atom(two, cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cute.Float16),
                                                             (2, 2, 1)))


def test_smem_store_op_of_the_epilogue():
    from cute_py.utils import LayoutEnum, hopper_helpers as h

    assert type(h.sm90_get_smem_store_op(LayoutEnum.ROW_MAJOR, cute.Float16, cute.Float32).op).__name__ == \
        "StMatrix8x8x16bOp"
    assert isinstance(h.sm90_get_smem_store_op(LayoutEnum.ROW_MAJOR, cute.Float32, cute.Float32).op,
                      cute.CopyUniversalOp)
    with pytest.raises(CuteTypeError, match="LayoutEnum"):
        h.sm90_get_smem_store_op("row", cute.Float16, cute.Float32)


# -- fragments of run-time strides: CuTe's compact_order ---------------------------------------------------


def test_make_fragment_like_orders_run_time_strides_as_cpp_compact_order():
    # CuTe's documented example: make_ordered_layout((2,3,4,5), (_2, 67, 42, _50)) -> (2,3,4,5):(_1,10,30,2),
    # the run-time 67 and 42 ranked after every static one, left to right
    from cute_py.core.tiling import _stride_order

    n, m = cute.sym_int(), cute.sym_int()
    assert cute.make_ordered_layout((2, 3, 4, 5), _stride_order((2, n, m, 50))) == \
        cute.Layout((2, 3, 4, 5), (1, 10, 30, 2))
    frag = make_fragment_like_layout(cute.Layout(((2, 2), 4, 3), ((1, n), n * 8, 16)))
    assert frag == cute.Layout(((2, 2), 4, 3), ((1, 2), 12, 4))


# -- mark_compact_shape_dynamic after mark_layout_dynamic ---------------------------------------------------


def test_mark_compact_shape_dynamic_reads_the_order_from_the_array():
    t = from_dlpack(FakeCudaArray("float32", (256, 64)), assumed_align=16)
    t = t.mark_layout_dynamic(leading_dim=1).mark_compact_shape_dynamic(mode=1, divisibility=64)
    assert str(t.layout) == "(?,?{div=64}):(?{div=64},1)"
    col = from_dlpack(FakeCudaArray("float32", (64, 256), (1, 64)), assumed_align=16)
    col = col.mark_layout_dynamic(leading_dim=0).mark_compact_shape_dynamic(mode=0, divisibility=64)
    assert str(col.layout) == "(?{div=64},?):(1,?{div=64})"


# -- tensors carried by run-time loops -----------------------------------------------------------------------


@cute.kernel
def _k_carry(a, b, n: cute.Int32):
    t, _, _ = cute.arch.thread_idx()
    tiles = cute.zipped_divide(a, (4,))  # (4, rest)
    view = tiles[None, 0]
    acc = cute.make_fragment(4, cute.Float32)
    acc.fill(0.0)
    for k in range(n):  # a run-time loop: the view's pointer offset is carried
        r = cute.make_fragment_like(view)
        cute.autovec_copy(view, r)
        for i in cute.range_constexpr(4):
            acc[i] = acc[i] + r[i]
        view = tiles[None, (k + 1) % 4]
    cute.autovec_copy(acc, cute.local_tile(b, (4,), (t,)))


@cute.jit
def _launch_carry(a, b, n: cute.Int32):
    _k_carry(a, b, n).launch(grid=1, block=1)


def test_a_view_carried_by_a_run_time_loop_keeps_its_alignment():
    c = cute.compile(_launch_carry, F("float32", (16,)), F("float32", (4,)), cute.Int32(3))
    # the carried offset is known to be a multiple of 4 floats: 16-byte vector loads inside the loop
    assert re.search(r"ld\.global\.v4\.(f32|b32)", c.ptx), c.ptx


# -- run-time scalars of the host code ----------------------------------------------------------------------


def _f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


_PY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e6, 1e6, width=32), st.floats(-1e6, 1e6, width=32), st.sampled_from(sorted(_PY)),
       st.integers(-2**31, 2**31 - 1), st.integers(1, 1000), st.sampled_from(["+", "-", "*", "//", "%"]))
def test_law_host_scalar_expressions_are_ieee_single_and_wrapping_integers(x, y, op, i, j, iop):
    a = RunTimeScalar(x, "Float32", 0)
    e = getattr(a, {"+": "__add__", "-": "__sub__", "*": "__mul__", "/": "__truediv__"}[op])(y)
    if op == "/" and y == 0:
        return
    want = _f32(_PY[op](_f32(x), _f32(y)))  # float32 operands; one rounding of the exact double result
    got = e.evaluate({0: x})
    assert got == want or (math.isnan(got) and math.isnan(want))
    assert e.kind == "Float32" and e.value == got
    n = RunTimeScalar(i, "Int32", 1)
    ie = {"+": n + j, "-": n - j, "*": n * j, "//": n // j, "%": n % j}[iop]
    exact = {"+": i + j, "-": i - j, "*": i * j, "//": i // j, "%": i % j}[iop]
    wrapped = (exact + 2**31) % 2**32 - 2**31
    assert ie.evaluate({1: i}) == wrapped and ie.kind == "Int32"
    assert (n * 2.0).kind == "Float32"


@pytest.mark.parametrize("op", ["+", "-", "*", "//", "%", "/"])
def test_numpy_scalar_operands_mean_what_python_ones_do(op):
    np = pytest.importorskip("numpy")
    f = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
         "/": operator.truediv}[op]
    n, x = RunTimeScalar(-7, "Int32", 0), RunTimeScalar(2.5, "Float32", 1)
    for a, b, plain in ((n, np.int64(3), 3), (n, np.int32(-2), -2), (x, np.float32(0.75), 0.75),
                        (n, np.float64(1.5), 1.5), (n, np.int64(1 << 40), 1 << 40)):
        for got, want in ((f(a, b), f(a, plain)), (f(b, a), f(plain, a))):
            assert (got.kind, got.evaluate({0: -7, 1: 2.5})) == (want.kind, want.evaluate({0: -7, 1: 2.5}))


def test_host_scalars_have_no_static_value():
    a = RunTimeScalar(2.0, "Float32", 4)
    e = a * 1.5
    assert e.describe() == "(arg4 * 1.5)"
    for f in (int, float, bool):
        with pytest.raises(StaticValueRequired, match="is not known while compiling"):
            f(e)


@cute.kernel
def _k_scaled(a, s: cute.Float32):
    t, _, _ = cute.arch.thread_idx()
    a[t] = a[t] * s


@cute.jit
def _launch_scaled(a, s: cute.Float32):
    _k_scaled(a, s * 1.4426950408889634).launch(grid=1, block=32)


def test_a_scalar_expression_is_a_kernel_parameter_evaluated_at_each_call():
    c = cute.compile(_launch_scaled, F("float32", (32,)), 0.5)
    (ln,) = c.launches
    kinds = [k for k, _ in ln.params]
    assert "Float32" in kinds
    src = [s for k, s in ln.params if k == "Float32"][0]
    assert src.evaluate({1: 2.0}) == _f32(_f32(2.0) * _f32(1.4426950408889634))


# -- calls: Constexpr left out, lists of arrays, defaults -------------------------------------------------------


@cute.kernel
def _k_sum(xs, out):
    t, _, _ = cute.arch.thread_idx()
    acc = xs[0][t]
    for x in xs[1:]:
        acc = acc + x[t]
    out[t] = acc


@cute.jit
def _apply(op: cute.Constexpr, xs, out, scale: cute.Int32 = 1):
    _k_sum(xs, out).launch(grid=1, block=32)


def test_a_list_of_arrays_is_an_argument_and_constexpr_parameters_may_be_left_out():
    xs = [FakeCudaArray("float32", (32,), address=(1 + i) << 32) for i in range(3)]
    out = FakeCudaArray("float32", (32,), address=9 << 32)
    c = cute.compile(_apply, operator.add, xs, out, 2)
    assert [k for k, _ in c.sources] == ["static", "tensor", "tensor", "tensor", "tensor", "scalar"]
    form = c.call_form
    assert form.flat((xs, out)) == (None, *xs, out, 1)  # op left out, scale's default
    assert form.flat((operator.add, xs, out, 5)) == (operator.add, *xs, out, 5)
    assert form.flat((xs, out, 7)) == (None, *xs, out, 7)
    with pytest.raises(ArgumentError, match="argument 1 was compiled as a list of 3 device arrays, got list of 2"):
        form.flat((operator.add, xs[:2], out))
    ptrs = c._bind(form.flat((xs, out)))[0] if c._binder is not None else None
    assert ptrs is None  # static shapes: nothing to bind, the call checks each array
    other = cute.compile(_apply, operator.add, xs[:2], out, 2)
    assert other is not c and len(other.sources) == 5  # another count compiles again


def test_spread_and_regroup_are_inverse_and_leave_other_values():
    a, b = FakeCudaArray("float32", (4,)), FakeCudaArray("float32", (4,), address=2 << 32)
    args = (1, [a, b], (a,), [1, 2], ())
    flat, tree, origin = spread(args)
    assert flat == (1, a, b, a, [1, 2], ()) and origin[1:3] == [(1, 0), (1, 1)]
    assert regroup(list(flat), tree) == [1, [a, b], (a,), [1, 2], ()]
    assert CallForm(tree, (), 5, "f").trivial is False and CallForm((None,), (), 1, "f").trivial


class _TorchLike:
    """A torch-like tensor type (a device array by its type) whose instances may lack ``data_ptr``."""

    def data_ptr(self):
        return 1 << 20


_TorchLike.__module__ = "torch.fake"

_VALUES = [FakeCudaArray("float32", (4,)), _TorchLike(), 1, "s", None, 2.5]
_ARGS = st.recursive(st.sampled_from(_VALUES), lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                                      st.lists(inner, max_size=3).map(tuple)),
                     max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(first=st.lists(_ARGS, max_size=4), arrays=st.lists(st.booleans(), min_size=4, max_size=4),
       other=st.lists(_ARGS, max_size=4))
def test_spread_like_is_spread_when_the_trees_agree_and_none_otherwise(first, arrays, other):
    """For any arguments and the tree of other arguments of the same count (``first``'s containers turned into
    containers of arrays of the same type and length where ``arrays`` says so, else ``other``'s values): the flat
    arguments of ``spread`` where its tree is that tree, else ``None`` (the check a repeated jit call makes instead
    of spreading)."""
    second = [type(a)(_VALUES[0] for _ in a) if type(a) in (list, tuple) and use else b
              for a, use, b in zip(first, arrays, other + first)]
    _, tree, _ = spread(tuple(second))
    flat, own, _ = spread(tuple(first))
    got = spread_like(tuple(first), tree)
    assert (got is None) == (own != tree)
    assert got is None or tuple(got) == flat


# -- min/max of run-time values in a kernel, launch bounds -----------------------------------------------------


@cute.kernel
def _k_minmax(a, n: cute.Int32):
    t, _, _ = cute.arch.thread_idx()
    lo = min(4, n)  # a run-time minimum (Python's min would ask the truth of n < 4)
    hi = max(n, t, 2)
    a[t] = cute.Float32(lo + hi)
    a[0] = cute.Float32(min(3, 5))  # static values: Python's


@cute.jit
def _launch_minmax(a, n: cute.Int32):
    _k_minmax(a, n).launch(grid=1, block=32, min_blocks_per_mp=2)


def test_min_and_max_of_run_time_values_and_the_launch_bound():
    c = cute.compile(_launch_minmax, F("float32", (32,)), cute.Int32(7))
    ptx = c.ptx
    assert re.search(r"\bmin\.s32\b", ptx) and re.search(r"\bmax\.s32\b", ptx), ptx
    assert ".minnctapersm 2" in ptx
    with pytest.raises(ArgumentError, match=r"min_blocks_per_mp must be an int in \[1, 32\]"):
        @cute.jit
        def bad(a):
            _k_copy(a, a).launch(grid=1, block=32, min_blocks_per_mp=0)

        cute.compile(bad, F("float32", (32,)))
