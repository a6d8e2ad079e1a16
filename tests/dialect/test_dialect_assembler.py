"""PTX assembly never crashes the caller: the nvJitLink that runs in-process is the pip wheel's (called through
its own handle, whatever other copy the process loaded first) at a version known to be good; with a known-bad one
the PTX goes to ptxas, or to nvJitLink in a child process whose crash is an ``AssemblyError``."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from mlir_dialects import assembler, nvjitlink  # noqa: E402
from mlir_dialects.errors import AssemblyError  # noqa: E402

if assembler.loaded_library() is None:
    pytest.skip("no nvJitLink library here (pip install nvidia-nvjitlink)", allow_module_level=True)

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


def _run_fresh(code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_nvjitlink_that_runs_is_the_wheels_at_the_required_version():
    # a fresh process: the library that assembles must be the wheel's, not whichever the loader finds first
    code = ("import json\n"
            "from mlir_dialects import assembler, pipeline\n"
            f"cubin = pipeline.to_cubin({PTX!r})\n"
            "print(json.dumps({'elf': cubin[:4] == b'\\x7fELF', 'version': assembler.load_nvjitlink()[1],\n"
            "                  'loaded': assembler.loaded_library(), 'wheel': assembler.wheel_library(),\n"
            "                  'uses': assembler.assembler_in_use()}))")
    got = _run_fresh(code)
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
    if assembler.find_ptxas() is None:
        pytest.skip("no ptxas here")
    fresh.setattr(assembler, "_nvjitlink_in_process", lambda *a: pytest.fail("the known-bad nvJitLink ran in-process"))
    with pytest.warns(assembler.AssemblerWarning, match=r"assembling PTX with .*ptxas in a child process: nvJitLink "
                                                        r"13\.0 .*crashes \(SIGSEGV\) on some valid PTX"):
        cubin = assembler.assemble(PTX, "sm_90a")
    assert cubin[:4] == b"\x7fELF"
    assert assembler.assembler_in_use() == "ptxas"


def test_without_ptxas_nvjitlink_assembles_in_a_child_process(fresh):
    _known_bad(fresh)
    fresh.setattr(assembler, "find_ptxas", lambda: None)
    fresh.setattr(assembler, "_nvjitlink_in_process", lambda *a: pytest.fail("the known-bad nvJitLink ran in-process"))
    with pytest.warns(assembler.AssemblerWarning, match="nvJitLink in a child process"):
        cubin = assembler.assemble(PTX, "sm_90a")
    assert cubin[:4] == b"\x7fELF"


def test_a_crash_of_the_child_assembler_is_an_assembly_error_not_the_callers_crash(fresh):
    _known_bad(fresh)
    fresh.setattr(assembler, "find_ptxas", lambda: None)
    fresh.setattr(assembler, "_child_command", lambda src, dst, arch: [
        sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    with pytest.warns(assembler.AssemblerWarning):
        with pytest.raises(AssemblyError, match=r"nvJitLink \(in a child process\) for sm_90a crashed \(SIGSEGV\) "
                                                r"assembling the PTX \(nvJitLink 13\.0"):
            assembler.assemble(PTX, "sm_90a")


def test_ptx_the_fallback_rejects_is_an_assembly_error_with_its_log(fresh):
    _known_bad(fresh)
    fresh.setattr(assembler, "find_ptxas", lambda: None)
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


def test_another_copy_loaded_first_does_not_take_over_the_assembly(tmp_path):
    # another package (torch, a toolkit) may have loaded a different libnvJitLink.so.13 globally before the first
    # assembly: the calls must still go to the library opened here, by its own handle
    wheel = assembler.wheel_library()
    if wheel is None:
        pytest.skip("the nvidia-nvjitlink wheel is not installed here")
    other = tmp_path / "libnvJitLink.so.13"
    os.symlink(os.path.realpath(wheel), other)  # the same file under another name stands for "another copy"
    code = ("import ctypes, json\n"
            f"ctypes.CDLL({str(other)!r}, mode=ctypes.RTLD_GLOBAL)\n"
            "from mlir_dialects import assembler\n"
            f"cubin = assembler.assemble({PTX!r}, 'sm_90a')\n"
            "print(json.dumps({'elf': cubin[:4] == b'\\x7fELF', 'loaded': assembler.loaded_library()}))")
    got = _run_fresh(code)
    assert got["elf"] and os.path.realpath(got["loaded"]) == os.path.realpath(wheel)


def test_ptx_nvjitlink_rejects_in_process_is_an_assembly_error_with_the_result_and_its_log(fresh):
    fresh.setattr(assembler, "_loaded_version", lambda: assembler.MIN_NVJITLINK)
    with pytest.raises(AssemblyError, match=r"nvJitLink could not assemble the PTX for sm_90a: nvJitLink\w+: "
                                            r"ERROR_PTX_COMPILE: .*Unknown modifier '\.bogus'"):
        assembler.assemble(PTX.replace("mov.u32", "mov.bogus"), "sm_90a")


def test_an_option_nvjitlink_does_not_know_names_the_result():
    lib, _ = assembler.load_nvjitlink()
    with pytest.raises(nvjitlink.NvJitLinkError) as e:
        lib.link(PTX.encode(), ["-arch=sm_90a", "-no-such-option"])
    assert e.value.result == "ERROR_UNRECOGNIZED_OPTION" and e.value.call == "nvJitLinkCreate"


def test_a_file_that_is_not_nvjitlink_is_not_taken_for_it(tmp_path, monkeypatch):
    # candidates that fail to open (or lack the API) are skipped, each with its reason; none left is an
    # AssemblyError naming them
    monkeypatch.setattr(nvjitlink, "candidates", lambda: [str(tmp_path / "missing.so"), "libc.so.6"])
    monkeypatch.setitem(assembler._STATE, "library", None)
    with pytest.raises(AssemblyError, match=r"no nvJitLink library could be loaded \(.*missing\.so.*libc\.so\.6: "
                                            r".*nvJitLinkCreate"):
        assembler.load_nvjitlink()


# -- PTX that only a whole-program compile keeps -------------------------------------------------------------

REALLOC_PTX = """
.version 8.0
.target sm_90a
.address_size 64

