"""The compile cache's library fingerprint covers everything outside the user's code that makes the PTX and the
cubin: every file the packages cute_py and mlir_dialects ship (the algebra, the copy ops, the compiler, the
dialect and its lowering rules, package data), the versions of numba-cuda-mlir, cuda-bindings and nvJitLink, and
the assembler. An edit anywhere is a new key: a kernel is compiled again, never served from an older library.

The tests run on a temporary copy of both packages, in child processes importing that copy, so that editing a
file touches nothing of the checkout."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("cute_py", "mlir_dialects")


def _env(*front, **extra):
    path = os.pathsep.join(str(p) for p in (*front, os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, **extra)


def _python(code, cwd, env):
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def copy_root(tmp_path_factory):
    """A copy of both packages (without bytecode) and of the example kernels, with a C source as package data."""
    root = tmp_path_factory.mktemp("library")
    for name in (*PACKAGES, "examples"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "cute_py" / "compiler" / "runtime" / "helper_data.c").write_text("int answer(void) { return 42; }\n")
    return root


_LAW = """
import importlib.util, json, os, sys
from cute_py.compiler.runtime import cache

roots = [importlib.util.find_spec(p).submodule_search_locations[0] for p in ("cute_py", "mlir_dialects")]
assert all(r.startswith(os.getcwd()) for r in roots), roots   # the copy, not the checkout
shipped = sorted(os.path.join(d, f) for r in roots for d, _, fs in os.walk(r) if "__pycache__" not in d
                 for f in fs if not f.endswith(".pyc"))

def fingerprint():
    cache._FINGERPRINT.clear()
    return cache.library_fingerprint()

missed = []
for path in shipped:
    st = os.stat(path)
    data = open(path, "rb").read()
    before = fingerprint()
    # the hardest edit to see: one byte changed, same size, the modification time put back
    with open(path, "wb") as f:
        f.write(data[:-1] + (b"\\n" if data[-1:] != b"\\n" else b" "))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    if fingerprint() == before:
        missed.append(os.path.relpath(path, os.getcwd()) + " (an edit)")
    with open(path, "wb") as f:
        f.write(data)
    before = fingerprint()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))   # touched
    if fingerprint() == before:
        missed.append(os.path.relpath(path, os.getcwd()) + " (touched)")
