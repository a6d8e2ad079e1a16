"""The exceptions of ``mlir_dialects``: every message names the rule that was broken and the values.

``DialectError`` is the root. Each subclass also derives from ``ValueError`` or ``TypeError``
so callers may catch the builtin they expect.
"""

__all__ = [
    "DialectError",
    "BindingsNotFoundError",
    "VerificationError",
    "OperandTypeError",
    "LoweringError",
    "PipelineError",
    "AssemblyError",
]


class DialectError(Exception):
    """Root of the exceptions raised by ``mlir_dialects``."""


class BindingsNotFoundError(DialectError, ImportError):
    """Neither ``numba_cuda_mlir._mlir`` nor an upstream ``mlir`` package could be imported."""


class VerificationError(DialectError, ValueError):
    """An op (or a module) broke a rule of the ``cute_nvgpu`` dialect or of MLIR."""


class OperandTypeError(VerificationError, TypeError):
    """An operand has the wrong type or address space for its op."""


class LoweringError(DialectError, ValueError):
    """A ``cute_nvgpu`` op has no lowering rule, or its rule failed."""


class PipelineError(DialectError, ValueError):
    """The pass pipeline from lowered MLIR to PTX failed."""


class AssemblyError(DialectError, ValueError):
    """The assembler refused the PTX (its error log is in the message), crashed in a child process, or is missing."""
