"""The native launcher: the repeated launch of a compiled kernel without the Python interpreter in between.

A generated launch path (``launch_paths``) spends most of its host time in bytecodes and in cuda-python's
argument conversion, around a driver call that costs a few microseconds. Its common call, the same tensors as
the last call or tensors like them at new addresses, is taken over by a small C object (``native_source``): one
call of torch's tensor guard, the tensors' ``data_ptr()``, for new addresses a rewrite of the pointer parameters
and of the descriptors' address fields, and ``cuLaunchKernel`` through the function pointer that cuda-python's
``cuGetProcAddress`` returns (the driver entry point cuda-python itself calls). Everything else (misaligned
addresses, another dtype or shape, a stream object, an error) is passed, untouched, to the generated Python path.

The extension is compiled once per machine with the C compiler (``CC``, else ``cc``, ``gcc`` or ``clang``) against
the running Python's headers, and kept in the disk cache (``CUTE_PY_CACHE_DIR``) under a key of its source, the
Python build and ABI and the compiler (its command and ``--version``), with the SHA-256 of the library next to it:
a library that does not match it is rebuilt, never loaded. The key is compiled into the library (``KEY``); before
a library is loaded in this process a child process loads it and checks that key (a library that kills the process
loading it, e.g. one built with a sanitizer's ``CC``, is refused: :func:`status` says why). With the disk cache off it is built once per process in a temporary directory. Without a
compiler or headers, on another platform than Linux, with ``CUTE_PY_NATIVE_LAUNCH=0`` (or ``off``, ``false``,
``no``, in any case; a value that is neither on nor off turns it off with a ``RuntimeWarning``), or when cuda-python is
set to the per-thread default stream (``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM``), there is no native
launcher and the Python path does everything: :func:`status` says why.
"""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Any

from ..cache.store import cache_dir
from .native_source import SOURCE

__all__ = ["launcher_class", "launch_address", "make_launcher", "new_lock", "status", "MAX_TENSORS", "MAX_LAUNCHES",
           "MAX_WRITES"]

MAX_TENSORS = 16  # as the C source's limits: a compile beyond them keeps the Python path
MAX_LAUNCHES = 8
MAX_WRITES = 32  # a refill beyond it: new addresses go to the Python path
_MODULE = "_cute_py_launch"
_STATE: dict[str, Any] = {}  # "class": the Launcher type or None, "why": the reason for None, "address": int or None


def status() -> str:
    """``"native"`` when the launcher is built and loaded, else the reason there is none (``"not built yet"``
    before the first compiled object with a native path asked for it)."""
    if "class" not in _STATE:
        return "not built yet"
    return "native" if _STATE["class"] is not None else _STATE["why"]


_OFF, _ON = ("0", "off", "false", "no", "disable", "disabled"), ("", "1", "on", "true", "yes", "auto", "enable",
                                                                   "enabled")


def _disabled() -> str | None:
    given = os.environ.get("CUTE_PY_NATIVE_LAUNCH", "1")
    value = given.strip().lower()
    if value in _OFF:
        return f"turned off (CUTE_PY_NATIVE_LAUNCH={given})"
    if value not in _ON:
        import warnings

        why = (f"turned off: CUTE_PY_NATIVE_LAUNCH={given!r} is none of {', '.join(v for v in _ON if v)} (on) or "
               f"{', '.join(_OFF)} (off), in any case")
        warnings.warn(f"cute_py: the native launcher is {why}", RuntimeWarning, stacklevel=3)
        return why
    if os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM"):
        return "cuda-python is set to the per-thread default stream"
    if not sys.platform.startswith("linux"):
        return f"no native launcher on {sys.platform}"
    return None


def _compiler() -> list[str] | None:
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


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def launcher_class() -> type | None:
    """The ``Launcher`` type of the extension (see ``native_source``), built and loaded on the first call; ``None``
    when it cannot be (:func:`status` says why). Never raises."""
    if "class" not in _STATE:
        why = _disabled()
        cls = None
        if why is None:
            try:
                cls, why = _build_and_load()
            except Exception as e:  # an unusable toolchain or disk: the Python path
                cls, why = None, f"the build failed: {type(e).__name__}: {e}"
        _STATE["class"], _STATE["why"] = cls, why
    return _STATE["class"]


