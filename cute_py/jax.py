"""``cute_py.jax.ffi_call``: a jit function's kernels as a JAX function, through XLA's FFI (``jax.ffi``).

``f = ffi_call(fn, *args, outputs=(2,), **kwargs)`` compiles ``fn`` for ``args`` (``DeviceArraySpec``\\ s of
static, row-major shapes and the scalars, as ``cute.compile`` takes them), exports it as C
(``Compiled.export``), builds it with an XLA FFI handler into a shared library (the system C and C++
compilers, ``jax.ffi.include_dir()``; kept under the compile cache, per compile), registers the handler for
CUDA and returns ``f(*inputs, **scalars)``: the arrays of ``args`` not in ``outputs`` are the inputs, in order;
the arrays at ``outputs`` are the results, allocated by XLA (their previous values are not defined: a kernel must
write every element it means to return); the run-time scalars are keyword attributes named as ``fn``'s
parameters (static values of the JAX program: another value traces again). ``f`` works under ``jax.jit`` and
launches on XLA's stream. The handler checks every buffer's element type and extents against the compile and
returns XLA's ``InvalidArgument`` naming the first that differs; a launch that fails returns the driver's code.

Needs ``jax`` (an optional dependency) and C/C++ compilers on the machine that builds the library.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from typing import Any

from .errors import CuteTypeError, CuteValueError

__all__ = ["ffi_call"]

# element type name -> (JAX dtype name, XLA FFI DataType)
_TYPES = {"Float32": ("float32", "F32"), "Float16": ("float16", "F16"), "BFloat16": ("bfloat16", "BF16"),
          "Float64": ("float64", "F64"), "Int8": ("int8", "S8"), "Int16": ("int16", "S16"),
          "Int32": ("int32", "S32"), "Int64": ("int64", "S64"), "Uint8": ("uint8", "U8"),
          "Uint16": ("uint16", "U16"), "Uint32": ("uint32", "U32"), "Uint64": ("uint64", "U64"),
          "Boolean": ("bool", "PRED"), "Float8E4M3FN": ("float8_e4m3fn", "F8E4M3FN"),
          "Float8E5M2": ("float8_e5m2", "F8E5M2")}
_SCALARS = {"Int32": ("int32_t", "int32"), "Int64": ("int64_t", "int64"), "Float32": ("float", "float32")}
_REGISTERED: dict[str, Any] = {}   # target name -> the loaded library (kept alive)


def ffi_call(fn: Any, *args: Any, outputs: Iterable[int], **kwargs: Any) -> Callable[..., Any]:
    """``fn``'s kernels as a JAX function (see the module)."""
    from .compiler import compile as cute_compile

    outputs = tuple(outputs)
    c = cute_compile(fn, *args, **kwargs)
    plan = _plan(c, outputs)
    directory, prefix = _build(c, plan)
    lib_path = os.path.join(directory, f"lib{prefix}.so")
    return _register(c, plan, prefix, lib_path)


def _plan(c, outputs):
    """``(inputs, outputs, scalars)``: per array argument ``(index, dtype, shape)``, per scalar ``(index, C type,
    numpy type, attribute name)``; the rules of the FFI call checked."""
    from .compiler.runtime.call_args import row_major

    if c._binder is not None:
        raise CuteValueError(f"jax.ffi_call: {c.function_name} has run-time extents or strides; XLA gives static "
                             f"shapes: compile it for them")
    arrays, scalars = [], []
    names = list(c.jit_function.params.names)
    for i, (kind, spec) in enumerate(c.sources):
        if kind == "tensor":
            dtype, shape, strides, _ = spec
            if dtype not in _TYPES:
                raise CuteValueError(f"jax.ffi_call: argument {i} is {dtype}, which XLA has no buffer type for")
            if not row_major(shape, strides):
                raise CuteValueError(f"jax.ffi_call: argument {i} has strides {tuple(strides)}; XLA's buffers are "
                                     f"row-major (shape {tuple(shape)})")
            arrays.append((i, dtype, tuple(shape)))
        elif kind == "scalar":
            if spec not in _SCALARS:
                raise CuteValueError(f"jax.ffi_call: argument {i} is a run-time {spec}; attributes take Int32, Int64 "
                                     f"and Float32")
            scalars.append((i, *_SCALARS[spec], names[i] if i < len(names) else f"a{i}"))
        elif kind == "stream":
            raise CuteValueError(f"jax.ffi_call: argument {i} is a stream; XLA gives the stream the kernels run on")
    positions = [i for i, _, _ in arrays]
    for o in outputs:
        if o not in positions:
            raise CuteValueError(f"jax.ffi_call: outputs names argument {o!r}, which is not an array argument of "
                                 f"{c.function_name} (those are {positions})")
    if len(set(outputs)) != len(outputs) or not outputs:
        raise CuteValueError(f"jax.ffi_call: outputs must name each result array once, got {outputs!r}")
    return ([a for a in arrays if a[0] not in outputs], [a for a in arrays if a[0] in outputs], scalars)


