"""Package-level rules: the layering of DESIGN §1 over the whole tree, import cost, the demo, public names."""

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "cute_py"
HEAVY = {"numba_cuda_mlir", "mlir", "cuda", "torch", "cupy", "numpy", "jax", "hypothesis", "mlir_dialects"}

# the layers, top to bottom, as (name, module prefixes); a module belongs to the layer of its longest prefix
LAYERS = [
    ("errors", ("cute_py.errors",)),
    ("core", ("cute_py.core",)),
    ("device", ("cute_py.device",)),
    ("tensor", ("cute_py.tensor",)),
    ("atom", ("cute_py.atom", "cute_py.mma", "cute_py.mma_copy", "cute_py.mma_gemm", "cute_py.mma_thread")),
    ("nvgpu", ("cute_py.nvgpu",)),
    ("reference", ("cute_py.reference", "cute_py.reference_warp", "cute_py.reference_wgmma")),
    ("viz", ("cute_py.viz",)),
    ("testing", ("cute_py.testing",)),
    ("compiler", ("cute_py.compiler",)),
    ("facade", ("cute_py", "cute_py.__main__", "cute_py.arch", "cute_py.runtime", "cute_py.demo", "cute_py.pipeline",
                 "cute_py.utils", "cute_py.torch")),
    ("examples", ("examples",)),
    ("mlir_dialects", ("mlir_dialects",)),
]
# what each layer may import (besides itself and the standard library / third-party packages)
ALLOWED = {
    "errors": set(),
    "core": {"errors"},
    "device": {"errors"},
    "tensor": {"errors", "core", "device"},
    "atom": {"errors", "core", "tensor", "device"},
    "nvgpu": {"errors", "core", "tensor", "atom", "device"},
    "reference": {"errors", "core", "tensor", "atom", "device", "nvgpu"},
    "viz": {"errors", "core", "tensor", "atom", "device", "nvgpu"},
    "testing": {"errors", "core", "tensor", "atom", "device", "nvgpu"},
    "compiler": {"errors", "core", "tensor", "atom", "device", "nvgpu", "reference", "mlir_dialects"},
    "facade": {"errors", "core", "tensor", "atom", "device", "nvgpu", "reference", "viz", "testing", "compiler",
               "mlir_dialects"},
    "examples": {"facade", "compiler", "nvgpu", "atom", "core", "tensor", "errors", "device"},
    "mlir_dialects": set(),
}
# layers that must not import numpy, the MLIR bindings or CUDA at module level (they load lazily)
LIGHT_AT_MODULE_LEVEL = {"errors", "core", "tensor", "atom", "device", "nvgpu", "viz", "facade"}


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules():
    out = {}
    for top in ("cute_py", "mlir_dialects", "examples"):
        for path in (ROOT / top).rglob("*.py"):
            out[_module_name(path)] = path
    return out


MODULES = _modules()


def _layer(module):
    best, layer = -1, None
    for name, prefixes in LAYERS:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, layer = len(p), name
    return layer


def _target(base, name):
    """The module ``from base import name`` reaches: ``base.name`` when that is a module, else ``base``."""
    return f"{base}.{name}" if f"{base}.{name}" in MODULES else base


