"""Tracing the recorded launches of a jit function into one MLIR module, and running the stages to a cubin.

:func:`build` traces each launched ``@kernel`` into one ``llvm.func`` of a ``gpu.module`` (its TMA atoms, gmem
tensors and run-time scalars become parameters; every other argument is static) and runs the named stages
(``stages``) to PTX and a cubin, with the compile options (``options``: line information, optimisation level).
A kernel bound to an instance gets the snapshot of ``self`` taken at its launch, and may not change it
(``methods.check_unchanged``).
"""

from __future__ import annotations

import re

import inspect
from typing import TYPE_CHECKING, Any

from .. import device
from ..errors import ArgumentError, CompileError, CuteError, LocatedError, TraceError, is_user_file
from .lang import builder as _builder
from .specs import methods as _methods
from .flow import rewrite as _rewrite
from ..core.symbolic import substitute
from .specs.args import TAG_SHIFT
from .specs.options import CompileOptions
from .lang.values import TracedFloat
from .lang.traced_int import TracedInt

if TYPE_CHECKING:
    from .stages import StageResults

__all__ = ["build", "located", "short_repr", "PARAM_TYPES"]

PARAM_TYPES = {"desc": _builder.DESC_PARAM, "ptr": "!llvm.ptr<1>", "Int32": "i32", "Int64": "i64", "Float32": "f32"}
_DEFAULT_OPTIONS = CompileOptions()


def short_repr(x: object, n: int = 60) -> str:
    """``repr(x)``, cut to about ``n`` characters."""
    text = repr(x)
    return text if len(text) <= n else text[:n] + "...]"


def located(e: CuteError) -> CuteError | None:
    """A copy of the CuteError ``e`` whose message starts with the user's file:line (from its traceback); ``None``
    when it has one already or none can be found."""
    if isinstance(e, LocatedError):  # located when made
        return None
    msg = str(e)
    tb, where = e.__traceback__, None
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    if where is None or msg.startswith(where.split(":")[0]):
        return None
    try:
        new = type(e)(f"{where}: {msg}")
    except Exception:
        return None
    return new


def endless_recursion(e: RecursionError, what: str) -> TraceError:
    """The ``TraceError`` of a ``RecursionError`` raised while tracing ``what``: at the user's line in the function
    of the user's code that recursed (the user function most often on the traceback, at its line most often
    there: the recursing call)."""
    frames, tb = [], e.__traceback__
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    if not frames:
        return TraceError(f"tracing {what} exceeded Python's recursion limit ({e})")
    counts = {}
    for code, _ in frames:
        counts[code] = counts.get(code, 0) + 1
    code = max(counts, key=lambda c: counts[c])
    lines = {}
    for c, ln in frames:
        if c is code:
            lines[ln] = lines.get(ln, 0) + 1
    line = max(lines, key=lambda ln: lines[ln])  # the line of the call that recurses
    return TraceError(f"the function {code.co_name} recursed without end while tracing {what} ({counts[code]} "
                      f"nested calls before Python's recursion limit): a helper called at trace time runs as Python, "
                      f"so its recursion needs a base case reached with static values (a run-time condition does "
                      f"not stop it)", where=(code.co_filename, line))


def build(launches: list[Any], recorder: Any = None, *, options: CompileOptions | None = None, upto: str = "cubin",
          lowered: bool = False) -> StageResults:
    """Run the stages (``stages.STAGES``) for every launched kernel, traced into one module, up to ``upto``; a
    ``stages.StageResults``. ``recorder`` (a ``deps.Recorder``) records the code the kernel traces run;
    ``options`` the compile options (target, line information, optimisation level); ``lowered`` also keeps the
    lowered module's text."""
    import mlir_dialects as md
    from mlir_dialects import bindings as mlir

    from . import stages
    from .builtins.context import KernelContext

    options = options or _DEFAULT_OPTIONS
    ctx = md.make_context()

    cooperative = set()  # the kernels that sync their grid (launched cooperatively)

    def trace():
        smem = {}
        module = mlir.ir.Module.parse(
            "module attributes {gpu.container_module} {\n  gpu.module @cute_py_kernels {\n"
            f"    llvm.mlir.global external @{_builder.SMEM_SYMBOL}() {{addr_space = 3 : i32, alignment = "
            f"{_builder.SMEM_BASE_ALIGN} : i64}} : !llvm.array<0 x i8>\n  }}\n}}")
        gpu_block = module.body.operations[0].regions[0].blocks[0]
        for ln in launches:
            if recorder is None:
                smem[ln.name] = _trace_kernel(mlir, gpu_block, ln, KernelContext(), options.line_info, cooperative,
                                              options.gpu_arch)
            else:
                with recorder:
                    smem[ln.name] = _trace_kernel(mlir, gpu_block, ln, KernelContext(), options.line_info,
                                                  cooperative, options.gpu_arch)
        return module, smem

    def failed(stage, e):
        if not isinstance(e, md.DialectError):
            return None
        if stage == "cubin":
            return CompileError(str(e))
        return CompileError(f"compiling {', '.join(ln.name for ln in launches)} failed: {e}")

    target = stages.StageOptions(chip=options.gpu_arch, features=options.features, line_info=options.line_info,
                                 opt_level=options.opt_level)
    with ctx, mlir.ir.Location.unknown(ctx):
        r = stages.run(trace, target, upto=upto, lowered_text=lowered, on_error=failed)
    r.cooperative = sorted(cooperative)
    return r


