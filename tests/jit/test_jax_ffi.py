"""``cute_py.jax.ffi_call`` without a GPU: its rules (refused with the reason before anything is built), and, where
jax and C/C++ compilers are installed, the handler library it builds (compiled against ``jax.ffi.include_dir()``,
exporting the handler symbol). ``tests/gpu/test_jax_ffi_gpu.py`` runs it under ``jax.jit``."""

import shutil
import subprocess

import pytest

import cute_py as cute
from cute_py import jax as cute_jax
from examples import tma_copy

SPEC = cute.compiler.DeviceArraySpec


@cute.kernel
def _axpy(x, y, a, n):
    t, _, _ = cute.arch.thread_idx()
    if t < n:
        y[t] = a * x[t]


@cute.jit
def axpy(x, y, a: cute.Float32, n: cute.Int32):
    _axpy(x, y, a, n).launch(grid=1, block=128)


@pytest.mark.parametrize("build, match", [
    (lambda: cute_jax.ffi_call(tma_copy, SPEC("Float32", (64, 64)), SPEC("Float32", (64, 64)), (64, 64), "none",
                               outputs=(3,)), r"outputs names argument 3, which is not an array argument .* \[0, 1\]"),
    (lambda: cute_jax.ffi_call(tma_copy, SPEC("Float32", (64, 64)), SPEC("Float32", (64, 64)), (64, 64), "none",
                               outputs=()), "outputs must name each result array once"),
    (lambda: cute_jax.ffi_call(tma_copy, SPEC("Float32", (64, 64), (128, 1)), SPEC("Float32", (64, 64)), (64, 64),
                               "none", outputs=(1,)), r"argument 0 has strides \(128, 1\); XLA's buffers are row-major"),
    (lambda: cute_jax.ffi_call(tma_copy, SPEC("Float32", (cute.sym_int(), 64)), SPEC("Float32", (64, 64)), (64, 64),
                               "none", outputs=(1,)), "has run-time extents or strides"),
])
def test_what_xla_cannot_call_is_refused_with_the_reason(build, match):
    with pytest.raises(cute.CuteValueError, match=match):
        build()


def test_the_handler_library_builds_and_exports_its_handler(tmp_path, monkeypatch):
    jax = pytest.importorskip("jax", reason="jax is an optional dependency of cute_py.jax")
    if not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("no C++ compiler on this machine")
    monkeypatch.setenv("CUTE_PY_CACHE_DIR", str(tmp_path))
    c = cute.compile(axpy, SPEC("Float32", (128,)), SPEC("Float32", (128,)), 2.0, 100)
    plan = cute_jax._plan(c, (1,))
    assert plan == ([(0, "Float32", (128,))], [(1, "Float32", (128,))], [(2, "float", "float32", "a"),
                                                                          (3, "int32_t", "int32", "n")])
    directory, prefix = cute_jax._build(c, plan)
    symbols = subprocess.run(["nm", "-D", "--defined-only", f"{directory}/lib{prefix}.so"], capture_output=True,
                             text=True, check=True).stdout
    assert f" {prefix}_handler" in symbols and f" {prefix}_launch" in symbols
    handler = (tmp_path / "jax_ffi" / directory.rsplit("/", 1)[1] / "handler.cc").read_text()
    assert '.Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<float>("a").Attr<int32_t>("n")' in handler
    assert jax.ffi.include_dir()
