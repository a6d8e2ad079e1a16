"""The native launcher: the repeated launch of a compiled kernel without the Python interpreter in between.

A generated launch path (``launch_paths``) spends most of its host time in bytecodes and in cuda-python's
argument conversion, around a driver call that costs a few microseconds. Its common call, the same tensors as
the last call or tensors like them at new addresses, is taken over by a small C object, the ``Launcher`` of the
extension whose sources are beside this module (``launcher.c`` states its rule): one call of torch's tensor
guard, the tensors' ``data_ptr()``, for new addresses a rewrite of the pointer parameters and of the
descriptors' address fields, and ``cuLaunchKernel`` through the function pointer that cuda-python's
``cuGetProcAddress`` returns (the driver entry point cuda-python itself calls). Everything else (misaligned
addresses, another dtype or shape, a stream object, an error) is passed, untouched, to the generated Python path.
The C code is the same for every kernel: what one compiled object launches is data given to ``arm``.

The extension is built once per machine and kept in the disk cache (``build``). Without a compiler or headers,
on another platform than Linux, with ``CUTE_PY_NATIVE_LAUNCH=0`` (or ``off``, ``false``, ``no``, in any case; a
value that is neither on nor off turns it off with a ``RuntimeWarning``), or when cuda-python is set to the
per-thread default stream (``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM``), there is no native launcher and the
Python path does everything: :func:`status` says why.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from .build import build_and_load

__all__ = ["launcher_class", "launch_address", "make_launcher", "new_lock", "status", "MAX_TENSORS", "MAX_LAUNCHES",
           "MAX_WRITES"]

MAX_TENSORS = 16  # as launcher.h's limits: a compile beyond them keeps the Python path
MAX_LAUNCHES = 8
MAX_WRITES = 32  # a refill beyond it: new addresses go to the Python path
# "class": the Launcher type or None, "lock": the Lock type, "why": the reason for no class, "address": int or None,
# "torch installed": whether an import of torch would find it
_STATE: dict[str, Any] = {}


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


def launcher_class() -> type | None:
    """The ``Launcher`` type of the extension, built and loaded on the first call; ``None`` when it cannot be
    (:func:`status` says why). Never raises."""
    if "class" not in _STATE:
        why = _disabled()
        module = None
        if why is None:
            try:
                module, why = build_and_load()
            except Exception as e:  # an unusable toolchain or disk: the Python path
                module, why = None, f"the build failed: {type(e).__name__}: {e}"
        if module is not None:
            _STATE["lock"] = module.Lock
        _STATE["class"], _STATE["why"] = (module.Launcher if module is not None else None), why
    return _STATE["class"]


def launch_address() -> int | None:
    """The address of the driver's ``cuLaunchKernel`` (legacy default stream), from cuda-python's
    ``cuGetProcAddress``; ``None`` where it gives none."""
    if "address" not in _STATE:
        address = None
        try:
            from .. import launch as _launch

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
    a ``threading.Lock``. The extension is built (once per machine) and loaded for it only where torch is loaded
    or installed: the native launcher serves torch tensors only, and a compiled object keeps its lock, so one made
    before ``import torch`` (from specs, say) that later takes torch tensors still gets the launcher."""
    if _torch_around():
        launcher_class()
    lock = _STATE.get("lock")
    if lock is None:
        import threading

        return threading.Lock()
    return lock()


def _torch_around() -> bool:
    """Whether torch is loaded, or installed where an import would find it (looked up once a process)."""
    if "torch" in sys.modules:
        return True
    if "torch installed" not in _STATE:
        try:
            import importlib.util

            _STATE["torch installed"] = importlib.util.find_spec("torch") is not None
        except (ImportError, ValueError):  # a broken entry on the path, or a torch module without a spec
            _STATE["torch installed"] = False
    return _STATE["torch installed"]


def make_launcher(positions: tuple[int, ...], max_args: int, lock: Any) -> Any | None:
    """A disarmed ``Launcher`` of the driver's ``cuLaunchKernel`` for calls whose tensors are at ``positions``
    (of at most ``max_args`` positional arguments), holding ``lock`` (the compiled object's, see
    :func:`new_lock`) from its checks of the armed state to the end of its launches; or ``None`` where there is
    no native launcher, the lock is not the extension's, or the positions exceed its limits."""
    if not 1 <= len(positions) <= MAX_TENSORS or type(lock) is not _STATE.get("lock"):
        return None  # the lock is the extension's only where it was built (new_lock): nothing is built here
    cls = launcher_class()
    address = launch_address() if cls is not None else None
    if address is None:
        return None
    return cls(address, tuple(positions), max_args, lock)
