"""The one module that imports the MLIR Python bindings; the rest of the package imports them from here.

Source of the bindings, in order:

1. ``numba_cuda_mlir._mlir`` (pip ``numba-cuda-mlir==0.6.0``, LLVM 23 with the NVPTX backend).
   Its package ``__init__`` imports the whole Numba-MLIR compiler (about 0.3 s) before it
   reaches the bindings. Only two things in it matter here: the RTLD_DEEPBIND preload of
   the bundled LLVM/MLIR libraries (so that another LLVM in the process, Triton's say,
   cannot preempt their symbols) and the package path. When the package is not imported
   yet, this module does that preload itself and registers a light package object whose
   path is the real one; the first attribute asked of it that the light object lacks runs
   the real ``__init__`` in place, so code that later uses the rest of Numba-MLIR still
   gets the full package.
2. An upstream ``mlir`` package (``mlir.ir``, ``mlir.dialects.ext``...).

``MLIR_DIALECTS_BINDINGS=numba_cuda_mlir`` or ``=mlir`` forces one of them.
"""

import ctypes
import importlib
import importlib.util
import os
import sys
import types

from .errors import BindingsNotFoundError

__all__ = [
    "BINDINGS",
    "ir",
    "passmanager",
    "PassManager",
    "rewrite",
    "ext",
    "irdl",
    "llvm",
    "nvvm",
    "gpu",
    "arith",
]

_NCM = "numba_cuda_mlir"
# The libraries the package preloads, CAPI first (it needs no sibling, so DEEPBIND applies to it).
_PRELOAD = (
    "libMLIRPythonCAPI.so",
    "libMLIRPythonSupport-numba_cuda_mlir.so",
    "libMLIRToLLVM70.so",
    "libMLIRModernToNVVM.so",
)
_handles = []


class _LightPackage(types.ModuleType):
    """Stands for ``numba_cuda_mlir`` until something needs more of it than its path."""

    def __getattr__(self, name):
        init = self.__dict__.get("_mlir_dialects_init")
        if init is None:
            raise AttributeError(name)
        self.__dict__["_mlir_dialects_init"] = None
        with open(init, encoding="utf-8") as f:
            code = compile(f.read(), init, "exec")
        exec(code, self.__dict__)  # the real package __init__, run once, in this module
        return getattr(self, name)


def _register_light_numba_cuda_mlir():
    """Preload the bundled libraries with RTLD_DEEPBIND and register a light package; False if absent."""
    if _NCM in sys.modules:
        return True
    spec = importlib.util.find_spec(_NCM)
    if spec is None or not spec.submodule_search_locations:
        return False
    pkg_dir = list(spec.submodule_search_locations)[0]
    libs = os.path.join(pkg_dir, "_mlir", "_mlir_libs")
    if not os.path.isdir(libs):
        return False
    if sys.platform.startswith("linux"):
        # lazy binding: the libraries' functions are bound on first call (about 10 ms less than RTLD_NOW for the
        # 170 MB CAPI library); DEEPBIND still binds them to the bundled copies
        mode = os.RTLD_LAZY | os.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0)
        for name in _PRELOAD:
            path = os.path.join(libs, name)
            if os.path.exists(path):
                _handles.append(ctypes.CDLL(path, mode=mode))
    mod = _LightPackage(_NCM, "numba-cuda-mlir (light: bindings only until more is used)")
    mod.__file__ = spec.origin
    mod.__path__ = list(spec.submodule_search_locations)
    mod.__package__ = _NCM
    mod.__spec__ = spec
    mod.__loader__ = spec.loader
    mod.__dict__["_mlir_dialects_init"] = spec.origin
    sys.modules[_NCM] = mod
    return True


class _NoNumpy:
    """A meta-path finder that makes ``import numpy`` fail while the bindings load (see :func:`_load`)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ImportError("numpy is imported when an ElementsAttr builder first needs it")
        return None


# the attribute builders the bindings' ``ir`` module defines only when it can import numpy: the element type of
# each, made in the builder's context
_ELEMENTS_ATTRS = {
    "F64ElementsAttr": ("float64", lambda ir, ctx: ir.F64Type.get(context=ctx)),
    "I32ElementsAttr": ("int32", lambda ir, ctx: ir.IntegerType.get_signless(32, context=ctx)),
    "I64ElementsAttr": ("int64", lambda ir, ctx: ir.IntegerType.get_signless(64, context=ctx)),
    "IndexElementsAttr": ("int64", lambda ir, ctx: ir.IndexType.get(context=ctx)),
}


def _register_elements_builders(ir):
    """The ElementsAttr builders of the bindings, importing numpy when one is first used."""
    for kind, (dtype, element) in _ELEMENTS_ATTRS.items():
        def build(x, context, dtype=dtype, element=element):
            import numpy as np

            return ir.DenseElementsAttr.get(np.array(x, dtype=dtype), type=element(ir, context), context=context)

        ir.register_attribute_builder(kind)(build)


def _load(prefix):
    """The binding modules. Their ``ir`` imports numpy (about 45 ms) only to define four ElementsAttr builders
    that nothing here uses: when numpy is not imported yet, it is kept out while they load and the same builders
    are registered to import it on first use."""
    names = ("ir", "passmanager", "rewrite", "dialects.ext", "dialects.irdl", "dialects.llvm",
             "dialects.nvvm", "dialects.gpu", "dialects.arith")
    defer = "numpy" not in sys.modules
    if defer:
        sys.meta_path.insert(0, _NoNumpy)
    try:
        modules = [importlib.import_module(f"{prefix}.{n}") for n in names]
    finally:
        if defer:
            sys.meta_path.remove(_NoNumpy)
    if defer:
        _register_elements_builders(modules[0])
    return modules


def _import_bindings():
    forced = os.environ.get("MLIR_DIALECTS_BINDINGS", "")
    errors = []
    if forced in ("", _NCM):
        try:
            if _register_light_numba_cuda_mlir():
                return (_NCM + "._mlir", *_load(_NCM + "._mlir"))
            errors.append(f"{_NCM}: not installed")
        except ImportError as e:
            errors.append(f"{_NCM}: {e}")
    if forced in ("", "mlir"):
        try:
            return ("mlir", *_load("mlir"))
        except ImportError as e:
            errors.append(f"mlir: {e}")
    raise BindingsNotFoundError(
        "no MLIR Python bindings: install numba-cuda-mlir==0.6.0 (or an upstream `mlir` package); "
        + "; ".join(errors)
    )


BINDINGS, ir, passmanager, rewrite, ext, irdl, llvm, nvvm, gpu, arith = _import_bindings()
PassManager = passmanager.PassManager