print(json.dumps({"files": len(shipped), "missed": missed}))
"""


def test_an_edit_of_any_file_the_packages_ship_changes_the_fingerprint(copy_root):
    """The law: for every file under the two packages' directories (found here by walking them, not by the cache's
    own list), an edit that keeps its size and modification time, and a touch, each change the fingerprint."""
    got = _python(_LAW, copy_root, _env(copy_root))
    assert got["files"] > 150
    assert got["missed"] == [], f"{len(got['missed'])} of {got['files']} files are not in the fingerprint"


_KEY = """
import json
from cute_py.compiler.runtime import cache
print(json.dumps({"fingerprint": cache.library_fingerprint()}))
"""


@pytest.mark.parametrize("where", ["cute_py/core/layout.py", "cute_py/nvgpu/copy_ops.py", "cute_py/compiler/emit.py",
                                   "mlir_dialects/ops/cpasync.py", "mlir_dialects/pipeline.py",
                                   "cute_py/compiler/runtime/helper_data.c", "cute_py/core/new_module.py"])
def test_an_edit_in_each_layer_is_a_new_key_in_a_new_process(copy_root, where):
    before = _python(_KEY, copy_root, _env(copy_root))["fingerprint"]
    path = copy_root / where
    old = path.read_bytes() if path.exists() else None
    try:
        path.write_bytes((old or b"") + b"\n# an edit\n")
        assert _python(_KEY, copy_root, _env(copy_root))["fingerprint"] != before
    finally:
        if old is None:
            path.unlink()
        else:
            path.write_bytes(old)


_COMPILE = """
import json, cute_py as cute
from examples import tma_copy
a = cute.compiler.DeviceArraySpec("Float32", (256, 512))
cute.compile(tma_copy, a, a, (128, 64), "none")
print(json.dumps(cute.compiler.stats))
"""


@pytest.mark.parametrize("where", ["cute_py/core/layout.py", "cute_py/nvgpu/tma.py", "mlir_dialects/ops/tma.py"])
def test_an_edit_of_the_library_compiles_the_kernel_again(copy_root, tmp_path, where):
    """Through the disk cache: the same kernel after an edit of the algebra, of the copy ops or of the lowering to
    PTX is compiled again (the old entry was made by another library)."""
    env = _env(copy_root, CUTE_PY_CACHE_DIR=str(tmp_path / "cache"))
    assert _python(_COMPILE, copy_root, env)["compiles"] == 1
    assert _python(_COMPILE, copy_root, env)["disk_hits"] == 1
    path = copy_root / where
    old = path.read_bytes()
    try:
        path.write_bytes(old + b"\n# an edit\n")
        again = _python(_COMPILE, copy_root, env)
    finally:
        path.write_bytes(old)
    assert again["compiles"] == 1 and again["disk_hits"] == 0


def test_the_fallback_assembler_is_another_key(tmp_path):
    """A cubin assembled by nvJitLink is not served where MLIR_DIALECTS_ASSEMBLER=ptxas asks for ptxas (nor the
    reverse); the choice is read at every compile, not once per process."""
    if shutil.which("ptxas") is None:
        from mlir_dialects.assembler import find_ptxas

        if find_ptxas() is None:
            pytest.skip("no ptxas here")
    env = _env(ROOT, CUTE_PY_CACHE_DIR=str(tmp_path / "cache"))
    assert _python(_COMPILE, ROOT, env)["compiles"] == 1
    assert _python(_COMPILE, ROOT, dict(env, MLIR_DIALECTS_ASSEMBLER="ptxas"))["compiles"] == 1
    assert _python(_COMPILE, ROOT, dict(env, MLIR_DIALECTS_ASSEMBLER="ptxas"))["disk_hits"] == 1
    assert _python(_COMPILE, ROOT, env)["disk_hits"] == 1


def test_the_forced_assembler_changes_the_fingerprint_within_a_process(monkeypatch):
    from cute_py.compiler.runtime import cache

    monkeypatch.delenv("MLIR_DIALECTS_ASSEMBLER", raising=False)
    auto = cache.library_fingerprint()
    monkeypatch.setenv("MLIR_DIALECTS_ASSEMBLER", "auto")
    assert cache.library_fingerprint() == auto
    monkeypatch.setenv("MLIR_DIALECTS_ASSEMBLER", "ptxas")
    forced = cache.library_fingerprint()
    monkeypatch.setenv("MLIR_DIALECTS_ASSEMBLER", "bogus")
    assert len({auto, forced, cache.library_fingerprint()}) == 3


_SITE = """
import json, os, sys
from cute_py.compiler.runtime import cache
site = sys.argv[1] if len(sys.argv) > 1 else os.environ["FAKE_SITE"]
out = {}
for dist in ("numba_cuda_mlir-0.6", "cuda_bindings-13.5", "nvidia_nvjitlink-13.5"):
    cache._FINGERPRINT.clear()
    before = cache.library_fingerprint()
    os.rename(os.path.join(site, dist + ".0.dist-info"), os.path.join(site, dist + ".1.dist-info"))
    cache._FINGERPRINT.clear()
    out[dist] = cache.library_fingerprint() != before
print(json.dumps(out))
"""


def test_another_release_of_the_bindings_cuda_bindings_or_nvjitlink_changes_the_fingerprint(copy_root, tmp_path):
    """An upgrade that leaves the packages' ``__init__`` files as they were (only the distribution's version
    changes) is still a new key."""
    site = tmp_path / "site"
    for package in ("numba_cuda_mlir", "cuda/bindings"):
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text("")
    for dist in ("numba_cuda_mlir-0.6.0", "cuda_bindings-13.5.0", "nvidia_nvjitlink-13.5.0"):
        (site / f"{dist}.dist-info").mkdir()
        (site / f"{dist}.dist-info" / "METADATA").write_text(f"Name: {dist.partition('-')[0]}\n")
    got = _python(_SITE, copy_root, _env(site, copy_root, FAKE_SITE=str(site)))
    assert got == {"numba_cuda_mlir-0.6": True, "cuda_bindings-13.5": True, "nvidia_nvjitlink-13.5": True}


def test_the_fingerprint_is_computed_once_per_process_and_cheaply(monkeypatch):
    """Once per process (the first compile), from the files' status: no file of the packages is read."""
    import builtins
    import time

    from cute_py.compiler.runtime import cache

    monkeypatch.setattr(cache, "_FINGERPRINT", [])
    opened = []
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: opened.append(str(f)) or real_open(f, *a, **k))
    t = time.perf_counter()
    first = cache.library_fingerprint()
    took = time.perf_counter() - t
    monkeypatch.setattr(builtins, "open", real_open)
    assert not [f for f in opened if f.startswith(tuple(cache.library_roots()))]
    assert took < 0.25  # about 2 ms: a generous bound for a loaded machine
    monkeypatch.setattr(cache, "library_files", lambda: pytest.fail("the files were walked again"))
    assert cache.library_fingerprint() == first
