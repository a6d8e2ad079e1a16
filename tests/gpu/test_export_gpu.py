"""On a GPU: ``Compiled.export``'s C, built as a shared library with the system C compiler and called through
ctypes on torch's memory (the driver library loaded first, so that the library's driver calls resolve), writes
what the Python launch of the same compile writes, bit for bit: a TMA copy, a GEMM on a 2x1 cluster with more
than 48 KiB of shared memory, and a kernel of run-time scalars."""

import ctypes
import math
import shutil
import subprocess

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

import cute_py as cute  # noqa: E402
from cute_py import arch  # noqa: E402
from examples import gemm, tma_copy  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu
SPEC = cute.compiler.DeviceArraySpec
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def _library(compiled, tmp_path, prefix, argtypes):
    if CC is None:
        pytest.skip("no C compiler (cc, gcc or clang) on this machine")
    ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
    compiled.export(str(tmp_path), prefix)
    lib = tmp_path / f"lib{prefix}.so"
    subprocess.run([CC, "-std=c11", "-O2", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / f"{prefix}.c")],
                   check=True, capture_output=True)
    so = ctypes.CDLL(str(lib))
    launch = getattr(so, f"{prefix}_launch")
    launch.argtypes, launch.restype = [ctypes.c_void_p] + argtypes, ctypes.c_int
    return launch


def test_an_exported_tma_copy_writes_what_the_python_launch_writes(tmp_path):
    torch = hopper_torch()
    c = cute.compile(tma_copy, SPEC("Float32", (300, 200)), SPEC("Float32", (300, 200)), (128, 64), "none")
    launch = _library(c, tmp_path, "copy_f32", [ctypes.c_void_p] * 2)
    src = torch.randn(300, 200, device="cuda")
    ours, theirs = (torch.full_like(src, math.nan) for _ in range(2))
    c(src, theirs)
    assert launch(None, src.data_ptr(), ours.data_ptr()) == 0
    torch.cuda.synchronize()
    assert torch.equal(ours, theirs) and torch.equal(ours, src)
    assert launch(None, src.data_ptr() + 4, ours.data_ptr()) == 1, "a misaligned pointer must be refused"


def test_an_exported_gemm_writes_what_the_python_launch_writes(tmp_path):
    torch = hopper_torch()
    s = SPEC("BFloat16", (512, 512))
    c = cute.compile(gemm, s, s, s)
    launch = _library(c, tmp_path, "gemm_bf16", [ctypes.c_void_p] * 3)
    a, b = (torch.randn(512, 512, device="cuda").to(torch.bfloat16) for _ in range(2))
    ours, theirs = (torch.full((512, 512), math.nan, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    c(a, b, theirs)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        assert launch(stream.cuda_stream, a.data_ptr(), b.data_ptr(), ours.data_ptr()) == 0
    torch.cuda.synchronize()
    assert torch.equal(ours.view(torch.int16), theirs.view(torch.int16))
    torch.testing.assert_close(ours.float(), a.float() @ b.float().T, rtol=2e-2, atol=2e-1)


@cute.kernel
def _scaled(a, n, x, m):
    t, _, _ = arch.thread_idx()
    b, _, _ = arch.block_idx()
    i = b * 64 + t
    if i < n:
        a[i] = x * 2.0
    if i >= m:
        a[i] = -x


@cute.jit
def scaled(a, n: cute.Int32, x: cute.Float32, m: cute.Int64):
    _scaled(a, n, x, m).launch(grid=2, block=64)


def test_exported_run_time_scalars_reach_the_kernel(tmp_path):
    torch = hopper_torch()
    c = cute.compile(scaled, SPEC("Float32", (128,)), 5, 1.5, 7)
    launch = _library(c, tmp_path, "scaled", [ctypes.c_void_p, ctypes.c_int32, ctypes.c_float, ctypes.c_int64])
    for n, x, m in ((40, 1.25, 100), (0, -3.5, 1 << 40), (128, 0.5, -5)):
        ours, theirs = (torch.full((128,), math.nan, device="cuda") for _ in range(2))
        c(theirs, n, x, m)
        assert launch(None, ours.data_ptr(), n, x, m) == 0
        torch.cuda.synchronize()
        assert torch.equal(ours.nan_to_num(7.0), theirs.nan_to_num(7.0)), (n, x, m)


def test_an_exported_copy_of_run_time_extents_writes_what_the_python_launch_writes(tmp_path):
    torch = hopper_torch()
    spec = SPEC("Float32", (cute.sym_int(), cute.sym_int(divisibility=64)))
    c = cute.compile(tma_copy, spec, spec, (128, 64), "none")
    i64p = ctypes.POINTER(ctypes.c_int64)
    launch = _library(c, tmp_path, "copy_dyn", [ctypes.c_void_p, i64p, i64p] * 2)
    for m, n in ((300, 640), (1, 64), (1000, 128)):
        src = torch.randn(m, n, device="cuda")
        ours, theirs = (torch.full_like(src, math.nan) for _ in range(2))
        c(src, theirs)
        ext, st = (ctypes.c_int64 * 2)(m, n), (ctypes.c_int64 * 2)(n, 1)
        assert launch(None, src.data_ptr(), ext, st, ours.data_ptr(), ext, st) == 0
        torch.cuda.synchronize()
        assert torch.equal(ours, theirs) and torch.equal(ours, src)
    bad = (ctypes.c_int64 * 2)(64, 100)          # 100: not a multiple of 64
    assert launch(None, src.data_ptr(), bad, st, ours.data_ptr(), bad, st) == 1
