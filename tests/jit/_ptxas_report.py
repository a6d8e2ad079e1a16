"""What ptxas says of a kernel's PTX assembled for sm_90a: its performance notes (``C75xx``: C7510 a call splits
the WGMMA pipeline, C7514/C7520 every WGMMA serialised, C7517 a wait it injected, C7519 a fence it added) and
each function's spill bytes. ``None`` when no ptxas is installed (a CUDA toolkit's, or pip nvidia-cuda-nvcc)."""

import re
import subprocess

from mlir_dialects import assembler


def _verbose(ptx):
    """ptxas ``-v``'s report on ``ptx`` (sm_90a), or ``None`` without a ptxas."""
    ptxas = assembler.find_ptxas()
    if ptxas is None:
        return None
    r = subprocess.run([ptxas, "-arch=sm_90a", "-v", "-o", "/dev/null", "-"], input=ptx, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stderr


def ptxas_report(ptx):
    """``(notes, spills)``: the C75xx codes ptxas printed, and ``(store bytes, load bytes)`` of spills per function;
    or ``None`` without a ptxas."""
    err = _verbose(ptx)
    if err is None:
        return None
    spills = [tuple(map(int, m)) for m in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", err)]
    return re.findall(r"\((C75\d\d)\)", err), spills


def ptxas_notes(ptx):
    """The C75xx codes of :func:`ptxas_report`, or ``None`` without a ptxas."""
    report = ptxas_report(ptx)
    return None if report is None else report[0]


def ptxas_registers(ptx):
    """The most registers a thread of any function of ``ptx`` uses (ptxas ``-v``), or ``None`` without a ptxas."""
    err = _verbose(ptx)
    return None if err is None else max(int(v) for v in re.findall(r"Used (\d+) registers", err))
