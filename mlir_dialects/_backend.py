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
        mode = os.RTLD_NOW | os.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0)
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


def _load(prefix):
    names = ("ir", "passmanager", "rewrite", "dialects.ext", "dialects.irdl", "dialects.llvm",
             "dialects.nvvm", "dialects.gpu", "dialects.arith")
    return [importlib.import_module(f"{prefix}.{n}") for n in names]


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