def _build_and_load():
    import sysconfig

    include = sysconfig.get_paths().get("include") or ""
    if not os.path.isfile(os.path.join(include, "Python.h")):
        return None, f"no Python.h for this Python (looked in {include!r})"
    cc = _compiler()
    if cc is None:
        return None, "no C compiler (set CC, or install cc, gcc or clang)"
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    # the library's key: its source, the Python build and ABI, the compiler (its command and what it says it is)
    key = _digest("\0".join([SOURCE, sys.version, sys.implementation.cache_tag or "", suffix, include,
                              *cc, _compiler_identity(cc)]).encode())[:32]
    flags = ["-O2", "-shared", "-fPIC", "-I", include, f'-DCUTE_PY_LAUNCH_KEY="{key}"']
    root = cache_dir()
    if root is None:  # the disk cache is off: built for this process, in a directory removed after loading
        import shutil
        import tempfile

        tmp = tempfile.mkdtemp(prefix="cute_py_launch-")
        try:
            path = os.path.join(tmp, _MODULE + suffix)
            why = _compile(cc, flags, tmp, path) or _probe(path, key)
            return (None, why) if why else _load(path, key)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # a loaded library stays mapped
    d = os.path.join(root, "native")
    path = os.path.join(d, f"{_MODULE}-{key}{suffix}")
    # loaded here only once a child process loaded it and found it the build of this key (a library that kills
    # the process that loads it, a sanitizer's, or a wrong one under a matching checksum, is rebuilt or refused)
    if not _verified(path) or _probe(path, key):
        os.makedirs(d, exist_ok=True)
        why = _compile(cc, flags, d, path) or _probe(path, key)
        if why:
            return None, why
    return _load(path, key)


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


def _compile(cc, flags, d, path):
    """Compile the source into ``path`` (in a private directory under ``d`` under fixed names, so that the same
    toolchain makes the same bytes, then renamed; its SHA-256 written last); the failure's reason, or ``None``."""
    import shutil
    import subprocess
    import tempfile

    from ..cache.store import atomic_write

    work = tempfile.mkdtemp(dir=d, prefix=".tmp-")
    try:
        src, out = os.path.join(work, _MODULE + ".c"), os.path.join(work, _MODULE + ".so")
        with open(src, "w") as f:
            f.write(SOURCE)
        try:
            r = subprocess.run([*cc, *flags, _MODULE + ".c", "-o", _MODULE + ".so"], capture_output=True, text=True,
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
    """``(Launcher, None)`` of the library at ``path``, or ``(None, why)`` when it is not the build of ``key``."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.ExtensionFileLoader(_MODULE, path)
    spec = importlib.util.spec_from_file_location(_MODULE, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    if getattr(module, "KEY", None) != key:
        return None, f"the library at {path} is not the build of key {key}"
    _STATE["lock"] = module.Lock
    return module.Launcher, None


def launch_address() -> int | None:
    """The address of the driver's ``cuLaunchKernel`` (legacy default stream), from cuda-python's
    ``cuGetProcAddress``; ``None`` where it gives none."""
    if "address" not in _STATE:
        address = None
        try:
            from . import launch as _launch

            d = _launch.driver()
            err, pfn, *_ = d.cuGetProcAddress(b"cuLaunchKernel", 12000,
                                              d.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_LEGACY_STREAM)
            if err == d.CUresult.CUDA_SUCCESS and pfn:
                address = int(pfn)
        except Exception:  # no driver, or a binding of another signature: the Python path
            address = None
        _STATE["address"] = address
    return _STATE["address"]


def new_lock() -> Any:
    """The lock of a compiled object's launches: the extension's ``Lock`` (which its launcher takes in C), else
    a ``threading.Lock``. The extension is built for it only where torch is loaded (the native launcher serves
    torch tensors only)."""
    if "torch" in sys.modules:
        launcher_class()
    lock = _STATE.get("lock")
    if lock is None:
        import threading

        return threading.Lock()
    return lock()


def make_launcher(positions: tuple[int, ...], max_args: int, lock: Any) -> Any | None:
    """A disarmed ``Launcher`` of the driver's ``cuLaunchKernel`` for calls whose tensors are at ``positions``
    (of at most ``max_args`` positional arguments), holding ``lock`` (the compiled object's, see
    :func:`new_lock`) from its checks of the armed state to the end of its launches; or ``None`` where there is
    no native launcher, the lock is not the extension's, or the positions exceed its limits."""
    if not 1 <= len(positions) <= MAX_TENSORS:
        return None
    cls = launcher_class()
    address = launch_address() if cls is not None else None
    if address is None or type(lock) is not _STATE.get("lock"):
        return None
    return cls(address, tuple(positions), max_args, lock)
