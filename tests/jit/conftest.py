"""Fixtures of the JIT tests: the MLIR bindings (or a skip), a fresh disk cache, fake device arrays."""

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR bindings (pip install numba-cuda-mlir==0.6.0)")



@pytest.fixture
def assemble():
    """``assemble(ptx)``: nvJitLink assembly for sm_90a, asserted to give an ELF cubin."""
    pytest.importorskip("cuda.bindings.nvjitlink", reason="assembly needs cuda-bindings and nvidia-nvjitlink")
    from mlir_dialects.pipeline import to_cubin

    def run(ptx):
        cubin = to_cubin(ptx, "sm_90a")
        assert cubin[:4] == b"\x7fELF", "nvJitLink returned no ELF cubin"
        return cubin

    return run


class FakeArray:
    """A device array seen only through ``__cuda_array_interface__`` (no memory: for compiling)."""

    def __init__(self, shape, typestr="<f4", ptr=1 << 24, strides=None):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


@pytest.fixture
def fake():
    return FakeArray


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    """Every test gets an empty disk cache."""
    d = tmp_path / "cute_py_cache"
    monkeypatch.setenv("CUTE_PY_CACHE_DIR", str(d))
    return d
