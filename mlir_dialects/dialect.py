"""The ``cute_nvgpu`` dialect object, the base class of its ops, and verification.

The dialect is declared in Python with the bindings' ``dialects.ext`` DSL, which emits it as
IRDL and loads it into a context (``registry.load_dialect``): the operand, attribute and result
declarations of each op class become IRDL constraints, and each class's ``verify_rules`` runs as
the op's verifier (through ``verify_invariants``). Rules raise ``VerificationError`` from Python
builders at once, and become MLIR diagnostics when a whole module is verified.

Each op class carries its whole definition: the declarations, ``verify_rules``, the ``builder``
classmethod (exported from the package under ``builder_name()``) and the ``lower`` method (its
lowering rule, see ``lowering``).
"""

import importlib.util
import inspect
import sys
import types

from ._backend import BINDINGS, ext, ir
from .errors import DialectError, OperandTypeError, VerificationError
from .types import AddressSpace, address_space_of, integer_width_of

__all__ = [
    "DIALECT_NAME",
    "CuteNvgpu",
    "CuteOp",
    "Flag",
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


class CuteNvgpu(ext.Dialect, name=DIALECT_NAME):
    """Hopper's copy and synchronisation vocabulary: cp.async, TMA, tensormaps, mbarriers, fences, warps; and the
    numbers arith cannot express for PTX (8-bit float and TF32 conversions, approximate math)."""


def _dialect_module():
    """The bindings look for a Python module of an op's dialect (``<bindings>.dialects.cute_nvgpu``) each time they
    wrap one of its ops, and do not remember a search that failed: an import attempt per op wrapped, about a tenth
    of a large kernel's compile. The dialect is declared here, not in such a module, so an empty module stands for
    it and the search succeeds once."""
    name = f"{BINDINGS}.dialects.{DIALECT_NAME}"
    if name not in sys.modules and importlib.util.find_spec(name) is None:
        sys.modules[name] = types.ModuleType(name, "the cute_nvgpu dialect is declared in mlir_dialects.dialect")


_dialect_module()


class CuteOp(CuteNvgpu.Operation):
    """Base of every ``cute_nvgpu`` op: rule checks shared by the verifiers, and checked building.

    Subclasses set ``PTX_ISA`` (the least PTX ISA version, times ten, that their PTX needs),
    ``ARCH`` (the chip their PTX assembles for, when not every Hopper) and ``BUILDER`` (the name of
    their builder in the package, when not the op's own name); they implement ``verify_rules``,
    which raises through ``fail`` / ``expect_space``, the ``lower(self, rewriter)`` method, and,
    when the fields alone are not the builder's arguments, the ``builder`` classmethod.
    """

    PTX_ISA = 80
    ARCH = "sm_90a"
    BUILDER = None

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

    def check_choice(self, rule, what, value, allowed):
        """Fail rule ``rule`` unless ``value`` (``what``) is one of ``allowed``."""
        if value not in allowed:
            shown = ", ".join(repr(a) if a == "" else str(a) for a in allowed)
            self.fail(rule, f"{what} must be one of {shown}, got {value!r}")
        return value

    def check_flags(self, *names):
        """Fail rule ``<name>-flag`` unless each attribute ``names`` is a boolean (an i1 integer attribute)."""
        for name in names:
            attr = self.attributes[name]
            if str(getattr(attr, "type", "")) != "i1":
                self.fail(f"{name}-flag", f"{name} is a boolean (an i1 attribute), got {attr}")

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

    @classmethod
    def builder(cls, *args, **kwargs):
        """Build the op from its operands, attributes and result types, as declared (see ``build``)."""
        return cls.build(*args, **kwargs)

    @classmethod
    def builder_name(cls):
        """The name of the op's builder in the package: ``BUILDER``, else the op's own name."""
        return cls.BUILDER or cls.OPERATION_NAME.split(".", 1)[1]

    @classmethod
    def builder_signature(cls):
        """The signature of the op's builder (that of ``__init__`` for the default one, without location)."""
        if cls.builder.__func__ is not CuteOp.builder.__func__:
            return inspect.signature(cls.builder)
        sig = inspect.signature(cls.__init__)
        return sig.replace(parameters=[p for p in sig.parameters.values() if p.name not in ("self", "loc", "ip")])


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
