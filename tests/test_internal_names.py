"""Names across modules: no module of the tree reaches into another's ``_private`` names, and the algebra's
internal API (what other modules may import from it outside ``__all__``) is the one list in
``cute_py.core.INTERNAL_API``."""

import ast
import importlib

import pytest

from cute_py.core import INTERNAL_API
from tests.test_package import MODULES


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def _resolve(module, node):
    """The module that ``from ... import`` in ``module`` names (absolute)."""
    if not node.level:
        return node.module
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def names_imported(module):
    """``[(source module, name, line)]`` for every ``from source import name`` of ``module`` into a module of
    the tree, at any depth, and every ``alias.name`` attribute read where ``alias`` is a module of the tree
    bound by an import in ``module``."""
    tree = ast.parse(MODULES[module].read_text())
    out, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(module, node)
            for a in node.names:
                if f"{source}.{a.name}" in MODULES:      # a submodule: bound as a module alias
                    aliases[a.asname or a.name] = f"{source}.{a.name}"
                elif source in MODULES:
                    out.append((source, a.name, node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            out.append((aliases[node.value.id], node.attr, node.lineno))
    return [(s, n, line) for s, n, line in out if s != module]


LIBRARY = sorted(m for m in MODULES if not m.startswith("tests"))


def test_no_module_imports_another_modules_private_names():
    found = [f"{m}:{line} takes {name} from {source}"
             for m in LIBRARY for source, name, line in names_imported(m) if _private(name)]
    assert found == [], f"{len(found)} cross-module uses of private names:\n" + "\n".join(found)


def test_the_scanner_sees_private_names_at_every_depth(tmp_path):
    # the rule above can fail: a nested import of a private name, and an attribute of a module alias
    MODULES["tests._probe"] = probe = tmp_path / "probe.py"
    try:
        probe.write_text("def f():\n    from cute_py.core.layout import _new\n"
                         "    from cute_py.core import layout as L\n    return L._set\n")
        assert [(s, n) for s, n, _ in names_imported("tests._probe")] == \
            [("cute_py.core.layout", "_new"), ("cute_py.core.layout", "_set")]
    finally:
        del MODULES["tests._probe"]


def _core_module(name):
    return importlib.import_module(f"cute_py.core.{name}")


@pytest.mark.parametrize("name", sorted(INTERNAL_API))
def test_internal_api_entries_exist_outside_all_and_are_used(name):
    module = _core_module(name)
    listed = INTERNAL_API[name]
    missing = [n for n in listed if not hasattr(module, n)]
    public = [n for n in listed if n in module.__all__]
    source = f"cute_py.core.{name}"
    used = {n for m in LIBRARY for s, n, _ in names_imported(m) if s == source}
    unused = [n for n in listed if n not in used]
    assert (missing, public, unused) == ([], [], []), \
        f"INTERNAL_API[{name!r}]: missing {missing}, in __all__ {public}, imported by no module {unused}"


def test_only_public_or_internal_api_names_cross_the_algebra_boundary():
    found = []
    for m in LIBRARY:
        for source, name, line in names_imported(m):
            if not source.startswith("cute_py.core.") or source.count(".") != 2:
                continue
            stem = source.rsplit(".", 1)[1]
            if name in _core_module(stem).__all__ or name in INTERNAL_API.get(stem, ()):
                continue
            found.append(f"{m}:{line} takes {name} from {source}")
    assert found == [], "names outside __all__ and cute_py.core.INTERNAL_API:\n" + "\n".join(found)
