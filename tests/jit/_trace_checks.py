"""Shared by JIT tests: checking that a TraceError names the user's file and the kernel line that caused it."""

import inspect
import re

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


def count_matches(text, pattern):
    """How many times the regular expression ``pattern`` matches in ``text``."""
    return len(re.findall(pattern, text))


def kernel_body(mlir):
    """The traced module's text after the kernel's ``nvvm.kernel`` attributes (its body)."""
    return re.split(r"attributes \{nvvm\.kernel[^}]*\}", mlir, maxsplit=1)[1]


def ptx_body(ptx):
    """The PTX after its ``.entry`` (the kernel)."""
    return ptx.split(".entry", 1)[1]


def compile_one(kernel, *specs, block=1):
    """The compile of a host function launching ``kernel`` once (one CTA of ``block`` threads) on arrays of ``specs``,
    each a ``(dtype, shape)``."""
    import cute_py as cute
    from cute_py.compiler import DeviceArraySpec

    @cute.jit
    def host(*args):
        kernel(*args).launch(grid=1, block=block)

    return cute.compile(host, *[DeviceArraySpec(d, s) for d, s in specs])
