"""`python -m cute_py show`: prints the table, writes the picture, rejects bad input with exit status 2."""

import subprocess
import sys

import pytest

from cute_py.__main__ import main

from _svgparse import cells, elements, parse

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def _show(*argv, capsys=None):
    rc = main(["show", *argv])
    out = capsys.readouterr() if capsys else None
    return rc, out


def test_show_in_a_subprocess_prints_the_table_and_writes_the_svg(tmp_path):
    out_file = tmp_path / "layout.svg"
    r = subprocess.run([sys.executable, "-m", "cute_py", "show", "(4,(2,8)):(2,(1,8))", "-o", str(out_file)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "(4,(2,8)):(2,(1,8))"
    assert " 3  |  6 |  7 | 14 |" in r.stdout
    assert f"wrote {out_file}" in r.stdout
    assert len(cells(parse(out_file.read_text()))) == 64


def test_show_refuses_to_write_svg_text_under_another_extension(capsys, tmp_path):
    f = tmp_path / "x.png"
    rc, out = _show("(2,2):(1,2)", "-o", str(f), capsys=capsys)
    assert rc == 2 and not f.exists()
    assert "a picture is SVG: save it as .svg, not .png" in out.err and "wrote" not in out.out
    g = tmp_path / "noext"
    rc, out = _show("(2,2):(1,2)", "-o", str(g), capsys=capsys)
    assert rc == 0 and g.read_text().startswith("<svg")


def test_show_without_output_only_prints(capsys, tmp_path):
    rc, out = _show("(2,2):(1,2)", capsys=capsys)
    assert rc == 0 and "wrote" not in out.out and out.out.startswith("(2,2):(1,2)\n")


def test_show_tv_draws_make_layout_tv(capsys, tmp_path):
    f = tmp_path / "tv.svg"
    rc, out = _show("--tv", "(2,3):(3,1)", "(2,2):(2,1)", "-o", str(f), capsys=capsys)
    assert rc == 0 and "T0V0 | T0V1 | T1V0" in out.out
    cs = cells(parse(f.read_text()))
    assert len(cs) == 24 and {c.get("data-thread") for c in cs} == {str(t) for t in range(6)}


def test_show_tile_reads_the_layout_as_a_tv_layout(capsys, tmp_path):
    f = tmp_path / "mma.svg"
    rc, _ = _show("((4,8),(2,2)):((32,1),(16,8))", "--tile", "16,8", "-o", str(f), capsys=capsys)
    assert rc == 0 and len(cells(parse(f.read_text()))) == 128


def test_show_swizzle_draws_the_banks_of_the_swizzled_layout(capsys, tmp_path):
    f = tmp_path / "banks.svg"
    rc, out = _show("(8,64):(64,1)", "--swizzle", "3,3,3", "-o", str(f), capsys=capsys)
    assert rc == 0
    assert out.out.startswith("S<3,3,3> o 0 o (8,64):(64,1)\n")
    assert "each column hits 8 distinct banks: conflict-free" in out.out
    root = parse(f.read_text())
    assert {c.get("data-bank") for c in cells(root)} == {str(b) for b in range(32)}


def test_show_banks_of_the_plain_tile_reports_the_conflict(capsys):
    rc, out = _show("(8,64):(64,1)", "--banks", "--no-table", capsys=capsys)
    assert rc == 0 and out.out == ""
    rc, out = _show("(8,64):(64,1)", "--banks", capsys=capsys)
    assert "worst 8-way bank conflict" in out.out


def test_show_swizzle_accepts_cute_notation(capsys):
    rc, out = _show("(8,64):(64,1)", "--swizzle", "S<3,3,3>", "--no-table", capsys=capsys)
    assert rc == 0


def test_show_copy_draws_a_tiled_copy(capsys, tmp_path):
    f = tmp_path / "copy.svg"
    rc, out = _show("--copy", "(8,4):(4,1)", "(1,8)", "-o", str(f), capsys=capsys)
    assert rc == 0 and "source (get_layoutS_TV):" in out.out and "destination (get_layoutD_TV):" in out.out
    cs = cells(parse(f.read_text()))
    assert len([c for c in cs if c.get("data-side") == "S"]) == len([c for c in cs if c.get("data-side") == "D"]) == 256


def test_show_tma_draws_the_multicast_boxes(capsys, tmp_path):
    f = tmp_path / "tma.svg"
    rc, out = _show("(128,64):(64,1)", "--swizzle", "3,3,3", "--tma", "(512,256):(256,1)", "--multicast", "2",
                    "--tile-coord", "1,2", "-o", str(f), capsys=capsys)
    assert rc == 0, out.err
    assert "CTA 0 #0: rows 128..191, cols 128..191" in out.out and "CTA 1 #0: rows 192..255" in out.out
    boxes = elements(parse(f.read_text()), "rect", "box")
    assert [b.get("data-cta") for b in boxes] == ["0", "1"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["(4,2"], "cannot parse"),
        (["--tv", "(4,8)", "(2,2)", "(3,3)"], "--tv takes no LAYOUT"),
        ([], "show needs a LAYOUT"),
        (["(4,4)", "--swizzle", "3,3"], "three integers"),
        (["(4,4)", "--swizzle", "a,b,c"], "integers separated by commas"),
        (["(2,2,2)", "--banks"], "group_modes"),
        (["--tv", "(2,2)", "(2,2)", "--copy", "(2,2)", "(1,8)"], "choose one of"),
        (["--copy", "(8,4):(4,1)", "(1,8)", "--bits", "12"], "--bits must be one of"),
    ],
)
def test_show_rejects_bad_input_with_a_message_and_status_2(argv, message, capsys):
    rc, out = _show(*argv, capsys=capsys)
    assert rc == 2
    assert message in out.err and out.err.startswith("cute-py show: error:")


def test_the_demo_subcommand_still_runs(capsys):
    assert main(["demo"]) == 0
    assert "((2,2),3):((24,2),8)" in capsys.readouterr().out
