"""``Compiled.export`` without a GPU: the exported C is compiled with the system C compiler (``-std=c11 -Wall
-Wextra -Werror``) and linked with a stand-in driver written here, which prints every call it gets; a program calls
the exported launch function with chosen addresses and scalars. Each launch must be the Python call's for the same
arguments, byte for byte (the Python call's launches recorded by the stand-in driver of ``_recording_driver``,
with the same stand-in descriptor encoding: the address, 16 times), and each descriptor encoded from the
descriptor's own fields. A null or misaligned pointer launches nothing; what needs host code is refused."""

import re
import shutil
import subprocess

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler.runtime.export import _DRIVER_DECLARATIONS
from cute_py.nvgpu.tma.desc import driver_module, encode_enums, tiled_strides
from examples import gemm, tma_copy
from _fake_device import FakeCudaArray
from _recording_driver import driver, fresh  # noqa: F401 (the fixture)

SPEC = cute.compiler.DeviceArraySpec
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc, gcc or clang) on this machine")
STREAM = 0x7700
_SIZES = {"ptr": 8, "desc": 128, "Int32": 4, "Int64": 8, "Float32": 4}

_STUB = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
%(declarations)s
static const char *names_[16];
static int n_names_;
static int sizes_(const char *name, const int **out) {
%(sizes)s
    return -1;
}
CUresult cuModuleLoadData(CUmodule *m, const void *image) {
    const unsigned char *b = image;
    printf("load %%02x%%02x%%02x%%02x\n", b[0], b[1], b[2], b[3]);
    *m = (CUmodule)(uintptr_t)0x1000;
    return 0;
}
CUresult cuModuleUnload(CUmodule m) { (void)m; printf("unload\n"); return 0; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    (void)m;
    names_[n_names_] = name;
    *f = (CUfunction)(uintptr_t)(++n_names_);
    return 0;
}
CUresult cuFuncSetAttribute(CUfunction f, int attribute, int value) {
    printf("attribute %%s %%d %%d\n", names_[(uintptr_t)f - 1], attribute, value);
    return 0;
}
CUresult cuTensorMapEncodeTiled(CUtensorMap *map, int dt, uint32_t rank, void *address, const uint64_t *dims,
                                const uint64_t *strides, const uint32_t *box, const uint32_t *estr, int il, int sw,
                                int l2, int oob) {
    printf("encode %%d %%u %%llx", dt, rank, (unsigned long long)(uintptr_t)address);
    for (uint32_t i = 0; i < rank; ++i) printf(" %%llu", (unsigned long long)dims[i]);
    for (uint32_t i = 0; i < (rank > 1 ? rank - 1 : 1); ++i) printf(" %%llu", (unsigned long long)strides[i]);
    for (uint32_t i = 0; i < rank; ++i) printf(" %%u", box[i]);
    for (uint32_t i = 0; i < rank; ++i) printf(" %%u", estr[i]);
    printf(" %%d %%d %%d %%d\n", il, sw, l2, oob);
    for (int i = 0; i < 16; ++i) map->opaque[i] = (uint64_t)(uintptr_t)address;
    return 0;
}
static void params_(const char *name, void **params) {
    const int *sizes;
    int n = sizes_(name, &sizes);
    for (int j = 0; j < n; ++j) {
        printf("param");
        for (int k = 0; k < sizes[j]; ++k) printf(" %%02x", ((unsigned char *)params[j])[k]);
        printf("\n");
    }
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, CUstream stream, void **params, void **extra) {
    (void)extra;
    const char *name = names_[(uintptr_t)f - 1];
    printf("launch %%s %%u %%u %%u %%u %%u %%u %%u %%llx 1 1 1\n", name, gx, gy, gz, bx, by, bz, smem,
           (unsigned long long)(uintptr_t)stream);
    params_(name, params);
    return 0;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    (void)extra;
    const char *name = names_[(uintptr_t)f - 1];
    unsigned x = 1, y = 1, z = 1;
    for (unsigned i = 0; i < c->numAttrs; ++i)
        if (c->attrs[i].id == 4) { x = c->attrs[i].value.clusterDim.x; y = c->attrs[i].value.clusterDim.y;
                                   z = c->attrs[i].value.clusterDim.z; }
    printf("launch %%s %%u %%u %%u %%u %%u %%u %%u %%llx %%u %%u %%u\n", name, c->gridDimX, c->gridDimY, c->gridDimZ,
           c->blockDimX, c->blockDimY, c->blockDimZ, c->sharedMemBytes, (unsigned long long)(uintptr_t)c->hStream,
           x, y, z);
    params_(name, params);
    return 0;
}
"""


def _run_exported(compiled, tmp_path, prefix, call_args, prelude=""):
    """Export ``compiled``, build it with the stand-in driver and a main calling ``<prefix>_launch(STREAM,
    call_args...)`` after ``prelude``; the program's output lines."""
    compiled.export(str(tmp_path), prefix)
    sizes = []
    for ln in compiled.launches:
        kinds = ", ".join(str(_SIZES[k]) for k, _ in ln.params) or "0"
        sizes.append(f'    if (!strcmp(name, "{ln.name}")) {{ static const int s[] = {{{kinds}}}; *out = s; '
                     f'return {len(ln.params)}; }}')
    (tmp_path / "stub.c").write_text(_STUB % {"declarations": _DRIVER_DECLARATIONS, "sizes": "\n".join(sizes)})
    (tmp_path / "main.c").write_text(f'#include <stdio.h>\n#include "{prefix}.h"\nint main(void) {{\n'
                                     f'    {prelude}\n    int r = {prefix}_launch((void *)(uintptr_t){STREAM:#x}, '
                                     f'{", ".join(call_args)});\n    printf("result %d\\n", r);\n'
                                     f'    {prefix}_unload();\n    return 0;\n}}\n')
    exe = tmp_path / "prog"
    subprocess.run([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(tmp_path / "main.c"),
                    str(tmp_path / f"{prefix}.c"), str(tmp_path / "stub.c")], check=True, capture_output=True)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()


