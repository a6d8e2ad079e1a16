"""The host-side API of the CuTe DSL: ``compile(..., options=...)`` (line information really in the PTX, the
optimisation level, kept files, errors naming unknown options), ``set_name_prefix`` of kernels and jit
functions, jit functions of host code only, ``Constexpr`` and the annotations of parameters, keyword
arguments."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

import cute_py as cute
import cute_py as cutlass  # the DSL's programs spell the numeric types and Constexpr through `cutlass`
from cute_py import arch
from cute_py.compiler import ArgumentError, DeviceArraySpec
from cute_py.compiler.specs.options import CompileOptions, parse_options
from cute_py.compiler.cache import store as cache

ROOT = pathlib.Path(__file__).resolve().parents[2]
A = DeviceArraySpec("Float32", (128,))
HERE = pathlib.Path(__file__).resolve()


def _line(tag):
    return next(i for i, text in enumerate(HERE.read_text().splitlines(), 1) if text.rstrip().endswith(tag))


@cute.kernel
def add_kernel(src, dst, n):
    tidx, _, _ = arch.thread_idx()
    if tidx < n:  # @line-if
        dst[tidx] = src[tidx] + 1.0  # @line-store
    arch.sync_threads()  # @line-sync


@cute.jit
def add(src, dst, n: cute.Int32):
    add_kernel(src, dst, n).launch(grid=1, block=128)


def _counted(fn):
    before = dict(cache.stats)
    out = fn()
    return out, {k: v - before.get(k, 0) for k, v in cache.stats.items()}


def _fresh(fn):
    """A new jit function of ``fn``'s code (an empty in-memory cache)."""
    return cute.compiler.JitFunction(fn.fn)


# -- options -------------------------------------------------------------------------------------


