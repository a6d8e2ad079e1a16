"""PTX to cubin, never at the price of the caller's process: nvJitLink in-process only when its version is known
to be good, else ptxas or nvJitLink in a child process; whole-program ptxas for PTX that separate compilation
would change.

nvJitLink 13.0 (13.0.88, the library of CUDA 13.0 toolkits and GPU images) crashes with a segmentation
fault on some valid PTX (a loop split for unrolling, for one); ptxas 13.0.88 and nvJitLink 13.5.37 (pip
``nvidia-nvjitlink``) assemble it. The library is called through :mod:`mlir_dialects.nvjitlink` (ctypes, its own
handle: the pip wheel's first, whatever copy another package loaded), and :func:`assemble` checks the version that
library reports:

1. nvJitLink in this process when it is at least :data:`MIN_NVJITLINK`;
2. otherwise ptxas (see :func:`find_ptxas`) in a child process;
3. otherwise nvJitLink in a child process: a crash there is an :class:`AssemblyError` naming the signal.

nvJitLink compiles PTX as a separate compilation unit, and ptxas then ignores ``setmaxnreg`` (its info C7504:
"ignored to maintain compatibility across compilation units"): the warpgroups would keep the entry's register
budget. PTX with any instruction of :data:`WHOLE_PROGRAM` is therefore assembled by ptxas as a whole program
(``ptxas -arch=...``, a child process), which keeps it; without a ptxas of at least :data:`MIN_PTXAS` it is
assembled as above and an :class:`AssemblerWarning` says what was dropped and how to get ptxas.

A fallback is announced once per process with an :class:`AssemblerWarning` naming the library, its version and
what is used instead. Nothing here opens the library until PTX is assembled.

``MLIR_DIALECTS_ASSEMBLER=ptxas`` (:data:`ASSEMBLER_ENV`) sends all PTX to ptxas in a child process, the fallback
path, whatever nvJitLink is installed (an :class:`AssemblyError` without a ptxas); unset, empty or ``auto``: the
choice above. It is read at every assembly.

**Forms the assembler gets wrong.** Before PTX goes to an assembler, the forms that this assembler's release is
known to mishandle (:data:`mlir_dialects.ptx_forms.KNOWN_BAD_FORMS`: ``cp.async ... .L2::cache_hint`` for ptxas and
nvJitLink older than 13.5) are rewritten away, with an :class:`AssemblerWarning` naming why and the fix, or, where
a form cannot be dropped, refused with an :class:`AssemblyError` naming the fix. :func:`prepare` gives the PTX
exactly as it will be assembled and the assembler that gets it; :func:`identity` names the assemblers for a
compile cache's key.
"""

import os
import sys

from .errors import AssemblyError

# ctypes, shutil, signal, subprocess, tempfile, warnings and the table of bad forms (.ptx_forms) are imported where
# they are used: finding the wheel's library and the ptxas (for cache fingerprints) must stay cheap

__all__ = ["MIN_NVJITLINK", "MIN_PTXAS", "KNOWN_BAD", "WHOLE_PROGRAM", "ASSEMBLER_ENV", "AssemblerWarning",
           "wheel_library", "load_nvjitlink", "loaded_library", "find_ptxas", "ptxas_version", "assemble",
           "assembler_in_use", "assembler_for", "prepare", "identity", "forced_assembler"]

MIN_NVJITLINK = (13, 5)  # the oldest nvJitLink tested to assemble everything this package emits
KNOWN_BAD = {(13, 0): "nvJitLink 13.0 crashes (SIGSEGV) on some valid PTX, e.g. a loop split for unrolling"}
MIN_PTXAS = (12, 0)  # the first ptxas of sm_90a and setmaxnreg (PTX ISA 8.0)
# instructions that only a whole-program compile keeps: nvJitLink's separate compilation drops them
WHOLE_PROGRAM = ("setmaxnreg",)
# the ptxas of the pip wheel nvidia-cuda-nvcc (CUDA 13, then CUDA 12), relative to a sys.path entry
_PTXAS_WHEEL_PATHS = (("nvidia", "cu13", "bin", "ptxas"), ("nvidia", "cuda_nvcc", "bin", "ptxas"))
ASSEMBLER_ENV = "MLIR_DIALECTS_ASSEMBLER"  # "ptxas": every PTX to ptxas (the fallback); "" or "auto": the choice
_STATE = {"library": None, "choice": None, "warned": set(), "ptxas_versions": {}}


class AssemblerWarning(UserWarning):
    """The PTX is assembled by a fallback (ptxas, or nvJitLink in a child process), and why."""


def wheel_library():
    """The path of the pip wheel's ``libnvJitLink.so.13`` (``nvidia-nvjitlink``), or ``None``."""
    from .nvjitlink import wheel_library as find

    return find()