.visible .entry realloc(.param .u64 out)
.maxntid 384, 1, 1
.minnctapersm 1
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 128;
    @%p1 bra PRODUCER;
    setmaxnreg.inc.sync.aligned.u32 232;
    st.global.u32 [%rd1], %r1;
    ret;
PRODUCER:
    setmaxnreg.dec.sync.aligned.u32 40;
    ret;
}
"""


def _fake_ptxas(directory, release):
    """An executable that answers ``--version`` as a ptxas of ``release`` would (and fails anything else)."""
    path = pathlib.Path(directory) / "ptxas"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n"
                    f"if [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release {release}, V{release}.1'; "
                    "exit 0; fi\nexit 3\n")
    path.chmod(0o755)
    return str(path)


def _tool(name):
    import shutil

    for found in (shutil.which(name), *(os.path.join(r, "bin", name) for r in
                                        (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")
                                        if r)):
        if found and os.path.isfile(found) and os.access(found, os.X_OK):
            return found
    return None


def test_setmaxnreg_ptx_goes_to_a_whole_program_ptxas_and_other_ptx_to_nvjitlink(fresh):
    fresh.setattr(assembler, "_loaded_version", lambda: assembler.MIN_NVJITLINK)
    fresh.setattr(assembler, "find_ptxas", lambda: "/opt/ptxas")
    fresh.setattr(assembler, "ptxas_version", lambda path: (13, 0))
    calls = []
    fresh.setattr(assembler, "_ptxas", lambda ptxas, data, arch: calls.append((ptxas, arch)) or b"ptxas")
    fresh.setattr(assembler, "_nvjitlink_in_process", lambda data, arch: b"nvjitlink")
    assert assembler.assemble(REALLOC_PTX, "sm_90a") == b"ptxas" and calls == [("/opt/ptxas", "sm_90a")]
    assert assembler.assembler_for(REALLOC_PTX) == "ptxas"
    assert assembler.assemble(PTX, "sm_90a") == b"nvjitlink" and len(calls) == 1
    assert assembler.assembler_for(PTX) == "nvjitlink"
    # the instruction, not the word: a kernel named after it is ordinary PTX
    assert assembler.assemble(PTX.replace("probe", "setmaxnreg_probe"), "sm_90a") == b"nvjitlink"


@pytest.mark.parametrize("release", [None, "11.8"])
def test_without_a_usable_ptxas_setmaxnreg_ptx_is_assembled_with_a_warning_naming_what_is_dropped(
        fresh, tmp_path, release):
    fresh.setattr(assembler, "_loaded_version", lambda: assembler.MIN_NVJITLINK)
    fake = None if release is None else _fake_ptxas(tmp_path, release)
    fresh.setattr(assembler, "find_ptxas", lambda: fake)
    fresh.setattr(assembler, "_ptxas", lambda *a: pytest.fail("a ptxas too old or missing ran"))
    why = "no ptxas was found" if fake is None else rf"{re.escape(fake)} is release 11\.8; ptxas >= 12\.0 is needed"
    with pytest.warns(assembler.AssemblerWarning, match=rf"the PTX uses setmaxnreg, which only a whole-program ptxas "
                                                        rf"keeps: {why}.*ptxas info C7504"):
        cubin = assembler.assemble(REALLOC_PTX, "sm_90a")
    assert cubin[:4] == b"\x7fELF"
    assert assembler.assembler_for(REALLOC_PTX) == "nvjitlink"


def test_the_ptxas_of_the_pip_wheel_comes_first_and_its_version_is_read(fresh, tmp_path):
    wheel = _fake_ptxas(tmp_path / "nvidia" / "cu13" / "bin", "13.5")
    fresh.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert assembler.find_ptxas() == wheel
    assert assembler.ptxas_version(wheel) == (13, 5)
    (tmp_path / "nvidia" / "cu13" / "bin" / "ptxas").chmod(0o644)  # not executable: not a ptxas
    assert assembler.find_ptxas() != wheel
    assert assembler.ptxas_version(str(tmp_path / "missing")) is None
    # entries of sys.path that are not strings are skipped, as the import system skips them
    fresh.setattr(sys, "path", [b"/bytes", None, 3, str(tmp_path), *sys.path])
    (tmp_path / "nvidia" / "cu13" / "bin" / "ptxas").chmod(0o755)
    assert assembler.find_ptxas() == wheel and assembler.wheel_library() == nvjitlink.wheel_library()


def test_the_cache_fingerprint_follows_the_ptxas(fresh, tmp_path):
    from cute_py.compiler.cache import store as cache

    fresh.setattr(cache, "_FINGERPRINT", [])
    before = cache.library_fingerprint()
    _fake_ptxas(tmp_path / "nvidia" / "cu13" / "bin", "13.5")
    fresh.setattr(sys, "path", [str(tmp_path), *sys.path])
    fresh.setattr(cache, "_FINGERPRINT", [])
    assert cache.library_fingerprint() != before


def test_a_whole_program_ptxas_keeps_setmaxnreg_where_nvjitlink_drops_it(tmp_path):
    ptxas, nvdisasm = assembler.find_ptxas(), _tool("nvdisasm")
    if ptxas is None or nvdisasm is None or (assembler.ptxas_version(ptxas) or (0, 0)) < assembler.MIN_PTXAS:
        pytest.skip("needs ptxas >= 12.0 and nvdisasm (a CUDA toolkit, or pip nvidia-cuda-nvcc and nvidia-cuda-nvdisasm)")

    def sass(cubin):
        path = tmp_path / "k.cubin"
        path.write_bytes(cubin)
        return subprocess.run([nvdisasm, str(path)], capture_output=True, text=True, check=True).stdout

    assert assembler.assembler_for(REALLOC_PTX) == "ptxas"
    assert sass(assembler.assemble(REALLOC_PTX, "sm_90a")).count("USETMAXREG") == 2
    # the reason for the rule: nvJitLink's separate compilation drops both
    assert sass(assembler._nvjitlink_in_process(REALLOC_PTX.encode(), "sm_90a")).count("USETMAXREG") == 0


def test_ptxas_keeps_the_ptx_lines_in_the_cubin():
    ptxas = assembler.find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas here")
    lined = PTX.replace(".address_size 64\n", ".address_size 64\n.file 1 \"probe.py\"\n").replace(
        "    st.global.u32", "    .loc 1 7 0\n    st.global.u32")
    assert b".nv_debug_line_sass" in assembler._ptxas(ptxas, lined.encode(), "sm_90a")
    assert b".nv_debug_line_sass" not in assembler._ptxas(ptxas, PTX.encode(), "sm_90a")


def test_a_whole_program_ptxas_that_fails_leaves_the_ptx_to_nvjitlink_with_a_warning_naming_its_error(fresh):
    # e.g. a ptxas older than the PTX ISA of the kernel: the kernel still assembles, without the reallocation
    fresh.setattr(assembler, "_loaded_version", lambda: assembler.MIN_NVJITLINK)
    fresh.setattr(assembler, "find_ptxas", lambda: "/opt/ptxas")
    fresh.setattr(assembler, "ptxas_version", lambda path: (12, 0))

    def old_ptxas(ptxas, data, arch):
        raise AssemblyError("ptxas (/opt/ptxas) for sm_90a could not assemble the PTX: Unsupported .version 8.6")

    fresh.setattr(assembler, "_ptxas", old_ptxas)
    with pytest.warns(assembler.AssemblerWarning, match=r"the PTX uses setmaxnreg, which only a whole-program ptxas "
                                                        r"keeps: ptxas \(/opt/ptxas\) .*Unsupported \.version 8\.6"):
        cubin = assembler.assemble(REALLOC_PTX, "sm_90a")
    assert cubin[:4] == b"\x7fELF"
    # PTX that neither assembles is an error
    fresh.setattr(assembler, "_STATE", dict(assembler._STATE, warned=set()))
    with pytest.warns(assembler.AssemblerWarning), pytest.raises(AssemblyError, match="nvJitLink could not assemble"):
        assembler.assemble(REALLOC_PTX.replace("mov.u32", "mov.bogus"), "sm_90a")
