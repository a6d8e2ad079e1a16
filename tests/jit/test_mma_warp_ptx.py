"""Warp-level MMA in kernels: cute.gemm over a tiled mma.sync, ldmatrix / stmatrix copies; the PTX (counts and
FileCheck) assembles for sm_90a, and misuse is a TraceError naming the rule."""

import re

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import TraceError
from cute_py.nvgpu import warp
from tests.gpu import _mma_warp_kernels as kernels

F = cute.compiler.DeviceArraySpec


def _count(text, pattern):
    return len(re.findall(pattern, text))


def _gemm(dtype, a_mn=False, b_mn=False):
    a = F(dtype, (64, 64)) if not a_mn else F(dtype, (64, 64), strides=(1, 64))
    b = F(dtype, (64, 64)) if not b_mn else F(dtype, (64, 64), strides=(1, 64))
    return cute.compile(kernels.gemm, a, b, F("Float32", (64, 64)), dtype, a_mn, b_mn)


@pytest.mark.parametrize("dtype,ptx", [("BFloat16", "bf16"), ("Float16", "f16")])
def test_gemm_kernel_issues_one_mma_per_atom_and_ldmatrix_x4(dtype, ptx, filecheck, assemble):
    c = _gemm(dtype)
    # per thread: MMA_M = 2, MMA_N = 4, MMA_K = 4 -> 32 mma.sync; 64 A and 64 B elements -> 8 + 8 ldmatrix.x4
    assert _count(c.ptx, r"mma\.sync\.aligned") == 32
    assert _count(c.ptx, r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16") == 16
    filecheck(c.ptx, [
        "CHECK: bar.sync 0;",
        "CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, "
        "[%r{{[0-9]+}}];",
        f"CHECK: mma.sync.aligned.m16n8k16.row.col.f32.{ptx}.{ptx}.f32",
        "CHECK: st.global",
    ])
    assemble(c.ptx)


def test_mn_major_operands_use_ldmatrix_trans(assemble):
    c = _gemm("Float16", a_mn=True, b_mn=True)
    assert _count(c.ptx, r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16") == 16
    assert _count(c.ptx, r"mma\.sync\.aligned") == 32
    assemble(c.ptx)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_single_ldmatrix_and_stmatrix_kernels(num, trans, assemble):
    t = ".trans" if trans else ""
    c = cute.compile(kernels.ldmatrix_run, F("Float16", (32, 8)), F("Float16", (32, 2 * num)), num, trans)
    assert _count(c.ptx, rf"ldmatrix\.sync\.aligned\.m8n8\.x{num}{re.escape(t)}\.shared\.b16") == 1
    assemble(c.ptx)
    c = cute.compile(kernels.stmatrix_run, F("BFloat16", (32, 2 * num)), F("BFloat16", (32, 8)),
                     F("BFloat16", (32, 8)), num, trans)
    assert _count(c.ptx, rf"stmatrix\.sync\.aligned\.m8n8\.x{num}{re.escape(t)}\.shared\.b16") == 1
    assemble(c.ptx)


# -- errors -------------------------------------------------------------------------------------------


@cute.kernel
def wrong_fragment_kernel(g, which):
    tiled_mma = cute.make_tiled_mma(warp.MmaF16BF16Op(cute.Float16, cute.Float32, (16, 8, 16)))
    thr = tiled_mma.get_slice(0)
    c = thr.partition_fragment_C(cute.Layout((16, 8)))
    a = thr.partition_fragment_A(cute.Layout((16, 16)))
    b = thr.partition_fragment_B(cute.Layout((8, 16)))
    if which == "dtype":
        a = cute.make_fragment(a.layout, cute.BFloat16)
    if which == "size":
        b = cute.make_fragment(cute.Layout((8, 1, 1)), cute.Float16)
    cute.gemm(tiled_mma, c, a, b, c)


@cute.jit
def wrong_fragment(g, which):
    wrong_fragment_kernel(g, which).launch(grid=1, block=32)


@pytest.mark.parametrize("which,match", [
    ("dtype", r"A of MmaF16BF16Op\(Float16, Float32, \(16, 8, 16\)\) holds Float16 elements, got a BFloat16 fragment"),
    ("size", r"takes 4 values of B per thread, got 8"),
])
def test_gemm_with_wrong_fragments_is_a_trace_error(which, match):
    with pytest.raises(TraceError, match=match):
        cute.compile(wrong_fragment, F("Float32", (4,)), which)


@cute.kernel
def ldmatrix_from_gmem_kernel(g):
    frag = cute.make_fragment(cute.Layout(8), cute.Float16)
    atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cute.Float16)
    cute.copy(atom, g[0, None], frag)


@cute.jit
def ldmatrix_from_gmem(g):
    ldmatrix_from_gmem_kernel(g).launch(grid=1, block=32)


def test_ldmatrix_needs_shared_memory():
    with pytest.raises(TraceError, match="the source of ldmatrix/stmatrix must be a shared-memory tensor"):
        cute.compile(ldmatrix_from_gmem, F("Float16", (8, 8)))


@cute.kernel
def ldmatrix_strided_kernel(g):
    smem = arch.SmemAllocator()
    s = smem.allocate_tensor(cute.Float16, cute.Layout((8, 16), (16, 1)))
    frag = cute.make_fragment(cute.Layout(8), cute.Float16)
    atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cute.Float16)
    cute.copy(atom, s[None, 0], frag)


@cute.jit
def ldmatrix_strided(g):
    ldmatrix_strided_kernel(g).launch(grid=1, block=32)


def test_ldmatrix_rows_must_be_contiguous():
    with pytest.raises(TraceError, match="rows are 8 contiguous 16-bit elements"):
        cute.compile(ldmatrix_strided, F("Float16", (8, 8)))