def load_nvjitlink():
    """``(library, (major, minor))``: the :class:`mlir_dialects.nvjitlink.Library` this process assembles with
    (opened once: the wheel's when there is one). Raises :class:`AssemblyError` without any nvJitLink library."""
    lib = _STATE["library"]
    if lib is None:
        from . import nvjitlink

        lib = nvjitlink.open_library()
        if lib is None:
            raise AssemblyError(f"no nvJitLink library could be loaded ({'; '.join(nvjitlink.last_errors)}); "
                                f"install nvidia-nvjitlink>={MIN_NVJITLINK[0]}.{MIN_NVJITLINK[1]}")
        _STATE["library"] = lib
    return lib, lib.version


def loaded_library():
    """The path of the nvJitLink library this process assembles with, or ``None`` when none could be opened."""
    try:
        return load_nvjitlink()[0].path
    except AssemblyError:
        return None


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_ptxas():
    """The ptxas this package runs, or ``None``: the pip wheel's (``nvidia-cuda-nvcc``, on ``sys.path``) first,
    then ``PATH``, ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin`` and ``/usr/local/cuda/bin``."""
    import shutil

    from .nvjitlink import find_on_sys_path

    found = find_on_sys_path(_PTXAS_WHEEL_PATHS, _executable) or shutil.which("ptxas")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and _executable(os.path.join(root, "bin", "ptxas")):
            return os.path.join(root, "bin", "ptxas")
    return None


