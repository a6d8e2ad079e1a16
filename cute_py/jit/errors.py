"""Errors of the JIT, and where in the user's code a traced operation came from.

Errors raised while a kernel is traced start with the user's ``file:line`` (the innermost
frame outside the library), so that a message points at the line of the kernel to change.
"""

import os
import sys

from ..errors import CuteError

__all__ = ["JitError", "TraceError", "ArgumentError", "CompileError", "LaunchError", "CacheError",
           "user_frame", "user_location", "locate", "is_user_file"]

_PKG_DIRS = tuple(os.path.dirname(os.path.dirname(os.path.abspath(p))) + os.sep
                  for p in (__file__,))  # .../cute_py/
_MLIR_DIR = os.path.join(os.path.dirname(_PKG_DIRS[0].rstrip(os.sep)), "mlir_dialects") + os.sep
_USER_FILES_IN_PKG = ("examples.py",)  # the package's own example kernels count as user code


class JitError(CuteError, RuntimeError):
    """Base of the JIT's errors that are not about a single traced construct."""


class TraceError(CuteError, TypeError):
    """A Python construct that cannot be traced into a kernel (message starts with file:line)."""


class ArgumentError(CuteError, TypeError):
    """A kernel or jit-function argument of a kind the JIT does not accept, or that does not match."""


class CompileError(JitError):
    """Lowering the traced module to PTX or a cubin failed."""


class LaunchError(JitError):
    """Loading a cubin or launching a kernel through the CUDA driver failed."""


class CacheError(JitError):
    """A disk-cache entry could not be written (reading never raises: bad entries are recompiled)."""


def _is_library(filename):
    f = os.path.abspath(filename)
    if f.startswith(_MLIR_DIR):
        return True
    if f.startswith(_PKG_DIRS[0]):
        return os.path.basename(f) not in _USER_FILES_IN_PKG
    return False


def _stdlib_dir():
    import sysconfig

    return os.path.join(os.path.abspath(sysconfig.get_paths()["stdlib"]), "")


_STDLIB = _stdlib_dir()


def user_frame():
    """The innermost frame of user code (outside cute_py, mlir_dialects and Python's standard library, whose
    ``contextlib`` runs the library's ``with`` blocks), or ``None``."""
    frame = sys._getframe(1)
    known = _USER_FILES
    while frame is not None:
        name = frame.f_code.co_filename
        user = known.get(name)
        if user is None:
            user = is_user_file(name)
        if user:
            return frame
        frame = frame.f_back
    return None


_USER_FILES = {}  # file name -> is_user_file (a trace asks for the same few files many times)


def is_user_file(filename):
    """Whether code of ``filename`` is the user's: not cute_py's, mlir_dialects', frozen, or Python's stdlib."""
    known = _USER_FILES.get(filename)
    if known is None:
        known = _USER_FILES[filename] = not (_is_library(filename) or filename.startswith("<frozen")
                                              or filename.startswith(_STDLIB))
    return known


def user_location():
    """``(filename, line)`` of the innermost user frame; ``("<unknown>", 0)`` when there is none."""
    frame = user_frame()
    if frame is None:
        return "<unknown>", 0
    return frame.f_code.co_filename, frame.f_lineno


def locate(message):
    """``message`` prefixed with the user's ``file:line``."""
    f, line = user_location()
    return f"{f}:{line}: {message}"
