"""What a compile depends on: the Python code its traces ran, the module values that code read, and keys of values.

**Recording.** While the host function and each kernel are traced, a :class:`Recorder` notes every code
object that starts running: through ``sys.monitoring`` from Python 3.12 (:mod:`.monitor`; every change of a
trace hook there costs a pass over the interpreter's code, which made a kernel trace five times slower), else
``sys.settrace``'s call events in the recording thread (``sys.setprofile`` when a debugger or a coverage tool
holds the trace hook). Code of ``cute_py`` and ``mlir_dialects`` is left out: the library's sources are in
every cache key through ``cache.library_fingerprint``. The builders of MLIR ops run unrecorded (:func:`pause`):
they call no user code, and they are most of a kernel trace's calls.

**The manifest** (:meth:`Recorder.manifest`) is what a disk-cache entry stores about the rest:

- ``["file", path, sha256]`` for each source file holding recorded code (its content; code generated
  without a source, like a dataclass's ``__init__``, counts as code of its module's file), or
  ``["stat", path, size, mtime_ns]`` for a file of the Python installation or of site-packages, or
  ``["lines", path, sha256]`` for source known only to ``linecache`` (a notebook cell);
- ``["global", module, name, key]`` for each module-level name the recorded code may read (the names
  of its ``co_names`` bound in its globals), and ``["global", module, "a.b", key]`` for an attribute
  ``b`` of a module or class ``a`` it names, with the value's :func:`value_key` (for code outside the
  Python installation and site-packages: those are checked by their files only).

A function called through a memoising wrapper (``functools.lru_cache``: a C call the trace hook does
not see) is recorded through the ``__wrapped__`` of a global the recorded code names.

**Checking** (:func:`check`) re-reads the files and the current module values (importing a module
that is not imported yet); any difference makes the entry stale and the kernel is compiled again.
Code without a checkable source (``exec`` of a string) cannot be checked in another process: a compile
that ran such code, other than the jit and kernel functions themselves (their code is in the key,
:func:`value_key`), is not stored on disk (:meth:`Recorder.manifest` returns ``None``).

**Keys** (:func:`value_key`) are texts that do not depend on the process: constants and containers
by value, enums by name, modules by name, functions by module, name, code (instructions, names and
constants, not line numbers), closure and defaults, classes by name, numpy arrays (up to 1 MiB) by
their bytes, other objects by their type and ``repr`` (or their attributes when the ``repr`` shows an
address). With ``strict=True`` a value that has no such key, or is too large to key (device arrays,
more than 20000 values, nested deeper than 6 levels), raises :class:`Unkeyable` (the caller does not
cache on disk); otherwise it is keyed by its type alone (or its size).
"""

from __future__ import annotations

import enum
import functools
import hashlib
import importlib
import linecache
import os
import sys
import sysconfig
import types
from collections.abc import Callable, Iterable
from typing import Any

from ...errors import is_library_file as _is_library
from . import monitor

__all__ = ["Recorder", "pause", "resume", "check", "value_key", "code_digest", "Unkeyable"]

_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_MAX_DEPTH = 6  # levels of containers, closures and attributes a key follows
_MAX_ITEMS = 4096  # items of one container
_MAX_VALUES = 20000  # values one key visits in all
_MAX_TEXT = 4096  # longer texts and reprs are keyed by digest (or not at all)
_MAX_ARRAY_BYTES = 1 << 20  # larger numpy arrays are not hashed on every lookup
_MISSING = object()


class Unkeyable(Exception):
    """A value whose key would depend on the process (its address) or is too large to build."""


# -- keys of values --------------------------------------------------------------------------------


def _digest(text):
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _const_key(c):
    """A process-independent text of a code constant (frozensets sorted, nested code by digest)."""
    if isinstance(c, types.CodeType):
        return "code:" + code_digest(c)
    if isinstance(c, (tuple, frozenset)):
        items = [_const_key(x) for x in c]
        if isinstance(c, frozenset):
            items.sort()
        return f"{type(c).__name__}({','.join(items)})"
    return f"{type(c).__name__}:{c!r}"


_CODE_DIGESTS = {}


def code_digest(code: types.CodeType) -> str:
    """SHA-256 of what ``code`` executes: instructions, names, constants, argument counts and flags (not its
    file name or line numbers)."""
    d = _CODE_DIGESTS.get(code)
    if d is None:
        parts = [code.co_code.hex(), ",".join(code.co_names), ",".join(code.co_varnames),
                 ",".join(code.co_freevars), ",".join(code.co_cellvars),
                 f"{code.co_argcount}/{code.co_posonlyargcount}/{code.co_kwonlyargcount}/{code.co_flags}",
                 _const_key(code.co_consts)]
        d = _CODE_DIGESTS[code] = _digest("\0".join(parts))
    return d


