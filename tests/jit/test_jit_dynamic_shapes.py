"""Dynamic shapes on the CPU: marking tensors, one compile for every shape, what each call checks (the marks'
contracts, grids, TMA descriptors), the kernel parameters the PTX takes, and the errors that name the rule."""

import re

import pytest

import cute_py as cute
from cute_py.compiler.specs.args import DeviceArraySpec
from cute_py.compiler.cache import store as _cache
from cute_py.compiler.runtime.compiled import CallState
from cute_py.demo.kernel import tma_copy
from cute_py.errors import ArgumentError, CuteTypeError, CuteValueError, SpecMismatch, StaticValueRequired, TmaError
from cute_py.runtime import from_dlpack

from _fake_device import FakeCudaArray, copy_rows as _copy_rows

pytest.importorskip("numba_cuda_mlir", reason="compiling needs the MLIR bindings (the jit extra)")


def marked(shape, strides=None, dtype="float16", address=1 << 32, **kw):
    return from_dlpack(FakeCudaArray(dtype, shape, strides, address), assumed_align=16).mark_layout_dynamic(**kw)


# -- marking ---------------------------------------------------------------------------------------------


def test_mark_layout_dynamic_keeps_the_leading_stride_static():
    t = from_dlpack(FakeCudaArray("float16", (1000, 256)), assumed_align=16)
    assert str(t.layout) == "(1000,256):(256,1)"
    assert t.mark_layout_dynamic() is t  # as the DSL: changed in place, returned
    assert str(t.layout) == "(?,?):(?,1)"
    col = from_dlpack(FakeCudaArray("float32", (64, 32), (1, 64))).mark_layout_dynamic()
    assert str(col.layout) == "(?,?):(1,?)"
    # two modes of stride 1: the one of extent > 1 leads
    assert str(marked((4, 1, 8), (8, 1, 1)).layout) == "(?,?,?):(?,?,1)"
    # no mode of stride 1: every stride is dynamic
    assert str(marked((4, 8), (16, 2)).layout) == "(?,?):(?,?)"
    assert str(marked((4, 8), leading_dim=1).layout) == "(?,?):(?,1)"


def test_mark_layout_dynamic_refuses_what_it_cannot_honour():
    with pytest.raises(CuteValueError, match="stride of leading_dim=0 is 8, not 1"):
        marked((4, 8), leading_dim=0)
    with pytest.raises(CuteValueError, match="leading one cannot be told"):
        marked((1, 1), (1, 1))
    with pytest.raises(CuteValueError, match="leading_dim must be a mode"):
        marked((4, 8), leading_dim=2)
    with pytest.raises(CuteTypeError, match="from_dlpack over device memory"):
        cute.make_tensor(cute.runtime.make_ptr(cute.Float32, 0, cute.AddressSpace.gmem),
                         cute.make_layout(8)).mark_layout_dynamic()


def test_mark_compact_shape_dynamic_makes_the_strides_it_scales_dynamic():
    t = from_dlpack(FakeCudaArray("float16", (64, 256)), assumed_align=16)
    assert str(t.mark_compact_shape_dynamic(1, divisibility=16).layout) == "(64,?{div=16}):(?{div=16},1)"
    u = from_dlpack(FakeCudaArray("float16", (64, 256))).mark_compact_shape_dynamic(0, divisibility=16)
    assert str(u.layout) == "(?{div=16},256):(256,1)"
    v = from_dlpack(FakeCudaArray("float32", (5, 3, 2, 4), (3, 1, 15, 30)))
    v.mark_compact_shape_dynamic(mode=1, stride_order=(3, 2, 0, 1), divisibility=3)
    assert str(v.layout) == "(5,?{div=3},2,4):(?{div=3},1,?{div=15},?{div=30})"
    with pytest.raises(CuteValueError, match="not a multiple of divisibility=16"):
        from_dlpack(FakeCudaArray("float16", (64, 250))).mark_compact_shape_dynamic(1, divisibility=16)
    with pytest.raises(CuteValueError, match="not compact"):
        from_dlpack(FakeCudaArray("float16", (64, 256), (512, 1))).mark_compact_shape_dynamic(1)
    with pytest.raises(CuteValueError, match="permutation"):
        from_dlpack(FakeCudaArray("float16", (64, 256))).mark_compact_shape_dynamic(1, stride_order=(0, 0))