def _expected(compiled, driver, args):  # noqa: F811
    """The lines the program must print: the module load, the attributes, then per launch of the Python call
    with ``args`` its descriptors (from their fields), the launch and its parameters' bytes, then the unload."""
    d = driver_module()
    out = ["load 7f454c46"]
    for name, smem in compiled.smem.items():
        if smem > 48 * 1024:
            out.append(f"attribute {name} {int(d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)}"
                       f" {smem}")
    n = len(driver.calls)
    compiled(*args, stream=STREAM)
    calls = driver.calls[n:]
    env = compiled._binder.env(compiled._last_bound[1]) if compiled._binder is not None else None
    assert len(calls) == len(compiled.launches)
    pointers = {i: a.address for i, a in enumerate(args) if isinstance(a, FakeCudaArray)}
    for ln, call in zip(compiled.launches, calls):
        for kind, src in ln.params:
            if kind == "desc":
                desc, (idx, off) = src
                desc = desc.bind(env) if desc.is_dynamic else desc     # as the call's binding made it
                dt, il, sw, l2, oob = (int(e) for e in encode_enums(d, desc))
                fields = [*desc.global_dims, *tiled_strides(desc), *desc.box_dims, *desc.element_strides]
                out.append(f"encode {dt} {desc.rank} {pointers[idx] + off:x} " + " ".join(map(str, fields))
                           + f" {il} {sw} {l2} {oob}")
        grid, block, cluster = call["grid"], call["block"], call["cluster"]
        out.append(f"launch {ln.name} {' '.join(map(str, grid + block))} {call['smem']} {int(call['stream']):x} "
                   + " ".join(map(str, cluster)))
        out += ["param " + " ".join(f"{b:02x}" for b in value) for value in call["params"]]
    return out + ["result 0", "unload"]


def test_an_exported_tma_copy_launches_as_the_python_call(driver, tmp_path):  # noqa: F811
    a = SPEC("Float32", (300, 200))
    c = fresh(cute.compile(tma_copy, a, a, (128, 64), "none"))
    src, dst = FakeCudaArray("float32", (300, 200), address=1 << 30), FakeCudaArray("float32", (300, 200),
                                                                                   address=3 << 30)
    want = _expected(c, driver, (src, dst))
    got = _run_exported(c, tmp_path, "copy_f32", [f"(const void *){1 << 30:#x}", f"(const void *){3 << 30:#x}"])
    assert got == want
    header = (tmp_path / "copy_f32.h").read_text()
    assert "int copy_f32_launch(void *stream, const void *src, const void *dst);" in header
    assert "src: Float32 (300, 200), strides (200, 1) (elements), a device pointer 256-byte aligned" in header
    assert (tmp_path / "copy_f32.cubin").read_bytes() == c.cubin


