"""Kernel 12 (im2col TMA gather) compiles to PTX with one im2col TMA load per K tile on an mbarrier, its
expect-tx of the tile's bytes and the tile's TMA store, and assembles for sm_90a; c2d_im2col's arguments
are checked while tracing."""

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.errors import TraceError
from cute_py.nvgpu.tma.im2col import make_im2col_tma_atom
from examples.im2col import im2col

CASES = [("Float16", (2, 9, 9, 64), 3, 1, 1, 1, (64, 64), "none", None),
         ("BFloat16", (1, 16, 16, 32), 5, 2, 2, 2, (128, 32), "none", "evict_first"),
         ("Float16", (2, 8, 8, 64), 1, 2, 1, 0, (64, 64), "128B", "evict_last")]


def _out(n, h, w, c, k, s, d, p):
    oh, ow = (h + 2 * p - d * (k - 1) - 1) // s + 1, (w + 2 * p - d * (k - 1) - 1) // s + 1
    return (n * oh * ow, k * k * c)


def _compile(dtype, shape, k, s, d, p, tile, swizzle, policy):
    img = cute.compiler.DeviceArraySpec(dtype, shape)
    out = cute.compiler.DeviceArraySpec(dtype, _out(*shape, k, s, d, p))
    return cute.compile(im2col, img, out, k, s, d, p, tile, swizzle, policy)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-k{c[2]}s{c[3]}d{c[4]}p{c[5]}-{c[7]}")
def test_im2col_ptx_has_the_im2col_load_and_assembles(filecheck, assemble, case):
    dtype, shape, k, s, d, p, tile, swizzle, policy = case
    c = _compile(*case)
    hint = "" if policy is None else ".L2::cache_hint"
    tile_bytes = tile[0] * tile[1] * 2
    filecheck(c.ptx, [
        "CHECK: .entry im2col_kernel_0(",
        "CHECK: .param .align 64 .b8 im2col_kernel_0_param_0[128]",
        "CHECK: mbarrier.init.shared{{(::cta)?}}.b64",
        "CHECK: elect.sync",
        "CHECK: mbarrier.arrive.expect_tx.shared{{(::cta)?}}.b64",
        f"CHECK: cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes{hint} "
        "[{{%rd[0-9]+}}], [{{%rd[0-9]+}}, {{.}}{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}{{.}}], [{{.*}}], "
        "{{.}}{{%rs[0-9]+}}, {{%rs[0-9]+}}{{.}}",
        "CHECK: mbarrier.try_wait.parity.shared{{(::cta)?}}.b64",
        "CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
    ])
    assert c.ptx.count(".im2col.") == 1  # one instruction per K tile, in the run-time loop
    assert str(tile_bytes) in c.ptx  # the expect-tx count is the tile's bytes
    assert assemble(c.ptx)[:4] == b"\x7fELF"


def test_the_mlir_has_the_dialect_op():
    c = _compile(*CASES[0])
    assert "cute_nvgpu.tma_load_im2col" in c.mlir


@cute.kernel
def _bad_kernel(img, layout, conv, policy, use_layout):
    smem = arch.SmemAllocator()
    col = smem.allocate_tensor(img.dtype, use_layout)
    bar = smem.allocate_mbarrier()
    with arch.elect_one():
        arch.mbarrier_init(bar, 1)
        cute.c2d_im2col(img, col, 0, 0, *conv, policy, barrier=bar)


@cute.jit
def _bad(img, conv, policy, use_tile):
    layout = cute.Layout((64, 16), (16, 1))
    atom = make_im2col_tma_atom(img, layout, 3, 1, 1, 1)
    _bad_kernel(atom, layout, conv, policy, cute.Layout(use_tile, (use_tile[1], 1))).launch(grid=1, block=32)


@pytest.mark.parametrize("conv,policy,tile,match", [
    ((3, 2, 1, 1), None, (64, 16), r"\(kernel, stride, dilation, pad\) = \(3, 2, 1, 1\), but the atom's descriptor "
                                   r"was built for \(3, 1, 1, 1\)"),
    ((3, 1, 1, 1), "evict_sometimes", (64, 16), r"eviction_policy must be one of"),
    ((3, 1, 1, 1), None, (32, 16), r"col has the layout \(32,16\):\(16,1\), the atom was built for"),
])
def test_c2d_im2col_rejects_arguments_the_atom_was_not_built_for(conv, policy, tile, match):
    img = cute.compiler.DeviceArraySpec("Float16", (1, 8, 8, 16))
    with pytest.raises(TraceError, match=match):
        cute.compile(_bad, img, conv, policy, tile)
