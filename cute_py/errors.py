"""Every exception cute_py raises, and where in the user's code a failing operation came from.

Every rejection names the rule that was broken and the values involved.  The classes also derive
from the matching builtin (``ValueError``, ``TypeError``, ``IndexError``, ``RuntimeError``) so
generic handlers keep working.

Errors about a construct in the user's code (:class:`TraceError`, :class:`ArgumentError`) are
*located*: their constructor finds the innermost frame of user code — outside cute_py,
``mlir_dialects`` and Python's standard library — and starts the message with its ``file:line``,
so the message points at the line to change.  ``where=(file, line)`` names another place.
"""

from __future__ import annotations

import os
import sys
from types import FrameType

__all__ = [
    "CuteError",
    "CuteValueError",
    "CuteTypeError",
    "RankError",
    "DivisibilityError",
    "NotInjectiveError",
    "StaticValueRequired",
    "CuteIndexError",
    "TmaError",
    "DeviceOnlyError",
    "DriverUnavailable",
    "TmaEncodeError",
    "LocatedError",
    "TraceError",
    "StaticTraceError",
    "ArgumentError",
    "SpecMismatch",
    "JitError",
    "CompileError",
    "LaunchError",
    "CacheError",
    "user_frame",
    "user_location",
    "is_user_file",
    "is_library_file",
]


# -- the algebra and tensors ---------------------------------------------------------------------


class CuteError(Exception):
    """Base class of every error raised by cute_py for bad input."""


class CuteValueError(CuteError, ValueError):
    """A value breaks a rule of the algebra."""


class CuteTypeError(CuteError, TypeError):
    """An argument has a type the operation does not accept."""


class RankError(CuteValueError):
    """Ranks or profiles of two arguments do not match (or a tiler has too many modes)."""


class DivisibilityError(CuteValueError):
    """A shape or stride divisibility condition of the algebra is violated."""


class NotInjectiveError(CuteValueError):
    """An operation that needs an injective layout (e.g. complement) got a non-injective one."""


class StaticValueRequired(CuteValueError, TypeError):
    """A value known only at run time was used where the algebra needs a static int.

    Also a ``TypeError``: a run-time integer is the wrong kind of value there.
    """


class CuteIndexError(CuteError, IndexError):
    """A coordinate, tile or thread index outside a tensor (or an element offset outside its array)."""


# -- the Hopper atoms ----------------------------------------------------------------------------


class TmaError(CuteValueError):
    """A TMA configuration the hardware (or the driver) would reject."""


class DeviceOnlyError(CuteError, RuntimeError):
    """A device operation was called outside a kernel being traced."""


class DriverUnavailable(CuteError, RuntimeError):
    """cuda-python or the CUDA driver is not available."""


class TmaEncodeError(CuteError, RuntimeError):
    """The driver refused to encode a descriptor that passed cute_py's validation (or an unvalidated one)."""


# -- where the user's code is --------------------------------------------------------------------

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep  # .../cute_py/
_MLIR_DIR = os.path.join(os.path.dirname(_PKG_DIR.rstrip(os.sep)), "mlir_dialects") + os.sep


_STDLIB = []  # Python's standard library directory, found on first use (sysconfig stays out of `import cute_py`)
_USER_FILES = {}  # file name -> is_user_file (a trace asks for the same few files many times)


def is_library_file(filename: str) -> bool:
    """Whether ``filename`` is a module of cute_py or of ``mlir_dialects``."""
    f = os.path.abspath(filename)
    return f.startswith(_PKG_DIR) or f.startswith(_MLIR_DIR)


def is_user_file(filename: str) -> bool:
    """Whether code of ``filename`` is the user's: not cute_py's, mlir_dialects', frozen, or Python's stdlib."""
    known = _USER_FILES.get(filename)
    if known is None:
        if not _STDLIB:
            import sysconfig

            _STDLIB.append(os.path.join(os.path.abspath(sysconfig.get_paths()["stdlib"]), ""))
        known = _USER_FILES[filename] = not (is_library_file(filename) or filename.startswith("<frozen")
                                              or filename.startswith(_STDLIB[0]))
    return known