def test_an_exported_gemm_launches_its_cluster_as_the_python_call(driver, tmp_path):  # noqa: F811
    s = SPEC("BFloat16", (512, 512))
    c = fresh(cute.compile(gemm, s, s, s))
    assert any(ln.cluster != (1, 1, 1) for ln in c.launches) and max(c.smem.values()) > 48 * 1024
    arrays = [FakeCudaArray("bfloat16", (512, 512), address=(k + 1) << 32) for k in range(3)]
    want = _expected(c, driver, arrays)
    got = _run_exported(c, tmp_path, "gemm_bf16", [f"(const void *){(k + 1) << 32:#x}" for k in range(3)])
    assert got == want


@cute.kernel
def _scaled(a, n, x, m):
    t, _, _ = arch.thread_idx()
    if t < n + m:
        a[t] = x


@cute.jit
def scaled(a, n: cute.Int32, x: cute.Float32, m: cute.Int64):
    _scaled(a, n, x, m).launch(grid=2, block=64)


@pytest.mark.parametrize("n, x, m", [(5, 1.5, 7), (-3, -0.0, -(1 << 40)), (2**31 - 1, 3.0e38, 2**63 - 1)])
def test_run_time_scalars_are_passed_as_the_python_call_passes_them(driver, tmp_path, n, x, m):  # noqa: F811
    c = fresh(cute.compile(scaled, SPEC("Float32", (128,)), 5, 1.5, 7))   # (loaded with this test's driver)
    a = FakeCudaArray("float32", (128,), address=1 << 28)
    want = _expected(c, driver, (a, n, x, m))
    got = _run_exported(c, tmp_path, "scaled", [f"(const void *){1 << 28:#x}", str(n), f"{x!r}f",
                                                f"(int64_t){m}LL"])
    assert got == want


@pytest.mark.parametrize("address", ["0", f"{(1 << 28) + 4:#x}", f"{(1 << 28) + 128:#x}"])
def test_a_null_or_misaligned_pointer_launches_nothing(tmp_path, address):
    """The compile assumed 256-byte alignment (its spec's address): the exported code refuses less."""
    c = cute.compile(scaled, SPEC("Float32", (128,)), 5, 1.5, 7)
    got = _run_exported(c, tmp_path, "scaled", [f"(const void *){address}", "1", "1.0f", "(int64_t)1"])
    assert got == ["load 7f454c46", "result 1", "unload"]


@cute.kernel
def _one(a, v):
    a[0] = v


@cute.jit
def decides(a):
    if cute.size(a) > 64:               # a decision of the host code on a run-time extent
        _one(a, 1.0).launch(grid=1, block=32)


def test_what_needs_the_host_or_is_no_c_name_is_refused(tmp_path):
    out = tmp_path / "out"
    marked = cute.runtime.from_dlpack(FakeCudaArray("float32", (128,), address=1 << 26)).mark_layout_dynamic()
    guarded = cute.compile(decides, marked)
    with pytest.raises(cute.CuteValueError, match=r"export: decides decides on its run-time extents in its host code"):
        guarded.export(str(out), "guarded")
    c = cute.compile(scaled, SPEC("Float32", (128,)), 5, 1.5, 7)
    for bad in ("1x", "a-b", "", None):
        with pytest.raises(cute.CuteValueError, match="the prefix must be a C identifier"):
            c.export(str(out), bad)
    assert not out.exists()


def _dynamic_copy():
    spec = SPEC("Float32", (cute.sym_int(), cute.sym_int(divisibility=64)))
    return fresh(cute.compile(tma_copy, spec, spec, (128, 64), "none"))


@pytest.mark.parametrize("shape", [(256, 512), (300, 640), (1, 64)])
def test_run_time_extents_bind_and_launch_as_the_python_call(driver, tmp_path, shape):  # noqa: F811
    """The extents and strides given at the call make the descriptors' dims and strides and the grid, as the
    Python call's binding does."""
    c = _dynamic_copy()
    src, dst = (FakeCudaArray("float32", shape, address=k << 30) for k in (1, 3))
    want = _expected(c, driver, (src, dst))
    m, n = shape
    prelude = f"int64_t ext[] = {{{m}, {n}}}, st[] = {{{n}, 1}};"
    got = _run_exported(c, tmp_path, "copy_dyn", [f"(const void *){1 << 30:#x}", "ext", "st",
                                                   f"(const void *){3 << 30:#x}", "ext", "st"], prelude)
    assert got == want
    header = (tmp_path / "copy_dyn.h").read_text()
    assert "const void *src, const int64_t *src_shape, const int64_t *src_strides, const void *dst" in header


