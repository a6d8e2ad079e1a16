"""Mistakes known while tracing are errors at the user's line, never kernels that compile and misbehave:
static out-of-bounds indexing of register, shared and global tensors; launch configurations beyond sm_90's
limits; a TMA multicast wider than its cluster; mbarrier operations on a tensor's data or a misaligned address;
Python lists where device memory is meant; kernels that return a value; and the dialect's own verifier rules."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.errors import CuteError
from cute_py.compiler import ArgumentError, TraceError
from cute_py.nvgpu import cpasync
from _control_flow_helpers import line_of as _line_of

HERE = __file__.replace(".pyc", ".py")
ARRAY = cute.compiler.DeviceArraySpec("Int32", (4,))


def line_of(marker):
    return _line_of(marker, __file__)


def _compile(kernel_fn, *kargs, **launch):
    launch = {"grid": 1, "block": 32, **launch}

    def host(g):
        kernel_fn(g, *kargs).launch(**launch)  # @launch

    return cute.compile(host, ARRAY)


def _error_at(exc_type, marker, kernel_fn, *kargs, **launch):
    """The message of the ``exc_type`` that compiling ``kernel_fn`` raises; asserted to start at ``marker``'s line."""
    with pytest.raises(exc_type) as info:
        _compile(kernel_fn, *kargs, **launch)
    msg = str(info.value)
    assert msg.startswith(f"{HERE}:{line_of(marker)}: "), msg
    return msg


# -- static out-of-bounds indexing ---------------------------------------------------------------------------


def test_a_register_fragment_written_past_its_end_is_an_error_at_the_line():
    @cute.kernel
    def k(g):
        frag = cute.make_fragment(cute.Layout(4), cute.Int32)
        frag[4] = 1  # @rmem-write

    msg = _error_at(CuteError, "@rmem-write", k)
    assert "4" in msg and ("outside the shape" in msg or "out of bounds" in msg), msg


def test_a_register_fragment_read_at_a_negative_coordinate_is_an_error_not_its_last_element():
    @cute.kernel
    def k(g):
        frag = cute.make_fragment(cute.Layout(4), cute.Int32)
        g[0] = frag[-1]  # @rmem-negative

    msg = _error_at(CuteError, "@rmem-negative", k)
    assert "-1" in msg and ("outside the shape" in msg or "out of bounds" in msg), msg


def test_a_view_past_the_end_of_a_register_fragment_is_an_error_at_the_line():
    # every coordinate is inside the view's shape; the view starts 2 elements into a 4-element fragment
    @cute.kernel
    def k(g):
        frag = cute.make_fragment(cute.Layout(4), cute.Int32)
        view = cute.make_tensor(frag.engine + 2, cute.Layout(4))
        view[3] = 1  # @rmem-view

    msg = _error_at(TraceError, "@rmem-view", k)
    assert "register fragment index out of bounds: element offset 5 of a fragment of 4 elements" in msg


def test_a_register_fragment_coordinate_outside_its_shape_is_a_cute_error_at_the_line():
    # (2, 2):(1, 2): coordinate (2, 0) would be offset 2, the element (0, 1): it must not be read silently
    @cute.kernel
    def k(g):
        frag = cute.make_fragment(cute.Layout((2, 2), (1, 2)), cute.Int32)
        g[0] = frag[2, 0]  # @rmem-coord

    _error_at(CuteError, "@rmem-coord", k)


def test_a_shared_memory_tensor_indexed_outside_its_shape_is_a_cute_error_at_the_line():
    @cute.kernel
    def k(g):
        s = arch.SmemAllocator().allocate_tensor(cute.Int32, cute.Layout((8, 8), (8, 1)))
        s[8, 0] = 1  # @smem-oob

    _error_at(CuteError, "@smem-oob", k)


def test_a_global_memory_tensor_indexed_outside_its_shape_is_a_cute_error_at_the_line():
    @cute.kernel
    def k(g):
        g[4] = 1  # @gmem-oob

    _error_at(CuteError, "@gmem-oob", k)


def test_in_bounds_fragment_indexing_still_traces():
    @cute.kernel
    def k(g):
        frag = cute.make_fragment(cute.Layout((2, 2), (1, 2)), cute.Int32)
        frag[1, 1] = 7
        g[3] = frag[1, 1]

    assert "7" in _compile(k).ptx


# -- launch configurations -----------------------------------------------------------------------------------

