"""The warpgroup MMA: TV layouts against CuTe C++'s GMMA traits, descriptor bits against the PTX ISA's table,
canonical-layout rules, op rules, and the PTX a kernel gets (FileChecked, assembled for sm_90a)."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.core.layout import Layout
from cute_py.core.tiling import tile_to_shape
from cute_py.nvgpu import warpgroup as wg
from cute_py.nvgpu.warpgroup.smem import SmemLayoutAtomKind as K, make_smem_layout_atom
from cute_py.errors import DeviceOnlyError
from cute_py.tensor.pointer import AddressSpace, Pointer

OpM = wg.OperandMajorMode


def test_c_layout_is_the_gmma_traits_64xN_layout_and_covers_the_tile_once():
    for n in (8, 64, 128, 256):
        c = wg.MmaF16BF16Op(cute.BFloat16, cute.Float32, (64, n, 16)).tv_layout_C
        assert c == Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))
        seen = sorted(c((t, v)) for t in range(128) for v in range(n // 2))
        assert seen == list(range(64 * n))
    c = wg.MmaF16BF16Op(cute.Float16, cute.Float32, (64, 16, 16)).tv_layout_C
    # PTX ISA accumulator fragment: thread t, register r -> row 16*(t//32) + (t%32)//4 + 8*((r//2)%2),
    # column 2*(t%4) + r%2 + 8*(r//4)
    for t in range(128):
        for r in range(8):
            row = 16 * (t // 32) + (t % 32) // 4 + 8 * ((r // 2) % 2)
            col = 2 * (t % 4) + r % 2 + 8 * (r // 4)
            assert c((t, r)) == row + 64 * col


def test_smem_operands_are_the_whole_tile_and_registers_the_a_fragment():
    op = wg.MmaF16BF16Op(cute.Float16, cute.Float16, (64, 96, 16), b_major_mode=OpM.MN)
    assert op.tv_layout_A == Layout((128, (64, 16)), (0, (1, 64)))
    assert op.tv_layout_B == Layout((128, (96, 16)), (0, (1, 96)))
    assert (op.shape_mnk, op.num_threads, op.thr_id, op.num_acc_registers) == ((64, 96, 16), 128, Layout(128), 24)
    rs = wg.MmaF16BF16Op(cute.Float16, cute.Float32, (64, 8), a_src=wg.OperandSource.RMEM)
    assert rs.tv_layout_A == Layout(((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512)))
    assert (rs.transpose_a, rs.transpose_b, op.transpose_b) == (0, 0, 1)
    assert op.ptx_name == "wgmma.mma_async.sync.aligned.m64n96k16.f16.f16.f16"


@pytest.mark.parametrize("args, match", [
    ((cute.BFloat16, cute.Float16, (64, 64, 16)), "BFloat16 inputs accumulate in Float32"),
    ((cute.Float32, cute.Float32, (64, 64, 16)), "ab_dtype must be Float16 or BFloat16, got Float32"),
    ((cute.Float16, cute.Float32, (128, 64, 16)), "M extent of a warpgroup MMA is 64, got 128"),
    ((cute.Float16, cute.Float32, (64, 12, 16)), "multiple of 8 in 8..256, got 12"),
    ((cute.Float16, cute.Float32, (64, 264, 16)), "multiple of 8 in 8..256, got 264"),
    ((cute.Float16, cute.Float32, (64, 64, 32)), "K extent of a 16-bit warpgroup MMA is 16, got 32"),
    ((cute.Float16, cute.Float32, (64, 64, 16), wg.OperandSource.RMEM, OpM.MN), "is K-major"),
])
def test_op_rules(args, match):
    with pytest.raises(wg.WgmmaShapeError, match=match):
        wg.MmaF16BF16Op(*args)


def _bits(start, lbo, sbo, layout_type, base=0):
    """The descriptor from the PTX ISA's table, field by field."""
    return (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | base << 49 | layout_type << 62


def test_encoding_matches_the_ptx_isa_table():
    assert wg.encode_gmma_desc(0x400, 16, 1024, wg.LayoutType.B128) == 0x4000004000010040
    assert wg.encode_gmma_desc(0x3FFF0, 0x3FFF0, 0x3FFF0, 3, 7) == _bits(0x3FFF0, 0x3FFF0, 0x3FFF0, 3, 7)
    assert wg.encode_gmma_desc(0x40010, 128, 256, 2) == _bits(0x10, 128, 256, 2)  # the low 18 bits
    with pytest.raises(wg.GmmaLayoutError, match="stride byte offset must be a multiple of 16 .* got 24"):
        wg.encode_gmma_desc(0, 16, 24, 0)


# (atom, tile, LBO, SBO, layout type) for fp16, hand-derived from CuTe's canonical forms
GOLDEN = [
    (K.K_INTER, (64, 16), 1024, 128, 0), (K.K_SW32, (64, 16), 16, 256, 3), (K.K_SW64, (64, 32), 16, 512, 2),
    (K.K_SW128, (64, 64), 16, 1024, 1), (K.MN_INTER, (64, 16), 1024, 128, 0), (K.MN_SW32, (64, 16), 256, 1024, 3),
    (K.MN_SW64, (64, 16), 512, 1024, 2), (K.MN_SW128, (128, 16), 1024, 2048, 1),
]


@pytest.mark.parametrize("kind, tile, lbo, sbo, lt", GOLDEN, ids=lambda x: getattr(x, "name", None))
def test_descriptor_of_each_canonical_layout(kind, tile, lbo, sbo, lt):
    layout = tile_to_shape(make_smem_layout_atom(kind, 16), tile)
    ptr = Pointer(cute.Float16, AddressSpace.smem, alignment=1024, address=0x2000)
    t = cute.make_tensor(ptr, layout)
    major = OpM.K if kind.major == "K" else OpM.MN
    for kb in range(tile[1] // 16):
        d = wg.make_gmma_desc(cute.local_tile(t, (tile[0], 16), (0, kb)), major)
        assert (d.leading_byte_offset, d.stride_byte_offset, int(d.layout_type)) == (lbo, sbo, lt)
        start = d.start.address
        # K-major: k-block kb starts 32*kb bytes into the swizzle row (or the next 8x8 core matrices)
        expect = 0x2000 + (32 * kb if kind.major == "K" and lt else 0)
        if kind.major == "K" and lt:
            assert start == expect
        assert wg.make_gmma_desc(cute.local_tile(t, (tile[0], 16), (0, kb)).layout, major, cute.Float16,
                                 start=0).value & ~0x3FFF == _bits(0, lbo, sbo, lt)


def test_non_canonical_layouts_are_errors_naming_the_rule():
    with pytest.raises(wg.GmmaLayoutError, match=r"K-major WGMMA operand tile of 16-bit elements is \(8\*m, 16\)"):
        wg.make_gmma_desc(Layout((64, 32), (32, 1)), OpM.K, cute.Float16)
    for _ in range(2):  # the check is remembered per tile: a second ask is refused as the first
        with pytest.raises(wg.GmmaLayoutError, match=r"not a canonical K-major WGMMA layout .* element \(1, 0\)"):
            wg.make_gmma_desc(Layout((64, 16), (16, 1)), OpM.K, cute.Float16)  # rows 32 B apart: no interleave
    # a layout equal to a canonical one but for one element's offset is refused after the canonical one is accepted
    good = tile_to_shape(make_smem_layout_atom(K.K_INTER, 16), (64, 16)).outer    # ((8,8),(8,2)):((8,64),(1,512))
    wg.make_gmma_desc(good, OpM.K, cute.Float16)
    with pytest.raises(wg.GmmaLayoutError, match=r"not a canonical K-major WGMMA layout .* element \(1, 0\)"):
        wg.make_gmma_desc(Layout(good.shape, ((16, 64), (1, 512))), OpM.K, cute.Float16)
    sw = tile_to_shape(make_smem_layout_atom(K.K_SW128, 16), (64, 64))
    with pytest.raises(wg.GmmaLayoutError, match="starts at a multiple of 1024 bytes"):
        wg.make_gmma_desc(cute.local_tile(cute.make_tensor(Pointer(cute.Float16, AddressSpace.smem, 1024, 0), sw),
                                          (64, 16), (0, 0)).layout, OpM.K, cute.Float16, start=512)


def test_wait_group_rule():
    with pytest.raises(wg.WgmmaShapeError, match="0..7, got 8"):
        wg.wait_group(8)
    with pytest.raises(DeviceOnlyError, match="device operation"):
        wg.fence()


# -- kernels -------------------------------------------------------------------------------------------


def _gemm_kernel(op, kind_a, kind_b, k_tiles):
    m, n, _ = op.shape_mnk
    ka, kb_ = (OpM.K if kind_a.major == "K" else OpM.MN), (OpM.K if kind_b.major == "K" else OpM.MN)

    @cute.kernel
    def kernel(a, b, out):
        smem = arch.SmemAllocator()
        sA = smem.allocate_tensor(op.a_dtype, tile_to_shape(make_smem_layout_atom(kind_a, 16), (m, 16 * k_tiles)),
                                  byte_alignment=1024)
        sB = smem.allocate_tensor(op.b_dtype, tile_to_shape(make_smem_layout_atom(kind_b, 16), (n, 16 * k_tiles)),
                                  byte_alignment=1024)
        acc = cute.make_fragment(cute.make_layout(n // 2), op.acc_dtype)
        wg.fence()
        for k in cute.range_constexpr(k_tiles):
            da = wg.make_gmma_desc(cute.local_tile(sA, (m, 16), (0, k)), ka)
            db = wg.make_gmma_desc(cute.local_tile(sB, (n, 16), (0, k)), kb_)
            op.mma(acc, da, db, accumulate=k > 0)
        wg.commit_group()
        wg.wait_group(0)
        tid = arch.thread_idx()[0]
        for i in cute.range_constexpr(n // 2):
            out[tid * (n // 2) + i] = acc[i]

    return kernel


def _compile(op, kind_a, kind_b, k_tiles=4):
    kernel = _gemm_kernel(op, kind_a, kind_b, k_tiles)

    def host(a, b, out):
        kernel(a, b, out).launch(grid=1, block=128)

    spec = cute.compiler.DeviceArraySpec(op.a_dtype.name, (256 * 64,))
    o = cute.compiler.DeviceArraySpec(op.acc_dtype.name, (128 * op.shape_mnk[1] // 2,))
    return cute.compile(host, spec, spec, o)


@pytest.mark.parametrize("ab, acc, n, kind_a, kind_b, check", [
    (cute.BFloat16, cute.Float32, 128, K.K_SW128, K.K_SW128, "m64n128k16.f32.bf16.bf16 {{[{].*[}]}}, "
                                                            "{{%rd[0-9]+}}, {{%rd[0-9]+}}, p, 1, 1, 0, 0;"),
    (cute.Float16, cute.Float32, 64, K.K_SW128, K.MN_SW128, "m64n64k16.f32.f16.f16 {{.*}}, p, 1, 1, 0, 1;"),
    (cute.Float16, cute.Float16, 64, K.MN_SW64, K.K_INTER, "m64n64k16.f16.f16.f16 {{.*}}, p, 1, 1, 1, 0;"),
])
def test_the_mma_ptx_and_its_assembly(ab, acc, n, kind_a, kind_b, check, filecheck, assemble):
    op = wg.MmaF16BF16Op(ab, acc, (64, n, 16), a_major_mode=OpM.K if kind_a.major == "K" else OpM.MN,
                         b_major_mode=OpM.K if kind_b.major == "K" else OpM.MN)
    c = _compile(op, kind_a, kind_b)
    filecheck(c.ptx, ["CHECK: .target sm_90a", "CHECK: wgmma.fence.sync.aligned;",
                      "CHECK: setp.ne.b32 p, {{%r[0-9]+}}, 0;",
                      "CHECK: wgmma.mma_async.sync.aligned." + check,
                      "CHECK-COUNT-3: wgmma.mma_async.sync.aligned.",
                      "CHECK: wgmma.commit_group.sync.aligned;", "CHECK: wgmma.wait_group.sync.aligned {{[ \t]*}}0;"])
    assemble(c.ptx)


def test_a_fragment_of_the_wrong_size_is_a_trace_error():
    op = wg.MmaF16BF16Op(cute.Float16, cute.Float32, (64, 64, 16))

    @cute.kernel
    def kernel(a, b, out):
        acc = cute.make_fragment(cute.make_layout(16), cute.Float32)
        op.mma(acc, 0, 0)

    def host(a, b, out):
        kernel(a, b, out).launch(grid=1, block=128)

    spec = cute.compiler.DeviceArraySpec("Float16", (64,))
    with pytest.raises(cute.compiler.TraceError, match="acc must hold 32 values"):
        cute.compile(host, spec, spec, spec)
