"""``cute.printf``: printing from a kernel, as the CuTe DSL's ``cute.printf("x = {}, shape = {}", x, shape)``.

Each ``{}`` of the format takes the next argument (``{{`` and ``}}`` are literal braces). A static argument (a
Python number, string, tuple of them, a layout...) is printed at trace time, into the format itself; a run-time
value is printed by the device: integers in decimal, Booleans as 0 or 1,
floats with the digits that identify them (``%.9g`` up to Float32, ``%.17g`` for Float64); tuples print as
``(a, b)`` with their run-time elements filled in by the device. A newline ends each call.

Every thread that runs the call prints (guard it with a condition to print once); the output reaches the host's
standard output at the next synchronisation (``torch.cuda.synchronize()``...), through the driver's ``vprintf``.
At trace time, Python's own ``print`` shows a run-time value as ``?``.
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import TraceError
from ...core.int_tuple import product_each
from ...tensor.dtypes import Float64, Int64, Uint64
from ...tensor.text import values_text
from ..emit.printf import double_argument, vprintf
from ..lang.values import TracedBool, TracedFloat
from ..lang.traced_int import TracedInt

__all__ = ["printf", "print_tensor", "HOST_SINKS"]

MAX_PRINTED = 4096  # elements one print_tensor may print from a kernel
# where host printf calls go while a jit function's host code is traced (the host trace pushes its list)
HOST_SINKS: list[list[Any]] = []
# a conversion of a C format: each becomes a placeholder (the value is printed as cute_py prints it)
_C_SPEC = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t)?[diouxXfFeEgGcs]")


def _pieces(fmt: str) -> list[tuple[str, bool]]:
    """``[(literal text, a placeholder follows)]`` of a ``{}`` format."""
    out, text, k = [], [], 0
    while k < len(fmt):
        ch = fmt[k]
        if fmt.startswith("{{", k) or fmt.startswith("}}", k):
            text.append(ch)
            k += 2
        elif fmt.startswith("{}", k):
            out.append(("".join(text), True))
            text = []
            k += 2
        elif ch in "{}":
            raise TraceError(f"cute.printf takes '{{}}' placeholders (and '{{{{', '}}}}' for braces); the format "
                             f"{fmt!r} has a lone {ch!r} at {k}")
        else:
            text.append(ch)
            k += 1
    out.append(("".join(text), False))
    return out


def _render(x: Any, c_format: list[str], values: list[Any]) -> None:
    """Append ``x``'s C format to ``c_format`` and its run-time MLIR values to ``values``."""
    if isinstance(x, (tuple, list)):
        c_format.append("(")
        for k, e in enumerate(x):
            if k:
                c_format.append(", ")
            _render(e, c_format, values)
        c_format.append(",)" if len(x) == 1 and isinstance(x, tuple) else ")")
        return
    if isinstance(x, (TracedBool, TracedInt)):  # every argument is 64 bits
        unsigned = isinstance(x, TracedInt) and not x.dtype.signed
        c_format.append("%llu" if unsigned else "%lld")
        values.append(x.to(Uint64 if unsigned else Int64).ir)
    elif isinstance(x, TracedFloat):
        c_format.append("%.17g" if x.dtype is Float64 else "%.9g")
        values.append(double_argument(x.to(Float64).ir))
    else:  # known at trace time: printed into the format
        c_format.append(str(x).replace("%", "%%"))


def printf(fmt: str, *args: Any) -> None:
    """Print ``fmt`` with each ``{}`` replaced by the next of ``args`` (run-time values by the device), and a
    newline, from every thread that runs it. As in the DSL, a C format (``"%d -> %d"``) takes each conversion
    as a placeholder (the value printed as cute_py prints it), and ``printf(x, ...)`` prints the values.

    In a jit function's host code (no kernel being traced) it is a print of each call, as the DSL's host code
    prints at run time: recorded while tracing, then printed when the function is called, its run-time extents
    and scalars (``?`` while tracing) replaced by the call's values (see :func:`~cute_py.compiler.specs.host_scalars.host_print`)."""
    if not isinstance(fmt, str):  # printf(value, ...): the values, as the DSL prints them
        fmt, args = " ".join(["{}"] * (1 + len(args))), (fmt,) + args
    elif "{}" not in fmt and _C_SPEC.search(fmt):  # a C format ("%d -> %d"): each conversion a placeholder
        fmt = _C_SPEC.sub("{}", fmt.replace("{", "{{").replace("}", "}}")).replace("%%", "%")
    pieces = _pieces(fmt)
    wanted = sum(1 for _, placeholder in pieces if placeholder)
    if wanted != len(args):
        raise TraceError(f"cute.printf: the format {fmt!r} has {wanted} placeholders, got {len(args)} arguments")
    from ..lang.builder import active

    if active() is None and HOST_SINKS:  # the host code of a jit function: printed at each call
        HOST_SINKS[-1].append((pieces, args))
        return
    c_format, values, rest = [], [], iter(args)
    for text, placeholder in pieces:
        c_format.append(text.replace("%", "%%"))
        if placeholder:
            _render(next(rest), c_format, values)
    c_format.append("\n")
    vprintf("".join(c_format), values)


def _cell(x: Any, values: list[Any]) -> str:
    """The C format of one element of a tensor printed by ``print_tensor`` (its run-time values appended)."""
    if isinstance(x, (tuple, list)):
        return "(" + ",".join(_cell(e, values) for e in x) + ")"
    if isinstance(x, TracedFloat):
        values.append(double_argument(x.to(Float64).ir))
        return "% f"
    if isinstance(x, (TracedBool, TracedInt)):
        parts: list[str] = []
        _render(x, parts, values)
        return " " + parts[0] if isinstance(x, TracedInt) else parts[0]
    if isinstance(x, float):
        return f"{x: f}"
    return str(x).replace("%", "%%")


def print_tensor(tensor: Any, verbose: bool = False) -> None:
    """``cute.print_tensor`` in a kernel: every thread that runs it prints the tensor's layout and values, in the
    DSL's text (see :mod:`cute_py.tensor.text`); the address is not printed (``?``)."""
    shape = tensor.shape
    sizes = tuple(product_each(shape)) if isinstance(shape, tuple) else (shape,)
    n = 1
    for s in sizes:
        if type(s) is not int:
            raise TraceError(f"print_tensor in a kernel needs a static shape, got {shape}")
        n *= s
    if n > MAX_PRINTED:
        raise TraceError(f"print_tensor in a kernel prints at most {MAX_PRINTED} elements, the tensor has {n}")
    e = tensor.iterator
    dtype = tensor.element_type
    head = (f"tensor(raw_ptr(?: {dtype.short_name}, {e.memspace.name}) o {tensor.layout}, data="
            if dtype is not None else f"tensor({tensor.layout}, data=")
    values: list[Any] = []
    text = values_text(sizes, lambda c: _cell(tensor[c if len(c) > 1 else c[0]], values), verbose)
    vprintf(head.replace("%", "%%") + text + "\n", values)
