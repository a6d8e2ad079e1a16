"""From a module holding ``cute_nvgpu`` ops to PTX (in-process) and to a cubin (nvJitLink, no GPU needed).

``to_ptx`` verifies, lowers a copy of the module (the caller's module is left as written),
points each ``gpu.module`` at ``#nvvm.target<chip, features>``, and runs::

    gpu.module(convert-arith-to-llvm, convert-nvvm-to-llvm, reconcile-unrealized-casts),

    gpu-module-to-binary{format=isa}

The same module gives byte-identical PTX. ``to_ptx(..., line_info=True)`` keeps the ops' file:line
locations and adds ``ensure-debug-info-scope-on-llvm-func{emission-kind=DebugDirectivesOnly}`` before
them, so that the PTX carries ``.file``/``.loc`` directives (no DWARF sections: what ``-lineinfo`` gives);
``opt_level`` sets the ``O`` of the NVVM target (LLVM's optimisation level; default 2).
"""

import re

from ._backend import gpu, ir, PassManager
from .assembler import assemble
from .dialect import diagnostics_text, verify
from .errors import PipelineError
from .lowering import lower, required_ptx_isa

__all__ = ["PIPELINE", "DEFAULT_CHIP", "DEFAULT_FEATURES", "lower_copy", "lower_for_ptx", "lowered_to_ptx", "to_ptx",
           "to_cubin", "ptx_isa_of"]

DEFAULT_CHIP = "sm_90a"
DEFAULT_FEATURES = "+ptx80"
PIPELINE = (
    "builtin.module(gpu.module(convert-arith-to-llvm,"
    "convert-nvvm-to-llvm,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})"
)
LINE_INFO_PASS = "ensure-debug-info-scope-on-llvm-func{emission-kind=DebugDirectivesOnly}"
_PTX_FEATURE = re.compile(r"\+ptx(\d+)")


def ptx_isa_of(features):
    """The PTX ISA version (times ten) named in an NVPTX feature string, e.g. 80 for ``+ptx80``; 0 if none."""
    found = _PTX_FEATURE.findall(features or "")
    return max(map(int, found), default=0)


def _gpu_modules(module):
    return [op for op in module.body.operations if op.operation.name == "gpu.module"]


def lower_copy(module, *, keep_locations=False, text=None):
    """A lowered copy of ``module`` (verified first); the argument is not changed. ``keep_locations``: the
    copy keeps the ops' source locations (by default they are dropped). ``text``: ``str(module)``, where the
    caller has printed it already (used without locations only)."""
    verify(module)
    if keep_locations:
        text = module.operation.get_asm(enable_debug_info=True)
    elif text is None:
        text = str(module.operation)
    work = ir.Module.parse(text, context=module.context)
    return lower(work, check=False)


def _features_for(module, features):
    """``features`` with its PTX ISA version raised to the least one the module's ops need."""
    need, have = required_ptx_isa(module), ptx_isa_of(features)
    if need <= have:
        return features
    if have:
        return _PTX_FEATURE.sub(f"+ptx{need}", features)
    return ",".join(f for f in (features, f"+ptx{need}") if f)


def lower_for_ptx(module, features=DEFAULT_FEATURES, *, line_info=False, text=None):
    """``(lowered, features)``: a lowered copy of ``module`` (which must hold exactly one ``gpu.module``; it is left
    as written) and ``features`` with its PTX ISA version raised to the least one the module's ops need (the
    tensormap ops need 8.3, ``dsmem_store`` 8.1). ``line_info``: the copy keeps the ops' locations; ``text``: as for
    :func:`lower_copy`. The first half of :func:`to_ptx`; :func:`lowered_to_ptx` is the second."""
    gpu_mods = _gpu_modules(module)
    if len(gpu_mods) != 1:
        raise PipelineError(f"to_ptx compiles a module holding exactly one gpu.module, found {len(gpu_mods)}")
    features = _features_for(module, features)
    return lower_copy(module, keep_locations=line_info, text=text), features


def lowered_to_ptx(lowered, chip=DEFAULT_CHIP, features=DEFAULT_FEATURES, *, line_info=False, opt_level=None):
    """PTX text of a module lowered by :func:`lower_for_ptx` (with the ``features`` it returned), compiled for
    ``chip``; ``line_info`` and ``opt_level`` as for :func:`to_ptx`. The module is consumed (the pipeline runs on
    it in place)."""
    if opt_level is not None and opt_level not in (0, 1, 2, 3):
        raise PipelineError(f"opt_level is 0, 1, 2 or 3, got {opt_level!r}")
    work = lowered
    ctx = work.context
    level = "" if opt_level is None else f"O = {opt_level}, "
    target = ir.Attribute.parse(f'#nvvm.target<{level}chip = "{chip}", features = "{features}">', context=ctx)
    for gm in _gpu_modules(work):
        gm.operation.attributes["targets"] = ir.ArrayAttr.get([target], context=ctx)
    work.operation.attributes["gpu.container_module"] = ir.UnitAttr.get(ctx)
    pipeline = PIPELINE.replace("builtin.module(", f"builtin.module({LINE_INFO_PASS},", 1) if line_info else PIPELINE
    try:
        PassManager.parse(pipeline, context=ctx).run(work.operation)
    except ir.MLIRError as e:
        raise PipelineError(f"the pipeline to PTX failed for chip={chip} features={features}: "
                            f"{diagnostics_text(e)}") from None
    binaries = [op for op in work.body.operations if op.operation.name == "gpu.binary"]
    if len(binaries) != 1:
        raise PipelineError(f"expected one gpu.binary after gpu-module-to-binary, found {len(binaries)}")
    obj = gpu.ObjectAttr(binaries[0].attributes["objects"][0])
    return bytes(obj.object).decode()


def to_ptx(module, chip=DEFAULT_CHIP, features=DEFAULT_FEATURES, *, line_info=False, opt_level=None):
    """PTX text of the single ``gpu.module`` in ``module``, compiled for ``chip``.

    ``features`` is the NVPTX feature string; its PTX ISA version is raised when an op of the
    module needs a later one (the tensormap ops need 8.3, ``dsmem_store`` 8.1). ``line_info``: ``.file``
    and ``.loc`` directives from the ops' locations; ``opt_level`` (0-3): LLVM's optimisation level.
    """
    work, features = lower_for_ptx(module, features, line_info=line_info)
    return lowered_to_ptx(work, chip, features, line_info=line_info, opt_level=opt_level)


def to_cubin(ptx, arch=DEFAULT_CHIP):
    """Assemble PTX into a cubin for ``arch``; needs no GPU.

    nvJitLink (pip ``nvidia-nvjitlink``) in-process when the loaded library is a version known to be good,
    else ptxas or nvJitLink in a child process (see ``mlir_dialects.assembler``).
    """
    return assemble(ptx, arch)
