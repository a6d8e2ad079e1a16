"""Shared by JIT tests: checking that a TraceError names the user's file and the kernel line that caused it."""

import inspect

from cute_py.compiler import TraceError
from cute_py.errors import StaticTraceError


def kernel_line(kernel, text):
    """The file line of the (single) source line of ``kernel`` (a ``@cute.kernel``) that contains ``text``."""
    lines, first = inspect.getsourcelines(kernel.fn)
    hits = [first + i for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, hits
    return hits[0]


def assert_trace_error(excinfo, kernel, text, fragment):
    """The error is a TraceError whose message starts with the kernel's file and the line containing ``text``,
    and contains ``fragment``."""
    assert type(excinfo.value) in (TraceError, StaticTraceError)
    msg = str(excinfo.value)
    path = inspect.getsourcefile(kernel.fn)
    assert msg.startswith(f"{path}:{kernel_line(kernel, text)}: "), msg
    assert fragment in msg, msg
