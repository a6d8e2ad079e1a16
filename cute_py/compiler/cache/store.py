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

__all__ = ["FORMAT", "cache_dir", "atomic_write", "library_fingerprint", "library_roots", "library_files",
           "read_entry", "write_entry", "stats", "MAX_META_BYTES"]

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


# the installed packages whose release changes generated code or the cubin: their ``*.dist-info`` versions (by
# distribution name prefix) and their files (by import name); mlir is the upstream MLIR bindings' package
_DISTRIBUTIONS = ("numba_cuda_mlir", "cuda_bindings", "mlir", "nvidia_nvjitlink", "nvidia_cuda_nvcc")
_IMPORTED_PACKAGES = ("numba_cuda_mlir", "cuda.bindings", "mlir")
_SKIPPED_FILES = (".pyc", ".pyo")


def library_roots() -> list[str]:
    """The directories of the two packages whose every file is in :func:`library_fingerprint`: cute_py (the
    package this module belongs to) and mlir_dialects."""
    import mlir_dialects

    top = sys.modules[__name__.partition(".")[0]]
    return [os.path.dirname(os.path.abspath(m.__file__)) for m in (top, mlir_dialects)]


def library_files() -> list[tuple[str, str]]:
    """``[(name, path)]`` of every file of :func:`library_roots`, in order: ``name`` is the path below the roots'
    parent (``cute_py/core/layout.py``); compiled bytecode (``__pycache__``, ``.pyc``) is left out."""
    out = []
    for root in library_roots():
        base = os.path.dirname(root)
        for dirpath, dirnames, files in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for f in sorted(files):
                if not f.endswith(_SKIPPED_FILES):
                    path = os.path.join(dirpath, f)
                    out.append((os.path.relpath(path, base).replace(os.sep, "/"), path))
    return out


def _installed():
    """Texts naming the installed bindings and CUDA packages: each package's location and the modification time
    of its ``__init__``, and the versions of the distributions of :data:`_DISTRIBUTIONS` found next to them."""
    import importlib.util

    out, dirs = [], set()
    for name in _IMPORTED_PACKAGES:
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
        out.append(f"{name}={where}:{st and st.st_size}:{st and st.st_mtime_ns}")
        if where:  # the directory holding the top-level package: where its .dist-info lies
            top = os.path.abspath(where)
            for _ in range(name.count(".") + (2 if os.path.basename(top).startswith("__init__") else 1)):
                top = os.path.dirname(top)
            dirs.add(top)
    for d in sorted(dirs):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        out += sorted(f"{d}/{n}" for n in names if n.endswith(".dist-info")
                      and n.lower().replace("-", "_").startswith(_DISTRIBUTIONS))
    return out


def _file_key(path):
    """What identifies a file's version without reading it: size, modification and change times, inode (an edit
    that keeps the size and restores the modification time still changes the change time)."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"missing:{type(e).__name__}"
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def _base_fingerprint():
    from mlir_dialects.assembler import identity

    h = hashlib.sha256(f"format={FORMAT};python={sys.version};"
                       f"bindings={os.environ.get('MLIR_DIALECTS_BINDINGS', '')}\0".encode())
    for name, path in library_files():  # by status, not contents: reading them all would double the cost
        h.update(f"{name}:{_file_key(path)}\0".encode())
    for text in _installed():
        h.update(f"{text}\0".encode())
    h.update(f"assemblers={identity()}".encode())
    return h.hexdigest()


def library_fingerprint() -> str:
    """A hash of everything outside the user's code that changes generated code or the cubin: every file of the
    packages cute_py and mlir_dialects (:func:`library_files`: sources, lowering rules, package data; each by path,
    size, modification and change times and inode, which any edit changes),
    the Python version, the MLIR bindings chosen and their package, the installations and versions of
    numba-cuda-mlir, cuda-bindings and nvJitLink, the assemblers (``mlir_dialects.assembler.identity``: the
    nvJitLink library and the ptxas, by file) and the assembler ``MLIR_DIALECTS_ASSEMBLER`` forces. Computed once
    per process (about 1 ms for the files), but for the forced assembler, read at every call."""
    from mlir_dialects.assembler import ASSEMBLER_ENV, forced_assembler

    if not _FINGERPRINT:
        _FINGERPRINT.append(_base_fingerprint())
    try:
        forced = forced_assembler()
    except ValueError:  # an invalid value: the assembly will say so
        forced = f"invalid:{os.environ.get(ASSEMBLER_ENV)}"
    if forced is None:
        return _FINGERPRINT[0]
    return hashlib.sha256(f"{_FINGERPRINT[0]};forced={forced}".encode()).hexdigest()


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
