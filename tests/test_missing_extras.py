"""A part of cute_py whose optional dependency is missing says which extra brings it, as a CuteError."""

import os
import subprocess
import sys

import pytest

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def _run(code, **env):
    e = dict(os.environ, **env)
    e["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, cwd=ROOT)


def test_compiling_without_the_mlir_bindings_names_the_jit_extra(tmp_path):
    pytest.importorskip("numba_cuda_mlir", reason="the compile must reach the bindings")
    code = ("import cute_py as cute\n"
            "from cute_py.compiler.specs.args import DeviceArraySpec\n"
            "@cute.kernel\n"
            "def k(a):\n"
            "    pass\n"
            "@cute.jit\n"
            "def f(a):\n"
            "    k(a).launch(grid=1, block=1)\n"
            "try:\n"
            "    cute.compile(f, DeviceArraySpec('float32', (4,)))\n"
            "except cute.CuteError as e:\n"
            "    print(type(e).__name__, e)\n")
    r = _run(code, MLIR_DIALECTS_BINDINGS="none", CUTE_PY_CACHE_DIR=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("MissingExtraError cute_py.compile needs the 'jit' extra")
    assert "pip install 'cute-py[jit]'" in r.stdout


def test_the_strategies_without_hypothesis_name_the_testing_extra():
    code = ("import sys\n"
            "sys.modules['hypothesis'] = None\n"
            "import cute_py.testing as t\n"
            "try:\n"
            "    t.layouts\n"
            "except ImportError as e:\n"
            "    print(type(e).__name__, e)\n")
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert "MissingExtraError cute_py.testing.layouts needs the 'testing' extra" in r.stdout
    assert "pip install 'cute-py[testing]'" in r.stdout


def test_a_broken_module_of_cute_py_is_its_own_error_not_an_install_hint(monkeypatch):
    # an ImportError from cute_py itself (a moved name, a missing module of the package) must not be reported as
    # a missing extra: the install command it would print cannot help
    import cute_py
    from cute_py.errors import MissingExtraError, is_missing_dependency

    monkeypatch.setitem(cute_py._LAZY, "no_such_name", ("core.no_such_module", None))
    with pytest.raises(ModuleNotFoundError) as info:
        cute_py.no_such_name
    assert not isinstance(info.value, MissingExtraError) and "cute_py.core.no_such_module" in str(info.value)
    assert not is_missing_dependency(ImportError("cannot import name 'x'", name="cute_py.core.layout"))
    assert is_missing_dependency(ModuleNotFoundError("No module named 'hypothesis'", name="hypothesis"))