def _name_of(x):
    return f"{getattr(x, '__module__', None)}.{getattr(x, '__qualname__', getattr(x, '__name__', '?'))}"


def value_key(v: object, strict: bool = False) -> str:
    """A text that is equal for equal values in any process (see the module documentation)."""
    return _Keyer(strict).key(v, 0)


class _Keyer:
    """One :func:`value_key` computation: ``strict`` and the budget of values it may visit."""

    __slots__ = ("strict", "budget")

    def __init__(self, strict):
        self.strict, self.budget = strict, _MAX_VALUES

    def too_big(self, what):
        if self.strict:
            raise Unkeyable(what)
        return f"large:{what}"

    def key(self, v, depth):
        self.budget -= 1
        t = type(v)
        if t in _PLAIN:
            if t in (str, bytes) and len(v) > _MAX_TEXT:  # by digest: a repr would be as long as the value
                data = v if t is bytes else v.encode("utf-8", "surrogatepass")
                return f"{t.__name__}:{len(v)}:{hashlib.sha256(data).hexdigest()}"
            return repr(v)
        if depth > _MAX_DEPTH or self.budget < 0:
            return self.too_big(f"a value nested deeper than {_MAX_DEPTH} levels or holding more than {_MAX_VALUES} "
                                f"values ({_name_of(t)})")
        k, d = self.key, depth + 1
        if t in (tuple, list, set, frozenset, dict):
            if len(v) > _MAX_ITEMS:
                return self.too_big(f"a {t.__name__} of {len(v)} items")
            if t is dict:
                return f"dict({','.join(sorted(f'{k(a, d)}:{k(b, d)}' for a, b in v.items()))})"
            items = [k(x, d) for x in v]
            return f"{t.__name__}({','.join(sorted(items) if t in (set, frozenset) else items)})"
        if isinstance(v, enum.Enum):
            return f"enum:{_name_of(t)}.{v.name}"
        if isinstance(v, types.ModuleType):
            return f"module:{v.__name__}"
        if isinstance(v, type):
            return f"class:{_name_of(v)}"
        if isinstance(v, types.FunctionType):
            return self.function(v, d)
        if isinstance(v, types.MethodType):
            return f"method:{k(v.__func__, d)}@{k(v.__self__, d)}"
        if isinstance(v, functools.partial):
            return f"partial:{k(v.func, d)}:{k(v.args, d)}:{k(v.keywords, d)}"
        if isinstance(v, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            return f"builtin:{getattr(v, '__module__', None)}.{v.__qualname__}"
        wrapped = getattr(v, "__wrapped__", None)
        if wrapped is not None and not isinstance(wrapped, t):  # lru_cache, functools.wraps decorators
            return f"wrapped:{_name_of(t)}:{k(wrapped, d)}"
        fn = getattr(v, "fn", None)
        if isinstance(fn, types.FunctionType) and t.__module__.startswith("cute_py.compiler"):  # @kernel / @jit
            return f"{_name_of(t)}:{self.function(fn, d)}"
        if t.__module__ == "numpy" and hasattr(v, "tobytes") and hasattr(v, "dtype"):
            if getattr(v, "nbytes", 0) > _MAX_ARRAY_BYTES:
                return self.too_big(f"a numpy array of {v.nbytes} bytes")
            return f"ndarray:{v.dtype}:{getattr(v, 'shape', ())}:{hashlib.sha256(v.tobytes()).hexdigest()}"
        if t.__module__.startswith("torch") or hasattr(v, "__cuda_array_interface__"):
            # device memory: never printed (that would copy it to the host); its contents are run-time data
            if self.strict:
                raise Unkeyable(f"a device array ({_name_of(t)})")
            return f"array:{_name_of(t)}:{getattr(v, 'dtype', None)}:{tuple(getattr(v, 'shape', ()))}"
        try:
            text = repr(v)
        except Exception:
            text = " at 0x"
        if " at 0x" not in text and len(text) <= _MAX_TEXT:
            return f"{_name_of(t)}:{text}"
        attrs = getattr(v, "__dict__", None)
        if isinstance(attrs, dict):
            return f"{_name_of(t)}{k(attrs, d)}"
        if self.strict:
            raise Unkeyable(f"{_name_of(t)} object with no process-independent text")
        return f"type:{_name_of(t)}"

    def function(self, fn, depth):
        cells = []
        for cell in fn.__closure__ or ():
            try:
                cells.append(self.key(cell.cell_contents, depth))
            except ValueError:  # an empty cell
                cells.append("<empty>")
        defaults = self.key(fn.__defaults__, depth) if fn.__defaults__ else ""
        kwdefaults = self.key(fn.__kwdefaults__, depth) if fn.__kwdefaults__ else ""
        return f"fn:{_name_of(fn)}:{code_digest(fn.__code__)}:[{','.join(cells)}]:{defaults}:{kwdefaults}"


# -- source files ----------------------------------------------------------------------------------


def _installed_prefixes():
    paths = sysconfig.get_paths()
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, paths.get("stdlib"), paths.get("purelib"),
             paths.get("platlib")}
    return tuple(os.path.abspath(r) + os.sep for r in roots if r)


