"""The public API is annotated: every function and class method named in an ``__all__`` list of cute_py
annotates each parameter and its return, and every annotation resolves (no undefined or misspelt name)."""

import importlib
import inspect
import os
import re
import typing

import pytest

from tests.test_package import MODULES

PUBLIC_MODULES = sorted(m for m in MODULES if m.startswith("cute_py") and re.search(r"^__all__ =", MODULES[m].read_text(), re.M))
# methods of public classes that are part of the API besides the public names
DUNDERS = {"__init__", "__call__", "__getitem__", "__setitem__", "__len__", "__iter__", "__contains__", "__enter__",
           "__exit__", "__eq__", "__hash__", "__bool__", "__index__", "__int__", "__float__"}


def _namespace():
    """Every public name of every module of cute_py: where the annotations' names resolve."""
    ns = {}
    for m in sorted(MODULES):
        if not m.startswith("cute_py"):
            continue
        module = importlib.import_module(m)
        ns.update({k: v for k, v in vars(module).items() if not k.startswith("_") and not k.startswith("__")})
    return ns


def _generated(f):
    """True for code that has no source file: what ``dataclasses`` generates (``__eq__``, ``__hash__``), whose
    signatures the standard library fixes."""
    code = getattr(inspect.unwrap(f), "__code__", None)
    return code is not None and not os.path.isfile(code.co_filename)


def _functions(module):
    """``[(qualified name, function)]`` of the public API defined in ``module``."""
    out = []
    for name in module.__all__:
        obj = getattr(module, name)
        if getattr(obj, "__module__", None) != module.__name__:
            continue  # re-exported: checked where it is defined
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in DUNDERS:
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member) and not _generated(member):
                    out.append((f"{name}.{attr}", member))
        elif inspect.isfunction(obj):
            out.append((name, obj))
    return out


def _unannotated(f):
    sig = inspect.signature(f)
    params = list(sig.parameters.values())
    missing = [p.name for i, p in enumerate(params)
               if p.annotation is inspect.Parameter.empty and not (i == 0 and p.name in ("self", "cls", "mcs"))]
    if sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_public_functions_are_annotated(module_name):
    module = importlib.import_module(module_name)
    found = [f"{name}: {', '.join(miss)}" for name, f in _functions(module) if (miss := _unannotated(f))]
    assert found == [], f"{module_name}: {len(found)} unannotated:\n" + "\n".join(found)


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_annotations_resolve(module_name):
    module = importlib.import_module(module_name)
    ns = _namespace()
    bad = []
    for name, f in _functions(module):
        try:
            typing.get_type_hints(f, globalns={**ns, **f.__globals__})
        except Exception as e:  # a NameError, or a malformed annotation
            bad.append(f"{name}: {type(e).__name__}: {e}")
    assert bad == [], f"{module_name}:\n" + "\n".join(bad)


def test_the_annotation_rule_can_fail():
    def f(a: int, b, *args) -> None: ...

    def g(x: "NoSuchName") -> int: ...  # noqa: F821

    assert _unannotated(f) == ["b", "args"]
    with pytest.raises(NameError):
        typing.get_type_hints(g, globalns=_namespace())


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_name_in_all_exists(module_name):
    module = importlib.import_module(module_name)
    assert [n for n in module.__all__ if not hasattr(module, n)] == []
