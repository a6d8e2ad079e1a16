"""The pictures in docs/ are what their commands in docs/README.md draw today, and stay small."""

import pathlib
import re
import shlex

import pytest

from cute_py.__main__ import main

from _svgparse import parse

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
COMMANDS = re.findall(r"^python -m cute_py (show .*)$", (DOCS / "README.md").read_text(), re.M)


def test_docs_list_the_example_pictures_and_the_readme_shows_one():
    outputs = [shlex.split(c)[shlex.split(c).index("-o") + 1] for c in COMMANDS]
    assert 3 <= len(outputs) <= 6
    assert sorted(outputs) == sorted(f"docs/{p.name}" for p in DOCS.glob("*.svg"))
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"!\[[^\]]*\]\(docs/[a-z_]+\.svg\)", readme)
    assert "python -m cute_py show" in readme


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: shlex.split(c)[-1])
def test_each_docs_picture_is_what_its_command_draws(command, tmp_path, capsys):
    argv = shlex.split(command)
    i = argv.index("-o")
    committed = ROOT / argv[i + 1]
    argv[i + 1] = str(tmp_path / "out.svg")
    assert main(argv) == 0
    capsys.readouterr()
    fresh = (tmp_path / "out.svg").read_text()
    assert committed.read_text() == fresh, f"{committed.name} is stale: rerun `python -m cute_py {command}`"
    assert len(fresh.encode()) < 200_000
    parse(fresh)
