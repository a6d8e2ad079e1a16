"""PTX assembly never crashes the caller: the nvJitLink that runs in-process is the pip wheel's (loaded before
cuda-bindings looks for one) at a version known to be good; with a known-bad one the PTX goes to ptxas, or to
nvJitLink in a child process whose crash is an ``AssemblyError``."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("cuda.bindings.nvjitlink", reason="assembly needs cuda-bindings and nvidia-nvjitlink")

from mlir_dialects import assembler  # noqa: E402
from mlir_dialects.errors import AssemblyError  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]

PTX = """
.version 8.0
.target sm_90a
.address_size 64

.visible .entry probe(.param .u64 out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


@pytest.fixture
def fresh(monkeypatch):
    """The assembler's per-process choice and warnings, reset for the test (and restored after it)."""
    monkeypatch.setitem(assembler._STATE, "choice", None)
    monkeypatch.setitem(assembler._STATE, "warned", set())
    return monkeypatch


def _known_bad(monkeypatch):
    monkeypatch.setattr(assembler, "_loaded_version", lambda: (13, 0))


def test_the_nvjitlink_that_runs_is_the_wheels_at_the_required_version():
    # a fresh process: the library cuda-bindings ends up with must be the wheel's, not whichever it finds first
    code = ("import json\n"
            "from mlir_dialects import assembler, pipeline\n"
            f"cubin = pipeline.to_cubin({PTX!r})\n"
            "print(json.dumps({'elf': cubin[:4] == b'\\x7fELF', 'version': assembler.load_nvjitlink()[1],\n"
            "                  'loaded': assembler.loaded_library(), 'wheel': assembler.wheel_library(),\n"
            "                  'uses': assembler.assembler_in_use()}))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["elf"]
    if got["wheel"] is None:
        pytest.skip("the nvidia-nvjitlink wheel is not installed here")
    assert os.path.realpath(got["loaded"]) == os.path.realpath(got["wheel"])
    if tuple(got["version"]) >= assembler.MIN_NVJITLINK:
        assert got["uses"] == "nvjitlink"
    else:  # an older wheel (another package's pin): never run in-process
        assert got["uses"] in ("ptxas", "nvjitlink-subprocess"), got


def test_a_known_bad_nvjitlink_is_not_run_in_process_and_ptxas_assembles_with_a_warning(fresh):
    _known_bad(fresh)
    if assembler._find_ptxas() is None:
        pytest.skip("no ptxas here")
    fresh.setattr(assembler, "_nvjitlink_in_process", lambda *a: pytest.fail("the known-bad nvJitLink ran in-process"))
    with pytest.warns(assembler.AssemblerWarning, match=r"assembling PTX with .*ptxas in a child process: nvJitLink "
                                                        r"13\.0 .*crashes \(SIGSEGV\) on some valid PTX"):
        cubin = assembler.assemble(PTX, "sm_90a")
    assert cubin[:4] == b"\x7fELF"
    assert assembler.assembler_in_use() == "ptxas"


def test_without_ptxas_nvjitlink_assembles_in_a_child_process(fresh):
    _known_bad(fresh)
    fresh.setattr(assembler, "_find_ptxas", lambda: None)
    fresh.setattr(assembler, "_nvjitlink_in_process", lambda *a: pytest.fail("the known-bad nvJitLink ran in-process"))
    with pytest.warns(assembler.AssemblerWarning, match="nvJitLink in a child process"):
        cubin = assembler.assemble(PTX, "sm_90a")
    assert cubin[:4] == b"\x7fELF"


def test_a_crash_of_the_child_assembler_is_an_assembly_error_not_the_callers_crash(fresh):
    _known_bad(fresh)
    fresh.setattr(assembler, "_find_ptxas", lambda: None)
    fresh.setattr(assembler, "_child_command", lambda src, dst, arch: [
        sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    with pytest.warns(assembler.AssemblerWarning):
        with pytest.raises(AssemblyError, match=r"nvJitLink \(in a child process\) for sm_90a crashed \(SIGSEGV\) "
                                                r"assembling the PTX \(nvJitLink 13\.0"):
            assembler.assemble(PTX, "sm_90a")


def test_ptx_the_fallback_rejects_is_an_assembly_error_with_its_log(fresh):
    _known_bad(fresh)
    fresh.setattr(assembler, "_find_ptxas", lambda: None)
    with pytest.warns(assembler.AssemblerWarning):
        with pytest.raises(AssemblyError, match="could not assemble the PTX"):
            assembler.assemble(PTX.replace("mov.u32", "mov.bogus"), "sm_90a")


def test_a_good_version_assembles_in_process(fresh):
    fresh.setattr(assembler, "_loaded_version", lambda: assembler.MIN_NVJITLINK)
    assert assembler.assembler_in_use() == "nvjitlink"
    assert assembler.assemble(PTX, "sm_90a")[:4] == b"\x7fELF"


def test_the_package_requires_the_nvjitlink_the_assembler_requires():
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    need = f"nvidia-nvjitlink>={assembler.MIN_NVJITLINK[0]}.{assembler.MIN_NVJITLINK[1]}"
    for extra in ("jit", "test"):
        (req,) = [r for r in project["optional-dependencies"][extra] if r.startswith("nvidia-nvjitlink")]
        assert req.startswith(need), (extra, req)