_INSTALLED = _installed_prefixes()
_FILE_DIGESTS = {}  # path -> ((size, mtime_ns), sha256): a file is read again only when its stat changes


def _file_check(path):
    """The check of the source file ``path``: ``["file", path, sha256]``, ``["stat", path, size, mtime_ns]``,
    ``["lines", path, sha256]``, or ``None`` when there is no source to check."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        lines = linecache.getlines(path)
        return ["lines", path, _digest("".join(lines))] if lines else None
    if os.path.abspath(path).startswith(_INSTALLED):
        return ["stat", path, st.st_size, st.st_mtime_ns]
    stamp = (st.st_size, st.st_mtime_ns)
    known = _FILE_DIGESTS.get(path)
    if known is not None and known[0] == stamp:
        return ["file", path, known[1]]
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None
    _FILE_DIGESTS[path] = (stamp, digest)
    return ["file", path, digest]


# -- recording -------------------------------------------------------------------------------------


_ACTIVE = [None, None]  # (kind, hook) of the recorder installed now: "trace" or "profile"


def _hook_for(codes):
    def hook(frame, event, arg, _codes=codes, _id=id):
        code = frame.f_code
        if _id(code) not in _codes:
            _codes[_id(code)] = (code, frame.f_globals)

    return hook


class Recorder:
    """Records the code objects that start running while it is active (``with recorder:``); reusable.

    Library code that never calls user code can run unrecorded inside :func:`pause` / :func:`resume`
    (the kernel builder does, around the MLIR builders: most of a kernel trace's calls).
    """

    def __init__(self) -> None:
        self.codes = {}  # id(code object) -> (the code object, the globals it ran with)
        self.complete = True  # False when neither hook was free (nothing recorded: do not cache on disk)
        self._kind = None

    def __enter__(self) -> Recorder:
        if monitor.listen(self.codes):
            self._kind = "monitor"
            return self
        if sys.gettrace() is None:
            self._kind, hook = "trace", _hook_for(self.codes)
            sys.settrace(hook)
        elif sys.getprofile() is None:  # a debugger or coverage holds the trace hook: leave it alone
            record = _hook_for(self.codes)

            def hook(frame, event, arg):
                if event == "call":
                    record(frame, event, arg)

            self._kind = "profile"
            sys.setprofile(hook)
        else:
            self._kind, hook = None, None
            self.complete = False
        _ACTIVE[:] = [self._kind, hook]
        return self

    def __exit__(self, *exc: object) -> bool:
        if self._kind == "monitor":
            monitor.stop(self.codes)
            return False
        kind, hook = _ACTIVE
        if kind is not None:
            current = sys.gettrace() if kind == "trace" else sys.getprofile()
            if current is hook:
                (sys.settrace if kind == "trace" else sys.setprofile)(None)
            else:  # something (a debugger started in the trace) replaced the hook: the record has gaps
                self.complete = False
        _ACTIVE[:] = [None, None]
        return False

    def manifest(self, covered: Iterable[Callable[..., Any]] = ()) -> dict[str, list[Any]] | None:
        """The checks of everything recorded (a JSON-able dict), or ``None`` when it cannot all be checked later.

        ``covered``: functions whose code is in the cache key (the jit function and the kernels): their code,
        and the code nested in it, needs no source file.
        """
        if not self.complete:
            return None
        codes = dict(self.codes)
        _add_wrapped(codes)
        known = _nested_codes(c for c in (getattr(getattr(fn, "__func__", fn), "__code__", None) for fn in covered)
                              if isinstance(c, types.CodeType))
        files, globs = {}, {}
        for code, g in codes.values():
            fname = _source_of(code, g)
            if fname is None or _is_library(fname) or fname.startswith("<frozen"):
                continue
            if fname not in files:
                files[fname] = _file_check(fname)
            if files[fname] is None and id(code) not in known:
                return None  # code with no source to check in another process
            if not os.path.abspath(fname).startswith(_INSTALLED):  # installed packages: their files only
                _record_globals(code, g, globs)
        checks = sorted(c for c in files.values() if c is not None)
        return {"files": checks, "globals": [["global", m, n, k] for (m, n), k in sorted(globs.items())]}


def _source_of(code, g):
    """The file holding the source of ``code``: its own, or for code generated at run time without one (the
    ``__init__`` a dataclass makes, ``<string>``) the file of the module it was made for; ``None`` for the
    ``__new__`` of a ``collections.namedtuple`` (made from its field names alone)."""
    fname = code.co_filename
    if fname.startswith("<") and not linecache.getlines(fname) and isinstance(g, dict):
        module_file = g.get("__file__")
        if isinstance(module_file, str):
            return module_file
        if str(g.get("__name__", "")).startswith("namedtuple_"):
            return None
    return fname


def pause() -> tuple[str, Callable[..., Any]] | None:
    """Stop recording in this thread (for library code that calls no user code; with ``sys.monitoring``, in every
    thread); a token for :func:`resume`."""
    if monitor.pause():
        return "monitor", None
    kind, hook = _ACTIVE
    if kind == "trace" and sys.gettrace() is hook:
        sys.settrace(None)
        return kind, hook
    if kind == "profile" and sys.getprofile() is hook:
        sys.setprofile(None)
        return kind, hook
    return None


def resume(token: tuple[str, Callable[..., Any]] | None) -> None:
    """Record again after :func:`pause` (``token`` is what it returned): the same hook, in this thread."""
    if token is not None:
        kind, hook = token
        if kind == "monitor":
            monitor.resume()
        else:
            (sys.settrace if kind == "trace" else sys.setprofile)(hook)


def _nested_codes(codes):
    """``{id: code}`` of ``codes`` and every code object nested in their constants."""
    out, todo = {}, list(codes)
    while todo:
        c = todo.pop()
        if id(c) not in out:
            out[id(c)] = c
            todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return out


def _add_wrapped(codes):
    """Add the code of functions that recorded code names through a memoising wrapper (``__wrapped__``)."""
    todo = list(codes.values())
    while todo:
        code, g = todo.pop()
        if _is_library(code.co_filename) or not isinstance(g, dict):
            continue
        for name in code.co_names:
            fn = g.get(name, None)
            for _ in range(8):  # decorators on decorators
                fn = getattr(fn, "__wrapped__", None)
                if fn is None or isinstance(fn, types.FunctionType):
                    break
            if isinstance(fn, types.FunctionType) and id(fn.__code__) not in codes:
                codes[id(fn.__code__)] = (fn.__code__, fn.__globals__)
                todo.append((fn.__code__, fn.__globals__))


def _outside_user_code(module):
    """Whether ``module`` is part of the library or of the Python installation (its attributes are not recorded)."""
    f = getattr(module, "__file__", None)
    return not f or _is_library(f) or os.path.abspath(f).startswith(_INSTALLED)


def _record_globals(code, g, out):
    if not isinstance(g, dict):
        return
    module = g.get("__name__")
    if not isinstance(module, str):
        return
    names = code.co_names
    for name in names:
        v = g.get(name, _MISSING)
        if v is _MISSING:
            continue
        out.setdefault((module, name), value_key(v))
        if isinstance(v, types.ModuleType):  # module.ATTR reads
            if _outside_user_code(v):
                continue
            space, prefix, owner = vars(v), "", v.__name__
        elif isinstance(v, type) and not _is_library(getattr(sys.modules.get(v.__module__), "__file__", "") or ""):
            space, prefix, owner = vars(v), f"{name}.", module  # Class.ATTR reads
        else:
            continue
        for attr in names:
            a = space.get(attr, _MISSING)
            if a is not _MISSING and not isinstance(a, types.ModuleType):
                out.setdefault((owner, prefix + attr), value_key(a))


# -- checking --------------------------------------------------------------------------------------


def _current_global(module, name):
    mod = sys.modules.get(module)
    if mod is None:
        try:
            mod = importlib.import_module(module)
        except Exception:
            return _MISSING
    space = getattr(mod, "__dict__", {})
    head, _, attr = name.partition(".")
    v = space.get(head, _MISSING)
    if attr and v is not _MISSING:
        v = vars(v).get(attr, _MISSING) if hasattr(v, "__dict__") else _MISSING
    return v


def check(manifest: object) -> str | None:
    """``None`` when every check of ``manifest`` still holds, else a text naming the first that does not."""
    if not isinstance(manifest, dict):
        return "no dependency manifest"
    files, globs = manifest.get("files"), manifest.get("globals")
    if not isinstance(files, list) or not isinstance(globs, list):
        return "a malformed dependency manifest"
    for entry in files:
        if not isinstance(entry, list) or len(entry) < 3 or not isinstance(entry[1], str):
            return "a malformed file check"
        now = _file_check(entry[1])
        if now != entry:
            return f"{entry[1]} changed"
    for entry in globs:
        if not isinstance(entry, list) or len(entry) != 4 or not all(isinstance(x, str) for x in entry):
            return "a malformed global check"
        _, module, name, key = entry
        v = _current_global(module, name)
        if v is _MISSING or value_key(v) != key:
            return f"{module}.{name} changed"
    return None
