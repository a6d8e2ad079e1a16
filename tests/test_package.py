"""Package-level rules: layering (DESIGN §1), import cost, the demo, and public names."""

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "cute_py"

# what each pure-algebra module may import from inside the package
ALGEBRA_LAYERS = {
    "errors": set(),
    "_memo": set(),
    "int_tuple": {"errors"},
    "layout": {"_memo", "errors", "int_tuple"},
    "algebra": {"_memo", "errors", "int_tuple", "layout"},
    "tiling": {"_memo", "algebra", "errors", "int_tuple", "layout"},
    "swizzle": {"errors", "int_tuple", "composed"},
    "composed": {"_memo", "algebra", "basis", "errors", "int_tuple", "layout", "swizzle"},
    "basis": {"errors", "int_tuple", "layout"},
    "recast": {"_memo", "composed", "errors", "int_tuple", "layout", "swizzle"},
    "smem_atoms": {"composed", "errors", "layout", "recast", "swizzle"},
    "parse": {"basis", "composed", "errors", "layout", "swizzle"},
    "dtypes": {"errors"},
    "pointer": {"dtypes", "errors", "int_tuple"},
    "tensor": {"basis", "composed", "dtypes", "errors", "int_tuple", "layout", "pointer", "recast", "swizzle", "tiling"},
    "atom": {"algebra", "dtypes", "errors", "int_tuple", "layout", "recast", "tensor", "tiling"},
    "runtime": {"dtypes", "errors", "int_tuple", "layout", "pointer", "tensor", "valued"},
    "valued": {"int_tuple", "layout"},
}
HEAVY = {"numba_cuda_mlir", "mlir", "cuda", "torch", "cupy", "numpy", "jax", "hypothesis", "mlir_dialects"}


def _imports(path):
    tree = ast.parse(path.read_text())
    internal, external = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                mod = (node.module or "").split(".")[0]
                if mod:
                    internal.add(mod)
                else:
                    internal.update(a.name for a in node.names)
            else:
                external.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            external.update(a.name.split(".")[0] for a in node.names)
    return internal, external


@pytest.mark.parametrize("module", sorted(ALGEBRA_LAYERS))
def test_algebra_modules_import_only_the_layers_above_them(module):
    internal, external = _imports(PKG / f"{module}.py")
    assert module != "atom" or "nvgpu" not in internal
    assert internal <= ALGEBRA_LAYERS[module], f"{module} imports {internal - ALGEBRA_LAYERS[module]}"
    top_level = {
        (a.name if isinstance(node, ast.Import) else node.module).split(".")[0]
        for node in ast.parse((PKG / f"{module}.py").read_text()).body
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0)
        for a in (node.names if isinstance(node, ast.Import) else [node])
    }
    assert not (top_level & HEAVY), f"{module} imports {top_level & HEAVY} at module level"


def test_nothing_below_the_jit_imports_mlir_or_cuda_at_module_level():
    for path in PKG.rglob("*.py"):
        if "jit" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level only: lazy imports inside functions are allowed
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module]
            for n in names:
                assert n.split(".")[0] not in {"mlir", "numba_cuda_mlir", "cuda", "torch", "cupy", "mlir_dialects"}, path


def test_mlir_dialects_never_imports_cute_py():
    for path in (ROOT / "mlir_dialects").rglob("*.py"):
        _, external = _imports(path)
        assert "cute_py" not in external, path


def test_import_cute_py_is_stdlib_only():
    # its time (target < 0.1 s) is measured by benchmarks/bench_import.py, not asserted here
    code = "import sys; import cute_py; print(sorted(m for m in sys.modules if m.split('.')[0] in %r))" % (HEAVY,)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_demo_prints_the_tour_and_its_checks():
    out = subprocess.run([sys.executable, "-m", "cute_py", "demo"], capture_output=True, text=True, check=True, cwd=ROOT)
    assert "((2,2),3):((24,2),8)" in out.stdout
    assert "[R(i) == A(B(i)) for all i: True]" in out.stdout


def test_every_public_name_is_exported_and_documented():
    import cute_py

    for name in cute_py.__all__:
        obj = getattr(cute_py, name)
        assert obj.__doc__, f"{name} has no docstring"