def imports_of(module):
    """``[(target module, line, at module level)]`` of every import in ``module``: at any depth, relative or
    absolute, and the string arguments of ``importlib.import_module`` / ``__import__``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top_level = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        level0 = id(node) in top_level
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno, level0) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module
            out += [(_target(base, a.name), node.lineno, level0) for a in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if fname in ("import_module", "__import__"):
                name = node.args[0].value
                if name.startswith("."):  # relative to this module's package (the package argument)
                    dots = len(name) - len(name.lstrip("."))
                    base = package.split(".")
                    base = base[: len(base) - (dots - 1)]
                    name = ".".join(base + [name.lstrip(".")])
                out.append((name, node.lineno, False))
    return out


def _internal(target):
    """The module of the tree that ``target`` names (its longest prefix that is one), or None."""
    parts = target.split(".")
    for i in range(len(parts), 0, -1):
        m = ".".join(parts[:i])
        if m in MODULES:
            return m
    return None


def _graph():
    graph = {}
    for module in MODULES:
        edges = set()
        for target, _, _ in imports_of(module):
            m = _internal(target)
            if m is not None and m != module:
                edges.add(m)
        graph[module] = edges
    return graph


def test_every_module_has_a_layer():
    assert [m for m in MODULES if _layer(m) is None] == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_module_imports_only_the_layers_it_may(module):
    layer = _layer(module)
    bad = []
    for target, line, _ in imports_of(module):
        m = _internal(target)
        if m is None:
            if target.split(".")[0] in ("cute_py", "examples", "mlir_dialects"):
                bad.append(f"line {line}: {target} (no such module)")
            continue
        other = _layer(m)
        if other != layer and other not in ALLOWED[layer]:
            bad.append(f"line {line}: {m} ({other})")
        if layer != "mlir_dialects" and other == "mlir_dialects" and any(p.startswith("_") for p in m.split(".")[1:]):
            bad.append(f"line {line}: {m} (a private module of mlir_dialects: use its public façade)")
    assert bad == [], f"{module} ({layer}) imports " + "; ".join(bad)


def test_the_import_graph_has_no_cycle():
    graph = _graph()
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _layer(m) in LIGHT_AT_MODULE_LEVEL))
def test_light_layers_import_nothing_heavy_at_module_level(module):
    heavy = sorted({t for t, _, level0 in imports_of(module) if level0 and t.split(".")[0] in HEAVY})
    assert heavy == [], f"{module} imports {heavy} at module level"


def test_the_rules_see_imports_at_every_depth():
    # the rule test must be able to fail: an import inside a function, a relative one and an importlib string
    # are all seen
    targets = {t for t, _, _ in imports_of("cute_py")}
    assert "cute_py.viz" in targets and "cute_py.core.layout" in targets
    assert any(not level0 for _, _, level0 in imports_of("cute_py.compiler.frontend.device_trace"))


def test_mlir_dialects_never_imports_cute_py():
    for module in MODULES:
        if _layer(module) == "mlir_dialects":
            assert not [t for t, _, _ in imports_of(module) if t.split(".")[0] == "cute_py"], module


def test_import_cute_py_is_stdlib_only():
    # its time (target < 0.1 s) is measured by benchmarks/bench_import.py, not asserted here
    code = "import sys; import cute_py; print(sorted(m for m in sys.modules if m.split('.')[0] in %r))" % (HEAVY,)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


LOADED_ON_FIRST_USE = ("cute_py.nvgpu", "cute_py.runtime", "cute_py.mma_copy", "cute_py.mma_gemm", "cute_py.compiler",
                      "cute_py.viz")


def test_import_cute_py_leaves_the_hopper_operations_and_run_time_helpers_to_first_use():
    # the names stay where they were: `from cute_py import X`, `cute_py.X`, `dir(cute_py)`, the nvgpu package
    code = ("import sys, cute_py; print(sorted(m for m in sys.modules if m.startswith(%r)))\n"
            "from cute_py import SmemLayoutAtomKind, make_smem_layout_atom, make_layout_image_mask, gemm\n"
            "from cute_py import make_tiled_copy_A, make_tiled_copy_C_atom, runtime, nvgpu\n"
            "from cute_py.nvgpu import cpasync\n"
            "assert cute_py.nvgpu is nvgpu and nvgpu.cpasync is cpasync and cute_py.runtime is runtime\n"
            "assert cute_py.gemm is sys.modules['cute_py.mma_gemm'].gemm\n"
            "print(sorted(set(cute_py.__all__) - set(dir(cute_py))))\n"
            "print('cute_py.compiler' in sys.modules, 'cute_py.viz' in sys.modules)") % (LOADED_ON_FIRST_USE,)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split("\n")[:3] == ["[]", "[]", "False False"]


def test_every_lazy_name_of_the_package_loads_from_where_it_is_listed():
    import cute_py

    light = {n: w for n, w in cute_py._LAZY.items() if not w[0].startswith(("compiler", "cuda", "arch", "utils"))}
    for name, (module, attr) in light.items():
        assert getattr(cute_py, name) is (importlib.import_module(f"cute_py.{module}") if attr is None
                                          else getattr(importlib.import_module(f"cute_py.{module}"), attr)), name


def test_demo_prints_the_tour_and_its_checks():
    out = subprocess.run([sys.executable, "-m", "cute_py", "demo"], capture_output=True, text=True, check=True, cwd=ROOT)
    assert "((2,2),3):((24,2),8)" in out.stdout
    assert "[R(i) == A(B(i)) for all i: True]" in out.stdout


def test_every_public_name_is_exported_and_documented():
    import cute_py

    from cute_py.core import typing as aliases

    for name in cute_py.__all__:
        obj = getattr(cute_py, name)
        if name in aliases.__all__:  # a type alias: documented in the module that defines them
            assert obj is getattr(aliases, name) and f"``{name}``" in aliases.__doc__, name
            continue
        assert obj.__doc__, f"{name} has no docstring"


def test_every_cute_protocol_is_documented_in_the_seam_and_used():
    import re

    from cute_py import device

    used = set()
    for module, path in MODULES.items():
        if module != "cute_py.device" and _layer(module) != "mlir_dialects":
            used |= set(re.findall(r"__cute_[a-z_]+__", path.read_text()))
    assert used - set(device.PROTOCOLS) == set(), "undocumented protocols"
    assert set(device.PROTOCOLS) - used == set(), "documented protocols nobody uses"


def test_the_device_context_is_the_only_way_down_to_the_kernel():
    from cute_py import device
    from cute_py.errors import DeviceOnlyError
    from cute_py.nvgpu import device_ops

    assert device.active() is None
    with pytest.raises(DeviceOnlyError, match="tma_store_arrive is a device operation"):
        device_ops.tma_store_arrive()
    seen = []

    class Recorder(device.DeviceContext):
        def emit(self, op, **operands):
            seen.append(type(op).__name__)

    with device.tracing(Recorder()) as ctx:
        assert device.active() is ctx
        with device.tracing(Recorder()) as inner:
            assert device.active() is inner
        assert device.active() is ctx
        device_ops.tma_store_arrive()
    assert device.active() is None and seen == ["BulkCommitGroupOp"]
    with pytest.raises(NotImplementedError):
        device.DeviceContext().load(None, 0)
