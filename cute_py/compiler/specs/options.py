"""``cute.compile(fn, *args, options="...")``: the CuTe DSL's compile-options string, parsed.

The string is split as a shell would (``shlex``); each option is ``--name``, ``--name value`` or
``--name=value``. Supported:

- ``--generate-line-info``: the PTX carries ``.file``/``.loc`` directives mapping each instruction to the
  kernel's Python source line (what ``nvcc -lineinfo`` gives; for profilers and ``compute-sanitizer``), and
  the cubin keeps them (its ``.nv_debug_line_sass`` section; ``mlir_dialects.assembler`` gives ptxas the
  ``-lineinfo`` it needs for them). It
  changes the PTX, so it is part of the cache key;
- ``--opt-level N`` (0 to 3): LLVM's optimisation level for the NVPTX back end; part of the cache key.
  Without it the pipeline's default applies (level 2; the DSL's default is 3);
- ``--enable-assertions``: accepted, and changes nothing: cute_py kernels have no device-side assertions
  for it to enable (every check cute_py makes runs while tracing);
- ``--keep-ptx`` / ``--keep-cubin``: also write ``<dump dir>/<function name>.<gpu arch>.ptx`` / ``.cubin`` (the
  function name carries the jit function's name prefix); ``--dump-dir DIR`` (default: the current
  directory). They do not change the code, and a compile found in a cache writes the files too;
- ``--gpu-arch sm_90a`` (the default: Hopper) or ``sm_100a`` (Blackwell, PTX ISA 8.6): the target; part of the
  cache key. A compile for sm_100a is assembled here but launched only on a device of compute capability 10.0
  (``LaunchError`` elsewhere); the kernels' rules (limits, shared memory) stay sm_90's. Any other is an error.

Options of the DSL that cute_py does not implement (``--ptxas-options``, ``--keep-sass``, ``--rdc``,
``--link-libraries``, ``--enable-tvm-ffi``, ``--host-target``, ``--nvdisasm-options``, ``--enable-pyir``,
``--remark-filter``, ``--remark-output``, ``--warnings``, ``--remarks``, ``--iket``, ``--debug``) and unknown
ones are a ``CuteValueError`` naming them: an option is never silently ignored.
"""

from __future__ import annotations

import dataclasses
import os
import shlex

from ...errors import CuteValueError

__all__ = ["CompileOptions", "parse_options", "GPU_ARCH", "GPU_ARCHS", "CompileOption", "GenerateLineInfo", "OptLevel",
           "EnableAssertions", "KeepPTX", "KeepCUBIN", "GPUArch", "DumpDir", "PtxasOptions", "KeepSASS", "RDC",
           "merge_option_objects"]

GPU_ARCH = "sm_90a"
# target -> (the NVPTX features (its PTX ISA), the compute capability of the devices that run it)
GPU_ARCHS = {"sm_90a": ("+ptx80", (9, 0)), "sm_100a": ("+ptx86", (10, 0))}
_BOOL = {"generate-line-info": "line_info", "enable-assertions": "assertions", "keep-ptx": "keep_ptx",
         "keep-cubin": "keep_cubin"}
