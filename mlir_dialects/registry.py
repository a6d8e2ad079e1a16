"""The registry of the ``cute_nvgpu`` ops: the unit modules of ``mlir_dialects.ops``, named in ``UNITS``, read
for the op classes each defines; from those classes, the builders and the package's exports, and the dialect
loaded into a context.

Nothing registers itself: the tables are built, on first use, by reading the modules that ``UNITS`` names (an
op class is a class of ``CuteOp`` with an op name, defined in its unit module). Adding a unit is adding its
module and its name here; adding an op is defining its class in a unit module.
"""

import functools
import importlib

from ._backend import ir
from .dialect import DIALECT_NAME, CuteNvgpu, CuteOp
from .errors import DialectError

__all__ = ["UNITS", "unit_modules", "all_op_classes", "builders", "exports", "load_dialect", "make_context"]

UNITS = ("cpasync", "tma", "tensormap", "mbarrier", "sync", "warp", "memory", "warpgroup", "mma", "tcgen05",
         "numeric", "integer")


def unit_modules():
    """The modules of ``UNITS``, in order."""
    return [importlib.import_module(f"{__package__}.ops.{name}") for name in UNITS]


def _declared(module):
    """The op classes ``module`` defines, in definition order."""
    return [v for v in vars(module).values()
            if isinstance(v, type) and issubclass(v, CuteOp) and v.__module__ == module.__name__
            and "OPERATION_NAME" in vars(v)]


@functools.cache
def _op_classes():
    classes = tuple(c for m in unit_modules() for c in _declared(m))
    names = [c.OPERATION_NAME for c in classes]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DialectError(f"ops defined twice in the units of {DIALECT_NAME}: {', '.join(twice)}")
    return classes


def all_op_classes():
    """Every op class of the dialect: the units in ``UNITS`` order, each in definition order."""
    return list(_op_classes())


def _builder_function(cls):
    """The package-level builder of ``cls``: its ``builder`` under ``builder_name()``, with its signature."""
    method = cls.builder

    def build(*args, **kwargs):
        return method(*args, **kwargs)

    build.__name__ = build.__qualname__ = cls.builder_name()
    build.__module__ = cls.__module__
    build.__doc__ = method.__doc__ if method.__func__ is not CuteOp.builder.__func__ else (
        f"Build ``{cls.OPERATION_NAME}`` (see ``{cls.__name__}``)."
    )
    build.__signature__ = cls.builder_signature()
    build.__wrapped__ = method
    return build


@functools.cache
def _builders():
    out = {}
    for cls in _op_classes():
        name = cls.builder_name()
        if name in out:
            raise DialectError(f"two ops of {DIALECT_NAME} have the builder name {name!r}")
        out[name] = _builder_function(cls)
    return out


def builders():
    """``{builder name: builder function}`` of every op."""
    return dict(_builders())


@functools.cache
def _exports():
    out = dict(_builders())
    for cls in _op_classes():
        out[cls.__name__] = cls
    for module in unit_modules():
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if out.setdefault(name, value) is not value:
                raise DialectError(f"{module.__name__}.{name} is also exported by another unit of {DIALECT_NAME}")
    return out


def exports():
    """``{name: object}`` of what the units give the package: each op's builder and class, and the names in each
    unit's ``__all__``."""
    return dict(_exports())


def load_dialect(context=None):
    """Load ``cute_nvgpu`` (and the dialects it lowers to) into ``context`` (default: the current one)."""
    classes = _op_classes()
    CuteNvgpu.operations[:] = classes  # the dialect is exactly the units' op classes
    ctx = context or ir.Context.current
    ctx.enable_multithreading(False)  # see make_context
    if ctx.is_registered_operation(classes[0].OPERATION_NAME):
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