def ptxas_version(ptxas):
    """``(major, minor)`` of the ptxas at ``ptxas`` (its ``--version``; once per path and process), or ``None``
    when it does not run or says no release."""
    import re
    import subprocess

    versions = _STATE["ptxas_versions"]
    if ptxas not in versions:
        try:
            out = subprocess.run([ptxas, "--version"], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        found = re.search(r"release (\d+)\.(\d+)", out)
        versions[ptxas] = (int(found.group(1)), int(found.group(2))) if found else None
    return versions[ptxas]


def _whole_program_ptxas():
    """``(ptxas, None)`` for a ptxas of at least :data:`MIN_PTXAS`, else ``(None, why)``."""
    ptxas = find_ptxas()
    if ptxas is None:
        return None, "no ptxas was found (pip install nvidia-cuda-nvcc, or a CUDA toolkit on PATH or CUDA_HOME)"
    version = ptxas_version(ptxas)
    if version is None or version < MIN_PTXAS:
        return None, (f"{ptxas} is {'not a ptxas that runs' if version is None else f'release {version[0]}.{version[1]}'}"
                      f"; ptxas >= {MIN_PTXAS[0]}.{MIN_PTXAS[1]} is needed (pip install nvidia-cuda-nvcc)")
    return ptxas, None


def _whole_program_only(data):
    """The instructions of :data:`WHOLE_PROGRAM` that ``data`` (PTX bytes) uses, in that order."""
    return [name for name in WHOLE_PROGRAM if name.encode() + b"." in data]


def _loaded_version():
    """The version of the nvJitLink library loaded in this process (``None`` without one)."""
    try:
        return load_nvjitlink()[1]
    except AssemblyError:
        return None


def forced_assembler():
    """The assembler :data:`ASSEMBLER_ENV` names (``"ptxas"``), or ``None`` for the automatic choice."""
    value = os.environ.get(ASSEMBLER_ENV, "").strip().lower()
    if value in ("", "auto"):
        return None
    if value != "ptxas":
        raise AssemblyError(f"{ASSEMBLER_ENV}={os.environ[ASSEMBLER_ENV]!r}: the values are 'ptxas' (every PTX to "
                            f"ptxas in a child process) and 'auto' or empty (nvJitLink in-process when good)")
    return value


def _choose():
    """``("nvjitlink", None)`` or ``("fallback", why)``: decided once per process, unless :data:`ASSEMBLER_ENV`
    asks for ptxas."""
    if forced_assembler():
        return ("fallback", f"{ASSEMBLER_ENV}=ptxas")
    choice = _STATE["choice"]
    if choice is None:
        version = _loaded_version()
        if version is not None and version >= MIN_NVJITLINK:
            choice = ("nvjitlink", None)
        else:
            have = "no nvJitLink library" if version is None else (
                f"nvJitLink {version[0]}.{version[1]} ({loaded_library() or 'library'})")
            known = KNOWN_BAD.get(version, "older than the releases tested") if version else "none is loaded"
            choice = ("fallback", f"{have}: {known}; nvJitLink >= {MIN_NVJITLINK[0]}.{MIN_NVJITLINK[1]} "
                                  f"is needed in-process (pip install 'nvidia-nvjitlink>={MIN_NVJITLINK[0]}."
                                  f"{MIN_NVJITLINK[1]}')")
        _STATE["choice"] = choice
    return choice


def assembler_in_use():
    """``"nvjitlink"`` (in-process), ``"ptxas"`` or ``"nvjitlink-subprocess"``: what :func:`assemble` uses now for
    PTX without the instructions of :data:`WHOLE_PROGRAM`."""
    if _choose()[0] == "nvjitlink":
        return "nvjitlink"
    return "ptxas" if find_ptxas() else "nvjitlink-subprocess"


def _route(data):
    """``(name, path, version)`` of the assembler :func:`assemble` hands ``data`` (bytes) to first: ``name`` as
    :func:`assembler_for` says it, ``version`` its ``(major, minor)`` or ``None`` when unknown."""
    if _whole_program_only(data):
        ptxas = _whole_program_ptxas()[0]
        if ptxas is not None:
            return "ptxas", ptxas, ptxas_version(ptxas)
    name = assembler_in_use()
    if name == "ptxas":
        ptxas = find_ptxas()
        return name, ptxas, ptxas_version(ptxas)
    return name, loaded_library(), _loaded_version()


def assembler_for(ptx):
    """What :func:`assemble` uses for ``ptx`` (str or bytes): ``"ptxas"`` as a whole program where it uses an
    instruction of :data:`WHOLE_PROGRAM` and a ptxas of at least :data:`MIN_PTXAS` is found, else
    :func:`assembler_in_use`."""
    return _route(ptx.encode() if isinstance(ptx, str) else bytes(ptx))[0]


def _adapted(data, name, version, where):
    """``data`` (PTX bytes) with the forms that the assembler ``name`` (at ``where``) at ``version`` mishandles
    rewritten away (see :mod:`mlir_dialects.ptx_forms`), each announced once with an :class:`AssemblerWarning`;
    :class:`AssemblyError` for a form that cannot be dropped."""
    from .ptx_forms import adapt, may_need_adapting

    text = data.decode("utf-8", "surrogateescape")
    if not may_need_adapting(text):
        return data
    text, dropped = adapt(text, "ptxas" if name == "ptxas" else "nvjitlink", version)
    who = f"{name} {'.'.join(map(str, version)) if version else '(version unknown)'}" + (f" ({where})" if where else "")
    for form in dropped:
        _warn_once(f"{who} {form.effect}: {form.dropped} is dropped from the PTX it assembles (the kernel computes "
                   f"the same); for the hint, {form.fix}")
    return text.encode("utf-8", "surrogateescape")


def prepare(ptx):
    """``(text, assembler)``: the PTX exactly as :func:`assemble` hands it to its first assembler (the forms that
    assembler mishandles rewritten away) and that assembler's name (as :func:`assembler_for`)."""
    data = ptx.encode() if isinstance(ptx, str) else bytes(ptx)
    name, where, version = _route(data)
    return _adapted(data, name, version, where).decode("utf-8", "surrogateescape"), name


def _file_identity(path):
    if not path:
        return "none"
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return f"{real}:missing"
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


def identity():
    """A text that changes with the assemblers this process would use, for a compile cache's key (with
    :func:`forced_assembler`, which may change within a process): the nvJitLink library (the wheel's file, else the one the loader opens: path,
    size and modification time) and the ptxas :func:`find_ptxas` finds (likewise: another release is another file).
    Cheap: no child process, and the library is opened only where no wheel holds it."""
    lib = wheel_library() or loaded_library()
    return f"nvjitlink={_file_identity(lib)};ptxas={_file_identity(find_ptxas())}"


def _warn_once(message):
    import warnings

    if message not in _STATE["warned"]:
        _STATE["warned"].add(message)
        warnings.warn(message, AssemblerWarning, stacklevel=3)


def assemble(ptx, arch):
    """The cubin of ``ptx`` (str or bytes) for ``arch`` (e.g. ``"sm_90a"``); :class:`AssemblyError` on failure.

    PTX that uses an instruction of :data:`WHOLE_PROGRAM` is assembled by a whole-program ptxas when there is one.
    Otherwise, or where that ptxas fails (an older ptxas and a newer PTX ISA, say), it is assembled as any other
    PTX, with an :class:`AssemblerWarning` naming what is dropped and why; PTX that nothing assembles is an
    :class:`AssemblyError`. Each assembler gets the PTX without the forms its release mishandles (:func:`prepare`)."""
    data = ptx.encode() if isinstance(ptx, str) else bytes(ptx)
    whole = _whole_program_only(data)
    if whole:
        ptxas, missing = _whole_program_ptxas()
        if ptxas is not None:
            adapted = _adapted(data, "ptxas", ptxas_version(ptxas), ptxas)
            try:
                return _ptxas(ptxas, adapted, arch)
            except AssemblyError as e:
                missing = str(e)
        _warn_once(f"the PTX uses {', '.join(whole)}, which only a whole-program ptxas keeps: {missing}; "
                   f"assembled as a separate compilation unit, the cubin runs without it (ptxas info C7504)")
    kind, why = _choose()
    if kind == "nvjitlink":
        return _nvjitlink_in_process(_adapted(data, "nvjitlink", _loaded_version(), loaded_library()), arch)
    ptxas = find_ptxas()
    if ptxas is not None:
        _warn_once(f"assembling PTX with {ptxas} in a child process: {why}")
        return _ptxas(ptxas, _adapted(data, "ptxas", ptxas_version(ptxas), ptxas), arch)
    if forced_assembler():
        raise AssemblyError(f"{ASSEMBLER_ENV}=ptxas, but no ptxas was found (pip install nvidia-cuda-nvcc, or a CUDA "
                            f"toolkit on PATH or CUDA_HOME)")
    _warn_once(f"assembling PTX with nvJitLink in a child process (no ptxas found): {why}")
    data = _adapted(data, "nvjitlink-subprocess", _loaded_version(), loaded_library())
    return _nvjitlink_child(data, arch, why)


_CUBINS = {}       # (library, arch, SHA-256 of the PTX) -> the cubin it made, the last few in this process
_CUBINS_KEPT = 16


def _nvjitlink_in_process(data, arch):
    """The cubin the loaded nvJitLink makes of ``data`` for ``arch``. The same PTX assembled again by the same
    library in this process (a compile's PTX handed to :func:`assemble` by its caller) is the cubin of the first
    time: the library is deterministic, and a failure is never kept."""
    import hashlib

    from .nvjitlink import NvJitLinkError

    lib, _ = load_nvjitlink()
    key = (id(lib), arch, hashlib.sha256(data).digest())
    kept = _CUBINS.get(key)
    if kept is not None and kept[0] is lib:
        return kept[1]
    try:
        cubin = lib.link(data, [f"-arch={arch}"], "cute_nvgpu.ptx")
    except NvJitLinkError as e:
        raise AssemblyError(f"nvJitLink could not assemble the PTX for {arch}: {e}") from None
    if len(_CUBINS) >= _CUBINS_KEPT:
        del _CUBINS[next(iter(_CUBINS))]
    _CUBINS[key] = (lib, cubin)
    return cubin


def _signal_name(code):
    import signal

    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _run(cmd, what, why, env=None):
    import subprocess

    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise AssemblyError(f"{what} could not run: {e}") from None
    if out.returncode < 0:
        raise AssemblyError(f"{what} crashed ({_signal_name(out.returncode)}) assembling the PTX ({why})")
    if out.returncode != 0:
        raise AssemblyError(f"{what} could not assemble the PTX: {(out.stderr or out.stdout).strip()}")
    return out


def _ptxas(ptxas, data, arch):
    import re
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mlir_dialects_ptxas_") as d:
        src, dst = os.path.join(d, "kernel.ptx"), os.path.join(d, "kernel.cubin")
        with open(src, "wb") as f:
            f.write(data)
        # -lineinfo keeps the PTX's .loc lines in the cubin (as nvJitLink does without being asked)
        lines = ["-lineinfo"] if re.search(rb"^[ \t]*\.loc[ \t]", data, re.M) else []
        _run([ptxas, f"-arch={arch}", *lines, "-o", dst, src], f"ptxas ({ptxas}) for {arch}", "a child process")
        with open(dst, "rb") as f:
            return f.read()


_CHILD = (
    "import sys\n"
    "from mlir_dialects.assembler import _nvjitlink_in_process\n"
    "data = open(sys.argv[1], 'rb').read()\n"
    "open(sys.argv[2], 'wb').write(_nvjitlink_in_process(data, sys.argv[3]))\n"
)


def _child_command(src, dst, arch):
    """The command that assembles ``src`` into ``dst`` with nvJitLink in a child Python process."""
    return [sys.executable, "-c", _CHILD, src, dst, arch]


def _nvjitlink_child(data, arch, why):
    import tempfile

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p))
    with tempfile.TemporaryDirectory(prefix="mlir_dialects_nvjitlink_") as d:
        src, dst = os.path.join(d, "kernel.ptx"), os.path.join(d, "kernel.cubin")
        with open(src, "wb") as f:
            f.write(data)
        _run(_child_command(src, dst, arch), f"nvJitLink (in a child process) for {arch}", why, env)
        with open(dst, "rb") as f:
            return f.read()