def _handler(prefix, plan, c):
    """The C++ of the XLA FFI handler that checks the buffers and calls ``<prefix>_launch``."""
    inputs, outputs, scalars = plan
    params, checks, call = ["void *stream"], [], {}
    for role, group in (("in", inputs), ("out", outputs)):
        for i, dtype, shape in group:
            t = "ffi::AnyBuffer" if role == "in" else "ffi::Result<ffi::AnyBuffer>"
            params.append(f"{t} a{i}")
            acc = "." if role == "in" else "->"
            dims = " || ".join([f"a{i}{acc}dimensions().size() != {len(shape)}"]
                               + [f"a{i}{acc}dimensions()[{k}] != {n}" for k, n in enumerate(shape)])
            checks.append(f"    if (a{i}{acc}element_type() != ffi::DataType::{_TYPES[dtype][1]} || {dims})\n"
                          f'        return ffi::Error::InvalidArgument("{prefix}: argument {i} must be {dtype} of '
                          f'shape {shape}");')
            call[i] = f"a{i}{acc}untyped_data()"
    for i, ctype, _, _ in scalars:
        params.append(f"{ctype} a{i}")
        call[i] = f"a{i}"
    args = ", ".join(["stream"] + [call[i] for i in sorted(call)])
    bind = "".join([".Ctx<ffi::PlatformStream<void *>>()"] + [".Arg<ffi::AnyBuffer>()" for _ in inputs]
                   + [".Ret<ffi::AnyBuffer>()" for _ in outputs]
                   + [f'.Attr<{ctype}>("{name}")' for _, ctype, _, name in scalars])
    return "\n".join([
        f"// The XLA FFI handler of {c.function_name}, generated by cute_py (see {prefix}.h).",
        "#include <cstdint>", "#include <string>", '#include "xla/ffi/api/ffi.h"',
        f'extern "C" {{', f'#include "{prefix}.h"', "}", "namespace ffi = xla::ffi;", "",
        f"static ffi::Error {prefix}_impl({', '.join(params)}) {{", *checks,
        f"    int r = {prefix}_launch({args});",
        "    if (r) return ffi::Error::Internal(std::string(\"" + prefix + ": launch failed with CUDA error \") + "
        "std::to_string(r));",
        "    return ffi::Error::Success();", "}", "",
        f"XLA_FFI_DEFINE_HANDLER_SYMBOL({prefix}_handler, {prefix}_impl, ffi::Ffi::Bind(){bind});", ""])


def _build(c, plan):
    """Export ``c`` and build the handler library once per compile; ``(directory, prefix)``."""
    import jax.ffi

    from .compiler.cache.store import cache_dir

    digest = hashlib.sha256(c.cubin + repr(plan).encode()).hexdigest()[:16]
    prefix = f"cute_py_{digest}"
    root = cache_dir()
    directory = os.path.join(root, "jax_ffi", digest) if root else os.path.join(
        os.path.expanduser("~"), ".cache", "cute_py_jax_ffi", digest)
    lib = os.path.join(directory, f"lib{prefix}.so")
    if os.path.exists(lib):
        return directory, prefix
    cc, cxx = shutil.which("cc") or shutil.which("gcc"), shutil.which("c++") or shutil.which("g++")
    if cc is None or cxx is None:
        raise CuteValueError("jax.ffi_call builds its handler with the system C and C++ compilers; none found "
                             "(install gcc and g++, or clang)")
    c.export(directory, prefix)
    with open(os.path.join(directory, "handler.cc"), "w") as f:
        f.write(_handler(prefix, plan, c))
    tmp = lib + f".{os.getpid()}.tmp"
    try:
        subprocess.run([cc, "-std=c11", "-O2", "-fPIC", "-c", "-o", os.path.join(directory, f"{prefix}.o"),
                        os.path.join(directory, f"{prefix}.c")], check=True, capture_output=True, text=True)
        subprocess.run([cxx, "-std=c++17", "-O2", "-fPIC", "-shared", f"-I{jax.ffi.include_dir()}", "-I", directory,
                        "-o", tmp, os.path.join(directory, "handler.cc"), os.path.join(directory, f"{prefix}.o")],
                       check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        raise CuteValueError(f"jax.ffi_call: building the handler of {c.function_name} failed:\n{e.stderr}") from None
    os.replace(tmp, lib)
    return directory, prefix


def _register(c, plan, prefix, lib_path):
    import ctypes

    import jax
    import numpy as np

    inputs, outputs, scalars = plan
    name = prefix
    if name not in _REGISTERED:
        try:
            ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)   # the driver calls of the library resolve here
        except OSError as e:
            raise CuteValueError(f"jax.ffi_call: the CUDA driver library is not loadable ({e})") from None
        lib = ctypes.CDLL(lib_path)
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, f"{prefix}_handler")), platform="CUDA")
        _REGISTERED[name] = lib
    result = [jax.ShapeDtypeStruct(shape, getattr(jax.numpy, _TYPES[dtype][0])) for _, dtype, shape in outputs]
    call = jax.ffi.ffi_call(name, result if len(result) > 1 else result[0])
    attrs = {attr: (i, np_type) for i, _, np_type, attr in scalars}

    def run(*arrays, **values):
        if len(arrays) != len(inputs):
            raise CuteTypeError(f"{c.function_name} through jax.ffi_call takes {len(inputs)} input arrays, got "
                                f"{len(arrays)}")
        missing, unknown = sorted(set(attrs) - set(values)), sorted(set(values) - set(attrs))
        if missing or unknown:
            raise CuteTypeError(f"{c.function_name} through jax.ffi_call takes the scalars {sorted(attrs)} by name"
                                + (f"; missing {missing}" if missing else "") + (f"; unknown {unknown}" if unknown
                                                                                 else ""))
        return call(*arrays, **{k: getattr(np, t)(values[k]) for k, (_, t) in attrs.items()})

    return run