def test_line_info_puts_file_and_loc_directives_of_the_kernels_lines_in_the_ptx(assemble):
    c = cute.compile(_fresh(add), A, A, 5, options="--generate-line-info")
    files = dict(re.findall(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', c.ptx, re.M))
    assert str(HERE) in files.values(), files
    me = next(k for k, v in files.items() if v == str(HERE))
    lines = {int(n) for n in re.findall(rf"^\s*\.loc\s+{me}\s+(\d+)\s", c.ptx, re.M)}
    assert {_line("# @line-if"), _line("# @line-store"), _line("# @line-sync")} <= lines
    store = c.ptx.index(f".loc\t{me} {_line('# @line-store')} ")
    assert "st.global" in c.ptx[store:].split(".loc")[1]  # the store's line precedes the store
    assert ".target sm_90a\n" in c.ptx  # line tables only, not a debug compile
    assemble(c.ptx)
    assert b".nv_debug_line_sass" in c.cubin  # the SASS maps to the lines (for the profilers), whichever assembler


def test_without_line_info_the_ptx_has_no_locations():
    c = cute.compile(_fresh(add), A, A, 5)
    assert ".loc" not in c.ptx and ".file" not in c.ptx and b".nv_debug_line_sass" not in c.cubin


def test_options_that_change_the_code_are_part_of_the_cache_keys(cache_dir):
    jf = _fresh(add)
    plain, n1 = _counted(lambda: cute.compile(jf, A, A, 5))
    lined, n2 = _counted(lambda: cute.compile(jf, A, A, 5, options="--generate-line-info"))
    o0, n3 = _counted(lambda: cute.compile(jf, A, A, 5, options="--opt-level 0"))
    assert (n1["compiles"], n2["compiles"], n3["compiles"]) == (1, 1, 1)
    assert len({plain.key, lined.key, o0.key}) == 3 and ".loc" in lined.ptx
    assert cute.compile(jf, A, A, 5, options="--generate-line-info") is lined
    # in another jit function object (the disk cache): each found again, none confused with another
    again, n4 = _counted(lambda: cute.compile(_fresh(add), A, A, 5, options="--generate-line-info"))
    assert n4["compiles"] == 0 and n4["disk_hits"] == 1 and again.ptx == lined.ptx


def test_the_optimisation_level_reaches_the_back_end():
    @cute.kernel
    def k(dst, n):
        tidx, _, _ = arch.thread_idx()
        x = tidx * 3
        y = x * 5 + x  # folds to tidx * 18 when optimised
        dst[tidx] = y + n

    @cute.jit
    def host(dst, n: cute.Int32):
        k(dst, n).launch(grid=1, block=32)

    i32 = DeviceArraySpec("Int32", (32,))
    o0 = cute.compile(host, i32, 1, options="--opt-level 0").ptx
    o3 = cute.compile(host, i32, 1, options="--opt-level=3").ptx
    assert o0 != o3 and len(o0.splitlines()) > len(o3.splitlines())


def test_keep_ptx_and_cubin_write_files_named_after_the_function(tmp_path):
    jf = _fresh(add)
    jf.set_name_prefix("mine")
    c = cute.compile(jf, A, A, 5, options=f"--keep-ptx --keep-cubin --dump-dir {tmp_path}")
    ptx, cubin = tmp_path / "mine_add.sm_90a.ptx", tmp_path / "mine_add.sm_90a.cubin"
    assert ptx.read_text() == c.ptx and cubin.read_bytes() == c.cubin


def test_the_blackwell_target_is_its_own_compile_with_its_own_files(tmp_path, cache_dir):
    opts = parse_options("--gpu-arch sm_100a")
    assert opts.gpu_arch == "sm_100a" and opts.features == "+ptx86" and not opts.default_pipeline
    assert opts.codegen_key() != CompileOptions().codegen_key()
    jf = _fresh(add)
    hopper = cute.compile(jf, A, A, 5)
    c = cute.compile(jf, A, A, 5, options=f"--gpu-arch sm_100a --keep-ptx --dump-dir {tmp_path}")
    assert c is not hopper and ".target sm_100a" in c.ptx and ".target sm_90a" in hopper.ptx
    assert (c.arch, hopper.arch) == ("sm_100a", "sm_90a") and c.cubin[:4] == b"\x7fELF"
    assert (tmp_path / "add.sm_100a.ptx").read_text() == c.ptx


def test_enable_assertions_and_the_one_target_are_accepted():
    assert parse_options("--enable-assertions --gpu-arch sm_90a") == CompileOptions(assertions=True)
    assert cute.compile(_fresh(add), A, A, 5, options="--enable-assertions").kernel_names == ["add_kernel_0"]
    assert parse_options("") == parse_options(None) == CompileOptions()


@pytest.mark.parametrize("options, match", [
    ("--fast-math", r"unknown compile options: --fast-math"),
    ("--generate-line-info --bogus x", r"unknown compile options: --bogus, x"),
    ("--ptxas-options '-v'", r"options of the CuTe DSL that cute_py does not support: --ptxas-options"),
    ("--keep-sass", r"does not support: --keep-sass"),
    ("--opt-level 4", r"--opt-level takes 0, 1, 2 or 3, got '4'"),
    ("--opt-level", r"--opt-level \(needs a value\)"),
    ("--gpu-arch sm_80", r"--gpu-arch sm_80: cute_py compiles for sm_90a or sm_100a"),
    ("--keep-ptx=yes", r"--keep-ptx=yes \(takes no value\)"),
    ("'unclosed", r"do not parse"),
])
def test_bad_options_are_errors_naming_them(options, match):
    with pytest.raises(cute.CuteValueError, match=match):
        cute.compile(_fresh(add), A, A, 5, options=options)


def test_options_must_be_a_string():
    with pytest.raises(cute.CuteValueError, match="options is a string of compile options"):
        parse_options(["--generate-line-info"])


# -- name prefixes ----------------------------------------------------------------------------------


def test_a_kernels_name_prefix_names_its_ptx_entry_and_is_in_the_key(cache_dir):
    @cute.kernel
    def k(a):
        pass

    @cute.jit
    def host(a):
        k(a).launch(grid=1, block=32)

    assert ".entry k_0(" in cute.compile(host, A).ptx
    k.set_name_prefix("pre")
    named, n = _counted(lambda: cute.compile(host, A))
    assert named.kernel_names == ["pre_k_0"] and ".entry pre_k_0(" in named.ptx and n["compiles"] == 1
    k.set_name_prefix("pre", keep_mangled_name=False)
    assert ".entry pre_0(" in cute.compile(host, A).ptx
    k.set_name_prefix("")
    assert cute.compile(host, A).kernel_names == ["k_0"]


def test_a_name_prefix_set_inside_the_jit_function_names_the_entry():
    @cute.kernel
    def k(a):
        pass

    @cute.jit
    def host(a):
        k.set_name_prefix("inside")
        k(a).launch(grid=1, block=32)

    assert cute.compile(host, A).kernel_names == ["inside_k_0"]


@pytest.mark.parametrize("name, flags, match", [
    (3, {}, "set_name_prefix takes a string, got int"),
    ("has space", {}, "'has space' is not a valid start of a PTX symbol"),
    ("9lives", {}, "not a valid start of a PTX symbol"),
    ("", {"keep_mangled_name": False}, "needs a non-empty name when keep_mangled_name is False"),
    ("ok", {"remove_cutlass_symbol": 1}, "remove_cutlass_symbol must be True or False"),
])
def test_bad_name_prefixes_are_errors(name, flags, match):
    with pytest.raises(ArgumentError, match=match):
        add_kernel.set_name_prefix(name, **flags)
    with pytest.raises(ArgumentError, match=match):
        add.set_name_prefix(name, **flags)


def test_a_jit_functions_name_prefix_names_the_compiled_function_and_is_in_the_key():
    jf = _fresh(add)
    plain = cute.compile(jf, A, A, 5)
    jf.set_name_prefix("host")
    named = cute.compile(jf, A, A, 5)
    assert plain.function_name == "add" and named.function_name == "host_add" and named is not plain
    assert named.key != plain.key and repr(named).startswith("Compiled(host_add:")
    jf.set_name_prefix("only", keep_mangled_name=False)
    assert cute.compile(jf, A, A, 5).function_name == "only"


# -- jit functions of host code only -----------------------------------------------------------------


def test_a_jit_function_without_a_launch_runs_as_python_each_call(capsys):
    @cute.jit
    def show(n):
        layout = cute.make_layout((n, 4), stride=(4, 1))
        print(layout)
        return cute.size(layout)

    before = dict(cache.stats)
    assert show(2) == 8 and show(2) == 8 and show(3) == 12
    assert capsys.readouterr().out == "(2,4):(4,1)\n(2,4):(4,1)\n(3,4):(4,1)\n"
    assert cache.stats["compiles"] == before["compiles"]


def test_each_call_of_a_host_only_function_sees_its_own_arguments(capsys):
    @cute.jit
    def show(n: cute.Int32, t):
        print(n, t.shape)  # traced: a run-time value prints ?, as in the DSL
        cute.printf("n = {}", n)  # run: each call's value

    show(3, DeviceArraySpec("Float32", (4, 8)))
    show(5, DeviceArraySpec("Float32", (4, 8)))  # the same specialisation, another run-time value
    assert capsys.readouterr().out == "? (4, 8)\nn = 3\n? (4, 8)\nn = 5\n"


def test_compile_of_a_host_only_function_returns_a_callable_that_does_nothing(capsys):
    @cute.jit
    def show():
        print(cute.make_layout((2, 3)))

    c = cute.compile(show)
    assert capsys.readouterr().out == "(2,3):(1,2)\n"  # printed once, while compiling
    assert c() is None and c.kernel_names == [] and c.ptx == "" and "no kernels" in repr(c)
    assert capsys.readouterr().out == ""


def test_a_host_only_call_loads_neither_mlir_nor_cuda():
    code = ("import sys, cute_py as cute\n"
            "@cute.jit\n"
            "def f():\n"
            "    print(cute.make_layout((4, 8)))\n"
            "f()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mlir_dialects', 'numba_cuda_mlir', 'cuda')"
            " and m != 'mlir_dialects'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["(4,8):(1,4)", "[]"]


def test_a_first_compile_in_a_new_process_imports_neither_numpy_nor_cuda_bindings(tmp_path):
    # the first-compile budget (benchmarks/bench_first_compile.py): the MLIR bindings' optional numpy import is
    # deferred and nvJitLink is called through ctypes, so a TMA copy compiles to a cubin without either package
    code = ("import sys, cute_py as cute\n"
            "from cute_py.demo.kernel import tma_copy\n"
            "a = cute.compiler.DeviceArraySpec('Float16', (256, 256))\n"
            "c = cute.compile(tma_copy, a, a, (64, 64), 'none')\n"
            "assert c.cubin[:4] == b'\\x7fELF'\n"
            "print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith('cuda.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, CUTE_PY_CACHE_DIR=str(tmp_path), PYTHONPATH=os.pathsep.join(
                             p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "[]"


# -- annotations and keyword arguments ------------------------------------------------------------------


def test_constexpr_is_exported_documented_and_subscriptable():
    assert cute.Constexpr is cutlass.Constexpr and cute.Constexpr.__doc__
    assert cute.Constexpr[int] is not None


def test_constexpr_parameters_are_compile_time_values_in_the_key():
    @cute.kernel
    def k(dst, bits: cutlass.Constexpr):
        tidx, _, _ = arch.thread_idx()
        dst[tidx] = bits

    @cute.jit
    def host(dst, copy_bits: cutlass.Constexpr = 128, scale: cute.Constexpr[int] = 1):
        k(dst, copy_bits * scale).launch(grid=1, block=32)

    i32 = DeviceArraySpec("Int32", (32,))
    c128 = cute.compile(host, i32)
    c64 = cute.compile(host, i32, 64)
    assert c128 is not c64 and "128" in c128.ptx and "64" in c64.ptx and "128" not in c64.ptx
    assert [kind for kind, _ in c64.sources] == ["tensor", "static"]
    assert cute.compile(host, i32, cute.Int32(64)) is c64  # a scalar for a Constexpr: its value, compiled in
    with pytest.raises(ArgumentError, match="copy_bits is annotated Constexpr"):
        cute.compile(host, i32, i32)


def test_an_int32_annotation_makes_a_python_int_a_run_time_argument():
    @cute.kernel
    def k(dst, n: cute.Int32):
        tidx, _, _ = arch.thread_idx()
        dst[tidx] = n

    @cute.jit
    def host(dst, m: cutlass.Int32):
        k(dst, 7).launch(grid=1, block=32)  # the kernel's annotation: 7 is a run-time parameter
        k(dst, m).launch(grid=1, block=32)

    i32 = DeviceArraySpec("Int32", (32,))
    c = cute.compile(host, i32, 5)
    assert cute.compile(host, i32, 6) is c  # one compile serves every value
    assert [kind for kind, _ in c.sources] == ["tensor", "scalar"]
    assert [[kind for kind, _ in ln.params] for ln in c.launches] == [["ptr", "Int32"], ["ptr", "Int32"]]
    assert ".param .u32" in c.ptx and not re.search(r"\b7;", c.ptx)


def test_type_annotations_of_the_dsl_are_accepted():
    @cute.kernel
    def k(t: cute.Tensor, shape: cute.Shape, layout: cute.Layout, p: cute.Pointer = None, x: cutlass.Float16 = 0):
        pass

    @cute.jit
    def host(t: cute.Tensor, layout: cute.Layout):
        k(t, t.shape, layout).launch(grid=1, block=32)

    assert cute.compile(host, A, cute.make_layout(4)).kernel_names == ["k_0"]


def test_keyword_arguments_bind_to_their_parameters():
    jf = _fresh(add)
    c = cute.compile(jf, A, dst=A, n=5)
    assert cute.compile(jf, src=A, dst=A, n=5) is c
    with pytest.raises(ArgumentError, match="add: nope: no such parameter"):
        cute.compile(jf, A, A, nope=5)
    with pytest.raises(ArgumentError, match="add: src given both by position and by keyword"):
        cute.compile(jf, A, src=A, dst=A, n=5)
    with pytest.raises(ArgumentError, match="add: missing the argument dst"):
        cute.compile(jf, A, n=5)


def test_the_dsl_program_of_the_elementwise_add_compiles_with_its_options():
    programs = pytest.importorskip("tests.dsl_programs.elementwise_add")
    a = DeviceArraySpec("Float16", (64, 128))
    c = cute.compile(programs.elementwise_add, a, a, a, options="--generate-line-info")
    assert c.kernel_names[0].startswith("dsl_program_elementwise_add_") and ".loc" in c.ptx


def test_a_compile_with_options_has_every_stage_and_the_decorators_take_parentheses():
    @cute.kernel()
    def k(a):
        pass

    @cute.jit()
    def host(a):
        k(a).launch(grid=1, block=32)

    c = cute.compile(host, A, options="--generate-line-info")
    assert "llvm.func @k_0" in c.mlir and "cute_nvgpu." not in c.lowered and ".loc" in c.ptx
    assert c.cubin[:4] == b"\x7fELF" and set(c.stage_times) >= {"trace", "mlir", "ptx", "cubin"}
