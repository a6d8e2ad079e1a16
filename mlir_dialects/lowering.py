"""Lowering of ``cute_nvgpu`` to NVVM and LLVM: one rule per op, kept in a table.

A rule is a function ``rule(op, rewriter)`` registered with ``@lowers(OpClass)``; it builds
``nvvm`` ops where NVVM has the instruction, and ``llvm.inline_asm`` holding the PTX where it
does not, at ``rewriter.ip``, then erases or replaces the op. ``lower(module)`` applies
every rule as a Python rewrite pattern; an op with no rule is a ``LoweringError`` naming it.
"""

from ._backend import ir, llvm, rewrite
from .dialect import DIALECT_NAME, all_op_classes, verify
from .errors import LoweringError
from .types import AddressSpace, pointer_type

__all__ = [
    "RULES",
    "lowers",
    "rule_for",
    "lower",
    "dialect_ops_in",
    "required_ptx_isa",
    "inline_ptx",
    "const_int",
    "to_shared_cluster",
    "finish",
]

RULES = {}  # op name -> lowering function


def lowers(op_class):
    """Register the decorated function as the lowering rule of ``op_class``."""

    def register(fn):
        name = op_class.OPERATION_NAME
        if name in RULES:
            raise LoweringError(f"two lowering rules for '{name}': {RULES[name].__name__} and {fn.__name__}")
        RULES[name] = fn
        return fn

    return register


def rule_for(name):
    """The lowering rule of the op called ``name``; ``LoweringError`` naming the op if there is none."""
    all_op_classes()
    try:
        return RULES[name]
    except KeyError:
        raise LoweringError(f"no lowering rule for op '{name}' (rules exist for {len(RULES)} ops)") from None


def dialect_ops_in(module):
    """Every ``cute_nvgpu`` op in ``module``, in walk order."""
    found = []
    prefix = DIALECT_NAME + "."

    def visit(op):
        if op.name.startswith(prefix):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def required_ptx_isa(module):
    """The least PTX ISA version (times ten) that the ``cute_nvgpu`` ops of ``module`` need; 0 when none."""
    classes = {c.OPERATION_NAME: c for c in all_op_classes()}
    return max((classes[op.name].PTX_ISA for op in dialect_ops_in(module) if op.name in classes), default=0)


def _at_op_location(rule):
    """``rule`` building its ops at the location of the op it lowers (so that line information survives)."""

    def located(op, rewriter):
        with op.location:
            return rule(op, rewriter)

    return located


def lower(module, *, check=True):
    """Rewrite every ``cute_nvgpu`` op of ``module`` into NVVM/LLVM, in place; returns ``module``."""
    if check:
        verify(module)
    names = sorted({op.name for op in dialect_ops_in(module)})
    patterns = rewrite.RewritePatternSet()
    for name in names:
        patterns.add(name, _at_op_location(rule_for(name)))
    rewrite.walk_and_apply_patterns(module.operation, patterns.freeze())
    left = sorted({op.name for op in dialect_ops_in(module)})
    if left:
        raise LoweringError(f"ops left after lowering: {', '.join(left)}")
    return module


# -- helpers the rules share ------------------------------------------------------------------


def inline_ptx(ptx, constraints, operands, result_type=None):
    """``llvm.inline_asm`` with side effects at the current insertion point; returns the op.

    Operands are ``$0``, ``$1``…: results first, then inputs, as in LLVM.
    """
    return llvm.InlineAsmOp(result_type, list(operands), ptx, constraints, has_side_effects=True)


def const_int(value, width=32):
    """An ``llvm.mlir.constant`` of type ``i<width>``."""
    t = ir.IntegerType.get_signless(width)
    return llvm.ConstantOp(t, ir.IntegerAttr.get(t, int(value))).result


def to_shared_cluster(ptr):
    """``ptr`` as a shared::cluster pointer (``llvm.addrspacecast`` from shared::cta when needed)."""
    if ptr.type.address_space == AddressSpace.SHARED_CLUSTER:
        return ptr
    return llvm.AddrSpaceCastOp(pointer_type(AddressSpace.SHARED_CLUSTER), ptr).result


def finish(op, rewriter, *results):
    """Replace ``op`` by ``results`` (or erase it when it has none)."""
    if results:
        rewriter.replace_op(op.operation, list(results))
    else:
        rewriter.erase_op(op.operation)
