"""The cubin reader of the register tests (``_cubin_report``) reads what ptxas itself reports of the same cubin:
registers and stack frame of each function, for kernels with and without spilled registers."""

import re
import subprocess

import pytest

import cute_py as cute
import examples as ex
from mlir_dialects import assembler
from _cubin_report import cubin_resources

F = cute.compiler.DeviceArraySpec


def _ptxas_cubin(ptx, tmp_path):
    """``(cubin, {function: (registers, stack frame bytes)} as ptxas -v reports them)`` of one ptxas run."""
    out = tmp_path / "k.cubin"
    r = subprocess.run([assembler.find_ptxas(), "-arch=sm_90a", "-v", "-o", str(out), "-"], input=ptx,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    said = {}
    for name, body in re.findall(r"Function properties for (\S+)\n(.*?)(?=Function properties for|\Z)", r.stderr,
                                 re.S):
        frame = int(re.search(r"(\d+) bytes stack frame", body).group(1))
        regs = re.search(r"Used (\d+) registers", body)
        said[name] = (int(regs.group(1)) if regs else None, frame)
    return out.read_bytes(), said


@pytest.mark.skipif(assembler.find_ptxas() is None, reason="no ptxas to compare with")
@pytest.mark.parametrize("bound", [False, True])
def test_the_cubin_reader_agrees_with_ptxas(bound, tmp_path):
    rows = F("BFloat16", (4, 131072))
    ptx = cute.compile(ex.softmax_forward, rows, rows).ptx
    if bound:  # five CTAs of 128 threads an SM: at most 102 registers, where this kernel spills
        ptx, count = re.subn(r"(\.maxntid 128, 1, 1)", r"\1\n.minnctapersm 5", ptx)
        assert count == 1
    cubin, said = _ptxas_cubin(ptx, tmp_path)
    got = cubin_resources(cubin)
    kernel = "softmax_forward_kernel_0"
    assert got[kernel] == said[kernel] and 0 < got[kernel][0] <= 255
    for name, (regs, frame) in said.items():
        assert got[name][1] == frame and (regs is None or got[name][0] == regs)


def test_the_cubin_reader_refuses_what_is_no_cubin():
    with pytest.raises(ValueError, match="ELF64"):
        cubin_resources(b"\x7fELF\x01" + bytes(64))
