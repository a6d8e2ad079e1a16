"""Package-level rules: the layering of DESIGN §1 over the whole tree, import cost, the demo, public names."""

import ast
import importlib
import pathlib
import re
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
    ("reference", ("cute_py.reference",)),
    ("viz", ("cute_py.viz",)),
    ("testing", ("cute_py.testing",)),
    # the compiler: one stack, top to bottom, no arrow up (runtime sits beside it and sees only specs and cache)
    ("compiler", ("cute_py.compiler",)),
    ("host", ("cute_py.compiler.host",)),
    ("trace", ("cute_py.compiler.trace",)),
    ("builtins", ("cute_py.compiler.builtins",)),
    ("emit", ("cute_py.compiler.emit",)),
    ("flow", ("cute_py.compiler.flow",)),
    ("lang", ("cute_py.compiler.lang",)),
    ("specs", ("cute_py.compiler.specs",)),
    ("cache", ("cute_py.compiler.cache",)),
    ("stages", ("cute_py.compiler.stages",)),
    ("runtime", ("cute_py.compiler.runtime",)),
    ("facade", ("cute_py", "cute_py.__main__", "cute_py.arch", "cute_py.runtime", "cute_py.demo", "cute_py.pipeline",
                 "cute_py.utils", "cute_py.torch")),
    ("examples", ("examples",)),
    ("mlir_dialects", ("mlir_dialects",)),
]
# the compiler's layers, top to bottom; each may import only those after it (specs, cache and stages are the floor)
COMPILER_STACK = ("host", "trace", "builtins", "emit", "flow", "lang", "specs", "cache", "stages")
COMPILER_LAYERS = {"compiler", "runtime", *COMPILER_STACK}
BELOW_COMPILER = {"errors", "core", "tensor", "atom", "device", "nvgpu", "reference", "mlir_dialects"}
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
    # (the DSL's public testing module: its autotune_jit compiles and times jit functions)
    "testing": {"errors", "core", "tensor", "atom", "device", "nvgpu"} | COMPILER_LAYERS,
    "compiler": BELOW_COMPILER | set(COMPILER_STACK) | {"runtime"},
    "host": BELOW_COMPILER | set(COMPILER_STACK[1:]) | {"runtime"},
    "trace": BELOW_COMPILER | set(COMPILER_STACK[2:]),
    "builtins": BELOW_COMPILER | set(COMPILER_STACK[3:]),
    "emit": BELOW_COMPILER | set(COMPILER_STACK[4:]),
    "flow": BELOW_COMPILER | set(COMPILER_STACK[5:]),
    "lang": BELOW_COMPILER | set(COMPILER_STACK[6:]),
    "specs": BELOW_COMPILER | {"cache"},
    "cache": BELOW_COMPILER,
    "stages": BELOW_COMPILER,
    "runtime": BELOW_COMPILER | {"specs", "cache"},
    "facade": {"errors", "core", "tensor", "atom", "device", "nvgpu", "reference", "viz", "testing", "mlir_dialects"}
              | COMPILER_LAYERS,
    "examples": {"facade", "nvgpu", "atom", "core", "tensor", "errors", "device"} | COMPILER_LAYERS,
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
    assert any(not level0 for _, _, level0 in imports_of("cute_py.compiler.trace"))


# -- the emission layer is the only place where an instruction becomes IR ---------------------------------------

EMIT_PACKAGE = "cute_py.compiler.emit"
# what writes inline PTX: the dialect's lowering helper (mlir_dialects.ops.common.inline_ptx) and the names such a
# helper has had in cute_py; no module of cute_py calls one, under any name (inline PTX is the dialect's lowering's)
ASM_HELPERS = {"asm", "asm_value", "inline_ptx"}
# the dialect's pipeline (a context, lowering, PTX, cubin): functions of mlir_dialects that build no op
DIALECT_PIPELINE = {"make_context", "lower", "lower_copy", "lower_for_ptx", "lowered_to_ptx", "to_ptx", "to_cubin"}
# what modules outside the emission layer may call on mlir_dialects
DIALECT_CALLS_ALLOWED = {
    "cute_py.compiler.stages": DIALECT_PIPELINE,
    "cute_py.compiler.trace": DIALECT_PIPELINE,
    # the kernel language's conversions to and from the 8-bit floats and TFloat32 (``numeric.convert``): the layer
    # below the emission layer, which it cannot import
    "cute_py.compiler.lang.numeric": {"cvt_f8_to_f16", "cvt_f32_to_narrow"},
}


