"""Fixtures for the cute_nvgpu dialect tests: a context, a kernel to build into, FileCheck and nvJitLink.

Each test module starts with ``pytest.importorskip("mlir_dialects._backend", ...)`` so that it
skips, with the reason, where the MLIR bindings are not installed.
"""

import pathlib

import pytest

ROOT_DIR = pathlib.Path(__file__).resolve().parents[2]

PARAMS = [("desc", None), ("g", "!llvm.ptr<1>"), ("g2", "!llvm.ptr<1>"), ("x", "i32"), ("y", "i32"),
          ("z", "i32"), ("hint", "i64"), ("addr", "i64"), ("peer", "i32"), ("val", "i32"), ("small", "i16"),
          ("f", "f32")]
SHARED = [("tile", 16384, 1024), ("bar", 16, 8), ("tmap", 128, 128)]


class Kernel:
    """A one-kernel module under construction: ``k.a`` kernel arguments, ``k.s`` shared buffers.

    Used as a context manager, it sets the insertion point before the kernel's return.
    """

    def __init__(self):
        from mlir_dialects.sample import DESC_PARAM, kernel_module

        params = [(n, t or DESC_PARAM) for n, t in PARAMS]
        self.module, self.ip, self.a, self.s = kernel_module("k", params, SHARED)

    def __enter__(self):
        self.ip.__enter__()
        return self

    def __exit__(self, *exc):
        return self.ip.__exit__(*exc)


@pytest.fixture
def ctx():
    from mlir_dialects.sample import sample_context

    context, loc = sample_context()
    with context, loc:
        yield context


@pytest.fixture
def kernel(ctx):
    return Kernel()


def _assemble(ptx, arch="sm_90a"):
    from mlir_dialects.pipeline import to_cubin

    cubin = to_cubin(ptx, arch)
    assert cubin[:4] == b"\x7fELF", "nvJitLink returned no ELF cubin"
    return cubin


@pytest.fixture
def assemble():
    """``assemble(ptx)``: nvJitLink assembly for sm_90a, asserted to give an ELF cubin."""
    pytest.importorskip("cuda.bindings.nvjitlink", reason="assembly needs cuda-bindings and nvidia-nvjitlink")
    return _assemble


@pytest.fixture
def const(ctx):
    from mlir_dialects.lowering import const_int

    return const_int


@pytest.fixture
def op_case(kernel, const, filecheck, assemble):
    """``op_case(build, ir_checks, ptx_checks, ptx_head)``: build ops into the kernel (``build(k, const)``), verify
    the module, FileCheck its lowering (``ir_checks``, no ``cute_nvgpu.`` op left) and its PTX (``ptx_head`` then
    ``ptx_checks``), and assemble the PTX for sm_90a."""
    from mlir_dialects import verify
    from mlir_dialects.pipeline import lower_copy, to_ptx

    def check(build, ir_checks, ptx_checks, ptx_head=("CHECK: .target sm_90a",)):
        with kernel as k:
            build(k, const)
        verify(k.module)
        filecheck(str(lower_copy(k.module)), list(ir_checks) + ["CHECK-NOT: cute_nvgpu."])
        ptx = to_ptx(k.module)
        filecheck(ptx, list(ptx_head) + list(ptx_checks))
        assemble(ptx)

    return check
