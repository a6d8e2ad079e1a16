"""The disk cache follows everything the traces used: editing a helper module, a constant in another module, a
class attribute, code run only by the host function or only inside the kernel, or a memoised helper makes the
next process compile again (and the new code runs); leaving them alone makes it load the entry.

Each test writes a small project (``kern.py`` with the kernel and the jit function, and the modules it uses) into
a temporary directory and compiles it in child processes that share one disk cache. The kernel stores the value
it computes while tracing into ``g[0]``; the PTX shows the constant."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

_CHILD = """
import json, sys
import cute_py as cute
{before}
import kern
c = cute.compile(kern.host, cute.compiler.DeviceArraySpec("Int32", (4,)))
print(json.dumps(dict(cute.compiler.stats, ptx=c.ptx)))
"""

KERN = """
import cute_py as cute
import consts
import helpers
from consts import OFFSET
from helpers import Config, memo_part


@cute.kernel
def k(g, host_part):
    g[0] = helpers.kernel_part() + consts.SCALE * 1000 + OFFSET + Config.EXTRA + memo_part() + host_part


def host(g):
    k(g, helpers.host_part()).launch(grid=1, block=1)
"""

HELPERS = """
import functools


def kernel_part():
    return 100000000


def host_part():
    return 20000000


class Config:
    EXTRA = 3000000


@functools.lru_cache(maxsize=None)
def memo_part():
    return 400000
