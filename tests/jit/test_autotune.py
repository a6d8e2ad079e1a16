"""``cute_py.testing.autotune_jit`` without a GPU: launches go to the stand-in driver, and the time of a
configuration is read from a table by the grid it launched. The product of the values is tried, the fastest
taken and kept per key (in memory and on disk, checked against every candidate's cubin, so an edited kernel tunes
again), a configuration that breaks a rule is skipped, and wrong uses are refused with the rule."""

import importlib
import json
import os
import sys
import textwrap

import pytest

import cute_py as cute
from cute_py.testing import autotune, autotune_jit
from _recording_driver import driver  # noqa: F401 (the fixture)

TIMES = {4: 30.0, 8: 10.0, 16: 20.0, 32: 5.0}     # microseconds of a launch of this many blocks


@cute.kernel
def _fill(a, v):
    a[0] = v


@cute.jit
def fill(a, v, blocks=4, spare=None):
    if blocks > 32:
        raise cute.CuteValueError(f"at most 32 blocks, got {blocks}")
    _fill(a, v).launch(grid=blocks, block=32)


class CAI:
    def __init__(self, address, shape=(16,)):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (address, False), "version": 3}


@pytest.fixture
def timed(driver, monkeypatch, tmp_path):  # noqa: F811
    """Each measurement launches the candidate once and returns the table's time of its grid; the GPU is
    called "Fake GPU"; the disk cache is a fresh directory."""
    measured = []

    def measure(call, warmup, iterations):
        call()
        blocks = driver.calls[-1]["grid"][0]
        measured.append(blocks)
        return TIMES[blocks]

    monkeypatch.setattr(fill, "_compiled", {})     # compiles of this test only (they hold its stand-in driver)
    monkeypatch.setattr(fill, "_last", None)
    monkeypatch.setattr(autotune, "_measure", measure)
    monkeypatch.setattr(autotune, "_device_name", lambda: "Fake GPU")
    monkeypatch.setenv("CUTE_PY_CACHE_DIR", str(tmp_path))
    return measured


def _tuned(values=(4, 8, 16), update=("a",)):
    return autotune_jit(params_dict={"blocks": list(values)}, update_on_change=list(update))(fill)


def test_the_fastest_configuration_is_taken_and_kept_per_key(timed, driver):
    f = _tuned()
    f(CAI(1 << 24), 1.0)
    assert timed == [4, 8, 16] and driver.calls[-1]["grid"][0] == 8
    f(CAI(1 << 25), 2.0)                           # same key (another address): no tuning
    assert timed == [4, 8, 16] and driver.calls[-1]["grid"][0] == 8
    f(CAI(1 << 24, shape=(32,)), 1.0)              # another shape: tuned again
    assert timed == [4, 8, 16] * 2 and list(f.tuned.values()) == [{"blocks": 8}, {"blocks": 8}]


def test_a_later_process_reuses_the_winner_from_disk(timed, driver):
    _tuned()(CAI(1 << 24), 1.0)
    again = _tuned()                               # a new decorator: nothing in memory
    again(CAI(1 << 24), 1.0)
    assert timed == [4, 8, 16] and driver.calls[-1]["grid"][0] == 8
    other = _tuned(values=(4, 8, 16, 32))          # another configuration space: its own entry
    other(CAI(1 << 24), 1.0)
    assert timed == [4, 8, 16, 4, 8, 16, 32] and driver.calls[-1]["grid"][0] == 32


def test_an_entry_that_is_not_ours_is_tuned_again(timed, tmp_path):
    _tuned()(CAI(1 << 24), 1.0)
    (entry,) = (tmp_path / "autotune").iterdir()
    for text in ("{", json.dumps({"format": 1, "winner": 7, "cubins": []}), json.dumps([1])):
        entry.write_text(text)
        _tuned()(CAI(1 << 24), 1.0)
    assert timed == [4, 8, 16] * 4


def test_without_the_disk_cache_each_process_tunes(timed, monkeypatch):
    monkeypatch.setenv("CUTE_PY_CACHE_DIR", "")
    _tuned()(CAI(1 << 24), 1.0)
    _tuned()(CAI(1 << 24), 1.0)
    assert timed == [4, 8, 16] * 2