LIMITS = [
    (dict(block=1025), "a block has at most 1024 threads, got block=(1025, 1, 1) (1025 threads)"),
    (dict(block=(32, 32, 2)), "a block has at most 1024 threads, got block=(32, 32, 2) (2048 threads)"),
    (dict(block=(1, 1, 65)), "block.z is at most 64, got block=(1, 1, 65)"),
    (dict(grid=1 << 31), "grid.x is at most 2147483647, got grid=(2147483648, 1, 1)"),
    (dict(grid=(1, 65536)), "grid.y is at most 65535, got grid=(1, 65536, 1)"),
    (dict(grid=(1, 1, 65536)), "grid.z is at most 65535, got grid=(1, 1, 65536)"),
    (dict(grid=16, cluster=16), "a cluster of more than 8 CTAs is non-portable, got cluster=(16, 1, 1) (16 CTAs): "
                                "pass non_portable_cluster=True"),
    (dict(grid=32, cluster=(32, 1, 1), non_portable_cluster=True),
     "a cluster has at most 16 CTAs, got cluster=(32, 1, 1) (32 CTAs)"),
    (dict(grid=(3, 1), cluster=(2, 1)), "grid.x must be a multiple of cluster.x, got grid=(3, 1, 1), "
                                        "cluster=(2, 1, 1)"),
    (dict(smem=232449), "a block has at most 232448 bytes (227 KB) of dynamic shared memory on sm_90, got "
                        "smem=232449"),
    (dict(smem=1 << 64), f"got smem={1 << 64}"),
]


@pytest.mark.parametrize("launch,fragment", LIMITS, ids=[m.split(",")[0][:40] for _, m in LIMITS])
def test_a_launch_beyond_the_hardware_is_an_argument_error_at_the_launch_line(launch, fragment):
    @cute.kernel
    def k(g):
        g[0] = 1

    msg = _error_at(ArgumentError, "@launch", k, **launch)
    assert fragment in msg, msg


def test_launches_at_the_limits_compile():
    @cute.kernel
    def k(g):
        g[0] = 1

    for launch in (dict(block=1024), dict(block=(16, 1, 64)), dict(grid=(1 << 31) - 1), dict(grid=(1, 65535, 65535)),
                   dict(grid=8, cluster=8), dict(smem=232448)):
        assert _compile(k, **launch).launches


def test_a_non_portable_cluster_is_recorded_for_the_launch():
    @cute.kernel
    def k(g):
        g[0] = 1

    (ln,) = _compile(k, grid=16, cluster=16, non_portable_cluster=True).launches
    assert ln.cluster == (16, 1, 1) and ln.non_portable_cluster
    (ln,) = _compile(k, grid=8, cluster=8, non_portable_cluster=True).launches
    assert not ln.non_portable_cluster  # 8 CTAs are portable: no attribute needed


def test_a_multicast_atom_wider_than_the_cluster_is_an_argument_error_at_the_launch_line():
    @cute.kernel
    def k(atom, tma_tensor):
        arch.sync_threads()

    def host(src):
        layout = cute.Layout((64, 32), (32, 1))
        atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), src, layout,
                                                       (64, 32), num_multicast=4)
        k(atom, tma_tensor).launch(grid=4, block=32, cluster=(2, 1, 1))  # @mcast-launch

    with pytest.raises(ArgumentError) as info:
        cute.compile(host, cute.compiler.DeviceArraySpec("Float32", (256, 64)))
    msg = str(info.value)
    assert msg.startswith(f"{HERE}:{line_of('@mcast-launch')}: ")
    assert "the TMA atom of kernel argument 0 multicasts to 4 CTAs, but cluster=(2, 1, 1) has 2" in msg


# -- mbarriers -----------------------------------------------------------------------------------------------


def test_an_mbarrier_on_a_tensors_data_is_an_error_at_the_line():
    @cute.kernel
    def k(g):
        s = arch.SmemAllocator().allocate_tensor(cute.Int64, cute.Layout(16))
        arch.mbarrier_init(s.engine, 1)  # @mbar-tile

    msg = _error_at(TraceError, "@mbar-tile", k)
    assert "mbarrier_init: the address 0 lies in the data of a shared-memory tensor (bytes [0, 128))" in msg


def test_an_mbarrier_given_a_tensor_is_an_error_at_the_line():
    @cute.kernel
    def k(g):
        s = arch.SmemAllocator().allocate_tensor(cute.Int64, cute.Layout(16))
        arch.mbarrier_arrive(s)  # @mbar-tensor

    assert "mbarrier_arrive: the mbarrier must be a pointer from SmemAllocator.allocate_mbarrier(), got a tensor" \
        in _error_at(TraceError, "@mbar-tensor", k)


def test_an_mbarrier_at_a_misaligned_address_is_an_error_at_the_line():
    @cute.kernel
    def k(g):
        raw = arch.SmemAllocator().allocate(64, 8)
        arch.mbarrier_wait(raw + 4, 0)  # @mbar-misaligned

    assert "mbarrier_wait: an mbarrier is 8-byte aligned, but" in _error_at(TraceError, "@mbar-misaligned", k)


def test_an_mbarrier_in_global_memory_is_an_error_at_the_line():
    @cute.kernel
    def k(g):
        arch.mbarrier_try_wait(g.engine, 0)  # @mbar-gmem

    assert "mbarrier_try_wait: the mbarrier must be in shared memory, got a gmem pointer" in \
        _error_at(TraceError, "@mbar-gmem", k)


