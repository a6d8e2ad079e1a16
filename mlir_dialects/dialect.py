"""The ``cute_nvgpu`` dialect object, the base class of its ops, loading and verification.

The dialect is declared in Python with the bindings' ``dialects.ext`` DSL, which emits it as
IRDL and loads it into a context: the operand, attribute and result declarations of each op
class become IRDL constraints, and each class's ``verify_rules`` runs as the op's verifier
(through ``verify_invariants``). Rules raise ``VerificationError`` from Python builders at
once, and become MLIR diagnostics when a whole module is verified.
"""

import importlib

from ._backend import ext, ir
from .errors import DialectError, OperandTypeError, VerificationError
from .types import AddressSpace, address_space_of, integer_width_of

__all__ = [
    "DIALECT_NAME",
    "CuteNvgpu",
    "CuteOp",
    "Flag",
    "OP_MODULES",
    "all_op_classes",
    "load_dialect",
    "make_context",
    "verify",
    "diagnostics_text",
    "i32_attr",
    "i64_attr",
    "str_attr",
    "bool_attr",
]

DIALECT_NAME = "cute_nvgpu"
# A boolean attribute: an i1 IntegerAttr (what ``ir.BoolAttr`` builds), declared by its base class.
Flag = ir.IntegerAttr
OP_MODULES = ("ops_cpasync", "ops_tma", "ops_tma_im2col", "ops_descriptor", "ops_mbarrier", "ops_sync", "ops_warp",
              "ops_numeric", "ops_mma", "ops_wgmma")


class CuteNvgpu(ext.Dialect, name=DIALECT_NAME):
    """Hopper's copy and synchronisation vocabulary: cp.async, TMA, tensormaps, mbarriers, fences, warps; and the
    numbers arith cannot express for PTX (8-bit float and TF32 conversions, approximate math)."""


class CuteOp(CuteNvgpu.Operation):
    """Base of every ``cute_nvgpu`` op: rule checks shared by the verifiers, and checked building.

    Subclasses set ``PTX_ISA`` (the least PTX ISA version, times ten, that their PTX needs)
    and implement ``verify_rules``, which raises through ``fail`` / ``expect_space``.
    """

    PTX_ISA = 80

    # -- verification -------------------------------------------------------------------
    def verify_rules(self):  # overridden by each op
        pass

    def verify_invariants(self):
        try:
            self.verify_rules()
        except DialectError as e:
            self.location.emit_error(str(e))
            return False
        except Exception as e:  # a bug in a rule must not crash the C++ verifier
            self.location.emit_error(f"'{self.OPERATION_NAME}' verifier failed internally: {e!r}")
            return False
        return True

    def fail(self, rule, detail, error=VerificationError):
        raise error(f"'{self.OPERATION_NAME}' breaks rule [{rule}]: {detail}")

    def expect_space(self, role, value, *spaces):
        """Fail rule ``<role>-address-space`` unless ``value`` is an LLVM pointer in one of ``spaces``."""
        got = address_space_of(value)
        if got in [int(s) for s in spaces]:
            return got
        want = " or ".join(f"!llvm.ptr<{int(s)}> ({AddressSpace(s).ptx})" for s in spaces)
        self.fail(f"{role}-address-space", f"{role} must be {want}, got {value.type}", OperandTypeError)

    def expect_int(self, role, value, *widths):
        got = integer_width_of(value)
        if got not in widths:
            want = " or ".join(f"i{w}" for w in widths)
            self.fail(f"{role}-type", f"{role} must be {want}, got {value.type}", OperandTypeError)
        return got

    def int_attr(self, name):
        return ir.IntegerAttr(self.attributes[name]).value

    def str_attr(self, name):
        return ir.StringAttr(self.attributes[name]).value

    def bool_attr(self, name):
        return ir.BoolAttr(self.attributes[name]).value

    # -- building -----------------------------------------------------------------------
    @classmethod
    def build(cls, *args, **kwargs):
        """Create the op at the current insertion point and check its rules at once.

        On a broken rule the op is erased again and ``VerificationError`` is raised.
        """
        op = cls(*args, **kwargs)
        try:
            op.verify_rules()
        except DialectError:
            op.operation.erase()
            raise
        return op


def all_op_classes():
    """Every op class of the dialect, in declaration order."""
    for name in OP_MODULES:
        importlib.import_module(f"{__package__}.{name}")
    return list(CuteNvgpu.operations)


def load_dialect(context=None):
    """Load ``cute_nvgpu`` (and the dialects it lowers to) into ``context`` (default: the current one)."""
    all_op_classes()
    ctx = context or ir.Context.current
    ctx.enable_multithreading(False)  # see make_context
    if ctx.is_registered_operation(f"{DIALECT_NAME}.cp_async"):
        return ctx
    with ctx:
        CuteNvgpu.load(reload=True)
    return ctx


def make_context():
    """A new MLIR context with ``cute_nvgpu`` loaded, and MLIR's multithreading off.

    The op verifiers are Python callbacks: a verifier run on MLIR's worker threads would wait
    for the interpreter lock that the calling thread holds, so the context stays single-threaded.
    """
    ctx = ir.Context()
    ctx.enable_multithreading(False)
    load_dialect(ctx)
    return ctx


def verify(module_or_op):
    """Verify a module or op (IRDL constraints, every ``cute_nvgpu`` rule); raise ``VerificationError``."""
    op = module_or_op.operation
    try:
        op.verify()
    except ir.MLIRError as e:
        raise VerificationError(f"verification failed: {diagnostics_text(e)}") from None
    return module_or_op


def diagnostics_text(error):
    """The messages of an ``ir.MLIRError``'s diagnostics and their notes (which name the op), on one line."""
    parts = []
    for d in error.error_diagnostics:
        parts.append(d.message)
        parts.extend(" ".join(n.message.split()) for n in d.notes)
    return "; ".join(parts) or str(error)


def i32_attr(v):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(v))


def i64_attr(v):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(v))


def str_attr(v):
    return ir.StringAttr.get(str(v))


def bool_attr(v):
    # an i1 IntegerAttr, equal to ir.BoolAttr.get(v); built as IntegerAttr because a false
    # BoolAttr is falsy and the ext builder would take it for a missing attribute
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(1), int(bool(v)))