# -- one compile, every shape ------------------------------------------------------------------------------


def test_one_compile_serves_every_shape_and_the_marks_are_checked_per_call():
    before = _cache.stats["compiles"] + _cache.stats["disk_hits"]
    first = tma_copy.compile(marked((300, 256)), marked((300, 256), address=1 << 33))
    for m, n in [(1, 8), (129, 64), (4096, 520), (77, 1000)]:
        again = tma_copy.compile(marked((m, n)), marked((m, n), address=1 << 33))
        assert again is first
    assert _cache.stats["compiles"] + _cache.stats["disk_hits"] - before == 1
    # each call binds the run-time extents and re-derives the grid and the descriptors
    src, dst = marked((1000, 200)), marked((1000, 200), address=1 << 33)
    ptrs, values = first._bind((src, dst))
    assert values == (1000, 200, 200, 1000, 200, 200)
    env = first._binder.env(values)
    desc = next(s[0] for k, s in first.launches[0].params if k == "desc").bind(env)
    assert desc.global_dims == (200, 1000) and desc.global_strides == (400,)
    grid = tuple(g if type(g) is int else g.evaluate(env) for g in first.launches[0].grid)
    assert grid == (-(-200 // 64), -(-1000 // 128), 1)


def test_device_array_specs_with_sym_int_share_their_symbols():
    M, N = cute.sym_int(), cute.sym_int(divisibility=8)
    c = tma_copy.compile(DeviceArraySpec(cute.Float16, (M, N)), DeviceArraySpec(cute.Float16, (M, N)))
    assert [leaf.name for leaf in c._binder.leaves] == ["src.shape[0]", "src.shape[1]"]
    assert c._binder.bind({0: ((100, 64), (64, 1)), 1: ((100, 64), (64, 1))}) == (100, 64)
    with pytest.raises(SpecMismatch, match=r"argument 1 \(dst\): shape 0 is 101, but the value of src.shape\[0\]"):
        c._binder.bind({0: ((100, 64), (64, 1)), 1: ((101, 64), (64, 1))})
    with pytest.raises(SpecMismatch, match=r"shape 1 is 60, not a multiple of 8 \(the divisibility of src.shape\[1\]\)"):
        c._binder.bind({0: ((100, 60), (60, 1)), 1: ((100, 60), (60, 1))})
    with pytest.raises(SpecMismatch, match=r"stride 0 is 128, but the value of src.shape\[1\] bound before is 64"):  # compact stays compact
        c._binder.bind({0: ((100, 64), (128, 1)), 1: ((100, 64), (64, 1))})
    with pytest.raises(SpecMismatch, match="compiled for rank 2"):
        c._binder.bind({0: ((100,), (1,)), 1: ((100, 64), (64, 1))})
    with pytest.raises(SpecMismatch, match="outside the range of the 32-bit"):
        c._binder.bind({0: ((1 << 31, 64), (64, 1)), 1: ((1 << 31, 64), (64, 1))})
    # separate symbols make another compile (another key), whose extents are bound independently
    P, Q = cute.sym_int(), cute.sym_int(divisibility=8)
    d = tma_copy.compile(DeviceArraySpec(cute.Float16, (M, N)), DeviceArraySpec(cute.Float16, (P, Q)))
    assert d is not c and len(d._binder.leaves) == 4


def test_the_kernel_takes_one_parameter_per_run_time_extent(assemble_ptx):
    c = tma_copy.compile(marked((300, 256)), marked((300, 256), address=1 << 33))
    kinds = re.findall(r"\.param (\.\w+)[^\n]*_param_\d+", c.ptx)
    # per atom: its descriptor (128 bytes), then the two extents of its coordinate tensor
    assert kinds == [".align", ".u32", ".u32"] * 2, c.ptx[:1500]
    assert "cp.async.bulk.tensor.2d" in c.ptx
    assemble_ptx(c.ptx)


def test_elementwise_with_dynamic_strides_passes_64_bit_strides(assemble_ptx):
    import sys

    sys.path.insert(0, "tests")
    from dsl_programs.elementwise_add import elementwise_add

    args = [marked((1000, 256), address=a) for a in (1 << 32, 1 << 33, 1 << 34)]
    c = cute.compile(elementwise_add, *args)
    assert [k for k, _ in c.launches[0].params] == ["ptr", "Int32", "Int32", "Int64"] * 3
    assert re.findall(r"\.param (\.u\d+)[^\n]*_param_\d+", c.ptx) == [".u64", ".u32", ".u32", ".u64"] * 3
    assemble_ptx(c.ptx)


@pytest.mark.parametrize("mark, width", [(lambda x: x, "v4.b32"),
                                         (lambda x: x.mark_compact_shape_dynamic(1, divisibility=8), "v4.b32"),
                                         (lambda x: x.mark_compact_shape_dynamic(1, divisibility=4), "b64"),
                                         (lambda x: x.mark_compact_shape_dynamic(1, divisibility=2), "b32"),
                                         (lambda x: x.mark_layout_dynamic(), "b16")])
def test_divisibility_facts_decide_the_vector_width(mark, width, assemble_ptx):
    """Eight fp16 elements per thread of rows of a run-time length: 16-byte vectors only where the marks prove
    every row starts 16 bytes aligned (a multiple of 8 elements), narrower ones for weaker facts."""
    args = [mark(from_dlpack(FakeCudaArray("float16", (64, 256), address=a), assumed_align=16))
            for a in (1 << 32, 1 << 33)]
    c = _copy_rows.compile(*args)
    assert set(re.findall(r"ld\.global\.(\S+)", c.ptx)) == {width}
    assert set(re.findall(r"st\.global\.(\S+)", c.ptx)) == {width}
    assemble_ptx(c.ptx)


# -- what a call checks --------------------------------------------------------------------------------


def test_a_grid_out_of_the_hardware_range_for_a_call_is_refused_with_its_expression():
    from cute_py.compiler.runtime.parameters import grid_for as _grid_for

    c = tma_copy.compile(marked((300, 256)), marked((300, 256), address=1 << 33))
    ln = c.launches[0]
    plan = (None, 1, 1, 1, 32, 1, 1, 0, 0, None)
    env = c._binder.env((128 * 65536, 64, 64, 128 * 65536, 64, 64))
    with pytest.raises(ArgumentError, match=r"grid.y is at most 65535.*y = \(\(src.shape\[0\] \+ 127\) // 128\)"):
        _grid_for(plan, ln, env)
    with pytest.raises(ArgumentError, match="grid.x is at least 1"):
        _grid_for(plan, ln, c._binder.env((5, 0, 0, 5, 0, 0)))
    assert _grid_for(plan, ln, c._binder.env((5, 64, 64, 5, 64, 64)))[1:4] == (1, 1, 1)


def test_tma_rules_are_checked_for_each_call_with_its_values():
    c = tma_copy.compile(marked((300, 256)), marked((300, 256), address=1 << 33))
    desc = next(s[0] for k, s in c.launches[0].params if k == "desc")
    assert desc.is_dynamic
    # a row of 100 fp16 elements: a 200-byte stride, not a multiple of 16
    ptrs, values = c._bind((marked((10, 100)), marked((10, 100), address=1 << 33)))
    with pytest.raises(TmaError, match=r"for the extents and strides of this call \(.*\): global stride 1 is 200 bytes"):
        desc.bind(c._binder.env(values))


def test_tma_needs_a_static_contiguous_stride():
    with pytest.raises(TmaError, match="run-time gmem stride"):
        tma_copy.compile(marked((64, 64), (64, 2)), marked((64, 64), address=1 << 33))


def test_host_code_deciding_on_a_run_time_extent_with_no_value_is_told_to_decide_in_the_kernel():
    @cute.jit
    def branchy(a):
        if a.shape[0] > 64:
            pass

    spec = DeviceArraySpec("float16", (cute.sym_int(), 64), (64, 1))
    with pytest.raises(StaticValueRequired, match=r"a decision on the run-time value .*shape\[0\] > 64 cannot be "
                                                  r"taken while compiling: the arguments give it no value"):
        branchy.compile(spec)


def test_a_constexpr_parameter_refuses_a_run_time_extent():
    @cute.kernel
    def k(n: cute.Constexpr):
        pass

    @cute.jit
    def host(a):
        k(a.shape[0]).launch(grid=1, block=32)

    with pytest.raises(ArgumentError, match="Constexpr.*run-time extents"):
        host.compile(marked((100, 64)))


def test_an_extent_only_inside_an_expression_cannot_be_bound():
    M = cute.sym_int()
    with pytest.raises(ArgumentError, match="appears only inside expressions"):
        tma_copy.compile(DeviceArraySpec(cute.Float16, (M * 2, 64)), DeviceArraySpec(cute.Float16, (64, 64)))


# -- the generated launch path of a dynamic compile ------------------------------------------------------------


def test_the_generated_dynamic_launch_replays_rebinds_and_refuses(monkeypatch):
    from test_jit_compiled_call import FakeDriver, FakeTorchTensor
    from cute_py.compiler.runtime import launch as L

    driver = FakeDriver()
    monkeypatch.setitem(L._STATE, "driver", driver)
    monkeypatch.setattr(L, "load_module", lambda cubin, kernels, *rest: (None, {n: f"F:{n}" for n in kernels}))
    monkeypatch.setattr(tma_copy, "_compiled", {})
    encoded = []
    monkeypatch.setattr(cute.compiler.Compiled, "_descriptor",
                        lambda self, desc, address, env=None: encoded.append(desc.bind(env).global_dims) or b"\0" * 128)
    T = type("Tensor", (FakeTorchTensor,), {})
    T.__module__ = "torch"
    M, N = cute.sym_int(), cute.sym_int(divisibility=8)
    c = tma_copy.compile(DeviceArraySpec(cute.Float32, (M, N)), DeviceArraySpec(cute.Float32, (M, N)))
    a, b = T(1 << 26, shape=(300, 64)), T(1 << 27, shape=(300, 64))
    c(a, b)
    c(a, b)
    assert callable(c._fast_call) and c._state is CallState.FAST
    n = len(encoded)
    c(a, b)  # the same addresses and extents: replayed, nothing bound or encoded again
    assert len(encoded) == n and driver.calls[-1][1:4] == (1, 3, 1)  # ceil(64 / 64), ceil(300 / 128)
    c(T(1 << 26, shape=(1000, 128)), T(1 << 27, shape=(1000, 128)))  # new extents: bound, grid and descriptors
    assert driver.calls[-1][1:4] == (2, 8, 1) and encoded[-2:] == [(128, 1000), (128, 1000)]
    calls = len(driver.calls)
    with pytest.raises(SpecMismatch, match="not a multiple of 8"):
        c(T(1 << 26, shape=(10, 60)), T(1 << 27, shape=(10, 60)))
    with pytest.raises(SpecMismatch, match="bound before"):
        c(T(1 << 26, shape=(10, 64)), T(1 << 27, shape=(11, 64)))
    assert len(driver.calls) == calls  # nothing launched for a refused call
    c(a, b)
    assert driver.calls[-1][1:4] == (1, 3, 1)
    # a call the generated path passes to the general one binds other extents: the next call of the first
    # tensors binds theirs again instead of replaying the launch bound for the other call
    U = type("OtherTensor", (FakeTorchTensor,), {})
    U.__module__ = "torch"
    c(a, b)
    c(U(1 << 28, shape=(1000, 128)), U(1 << 29, shape=(1000, 128)))
    assert driver.calls[-1][1:4] == (2, 8, 1)
    c(a, b)
    assert driver.calls[-1][1:4] == (1, 3, 1), "the launch bound for the other call was replayed"