_SCALAR_LEAF = re.compile(r"arg\d+")  # the leaf of an Int32/Int64 argument (kernel._convert)


def _kernel_value(b, kind, v, orig):
    """The value a kernel parameter (or static argument) ``orig`` takes inside the traced kernel."""
    if kind == "static":
        return v
    if kind == "sym":  # a value holding run-time extents: each leaf is a parameter, expressions are recomputed
        inner, slots = v
        value = _kernel_value(b, *inner, orig)
        # an extent or stride is >= 0; an integer argument of the jit function (leaf ``argN``) may be negative
        env = {name: TracedInt(b.params[j], 32 if b.launch.params[j][0] == "Int32" else 64,
                               nonneg=_SCALAR_LEAF.fullmatch(name) is None,
                               known_divisor=b.launch.params[j][1].known_divisor)
               for name, j in slots.items()}
        b.param_leaves.update((id(b.params[j]), name) for name, j in slots.items())
        return substitute(value, lambda s: s.evaluate(env))
    if kind == "tuple":
        seq_type, subs = v
        return seq_type(_kernel_value(b, k, sv, o) for (k, sv), o in zip(subs, orig))
    if kind == "desc":
        b.descriptors[id(orig)] = b.params[v]
        return orig
    if kind == "ptr":
        tag = orig.engine.address
        b.gmem_bases.append((tag, (1 << TAG_SHIFT) - (tag & ((1 << TAG_SHIFT) - 1)), b.params[v]))
        return orig
    if kind == "Float32":
        return TracedFloat(b.params[v])
    return TracedInt(b.params[v], 32 if kind == "Int32" else 64)


def _locate_function(b, fn):
    """Give the kernel's function and its returns the ``def`` line of ``fn`` (line information)."""
    code = fn.__code__
    loc = b.ir.Location.file(code.co_filename, code.co_firstlineno, 0)
    try:
        b.func.location = loc
        for blk in b.region.blocks:
            for op in blk.operations:
                if op.operation.name == "llvm.return":
                    op.operation.location = loc
    except AttributeError:  # bindings whose locations are read-only: the parse-time ones stay
        pass


def _trace_kernel(mlir, gpu_block, ln, tracer, line_info=False, cooperative=None, arch="sm_90a"):
    """Trace the kernel of launch ``ln`` into ``gpu_block`` for the target ``arch``; its dynamic shared-memory bytes.
    Its name is added to the set ``cooperative`` when it syncs its grid."""
    types = [PARAM_TYPES[kind] for kind, _ in ln.params]
    b = _builder.KernelBuilder(mlir, gpu_block, ln.name, types, tuple(ln.block))
    b.launch = ln
    b.arch = arch
    if getattr(ln, "min_blocks", None) is not None:
        b.func.attributes["nvvm.minctasm"] = b.ir.IntegerAttr.get(b._i32, ln.min_blocks)
    kfn = ln.call.kernel.fn
    fn = _rewrite.transformed(kfn, kernel=True)
    bound = ln.call.bound
    before = _methods.state_of(ln.call.args[0]) if bound else None
    with device.tracing(tracer):
        with b:
            args, kwargs = [], {}
            for pos, (kind, v) in ln.kernel_args:
                orig = ln.call.args[pos] if type(pos) is int else ln.call.kwargs[pos]
                val = _kernel_value(b, kind, v, orig)
                if type(pos) is int:
                    args.append(val)
                else:
                    kwargs[pos] = val
            try:
                result = fn(*args, **kwargs)
                if result is not None:
                    f, line = _return_line(kfn)
                    raise TraceError(f"the kernel {fn.__name__} returned {short_repr(result)}: a kernel returns "
                                     f"nothing (its launch has no result); write results to a tensor argument",
                                     where=(f, line))
                if bound:
                    _methods.check_unchanged(ln.call.args[0], before, kfn.__name__,
                                             (kfn.__code__.co_filename, kfn.__code__.co_firstlineno))
                b.finish()
            except CuteError as e:
                new = located(e)
                if new is not None:
                    raise new from e
                raise
            except RecursionError as e:
                raise endless_recursion(e, f"the kernel {kfn.__name__}") from None
    if line_info:
        _locate_function(b, kfn)
    if b.cooperative and cooperative is not None:
        cooperative.add(ln.name)
    ln.assumed = dict(b.assumed)  # cute.assume on run-time extents in the kernel: checked at each call
    used = b.smem_region.total if b.smem_region is not None else 0
    if ln.smem is not None and ln.smem < used:
        f, line = ln.where
        raise ArgumentError(f"launch(smem={ln.smem}) of {ln.name} is less than the {used} bytes of shared memory "
                            f"the kernel allocates", where=(f, line))
    return max(used, ln.smem or 0)


def _return_line(fn):
    """(file, line) of the first ``return <value>`` statement of ``fn`` (its ``def`` line when none is found)."""
    import ast
    import textwrap
    import tokenize

    code = fn.__code__
    try:
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, tokenize.TokenError):
        return code.co_filename, code.co_firstlineno
    todo = list(tree.body[0].body) if tree.body and hasattr(tree.body[0], "body") else []
    while todo:  # the kernel's own statements (nested functions and classes have returns of their own)
        node = todo.pop(0)
        if isinstance(node, ast.Return) and node.value is not None:
            return code.co_filename, first + node.lineno - 1
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return code.co_filename, code.co_firstlineno
