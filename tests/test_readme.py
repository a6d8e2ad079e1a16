"""The README stays true: its REPL session runs as shown, its copy kernels compile (and, with a GPU and torch, run)
as written and print what their comments say, its two set-up commands are the ones CI runs."""

import doctest
import pathlib
import re

import pytest

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


def _copy_blocks():
    section = README[README.index("## Copying data on Hopper"):README.index("## Example kernels")]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _has_cuda_torch():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


@pytest.mark.parametrize("index", range(3), ids=["tma", "cp_async", "multicast"])
def test_readme_copy_kernels_run_as_written(index, capsys):
    """Each copy section's block compiles with no GPU and prints what the comment on its print line says; on a
    Hopper GPU with torch its commented GPU lines run too (and assert the copy)."""
    pytest.importorskip("mlir_dialects.bindings", reason="the README's kernels need the jit extra")
    blocks = _copy_blocks()
    assert len(blocks) == 3
    block = blocks[index]
    code, _, gpu = block.partition("# with a GPU and torch:\n")
    assert gpu, "each copy section ends with the lines that run it on a GPU"
    ns = {}
    exec(compile(code, "README.md", "exec"), ns)
    printed = capsys.readouterr().out.strip()
    (said,) = re.findall(r"^print\(.*\)\s+# (\S+?):?(?:\s|$)", code, re.M)
    assert printed == said, f"the README says {said}, the block printed {printed}"
    if _has_cuda_torch():
        import torch

        ns["torch"] = torch
        exec(compile("\n".join(line.removeprefix("# ") for line in gpu.splitlines()), "README.md", "exec"), ns)
