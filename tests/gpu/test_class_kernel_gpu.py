"""Class-based kernels on the GPU, written the way the CuTe DSL's Hopper examples are: configuration in
``__init__``, a ``@cute.jit`` ``__call__(self, ..., stream)`` that builds TMA atoms and launches
``self.kernel(...).launch(grid=, block=, cluster=, smem=, stream=)``, a ``@cute.kernel`` method reading ``self``.
Each instance is run called directly and through ``cute.compile(instance, ...)`` on a side stream, and its
results are checked bit for bit (a copy) or against torch (an axpy). The PTX is built and assembled first
(everywhere); the launches need a Hopper GPU and torch."""

import importlib

import pytest

try:
    importlib.import_module("mlir_dialects.bindings")
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py import arch  # noqa: E402
from cute_py.compiler import DeviceArraySpec  # noqa: E402
from cute_py.nvgpu import cpasync  # noqa: E402
from examples import smem_tile_layout  # noqa: E402
from _tma_copy_check import hopper_torch, torch_dtype  # noqa: E402

pytestmark = pytest.mark.gpu


class TmaTileCopy:
    """A TMA tiled copy, gmem -> smem -> gmem, one tile per CTA, as a class."""

    def __init__(self, tile=(128, 64), swizzle="none", cluster=(1, 1)):
        self.tile = tile
        self.swizzle = swizzle
        self.cluster_shape_mn = cluster
        self.threads_per_cta = 32
        self.smem_slack = 1024  # room for the mbarrier after the (aligned) tile

    @cute.jit
    def __call__(self, src: cute.Tensor, dst: cute.Tensor, stream):
        self.dtype = src.element_type
        self.smem_layout = smem_tile_layout(self.dtype, self.tile, self.swizzle)
        self.tile_bytes = cute.size(self.smem_layout) * self.dtype.width // 8
        load_atom, load_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src,
                                                             self.smem_layout, self.tile)
        store_atom, store_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dst,
                                                               self.smem_layout, self.tile)
        grid = (cute.ceil_div(src.shape[0], self.tile[0]), cute.ceil_div(src.shape[1], self.tile[1]), 1)
        self.kernel(load_atom, load_tensor, store_atom, store_tensor).launch(
            grid=grid, block=[self.threads_per_cta, 1, 1], cluster=(*self.cluster_shape_mn, 1),
            smem=self.tile_bytes + self.smem_slack, stream=stream)

    @cute.kernel
    def kernel(self, load_atom: cute.CopyAtom, load_tensor: cute.Tensor, store_atom: cute.CopyAtom,
               store_tensor: cute.Tensor):
        bx, by, _ = arch.block_idx()
        smem = arch.SmemAllocator()
        s_tile = smem.allocate_tensor(self.dtype, self.smem_layout)
        bar = smem.allocate_mbarrier()
        s_grouped = cute.group_modes(s_tile, 0, 2)
        tAsA, tAgA = cpasync.tma_partition(load_atom, 0, cute.Layout(1), s_grouped,
                                           cute.group_modes(cute.local_tile(load_tensor, self.tile, (bx, by)), 0, 2))
        tBsB, tBgB = cpasync.tma_partition(store_atom, 0, cute.Layout(1), s_grouped,
                                           cute.group_modes(cute.local_tile(store_tensor, self.tile, (bx, by)), 0, 2))
        with arch.elect_one():
            arch.mbarrier_init(bar, 1)
            arch.mbarrier_init_fence()
            arch.mbarrier_arrive_and_expect_tx(bar, self.tile_bytes)
            cute.copy(load_atom, tAgA, tAsA, tma_bar_ptr=bar)
            arch.mbarrier_wait(bar, 0)
            cute.copy(store_atom, tBsB, tBgB)
            arch.tma_store_arrive()
            arch.tma_store_wait(0, read=True)


class Axpy:
    """``out = alpha * x + y`` over a 1-D tensor: ``alpha`` and the block size are the instance's."""

    def __init__(self, alpha, threads=128):
        self.alpha = alpha
        self.threads = threads

    @cute.jit
    def __call__(self, x, y, out, stream):
        self.kernel(x, y, out, cute.size(x)).launch(grid=cute.ceil_div(cute.size(x), self.threads),
                                                    block=self.threads, stream=stream)

    @cute.kernel
    def kernel(self, x, y, out, n: cute.Constexpr):
        tidx, _, _ = arch.thread_idx()
        bidx, _, _ = arch.block_idx()
        i = bidx * self.threads + tidx
        if i < n:
            out[i] = self.alpha * x[i] + y[i]


def _driver_stream(torch, s):
    from cuda.bindings import driver as cu

    return cu.CUstream(s.cuda_stream)


@pytest.mark.parametrize("dtype, swizzle, cluster", [("Float32", "none", (1, 1)), ("BFloat16", "128B", (2, 1))])
def test_a_class_based_tma_copy_runs_called_directly_and_compiled(dtype, swizzle, cluster, assemble_ptx):
    shape = (512, 256)
    copier = TmaTileCopy((128, 64), swizzle, cluster)
    from cuda.bindings import driver as cu

    spec = DeviceArraySpec(dtype, shape)
    compiled = cute.compile(copier, spec, spec, cu.CUstream(0))
    assert assemble_ptx(compiled.ptx)[:4] == b"\x7fELF"
    assert compiled.launches[0].cluster == (*cluster, 1) and "cp.async.bulk.tensor" in compiled.ptx
    assert compiled.smem == {"kernel_0": copier.tile_bytes + 1024}
    torch = hopper_torch()
    t = torch_dtype(torch, dtype)
    src = torch.randn(shape, device="cuda").to(t)
    side = torch.cuda.Stream()
    dst, dst2 = torch.zeros_like(src), torch.zeros_like(src)
    torch.cuda.synchronize()  # the inputs are ready before the side stream runs
    copier(src, dst, side)  # called directly, on a torch stream
    side.synchronize()
    assert torch.equal(dst, src)
    compiled(src, dst2, _driver_stream(torch, side))  # the compiled object, without self, on a CUstream
    side.synchronize()
    assert torch.equal(dst2, src)


def test_a_class_based_elementwise_kernel_runs_for_each_configuration(assemble_ptx):
    n = 1000  # not a multiple of the block: the tail is predicated
    spec = DeviceArraySpec("Float32", (n,))
    from cuda.bindings import driver as cu

    two, three = Axpy(2.0), Axpy(3.0, threads=256)
    c2 = cute.compile(two, spec, spec, spec, cu.CUstream(0))
    c3 = cute.compile(three, spec, spec, spec, cu.CUstream(0))
    assert c2 is not c3 and c3.launches[0].block == (256, 1, 1)
    for c in (c2, c3):
        assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    side = torch.cuda.Stream()
    for obj, alpha in ((two, 2.0), (three, 3.0), (Axpy(2.0), 2.0)):
        out = torch.zeros(n + 64, device="cuda")[:n]  # a guard after the end: the tail must stay in bounds
        torch.cuda.synchronize()
        obj(x, y, out, side)
        side.synchronize()
        torch.testing.assert_close(out, alpha * x + y, rtol=1e-6, atol=1e-6)
    guarded = torch.full((n + 64,), 7.0, device="cuda")
    torch.cuda.synchronize()
    c3(x, y, guarded[:n], _driver_stream(torch, side))
    side.synchronize()
    assert torch.equal(guarded[n:], torch.full((64,), 7.0, device="cuda"))
