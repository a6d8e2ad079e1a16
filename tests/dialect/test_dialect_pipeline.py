"""The pipeline: missing rules, PTX determinism and version, nvJitLink, the CLI, and import cost."""

import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("mlir_dialects._backend", reason="needs the MLIR Python bindings (pip install numba-cuda-mlir==0.6.0)")

import mlir_dialects as md  # noqa: E402
from mlir_dialects import lowering  # noqa: E402
from mlir_dialects.errors import AssemblyError, LoweringError, PipelineError  # noqa: E402
from mlir_dialects.pipeline import to_ptx  # noqa: E402

ROOT_DIR = pathlib.Path(__file__).resolve().parents[2]


def test_an_op_without_a_lowering_rule_is_an_error_naming_it(kernel, monkeypatch):
    with kernel as k:
        md.cluster_wait()
    monkeypatch.delitem(lowering.RULES, "cute_nvgpu.cluster_wait")
    with pytest.raises(LoweringError, match=r"no lowering rule for op 'cute_nvgpu.cluster_wait'"):
        md.lower(k.module)


def test_the_same_module_gives_byte_identical_ptx(ctx):
    module = md.build_sample_module()
    first, second = to_ptx(module), to_ptx(module)
    assert first == second
    assert to_ptx(md.build_sample_module()) == first


def test_to_ptx_leaves_the_module_as_written(ctx):
    module = md.build_tma_copy_module(64, 32)
    before = str(module)
    to_ptx(module)
    assert str(module) == before and "cute_nvgpu.tma_load" in before


def test_ptx_version_is_raised_to_what_the_ops_need(kernel, filecheck, assemble):
    with kernel as k:
        md.fence_tensormap_release()
    ptx = to_ptx(k.module, features="+ptx80")
    filecheck(ptx, ["CHECK: .version 8.3", "CHECK: .target sm_90a"])
    assemble(ptx)


def test_a_tma_copy_kernel_keeps_ptx_8_0(ctx, filecheck, assemble):
    ptx = to_ptx(md.build_tma_copy_module(64, 32))
    filecheck(ptx, ["CHECK: .version 8.0", "CHECK: .target sm_90a", "CHECK: .entry tma_copy(",
                    "CHECK: .param .align 64 .b8 tma_copy_param_0[128]"])
    assemble(ptx)


def test_to_ptx_needs_exactly_one_gpu_module(ctx):
    module = md._backend.ir.Module.parse("module {}")
    with pytest.raises(PipelineError, match=r"exactly one gpu.module, found 0"):
        to_ptx(module)


def test_nvjitlink_rejects_broken_ptx_with_its_log():
    pytest.importorskip("cuda.bindings.nvjitlink", reason="assembly needs cuda-bindings and nvidia-nvjitlink")
    ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k() { bogus.instruction; ret; }\n"
    with pytest.raises(AssemblyError, match=r"sm_90a"):
        md.to_cubin(ptx)


@pytest.mark.parametrize("emit", ["mlir", "lowered", "ptx"])
def test_the_cli_prints_the_sample_kernel(emit, assemble):
    out = subprocess.run([sys.executable, "-m", "mlir_dialects", "--emit", emit], capture_output=True, text=True,
                         check=True, cwd=ROOT_DIR).stdout
    if emit == "mlir":
        for cls in md.all_op_classes():
            assert cls.OPERATION_NAME in out or cls.ARCH != "sm_90a"
    elif emit == "lowered":
        assert "cute_nvgpu." not in out and "nvvm.cp.async.bulk.tensor.shared.cluster.global" in out
    else:
        assert ".target sm_90a" in out and "cp.async.bulk.tensor.2d.shared::cluster.global.tile" in out
        assemble(out)


def test_import_mlir_dialects_loads_no_bindings():
    code = "import sys, mlir_dialects; print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba_cuda_mlir', 'mlir', 'cuda')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT_DIR)
    assert out.stdout.strip() == "[]"


def test_the_backend_skips_numba_cuda_mlirs_compiler_but_keeps_its_preload():
    # how long the import takes is measured by benchmarks/bench_import.py, not asserted here
    code = ("import sys; import mlir_dialects._backend as b;"
            "print(b.BINDINGS); print(len(b._handles)); print('numba_cuda_mlir.numba_cuda' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT_DIR)
    bindings, handles, heavy = out.stdout.split()
    if bindings != "numba_cuda_mlir._mlir":
        pytest.skip(f"bindings come from {bindings}")
    assert int(handles) >= 1, "the RTLD_DEEPBIND preload did not run"
    assert heavy == "False", "numba_cuda_mlir's compiler was imported"


def test_the_bindings_defer_numpy_and_their_elements_attr_builders_still_build():
    # the bindings' ir module imports numpy only for four ElementsAttr builders: loading them without numpy, then
    # building each attribute (numpy imported on that first use) gives what the bindings' own builders give
    code = ("import json, sys\n"
            "from mlir_dialects.bindings import ir\n"
            "before = 'numpy' in sys.modules\n"
            "with ir.Context() as ctx:\n"
            "    got = {k: str(ir.AttrBuilder.get(k)(v, ctx)) for k, v in [('F64ElementsAttr', [1.5, -2.0]),\n"
            "           ('I32ElementsAttr', [1, -2]), ('I64ElementsAttr', [2**40]), ('IndexElementsAttr', [3, 4])]}\n"
            "print(json.dumps({'before': before, 'after': 'numpy' in sys.modules, 'got': got}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT_DIR)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] is False and got["after"] is True
    assert got["got"] == {"F64ElementsAttr": "dense<[1.500000e+00, -2.000000e+00]> : tensor<2xf64>",
                          "I32ElementsAttr": "dense<[1, -2]> : tensor<2xi32>",
                          "I64ElementsAttr": "dense<1099511627776> : tensor<1xi64>",
                          "IndexElementsAttr": "dense<[3, 4]> : tensor<2xindex>"}


def test_with_numpy_imported_first_the_bindings_define_their_own_builders():
    code = ("import numpy, sys\n"
            "from mlir_dialects import _backend\n"
            "from mlir_dialects.bindings import ir\n"
            "with ir.Context() as ctx:\n"
            "    f = ir.AttrBuilder.get('I32ElementsAttr')\n"
            "    print(f.__module__, f([7], ctx))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT_DIR)
    module, attr = out.stdout.strip().split(" ", 1)
    assert module != "mlir_dialects._backend" and attr == "dense<7> : tensor<1xi32>"


def test_mlir_dialects_never_imports_cute_py():
    import ast

    for path in (ROOT_DIR / "mlir_dialects").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "cute_py" for n in names), path


def test_wrapping_the_dialects_ops_searches_for_no_python_module(kernel, monkeypatch):
    """The bindings look for a module of an op's dialect whenever they wrap one of its ops and forget a failed
    search; an empty module stands for ``cute_nvgpu``'s, so building, verifying and lowering import nothing."""
    import importlib._bootstrap as bootstrap
    from mlir_dialects._backend import BINDINGS

    searched = []
    find = bootstrap._find_and_load_unlocked
    monkeypatch.setattr(bootstrap, "_find_and_load_unlocked",
                        lambda name, imp: searched.append(name) or find(name, imp))
    assert f"{BINDINGS}.dialects.cute_nvgpu" in sys.modules
    with kernel as k:
        md.cluster_wait()
        md.cluster_arrive()
    md.verify(k.module)
    to_ptx(k.module)
    assert not [n for n in searched if n.endswith(".cute_nvgpu")], searched
