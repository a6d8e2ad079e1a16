"""The README stays true: its REPL session runs as shown, its two set-up commands are the ones CI runs."""

import doctest
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_repl_examples_run_as_shown():
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README, re.S) if ">>>" in b]
    assert blocks
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    session = {}  # the blocks are one REPL session
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, session, f"README block {i}", "README.md", 0)
        result = runner.run(test, clear_globs=False)
        session.update(test.globs)
        assert result.failed == 0


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one():
    commands = re.findall(r"```bash\n#[^\n]*\n([^\n]+)\n```", README)
    assert commands == ["pip install -e '.[jit]' && python -m cute_py demo", "pip install -e '.[test]' && pytest"]
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


def test_readme_error_examples_raise_as_documented():
    import pytest

    import cute_py as cute

    with pytest.raises(cute.NotInjectiveError, match=re.escape("got (2,2):(1,1)")):
        cute.complement(cute.Layout((2, 2), (1, 1)), 8)
    with pytest.raises(cute.DivisibilityError, match=re.escape("(lhs (4,3):(1,5), rhs 2:6)")):
        cute.composition(cute.Layout((4, 3), (1, 5)), cute.Layout(2, 6))
