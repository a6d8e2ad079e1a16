"""The fallback assembler on a Hopper GPU: with ``MLIR_DIALECTS_ASSEMBLER=ptxas`` every kernel goes to the ptxas
found here (13.0.88 on the GPU machines, which miscompiles cp.async's ``.L2::cache_hint`` into an illegal
instruction). The tile copier's EVICT_FIRST / EVICT_LAST copies are assembled without the hint (announced by an
``AssemblerWarning`` naming the fix) and copy, zero-fill and swizzle every byte as with nvJitLink 13.5: the cases
of ``test_tile_copier_gpu.py`` with an eviction policy, run through the fallback."""

import pytest

pytest.importorskip("mlir_dialects.bindings", reason="the JIT needs the MLIR Python bindings (numba-cuda-mlir==0.6.0)")

import test_tile_copier_gpu as tile_copier_gpu  # noqa: E402
from cute_py.nvgpu.cpasync import EvictionPolicy  # noqa: E402
from mlir_dialects import assembler  # noqa: E402
from mlir_dialects.pipeline import to_cubin  # noqa: E402

pytestmark = pytest.mark.gpu

CASES = [c for c in tile_copier_gpu.CASES if c[2] is not EvictionPolicy.NORMAL]


@pytest.mark.parametrize("dtype, swz, policy, scope, tl, block", CASES)
def test_the_fallback_assembler_runs_the_eviction_policy_copies_correctly(dtype, swz, policy, scope, tl, block,
                                                                         monkeypatch, tmp_path):
    ptxas = assembler.find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas here (pip install nvidia-cuda-nvcc, or a CUDA toolkit on PATH)")
    monkeypatch.setenv("MLIR_DIALECTS_ASSEMBLER", "ptxas")
    monkeypatch.setenv("CUTE_PY_CACHE_DIR", str(tmp_path / "cache"))  # no cubin of another assembler is served
    monkeypatch.setitem(assembler._STATE, "warned", set())
    sent = []
    real = assembler._ptxas
    monkeypatch.setattr(assembler, "_ptxas", lambda path, data, arch: sent.append(data.decode()) or real(path, data, arch))
    old = (assembler.ptxas_version(ptxas) or (0, 0)) < (13, 5)
    with pytest.warns(assembler.AssemblerWarning) as warned:
        tile_copier_gpu.test_tile_copier_copies_zero_fills_and_swizzles_every_byte(
            dtype, swz, policy, scope, tl, block, lambda ptx: to_cubin(ptx, "sm_90a"))
    assert sent, "the kernel was not assembled by ptxas"
    if old:
        assert all("L2::cache_hint" not in ptx for ptx in sent)
        assert any("nvidia-nvjitlink>=13.5.37" in str(w.message) and "cache_hint" in str(w.message) for w in warned)
