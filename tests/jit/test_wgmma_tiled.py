"""The warpgroup MMA through the MMA framework (make_tiled_mma, partitions, descriptor fragments, gemm): thread
partitions against CuTe C++'s GMMA traits and the PTX ISA's accumulator figure, descriptor fragments against
hand-derived byte offsets, the rules, and the PTX of a kernel (FileChecked, assembled for sm_90a)."""

import dataclasses
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_py as cute
from cute_py.core.layout import Layout
from cute_py.errors import CuteTypeError, CuteValueError
from cute_py.nvgpu import warp
from cute_py.nvgpu import warpgroup as wg
from cute_py.tensor.pointer import AddressSpace, Pointer
from cute_py.utils import LayoutEnum
from cute_py.utils import hopper_helpers as hh
from tests.gpu._wgmma_tiled_kernels import tiled_product_program

OpM = wg.OperandMajorMode


def _op(n=128, dt=cute.BFloat16, **kw):
    return wg.MmaF16BF16Op(dt, cute.Float32, (64, n, 16), **kw)


def _smem(layout, address=0):
    return cute.make_tensor(Pointer(cute.BFloat16, AddressSpace.smem, alignment=1024, address=address), layout)


def test_the_op_is_an_mma_op_of_one_warpgroup():
    tiled = cute.make_tiled_mma(_op(), (2, 1, 1))
    assert isinstance(_op(), cute.mma.MmaOp)
    assert (tiled.size, tiled.shape_mnk, tiled.thr_id) == (256, (128, 128, 16), Layout(128))
    assert tiled.atom.tv_layout_C == Layout(((4, 8, 4), (2, 2, 16)), ((128, 1, 16), (64, 8, 512)))


