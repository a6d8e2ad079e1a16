"""An assembler never gets a PTX form its release is known to mishandle: ``cp.async ... .L2::cache_hint`` (the
tile copier's EVICT_FIRST / EVICT_LAST, ``cute.copy(..., cache_hint=)``) under ptxas or nvJitLink older than 13.5
(the fallback) is assembled without the hint, with a warning naming why and the fix, and the kernel is otherwise
the same; with nvJitLink 13.5 the hint stays. The decision is a function of (assembler, version): the tests
replace the version the assembler module sees and read the PTX it would hand over (``assembler.prepare``) or the
PTX the assembler receives."""

import re

import pytest

pytest.importorskip("mlir_dialects._backend", reason="needs the MLIR Python bindings (pip install numba-cuda-mlir==0.6.0)")

import mlir_dialects as md  # noqa: E402
from mlir_dialects import assembler, ptx_forms  # noqa: E402
from mlir_dialects.errors import AssemblyError  # noqa: E402

CP_ASYNC_HINT = re.compile(r"cp\.async\.(?:ca|cg)\.[^;\n]*L2::cache_hint")
OLD, GOOD = (13, 0), (13, 5)
FIX = re.escape(ptx_forms.NVJITLINK_FIX)


@pytest.fixture
def fresh(monkeypatch):
    """The assembler's per-process choice and warnings reset; no forced assembler."""
    monkeypatch.setitem(assembler._STATE, "choice", None)
    monkeypatch.setitem(assembler._STATE, "warned", set())
    monkeypatch.delenv("MLIR_DIALECTS_ASSEMBLER", raising=False)
    return monkeypatch


def _hinted_ptx(kernel):
    """PTX of a kernel with both cp.async forms under an L2 cache policy (and one without)."""
    with kernel as k:
        md.cp_async(k.s["tile"], k.a["g"], 8, cache_hint=k.a["hint"])
        md.cp_async(k.s["tile"], k.a["g"], 16, modifier="cg", src_size=k.a["z"], cache_hint=k.a["hint"])
        md.cp_async(k.s["tile"], k.a["g"], 16, modifier="cg")
    return md.to_ptx(k.module)


def _cp_async_lines(ptx):
    return [line.strip() for line in ptx.splitlines() if re.match(r"\s*(@!?%p\d+\s+)?cp\.async\.c[ag]\.", line)]


def _fallback(monkeypatch, ptxas="/opt/ptxas", ptxas_release=OLD, nvjitlink=OLD):
    """The process as with an nvJitLink of ``nvjitlink`` and a ptxas of ``ptxas_release`` at ``ptxas``; what each
    assembler receives is recorded instead of assembled."""
    got = []
    monkeypatch.setattr(assembler, "_loaded_version", lambda: nvjitlink)
    monkeypatch.setattr(assembler, "find_ptxas", lambda: ptxas)
    monkeypatch.setattr(assembler, "ptxas_version", lambda path: ptxas_release)
    monkeypatch.setattr(assembler, "_ptxas", lambda path, data, arch: got.append(("ptxas", data.decode())) or b"P")
    monkeypatch.setattr(assembler, "_nvjitlink_in_process",
                        lambda data, arch: got.append(("nvjitlink", data.decode())) or b"N")
    monkeypatch.setattr(assembler, "_nvjitlink_child",
                        lambda data, arch, why: got.append(("nvjitlink-subprocess", data.decode())) or b"C")
    return got


