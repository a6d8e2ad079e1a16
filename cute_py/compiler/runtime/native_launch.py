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
Python build and the compiler, with the SHA-256 of the library next to it: a library that does not match it is
rebuilt, never loaded. With the disk cache off it is built once per process in a temporary directory. Without a
compiler or headers, on another platform than Linux, with ``CUTE_PY_NATIVE_LAUNCH=0``, or when cuda-python is
set to the per-thread default stream (``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM``), there is no native
launcher and the Python path does everything: :func:`status` says why.
"""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Any

from .cache import cache_dir
from .native_source import SOURCE

__all__ = ["launcher_class", "launch_address", "make_launcher", "status", "MAX_TENSORS", "MAX_LAUNCHES",
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


def _disabled() -> str | None:
    if os.environ.get("CUTE_PY_NATIVE_LAUNCH", "1").strip() in ("0", "off", "false", "no"):
        return "turned off (CUTE_PY_NATIVE_LAUNCH=0)"
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
    flags = ["-O2", "-shared", "-fPIC", "-I", include]
    key = _digest("\0".join([SOURCE, sys.version, suffix, *cc, *flags]).encode())[:32]
    root = cache_dir()
    if root is None:  # the disk cache is off: built for this process, in a directory removed after loading
        import shutil
        import tempfile

        tmp = tempfile.mkdtemp(prefix="cute_py_launch-")
        try:
            path = os.path.join(tmp, _MODULE + suffix)
            why = _compile(cc, flags, tmp, path)
            return (None, why) if why else (_load(path), None)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # a loaded library stays mapped
    d = os.path.join(root, "native")
    path = os.path.join(d, f"{_MODULE}-{key}{suffix}")
    if not _verified(path):
        os.makedirs(d, exist_ok=True)
        why = _compile(cc, flags, d, path)
        if why:
            return None, why
    return _load(path), None


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

    from .cache import atomic_write

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


def _load(path):
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.ExtensionFileLoader(_MODULE, path)
    spec = importlib.util.spec_from_file_location(_MODULE, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module.Launcher


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


def make_launcher(positions: tuple[int, ...], max_args: int) -> Any | None:
    """A disarmed ``Launcher`` of the driver's ``cuLaunchKernel`` for calls whose tensors are at ``positions``
    (of at most ``max_args`` positional arguments), or ``None`` where there is no native launcher or the
    positions exceed its limits."""
    if not 1 <= len(positions) <= MAX_TENSORS:
        return None
    cls = launcher_class()
    address = launch_address() if cls is not None else None
    if address is None:
        return None
    return cls(address, tuple(positions), max_args)