@pytest.mark.parametrize("src, dst", [
    ("{256, 500}, {500, 1}", "{256, 500}, {500, 1}"),      # 500: not a multiple of the divisibility 64
    ("{256, 512}, {512, 1}", "{256, 512}, {1024, 1}"),     # dst's row stride: not the compact one
    ("{256, 512}, {512, 1}", "{128, 512}, {512, 1}"),      # dst's rows: not src's (one run-time value)
    ("{-128, 512}, {512, 1}", "{-128, 512}, {512, 1}"),    # a negative extent
    ("{1099511627776, 512}, {512, 1}", "{1099511627776, 512}, {512, 1}"),  # past the 32-bit value's range
])
def test_extents_that_break_a_rule_launch_nothing(driver, tmp_path, src, dst):  # noqa: F811
    """What the Python call refuses with a SpecMismatch, the exported code refuses with 1, before launching."""
    c = _dynamic_copy()
    (es, ss), (ed, sd) = (tuple(tuple(int(x) for x in part.strip("{} ").split(",")) for part in arg.split("}, "))
                          for arg in (src, dst))
    with pytest.raises(cute.CuteError):
        c(FakeCudaArray("float32", es, ss, address=1 << 30), FakeCudaArray("float32", ed, sd, address=3 << 30))
    prelude = f"int64_t es[] = {{{es[0]}, {es[1]}}}, ss[] = {{{ss[0]}, {ss[1]}}}, ed[] = {{{ed[0]}, {ed[1]}}}, " \
              f"sd[] = {{{sd[0]}, {sd[1]}}};"
    got = _run_exported(c, tmp_path, "copy_dyn", [f"(const void *){1 << 30:#x}", "es", "ss",
                                                   f"(const void *){3 << 30:#x}", "ed", "sd"], prelude)
    assert got == ["load 7f454c46", "result 1", "unload"]


def test_the_header_compiles_as_cpp_too(tmp_path):
    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler on this machine")
    c = cute.compile(scaled, SPEC("Float32", (128,)), 5, 1.5, 7)
    c.export(str(tmp_path), "scaled")
    (tmp_path / "use.cpp").write_text('#include "scaled.h"\nint f() { return scaled_launch(nullptr, nullptr, 1, '
                                      '1.0f, 1); }\n')
    subprocess.run([cxx, "-std=c++11", "-Wall", "-Werror", "-c", "-o", str(tmp_path / "use.o"),
                    str(tmp_path / "use.cpp")], check=True, capture_output=True)
    assert re.search(r"int scaled_launch\(void \*stream, const void \*a, int32_t n, float x, int64_t m\);",
                     (tmp_path / "scaled.h").read_text())


@cute.kernel
def _pair(x, y, k):
    t, _, _ = arch.thread_idx()
    y[t] = x[t] + k


@cute.jit
def clashing(dims, default, r: cute.Int32):
    _pair(dims, default, r).launch(grid=1, block=32)


def test_argument_names_that_c_reserves_or_the_source_uses_stay_apart(driver, tmp_path):  # noqa: F811
    """``dims`` and ``r`` are names of the generated code, ``default`` a C keyword: the C source calls the
    arguments a0, a1..., and the header names a reserved one by its index."""
    c = fresh(cute.compile(clashing, SPEC("Float32", (32,)), SPEC("Float32", (32,)), 3))
    x, y = FakeCudaArray("float32", (32,), address=1 << 26), FakeCudaArray("float32", (32,), address=2 << 26)
    want = _expected(c, driver, (x, y, 7))
    got = _run_exported(c, tmp_path, "clash", [f"(const void *){1 << 26:#x}", f"(const void *){2 << 26:#x}", "7"])
    assert got == want
    assert "int clash_launch(void *stream, const void *dims, const void *a1, int32_t r);" in \
        (tmp_path / "clash.h").read_text()


@cute.jit
def shadowed(x, x_shape):
    _pair(x, x_shape, 1).launch(grid=1, block=32)


def test_a_name_that_meets_an_arrays_extents_parameter_falls_back_to_indices(tmp_path):
    """``x``'s run-time extents would be ``x_shape``, the name of the next argument: the header then names every
    parameter by its index, and it compiles."""
    c = cute.compile(shadowed, SPEC("Float32", (cute.sym_int(),)), SPEC("Float32", (32,)))
    c.export(str(tmp_path), "shadow")
    header = (tmp_path / "shadow.h").read_text()
    assert "int shadow_launch(void *stream, const void *a0, const int64_t *a0_shape, const int64_t *a0_strides, " \
           "const void *a1);" in header
    subprocess.run([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-c", "-o", str(tmp_path / "shadow.o"),
                    str(tmp_path / "shadow.c")], check=True, capture_output=True)