def test_the_fallback_assembles_cp_async_without_the_l2_hint_and_warns_naming_the_fix(fresh, kernel, filecheck):
    ptx = _hinted_ptx(kernel)
    assert len(CP_ASYNC_HINT.findall(ptx)) == 2
    got = _fallback(fresh)
    with pytest.warns(assembler.AssemblerWarning, match=rf"ptxas 13\.0 \(/opt/ptxas\) assembles cp\.async with "
                                                        rf"\.L2::cache_hint into code reading two uniform registers "
                                                        rf".*dropped.*{FIX}"):
        assert assembler.assemble(ptx, "sm_90a") == b"P"
    ((name, sent),) = got
    assert name == "ptxas" and not CP_ASYNC_HINT.search(sent)
    filecheck(sent, ["CHECK: cp.async.ca.shared.global [{{%r[0-9]+}}], [{{%rd[0-9]+}}], 8;",
                     "CHECK: cp.async.cg.shared.global [{{%r[0-9]+}}], [{{%rd[0-9]+}}], 16, {{%r[0-9]+}};",
                     "CHECK: cp.async.cg.shared.global [{{.*}}], [{{%rd[0-9]+}}], 16;"])
    # only the hint went: every other line of the PTX is the same
    before, after = ptx.splitlines(), sent.splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and len(changed) == 2
    assert all(CP_ASYNC_HINT.search(a) and not CP_ASYNC_HINT.search(b) for a, b in changed)
    assert len(_cp_async_lines(sent)) == len(_cp_async_lines(ptx)) == 3
    assert assembler.prepare(ptx) == (sent, "ptxas")


def test_nvjitlink_13_5_keeps_the_hint(fresh, kernel):
    ptx = _hinted_ptx(kernel)
    got = _fallback(fresh, nvjitlink=GOOD)
    assert assembler.assemble(ptx, "sm_90a") == b"N"
    assert got == [("nvjitlink", ptx)]
    assert assembler.prepare(ptx) == (ptx, "nvjitlink")


@pytest.mark.parametrize("route", ["ptxas", "nvjitlink-subprocess", "whole-program ptxas", "forced ptxas",
                                   "ptxas of unknown release"])
def test_every_route_to_a_bad_assembler_drops_the_hint(fresh, kernel, route):
    ptx = _hinted_ptx(kernel)
    if route == "whole-program ptxas":  # nvJitLink is good, but setmaxnreg sends the PTX to ptxas 13.0
        ptx = ptx.replace("\tret;", "\tsetmaxnreg.inc.sync.aligned.u32 240;\n\tret;", 1)
        assert "setmaxnreg" in ptx
    got = _fallback(fresh, ptxas=None if route == "nvjitlink-subprocess" else "/opt/ptxas",
                    ptxas_release=None if route == "ptxas of unknown release" else OLD,
                    nvjitlink=GOOD if route in ("whole-program ptxas", "forced ptxas") else OLD)
    if route == "forced ptxas":
        fresh.setenv("MLIR_DIALECTS_ASSEMBLER", "ptxas")
    with pytest.warns(assembler.AssemblerWarning, match=FIX):
        assembler.assemble(ptx, "sm_90a")
    ((name, sent),) = got
    assert name == ("nvjitlink-subprocess" if route == "nvjitlink-subprocess" else "ptxas")
    assert not CP_ASYNC_HINT.search(sent) and len(_cp_async_lines(sent)) == 3
    assert assembler.prepare(ptx) == (sent, name)


def test_the_forced_assembler_is_read_at_every_assembly_and_checked(fresh):
    fresh.setattr(assembler, "_loaded_version", lambda: GOOD)
    assert assembler.forced_assembler() is None and assembler.assembler_in_use() == "nvjitlink"
    fresh.setenv("MLIR_DIALECTS_ASSEMBLER", "ptxas")
    fresh.setattr(assembler, "find_ptxas", lambda: "/opt/ptxas")
    assert assembler.assembler_in_use() == "ptxas"
    fresh.setattr(assembler, "find_ptxas", lambda: None)
    with pytest.raises(AssemblyError, match="MLIR_DIALECTS_ASSEMBLER=ptxas, but no ptxas was found"):
        assembler.assemble(".version 8.0\n", "sm_90a")
    fresh.setenv("MLIR_DIALECTS_ASSEMBLER", "nvcc")
    with pytest.raises(AssemblyError, match="MLIR_DIALECTS_ASSEMBLER='nvcc': the values are 'ptxas'"):
        assembler.assemble(".version 8.0\n", "sm_90a")


def test_the_table_is_a_function_of_assembler_and_version():
    for form in ptx_forms.KNOWN_BAD_FORMS:
        assert form.applies_to(form.assembler, form.since) and form.applies_to(form.assembler, None)
        assert not form.applies_to(form.assembler, form.until)
        assert not form.applies_to("another assembler", form.since)
    for name in ("ptxas", "nvjitlink"):
        assert [f.name for f in ptx_forms.forms_for(name, OLD)] == ["cp.async .L2::cache_hint"]
        assert ptx_forms.forms_for(name, GOOD) == []


