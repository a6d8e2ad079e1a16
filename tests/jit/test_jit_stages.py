"""The compiler's named stages: each product of a compile is exposed with the time its stage took; the stages run
in order, each consuming the last, the module is lowered once, and non-default options go the same way."""

import pytest

import cute_py as cute
import mlir_dialects as md
from cute_py.compiler import stages
import examples as ex

F = cute.compiler.DeviceArraySpec


def _compile(*opts, rows=4):
    # each test compiles its own specialisation (``rows``): a compile of this process is never a memory hit
    args = (ex.dsmem_exchange, F("Float32", (rows, 128)), F("Float32", (rows, 128)), 2, 4)
    return cute.compile[opts](*args) if opts else cute.compile(*args)


def test_the_stage_table_is_trace_mlir_lowered_ptx_cubin():
    assert [s.name for s in stages.STAGES] == ["trace", "mlir", "lowered", "ptx", "cubin"]
    assert stages.STAGES[0].produce is None and all(s.produce is not None for s in stages.STAGES[1:])


def test_a_compile_exposes_every_stage_and_its_time():
    c = _compile()
    assert "cute_nvgpu.dsmem_store" in c.mlir and "cute_nvgpu." not in c.lowered
    assert "llvm.inline_asm" in c.lowered and "st.async" in c.lowered
    assert ".entry" in c.ptx and c.cubin[:4] == b"\x7fELF"
    assert set(c.stage_times) == {"trace", "mlir", "lowered", "ptx", "cubin"}
    assert all(t >= 0 for t in c.stage_times.values())


def _counting(monkeypatch):
    calls = {"lower": 0, "to_ptx": 0}
    lower = md.lower_for_ptx

    def counted(*a, **k):
        calls["lower"] += 1
        return lower(*a, **k)

    def refused(*a, **k):  # the stages compile the lowered module; lowering again is what they must not do
        calls["to_ptx"] += 1
        raise AssertionError("to_ptx lowers the module again")

    monkeypatch.setattr(md, "lower_for_ptx", counted)
    monkeypatch.setattr(md, "to_ptx", refused)
    return calls


def test_the_module_is_lowered_once_and_the_lowered_text_costs_no_second_lowering(monkeypatch):
    calls = _counting(monkeypatch)
    c = _compile(rows=8)
    assert calls == {"lower": 1, "to_ptx": 0}
    assert "cute_nvgpu." not in c.lowered and "cute_nvgpu.dsmem_store" in c.mlir
    assert calls == {"lower": 1, "to_ptx": 0}


def test_non_default_options_run_the_same_stages(monkeypatch):
    calls = _counting(monkeypatch)
    c = _compile(cute.GenerateLineInfo(True), cute.OptLevel(1), rows=12)
    assert calls == {"lower": 1, "to_ptx": 0}
    assert ".loc" in c.ptx and set(c.stage_times) == {"trace", "mlir", "lowered", "ptx", "cubin"}


_CHILD = """
import json, cute_py as cute, mlir_dialects as md
from examples import dsmem_exchange
calls = {"lower": 0, "to_ptx": 0, "to_cubin": 0}
def counted(name, f):
    def g(*a, **k):
        calls[name] += 1
        return f(*a, **k)
    return g
for name in calls:
    setattr(md, "lower_for_ptx" if name == "lower" else name, counted(name, getattr(md, "lower_for_ptx" if name == "lower" else name)))
F = cute.compiler.DeviceArraySpec
c = cute.compile(dsmem_exchange, F("Float32", (4, 128)), F("Float32", (4, 128)), 2, 4)
at_compile = dict(calls)
texts = [c.mlir, c.lowered, c.ptx]
print(json.dumps(dict(from_cache=c.from_cache, at_compile=at_compile, after=calls, texts=texts)))
"""


def _child(cache_dir):
    import json
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, CUTE_PY_CACHE_DIR=str(cache_dir), PYTHONPATH=path)
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_after_a_disk_hit_the_texts_come_from_one_trace_up_to_lowered(tmp_path):
    first = _child(tmp_path)
    assert first["from_cache"] is False and first["at_compile"] == {"lower": 1, "to_ptx": 0, "to_cubin": 1}
    assert first["after"] == first["at_compile"]  # the compile kept its texts
    again = _child(tmp_path)
    assert again["from_cache"] is True and again["at_compile"] == {"lower": 0, "to_ptx": 0, "to_cubin": 0}
    # the texts were asked for: one trace and one lowering, no PTX compile and no assembly
    assert again["after"] == {"lower": 1, "to_ptx": 0, "to_cubin": 0}
    assert again["texts"] == first["texts"]


def test_run_stops_at_the_stage_asked_for_and_names_an_unknown_one():
    with pytest.raises(ValueError, match="no stage named 'sass'"):
        stages.run(lambda: (None, {}), upto="sass")
    r = stages.run(lambda: ("module", {"k": 0}), upto="trace")
    assert r.module == "module" and set(r.times) == {"trace"} and r.mlir is None
