"""Hypothesis profiles (``ci``: deterministic, bounded, selected by CI=true; ``dev``: longer) and shared fixtures."""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=400, deadline=None)
settings.register_profile("default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# compiled kernels of the test run go to a throwaway cache, not the user's (tests/jit uses one per test),
# removed when the run ends
os.environ["CUTE_PY_CACHE_DIR"] = tempfile.mkdtemp(prefix="cute_py_test_cache_")
atexit.register(shutil.rmtree, os.environ["CUTE_PY_CACHE_DIR"], ignore_errors=True)

if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
elif os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")
else:
    settings.load_profile("default")


def _filecheck(text, checks):
    with tempfile.NamedTemporaryFile("w", suffix=".check", delete=False) as f:
        f.write("\n".join(checks) + "\n")
        name = f.name
    try:
        r = subprocess.run([sys.executable, "-m", "filecheck", name], input=text, capture_output=True, text=True)
    finally:
        os.unlink(name)
    assert r.returncode == 0, f"FileCheck failed:\n{r.stdout}{r.stderr}\n--- input ---\n{text}"


@pytest.fixture
def filecheck():
    """``filecheck(text, check_lines)``: the ``filecheck`` package's FileCheck, asserted."""
    pytest.importorskip("filecheck", reason="FileCheck checks need the filecheck package (pip install filecheck)")
    return _filecheck


@pytest.fixture
def assemble_ptx():
    """``assemble_ptx(ptx)``: the sm_90a cubin nvJitLink makes of ``ptx`` (skips without nvJitLink)."""
    pytest.importorskip("cuda.bindings.nvjitlink", reason="assembly needs cuda-bindings and nvidia-nvjitlink")
    from mlir_dialects.pipeline import to_cubin

    return lambda ptx: to_cubin(ptx, "sm_90a")
