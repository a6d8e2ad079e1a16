"""The compile cache: in memory per specialisation, on disk across processes, atomic, never trusting a bad entry."""

import json
import os
import pathlib
import subprocess
import sys

import cute_py as cute
from cute_py.compiler.cache import store as cache
from examples import tma_copy

ROOT = pathlib.Path(__file__).resolve().parents[2]

_CHILD = """
import json, cute_py as cute
from examples import tma_copy
a = cute.compiler.DeviceArraySpec({dtype!r}, (256, 512))
c = cute.compile(tma_copy, a, a, (128, 64), 'none')
print(json.dumps(dict(cute.compiler.stats, ptx_ok='cp.async.bulk.tensor.2d' in c.ptx, elf=c.cubin[:4] == b'\\x7fELF',
                      from_cache=c.from_cache)))
"""


def _child(cache_dir, dtype="Float32"):
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, CUTE_PY_CACHE_DIR=str(cache_dir), PYTHONPATH=path)
    out = subprocess.run([sys.executable, "-c", _CHILD.format(dtype=dtype)], env=env, cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _entries(cache_dir):
    return sorted(p for p in pathlib.Path(cache_dir).rglob("*") if p.is_file())


def test_a_second_process_loads_the_cubin_without_compiling(cache_dir):
    first = _child(cache_dir)
    assert first["compiles"] == 1 and first["disk_hits"] == 0 and first["from_cache"] is False
    assert sorted(p.suffix for p in _entries(cache_dir)) == [".cubin", ".json", ".ptx"]
    second = _child(cache_dir)
    assert second["compiles"] == 0 and second["disk_hits"] == 1 and second["from_cache"] is True
    assert second["ptx_ok"] and second["elf"]


def test_another_specialisation_is_another_entry(cache_dir):
    _child(cache_dir, "Float32")
    other = _child(cache_dir, "BFloat16")
    assert other["compiles"] == 1
    assert len([p for p in _entries(cache_dir) if p.suffix == ".json"]) == 2


def test_a_corrupt_cubin_is_recompiled_and_rewritten(cache_dir):
    _child(cache_dir)
    (cubin,) = [p for p in _entries(cache_dir) if p.suffix == ".cubin"]
    cubin.write_bytes(b"\x7fELF" + b"\0" * 64)  # right magic, wrong content: the hash catches it
    again = _child(cache_dir)
    assert again["compiles"] == 1 and again["disk_rejects"] == 1
    assert _child(cache_dir)["disk_hits"] == 1  # the rewritten entry is good


def _entry(cache_dir, suffix):
    (path,) = [p for p in _entries(cache_dir) if p.suffix == suffix]
    return path


def _compile_here():
    """Compile kernel 1 in this process through a new jit function (no memory hit: the disk cache is asked);
    the compiled object and what the cache counted for it."""
    before = dict(cache.stats)
    a = cute.compiler.DeviceArraySpec("Float32", (256, 512))
    c = cute.compile(cute.compiler.JitFunction(tma_copy.fn), a, a, (128, 64), "none")
    return c, {k: v - before.get(k, 0) for k, v in cache.stats.items()}


def test_a_corrupt_ptx_is_recompiled_not_handed_out(cache_dir):
    good = _compile_here()[0].ptx
    ptx = _entry(cache_dir, ".ptx")
    ptx.write_text(good.replace("cp.async.bulk.tensor.2d", "cp.async.bulk.tensor.3d"))  # same size, wrong code
    c, counted = _compile_here()
    assert counted["compiles"] == 1 and counted["disk_rejects"] == 1
    assert c.ptx == good
    assert ptx.read_text() == good and _compile_here()[1]["disk_hits"] == 1


def test_an_edited_shared_memory_size_in_the_metadata_is_not_trusted(cache_dir):
    first = _compile_here()[0]
    meta = _entry(cache_dir, ".json")
    data = json.loads(meta.read_text())
    (name,) = data["kernels"]
    data["kernels"][name] = 16  # less than the kernel allocates: a launch would overrun its shared memory
    meta.write_text(json.dumps(data))
    c, counted = _compile_here()
    assert counted["compiles"] == 1 and counted["disk_rejects"] == 1
    assert c.smem == first.smem != {name: 16}


def test_deeply_nested_metadata_is_a_miss_not_a_recursion_error(cache_dir):
    _compile_here()
    _entry(cache_dir, ".json").write_text("[" * 100_000 + "]" * 100_000)
    _, counted = _compile_here()
    assert counted["compiles"] == 1 and counted["disk_rejects"] == 1


def test_a_missing_ptx_file_is_a_miss(cache_dir):
    _compile_here()
    _entry(cache_dir, ".ptx").unlink()
    assert _compile_here()[1]["compiles"] == 1


def test_metadata_whose_checksum_does_not_match_is_a_miss(cache_dir):
    _compile_here()
    meta = _entry(cache_dir, ".json")
    data = json.loads(meta.read_text())
    assert data["deps"]["files"]
    data["deps"]["files"] = []  # the dependencies dropped from the manifest
    meta.write_text(json.dumps(data))
    assert _compile_here()[1]["disk_rejects"] == 1


def test_unparsable_metadata_is_a_miss_not_an_error(cache_dir):
    _child(cache_dir)
    (meta,) = [p for p in _entries(cache_dir) if p.suffix == ".json"]
    meta.write_text("{not json")
    assert _child(cache_dir)["compiles"] == 1


def test_metadata_from_another_format_version_is_ignored(cache_dir):
    _child(cache_dir)
    (meta,) = [p for p in _entries(cache_dir) if p.suffix == ".json"]
    data = json.loads(meta.read_text())
    data["format"] = cache.FORMAT + 1
    meta.write_text(json.dumps(data))
    assert _child(cache_dir)["compiles"] == 1


def test_entries_are_written_through_temporary_files(cache_dir):
    _child(cache_dir)
    assert not [p for p in _entries(cache_dir) if p.name.startswith(".tmp-")]


def test_an_empty_cache_dir_variable_turns_the_disk_cache_off(cache_dir, monkeypatch):
    monkeypatch.setenv("CUTE_PY_CACHE_DIR", "")
    a = cute.compiler.DeviceArraySpec("Float32", (128, 128))
    cute.compile(cute.compiler.JitFunction(tma_copy.fn), a, a, (64, 64), "none")
    assert not pathlib.Path(cache_dir).exists()


def test_the_same_specialisation_is_compiled_once_per_process():
    jf = cute.compiler.JitFunction(tma_copy.fn)
    a = cute.compiler.DeviceArraySpec("Float32", (128, 256))
    before = dict(cache.stats)
    c1 = jf.compile(a, a, (64, 64), "none")
    c2 = jf.compile(cute.compiler.DeviceArraySpec("Float32", (128, 256), address=1 << 30), a, (64, 64), "none")
    assert c1 is c2
    assert cache.stats["compiles"] == before["compiles"] + 1
    assert cache.stats["memory_hits"] == before["memory_hits"] + 1


def test_closures_with_different_values_do_not_share_an_entry(cache_dir):
    def make(scale):
        @cute.kernel
        def k(n):
            with cute.compiler.if_(n * scale == 0):
                cute.arch.sync_threads()

        def host(n):
            k(n).launch(grid=1, block=32)

        return host

    c2 = cute.compile(make(2), cute.Int32(1))
    c3 = cute.compile(make(3), cute.Int32(1))
    assert c2.key != c3.key
    assert "arith.constant 3" in c3.mlir and "arith.constant 3" not in c2.mlir


def test_functions_without_a_source_file_compile_and_are_keyed_by_their_code():
    ns = {}
    exec(compile("import cute_py as cute\n"
                 "@cute.kernel\n"
                 "def k(n):\n"
                 "    with cute.compiler.if_(n == 1):\n"
                 "        cute.arch.sync_threads()\n"
                 "def host(n):\n"
                 "    k(n).launch(grid=1, block=32)\n", "<generated>", "exec"), ns)
    c = cute.compile(ns["host"], cute.Int32(0))
    assert c.key is not None and ".entry k_0(" in c.ptx


def test_the_readme_kernel_compiles_as_written():
    import re

    readme = (ROOT / "README.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "def copy_kernel" in b]
    ns = {}
    exec(compile(block, "README.md", "exec"), ns)
    assert "cp.async.bulk.tensor.2d" in ns["c"].ptx and ns["c"].smem == {"copy_kernel_0": 128 * 64 * 2 + 8}
