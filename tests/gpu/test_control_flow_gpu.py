"""On a Hopper GPU: random kernels of plain Python control flow (``if``/``elif``/``else``, ``for``, ``while``,
``break``, ``continue``, ``return``, boolean operators, register-fragment writes; see ``tests/jit/_random_programs``)
compute, thread by thread for 64 run-time inputs, the values the same source computes as Python: each thread
appends what it reports to its row of a poisoned output, and every element of the output is checked (the reported
values, then the untouched poison). The PTX is built and assembled first, everywhere."""

import sys
from pathlib import Path

import pytest

try:
    import mlir_dialects.bindings  # noqa: F401
except Exception as e:  # not installed, or no usable bindings
    pytest.skip(f"the JIT needs the MLIR bindings (numba-cuda-mlir==0.6.0): {e}", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "jit"))

import cute_py as cute  # noqa: E402
from cute_py.compiler import DeviceArraySpec  # noqa: E402
from _random_programs import load_module, make, run_python  # noqa: E402
from _tma_copy_check import hopper_torch  # noqa: E402

pytestmark = pytest.mark.gpu
THREADS = 64
WIDTH = 1024  # values one thread may report
POISON = -7
SEEDS = range(1000, 1016)


def device_source(source):
    """The random kernel as a per-thread kernel: ``n = ns[tid]``, each report appended to row ``tid`` of ``out``."""
    out = []
    for line in source.splitlines():
        stripped = line.lstrip()
        indent = line[:len(line) - len(stripped)]
        if stripped == "def kernel(n):":
            out += ["def kernel(ns, out):", "    tid, _, _ = arch.thread_idx()", "    n = ns[tid]", "    pos = 0"]
        elif stripped.startswith("bar = "):
            continue
        elif stripped.startswith("arch.mbarrier_init(bar, "):
            value = stripped[len("arch.mbarrier_init(bar, "):-1]
            out += [f"{indent}out[tid, pos] = {value}", f"{indent}pos = pos + 1"]
        else:
            out.append(line)
    out += ["", "", "@cute.jit", "def host(ns, out):", f"    kernel(ns, out).launch(grid=1, block={THREADS})", ""]
    return "\n".join(out)


def _load(tmp_path, seed):
    source = make(seed)
    module = load_module(tmp_path / f"random_device_kernel_{seed}.py", device_source(source),
                         f"_random_device_kernel_{seed}")
    return source, module.host


@pytest.mark.parametrize("seed", SEEDS)
def test_random_control_flow_kernels_compute_what_python_computes(tmp_path, seed, assemble_ptx):
    source, host = _load(tmp_path, seed)
    c = cute.compile(host, DeviceArraySpec("Int32", (THREADS,)), DeviceArraySpec("Int32", (THREADS, WIDTH)))
    assert assemble_ptx(c.ptx)[:4] == b"\x7fELF"
    torch = hopper_torch()
    ns = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] + [17 * k + 3 for k in range(THREADS - 16)]
    expected = [run_python(source, n) for n in ns]
    if max(map(len, expected)) > WIDTH:
        pytest.skip(f"the program reports more than {WIDTH} values for some input")
    ns_t = torch.tensor(ns, dtype=torch.int32, device="cuda")
    out = torch.full((THREADS, WIDTH), POISON, dtype=torch.int32, device="cuda")
    c(ns_t, out)
    torch.cuda.synchronize()
    got = out.cpu().tolist()
    for n, row, want in zip(ns, got, expected):
        assert row == want + [POISON] * (WIDTH - len(want)), f"n={n}\n{source}"
