"""The README stays true: its REPL session runs as shown, its copy kernels compile (and, with a GPU and torch, run)
as written and print what their comments say, its two set-up commands are the ones CI runs."""

import doctest
import inspect
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
    """The copy section's python blocks, each with the README line number of its first line."""
    start = README.index("## Copying data on Hopper")
    section = README[start:README.index("## Example kernels")]
    return [(m[1], README[:start + m.start(1)].count("\n") + 1)
            for m in re.finditer(r"```python\n(.*?)```", section, re.S)]


def _at_line(code, line):
    """``code`` compiled as README.md's own lines from ``line`` on (so its functions have their real source)."""
    return compile("\n" * (line - 1) + code, str(ROOT / "README.md"), "exec")


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
    block, line = blocks[index]
    code, marker, gpu = block.partition("# with a GPU and torch:\n")
    assert gpu, "each copy section ends with the lines that run it on a GPU"
    ns = {}
    exec(_at_line(code, line), ns)
    defined = [getattr(obj, "fn", None) for obj in ns.values()]
    defined = [fn for fn in defined if inspect.isfunction(fn)]
    assert defined and all(inspect.getsource(fn) in code for fn in defined), "the kernels see their own source"
    printed = capsys.readouterr().out.strip()
    (said,) = re.findall(r"^print\(.*\)\s+# (\S+?):?(?:\s|$)", code, re.M)
    assert printed == said, f"the README says {said}, the block printed {printed}"
    if _has_cuda_torch():
        import torch

        ns["torch"] = torch
        gpu_line = line + (code + marker).count("\n")
        exec(_at_line("\n".join(text.removeprefix("# ") for text in gpu.splitlines()), gpu_line), ns)
