"""The keys of a jit function's compiles: what of a recorded launch, a host print and the whole compile changes the
generated code (the disk-cache key is a hash of all of it)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from ...core.symbolic import SymInt, describe_guard, substitute
from ..cache import store as _cache
from ..cache import deps as _deps
from ..cache.config_key import Unkeyable, config_key
from ..specs.host_scalars import HostScalar
from ..specs.options import CompileOptions

__all__ = ["launch_key", "print_key", "disk_key"]


def launch_key(ln: Any) -> tuple:
    """Everything of a recorded launch that changes the generated code or the launch (run-time extents by their
    structure: their names, widths, divisors and the expressions that use them)."""
    call = ln.call
    args = []
    for pos, (kind, _) in ln.kernel_args:
        a = call.args[pos] if type(pos) is int else call.kwargs[pos]
        if isinstance(a, HostScalar):
            args.append((pos, kind, a.describe()))
        else:
            args.append((pos, kind, config_key(substitute(a, _SymText) if kind in ("sym", "tuple") else a,
                                               f"kernel argument {pos}")))
    return (_deps.value_key(call.kernel.fn, strict=True), ln.name, args, [repr(g) for g in ln.grid], ln.block,
            ln.cluster, ln.smem, ln.non_portable_cluster, ln.stream, [(k, repr(s) if isinstance(s, SymInt) else "")
                                                                      for k, s in ln.params],
            getattr(ln, "min_blocks", None))


class _SymText(str):
    """A run-time extent in a key: the text of its structure (``repr``), printed as itself."""

    __slots__ = ()

    def __new__(cls, s):
        return str.__new__(cls, repr(s))

    def __repr__(self):
        return str(self)


def print_key(x: Any) -> str:
    """A host print's argument in a key: run-time values by their structure, others by their text."""
    if isinstance(x, HostScalar):
        return x.describe()
    return repr(substitute(x, _SymText))


def disk_key(jf: Any, key: tuple, launches: list, opts: CompileOptions | None = None, guards: Any = (),
             prints: Any = (), log: Callable[[str], None] = lambda msg: None) -> str | None:
    """The disk-cache key of a compile: the library, the jit function, the specialisation, the code-generation
    options, the recorded launches, the host code's decisions and prints (``None`` when a value has no
    process-independent key: not stored; ``log`` says why)."""
    opts = opts or CompileOptions()
    try:
        if any(k[0] == "C" and k[1] is None for k in key):
            raise Unkeyable("a static argument has no key")
        text = repr((_cache.library_fingerprint(), jf._source, _deps.value_key(jf.fn, strict=True), jf.function_name,
                     list(key), opts.codegen_key(), [launch_key(ln) for ln in launches],
                     [describe_guard(g) for g in guards],
                     [(pieces, [print_key(a) for a in args]) for pieces, args in prints]))
    except Unkeyable as e:
        log(f"{jf.fn.__name__} is not cached on disk: {e}")
        return None
    return hashlib.sha256(text.encode()).hexdigest()
