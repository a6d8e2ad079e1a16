"""nvJitLink's C API through ctypes: PTX in, cubin out, through a library this module opened itself.

Calling the library through its own handle means the copy that assembles is the one chosen here, whichever
other ``libnvJitLink.so.13`` another package (torch, a CUDA toolkit) has loaded into the process: on Linux the
library is opened ``RTLD_LOCAL | RTLD_DEEPBIND``, so neither its exported functions nor its references to its
own symbols can be taken over by another copy. It also keeps the first assembly in a process cheap (the
library's ``dlopen`` only; no wrapper package to import).

Search order (:func:`candidates`): the pip wheel ``nvidia-nvjitlink`` on ``sys.path``, then the dynamic
loader's own search for ``libnvJitLink.so.13`` (``LD_LIBRARY_PATH``, the system cache), then
``$CUDA_HOME/lib64``, ``$CUDA_PATH/lib64`` and ``/usr/local/cuda/lib64``.
"""

import ctypes
import os
import sys

__all__ = ["SONAME", "RESULTS", "NvJitLinkError", "Library", "wheel_library", "candidates", "open_library"]

SONAME = "libnvJitLink.so.13"
_WHEEL_PATHS = (("nvidia", "cu13", "lib", SONAME), ("nvidia", "nvjitlink", "lib", SONAME))
# nvJitLinkResult, in the order of nvJitLink.h
RESULTS = ("SUCCESS", "ERROR_UNRECOGNIZED_OPTION", "ERROR_MISSING_ARCH", "ERROR_INVALID_INPUT", "ERROR_PTX_COMPILE",
           "ERROR_NVVM_COMPILE", "ERROR_INTERNAL", "ERROR_THREADPOOL", "ERROR_UNRECOGNIZED_INPUT", "ERROR_FINALIZE",
           "ERROR_NULL_INPUT", "ERROR_INCOMPATIBLE_OPTIONS", "ERROR_INCORRECT_INPUT_TYPE", "ERROR_ARCH_MISMATCH",
           "ERROR_OUTDATED_LIBRARY", "ERROR_MISSING_FATBIN", "ERROR_UNRECOGNIZED_ARCH", "ERROR_UNSUPPORTED_ARCH",
           "ERROR_LTO_NOT_ENABLED")
_INPUT_PTX = 2  # nvJitLinkInputType NVJITLINK_INPUT_PTX
_RTLD_DI_LINKMAP = 2


class NvJitLinkError(Exception):
    """A call of the library failed: ``result`` is the nvJitLinkResult's name, ``log`` the error log."""

    def __init__(self, call, code, log=""):
        self.call, self.code, self.log = call, code, log
        self.result = RESULTS[code] if 0 <= code < len(RESULTS) else f"result {code}"
        super().__init__(f"{call}: {self.result}" + (f": {log}" if log else ""))


class _LinkMap(ctypes.Structure):  # the head of glibc's struct link_map
    _fields_ = [("l_addr", ctypes.c_size_t), ("l_name", ctypes.c_char_p)]


def _opened_path(handle, fallback):
    """The file the dynamic loader opened for ``handle`` (glibc's ``dlinfo``), else ``fallback``."""
    try:
        libc = ctypes.CDLL(None)
        lm = ctypes.POINTER(_LinkMap)()
        if libc.dlinfo(ctypes.c_void_p(handle), _RTLD_DI_LINKMAP, ctypes.byref(lm)) == 0 and lm and lm[0].l_name:
            return os.path.realpath(lm[0].l_name.decode())
    except (AttributeError, OSError, ValueError):
        pass
    return fallback


