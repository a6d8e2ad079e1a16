"""The compile cache: in memory, and on disk under ``CUTE_PY_CACHE_DIR`` (default ``~/.cache/cute_py``).

An entry is ``<key>.json`` (metadata: kernel names and shared-memory sizes, the SHA-256 of the
cubin, the hashes of the kernels' source files) next to ``<key>.cubin`` and ``<key>.ptx``. Files
are written to a temporary name and renamed (atomic); the JSON is written last and is the
commit point. Reading never trusts an entry: a missing, unparsable or mismatching entry (bad
hash, not an ELF, other format version) reads as a miss and the kernel is recompiled.
``CUTE_PY_CACHE_DIR=`` (empty) turns the disk cache off.
"""

import hashlib
import json
import os
import tempfile

__all__ = ["FORMAT", "cache_dir", "library_fingerprint", "read_entry", "write_entry", "stats"]

FORMAT = 1
stats = {"compiles": 0, "disk_hits": 0, "memory_hits": 0, "disk_rejects": 0}
_FINGERPRINT = []


def cache_dir():
    """The disk cache directory, or ``None`` when disabled (``CUTE_PY_CACHE_DIR`` set to empty)."""
    d = os.environ.get("CUTE_PY_CACHE_DIR")
    if d is None:
        return os.path.join(os.path.expanduser("~"), ".cache", "cute_py")
    return d or None


def library_fingerprint():
    """A hash of everything in the libraries that changes generated code: the source files of cute_py and
    mlir_dialects (path, size and modification time: reading them all would cost ~15 ms per process),
    and the installations of numba-cuda-mlir, cuda-bindings and nvJitLink (location and time)."""
    if _FINGERPRINT:
        return _FINGERPRINT[0]
    h = hashlib.sha256(f"format={FORMAT}".encode())
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for root in (here, os.path.join(os.path.dirname(here), "mlir_dialects")):
        for dirpath, dirnames, files in sorted(os.walk(root)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for f in sorted(files):
                if f.endswith(".py"):
                    st = os.stat(os.path.join(dirpath, f))
                    rel = os.path.relpath(os.path.join(dirpath, f), os.path.dirname(here))
                    h.update(f"{rel}:{st.st_size}:{st.st_mtime_ns}\0".encode())
    import importlib.util

    # the installed numba-cuda-mlir, cuda-bindings and nvJitLink, by location and install time
    # (importlib.metadata would cost ~20 ms of imports per process)
    for name in ("numba_cuda_mlir", "cuda.bindings", "nvidia.nvjitlink"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        where = None if spec is None else (spec.origin if spec.origin not in (None, "namespace")
                                           else next(iter(spec.submodule_search_locations or []), None))
        try:
            st = os.stat(where) if where else None
        except OSError:
            st = None
        h.update(f"{name}={where}:{st and st.st_size}:{st and st.st_mtime_ns}\0".encode())
    _FINGERPRINT.append(h.hexdigest())
    return _FINGERPRINT[0]


def _paths(key):
    d = cache_dir()
    base = os.path.join(d, key[:2], key)
    return base + ".json", base + ".cubin", base + ".ptx"


def read_entry(key):
    """``(meta, cubin)`` of a valid entry, or ``None`` (missing or corrupt: the caller recompiles)."""
    if cache_dir() is None:
        return None
    meta_path, cubin_path, _ = _paths(key)
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        with open(cubin_path, "rb") as f:
            cubin = f.read()
    except (OSError, ValueError):
        return None
    ok = (isinstance(meta, dict) and meta.get("format") == FORMAT and meta.get("key") == key
          and isinstance(meta.get("kernels"), dict)
          and all(isinstance(k, str) and type(v) is int for k, v in meta["kernels"].items())
          and cubin[:4] == b"\x7fELF" and hashlib.sha256(cubin).hexdigest() == meta.get("cubin_sha256"))
    if not ok:
        stats["disk_rejects"] += 1
        return None
    return meta, cubin


def read_ptx(key):
    """The PTX stored with an entry, or ``None``."""
    if cache_dir() is None:
        return None
    try:
        with open(_paths(key)[2], encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def _atomic_write(path, data):
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_entry(key, meta, cubin, ptx):
    """Store an entry (cubin and PTX first, the metadata last); silently skipped when the disk is unusable."""
    if cache_dir() is None:
        return False
    meta_path, cubin_path, ptx_path = _paths(key)
    meta = dict(meta, format=FORMAT, key=key, cubin_sha256=hashlib.sha256(cubin).hexdigest())
    try:
        _atomic_write(cubin_path, cubin)
        _atomic_write(ptx_path, ptx.encode())
        _atomic_write(meta_path, json.dumps(meta, sort_keys=True).encode())
    except OSError:
        return False
    return True
