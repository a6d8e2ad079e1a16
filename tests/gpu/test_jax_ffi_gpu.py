"""On a GPU with JAX: ``cute_py.jax.ffi_call`` under ``jax.jit``: a TMA copy returns its input bit for bit, and a
kernel of run-time scalars (attributes) computes what numpy does; a buffer of another shape is refused by the
handler."""

import os

import pytest

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")   # leave the GPU's memory to the other tests

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings (BindingsNotFoundError)
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

jax = pytest.importorskip("jax", reason="jax is an optional dependency of cute_py.jax")
if not any(d.platform == "gpu" for d in jax.devices()):
    pytest.skip("JAX sees no CUDA GPU", allow_module_level=True)

import numpy as np  # noqa: E402

import cute_py as cute  # noqa: E402
from cute_py import jax as cute_jax  # noqa: E402
from examples import tma_copy  # noqa: E402

pytestmark = pytest.mark.gpu
SPEC = cute.compiler.DeviceArraySpec


@cute.kernel
def _scale(x, y, a, n):
    t, _, _ = cute.arch.thread_idx()
    if t < n:
        y[t] = a * x[t]
    else:
        y[t] = -1.0


@cute.jit
def scale(x, y, a: cute.Float32, n: cute.Int32):
    _scale(x, y, a, n).launch(grid=1, block=128)


def test_a_tma_copy_under_jax_jit_returns_its_input():
    f = cute_jax.ffi_call(tma_copy, SPEC("Float32", (300, 200)), SPEC("Float32", (300, 200)), (128, 64), "none",
                          outputs=(1,))
    x = jax.random.normal(jax.random.PRNGKey(0), (300, 200), dtype=jax.numpy.float32)
    y = jax.jit(f)(x)
    assert np.array_equal(np.asarray(y), np.asarray(x))


def test_scalars_are_attributes_and_wrong_buffers_are_refused():
    f = cute_jax.ffi_call(scale, SPEC("Float32", (128,)), SPEC("Float32", (128,)), 2.0, 100, outputs=(1,))
    x = jax.numpy.arange(128, dtype=jax.numpy.float32)
    for a, n in ((3.0, 100), (-0.5, 128), (1.0, 0)):
        y = np.asarray(jax.jit(lambda v, a=a, n=n: f(v, a=a, n=n))(x))
        want = np.where(np.arange(128) < n, np.float32(a) * np.arange(128, dtype=np.float32), -1.0)
        assert np.array_equal(y, want.astype(np.float32)), (a, n)
    with pytest.raises(Exception, match="argument 0 must be Float32 of shape"):
        jax.block_until_ready(jax.jit(lambda v: f(v, a=1.0, n=1))(jax.numpy.zeros(64, jax.numpy.float32)))