class Library:
    """One opened nvJitLink library: :attr:`path` (the file), :attr:`version` (``(major, minor)``), :meth:`link`."""

    _SIGNATURES = {
        "nvJitLinkCreate": (ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p)),
        "nvJitLinkDestroy": (ctypes.POINTER(ctypes.c_void_p),),
        "nvJitLinkAddData": (ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p),
        "nvJitLinkComplete": (ctypes.c_void_p,),
        "nvJitLinkGetLinkedCubinSize": (ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)),
        "nvJitLinkGetLinkedCubin": (ctypes.c_void_p, ctypes.c_char_p),
        "nvJitLinkGetErrorLogSize": (ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)),
        "nvJitLinkGetErrorLog": (ctypes.c_void_p, ctypes.c_char_p),
        "nvJitLinkVersion": (ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)),
    }

    def __init__(self, name):
        mode = ctypes.DEFAULT_MODE
        if sys.platform.startswith("linux"):
            mode = os.RTLD_NOW | os.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0)
        self._lib = ctypes.CDLL(name, mode=mode)
        self._fn = {}
        for fname, argtypes in self._SIGNATURES.items():
            fn = getattr(self._lib, fname)  # AttributeError: not an nvJitLink library
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
            self._fn[fname] = fn
        self.path = _opened_path(self._lib._handle, name)
        major, minor = ctypes.c_uint(), ctypes.c_uint()
        self._check("nvJitLinkVersion", ctypes.byref(major), ctypes.byref(minor))
        self.version = (major.value, minor.value)

    def _check(self, fname, *args, handle=None):
        code = self._fn[fname](*args)
        if code != 0:
            raise NvJitLinkError(fname, code, self._error_log(handle) if handle is not None else "")

    def _error_log(self, handle):
        size = ctypes.c_size_t()
        if self._fn["nvJitLinkGetErrorLogSize"](handle, ctypes.byref(size)) != 0 or size.value == 0:
            return ""
        buf = ctypes.create_string_buffer(size.value)
        if self._fn["nvJitLinkGetErrorLog"](handle, buf) != 0:
            return ""
        return buf.value.decode(errors="replace").strip()

    def link(self, ptx, options, name="kernel.ptx"):
        """The cubin of the PTX bytes ``ptx`` linked with ``options`` (e.g. ``["-arch=sm_90a"]``);
        :class:`NvJitLinkError` (with the library's error log) on failure."""
        handle = ctypes.c_void_p()
        opts = (ctypes.c_char_p * len(options))(*(o.encode() for o in options))
        self._check("nvJitLinkCreate", ctypes.byref(handle), len(options), opts)
        try:
            self._check("nvJitLinkAddData", handle, _INPUT_PTX, ptx, len(ptx), name.encode(), handle=handle)
            self._check("nvJitLinkComplete", handle, handle=handle)
            size = ctypes.c_size_t()
            self._check("nvJitLinkGetLinkedCubinSize", handle, ctypes.byref(size), handle=handle)
            cubin = ctypes.create_string_buffer(size.value)
            self._check("nvJitLinkGetLinkedCubin", handle, cubin, handle=handle)
            return cubin.raw
        finally:
            self._fn["nvJitLinkDestroy"](ctypes.byref(handle))


def find_on_sys_path(relative_paths, accept=os.path.isfile):
    """The absolute path of the first of ``relative_paths`` (tuples of path parts) under an entry of ``sys.path``
    that ``accept`` takes (a pip wheel's file), or ``None``; entries are tried in order, each with every path."""
    for entry in sys.path:
        if not isinstance(entry, str):  # the import system skips such entries too
            continue
        for parts in relative_paths:
            path = os.path.join(entry or ".", *parts)
            if accept(path):
                return os.path.abspath(path)
    return None


def wheel_library():
    """The path of the pip wheel's ``libnvJitLink.so.13`` (``nvidia-nvjitlink``) on ``sys.path``, or ``None``."""
    return find_on_sys_path(_WHEEL_PATHS)


def candidates():
    """The names :func:`open_library` tries, in order (paths, and the bare soname for the loader's search)."""
    names = [p for p in (wheel_library(),) if p]
    names.append(SONAME)
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            path = os.path.join(root, "lib64", SONAME)
            if os.path.isfile(path) and path not in names:
                names.append(path)
    return names


def open_library():
    """The first :func:`candidates` entry that opens as an nvJitLink library, or ``None`` (with the reasons
    in :data:`last_errors`)."""
    last_errors.clear()
    for name in candidates():
        try:
            return Library(name)
        except (OSError, AttributeError, NvJitLinkError) as e:
            last_errors.append(f"{name}: {e}")
    return None


last_errors = []