_VALUED = {"opt-level", "dump-dir", "gpu-arch"}
_UNSUPPORTED = {"ptxas-options", "keep-sass", "rdc", "link-libraries", "enable-tvm-ffi", "host-target",
                "nvdisasm-options", "enable-pyir", "remark-filter", "remark-output", "warnings", "remarks", "iket",
                "debug", "warnings-filter"}


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """What ``options=`` asked for (see the module documentation); the default is no option."""

    line_info: bool = False
    opt_level: int | None = None
    assertions: bool = False
    keep_ptx: bool = False
    keep_cubin: bool = False
    dump_dir: str | None = None
    gpu_arch: str = GPU_ARCH

    def codegen_key(self) -> tuple[object, ...]:
        """The options that change the generated code (part of every cache key)."""
        return (self.line_info, self.opt_level) + (() if self.gpu_arch == GPU_ARCH else (self.gpu_arch,))

    def key(self) -> tuple[object, ...]:
        """Every option (the in-memory cache key: a compile asked to keep files is not one that was not)."""
        return dataclasses.astuple(self)

    @property
    def default_pipeline(self) -> bool:
        """Whether the PTX comes from the pipeline's defaults."""
        return not self.line_info and self.opt_level is None and self.gpu_arch == GPU_ARCH

    @property
    def features(self) -> str:
        """The NVPTX feature string of the target (its PTX ISA version)."""
        return GPU_ARCHS[self.gpu_arch][0]

    def write_kept(self, name: str, ptx: str | None, cubin: bytes | None) -> list[str]:
        """Write the PTX and cubin that ``--keep-ptx`` / ``--keep-cubin`` asked for; the paths written."""
        out = []
        d = self.dump_dir or os.getcwd()
        for wanted, suffix, data in ((self.keep_ptx, "ptx", ptx), (self.keep_cubin, "cubin", cubin)):
            if wanted and data is not None:
                os.makedirs(d, exist_ok=True)
                path = os.path.join(d, f"{name}.{self.gpu_arch}.{suffix}")
                with open(path, "wb") as f:
                    f.write(data.encode() if isinstance(data, str) else data)
                out.append(path)
        return out


_DEFAULT = CompileOptions()


def parse_options(options: str | CompileOptions | None) -> CompileOptions:
    """The :class:`CompileOptions` of a DSL options string; ``CuteValueError`` naming every option that is
    unknown, unsupported, malformed or given a bad value."""
    if options is None or isinstance(options, CompileOptions):
        return options or _DEFAULT
    if not isinstance(options, str):
        raise CuteValueError(f"options is a string of compile options (e.g. '--generate-line-info'), got "
                             f"{type(options).__name__}")
    try:
        tokens = shlex.split(options)
    except ValueError as e:
        raise CuteValueError(f"the compile options {options!r} do not parse: {e}") from None
    values, bad, unsupported = {}, [], []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        name, eq, value = tok[2:].partition("=") if tok.startswith("--") else (None, "", "")
        base = name.split("{")[0] if name else None
        if base in _BOOL:
            if eq:
                bad.append(f"{tok} (takes no value)")
            else:
                values[_BOOL[base]] = True
        elif base in _VALUED:
            if not eq:
                if i >= len(tokens) or tokens[i].startswith("--"):
                    bad.append(f"{tok} (needs a value)")
                    continue
                value = tokens[i]
                i += 1
            values[base] = value
        elif base in _UNSUPPORTED:
            unsupported.append(tok)
        else:
            bad.append(tok)
    problems = []
    if unsupported:
        problems.append(f"options of the CuTe DSL that cute_py does not support: {', '.join(unsupported)}")
    level = values.pop("opt-level", None)
    if level is not None:
        if not (level.isdigit() and 0 <= int(level) <= 3):
            problems.append(f"--opt-level takes 0, 1, 2 or 3, got {level!r}")
        else:
            values["opt_level"] = int(level)
    arch = values.pop("gpu-arch", None)
    if arch is not None:
        if arch not in GPU_ARCHS:
            problems.append(f"--gpu-arch {arch}: cute_py compiles for {' or '.join(GPU_ARCHS)}")
        else:
            values["gpu_arch"] = arch
    if "dump-dir" in values:
        values["dump_dir"] = values.pop("dump-dir")
    if bad:
        problems.append(f"unknown compile options: {', '.join(bad)}")
    if problems:
        raise CuteValueError("; ".join(problems) + f" (in options={options!r})")
    return CompileOptions(**values)


