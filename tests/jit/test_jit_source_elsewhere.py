"""A kernel whose code was compiled under the name of a file that does not hold it (``exec`` of a snippet taken
from a document, a file edited since): the file's lines at the function's line number may not even tokenize.
Compiling then uses the function as Python runs it, without its source (a run-time condition in a Python
statement is a ``TraceError``), and never fails inside the tokenizer."""

import pytest

import cute_py as cute
from cute_py.compiler import TraceError

pytest.importorskip("mlir_dialects.bindings", reason="compiling needs the jit extra")

STRAIGHT = """
import cute_py as cute
from cute_py import arch

@cute.kernel
def k(x):
    t, _, _ = arch.thread_idx()
    x[t] = x[t] + 1.0
"""

BRANCHY = """
import cute_py as cute
from cute_py import arch

@cute.kernel
def k(x):
    t, _, _ = arch.thread_idx()
    if t < 7:
        x[t] = 1.0
"""


@pytest.fixture(params=["x = (\n" * 12, "it's prose, not code\n" * 12, ""], ids=["open-bracket", "apostrophes", "empty"])
def misleading_file(tmp_path, request):
    path = tmp_path / "NOTES.md"
    path.write_text(request.param)
    return str(path)


def _kernel(text, filename):
    ns = {}
    exec(compile(text, filename, "exec"), ns)
    return ns["k"]


def test_a_kernel_whose_file_does_not_hold_it_compiles(misleading_file):
    k = _kernel(STRAIGHT, misleading_file)
    x = cute.DeviceArraySpec("Float32", (32,))

    def host(x):
        k(x).launch(grid=1, block=32)

    ptx = cute.compile(host, x).ptx
    assert "ld.global" in ptx and "st.global" in ptx


def test_a_run_time_condition_without_source_is_a_trace_error(misleading_file):
    k = _kernel(BRANCHY, misleading_file)
    x = cute.DeviceArraySpec("Float32", (32,))

    def host(x):
        k(x).launch(grid=1, block=32)

    with pytest.raises(TraceError):
        cute.compile(host, x)
