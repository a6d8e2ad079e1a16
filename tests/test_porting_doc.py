"""docs/porting-from-cute-dsl.md stays true: its name table has one row for every CuTe DSL name that NVIDIA's
public examples use (tests/porting_names.txt, scanned by tests/porting_names.py), every name it calls **same**
or **renamed → X** resolves in cute_py, every name it calls **absent** does not, and its imports run.

No mirror of NVIDIA/cutlass is needed: the names file is the scan's record.  With a mirror at the commit the
file records, the scan is re-run and must give the same names."""

import pathlib
import subprocess

import pytest

from tests import porting_names as pn

DOC = pn.DOC_FILE.read_text()


def test_every_scanned_name_has_one_true_row():
    problems = pn.stale_rows(DOC, pn.read_names())
    assert not problems, ("docs/porting-from-cute-dsl.md is stale (python tests/porting_names.py --stale prints "
                          "this):\n" + pn.format_stale(problems))


def test_the_table_covers_each_module_of_the_scope():
    names = pn.read_names()
    assert len(names) > 300
    for prefix, _ in pn.SCOPE.values():
        assert any(n.startswith(prefix) and "." not in n[len(prefix):] for n in names), prefix


def test_statuses_are_checked_both_ways():
    # the resolver sees lazy names, submodules and attributes, and misses what is not there
    assert pn.resolves("cute.make_layout") and pn.resolves("cute.arch.thread_idx")
    assert pn.resolves("cpasync.tma_partition") and pn.resolves("sm90_utils.make_smem_layout_a")
    assert pn.resolves("utils.LayoutEnum") and pn.resolves("cutlass.testing")
    assert not pn.resolves("cute.no_such_name") and not pn.resolves("cute.arch.no_such_name")
    assert not pn.resolves("utils.no_such_name") and not pn.resolves("cute_py.utils.no_such_module.x")
    # a row that lies is reported, with the row and a fix
    lying = DOC.replace("| `cute.make_layout` | same |", "| `cute.make_layout` | absent |", 1)
    lying = lying.replace("| `cutlass.CUDA_VERSION` | absent |", "| `cutlass.CUDA_VERSION` | same |", 1)
    lying = lying.replace("| `cute.zipped_divide` | same |", "| `cute.zipped_divide` | gone |", 1)
    lying = lying.replace("renamed → `cute.math.exp`", "renamed → `cute.math.no_such_exp`", 1)
    lying = lying.replace("| `cute.size` | same |", "| `cute.size` | renamed → `cute.cosize` |", 1)
    problems = pn.stale_rows(lying, pn.read_names())
    assert problems["renamed target absent"][0].startswith("| `cute.exp` | renamed → `cute.math.no_such_exp`")
    assert problems["renamed but present"][0].startswith("| `cute.size` | renamed → `cute.cosize`")
    assert [line.split("  ->")[0] for line in problems["absent but present"]][0].startswith("| `cute.make_layout`")
    assert problems["same but absent"][0].startswith("| `cutlass.CUDA_VERSION` | same |")
    assert "| `cutlass.CUDA_VERSION` | absent | TODO: why |" in problems["same but absent"][0]
    assert problems["bad status"][0].startswith("| `cute.zipped_divide` | gone |")
    problems = pn.stale_rows(DOC, pn.read_names() + ["cute.brand_new_name"])
    assert problems == {"missing": ["cute.brand_new_name  -> add: | `cute.brand_new_name` | absent | TODO: why |"]}


def test_the_imports_table_runs():
    statements = pn.import_statements(DOC)
    assert "import cute_py as cute" in statements and "from cute_py.nvgpu import cpasync" in statements
    assert len(statements) >= 10
    for statement in statements:
        exec(statement, {})


class _FakeDsl(pn.Dsl):
    """The scanner's view of the DSL package without a mirror: a few modules, an alias and a re-export."""

    def __init__(self):
        self.modules = {"cutlass", "cutlass.cute", "cutlass.cute.arch", "cutlass.cute.typing", "cutlass.cute.nvgpu",
                        "cutlass.cute.nvgpu.cpasync", "cutlass.cute.nvgpu.tcgen05", "cutlass.utils",
                        "cutlass.utils.hopper_helpers", "cutlass.utils.sm90", "cutlass.cute.runtime",
                        "cutlass._mlir"}
        self.alias = {"cutlass.utils.sm90": "cutlass.utils.hopper_helpers"}
        self.reexports = {"cutlass.cute.typing": None}


def test_the_scanner_follows_imports_and_aliases():
    source = """
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.cute.runtime import from_dlpack
from cutlass.cute.typing import Int32
from cutlass._mlir import ir
import cutlass.utils as utils

x = cute.make_layout((4, 8))
cute.arch.thread_idx()
cutlass.Float32.width
cpasync.tma_partition
cute.nvgpu.cpasync.make_tiled_tma_atom
tcgen05.MmaOp
cute.nvgpu.tcgen05.make_umma_desc
sm90_utils.make_smem_layout_a
utils.sm90.make_smem_layout_b
cutlass.cute.size
cute._private_helper
not_cute.make_layout
"""
    found = pn.scan_source(source, _FakeDsl())
    got = sorted(pn.display(*key) for key in found)
    assert got == sorted([
        "cute.make_layout", "cute.arch.thread_idx", "cutlass.Float32", "cpasync.tma_partition",
        "cpasync.make_tiled_tma_atom", "cute.nvgpu.tcgen05", "sm90_utils.make_smem_layout_a",
        "sm90_utils.make_smem_layout_b", "cute.size", "cute.runtime.from_dlpack", "cute.Int32",
    ])


def _mirror_commit():
    mirror = pn.DEFAULT_MIRROR
    if not mirror.exists():
        return None
    try:
        return subprocess.run(["git", f"--git-dir={mirror}", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def test_the_names_file_is_the_scan_of_its_commit():
    recorded = pn.NAMES_FILE.read_text().splitlines()[0].rsplit(" ", 1)[-1]
    commit = _mirror_commit()
    if commit is None:
        pytest.skip("no mirror of NVIDIA/cutlass here: tests/porting_names.txt is the record")
    if commit != recorded:
        pytest.skip(f"the mirror is at {commit}, the names were scanned at {recorded}: "
                    f"python tests/porting_names.py rescans")
    found = pn.scan(pn.DEFAULT_MIRROR)
    assert sorted(pn.display(*k) for k in found) == sorted(pn.read_names())


def test_the_guide_links_from_the_readme():
    readme = (pathlib.Path(pn.ROOT) / "README.md").read_text()
    assert "docs/porting-from-cute-dsl.md" in readme