class CompileOption:
    """One option of ``cute.compile[...]`` (the DSL's subscript form: ``cute.compile[GenerateLineInfo(True),
    OptLevel(2)](fn, *args)``); each is its ``--flag`` of the options string. A boolean option given as the class
    (``cute.compile[GenerateLineInfo]``) means ``True``."""

    flag: str = ""
    boolean = True

    def __init__(self, val: object = True) -> None:
        if self.boolean and type(val) is not bool:
            raise CuteValueError(f"{type(self).__name__} takes True or False, got {val!r}")
        self.value = val

    def tokens(self) -> list[str]:
        """The options string's tokens for this option (none for a boolean option set to False)."""
        if self.boolean:
            return [f"--{self.flag}"] if self.value else []
        return [f"--{self.flag}", str(self.value)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"


class GenerateLineInfo(CompileOption):
    """``--generate-line-info``: PTX ``.loc`` lines mapping instructions to Python source lines."""
    flag = "generate-line-info"


class EnableAssertions(CompileOption):
    """``--enable-assertions`` (cute_py kernels have no device-side assertions; accepted)."""
    flag = "enable-assertions"


class KeepPTX(CompileOption):
    """``--keep-ptx``: write the PTX beside the dump directory."""
    flag = "keep-ptx"


class KeepCUBIN(CompileOption):
    """``--keep-cubin``: write the cubin into the dump directory."""
    flag = "keep-cubin"


class OptLevel(CompileOption):
    """``--opt-level N`` (0 to 3)."""
    flag, boolean = "opt-level", False

    def __init__(self, val: int) -> None:
        if type(val) is not int or not 0 <= val <= 3:
            raise CuteValueError(f"OptLevel takes 0, 1, 2 or 3, got {val!r}")
        super().__init__(val)


class GPUArch(CompileOption):
    """``--gpu-arch`` (``sm_90a`` or ``sm_100a``)."""
    flag, boolean = "gpu-arch", False

    def __init__(self, val: str) -> None:
        super().__init__(val)


class DumpDir(CompileOption):
    """``--dump-dir DIR``: where ``KeepPTX`` / ``KeepCUBIN`` write."""
    flag, boolean = "dump-dir", False

    def __init__(self, val: str) -> None:
        super().__init__(val)


class PtxasOptions(CompileOption):
    """``--ptxas-options`` (not supported by cute_py: a compile that asks for it raises)."""
    flag, boolean = "ptxas-options", False

    def __init__(self, val: str = "") -> None:
        super().__init__(val)


class KeepSASS(CompileOption):
    """``--keep-sass`` (not supported by cute_py: a compile that asks for it raises)."""
    flag = "keep-sass"


class RDC(CompileOption):
    """``--rdc`` (not supported by cute_py: a compile that asks for it raises)."""
    flag = "rdc"


def merge_option_objects(objects: object, options: str | CompileOptions | None) -> CompileOptions:
    """The :class:`CompileOptions` of ``cute.compile[objects]`` together with an ``options=`` string: the objects
    (one, or a tuple or list of them; a boolean option's class means it set) become their ``--flag`` tokens
    before the string's. ``CuteValueError`` for anything that is not an option, or an option given twice."""
    items = objects if isinstance(objects, (tuple, list)) else (objects,)
    tokens, seen = [], set()
    for o in items:
        if isinstance(o, type) and issubclass(o, CompileOption) and o.boolean:
            o = o(True)
        if not isinstance(o, CompileOption):
            raise CuteValueError(f"cute.compile[...] takes compile options (GenerateLineInfo(True), OptLevel(2), "
                                 f"...), got {o!r}")
        if type(o) in seen:
            raise CuteValueError(f"cute.compile[...]: {type(o).__name__} given twice")
        seen.add(type(o))
        tokens += o.tokens()
    if isinstance(options, CompileOptions):
        raise CuteValueError("cute.compile[...] with options= takes an options string, not CompileOptions")
    text = " ".join(shlex.quote(t) for t in tokens)
    return parse_options(" ".join(p for p in (text, options or "") if p) or None)
