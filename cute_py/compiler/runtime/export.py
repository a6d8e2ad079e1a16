"""``Compiled.export(directory, prefix)``: a compile as C that launches it with no Python, MLIR or cute_py.

It writes three files:

- ``<prefix>.cubin``: the kernels;
- ``<prefix>.h``: ``int <prefix>_load(void)``, ``int <prefix>_launch(void *stream, <arguments>)`` and
  ``void <prefix>_unload(void)``, with a comment per argument (the element type, shape, strides and alignment a
  device array must have: the compile's);
- ``<prefix>.c``: the cubin as bytes, and the launches as the Python call makes them. It loads the module in the
  current CUDA context, sets each kernel's shared-memory and cluster attributes, checks each device pointer (not
  null, aligned as compiled), encodes the TMA descriptors at the call's addresses (``cuTensorMapEncodeTiled``),
  fills each kernel's parameters and launches the kernels in order (``cuLaunchKernelEx`` for a cluster or a
  cooperative launch). It returns 0 or the driver's error code (``CUDA_ERROR_INVALID_VALUE``, 1, for a pointer
  that breaks its rule). It declares the few driver functions it calls itself (no ``cuda.h`` needed: link with
  ``-lcuda``).

Arrays are ``const void *`` device pointers (an array with run-time extents or strides also takes them, as two
``const int64_t *`` arrays in elements, checked as the Python call checks them: ``export_bind``), run-time scalars
``int32_t``/``int64_t``/``float``, stream arguments ``void *`` (``CUstream``); static arguments are compiled in.
Every value of every launch is computed and checked before the first launch. A compile whose host code decides
on run-time extents (guards), prints at each call, takes arrays in containers, launches with im2col
descriptors or computes kernel parameters from run-time scalars is refused with a ``CuteValueError`` naming
what (the exported code has no host tracing to replay).
"""

from __future__ import annotations

import os
import re
import struct
from typing import Any

from ...core.symbolic import SymInt
from ...nvgpu.tma.desc import TmaDescriptor
from ...errors import CuteValueError
from ...tensor.dtypes import Scalar
from ..specs.limits import MAX_GRID_DIM
from .export_bind import C_HELPERS, CBinder

__all__ = ["export"]

_C_SCALARS = {"Int32": "int32_t", "Int64": "int64_t", "Float32": "float"}
_SLOT_C = {"ptr": "uint64_t", "Int32": "int32_t", "Int64": "int64_t", "Float32": "float"}

_DRIVER_DECLARATIONS = """\
/* The driver API this file calls (declared here: no cuda.h needed; link with -lcuda). */
typedef int CUresult;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct { _Alignas(64) uint64_t opaque[16]; } CUtensorMap;
typedef struct { int id; char pad[4]; union { char pad[64]; uint64_t align; struct { unsigned x, y, z; } clusterDim;
                 int cooperative; } value; } CUlaunchAttribute;
typedef struct { unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
                 CUstream hStream; CUlaunchAttribute *attrs; unsigned numAttrs; } CUlaunchConfig;
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleUnload(CUmodule module);
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name);
CUresult cuFuncSetAttribute(CUfunction function, int attribute, int value);
CUresult cuLaunchKernel(CUfunction f, unsigned gridDimX, unsigned gridDimY, unsigned gridDimZ, unsigned blockDimX,
                        unsigned blockDimY, unsigned blockDimZ, unsigned sharedMemBytes, CUstream stream,
                        void **kernelParams, void **extra);
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra);
CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, int dataType, uint32_t rank, void *globalAddress,
                                const uint64_t *globalDim, const uint64_t *globalStrides, const uint32_t *boxDim,
                                const uint32_t *elementStrides, int interleave, int swizzle, int l2Promotion,
                                int oobFill);
"""