@pytest.mark.parametrize("t", [0, 1, 5, 31, 32, 77, 127, 128, 130, 200, 255])
def test_c_partition_is_the_ptx_accumulator_figure_per_warpgroup(t):
    tiled = cute.make_tiled_mma(_op(), (2, 1, 1))
    part = tiled.get_slice(t).partition_C(cute.make_identity_tensor((128, 256)))
    assert part.shape == ((2, 2, 16), 1, 2)
    w, u = t // 128, t % 128
    for n_tile in range(2):
        for v in range(64):
            # PTX ISA, wgmma m64nNk16 D fragment: row 16*(u//32) + (u%32)//4 + 8*((v//2)%2), column 2*(u%4) + v%2 + 8*(v//4)
            row = 64 * w + 16 * (u // 32) + (u % 32) // 4 + 8 * ((v // 2) % 2)
            col = 128 * n_tile + 2 * (u % 4) + v % 2 + 8 * (v // 4)
            assert tuple(part[v, 0, n_tile]) == (row, col)


@pytest.mark.parametrize("t", [0, 127, 128, 255])
def test_a_and_b_partitions_are_the_whole_instruction_tile(t):
    tiled = cute.make_tiled_mma(_op(), (2, 1, 1))
    thr = tiled.get_slice(t)
    pa = thr.partition_A(cute.make_identity_tensor((128, 64)))
    pb = thr.partition_B(cute.make_identity_tensor((128, 64)))
    assert (pa.shape, pb.shape) == (((64, 16), 1, 4), ((128, 16), 1, 4))
    for kb in range(4):
        for i, j in ((0, 0), (1, 0), (0, 1), (63, 15), (17, 9)):
            assert tuple(pa[(i, j), 0, kb]) == (64 * (t // 128) + i, 16 * kb + j)  # GMMA ALayout: (128,(64,16)):(0,(1,64))
        for i, j in ((0, 0), (127, 15), (100, 3)):
            assert tuple(pb[(i, j), 0, kb]) == (i, 16 * kb + j)


def _start(desc):
    """The byte address a sliced descriptor starts at: its first tile's start plus its offset in 16-byte units."""
    return desc.start.address + 16 * desc.start_offset


def test_descriptor_fragments_of_a_staged_128b_swizzled_tile():
    tiled = cute.make_tiled_mma(_op(), (2, 1, 1))
    la = hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (128, 128, 64), cute.BFloat16, 4)
    lb = hh.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (128, 128, 64), cute.BFloat16, 4)
    sA, sB = _smem(la, 0x4000), _smem(lb, 0x24000)
    for t in (0, 130):
        thr = tiled.get_slice(t)
        fa = tiled.make_fragment_A(thr.partition_A(sA))
        fb = tiled.make_fragment_B(thr.partition_B(sB))
        # C++'s recast<uint128_t> strides: a k-block is 16 bf16 = 2 units, a stage 128*64 bf16 = 1024 units
        assert fa.layout == Layout((1, 1, 4, (1, 4)), (0, 0, 2, (0, 1024)))
        assert fb.layout == Layout((1, 1, 4, (1, 4)), (0, 0, 2, (0, 1024)))
        for kb in range(4):
            for s in range(4):
                da = fa[None, 0, kb, s].descriptor()
                db = fb[None, 0, kb, s].descriptor()
                # rows of 128 B, 8-row groups 1024 B apart (SBO), K steps of 32 B inside the swizzle row
                assert _start(da) == 0x4000 + 16384 * s + 8192 * (t // 128) + 32 * kb
                assert _start(db) == 0x24000 + 16384 * s + 32 * kb
                for d in (da, db):
                    assert (d.leading_byte_offset, d.stride_byte_offset, d.layout_type) == (16, 1024, wg.LayoutType.B128)
        sliced = fa[None, None, 2, None]
        assert sliced.shape == (1, 1, (1, 4))


@pytest.mark.parametrize("a_major, b_major", [(OpM.K, OpM.K), (OpM.K, OpM.MN), (OpM.MN, OpM.K), (OpM.MN, OpM.MN)])
@pytest.mark.parametrize("tile_k", [16, 32, 64])
def test_a_slices_descriptor_is_its_first_tiles_plus_the_fragment_offset(a_major, b_major, tile_k):
    """Every slice of a descriptor fragment starts where its own tile does: the first tile's start plus the
    fragment's offset in 16-byte units (one addition in the kernel), with the tile's own fields; over both major
    modes, every swizzle (tile K of 16, 32, 64 bf16), two MMA tiles in M and N, stages, and both warpgroups."""
    own = wg.fragment.GmmaDescriptorTensor
    tiled = hh.make_trivial_tiled_mma(cute.BFloat16, cute.BFloat16, a_major, b_major, cute.Float32, (2, 1, 1),
                                      (64, 64))
    enum = {OpM.K: LayoutEnum.ROW_MAJOR, OpM.MN: LayoutEnum.COL_MAJOR}
    la = hh.make_smem_layout_a(enum[a_major], (256, 128, tile_k), cute.BFloat16, 3)
    lb = hh.make_smem_layout_b(enum[b_major], (256, 128, tile_k), cute.BFloat16, 3)
    checked = 0
    for t in (0, 130):
        thr = tiled.get_slice(t)
        for frag in (tiled.make_fragment_A(thr.partition_A(_smem(la, 0x8000))),
                     tiled.make_fragment_B(thr.partition_B(_smem(lb, 0x20000)))):
            plain = own(frag.smem, frag.major, frag.layout)  # each slice's descriptor from its own tile
            for c in itertools.product(*[range(cute.size(x)) for x in frag.shape[1:]]):
                d, o = frag[(None,) + c].descriptor(), plain[(None,) + c].descriptor()
                assert type(o.start_offset) is int and o.start_offset == 0
                assert _start(d) == o.start.address, (c, d, o)
                assert dataclasses.replace(d, start=o.start, start_offset=0) == o
                checked += 1
    assert checked == 2 * 2 * 2 * (tile_k // 16) * 3  # threads x fragments x MMA tiles x k-blocks x stages


@pytest.mark.parametrize("offset", [1.5, True, "2", (3, 4), (None, 2), [2], (object(), 1)])
def test_a_descriptors_start_offset_is_units_or_an_error(offset):
    with pytest.raises(CuteTypeError, match="start_offset is an int, a run-time integer or a pair"):
        wg.GmmaDescriptor(0, 16, 1024, wg.LayoutType.B128, 0, offset)
    d = wg.GmmaDescriptor(0x400, 16, 1024, wg.LayoutType.B128, 0, 3)
    assert d.value == wg.GmmaDescriptor(0x430, 16, 1024, wg.LayoutType.B128).value == (0x43 | 1 << 16 | 64 << 32
                                                                                       | 1 << 62)


def test_fragment_rules():
    tiled = cute.make_tiled_mma(_op(), (1, 1, 1))
    thr = tiled.get_slice(0)
    g = cute.make_tensor(Pointer(cute.BFloat16, AddressSpace.gmem, alignment=16, address=0), Layout((64, 64), (64, 1)))
    with pytest.raises(wg.GmmaLayoutError, match="takes a shared-memory partition"):
        tiled.make_fragment_A(thr.partition_A(g))
    # row-major 64x64 bf16 without a swizzle is no canonical K-major GMMA layout (rows 128 B apart)
    with pytest.raises(wg.GmmaLayoutError, match="not a canonical K-major WGMMA layout"):
        tiled.make_fragment_A(thr.partition_A(_smem(Layout((64, 64), (64, 1)))))
    f16 = cute.make_tensor(Pointer(cute.Float16, AddressSpace.smem, alignment=1024, address=0),
                           hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (64, 128, 64), cute.Float16, 1))
    with pytest.raises(CuteTypeError, match="reads BFloat16 elements, the shared-memory tensor holds Float16"):
        tiled.make_fragment_A(thr.partition_A(f16[None, None, 0]))
    f = tiled.make_fragment_A(thr.partition_A(_smem(hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (64, 8, 64),
                                                                          cute.BFloat16, 1))[None, None, 0]))
    with pytest.raises(CuteValueError, match="mode 0 of a descriptor tensor is its one descriptor"):
        f[1, 0, 0]
    with pytest.raises(CuteValueError, match="takes a one-instruction descriptor tensor"):
        f.descriptor()


def test_fields_set_and_get():
    tiled = cute.make_tiled_mma(_op(), (1, 1, 1))
    assert tiled.get(wg.Field.ACCUMULATE) is True  # CuTe C++'s GMMA atoms start with ScaleOut::One
    tiled.set(wg.Field.ACCUMULATE, False)
    assert tiled.get(wg.Field.ACCUMULATE) is False
    assert _op().gemm_fields({wg.Field.ACCUMULATE: False}, 0) == {"accumulate": False}
    assert _op().gemm_fields({wg.Field.ACCUMULATE: False}, 1) == {"accumulate": True}
    sync = cute.make_tiled_mma(warp.MmaF16BF16Op(cute.Float16, cute.Float32, (16, 8, 16)))
    with pytest.raises(CuteValueError, match="has no settable field Field.ACCUMULATE .*none"):
        sync.set(wg.Field.ACCUMULATE, True)


def test_make_trivial_tiled_mma():
    tiled = hh.make_trivial_tiled_mma(cute.BFloat16, cute.BFloat16, OpM.K, OpM.MN, cute.Float32, (2, 1, 1), (64, 256))
    assert tiled.op == wg.MmaF16BF16Op(cute.BFloat16, cute.Float32, (64, 256, 16), b_major_mode=OpM.MN)
    assert (tiled.size, tiled.shape_mnk) == (256, (128, 256, 16))
    with pytest.raises(CuteTypeError, match="one element type .or two 8-bit floats., got Float16 and BFloat16"):
        hh.make_trivial_tiled_mma(cute.Float16, cute.BFloat16, OpM.K, OpM.K, cute.Float32, (1, 1, 1), (64, 64))
    f8 = hh.make_trivial_tiled_mma(cute.Float8E4M3FN, cute.Float8E5M2, OpM.K, OpM.K, cute.Float32, (2, 1, 1),
                                   (64, 128))
    assert f8.op == wg.MmaF8Op(cute.Float8E4M3FN, cute.Float8E5M2, cute.Float32, (64, 128, 32))
    assert (f8.size, f8.shape_mnk) == (256, (128, 128, 32))
    with pytest.raises(CuteTypeError, match="Float32 inputs is not available"):
        hh.make_trivial_tiled_mma(cute.Float32, cute.Float32, OpM.K, OpM.K, cute.Float32, (1, 1, 1), (64, 64))
    with pytest.raises(CuteTypeError, match="one element type .or two 8-bit floats., got Float8E4M3FN and BFloat16"):
        hh.make_trivial_tiled_mma(cute.Float8E4M3FN, cute.BFloat16, OpM.K, OpM.K, cute.Float32, (1, 1, 1), (64, 64))
    with pytest.raises(wg.WgmmaShapeError, match="8-bit operands are K-major"):
        hh.make_trivial_tiled_mma(cute.Float8E5M2, cute.Float8E5M2, OpM.K, OpM.MN, cute.Float32, (1, 1, 1), (64, 64))
    with pytest.raises(wg.WgmmaShapeError, match="M extent of a warpgroup MMA is 64, got 128"):
        hh.make_trivial_tiled_mma(cute.Float16, cute.Float16, OpM.K, OpM.K, cute.Float32, (1, 1, 1), (128, 64))


# -- 8-bit floats ------------------------------------------------------------------------------------------


def _f8(n=128, a=cute.Float8E4M3FN, b=cute.Float8E4M3FN, acc=cute.Float32, **kw):
    return wg.MmaF8Op(a, b, acc, (64, n, 32), **kw)


def test_the_8_bit_op_its_names_and_rules():
    op = _f8(256, b=cute.Float8E5M2)
    assert op.shape_mnk == (64, 256, 32) and op.ptx_name == "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e5m2"
    assert op == wg.MmaF8Op(cute.Float8E4M3FN, cute.Float8E5M2, cute.Float32, (64, 256))
    assert op != _f8(256) and op != _op(256) and len({op, _f8(256), _f8(256)}) == 2
    assert (op.num_acc_registers, _f8(64, acc=cute.Float16).num_acc_registers) == (128, 16)
    assert op.tv_layout_C == _op(256).tv_layout_C               # the accumulators are the 16-bit MMA's
    for bad, error, match in [
        (lambda: _f8(a=cute.BFloat16), wg.WgmmaShapeError, "a_dtype must be Float8E4M3FN or Float8E5M2"),
        (lambda: _f8(acc=cute.BFloat16), wg.WgmmaShapeError, "acc_dtype must be Float32 or Float16"),
        (lambda: wg.MmaF8Op(cute.Float8E4M3FN, cute.Float8E4M3FN, cute.Float32, (64, 128, 16)), wg.WgmmaShapeError,
         "K extent of an 8-bit warpgroup MMA is 32, got 16"),
        (lambda: _f8(a_major_mode=OpM.MN), wg.WgmmaShapeError, "8-bit operands are K-major .no transpose., got "
                                                                 "a_major_mode"),
        (lambda: _f8(100), wg.WgmmaShapeError, "multiple of 8 in 8..256, got 100"),
        (lambda: _f8(a="e4m3"), CuteTypeError, "MmaF8Op: a_dtype must be a dtype"),
    ]:
        with pytest.raises(error, match=match):
            bad()


@pytest.mark.parametrize("t", [0, 1, 6, 31, 32, 77, 127])
def test_the_8_bit_a_register_partition_is_the_ptx_figure(t):
    """PTX ISA, wgmma .m64nNk32 with A in registers: thread ``t`` holds 16 8-bit values, value ``i`` at row
    ``16 (t / 32) + (t % 32) / 4 + 8 ((i / 4) % 2)``, column ``4 (t % 4) + i % 4 + 16 (i / 8)``."""
    tiled = cute.make_tiled_mma(_f8(64, a_src=wg.OperandSource.RMEM), (1, 1, 1))
    part = tiled.get_slice(t).partition_A(cute.make_identity_tensor((64, 64)))
    assert cute.size(part, mode=[0]) == 16 and part.shape[2] == 2       # two k-blocks of 32
    for kb in range(2):
        for i in range(16):
            row = 16 * (t // 32) + (t % 32) // 4 + 8 * ((i // 4) % 2)
            col = 32 * kb + 4 * (t % 4) + i % 4 + 16 * (i // 8)
            assert tuple(part[i, 0, kb]) == (row, col)


def test_8_bit_descriptor_fragments_step_32_bytes_per_k_block():
    """A k-block of 32 8-bit values is 32 bytes, as a 16-bit one of 16: the same descriptor steps (C++'s
    ``recast<uint128_t>`` strides in 16-byte units), 128B swizzle rows of 128 values."""
    tiled = cute.make_tiled_mma(_f8(), (2, 1, 1))
    la = hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (128, 128, 128), cute.Float8E4M3FN, 2)
    ptr = Pointer(cute.Float8E4M3FN, AddressSpace.smem, alignment=1024, address=0x4000)
    fa = tiled.make_fragment_A(tiled.get_slice(130).partition_A(cute.make_tensor(ptr, la)))
    assert fa.layout == Layout((1, 1, 4, (1, 2)), (0, 0, 2, (0, 1024)))
    for kb in range(4):
        d = fa[None, 0, kb, 1].descriptor()
        assert _start(d) == 0x4000 + 16384 + 8192 + 32 * kb
        assert (d.leading_byte_offset, d.stride_byte_offset, d.layout_type) == (16, 1024, wg.LayoutType.B128)


@pytest.mark.parametrize("a, b, n", [(cute.Float8E4M3FN, cute.Float8E4M3FN, 128), (cute.Float8E5M2, cute.Float8E4M3FN, 64)])
def test_8_bit_tiled_gemm_ptx_and_its_assembly(a, b, n, filecheck, assemble):
    host, specs = tiled_product_program(_f8(n, a, b), 2, 2)
    c = cute.compile(host, *specs)
    names = {cute.Float8E4M3FN: "e4m3", cute.Float8E5M2: "e5m2"}
    mma = f"wgmma.mma_async.sync.aligned.m64n{n}k32.f32.{names[a]}.{names[b]}"
    filecheck(c.ptx, ["CHECK: wgmma.fence.sync.aligned;",
                      f"CHECK: {mma} {{{{[{{].*[}}]}}}}, {{{{%rd[0-9]+}}}}, {{{{%rd[0-9]+}}}}, p, 1, 1;",
                      f"CHECK: {mma}", "CHECK: wgmma.commit_group.sync.aligned;"])
    assert c.ptx.count("wgmma.mma_async") == 2
    assemble(c.ptx)


# -- kernels -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("atom_m, n, gemm_all_k", [(1, 64, False), (2, 128, False), (2, 256, True)])
def test_tiled_gemm_ptx_and_its_assembly(atom_m, n, gemm_all_k, filecheck, assemble):
    host, specs = tiled_product_program(_op(n), atom_m, 4, gemm_all_k)
    c = cute.compile(host, *specs)
    mma = f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16"
    filecheck(c.ptx, ["CHECK: .target sm_90a", "CHECK: wgmma.fence.sync.aligned;",
                      f"CHECK: {mma} {{{{[{{].*[}}]}}}}, {{{{%rd[0-9]+}}}}, {{{{%rd[0-9]+}}}}, p, 1, 1, 0, 0;",
                      f"CHECK-COUNT-3: {mma}", f"CHECK-NOT: {mma}",
                      "CHECK: wgmma.commit_group.sync.aligned;", "CHECK: wgmma.wait_group.sync.aligned {{[ \t]*}}0;"])
    assert c.ptx.count("wgmma.mma_async") == 4
    assemble(c.ptx)


def test_gemm_with_a_register_tensor_for_a_smem_operand_is_an_error():
    op = _op(64)
    tiled = cute.make_tiled_mma(op, (1, 1, 1))

    @cute.kernel
    def kernel(out):
        acc = cute.make_fragment(cute.make_layout(((2, 2, 8), 1, 1)), cute.Float32)
        a = cute.make_fragment(cute.make_layout(((64, 16), 1, 1)), cute.BFloat16)
        cute.gemm(tiled, acc, a, a, acc)

    def host(out):
        kernel(out).launch(grid=1, block=128)

    with pytest.raises(wg.WgmmaShapeError, match="A is read from shared memory through descriptors"):
        cute.compile(host, cute.compiler.DeviceArraySpec("Float32", (4,)))


def _operands(tiled):
    """Descriptor fragments of a 64x16 A and a 64x16 B in shared memory, and the accumulators."""
    la = hh.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (64, 64, 16), cute.BFloat16, 1)
    lb = hh.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (64, 64, 16), cute.BFloat16, 1)
    smem = cute.arch.SmemAllocator()
    sA = smem.allocate_tensor(cute.BFloat16, la, byte_alignment=1024)[None, None, 0]
    sB = smem.allocate_tensor(cute.BFloat16, lb, byte_alignment=1024)[None, None, 0]
    thr = tiled.get_slice(cute.arch.thread_idx()[0])
    acc = cute.make_fragment(cute.make_layout(((2, 2, 8), 1, 1)), cute.Float32)
    return tiled.make_fragment_A(thr.partition_A(sA)), tiled.make_fragment_B(thr.partition_B(sB)), acc


def _compile_loop(body, after=None):
    """Compile a kernel whose run-time loop over ``n`` runs ``body(tiled, gemm, k)`` (``gemm()`` issues one
    tiled gemm), then ``after(tiled, gemm)`` past the loop."""
    tiled = cute.make_tiled_mma(_op(64), (1, 1, 1))

    @cute.kernel
    def kernel(out, n: cute.Int32):
        tA, tB, acc = _operands(tiled)

        def gemm():
            wg.fence()
            cute.gemm(tiled, acc, tA, tB, acc)

        tiled.set(wg.Field.ACCUMULATE, True)
        for k in range(n):
            body(tiled, gemm, k)
        if after is not None:
            after(tiled, gemm)
        out[0] = acc[0]

    @cute.jit
    def host(out, n: cute.Int32):
        kernel(out, n).launch(grid=1, block=128)

    return cute.compile(host, cute.compiler.DeviceArraySpec("Float32", (4,)), cute.Int32(3))


WGMMA_64 = "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"


def test_a_field_read_in_a_loop_then_changed_there_is_an_error_not_a_fixed_value():
    # a gemm reads the value set before the loop, then the body changes it: the body is traced once, so every
    # iteration would run with the first value, where the second iteration should see the new one: refused
    def body(tiled, gemm, k):
        gemm()
        tiled.set(wg.Field.ACCUMULATE, True)    # the value it has: allowed
        tiled.set(wg.Field.ACCUMULATE, False)   # a change after a read of the value from before the loop

    from cute_py.compiler import TraceError

    with pytest.raises(TraceError, match=r"set\(Field.ACCUMULATE, False\) inside the .*loop at .*test_wgmma_tiled.py:"
                                         r"\d+, after a gemm of its body read the value set before the loop"):
        _compile_loop(body)


def test_a_field_set_at_the_top_of_a_loop_body_holds_for_every_iteration():
    # the persistent GEMM's pattern: each iteration (tile) starts with False, its first gemm writes, then True
    def body(tiled, gemm, k):
        tiled.set(wg.Field.ACCUMULATE, False)
        gemm()
        tiled.set(wg.Field.ACCUMULATE, True)
        gemm()

    ptx = _compile_loop(body).ptx
    assert ptx.count(WGMMA_64) % 2 == 0 and ptx.count(WGMMA_64) >= 2   # (the back end may unroll the loop)


def test_a_traced_boolean_field_drives_the_instructions_scale_d():
    def body(tiled, gemm, k):
        tiled.set(wg.Field.ACCUMULATE, k > 0)
        gemm()

    ptx = _compile_loop(body).ptx
    assert ptx.count(WGMMA_64) >= 1 and "setp." in ptx


def test_a_field_set_in_a_loop_is_an_error_after_the_loop():
    # after the loop the value depends on whether the loop ran
    def body(tiled, gemm, k):
        tiled.set(wg.Field.ACCUMULATE, False)

    from cute_py.compiler import TraceError

    with pytest.raises(TraceError, match=r"Field.ACCUMULATE was set inside the .*loop at .*which has ended: .*or on "
                                         r"whether the loop ran"):
        _compile_loop(body, after=lambda tiled, gemm: gemm())
    _compile_loop(body, after=lambda tiled, gemm: (tiled.set(wg.Field.ACCUMULATE, True), gemm()))  # set again: fine


def test_a_field_set_in_a_branch_holds_there_and_is_an_error_after_it():
    host, specs = tiled_product_program(_op(64), 1, 2)  # the reference program: the field set before its gemms
    cute.compile(host, *specs)
    tiled = cute.make_tiled_mma(_op(64), (1, 1, 1))

    @cute.kernel
    def kernel(out, flag: cute.Int32):
        acc = cute.make_fragment(cute.make_layout(((2, 2, 8), 1, 1)), cute.Float32)
        if flag > 0:
            tiled.set(wg.Field.ACCUMULATE, False)
        wg.fence()
        cute.gemm(tiled, acc, acc, acc, acc)  # reached on both paths: the field's value would depend on the path
        out[0] = 0.0

    @cute.jit
    def host2(out, flag: cute.Int32):
        kernel(out, flag).launch(grid=1, block=128)

    from cute_py.compiler import TraceError

    with pytest.raises(TraceError, match=r"Field.ACCUMULATE was set inside the if branch at .*test_wgmma_tiled.py:\d+, "
                                         r"which has ended: after it its value depends on the path taken"):
        cute.compile(host2, cute.compiler.DeviceArraySpec("Float32", (4,)), cute.Int32(1))


def _simulate(ops, start):
    """Python's meaning of one iteration of ``ops`` (``"T"``/``"F"`` set the field, ``"G"`` a gemm reads it)
    from ``start``: (the values the gemms read, the value at the end)."""
    value, reads = start, []
    for op in ops:
        if op == "G":
            reads.append(value)
        else:
            value = op == "T"
    return reads, value


def _refused(ops, start, gemm_after):
    """Whether the rules refuse the loop: a gemm of the body reads the value from before the loop and a later
    set changes it, or a gemm after the loop reads a value set inside it."""
    value, inherited, set_inside = start, False, False
    for op in ops:
        if op == "G":
            inherited = inherited or not set_inside
        else:
            if (op == "T") != value and inherited:
                return True
            value, set_inside = op == "T", True
    return gemm_after and set_inside


@settings(max_examples=60, deadline=None)
@given(body=st.lists(st.sampled_from("TFG"), max_size=6), start=st.booleans(), gemm_after=st.booleans())
def test_a_traced_field_is_what_every_iteration_reads_or_a_trace_error(body, start, gemm_after):
    """The law of the field inside a run-time loop (run at least twice, or not at all): a kernel that compiles
    gives each gemm of the body the value Python would give it in the first iteration and in every later
    one, and a gemm after the loop the value it would read whether or not the loop ran; the kernels the rules
    refuse (and only those) are a TraceError. The body holds a gemm into carried accumulators, so the loop
    traces it twice: the second trace starts from the field as it was before the loop."""
    tiled = cute.make_tiled_mma(_op(64), (1, 1, 1))
    traced, after = [], []

    @cute.kernel
    def kernel(out, n: cute.Int32):
        tA, tB, acc = _operands(tiled)

        def gemm(into):
            into.append(tiled.get(wg.Field.ACCUMULATE))
            wg.fence()
            cute.gemm(tiled, acc, tA, tB, acc)

        tiled.set(wg.Field.ACCUMULATE, start)
        for _ in range(n):
            traced.clear()  # the loop traces its body again: keep the last trace
            for op in body:
                if op == "G":
                    gemm(traced)
                else:
                    tiled.set(wg.Field.ACCUMULATE, op == "T")
        if gemm_after:
            gemm(after)
        out[0] = acc[0]

    @cute.jit
    def host(out, n: cute.Int32):
        kernel(out, n).launch(grid=1, block=128)

    from cute_py.compiler import TraceError

    first, end1 = _simulate(body, start)
    second, _ = _simulate(body, end1)
    refused = _refused(body, start, gemm_after)
    try:
        cute.compile(host, cute.compiler.DeviceArraySpec("Float32", (4,)), cute.Int32(3))
    except TraceError as e:
        assert refused, f"refused {body} from {start} (gemm after: {gemm_after}): {e}"
        return
    assert not refused, f"{body} from {start} (gemm after: {gemm_after}) compiled"
    assert traced == first == second, (body, start, traced, first, second)
    if gemm_after:
        assert after == [end1] and end1 == start, (body, start, after)


def test_8_bit_a_from_registers_is_four_words_of_four_values(filecheck, assemble):
    """A in registers: each thread's 16 8-bit values go to the MMA as four 32-bit registers (the lowest index in
    the lowest byte: each word is one vector of four bytes)."""
    from cute_py import arch

    op = _f8(64, a_src=wg.OperandSource.RMEM)
    tiled = cute.make_tiled_mma(op, (1, 1, 1))
    lb = hh.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (64, 64, 32), cute.Float8E4M3FN, 1)

    @cute.kernel
    def kernel(a, out):
        sB = arch.SmemAllocator().allocate_tensor(cute.Float8E4M3FN, lb, byte_alignment=1024)[None, None, 0]
        tid = arch.thread_idx()[0]
        thr = tiled.get_slice(tid)
        tA = tiled.make_fragment_A(thr.partition_A(cute.make_identity_tensor((64, 32))))
        assert cute.size(tA) == 16
        for i in cute.range_constexpr(16):
            tA[i] = a[tid * 16 + i]
        acc = tiled.make_fragment_C(thr.partition_C(cute.make_identity_tensor((64, 64))))
        tiled.set(wg.Field.ACCUMULATE, False)
        wg.fence()
        cute.gemm(tiled, acc, tA, tiled.make_fragment_B(thr.partition_B(sB)), acc)
        wg.commit_group()
        wg.wait_group(0)
        out[tid] = acc[0]

    def host(a, out):
        kernel(a, out).launch(grid=1, block=128)

    spec = cute.compiler.DeviceArraySpec
    c = cute.compile(host, spec("Float8E4M3FN", (2048,)), spec("Float32", (128,)))
    filecheck(c.ptx, ["CHECK: ld.global",
                      "CHECK: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {{[{].*[}]}}, "
                      "{{[{]%r[0-9]+, %r[0-9]+, %r[0-9]+, %r[0-9]+[}]}}, {{%rd[0-9]+}}, p, 1, 1;"])
    assemble(c.ptx)