def test_a_tma_load_completing_on_a_tensors_data_is_an_error_at_the_line():
    @cute.kernel
    def k(atom, tma_tensor):
        smem = arch.SmemAllocator()
        s = smem.allocate_tensor(cute.Float32, cute.Layout((64, 32), (32, 1)))
        sA, gA = cpasync.tma_partition(atom, 0, cute.Layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(cute.local_tile(tma_tensor, (64, 32), (0, 0)), 0, 2))
        cute.copy(atom, gA, sA, tma_bar_ptr=s.engine)  # @tma-bar-tile

    def host(src):
        atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src,
                                                       cute.Layout((64, 32), (32, 1)), (64, 32))
        k(atom, tma_tensor).launch(grid=1, block=32)

    with pytest.raises(TraceError) as info:
        cute.compile(host, cute.compiler.DeviceArraySpec("Float32", (64, 32)))
    assert str(info.value).startswith(f"{HERE}:{line_of('@tma-bar-tile')}: copy: tma_bar_ptr: the address 0 lies in "
                                      f"the data of a shared-memory tensor")


def test_mbarriers_from_allocate_mbarrier_and_aligned_raw_bytes_are_accepted():
    @cute.kernel
    def k(g):
        smem = arch.SmemAllocator()
        bars = smem.allocate_mbarrier(2)
        raw = smem.allocate(16, 8)
        arch.mbarrier_init(bars + 1, 1)
        arch.mbarrier_init(raw + 8, 1)
        arch.mbarrier_arrive(bars + arch.thread_idx()[0] % 2)

    assert _compile(k).ptx.count("mbarrier.init") == 2


# -- the dialect's verifier rules ----------------------------------------------------------------------------


def test_an_mbarrier_arrival_count_of_zero_is_a_trace_error_at_the_line():
    @cute.kernel
    def k(g):
        bar = arch.SmemAllocator().allocate_mbarrier()
        arch.mbarrier_init(bar, 0)  # @count-zero

    msg = _error_at(TraceError, "@count-zero", k)
    assert "breaks rule [mbarrier-count-range]: the arrival count must lie in [1, 1048575], got 0" in msg


def test_a_transaction_count_beyond_20_bits_is_a_trace_error_at_the_line():
    @cute.kernel
    def k(g):
        bar = arch.SmemAllocator().allocate_mbarrier()
        arch.mbarrier_arrive_and_expect_tx(bar, 1 << 20)  # @tx-range

    msg = _error_at(TraceError, "@tx-range", k)
    assert ("mbarrier_arrive_and_expect_tx: bytes must lie in [0, 1048576) (mbarrier counts are 20-bit), got 1048576"
            in msg)


# -- lists and return values ---------------------------------------------------------------------------------


def test_a_python_list_passed_for_an_array_is_an_argument_error():
    @cute.kernel
    def k(g):
        g[0] = 1

    @cute.jit
    def host(g):
        k(g).launch(grid=1, block=1)

    with pytest.raises(ArgumentError, match=r"argument 0 of host is the Python list \[0, 0, 0, 0\]: a list is not "
                                            r"device memory .* pass a device array \(torch, cupy, DLPack\)"):
        host.compile([0, 0, 0, 0])


def test_a_python_list_of_numbers_given_to_a_kernel_is_an_argument_error_at_the_launch_line():
    @cute.kernel
    def k(g, out):
        out[0] = g[0]

    def host(g):
        k(g, [0.0, 0.0]).launch(grid=1, block=1)  # @list-launch

    with pytest.raises(ArgumentError) as info:
        cute.compile(host, ARRAY)
    assert str(info.value).startswith(f"{HERE}:{line_of('@list-launch')}: a kernel argument is the Python list "
                                      f"[0.0, 0.0]: a list is not device memory")


def test_tuples_of_numbers_stay_static_arguments():
    @cute.kernel
    def k(g, values):
        g[0] = values[1]

    def host(g):
        k(g, (3, 45678)).launch(grid=1, block=1)

    assert "45678" in cute.compile(host, ARRAY).ptx


def test_a_kernel_that_returns_a_value_is_an_error_at_the_return_line():
    @cute.kernel
    def k(g):
        x = g[0] + 1
        return x  # @return

    msg = _error_at(TraceError, "@return", k)
    assert "the kernel k returned TracedInt(i32): a kernel returns nothing" in msg


def test_the_multicast_example_opts_into_a_cluster_of_16_ctas():
    import examples as ex

    c = cute.compile(ex.tma_multicast_copy, cute.compiler.DeviceArraySpec("BFloat16", (128, 64)),
                     cute.compiler.DeviceArraySpec("BFloat16", (16 * 128, 64)), (128, 64), 16)
    (ln,) = c.launches
    assert ln.cluster == (16, 1, 1) and ln.non_portable_cluster