def _in_emit(module):
    return module == EMIT_PACKAGE or module.startswith(EMIT_PACKAGE + ".")


def _dialect_module(name):
    """Whether ``name`` is mlir_dialects or one of its modules of op builders (``ops_*``)."""
    parts = name.split(".")
    return parts[0] == "mlir_dialects" and (len(parts) == 1 or (len(parts) == 2 and parts[1].startswith("ops_")))


def instruction_builders(source, module):
    """``[(line, kind, name)]`` of what in ``source`` (the text of ``module``) builds an instruction's IR, at any
    depth: ``("dialect", name)`` a call of a function of mlir_dialects (an attribute of the module under any alias,
    or a name imported from it), ``("asm", name)`` a call of a helper that writes inline PTX (``ASM_HELPERS``: by
    its name, imported under another one, as an attribute of anything, or fetched by ``getattr``),
    ``("inline_asm", ...)`` any mention of ``InlineAsmOp`` (a name, an attribute, an import or a string)."""
    tree = ast.parse(source)
    is_package = module in MODULES and MODULES[module].name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    dialect_aliases, dialect_names, asm_names = set(), {}, {name: name for name in ASM_HELPERS}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _dialect_module(a.name):  # without an alias, the package's name is bound
                    dialect_aliases.add(a.asname or "mlir_dialects")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module
            for a in node.names:
                bound = a.asname or a.name
                if a.name == "InlineAsmOp":
                    out.append((node.lineno, "inline_asm", "import"))
                if a.name in ASM_HELPERS:
                    asm_names[bound] = a.name
                elif f"{base}.{a.name}" in MODULES or f"{base}.{a.name}" == "mlir_dialects":  # a module
                    if _dialect_module(f"{base}.{a.name}"):
                        dialect_aliases.add(bound)
                elif _dialect_module(base):
                    dialect_names[bound] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "InlineAsmOp" or \
                isinstance(node, ast.Attribute) and node.attr == "InlineAsmOp" or \
                isinstance(node, ast.Constant) and node.value == "InlineAsmOp":
            out.append((node.lineno, "inline_asm", "InlineAsmOp"))
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name):
            if f.id == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                    and node.args[1].value in ASM_HELPERS:
                out.append((node.lineno, "asm", node.args[1].value))
            elif f.id in asm_names:
                out.append((node.lineno, "asm", asm_names[f.id]))
            elif f.id in dialect_names:
                out.append((node.lineno, "dialect", dialect_names[f.id]))
        elif isinstance(f, ast.Attribute):
            if f.attr in ASM_HELPERS:  # reached through any module or object
                out.append((node.lineno, "asm", f.attr))
                continue
            chain, root = [f.attr], f.value
            while isinstance(root, ast.Attribute):  # mlir_dialects.ops_tma.tma_load(...)
                chain.append(root.attr)
                root = root.value
            if not isinstance(root, ast.Name):
                continue
            if root.id in dialect_aliases and (len(chain) == 1 or (len(chain) == 2 and chain[1].startswith("ops_"))):
                out.append((node.lineno, "dialect", f.attr))
    return sorted(out)


def emission_violations(source, module):
    """``["line N: ..."]``: the instruction builders of ``module`` that break the emission rule (see
    :func:`test_only_the_emission_layer_builds_instructions`)."""
    bad = []
    for line, kind, name in instruction_builders(source, module):
        if kind == "inline_asm":
            bad.append(f"line {line}: InlineAsmOp in cute_py (inline PTX is written by the dialect's lowering only)")
        elif kind == "asm":
            bad.append(f"line {line}: {name}(...) writes inline PTX (the dialect's lowering only does)")
        elif kind == "dialect" and not _in_emit(module) and name not in DIALECT_CALLS_ALLOWED.get(module, ()):
            bad.append(f"line {line}: mlir_dialects.{name}(...) outside the emission layer")
    return bad