def test_an_edited_kernel_is_tuned_again(timed, tmp_path, monkeypatch):
    """The winner on disk holds each candidate's cubin digest: a module whose kernel changed compiles to other
    cubins, so the next process tunes again."""
    src = tmp_path / "src"
    src.mkdir()
    monkeypatch.syspath_prepend(str(src))

    def write(value):
        (src / "tuned_mod.py").write_text(textwrap.dedent(f"""
            import cute_py as cute

            @cute.kernel
            def _k(a):
                a[0] = {value}

            @cute.jit
            def run(a, blocks=4):
                _k(a).launch(grid=blocks, block=32)
        """))
        sys.modules.pop("tuned_mod", None)
        importlib.invalidate_caches()
        return importlib.import_module("tuned_mod")

    for value, tunings in ((1.0, 1), (1.0, 1), (2.0, 2)):
        mod = write(value)
        autotune_jit(params_dict={"blocks": [4, 8]}, update_on_change=["a"])(mod.run)(CAI(1 << 24))
        assert timed == [4, 8] * tunings


def test_a_configuration_that_breaks_a_rule_is_skipped(timed, driver):
    f = _tuned(values=(64, 16, 128))
    f(CAI(1 << 24), 1.0)
    assert timed == [16] and driver.calls[-1]["grid"][0] == 16
    ((key, errors),) = f.tuned_errors.items()
    assert [c for c, _ in errors] == [{"blocks": 64}, {"blocks": 128}] and "at most 32 blocks" in errors[0][1]
    g = _tuned(values=(64, 128), update=())
    with pytest.raises(cute.CuteValueError, match=r"no configuration of fill runs: \{'blocks': 64\}: .*at most 32"):
        g(CAI(1 << 24), 1.0)


@pytest.mark.parametrize("make, match", [
    (lambda: autotune_jit(params_dict={"tile": [1]})(fill), r"'tile' is not a parameter of fill\(a, v, blocks"),
    (lambda: autotune_jit(update_on_change=["shape"])(fill), "'shape' is not a parameter"),
    (lambda: autotune_jit(params_dict={"blocks": []}), r"params_dict\['blocks'\] must be a non-empty list"),
    (lambda: autotune_jit(params_dict={"blocks": 4}), "must be a non-empty list"),
    (lambda: autotune_jit(params_dict=[("blocks", [4])]), "params_dict maps parameter names"),
    (lambda: autotune_jit(update_on_change="a"), "update_on_change is a list of parameter names"),
    (lambda: autotune_jit(iterations=0), "iterations must be an int >= 1"),
    (lambda: autotune_jit(params_dict={"blocks": [4]}, update_on_change=["blocks"])(fill),
     "blocks both tuned and in update_on_change"),
    (lambda: autotune_jit(params_dict={"blocks": [4]})(lambda a, blocks=4: None), "decorates a @cute.jit function"),
])
def test_wrong_uses_are_refused_with_the_rule(make, match):
    with pytest.raises(cute.CuteError, match=match):
        make()


def test_a_tuned_parameter_given_by_the_caller_is_refused(timed):
    f = _tuned()
    for call in (lambda: f(CAI(1 << 24), 1.0, blocks=8), lambda: f(CAI(1 << 24), 1.0, 8)):
        with pytest.raises(cute.CuteValueError, match="blocks of fill is tuned: leave it out of the call"):
            call()
    assert timed == []


def test_an_update_parameter_left_out_counts_by_its_default(timed):
    f = _tuned(update=("spare",))
    f(CAI(1 << 24), 1.0)
    f(CAI(1 << 24, shape=(64,)), 1.0)              # spare is still its default: the same key
    f(CAI(1 << 24), 1.0, spare=3)
    assert timed == [4, 8, 16] * 2 and len(f.tuned) == 2


def test_the_entry_names_no_path_outside_the_cache(timed, tmp_path):
    _tuned()(CAI(1 << 24), 1.0)
    (entry,) = (tmp_path / "autotune").iterdir()
    assert entry.suffix == ".json" and os.path.dirname(entry) == str(tmp_path / "autotune")
    data = json.loads(entry.read_text())
    assert data["winner"] == 1 and len(data["cubins"]) == 3 and all(len(c) == 64 for c in data["cubins"])
