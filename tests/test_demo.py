"""``python -m cute_py demo``: the layout results, the TMA atom's box, the compiled kernel's PTX, the copy's
check (on the CPU reference without a GPU), ``--emit mlir|ptx``, and the message without the JIT."""

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]



@pytest.fixture
def jit_bindings():
    """The MLIR bindings the JIT compiles with, or a skip."""
    return pytest.importorskip("mlir_dialects.bindings",
                               reason="the JIT needs the MLIR bindings (pip install numba-cuda-mlir==0.6.0)")


@pytest.fixture(scope="module")
def cache_env(tmp_path_factory):
    env = dict(os.environ)
    env["CUTE_PY_CACHE_DIR"] = str(tmp_path_factory.mktemp("cute_py_demo_cache"))
    return env


def _demo(env, *args):
    return subprocess.run([sys.executable, "-m", "cute_py", "demo", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


@pytest.fixture(scope="module")
def demo(cache_env):
    r = _demo(cache_env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    return r.stdout


def _section(text, number):
    """The text of part ``number`` (from its ``== n.`` heading to the next heading)."""
    m = re.search(rf"^== {number}\. .*?==\n(.*?)(?=^== \d\. |\Z)", text, re.S | re.M)
    assert m, f"no part {number} in:\n{text}"
    return m.group(1).strip("\n")


def test_the_tour_prints_layouts_and_their_algebra(demo):
    part = _section(demo, 1)
    assert "A(5) = 3,  A((1,(1,3))) = 27,  A((None,(1,None))) = (4,8):(2,8)" in part
    assert "coalesce(A) = (4,2,8):(2,1,8)" in part
    assert "    18 19 20 21 22 23" in part  # last row of the 4x6 row-major table
    assert "composition((6,2):(8,2), (4,3):(3,1)) = ((2,2),3):((24,2),8)   [R(i) == A(B(i)) for all i: True]" in part
    assert "complement((2,2):(1,6), 24) = (3,2):(2,12)" in part
    assert "right_inverse((4,8):(1,5)) = 4:1;  left_inverse((2,4):(4,1)) = (4,2):(2,1)" in part
    assert "zipped_divide((128,128):(128,1), (64,32)) = ((64,32),(2,4)):((128,1),(8192,32))" in part
    assert "blocked_product((2,5):(5,1), (3,4):(1,3)) = ((2,3),(5,4)):((5,10),(1,30))" in part


def test_the_tma_tour_prints_the_tma_descriptor_and_partition(demo):
    part = _section(demo, 2)
    assert "gmem tensor: 8192x8192 BFloat16, row-major      (8192,8192):(8192,1)" in part
    assert "S<3,4,3> o smem_ptr[16b](unset) o ((8,16),(64,1)):((64,512),(1,0))" in part  # the 128B-swizzled bf16 tile
    assert "TMA box (64, 128) (innermost dim first) = 16384 bytes per instruction" in part
    assert "global dims (8192, 8192), global strides (16384,) bytes, element strides (1, 1)" in part
    assert "swizzle B128 (128-byte span; the smem tile must be 1024-byte aligned)" in part
    assert "TMA coordinate tensor (8192,8192):(1@1,1@0)" in part
    assert "gmem: (((64,128),1)):(((1@0,1@1),0)), starting at TMA coordinate (128, 128)" in part
    assert "-> 1 TMA instruction(s) of 8192 elements per tile" in part


def test_the_kernel_tour_compiles_the_tma_copy_and_shows_its_tma_ptx(demo, jit_bindings):
    part = _section(demo, 3)
    m = re.search(r"(compiled|loaded from the disk cache) in (\d+) ms.*sm_90a cubin \((\d+) bytes\)", part)
    assert m and int(m.group(3)) > 1000, part
    assert "tma_copy_kernel_0: grid (128, 64, 1), block (32, 1, 1), 16392 bytes of shared memory" in part
    excerpt = part.split("PTX excerpt", 1)[1].split("(the whole module", 1)[0]
    lines = [ln.strip() for ln in excerpt.splitlines()[1:] if ln.strip()]
    loads = [ln for ln in lines if ln.startswith("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier")]
    stores = [ln for ln in lines if ln.startswith("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group")]
    assert len(loads) == 1 and len(stores) == 1, lines  # one 64x128 box per 128x64 tile
    assert any(ln.startswith("mbarrier.init.shared") for ln in lines)
    assert any(ln.startswith("mbarrier.arrive.expect_tx.shared") and ln.endswith(";") for ln in lines)
    assert any(ln.startswith("mbarrier.try_wait.parity.shared") for ln in lines)
    assert lines.index(loads[0]) < lines.index(stores[0])
    assert "cp.async.bulk.wait_group.read 0;" in lines


def test_the_copy_tour_runs_the_copy_and_says_which_path(demo, jit_bindings):
    part = _section(demo, 4)
    path = re.search(r"^Path: (CPU reference|GPU) ", part, re.M)
    assert path, part
    if path.group(1) == "GPU":
        bw = re.search(r"bandwidth ([\d.]+) GB/s", part)
        assert bw and float(bw.group(1)) > 0
        assert "output == input bit-exactly: True" in part
    else:
        assert "12 tiles of 128x64" in part  # 300x200 in 128x64 tiles: 3 x 4
        assert "CPU reference: output == input bit-exactly: True" in part


def test_cpu_flag_runs_the_cpu_reference(cache_env, jit_bindings):
    r = _demo(cache_env, "--cpu")
    assert r.returncode == 0, r.stdout + r.stderr
    part = _section(r.stdout, 4)
    assert part.startswith("Path: CPU reference (--cpu)")
    assert "CPU reference: output == input bit-exactly: True" in part


def test_emit_ptx_prints_only_the_ptx(cache_env, jit_bindings):
    r = _demo(cache_env, "--emit", "ptx")
    assert r.returncode == 0, r.stderr
    assert ".target sm_90a" in r.stdout
    assert ".entry tma_copy_kernel_0(" in r.stdout
    assert r.stdout.count("cp.async.bulk.tensor.2d.") == 2  # the load and the store
    assert "== 1." not in r.stdout and "A layout" not in r.stdout


def test_emit_mlir_prints_the_cute_nvgpu_module(cache_env, jit_bindings):
    r = _demo(cache_env, "--emit", "mlir")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("module attributes {gpu.container_module}")
    assert "cute_nvgpu.tma_load" in r.stdout and "cute_nvgpu.tma_store" in r.stdout
    assert "cute_nvgpu.mbarrier_init" in r.stdout
    assert "llvm.func @tma_copy_kernel_0" in r.stdout


def test_emit_rejects_other_values_with_status_2(cache_env):
    r = _demo(cache_env, "--emit", "bogus")
    assert r.returncode == 2
    assert "invalid choice: 'bogus'" in r.stderr


@pytest.mark.skipif(importlib.util.find_spec("mlir") is not None, reason="an upstream `mlir` package is installed")
def test_without_the_bindings_the_demo_stops_after_the_tma_tour_with_an_install_line(cache_env):
    env = dict(cache_env, MLIR_DIALECTS_BINDINGS="mlir")  # forces the (absent) upstream bindings
    r = _demo(env)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "TMA box (64, 128)" in r.stdout
    last = r.stdout.rstrip().splitlines()[-1]
    assert last.startswith("The JIT is not installed (no MLIR Python bindings")
    assert last.endswith("pip install -e '.[jit]'")
    assert "== 4." not in r.stdout
    e = _demo(env, "--emit", "ptx")
    assert e.returncode == 1 and e.stdout == ""
    assert "The JIT is not installed" in e.stderr and "Traceback" not in e.stderr


# -- the pieces, in process --------------------------------------------------------------------


def test_ptx_excerpt_keeps_the_tma_and_mbarrier_lines():
    from cute_py.demo.gpu import ptx_excerpt

    ptx = ("// cp.async.bulk in a comment\n\tmov.b32 \t%r7, 1;\n\tmbarrier.init.shared.b64 \t[bar], %r7;\n"
           "\tcp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd1, {%r4, %r6}], [smem];\n\tret;\n")
    assert ptx_excerpt(ptx) == ["mbarrier.init.shared.b64 [bar], %r7;",
                                "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd1, {%r4, %r6}], [smem];"]


def test_the_cpu_check_reports_a_broken_copy(monkeypatch):
    pytest.importorskip("numpy")
    from cute_py import demo
    from cute_py import reference as ref

    real = ref.run_tma_copy

    def drops_the_last_element(src, dst, *args, **kwargs):
        tiles = real(src, dst, *args, **kwargs)
        dst[-1] ^= 1
        return tiles

    monkeypatch.setattr(ref, "run_tma_copy", drops_the_last_element)
    lines = []
    assert demo.run_on_cpu(out=lines.append) is False
    assert lines[-1] == "  CPU reference: output == input bit-exactly: False"


def test_no_torch_or_cupy_means_no_gpu(monkeypatch):
    from cute_py.demo.gpu import find_gpu

    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "cupy", None)
    backend, module, why = find_gpu()
    assert backend is None and module is None
    assert why == "torch: ModuleNotFoundError; cupy: ModuleNotFoundError"


def test_emit_rejects_other_kinds_in_process():
    from cute_py.demo import emit

    with pytest.raises(ValueError, match="'mlir' or 'ptx'"):
        emit("llvm")
