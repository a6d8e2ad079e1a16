"""The DSL's host side on the GPU: ``from_dlpack`` of torch and cupy arrays passed to a jit function (the kernel
reads and writes the arrays' own memory, strided views included), ``print_tensor`` of device memory, a host
pointer to pinned memory, ``cute_py.torch`` streams and ``testing.benchmark`` (events, workspaces, CUDA graphs)."""

import io

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
import cute_py.testing as testing  # noqa: E402
import cute_py.torch as cutlass_torch  # noqa: E402
from cute_py.runtime import from_dlpack  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu


@cute.kernel
def scale_kernel(src, dst):
    i, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    r = b * 32 + i
    for c in cute.range_constexpr(dst.shape[1]):
        if r < dst.shape[0]:
            dst[r, c] = src[r, c] * 3.0


@cute.jit
def scale(src, dst):
    scale_kernel(src, dst).launch(grid=cute.ceil_div(dst.shape[0], 32), block=32)


def test_from_dlpack_tensors_of_torch_views_run_on_their_own_memory():
    torch = hopper_torch()
    base = torch.randn(70, 9, device="cuda")
    src = base[::2, 1:6]  # a strided view, offset into the storage
    out = torch.full((9, 70), 7.0, device="cuda")
    dst = out.t()[5:40, 2:7]  # (35, 5), column-major strides
    t_src, t_dst = from_dlpack(src, assumed_align=4), from_dlpack(dst)
    assert t_src.shape == (35, 5) and t_src.stride == (18, 1) and t_dst.stride == (1, 70)
    scale(t_src, t_dst)
    torch.cuda.synchronize()
    assert torch.equal(dst, src * 3.0)
    mask = torch.ones_like(out, dtype=torch.bool)
    mask.t()[5:40, 2:7] = False
    assert (out[mask] == 7.0).all()  # nothing outside the view was written


def test_from_dlpack_of_cupy_arrays_runs_too():
    hopper_torch()
    cp = pytest.importorskip("cupy")
    src = cp.arange(64 * 4, dtype=cp.float32).reshape(64, 4)
    dst = cp.zeros_like(src)
    scale(from_dlpack(src), from_dlpack(dst))
    cp.cuda.runtime.deviceSynchronize()
    assert bool((dst == src * 3).all())


def test_print_tensor_copies_device_memory_to_print_it():
    torch = hopper_torch()
    a = torch.arange(6, dtype=torch.float32, device="cuda").reshape(2, 3) - 2
    out = io.StringIO()
    cute.print_tensor(from_dlpack(a), file=out)
    assert out.getvalue().splitlines()[1:] == ["       [[-2.000000, -1.000000,  0.000000, ],",
                                               "        [ 1.000000,  2.000000,  3.000000, ]])"]
    assert ": f32, gmem, align<4>) o (2,3):(3,1), data=" in out.getvalue().splitlines()[0]


def test_a_host_pointer_to_pinned_memory_is_read_on_the_host():
    torch = hopper_torch()
    from cute_py.runtime import make_ptr

    a = torch.arange(8, dtype=torch.float32).pin_memory()
    t = cute.make_tensor(make_ptr(cute.Float32, a.data_ptr()), cute.Layout((2, 4)))
    assert t[1, 3] == 7.0
    d = torch.zeros(4, device="cuda")
    assert make_ptr(cute.Float32, d.data_ptr()).memspace is cute.AddressSpace.gmem


def test_torch_streams_and_dtypes():
    torch = hopper_torch()
    assert cutlass_torch.dtype(cute.BFloat16) is torch.bfloat16 and cutlass_torch.dtype(cute.Uint8) is torch.uint8
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        assert int(cutlass_torch.current_stream()) == s.cuda_stream
    assert int(cutlass_torch.default_stream()) == torch.cuda.default_stream().cuda_stream


@pytest.mark.parametrize("graphs", [False, True])
def test_benchmark_times_every_workspace_and_the_kernel_really_runs(graphs):
    torch = hopper_torch()
    n = 1 << 12
    made = []

    def workspace():
        x = torch.randn(n, 4, device="cuda")
        y = torch.zeros_like(x)
        made.append((x, y))
        return testing.JitArguments(x, y)

    compiled = cute.compile(scale, *workspace().args)
    made.clear()
    stream = torch.cuda.Stream()
    us = testing.benchmark(compiled, workspace_generator=workspace, workspace_count=3, warmup_iterations=1,
                           iterations=6, stream=stream, use_cuda_graphs=graphs)
    torch.cuda.synchronize()
    assert 0 < us < 10_000
    assert len(made) == 3 and all(torch.equal(y, x * 3.0) for x, y in made)
    assert len(us.samples) == (1 if graphs else 6) and 0 < us.min <= us.median <= us.max
    if not graphs:
        cold = testing.benchmark(compiled, workspace_generator=workspace, workspace_count=3, warmup_iterations=1,
                                 iterations=6, stream=stream, cold_l2=True)
        assert len(cold.samples) == 6 and 0 < cold.min and float(cold) == pytest.approx(sum(cold.samples) / 6)


def test_benchmark_refuses_graphs_on_the_default_stream():
    hopper_torch()
    with pytest.raises(cute.CuteValueError, match="non-default stream"):
        testing.benchmark(lambda: None, use_cuda_graphs=True)