def test_only_the_emission_layer_builds_instructions():
    # an instruction becomes IR in cute_py.compiler.emit only, as an op of the dialect: no other module of cute_py
    # builds one (its pipeline functions and the language's float conversions excepted, DIALECT_CALLS_ALLOWED), and
    # no module of cute_py writes inline PTX (InlineAsmOp, or a helper that builds it): every instruction is an op
    # with a verifier, whose lowering alone writes its PTX
    bad = {m: emission_violations(MODULES[m].read_text(), m) for m in sorted(MODULES) if m.split(".")[0] == "cute_py"}
    assert {m: v for m, v in bad.items() if v} == {}


def test_the_emission_rule_sees_builders_at_every_depth():
    # the rule test must be able to fail: a dialect op under any alias or imported by name, an inline-PTX helper
    # imported under another name, reached through a module or by getattr, InlineAsmOp anywhere, inside functions
    # too
    source = """
import mlir_dialects as md
import mlir_dialects.ops_tma
from mlir_dialects import bindings as mlir, elect_sync as elect
from mlir_dialects.lowering import inline_ptx as write
from ..emit import operands
from ..emit.operands import int_operand
from ..lang.builder import current


def f(b):
    def inner():
        md.mbarrier_init(1, 2)
        return lambda: elect()
    mlir_dialects.ops_tma.tma_store_arrive()
    write("nop;", "", [])
    operands.asm_value("", "", [], None)
    asm("nop;", "", [])
    getattr(mlir.ops.common, "inline_ptx")("", "", [])
    int_operand(1, "x")
    mlir.ir.Type.parse("i32")
    md.to_ptx(None)
    b.mlir.llvm.InlineAsmOp(None, [], "", "")
    getattr(b.mlir.llvm, "InlineAsmOp")
"""
    found = [(kind, name) for _, kind, name in instruction_builders(source, "cute_py.compiler.builtins.example")]
    assert sorted(found) == sorted([("dialect", "mbarrier_init"), ("dialect", "elect_sync"),
                                    ("dialect", "tma_store_arrive"), ("dialect", "to_ptx"), ("asm", "inline_ptx"),
                                    ("asm", "asm_value"), ("asm", "asm"), ("asm", "inline_ptx"),
                                    ("inline_asm", "InlineAsmOp"), ("inline_asm", "InlineAsmOp")])
    assert len(emission_violations(source, "cute_py.compiler.builtins.example")) == 10
    # the same imports in modules elsewhere: the pipeline is the stages' (to_ptx passes there), ops are the
    # emission layer's (there only the inline PTX fails), and no module may write inline PTX
    absolute = source.replace("from ..emit", "from cute_py.compiler.emit")
    assert len(emission_violations(absolute, "cute_py.compiler.stages")) == 9
    assert len(emission_violations(absolute, "cute_py.compiler.emit.sync")) == 6
    assert len(emission_violations(absolute, "cute_py.compiler.emit.operands")) == 6


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
    from cute_py.nvgpu import forms

    assert device.active() is None
    with pytest.raises(DeviceOnlyError, match="tma_store_arrive is a device operation"):
        forms.tma_store_arrive()
    seen = []

    class Recorder(device.DeviceContext):
        def emit(self, op, **operands):
            seen.append(type(op).__name__)

    with device.tracing(Recorder()) as ctx:
        assert device.active() is ctx
        with device.tracing(Recorder()) as inner:
            assert device.active() is inner
        assert device.active() is ctx
        forms.tma_store_arrive()
    assert device.active() is None and seen == ["BulkCommitGroupOp"]
    with pytest.raises(NotImplementedError):
        device.DeviceContext().load(None, 0)


_CLASS_TEXT = re.compile(r"__class__\s*=(?!=)|setattr\([^)]*['\"]__class__['\"]")


