"""Building and loading the native launcher's extension from the C sources beside this module.

The sources (``SOURCES``: ``launcher.h``, ``lock.c``, ``arm.c``, ``launcher.c``) ship with the package. They are
compiled once per machine with the C compiler (``CC``, else ``cc``, ``gcc`` or ``clang``) against the running
Python's headers, and kept in the disk cache (``CUTE_PY_CACHE_DIR``) under a key of the sources, the Python build
and ABI and the compiler (its command and ``--version``), with the SHA-256 of the library next to it: a library
that does not match it is rebuilt, never loaded. The key is compiled into the library (``KEY``); before a library
is loaded in this process a child process loads it and checks that key (a library that kills the process loading
it, e.g. one built with a sanitizer's ``CC``, is refused with the reason). With the disk cache off it is built
once per process in a temporary directory, removed after loading.
"""

from __future__ import annotations

import hashlib
import os
import sys
from types import ModuleType

from ...cache.store import atomic_write, cache_dir

__all__ = ["build_and_load", "source_dir", "SOURCES", "C_FILES", "MODULE"]

MODULE = "_cute_py_launch"
C_FILES = ("lock.c", "arm.c", "launcher.c")  # compiled together into one library
SOURCES = ("launcher.h",) + C_FILES


def source_dir() -> str:
    """The directory of the C sources (this package's)."""
    return os.path.dirname(os.path.abspath(__file__))


def build_and_load() -> tuple[ModuleType | None, str | None]:
    """``(module, None)``: the extension, built (or found in the disk cache, checked) and loaded; or
    ``(None, why)`` when it cannot be (no sources, headers or compiler, a failed build, a library that does not
    load in a child process). Exceptions of an unusable disk propagate."""
    import sysconfig

    sources = _read_sources()
    if isinstance(sources, str):
        return None, sources
    include = sysconfig.get_paths().get("include") or ""
    if not os.path.isfile(os.path.join(include, "Python.h")):
        return None, f"no Python.h for this Python (looked in {include!r})"
    cc = _compiler()
    if cc is None:
        return None, "no C compiler (set CC, or install cc, gcc or clang)"
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    # the library's key: its sources, the Python build and ABI, the compiler (its command and what it says it is)
    text = "".join(f"{name}\0{sources[name]}\0" for name in SOURCES)
    key = _digest("\0".join([text, sys.version, sys.implementation.cache_tag or "", suffix, include, *cc,
                             _compiler_identity(cc)]).encode())[:32]
    flags = ["-O2", "-shared", "-fPIC", "-I", include, f'-DCUTE_PY_LAUNCH_KEY="{key}"']
    root = cache_dir()
    if root is None:  # the disk cache is off: built for this process, in a directory removed after loading
        import shutil
        import tempfile

        tmp = tempfile.mkdtemp(prefix="cute_py_launch-")
        try:
            path = os.path.join(tmp, MODULE + suffix)
            why = _compile(cc, flags, sources, tmp, path) or _probe(path, key)
            return (None, why) if why else _load(path, key)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # a loaded library stays mapped
    d = os.path.join(root, "native")
    path = os.path.join(d, f"{MODULE}-{key}{suffix}")
    # loaded here only once a child process loaded it and found it the build of this key (a library that kills
    # the process that loads it, a sanitizer's, or a wrong one under a matching checksum, is rebuilt or refused)
    if not _verified(path) or _probe(path, key):
        os.makedirs(d, exist_ok=True)
        why = _compile(cc, flags, sources, d, path) or _probe(path, key)
        if why:
            return None, why
    return _load(path, key)


def _read_sources():
    """``{name: text}`` of the C sources, or why they cannot be read (an installation without them)."""
    out = {}
    for name in SOURCES:
        path = os.path.join(source_dir(), name)
        try:
            with open(path) as f:
                out[name] = f.read()
        except OSError as e:
            return f"the launcher's C source {name} is not installed ({e})"
    return out


def _compiler():
    import shlex
    import shutil

    cc = os.environ.get("CC")
    if cc:
        return shlex.split(cc)
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return [path]
    return None


def _digest(data):
    return hashlib.sha256(data).hexdigest()


def _compiler_identity(cc):
    """What the compiler says it is (``--version``), part of the library's key; empty when it does not say."""
    import subprocess

    try:
        r = subprocess.run([*cc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return r.stdout.strip()


_PROBE = """
import importlib.machinery, importlib.util, sys
path, key = sys.argv[1], sys.argv[2]
loader = importlib.machinery.ExtensionFileLoader("_cute_py_launch", path)
spec = importlib.util.spec_from_file_location("_cute_py_launch", path, loader=loader)
module = importlib.util.module_from_spec(spec)
loader.exec_module(module)
got = getattr(module, "KEY", None)
if got != key:
    sys.exit(f"the library is the build of key {got!r}, not of {key!r}")
"""


def _probe(path, key):
    """``None`` when a child process loads the library at ``path`` and finds it the build of ``key``; else why
    not (nothing is loaded in this process)."""
    import subprocess

    try:
        r = subprocess.run([sys.executable, "-S", "-c", _PROBE, path, key], capture_output=True, text=True,
                           timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the library could not be tried in a child process: {e}"
    if r.returncode:
        return (f"the library does not load in a child process (exit status {r.returncode}): "
                f"{(r.stderr or r.stdout).strip()[-1000:]}")
    return None


def _verified(path):
    """Whether ``path`` exists and matches the SHA-256 written next to it when it was built."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        with open(path + ".sha256") as f:
            recorded = f.read().strip()
    except OSError:
        return False
    return _digest(data) == recorded


def _compile(cc, flags, sources, d, path):
    """Compile ``sources`` into ``path`` (in a private directory under ``d`` under fixed names, so that the same
    toolchain makes the same bytes, then renamed; its SHA-256 written last); the failure's reason, or ``None``."""
    import shutil
    import subprocess
    import tempfile

    work = tempfile.mkdtemp(dir=d, prefix=".tmp-")
    try:
        for name, text in sources.items():
            with open(os.path.join(work, name), "w") as f:
                f.write(text)
        out = os.path.join(work, MODULE + ".so")
        try:
            r = subprocess.run([*cc, *flags, *C_FILES, "-o", MODULE + ".so"], capture_output=True, text=True,
                               timeout=300, cwd=work)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"the C compiler {cc[0]} could not run: {e}"
        if r.returncode != 0:
            return f"the C compiler {cc[0]} failed: {(r.stderr or r.stdout).strip()[-2000:]}"
        with open(out, "rb") as f:
            data = f.read()
        os.replace(out, path)
        atomic_write(path + ".sha256", _digest(data).encode())
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _load(path, key):
    """``(module, None)`` of the library at ``path``, or ``(None, why)`` when it is not the build of ``key``."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.ExtensionFileLoader(MODULE, path)
    spec = importlib.util.spec_from_file_location(MODULE, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    if getattr(module, "KEY", None) != key:
        return None, f"the library at {path} is not the build of key {key}"
    return module, None
