"""Lowering of ``cute_nvgpu`` to NVVM and LLVM: one rule per op, kept in a table.

An op's rule is its class's ``lower(self, rewriter)`` method, beside the class's declarations in its unit
module: it builds ``nvvm`` ops where NVVM has the instruction, and ``llvm.inline_asm`` holding the PTX where it
does not, at ``rewriter.ip``, then erases or replaces the op. ``RULES`` maps each op name to its rule (read from
the op classes of the registry); ``lower(module)`` applies every rule as a Python rewrite pattern; an op with no
rule is a ``LoweringError`` naming it.
"""

from ._backend import ir, rewrite
from .dialect import DIALECT_NAME, verify
from .errors import LoweringError
from .ops.common import const_int, finish, inline_ptx, to_shared_cluster
from .registry import all_op_classes

__all__ = [
    "RULES",
    "rule_for",
    "lower",
    "dialect_ops_in",
    "required_ptx_isa",
    "inline_ptx",
    "const_int",
    "to_shared_cluster",
    "finish",
]

RULES = {cls.OPERATION_NAME: cls.lower for cls in all_op_classes() if callable(getattr(cls, "lower", None))}


def rule_for(name):
    """The lowering rule of the op called ``name``; ``LoweringError`` naming the op if there is none."""
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
