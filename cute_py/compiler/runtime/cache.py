"""The compile cache on disk, under ``CUTE_PY_CACHE_DIR`` (default ``~/.cache/cute_py``).

An entry is ``<key>.json`` (the metadata) next to ``<key>.cubin`` and ``<key>.ptx``. The metadata
holds the kernels' names and shared-memory sizes, the entry's dependency manifest (``deps``: the
source files and module values its traces used), the SHA-256 of the cubin and of the PTX, and the
SHA-256 of the metadata itself. Files are written to a temporary name and renamed (atomic); the
JSON is written last and is the commit point.

Reading never trusts an entry: every file is checked against its checksum, the metadata against
its own (so an edited shared-memory size is caught), its shape against the format, and a JSON
too large or too deeply nested to parse is a miss like any other bad entry; a missing,
unparsable or mismatching entry reads as a miss and the kernel is compiled (and the entry
rewritten). ``CUTE_PY_CACHE_DIR=`` (empty) turns the disk cache off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from typing import Any

__all__ = ["FORMAT", "cache_dir", "atomic_write", "library_fingerprint", "read_entry", "write_entry", "stats",
           "MAX_META_BYTES"]

FORMAT = 2
MAX_META_BYTES = 4 << 20  # a metadata file larger than this is not an entry of ours
stats = {"compiles": 0, "disk_hits": 0, "memory_hits": 0, "disk_rejects": 0, "disk_stale": 0}
_FINGERPRINT = []


def cache_dir() -> str | None:
    """The disk cache directory, or ``None`` when disabled (``CUTE_PY_CACHE_DIR`` set to empty)."""
    d = os.environ.get("CUTE_PY_CACHE_DIR")
    if d is None:
        return os.path.join(os.path.expanduser("~"), ".cache", "cute_py")
    return d or None


def _nvjitlink_wheel_library():
    """The path of the nvJitLink library of the pip wheel, if installed (see ``mlir_dialects.assembler``)."""
    from mlir_dialects.assembler import wheel_library

    return wheel_library()


def library_fingerprint() -> str:
    """A hash of everything in the libraries that changes generated code: the source files of cute_py and
    mlir_dialects (path, size and modification time: reading them all would cost ~15 ms per process),
    the Python version, the MLIR bindings chosen, and the installations of numba-cuda-mlir, cuda-bindings
    and nvJitLink, and the ptxas that assembles whole-program PTX (location, size and time)."""
    if _FINGERPRINT:
        return _FINGERPRINT[0]
    h = hashlib.sha256(f"format={FORMAT};python={sys.version};"
                       f"bindings={os.environ.get('MLIR_DIALECTS_BINDINGS', '')}\0".encode())
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
    wheres = []
    for name in ("numba_cuda_mlir", "cuda.bindings"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        wheres.append((name, None if spec is None else (spec.origin if spec.origin not in (None, "namespace")
                                                         else next(iter(spec.submodule_search_locations or []), None))))
    wheres.append(("libnvJitLink", _nvjitlink_wheel_library()))
    from mlir_dialects.assembler import find_ptxas

    wheres.append(("ptxas", find_ptxas()))
    for name, where in wheres:
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


def _meta_digest(meta):
    """The SHA-256 of the metadata without its own checksum (canonical JSON)."""
    body = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _valid_meta(meta, key):
    return (isinstance(meta, dict) and meta.get("format") == FORMAT and meta.get("key") == key
            and isinstance(meta.get("kernels"), dict) and meta["kernels"]
            and all(isinstance(k, str) and type(v) is int and v >= 0 for k, v in meta["kernels"].items())
            and isinstance(meta.get("deps"), dict)
            and isinstance(meta.get("cubin_sha256"), str) and isinstance(meta.get("ptx_sha256"), str)
            and meta.get("meta_sha256") == _meta_digest(meta))


def read_entry(key: str) -> tuple[dict[str, Any], bytes, str] | None:
    """``(meta, cubin, ptx)`` of an entry whose every file checks out, or ``None`` (missing or bad: the caller
    compiles and rewrites it). Never raises."""
    if cache_dir() is None:
        return None
    meta_path, cubin_path, ptx_path = _paths(key)
    try:
        with open(meta_path, "rb") as f:
            raw = f.read(MAX_META_BYTES + 1)
        with open(cubin_path, "rb") as f:
            cubin = f.read()
        with open(ptx_path, "rb") as f:
            ptx = f.read()
    except OSError:
        return None
    try:
        if len(raw) > MAX_META_BYTES:
            raise ValueError("metadata too large")
        meta = json.loads(raw.decode("utf-8"))
        ok = (_valid_meta(meta, key) and cubin[:4] == b"\x7fELF"
              and hashlib.sha256(cubin).hexdigest() == meta["cubin_sha256"]
              and hashlib.sha256(ptx).hexdigest() == meta["ptx_sha256"])
        text = ptx.decode("utf-8") if ok else None
    except (ValueError, TypeError, RecursionError, MemoryError, UnicodeDecodeError):
        ok = False  # unparsable, too deep, or not text
    if not ok:
        stats["disk_rejects"] += 1
        return None
    return meta, cubin, text


def atomic_write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in its directory (made if missing), then renamed."""
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


def write_entry(key: str, meta: dict[str, Any], cubin: bytes, ptx: str) -> bool:
    """Store an entry (cubin and PTX first, the metadata last); silently skipped when the disk is unusable."""
    if cache_dir() is None:
        return False
    meta_path, cubin_path, ptx_path = _paths(key)
    data = ptx.encode()
    meta = dict(meta, format=FORMAT, key=key, cubin_sha256=hashlib.sha256(cubin).hexdigest(),
                ptx_sha256=hashlib.sha256(data).hexdigest())
    meta["meta_sha256"] = _meta_digest(meta)
    try:
        atomic_write(cubin_path, cubin)
        atomic_write(ptx_path, data)
        atomic_write(meta_path, json.dumps(meta, sort_keys=True).encode())
    except OSError:
        return False
    return True