"""

CONSTS = """
SCALE = 5
OFFSET = 60
"""


def _expected(kernel_part=100000000, host_part=20000000, extra=3000000, memo=400000, scale=5, offset=60):
    return kernel_part + scale * 1000 + offset + extra + memo + host_part


@pytest.fixture
def project(tmp_path, cache_dir):
    src = tmp_path / "project"
    src.mkdir()
    (src / "kern.py").write_text(KERN)
    (src / "helpers.py").write_text(HELPERS)
    (src / "consts.py").write_text(CONSTS)

    def run(before=""):
        path = os.pathsep.join(p for p in (str(src), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        env = dict(os.environ, CUTE_PY_CACHE_DIR=str(cache_dir), PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1")
        out = subprocess.run([sys.executable, "-c", _CHILD.format(before=before)], env=env, cwd=src,
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    def edit(name, old, new):
        path = src / name
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new))

    return run, edit


def _stores(result, value):
    return str(value) in result["ptx"]


def test_an_untouched_project_loads_its_entry(project):
    run, _ = project
    first = run()
    assert first["compiles"] == 1 and _stores(first, _expected())
    again = run()
    assert again["compiles"] == 0 and again["disk_hits"] == 1 and _stores(again, _expected())


EDITS = [  # (what the edit shows, file, old text, new text, the changed part of the stored value)
    ("code run only in the kernel", "helpers.py", "return 100000000", "return 700000000", {"kernel_part": 700000000}),
    ("code run only by the host", "helpers.py", "return 20000000", "return 80000000", {"host_part": 80000000}),
    ("a class attribute", "helpers.py", "EXTRA = 3000000", "EXTRA = 9000000", {"extra": 9000000}),
    ("a memoised helper", "helpers.py", "return 400000", "return 500000", {"memo": 500000}),
    ("module.CONSTANT", "consts.py", "SCALE = 5", "SCALE = 7", {"scale": 7}),
    ("from module import CONSTANT", "consts.py", "OFFSET = 60", "OFFSET = 90", {"offset": 90}),
]


def test_each_edit_of_what_the_traces_used_is_compiled_again(project):
    run, edit = project
    assert run()["compiles"] == 1
    changed = {}
    for what, name, old, new, part in EDITS:  # one edit at a time, each on top of the previous ones
        edit(name, old, new)
        changed.update(part)
        after = run()
        assert after["compiles"] == 1 and after["disk_hits"] == 0, f"{what}: {after}"
        assert _stores(after, _expected(**changed)), what
    assert run()["disk_hits"] == 1  # the rewritten entry is used next time


def test_a_memoised_helper_called_before_the_compile_is_still_followed(project):
    # the lru_cache already holds the value when the kernel is traced: the call is a cache hit (no Python frame)
    run, edit = project
    warm = "import helpers; helpers.memo_part()"
    assert run(warm)["compiles"] == 1
    edit("helpers.py", "return 400000", "return 600000")
    after = run(warm)
    assert after["compiles"] == 1 and _stores(after, _expected(memo=600000))


def test_a_module_value_set_at_import_time_is_compared_by_value(project):
    # the file does not change; the value it computes does (an environment variable)
    run, edit = project
    edit("consts.py", "SCALE = 5", "import os\nSCALE = int(os.environ.get('KERN_SCALE', '5'))")
    assert run()["compiles"] == 1
    assert run()["disk_hits"] == 1
    after = run("import os; os.environ['KERN_SCALE'] = '8'")
    assert after["compiles"] == 1 and _stores(after, _expected(scale=8))


def test_a_comment_added_to_an_unrelated_module_keeps_the_entry(project, tmp_path):
    run, _ = project
    (tmp_path / "project" / "unused.py").write_text("X = 1\n")
    assert run()["compiles"] == 1
    (tmp_path / "project" / "unused.py").write_text("X = 1  # edited\n")
    assert run()["disk_hits"] == 1


def test_the_dependency_manifest_names_the_files_and_values_the_traces_used(project, cache_dir):
    run, _ = project
    run()
    (meta,) = [p for p in pathlib.Path(cache_dir).rglob("*.json")]
    deps = json.loads(meta.read_text())["deps"]
    files = {pathlib.Path(c[1]).name for c in deps["files"] if c[0] == "file"}
    assert {"kern.py", "helpers.py"} <= files
    names = {(m, n) for _, m, n, _ in deps["globals"]}
    assert {("consts", "SCALE"), ("kern", "OFFSET"), ("kern", "Config.EXTRA")} <= names


def test_code_that_has_no_source_file_is_not_stored_on_disk(cache_dir):
    # a helper made by exec: no file a later process could check; the jit and kernel functions themselves are
    # keyed by their code
    import cute_py as cute

    ns = {}
    exec(compile("def helper():\n    return 12345\n", "<generated-helper>", "exec"), ns)
    helper = ns["helper"]

    @cute.kernel
    def k(g):
        g[0] = helper()

    def host(g):
        k(g).launch(grid=1, block=1)

    c = cute.compile(host, cute.compiler.DeviceArraySpec("Int32", (4,)))
    assert "12345" in c.ptx
    assert not list(pathlib.Path(cache_dir).rglob("*.json"))


def test_closures_over_functions_are_keyed_by_the_functions_code_and_values():
    from cute_py.compiler.cache import deps

    def make(n):
        def f():
            return n

        return f

    assert deps.value_key(make(1), strict=True) == deps.value_key(make(1), strict=True)
    assert deps.value_key(make(1), strict=True) != deps.value_key(make(2), strict=True)
    assert " at 0x" not in deps.value_key(make(1), strict=True)

    class Opaque:
        __slots__ = ()

    with pytest.raises(deps.Unkeyable):
        deps.value_key(Opaque(), strict=True)
    assert deps.value_key(Opaque()) == deps.value_key(Opaque())  # not strict: by type


def test_frozenset_constants_key_the_same_in_every_process():
    code = "from cute_py.compiler.cache import deps\ndef f(x):\n    return x in {'alpha', 'beta', 'gamma', 'delta'}\n" \
           "print(deps.value_key(f, strict=True))"
    keys = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        keys.add(out.stdout.strip().replace("<string>", ""))
    assert len(keys) == 1, keys


def test_a_warm_lookup_does_not_trace_the_kernels(project):
    run, _ = project
    run()
    no_trace = ("import importlib\n"
                "K = importlib.import_module('cute_py.compiler.host.kernel')\n"
                "def _no_trace(*args):\n"
                "    raise SystemExit('a kernel was traced to look its entry up')\n"
                "K._trace_kernel = _no_trace")
    warm = run(no_trace)
    assert warm["disk_hits"] == 1 and warm["compiles"] == 0 and _stores(warm, _expected())


def test_code_generated_for_dataclasses_and_namedtuples_is_checked_through_its_module(tmp_path, monkeypatch):
    from cute_py.compiler.cache import deps

    (tmp_path / "shapes_mod.py").write_text(
        "import collections, dataclasses\n"
        "@dataclasses.dataclass(frozen=True)\n"
        "class Point:\n"
        "    x: int\n"
        "    y: int\n"
        "Pair = collections.namedtuple('Pair', 'a b')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import shapes_mod

    rec = deps.Recorder()
    with rec:
        shapes_mod.Point(1, 2)
        shapes_mod.Pair(3, 4)
    manifest = rec.manifest()
    assert manifest is not None
    assert str(tmp_path / "shapes_mod.py") in {c[1] for c in manifest["files"]}
    assert deps.check(manifest) is None


def test_values_too_large_to_key_are_keyed_by_size_or_refused():
    from cute_py.compiler.cache import deps

    big = list(range(100_000))
    assert deps.value_key(big).startswith("large:")
    with pytest.raises(deps.Unkeyable):
        deps.value_key(big, strict=True)
    nested = [[[[[[[[1]]]]]]]]
    with pytest.raises(deps.Unkeyable):
        deps.value_key(nested, strict=True)
    assert deps.value_key("x" * 100_000) == deps.value_key("x" * 100_000) != deps.value_key("x" * 99_999)


def test_a_recording_whose_hook_was_replaced_is_not_stored(monkeypatch):
    import sys as _sys

    from cute_py.compiler.cache import deps

    monkeypatch.setattr(deps.monitor, "listen", lambda codes: False)    # the trace hook's way (before Python 3.12)
    rec = deps.Recorder()
    with rec:
        other = lambda frame, event, arg: None  # noqa: E731 - what a debugger started in the trace would install
        _sys.settrace(other)
    assert _sys.gettrace() is other
    _sys.settrace(None)
    assert rec.manifest() is None


def _recorded_names(rec):
    return {code.co_name for code, _ in rec.codes.values()}


@pytest.mark.parametrize("way", ["monitoring", "trace"])
def test_every_recording_sees_each_code_that_starts_in_it(way, tmp_path, monkeypatch):
    """Both ways of recording (``sys.monitoring`` from Python 3.12, the trace hook): a function run before a
    recording, run many times in it, or started only inside a nested recording is in every recording active when
    it starts, with its globals; one run only outside a recording or during a pause is in none, one started in a
    pause and again after it is recorded; a recording after another sees again the code the first one saw
    (monitoring silences a code location after its first start)."""
    import importlib
    import sys as _sys

    from cute_py.compiler.cache import deps

    if way == "monitoring" and not hasattr(_sys, "monitoring"):
        pytest.skip("sys.monitoring is Python 3.12's")
    if way == "trace":
        monkeypatch.setattr(deps.monitor, "listen", lambda codes: False)
    (tmp_path / f"rec_{way}.py").write_text(
        "def often(x):\n    return x + 1\n"
        "def inner():\n    return often(0)\n"
        "def outside():\n    return 2\n"
        "def paused_only():\n    return 3\n"
        "def later():\n    return 4\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    rec_mod = importlib.import_module(f"rec_{way}")
    rec_mod.often(1)
    rec_mod.outside()
    first, second, nested = deps.Recorder(), deps.Recorder(), deps.Recorder()
    with first:
        token = deps.pause()
        rec_mod.paused_only()
        rec_mod.later()
        deps.resume(token)
        rec_mod.later()                 # started unpaused after a paused start: recorded
        for i in range(100):
            rec_mod.often(i)
        if way == "trace":          # one trace hook at a time: nested recordings are monitoring's
            rec_mod.inner()
        else:
            with nested:
                rec_mod.inner()
    rec_mod.outside()
    with second:
        rec_mod.often(3)
    assert {"often", "inner", "later"} <= _recorded_names(first)
    assert not {"outside", "paused_only"} & _recorded_names(first)
    assert "often" in _recorded_names(second) and "inner" not in _recorded_names(second)
    if way == "monitoring":
        assert first._kind == "monitor"
        assert "inner" in _recorded_names(nested) and "often" in _recorded_names(nested)
    code, glob = next(v for v in first.codes.values() if v[0].co_name == "often")
    assert code is rec_mod.often.__code__ and glob is vars(rec_mod)
    assert str(tmp_path / f"rec_{way}.py") in {c[1] for c in first.manifest()["files"]}