def user_frame() -> FrameType | None:
    """The innermost frame of user code (outside cute_py, mlir_dialects and Python's standard library, whose
    ``contextlib`` runs the library's ``with`` blocks), or ``None``."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        user = _USER_FILES.get(name)
        if user is None:
            user = is_user_file(name)
        if user:
            return frame
        frame = frame.f_back
    return None


def user_location() -> tuple[str, int]:
    """``(filename, line)`` of the innermost user frame; ``("<unknown>", 0)`` when there is none."""
    frame = user_frame()
    if frame is None:
        return "<unknown>", 0
    return frame.f_code.co_filename, frame.f_lineno


class LocatedError(CuteError):
    """An error about a line of the user's code: the message starts with that line's ``file:line``.

    ``where`` (a ``(file, line)`` pair) names the place; by default it is the innermost user frame
    when the error is made.  ``.where`` keeps it and ``.reason`` the message without it.
    """

    def __init__(self, message: object = "", *, where: tuple[str, int] | None = None) -> None:
        self.where = user_location() if where is None else tuple(where)
        self.reason = str(message)
        super().__init__(f"{self.where[0]}:{self.where[1]}: {self.reason}")


# -- the compiler --------------------------------------------------------------------------------


class TraceError(LocatedError, TypeError):
    """A Python construct that cannot be traced into a kernel."""


class StaticTraceError(TraceError, StaticValueRequired):
    """A run-time value where tracing needs a static one: an index into a register fragment or a Python sequence,
    ``int(x)``. Inside a run-time loop with static bounds, it makes the loop unroll while tracing."""


class ArgumentError(LocatedError, TypeError):
    """A kernel or jit-function argument of a kind the compiler does not accept, or that does not match."""


class SpecMismatch(ArgumentError):
    """An argument does not have the dtype, shape, strides or alignment a kernel was compiled for."""


class GuardMismatch(SpecMismatch):
    """A call's run-time extents decide a comparison of the host code otherwise than the values it was compiled
    for did (the compile is specialised on that decision; another one is compiled for the new outcome)."""


class JitError(CuteError, RuntimeError):
    """Base of the compiler's errors that are not about a single traced construct."""


class CompileError(JitError):
    """Lowering the traced module to PTX or a cubin failed."""


class LaunchError(JitError):
    """Loading a cubin or launching a kernel through the CUDA driver failed."""


class CacheError(JitError):
    """A disk-cache entry could not be written (reading never raises: bad entries are recompiled)."""


class MissingExtraError(CuteError, ImportError):
    """A part of cute_py needs an optional dependency that is not installed; the message names the extra."""


# module a missing import names -> the extra that brings it
_EXTRAS = {"numba_cuda_mlir": "jit", "mlir": "jit", "mlir_dialects": "jit", "cuda": "jit", "numpy": "jit",
           "hypothesis": "testing"}


def is_missing_dependency(e: ImportError) -> bool:
    """Whether ``e`` says that an optional dependency is not installed (a module of another distribution, or the
    MLIR bindings), rather than that cute_py itself is broken (a name or module of cute_py that does not import:
    that error is the one to see, not an install hint)."""
    if type(e).__name__ == "BindingsNotFoundError":
        return True
    name = (getattr(e, "name", None) or "").split(".")[0]
    return isinstance(e, ModuleNotFoundError) and name not in ("", "cute_py", "examples")


def missing_extra(what: str, e: ImportError) -> MissingExtraError:
    """The ``MissingExtraError`` for ``what`` (a name of cute_py) failing to import with ``e``."""
    name = (getattr(e, "name", None) or "").split(".")[0]
    extra = _EXTRAS.get(name, "jit")
    if type(e).__name__ == "BindingsNotFoundError":
        extra = "jit"
    return MissingExtraError(f"cute_py.{what} needs the '{extra}' extra, which is not installed ({e}); install it "
                             f"with: pip install 'cute-py[{extra}]'")