def _class_assignments(text):
    """Lines of the Python source ``text`` that change an object's class: ``x.__class__ = ...`` in any assignment
    (augmented, annotated, in a tuple), ``setattr(x, "__class__", ...)`` and ``object.__setattr__(...)`` alike,
    and the same in a string (generated code that is exec'd)."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "__class__" for tt in targets for t in ast.walk(tt)):
                found.add(node.lineno)
        elif isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and node.args[1].value == "__class__":
            f = node.func
            if (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")) in ("setattr", "__setattr__"):
                found.add(node.lineno)
    found |= {k + 1 for k, line in enumerate(text.splitlines()) if _CLASS_TEXT.search(line)}
    return sorted(found)


def test_no_object_of_cute_py_changes_its_class():
    found = [f"{m}:{line}" for m, path in sorted(MODULES.items()) if m.split(".")[0] == "cute_py"
             for line in _class_assignments(path.read_text())]
    assert found == [], "objects whose class is assigned: " + ", ".join(found)


def test_the_class_assignment_scan_sees_every_form():
    code = ("x.__class__ = A\nself.a, self.__class__ = 1, B\nsetattr(x, '__class__', C)\n"
            "object.__setattr__(x, '__class__', D)\nsrc = 'c.__class__ = E'\nsame = x.__class__ == A\n"
            "kind = x.__class__\n")
    assert _class_assignments(code) == [1, 2, 3, 4, 5]


def _mutates_a_table(fn, tables):
    """Whether the function ``fn`` (at any depth) stores into, or adds to, one of the module-level ``tables``."""
    for n in ast.walk(fn):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
        if any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in tables
               for t in targets):
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                and n.func.value.id in tables and n.func.attr in ("append", "add", "update", "setdefault", "extend"):
            return True
    return False


def registrations(modules):
    """``[(module, line, what)]``: decorators that store the decorated object into a table, and module-level
    statements that store into a table imported from another module (registration by import side effect)."""
    trees = {m: ast.parse(p.read_text()) for m, p in modules.items()}
    registrars = set()
    for tree in trees.values():
        tables = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                  for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        for n in tree.body:
            if isinstance(n, ast.FunctionDef) and _mutates_a_table(n, tables):
                registrars.add(n.name)
    found = []
    for m, tree in trees.items():
        imported = {(a.asname or a.name) for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
        for n in ast.walk(tree):
            for d in getattr(n, "decorator_list", []):
                f = d.func if isinstance(d, ast.Call) else d
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
                if name in registrars:
                    found.append((m, d.lineno, f"@{name}"))
        for n in tree.body:
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                                                 and t.value.id in imported for t in n.targets):
                found.append((m, n.lineno, "stores into an imported table"))
    return found


# known late bindings, each a class or function of a layer that the lower module it completes cannot import (the
# import graph has no cycle): a traced integer for the traced floats' conversions, the slice and alignment of a
# layout for its methods; and the memoisation bookkeeping (a cache or key type
# is registered with the module that clears caches, which changes no result)
LATE_BINDINGS = {("cute_py.compiler.lang.traced_int", "stores into an imported table"),
                 ("cute_py.core.inverse", "stores into an imported table"),
                 ("cute_py.core.modes", "stores into an imported table")}
BOOKKEEPING_DECORATORS = {"@memoize", "@register_key_type"}


def test_nothing_registers_itself_on_import():
    found = [(m, line, what) for m, line, what in registrations(MODULES)
             if (m, what) not in LATE_BINDINGS and what not in BOOKKEEPING_DECORATORS]
    assert found == []
    # the compiler and the dialect have none at all
    assert [(m, what) for m, _, what in registrations(MODULES) if m.startswith(("cute_py.compiler", "mlir_dialects"))
            and what not in BOOKKEEPING_DECORATORS] == [("cute_py.compiler.lang.traced_int", "stores into an imported table")]


def test_the_registration_rule_can_fail(tmp_path):
    (tmp_path / "a.py").write_text("TABLE = {}\n\ndef entry(cls):\n    def put(fn):\n        TABLE[cls] = fn\n"
                                   "        return fn\n    return put\n")
    (tmp_path / "b.py").write_text("from a import entry, TABLE\n\n@entry(int)\ndef f():\n    pass\n\nTABLE[str] = f\n")
    found = registrations({"a": tmp_path / "a.py", "b": tmp_path / "b.py"})
    assert found == [("b", 3, "@entry"), ("b", 7, "stores into an imported table")]