def test_the_sample_module_keeps_no_form_its_assembler_mishandles(fresh):
    """The law over the table: the sample kernel (every op of the dialect, each hint form) handed to each bad
    (assembler, version) holds none of the forms of that entry, and a good one gets it unchanged."""
    from mlir_dialects.sample import build_sample_module, sample_context

    context, loc = sample_context()
    with context, loc:
        ptx = md.to_ptx(build_sample_module())
    forms = ptx_forms.KNOWN_BAD_FORMS
    assert all(f.detect.search(ptx) for f in forms), "the sample no longer uses every known-bad form"
    for form in forms:
        text, dropped = ptx_forms.adapt(ptx, form.assembler, form.since)
        assert form in dropped and not form.detect.search(text)
        assert text.count("cp.async.bulk.tensor") == ptx.count("cp.async.bulk.tensor")  # TMA hints are not cp.async
        assert ptx_forms.adapt(ptx, form.assembler, form.until) == (ptx, [])


def test_a_form_that_cannot_be_dropped_is_an_error_naming_the_fix(fresh, kernel, monkeypatch):
    ptx = _hinted_ptx(kernel)
    keep = ptx_forms.BadForm("cp.async .L2::cache_hint", "ptxas", (0, 0), (13, 5), ptx_forms.KNOWN_BAD_FORMS[0].detect,
                             None, "mishandles it")
    monkeypatch.setattr(ptx_forms, "KNOWN_BAD_FORMS", (keep,))
    _fallback(fresh)
    with pytest.raises(AssemblyError, match=rf"cp\.async \.L2::cache_hint.*ptxas 13\.0 mishandles it; it cannot be "
                                            rf"dropped.*{FIX}"):
        assembler.assemble(ptx, "sm_90a")


def test_an_instance_the_rewrite_does_not_recognise_is_an_error_not_left_in_place():
    odd = "\tcp.async.cg.shared.global.L2::cache_hint [%r1], [%rd2];\n"  # no size: not the instruction's shape
    with pytest.raises(AssemblyError, match=rf"cannot be rewritten.*{FIX}"):
        ptx_forms.adapt(odd, "ptxas", OLD)


@pytest.mark.parametrize("line, expect", [
    ("@%p1 cp.async.cg.shared.global.L2::cache_hint [%rd7+16], [%rd3+32], 16, 0, %rd4;",
     "@%p1 cp.async.cg.shared.global [%rd7+16], [%rd3+32], 16, 0;"),
    ("cp.async.cg.shared::cta.global.L2::cache_hint.L2::128B [%r7], [%rd3], 16, %rd4;",
     "cp.async.cg.shared::cta.global.L2::128B [%r7], [%rd3], 16;"),
    ("cp.async.ca.shared.global.L2::cache_hint [%r7], [%rd3], 4, %r8, %rd4;",
     "cp.async.ca.shared.global [%r7], [%rd3], 4, %r8;"),
])
def test_the_rewrite_drops_exactly_the_qualifier_and_the_policy_operand(line, expect):
    assert ptx_forms.adapt(f"\t{line}\n", "nvjitlink", OLD)[0] == f"\t{expect}\n"


def test_ptxas_assembles_the_rewritten_ptx(fresh, kernel):
    """With the ptxas found here (13.0.88 on the GPU machines), taken as a fallback: the PTX it gets assembles."""
    ptxas = assembler.find_ptxas()
    if ptxas is None or (assembler.ptxas_version(ptxas) or (0, 0)) < assembler.MIN_PTXAS:
        pytest.skip("no ptxas >= 12.0 here")
    ptx = _hinted_ptx(kernel)
    fresh.setenv("MLIR_DIALECTS_ASSEMBLER", "ptxas")
    fresh.setattr(assembler, "ptxas_version", lambda path: OLD)
    with pytest.warns(assembler.AssemblerWarning, match=FIX):
        assert assembler.assemble(ptx, "sm_90a")[:4] == b"\x7fELF"