def export(compiled: Any, directory: str, prefix: str) -> list[str]:
    """Write ``compiled``'s cubin, header and C source into ``directory`` (see the module); their paths."""
    if not isinstance(prefix, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
        raise CuteValueError(f"export: the prefix must be a C identifier, got {prefix!r}")
    if not isinstance(compiled.cubin, (bytes, bytearray)) or not compiled.cubin:
        raise CuteValueError(f"export: {compiled.function_name} has no cubin (it was compiled without an assembler)")
    _refuse_what_needs_the_host(compiled)
    args = _arguments(compiled)
    header, source = _header(compiled, prefix, args), _source(compiled, prefix, args)
    os.makedirs(directory, exist_ok=True)
    paths = [os.path.join(directory, prefix + ext) for ext in (".cubin", ".h", ".c")]
    for path, data in zip(paths, (bytes(compiled.cubin), header.encode(), source.encode())):
        with open(path, "wb") as f:
            f.write(data)
    return paths


def _refuse_what_needs_the_host(c):
    def refuse(what):
        raise CuteValueError(f"export: {c.function_name} {what}; the exported code runs no host code of the jit "
                             f"function")

    if c._binder is not None and c._binder.guards:
        refuse("decides on its run-time extents in its host code (a guard of the compile)")
    if c.host_prints:
        refuse("prints from its host code at each call")
    if c.call_form is not None and c.call_form.spreads:
        refuse("takes containers of arrays")
    for ln in c.launches:
        for j, (kind, src) in enumerate(ln.params):
            if kind == "desc" and not isinstance(src[0], TmaDescriptor):
                refuse(f"launches {ln.name} with an im2col TMA descriptor (parameter {j})")
            if isinstance(src, SymInt) and _scalar_leaf(c, src) is None and not _array_leaf(c, src):
                refuse(f"passes the run-time value {src.name} to {ln.name}, which no argument gives")
            if kind not in ("ptr", "desc") and hasattr(src, "evaluate") and isinstance(src, Scalar) and \
                    type(getattr(src, "index", None)) is not int:       # (one with an index is an argument)
                refuse(f"computes parameter {j} of {ln.name} on the host from run-time scalars")


def _array_leaf(c, src):
    """Whether a parameter's leaf is an extent or stride of an argument (bound by the exported code)."""
    return c._binder is not None and any(leaf.name == src.name for leaf in c._binder.leaves)


def _scalar_leaf(c, src):
    """The index of the integer scalar argument a parameter's leaf ``argN`` is, or ``None``."""
    m = re.fullmatch(r"arg(\d+)", src.name)
    return int(m.group(1)) if m and int(m.group(1)) in c._int_scalars else None


# C11 and C++ keywords and the header's own names: an argument named so is called a<index> in the header
_RESERVED = frozenset("""auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
    volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert
    _Thread_local alignas alignof and bool catch class constexpr decltype delete explicit export false friend
    mutable namespace new noexcept not nullptr operator or private protected public static_assert template this
    throw true try typeid typename using virtual wchar_t xor stream""".split())


def _arguments(c):
    """Per C parameter ``(argument index, C type or None for a static argument, name in the header, comment or
    None, suffix)``: an array with run-time extents gives three (pointer, ``_shape``, ``_strides``). (The C source
    calls argument ``i`` ``a<i>`` plus the suffix: no user's name can meet one of its own.)"""
    names = list(c.jit_function.params.names)
    if names[:1] == ["self"]:     # a method's: the instance is compiled in
        names = names[1:]
    out, used = [], set()
    for i, (kind, spec) in enumerate(c.sources):
        name = names[i] if i < len(names) else f"a{i}"
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name in used or name in _RESERVED:
            name = f"a{i}"
        used.add(name)
        if kind == "tensor":
            dtype, shape, strides, align = spec
            dynamic = not all(type(v) is int for v in tuple(shape) + tuple(strides))
            show = (tuple(_show(v) for v in shape), tuple(_show(v) for v in strides))
            out.append((i, "const void *", name, f"{name}: {dtype} {show[0]}, strides {show[1]} (elements), a "
                                                 f"device pointer {align}-byte aligned" + (
                                                     f"; {name}_shape and {name}_strides: its {len(shape)} extents "
                                                     f"and strides (int64_t, in elements)" if dynamic else ""), ""))
            if dynamic:
                out.append((i, "const int64_t *", f"{name}_shape", None, "_shape"))
                out.append((i, "const int64_t *", f"{name}_strides", None, "_strides"))
        elif kind == "scalar":
            if spec not in _C_SCALARS:
                raise CuteValueError(f"export: argument {i} of {c.function_name} is a run-time {spec}, which the "
                                     f"exported code does not take (Int32, Int64, Float32)")
            out.append((i, _C_SCALARS[spec] + " ", name, f"{name}: {spec}", ""))
        elif kind == "stream":
            out.append((i, "void *", name, f"{name}: a CUstream (the launches given it run on it)", ""))
        else:
            out.append((i, None, None, None, ""))
    header = [n for _, t, n, _, _ in out if t]
    if len(set(header)) != len(header):    # a user's name met a <name>_shape of another: the source's names
        out = [(i, t, f"a{i}{suffix}" if t else None, note, suffix) for i, t, _, note, suffix in out]
    return out


def _show(v):
    return v if type(v) is int else v.describe()


def _header(c, prefix, args):
    decl = ", ".join(["void *stream"] + [t + n for _, t, n, _, _ in args if t])
    notes = "\n".join(f" *   {note}" for _, t, _, note, _ in args if note) or " *   (none)"
    guard = prefix.upper() + "_H"
    return f"""/* {prefix}: {c.function_name}, exported by cute_py for {c.arch}.
 *
 * {prefix}_load() loads the kernels in the current CUDA context (once; {prefix}_launch loads them if needed);
 * {prefix}_launch() checks each pointer, then launches the kernels in order on stream (NULL: the legacy
 * default stream). Both return 0 or the CUDA driver's error code (1, CUDA_ERROR_INVALID_VALUE, for a null or
 * misaligned pointer). Arguments:
{notes}
 */
#ifndef {guard}
#define {guard}
#include <stdint.h>
#ifdef __cplusplus
extern "C" {{
#endif
int {prefix}_load(void);
int {prefix}_launch({decl});
void {prefix}_unload(void);
#ifdef __cplusplus
}}
#endif
#endif
"""


def _source(c, prefix, args):
    from ...nvgpu.tma.desc import driver_module

    driver = driver_module()
    fa = driver.CUfunction_attribute
    smem_attr = int(fa.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    cluster_attr = int(fa.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)
    la = driver.CUlaunchAttributeID
    names = {i: f"a{i}" for i, t, _, _, _ in args if t}
    decl = ", ".join(["void *stream"] + [f"{t}a{i}{suffix}" for i, t, _, _, suffix in args if t])
    kernels = list(dict.fromkeys(ln.name for ln in c.launches))
    lines = [f'/* {prefix}: {c.function_name}, exported by cute_py (see {prefix}.h). */',
             "#include <stdint.h>", "#include <stddef.h>", "#include <string.h>", f'#include "{prefix}.h"', "",
             _DRIVER_DECLARATIONS, C_HELPERS]
    if any(k == "Float32" and not isinstance(getattr(src, "index", None), int)
           for ln in c.launches for k, src in ln.params):
        lines += ["static float f32_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }", ""]
    data = bytes(c.cubin)
    body = ",".join(str(b) for b in data)
    lines.append(f"static const _Alignas(8) unsigned char cubin[{len(data)}] = {{{body}}};")
    lines.append("static CUmodule module_;")
    lines.append(f"static CUfunction functions_[{max(1, len(kernels))}];")
    lines.append("")
    lines.append(f"int {prefix}_load(void) {{")
    lines.append("    CUresult r;")
    lines.append("    if (module_) return 0;")
    lines.append("    if ((r = cuModuleLoadData(&module_, cubin))) { module_ = NULL; return r; }")
    non_portable = {ln.name for ln in c.launches if ln.non_portable_cluster}
    for k, name in enumerate(kernels):
        lines.append(f'    if ((r = cuModuleGetFunction(&functions_[{k}], module_, "{name}"))) goto fail;')
        if c.smem[name] > 48 * 1024:
            lines.append(f"    if ((r = cuFuncSetAttribute(functions_[{k}], {smem_attr}, {c.smem[name]}))) goto fail;")
        if name in non_portable:
            lines.append(f"    if ((r = cuFuncSetAttribute(functions_[{k}], {cluster_attr}, 1))) goto fail;")
    lines += ["    return 0;", "fail:", "    cuModuleUnload(module_);", "    module_ = NULL;", "    return r;", "}", ""]
    lines += [f"void {prefix}_unload(void) {{", "    if (module_) cuModuleUnload(module_);", "    module_ = NULL;", "}",
              ""]
    lines.append(f"int {prefix}_launch({decl}) {{")
    lines.append("    CUresult r;")
    lines.append(f"    if ((r = {prefix}_load())) return r;")
    for i, t, _, _, _ in args:
        if t == "const void *":
            align = c.sources[i][1][3]
            lines.append(f"    if (!{names[i]} || (uintptr_t){names[i]} % {align}) return 1;")
    arrays = {i: (names[i], f"{names[i]}_shape", f"{names[i]}_strides") for i, _ in c._dynamic_args}
    scalars = {i: names[i] for i in c._int_scalars}
    bind = CBinder(c._binder, arrays, scalars)
    lines += bind.lines
    # every value of every launch is computed and checked before the first launch
    launches = []
    for n, ln in enumerate(c.launches):
        lines.append(f"    /* launch {n}: {ln.name} */")
        slots = []
        for j, (kind, src) in enumerate(ln.params):
            p = f"p{n}_{j}"
            slots.append(p)
            lines += _param(c, driver, bind, names, p, kind, src)
        grid = []
        for axis, (g, cl, most) in enumerate(zip(ln.grid, ln.cluster, MAX_GRID_DIM)):
            if type(g) is int:
                grid.append(f"{g}u")
                continue
            v = f"g{n}_{'xyz'[axis]}"
            lines.append(f"    int64_t {v} = {bind.expr(g)};")
            lines.append(f"    if (bad || {v} < 1 || {v} > {most} || {v} % {cl}) return 1;")
            grid.append(f"(unsigned){v}")
        launches.append((ln, slots, grid))
    lines.append("    if (bad) return 1;")
    for n, (ln, slots, grid) in enumerate(launches):
        lines += _launch(c, la, kernels, names, n, ln, slots, grid)
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)


def _param(c, driver, bind, names, p, kind, src):
    """The C lines that compute kernel parameter ``p`` (of ``kind``, from ``src``)."""
    from ...nvgpu.tma.desc import encode_enums, tiled_strides

    if kind == "ptr":
        return [f"    uint64_t {p} = (uint64_t)(uintptr_t){names[src[0]]} + {src[1]}u;"]
    if kind == "desc":
        desc, (idx, off) = src
        if not desc.is_dynamic:
            desc = desc.validate()
        dt, il, sw, l2, oob = (int(e) for e in encode_enums(driver, desc))
        dims = ", ".join(f"(uint64_t)({bind.expr(x)})" for x in desc.global_dims)
        strides = ", ".join(f"(uint64_t)({bind.expr(x)})" for x in tiled_strides(desc))
        box = ", ".join(f"{x}u" for x in desc.box_dims)
        estr = ", ".join(f"{x}u" for x in desc.element_strides)
        return [f"    CUtensorMap {p};",
                f"    {{ const uint64_t dims[] = {{{dims}}}, strides[] = {{{strides}}};",
                f"      static const uint32_t box[] = {{{box}}}, estr[] = {{{estr}}};",
                f"      uintptr_t at = (uintptr_t){names[idx]} + {off}u;",
                "      if (bad || at % 16) return 1;",
                f"      if ((r = cuTensorMapEncodeTiled(&{p}, {dt}, {desc.rank}u, (void *)at, dims, strides, box, "
                f"estr, {il}, {sw}, {l2}, {oob}))) return r; }}"]
    if isinstance(src, SymInt):        # an extent, a stride or an integer scalar: checked against the slot
        lo, hi = {"Int32": (-(1 << 31), (1 << 31) - 1), "Int64": (-(1 << 63), (1 << 63) - 1)}[kind]
        return [f"    int64_t {p}_v = {bind.expr(src)};",
                f"    if ({p}_v < INT64_C({lo}) || {p}_v > INT64_C({hi})) return 1;" if kind == "Int32" else "",
                f"    {_SLOT_C[kind]} {p} = ({_SLOT_C[kind]}){p}_v;"]
    idx = getattr(src, "index", None)
    if idx is not None and c.sources[idx][0] == "scalar":
        return [f"    {_SLOT_C[kind]} {p} = ({_SLOT_C[kind]}){names[idx]};"]
    v = src.value if isinstance(src, Scalar) else src
    if kind == "Float32":      # its bits, exactly (-0.0, infinities and NaN too)
        value = f"f32_bits({struct.unpack('<I', struct.pack('<f', float(v)))[0]:#x}u)"
    elif kind == "Int64":
        value = f"(int64_t){int(v)}LL"
    else:
        value = f"{int(v)}"
    return [f"    {_SLOT_C[kind]} {p} = {value};"]


def _launch(c, la, kernels, names, n, ln, slots, grid):
    """The C lines of launch ``n``, its parameters computed."""
    out = [f"    {{   /* launch {n}: {ln.name} */",
           f"        void *params[] = {{{', '.join('&' + s for s in slots) or 'NULL'}}};"]
    stream = names[ln.stream] if ln.stream is not None else "stream"
    gx, gy, gz = grid
    bx, by, bz = ln.block
    smem = c.smem[ln.name]
    f = f"functions_[{kernels.index(ln.name)}]"
    coop = ln.name in c.cooperative
    if ln.cluster == (1, 1, 1) and not coop:
        out.append(f"        if ((r = cuLaunchKernel({f}, {gx}, {gy}, {gz}, {bx}u, {by}u, {bz}u, {smem}u, "
                   f"(CUstream){stream}, params, NULL))) return r;")
    else:
        attrs = []
        if ln.cluster != (1, 1, 1):
            cx, cy, cz = ln.cluster
            attrs.append(f"attrs[{len(attrs)}].id = {int(la.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)}; "
                         f"attrs[{len(attrs)}].value.clusterDim.x = {cx}u; "
                         f"attrs[{len(attrs)}].value.clusterDim.y = {cy}u; "
                         f"attrs[{len(attrs)}].value.clusterDim.z = {cz}u;")
        if coop:
            attrs.append(f"attrs[{len(attrs)}].id = {int(la.CU_LAUNCH_ATTRIBUTE_COOPERATIVE)}; "
                         f"attrs[{len(attrs)}].value.cooperative = 1;")
        out.append(f"        CUlaunchAttribute attrs[{len(attrs)}] = {{{{0}}}};")
        out += [f"        {a}" for a in attrs]
        out.append(f"        CUlaunchConfig config = {{{gx}, {gy}, {gz}, {bx}u, {by}u, {bz}u, {smem}u, "
                   f"(CUstream){stream}, attrs, {len(attrs)}u}};")
        out.append(f"        if ((r = cuLaunchKernelEx(&config, {f}, params, NULL))) return r;")
    out.append("    }")
    return out
