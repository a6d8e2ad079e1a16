"""TileLang's warpgroup builtin names in ``cute_py.arch``: the WGMMA fences and waits they emit, the descriptor
bits of ``initialize_wgmma_descriptor`` against the PTX ISA's field table (written here), the start-address
arithmetic of ``increase_descriptor_offset``, and the rules' errors. Run-time values: tests/gpu/test_arch_names_gpu.py."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError

from test_arch_names import compile_kernel


def _bits(start, lbo_units, sbo_units, layout_type):
    """The WGMMA descriptor from the PTX ISA's table: start >> 4 in 0-13, LBO in 16-29, SBO in 32-45 (16-byte
    units), the layout type in 62-63."""
    return ((start >> 4) & 0x3FFF) | (lbo_units & 0x3FFF) << 16 | (sbo_units & 0x3FFF) << 32 | layout_type << 62


@pytest.mark.parametrize("args", [(0x400, 1, 1, 64), (0x3FFF0, 3, 16383, 16383), (0x12340, 2, 32, 0), (0, 0, 0, 0)])
def test_static_descriptors_have_the_ptx_isa_bits_and_offsets_move_the_start(args):
    start, lt, lbo, sbo = args

    @cute.kernel
    def k(inp, out):
        d = arch.initialize_wgmma_descriptor(None, start, lt, lbo, sbo)
        assert d == _bits(start, lbo, sbo, lt)
        assert arch.increase_descriptor_offset(d, 64) == d + 4 if (d & 0xFFFFFFFF) + 4 < 1 << 32 else True
        top = _bits(0, lbo, sbo, lt) | 0xFFFFFFFF  # the low word wraps; the high word is kept
        assert arch.increase_descriptor_offset(top, 32) == (top & ~0xFFFFFFFF) | 1
        out[0] = 0

    compile_kernel(k)


def test_the_fences_and_waits_and_a_run_time_descriptor(filecheck, assemble):
    @cute.kernel
    def k(inp, out):
        acc = cute.make_fragment(cute.make_layout(8), cute.Float32)
        for i in cute.range_constexpr(8):
            acc[i] = 0.0
        arch.warpgroup_arrive()
        arch.warpgroup_fence_operand(acc)
        arch.warpgroup_commit_batch()
        arch.warpgroup_wait(1)
        arch.wait_wgmma(0)
        d = arch.initialize_wgmma_descriptor(None, inp[0], 1, 1, inp[1])
        d = arch.increase_descriptor_offset(d, 32)
        out[0] = cute.Int32(d & 0xFFFFFFFF)
        out[1] = cute.Int32(acc[3])

    c = compile_kernel(k, block=128)
    filecheck(c.ptx, [
        "CHECK: wgmma.fence.sync.aligned;",
        "CHECK: wgmma.commit_group.sync.aligned;",
        "CHECK: wgmma.wait_group.sync.aligned 1;",
        "CHECK: wgmma.wait_group.sync.aligned 0;",
        "CHECK: mov.b64 {{%rd[0-9]+}}, {{[{]%r[0-9]+, %r[0-9]+[}]}};",
        "CHECK: add.u32",
    ])
    assemble(c.ptx)


@pytest.mark.parametrize("call, match", [
    (lambda: arch.initialize_wgmma_descriptor(None, 0, 4), r"layout_type_ must be 0 \(none\), 1 \(128B\), 2 \(64B\) or "
                                                           r"3 \(32B\), got 4"),
    (lambda: arch.initialize_wgmma_descriptor(None, 0, 1, 16384), r"leading_byte_offset is a 14-bit field in units of "
                                                                  r"16 bytes \(0\.\.16383\), got 16384"),
    (lambda: arch.initialize_wgmma_descriptor(None, 0x408, 1), r"start_address must be a 16-byte aligned shared-memory "
                                                               r"address, got 0x408"),
    (lambda: arch.increase_descriptor_offset(0, 8), "offset is in bytes, a multiple of 16, got 8"),
    (lambda: arch.warpgroup_wait(8), "the number of pending batches must be in 0..7, got 8"),
    (lambda: arch.warpgroup_fence_operand(3), r"fences a register fragment \(make_fragment\), got 3"),
])
def test_rules_are_trace_errors_naming_the_value(call, match):
    @cute.kernel
    def k(inp, out):
        call()

    with pytest.raises(TraceError, match=match):
        compile_kernel(k)
