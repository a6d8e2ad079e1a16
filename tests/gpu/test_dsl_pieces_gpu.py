"""On a Hopper GPU, into poisoned buffers: ``Pointer.align`` in a kernel, a view carried by a run-time loop, the
universal MMA, a list of arrays with the Constexpr parameter left out of the call, a run-time scalar expression
of the host code, and a host decision on a run-time extent taken again for another shape.

Each test builds its PTX first (everywhere); the launches need a CUDA device (sm_90) and torch."""

import operator
import sys

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0)")

import cute_py as cute  # noqa: E402
from cute_py.compiler.specs.args import DeviceArraySpec  # noqa: E402
from cute_py.runtime import from_dlpack  # noqa: E402
from _tma_copy_check import check_outside, guarded, hopper_torch  # noqa: E402

sys.path.insert(0, "tests/jit")
from test_dsl_program_pieces import (_apply, _launch_align, _launch_carry, _launch_fma,  # noqa: E402
                                     _launch_scaled)
from test_host_decisions import branchy  # noqa: E402

pytestmark = pytest.mark.gpu

F = lambda dt, shape: DeviceArraySpec(dt, shape)  # noqa: E731


def test_align_rounds_each_threads_start_up_to_16_bytes(assemble_ptx):
    assemble_ptx(cute.compile(_launch_align, F("float32", (64,)), F("float32", (32,))).ptx)
    torch = hopper_torch()
    a = torch.arange(64, dtype=torch.float32, device="cuda")
    buf, out = guarded(torch, (1, 32), torch.float32)
    _launch_align(a, out.view(32))
    torch.cuda.synchronize()
    # thread t starts at element t, rounded up to a multiple of 4 elements (16 bytes)
    want = torch.cat([a[((t + 3) // 4) * 4:((t + 3) // 4) * 4 + 4] for t in range(8)])
    assert torch.equal(out.view(32), want)
    check_outside(torch, buf, out)


def test_a_carried_view_walks_the_tiles(assemble_ptx):
    assemble_ptx(cute.compile(_launch_carry, F("float32", (16,)), F("float32", (4,)), cute.Int32(3)).ptx)
    torch = hopper_torch()
    a = torch.randn(16, device="cuda")
    for n in (0, 1, 3, 4, 9):
        buf, out = guarded(torch, (1, 4), torch.float32)
        _launch_carry(a, out.view(4), cute.Int32(n))
        torch.cuda.synchronize()
        tiles = a.view(4, 4)
        want = sum((tiles[k % 4] for k in range(n)), torch.zeros(4, device="cuda"))
        torch.testing.assert_close(out.view(4), want)
        check_outside(torch, buf, out)


def test_the_universal_mma_multiplies(assemble_ptx):
    assemble_ptx(cute.compile(_launch_fma, F("float32", (8,)), F("float32", (16,)), F("float32", (32,))).ptx)
    torch = hopper_torch()
    a, b = torch.randn(4, 2, device="cuda"), torch.randn(8, 2, device="cuda")
    buf, c = guarded(torch, (4, 8), torch.float32)
    _launch_fma(a.view(8), b.view(16), c.reshape(32) if c.is_contiguous() else c)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a @ b.t())
    check_outside(torch, buf, c)


def test_a_list_of_arrays_with_the_constexpr_left_out(assemble_ptx):
    torch = hopper_torch()
    xs = [torch.randn(32, device="cuda") for _ in range(3)]
    buf, out = guarded(torch, (1, 32), torch.float32)
    c = cute.compile(_apply, operator.add, xs, out.view(32), 2)
    assemble_ptx(c.ptx)
    c(xs, out.view(32))  # op compiled in, scale's default
    torch.cuda.synchronize()
    torch.testing.assert_close(out.view(32), xs[0] + xs[1] + xs[2])
    check_outside(torch, buf, out)


def test_a_scalar_expression_is_evaluated_for_each_call(assemble_ptx):
    torch = hopper_torch()
    c = cute.compile(_launch_scaled, torch.ones(32, device="cuda"), 0.5)
    assemble_ptx(c.ptx)
    for s in (0.5, 2.0, -3.0):
        x = torch.ones(32, device="cuda")
        c(x, s)
        torch.cuda.synchronize()
        want = torch.tensor(s, dtype=torch.float32) * torch.tensor(1.4426950408889634, dtype=torch.float32)
        assert torch.equal(x, want.expand(32).to("cuda"))


def test_a_host_decision_takes_the_other_branch_for_another_shape(assemble_ptx):
    torch = hopper_torch()
    for rows in (100, 10, 100, 64, 65):
        a = torch.randn(rows, 256, device="cuda", dtype=torch.float16)
        buf, b = guarded(torch, (rows, 256), torch.float16)
        branchy(from_dlpack(a, assumed_align=16).mark_layout_dynamic(),
                from_dlpack(b, assumed_align=16).mark_layout_dynamic())
        torch.cuda.synchronize()
        assert torch.equal(b, a)
        check_outside(torch, buf, b)
    c = branchy.compile(from_dlpack(torch.empty(100, 256, device="cuda", dtype=torch.float16),
                                    assumed_align=16).mark_layout_dynamic(),
                        from_dlpack(torch.empty(100, 256, device="cuda", dtype=torch.float16),
                                    assumed_align=16).mark_layout_dynamic())
    assemble_ptx(c.ptx)
    a = torch.randn(7, 256, device="cuda", dtype=torch.float16)  # the compile of > 64 rows, called with 7
    buf, b = guarded(torch, (7, 256), torch.float16)
    c(from_dlpack(a, assumed_align=16).mark_layout_dynamic(), from_dlpack(b, assumed_align=16).mark_layout_dynamic())
    torch.cuda.synchronize()
    assert torch.equal(b, a)
    check_outside(torch, buf, b)


def test_hardware_info_asks_the_driver():
    torch = hopper_torch()
    hw = cute.utils.HardwareInfo()
    props = torch.cuda.get_device_properties(0)
    sms = hw.get_device_multiprocessor_count()
    assert sms == props.multi_processor_count
    assert hw.get_l2_cache_size_in_bytes() == props.L2_cache_size
    assert hw.get_max_active_clusters(1) == sms  # one block of all the shared memory per multiprocessor
    assert 0 < hw.get_max_active_clusters(2) <= sms // 2
    with pytest.raises(cute.CuteValueError, match="cluster_size must be an int in"):
        hw.get_max_active_clusters(33)


def test_a_persistent_walk_visits_every_tile_once(assemble_ptx):
    sys.path.insert(0, "tests/jit")
    from test_tile_scheduler import launch_tiles

    assemble_ptx(cute.compile(launch_tiles, DeviceArraySpec("int32", (5, 3, 2)), 4).ptx)
    torch = hopper_torch()
    for clusters in (1, 4, 7, 30, 64):
        out = torch.zeros(5, 3, 2, dtype=torch.int32, device="cuda")
        launch_tiles(out, clusters)
        torch.cuda.synchronize()
        assert bool((out == 1).all()), (clusters, out)
