"""Shared-memory allocation (alignment per swizzle, totals, overflow) and the arguments a jit function accepts."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import ArgumentError, TraceError
from cute_py.compiler.specs.args import array_spec, untag


def _allocations(body):
    seen = {}

    @cute.kernel
    def k():
        seen.update(body(arch.SmemAllocator()))

    def host():
        k().launch(grid=1, block=32)

    c = cute.compile(host)
    return seen, c.smem["k_0"]


def _sw128(dtype, shape):
    return cute.tile_to_shape(cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, dtype.width), shape)


def test_swizzled_tiles_are_aligned_to_the_swizzle_repeat():
    def body(smem):
        bar = smem.allocate_mbarrier()
        plain = smem.allocate_tensor(cute.Float32, cute.Layout((8, 8), (8, 1)))
        sw = smem.allocate_tensor(cute.Float16, _sw128(cute.Float16, (64, 64)))
        return {"bar": bar.address, "plain": plain.engine.address, "sw": sw.engine.address,
                "sw_align": sw.engine.alignment, "plain_align": plain.engine.alignment}

    got, total = _allocations(body)
    assert got["bar"] == 0
    assert got["plain"] == 128 and got["plain_align"] == 128      # unswizzled TMA tiles: 128 B
    assert got["sw"] == 1024 and got["sw_align"] == 1024          # 128B swizzle: 1024 B
    assert total == 1024 + 64 * 64 * 2


def test_the_launch_gets_the_total_the_kernel_allocates():
    def body(smem):
        smem.allocate(1000, 16)
        smem.allocate_mbarrier(3)
        return {}

    _, total = _allocations(body)
    assert total == 1000 + 24


def test_a_smaller_alignment_than_the_swizzle_needs_is_rejected():
    def body(smem):
        smem.allocate_tensor(cute.Float16, _sw128(cute.Float16, (64, 64)), alignment=128)
        return {}

    with pytest.raises(TraceError, match="needs 1024-byte aligned shared memory, got alignment=128"):
        _allocations(body)


def test_shared_memory_beyond_227_kb_is_rejected_at_the_users_line():
    def body(smem):
        smem.allocate(200 * 1024)
        smem.allocate(40 * 1024)
        return {}

    with pytest.raises(TraceError, match=r"test_jit_smem_and_args.py:\d+: shared memory overflow"):
        _allocations(body)


def test_launch_smem_below_the_allocation_is_rejected():
    @cute.kernel
    def k():
        arch.SmemAllocator().allocate(4096)

    def host():
        k().launch(grid=1, block=32, smem=1024)

    line = host.__code__.co_firstlineno + 1
    with pytest.raises(ArgumentError, match=rf"test_jit_smem_and_args.py:{line}: launch\(smem=1024\) of k_0 is less "
                                            r"than the 4096 bytes"):
        cute.compile(host)


def test_cuda_array_interface_arrays_become_static_layouts_over_tagged_pointers(fake):
    spec, ptr = array_spec(fake((64, 32), "<f2", ptr=0x7000_0000, strides=(128, 2)))
    assert tuple(spec) == ("Float16", (64, 32), (64, 1), 256) and ptr == 0x7000_0000
    seen = {}

    def host(x):
        seen["tensor"] = x

    c = cute.compile(host, fake((64, 32), "<f2", strides=(128, 2)))  # host code only: nothing to compile
    assert c.launches == [] and c.kernel_names == []
    t = seen["tensor"]
    assert str(t.layout) == "(64,32):(64,1)" and untag(t.engine.address) == (0, 0)


def test_gmem_tensors_and_tma_atoms_become_kernel_parameters(fake):
    @cute.kernel
    def k(t, atom, n):
        with cute.compiler.if_(n == 0):
            arch.sync_threads()

    def host(x, y, n: cute.Int32):
        atom, _ = cute.nvgpu.cpasync.make_tiled_tma_atom(cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(), y,
                                                         cute.Layout((32, 32), (32, 1)), (32, 32))
        k(x, atom, n).launch(grid=1, block=32)

    c = cute.compile(host, fake((64, 64)), fake((64, 64)), 3)
    assert "%arg0: !llvm.ptr<1>, %arg1: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<16 x i64>" in c.mlir
    assert [kind for kind, _ in c.launches[0].params] == ["ptr", "desc", "Int32"]


def test_host_memory_is_rejected():
    np = pytest.importorskip("numpy")

    with pytest.raises(ArgumentError, match="must be on a CUDA device"):
        array_spec(np.zeros((4, 4), np.float32))  # through DLPack: a CPU array


def test_a_compiled_kernel_rejects_arguments_of_another_specialisation(fake):
    from examples import tma_copy

    a = cute.compiler.DeviceArraySpec("Float32", (256, 256))
    c = cute.compile(tma_copy, a, a, (64, 64), "none")
    b = cute.compiler.DeviceArraySpec("Float32", (256, 128))
    with pytest.raises(ArgumentError, match=r"argument 0: compiled for .*256, 256.* got .*256, 128"):
        c(b, a)
    with pytest.raises(ArgumentError, match="compiled for 4 arguments"):
        c(a)


def test_run_time_scalars_check_their_range():
    with pytest.raises(ArgumentError, match=r"does not fit in Int32"):
        cute.Int32(1 << 31)


def test_a_host_dlpack_array_is_not_a_kernel_argument():
    # numpy exports host memory through DLPack: the device type is read from the export and refused
    np = pytest.importorskip("numpy")

    @cute.kernel
    def k(g):
        pass

    def host(g):
        k(g).launch(grid=1, block=32)

    with pytest.raises(cute.compiler.ArgumentError, match=r"must be on a CUDA device \(device type 1, the host\): "
                                                          r"move it to the GPU .* cute.DeviceArraySpec\(dtype, shape\) "
                                                          r"to compile without a GPU, or run .* cute_py.reference"):
        cute.compile(host, np.zeros(4, np.float32))
