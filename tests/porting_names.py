"""The CuTe DSL names that NVIDIA's public CuTe DSL examples use, and the porting guide's table of them.

Two halves:

* **the scanner** (needs a git mirror of NVIDIA/cutlass): reads every ``.py`` and ``.ipynb`` under
  ``examples/python/CuTeDSL``, follows each file's imports of the DSL (``import cutlass.cute as cute``,
  ``from cutlass.cute.nvgpu import cpasync``, ``import cutlass.utils.hopper_helpers as sm90_utils`` ...) and
  records every attribute read on those modules (``cute.make_layout``, ``cute.arch.thread_idx``,
  ``cutlass.Float32``) and every name imported from them.  A name is recorded against the deepest module
  of :data:`SCOPE` that holds it; a submodule outside the scope is recorded as a name of its parent in the
  scope (``cute.nvgpu.tcgen05``); a name a package of the scope re-exports from its own submodule is the
  package's (``from cutlass.cute.typing import Int32`` is ``cute.Int32``).  ``python tests/porting_names.py
  [--mirror GIT_DIR]`` rewrites ``tests/porting_names.txt``; ``--where NAME`` lists the examples using a name.
* **the doc reader**: parses the name table of ``docs/porting-from-cute-dsl.md`` and resolves its names
  in ``cute_py``, for ``tests/test_porting_doc.py`` (which needs no mirror).  ``python tests/porting_names.py
  --stale`` prints the rows that are no longer true, each with a suggested replacement.

The table's rows read ``| `cute.make_layout` | same | ... |``, ``| `cute.foo` | renamed → `cute.bar` | ... |``
or ``| `cute.baz` | absent | why |``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import inspect
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
NAMES_FILE = ROOT / "tests" / "porting_names.txt"
DOC_FILE = ROOT / "docs" / "porting-from-cute-dsl.md"
DEFAULT_MIRROR = pathlib.Path("/work/.mirror/NVIDIA+cutlass/repo")
EXAMPLES = "examples/python/CuTeDSL"
DSL_PACKAGE = "python/CuTeDSL"

# DSL module -> (the prefix the guide writes its names with, the cute_py module that corresponds)
SCOPE = {
    "cutlass": ("cutlass.", "cute_py"),
    "cutlass.cute": ("cute.", "cute_py"),
    "cutlass.cute.arch": ("cute.arch.", "cute_py.arch"),
    "cutlass.cute.math": ("cute.math.", "cute_py.math"),
    "cutlass.cute.nvgpu": ("cute.nvgpu.", "cute_py.nvgpu"),
    "cutlass.cute.nvgpu.cpasync": ("cpasync.", "cute_py.nvgpu.cpasync"),
    "cutlass.cute.runtime": ("cute.runtime.", "cute_py.runtime"),
    "cutlass.cute.testing": ("testing.", "cute_py.testing"),
    "cutlass.torch": ("cutlass_torch.", "cute_py.torch"),
    "cutlass.pipeline": ("pipeline.", "cute_py.pipeline"),
    "cutlass.utils": ("utils.", "cute_py.utils"),
    "cutlass.utils.hopper_helpers": ("sm90_utils.", "cute_py.utils.hopper_helpers"),
}
# prefixes the guide may use for a cute_py name (in "renamed → X"), longest first
TARGET_PREFIXES = [
    ("sm90_utils.", "cute_py.utils.hopper_helpers"),
    ("cutlass_torch.", "cute_py.torch"),
    ("cute.runtime.", "cute_py.runtime"),
    ("cute.nvgpu.", "cute_py.nvgpu"),
    ("cute.arch.", "cute_py.arch"),
    ("cute.math.", "cute_py.math"),
    ("cpasync.", "cute_py.nvgpu.cpasync"),
    ("pipeline.", "cute_py.pipeline"),
    ("testing.", "cute_py.testing"),
    ("utils.", "cute_py.utils"),
    ("cutlass.", "cute_py"),
    ("cute.", "cute_py"),
    ("cute_py.", "cute_py"),
]


# -- the scanner ----------------------------------------------------------------------------------------------

def _git(mirror: pathlib.Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={mirror}", *args], check=True, capture_output=True,
                          text=True).stdout


class Dsl:
    """What the scanner knows of the DSL package in the mirror: its modules, the submodule aliases its
    packages make (``cutlass.utils.sm90`` is ``cutlass.utils.hopper_helpers``) and the names each package of
    :data:`SCOPE` re-exports from its own submodules (``cutlass.cute`` re-exports ``cutlass.cute.typing``'s
    names, so ``from cutlass.cute.typing import Int32`` uses ``cute.Int32``)."""

    def __init__(self, mirror: pathlib.Path) -> None:
        self.modules: set[str] = set()
        packages = set()
        for path in _git(mirror, "ls-tree", "-r", "--name-only", "HEAD", f"{DSL_PACKAGE}/cutlass").split():
            if path.endswith(".py"):
                parts = path[len(DSL_PACKAGE) + 1:-3].split("/")
                if parts[-1] == "__init__":
                    parts.pop()
                    packages.add(".".join(parts))
                self.modules.add(".".join(parts))
        self.alias: dict[str, str] = {}
        self.reexports: dict[str, set[str] | None] = {}  # submodule -> names its package re-exports (None: all)
        for package in sorted(packages & set(SCOPE)):
            init = f"{DSL_PACKAGE}/{package.replace('.', '/')}/__init__.py"
            for node in ast.walk(ast.parse(_git(mirror, "show", f"HEAD:{init}"))):
                if not isinstance(node, ast.ImportFrom) or node.level != 1:
                    continue
                if node.module is None:  # from . import x as y
                    for a in node.names:
                        if a.asname and a.asname != a.name:
                            self.alias[f"{package}.{a.asname}"] = f"{package}.{a.name}"
                    continue
                child = f"{package}.{node.module}"
                if child in SCOPE or "." in node.module:
                    continue
                if any(a.name == "*" for a in node.names):
                    self.reexports[child] = None
                elif self.reexports.get(child, set()) is not None:
                    self.reexports.setdefault(child, set()).update(a.name for a in node.names if not a.asname)
        self.modules |= set(self.alias)

    def canonical(self, module: str) -> str:
        return self.alias.get(module, module)

    def place(self, module: str, name: str):
        """``(scope module, name)`` for the name ``name`` of the DSL module ``module``; ``None`` for a private
        name or a module outside ``cutlass``."""
        module = self.canonical(module)
        while module not in SCOPE:
            if "." not in module:
                return None
            parent, child = module.rpartition(".")[0], module.rpartition(".")[2]
            names = self.reexports.get(module, set())
            if parent in SCOPE and (names is None or name in names):
                module = parent  # a name the package re-exports from its submodule
            else:
                module, name = self.canonical(parent), child
        if name.startswith("_"):
            return None
        return module, name


def _sources(mirror: pathlib.Path):
    """``(path, python source)`` of every example; a notebook gives its code cells, magics blanked."""
    for path in _git(mirror, "ls-tree", "-r", "--name-only", "HEAD", EXAMPLES).split():
        if path.endswith(".py"):
            yield path, [_git(mirror, "show", f"HEAD:{path}")]
        elif path.endswith(".ipynb"):
            cells = json.loads(_git(mirror, "show", f"HEAD:{path}"))["cells"]
            code = []
            for cell in cells:
                if cell.get("cell_type") == "code":
                    src = cell["source"]
                    src = "".join(src) if isinstance(src, list) else src
                    code.append("\n".join("" if line.lstrip().startswith(("!", "%")) else line
                                          for line in src.splitlines()))
            yield path, code


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


def scan_source(source: str, dsl: Dsl) -> set[tuple[str, str]]:
    """The ``(scope module, name)`` pairs one example's source uses."""
    tree = ast.parse(source)
    aliases, used = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "cutlass":
                    if a.asname:
                        aliases[a.asname] = dsl.canonical(a.name)
                    else:
                        aliases["cutlass"] = "cutlass"
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module \
                and node.module.split(".")[0] == "cutlass":
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in dsl.modules:
                    aliases[a.asname or a.name] = dsl.canonical(full)
                elif a.name != "*":
                    placed = dsl.place(node.module, a.name)
                    if placed:
                        used.add(placed)
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or id(node) in inner:  # only the whole chain a.b.c
            continue
        chain = _dotted(node)
        if not chain or chain[0] not in aliases:
            continue
        module = aliases[chain[0]]
        rest = chain[1:]
        while rest and f"{module}.{rest[0]}" in dsl.modules:
            module = dsl.canonical(f"{module}.{rest[0]}")
            rest = rest[1:]
        if rest:
            placed = dsl.place(module, rest[0])
        elif "." in module:
            placed = dsl.place(module.rpartition(".")[0], module.rpartition(".")[2])
        else:
            placed = None
        if placed:
            used.add(placed)
    return used


def scan(mirror: pathlib.Path) -> dict[tuple[str, str], set[str]]:
    """``{(scope module, name): {example paths}}`` over every example in the mirror."""
    dsl = Dsl(mirror)
    found: dict[tuple[str, str], set[str]] = {}
    for path, chunks in _sources(mirror):
        for chunk in chunks:
            try:
                names = scan_source(chunk, dsl)
            except SyntaxError:
                continue  # a notebook cell of shell text or an incomplete fragment
            for key in names:
                found.setdefault(key, set()).add(path[len(EXAMPLES) + 1:])
    return found


def display(module: str, name: str) -> str:
    """The name as the guide writes it: ``cute.arch.thread_idx``, ``cpasync.tma_partition`` ..."""
    return SCOPE[module][0] + name


def write_names(found: dict[tuple[str, str], set[str]], commit: str) -> None:
    lines = [f"# CuTe DSL names used by examples/python/CuTeDSL of NVIDIA/cutlass at {commit}",
             "# regenerate: python tests/porting_names.py [--mirror GIT_DIR]",
             "# name<TAB>number of example files using it"]
    rows = sorted(found.items(), key=lambda kv: (list(SCOPE).index(kv[0][0]), kv[0][1].lower(), kv[0][1]))
    lines += [f"{display(*key)}\t{len(paths)}" for key, paths in rows]
    NAMES_FILE.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=pathlib.Path, default=DEFAULT_MIRROR, help="bare git dir of NVIDIA/cutlass")
    parser.add_argument("--where", metavar="NAME", help="list the examples that use NAME instead of writing")
    parser.add_argument("--stale", action="store_true",
                        help="scan nothing: print the guide's stale rows against tests/porting_names.txt")
    args = parser.parse_args(argv)
    if args.stale:
        problems = stale_rows(DOC_FILE.read_text(), read_names())
        print(format_stale(problems) if problems else "the guide's table is up to date")
        return 1 if problems else 0
    found = scan(args.mirror)
    if args.where:
        for key, paths in found.items():
            if display(*key) == args.where:
                print("\n".join(sorted(paths)))
        return 0
    write_names(found, _git(args.mirror, "rev-parse", "HEAD").strip())
    print(f"{len(found)} names written to {NAMES_FILE.relative_to(ROOT)}")
    return 0


# -- the doc reader -------------------------------------------------------------------------------------------

def read_names() -> list[str]:
    """The scanned names, as the guide writes them, from ``tests/porting_names.txt``."""
    return [line.split("\t")[0] for line in NAMES_FILE.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]*?)\s*\|")
_RENAMED = re.compile(r"^renamed\s*(?:→|->)\s*`([^`]+)`$")
NAMES_BEGIN, NAMES_END = "<!-- porting-names:begin -->", "<!-- porting-names:end -->"
IMPORTS_BEGIN, IMPORTS_END = "<!-- porting-imports:begin -->", "<!-- porting-imports:end -->"


def section(text: str, begin: str, end: str) -> str:
    """The text between two markers of the guide (an error naming the marker when one is missing)."""
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"the guide needs exactly one {begin} ... {end} section")
    return text[text.index(begin) + len(begin):text.index(end)]


def read_table(text: str) -> list[tuple[str, str, str | None, str]]:
    """``[(DSL name, status, cute_py name or None, the row's line)]`` of the name table (between the
    ``porting-names`` markers).  Status is ``same``, ``renamed`` or ``absent``; a row with anything else in its
    status cell gets ``?``."""
    rows = []
    for line in section(text, NAMES_BEGIN, NAMES_END).splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        name, status = m.group(1), m.group(2)
        renamed = _RENAMED.match(status)
        if status == "same":
            rows.append((name, "same", name, line))
        elif status == "absent":
            rows.append((name, "absent", None, line))
        elif renamed:
            rows.append((name, "renamed", renamed.group(1), line))
        else:
            rows.append((name, "?", None, line))
    return rows


def import_statements(text: str) -> list[str]:
    """The cute_py import statements of the guide's imports table (its second column)."""
    out = []
    for line in section(text, IMPORTS_BEGIN, IMPORTS_END).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[1].startswith("`") and "import" in cells[1]:
            out.append(cells[1].strip("`"))
    return out


def suggested_row(name: str) -> str:
    """A row for ``name`` with the status cute_py gives it now (the reason of an absent name left to write)."""
    if resolves(name):
        return f"| `{name}` | same |  |"
    return f"| `{name}` | absent | TODO: why |"


def stale_rows(text: str, names: list[str]) -> dict[str, list[str]]:
    """What keeps the guide's table from being true, by kind, each entry one line naming the row:
    ``missing`` (a scanned name without a row), ``unscanned`` (a row for no scanned name), ``duplicate``,
    ``bad status``, ``same but absent``, ``renamed target absent``, ``renamed but present`` (the DSL's name is there
    now), ``absent but present``."""
    rows = read_table(text)
    out = {k: [] for k in ("missing", "unscanned", "duplicate", "bad status", "same but absent",
                           "renamed target absent", "renamed but present", "absent but present")}
    seen: dict[str, int] = {}
    for name, *_ in rows:
        seen[name] = seen.get(name, 0) + 1
    scanned = set(names)
    out["missing"] = [f"{n}  -> add: {suggested_row(n)}" for n in names if n not in seen]
    out["unscanned"] = [f"{n}  -> remove its row" for n in seen if n not in scanned]
    out["duplicate"] = [f"{n}  -> keep one of its {k} rows" for n, k in seen.items() if k > 1]
    for name, status, target, line in rows:
        if status == "?":
            out["bad status"].append(f"{line}  -> the status must be same, renamed → `X` or absent")
        elif status == "same" and not resolves(name):
            out["same but absent"].append(f"{line}  -> {suggested_row(name)}")
        elif status == "renamed" and not resolves(target):
            out["renamed target absent"].append(f"{line}  -> {target} does not resolve: {suggested_row(name)}")
        elif status == "renamed" and resolves(name):
            out["renamed but present"].append(f"{line}  -> cute_py has {name} now: {suggested_row(name)}")
        elif status == "absent" and resolves(name):
            out["absent but present"].append(f"{line}  -> {suggested_row(name)} (or renamed, if it means "
                                              f"something else)")
    return {k: v for k, v in out.items() if v}


def format_stale(problems: dict[str, list[str]]) -> str:
    return "\n".join(f"{kind} ({len(lines)}):\n" + "\n".join(f"  {line}" for line in lines)
                     for kind, lines in problems.items())


def cute_py_path(name: str) -> tuple[str, str]:
    """``(cute_py module, attribute path)`` a guide name stands for: ``cute.arch.thread_idx`` is
    ``("cute_py.arch", "thread_idx")``; ``cutlass_torch.dtype`` is ``("cute_py.torch", "dtype")``."""
    for prefix, module in TARGET_PREFIXES:
        if name.startswith(prefix):
            return module, name[len(prefix):]
    raise ValueError(f"{name!r} starts with none of the guide's prefixes {[p for p, _ in TARGET_PREFIXES]}")


def _module(path: str):
    obj = importlib.import_module("cute_py")
    for i, part in enumerate(path.split(".")[1:], start=2):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(".".join(path.split(".")[:i]))
    return obj


def resolves(name: str) -> bool:
    """Whether the guide name ``name`` is there in cute_py (lazy names count: a name the module lists in
    ``dir()`` whose loading needs an optional package that is not installed counts as there)."""
    module_path, attr = cute_py_path(name)
    try:
        obj = _module(module_path)
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] == "cute_py":
            return False
        raise
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            sub = f"{getattr(obj, '__name__', '')}.{part}"
            if not (inspect.ismodule(obj) and hasattr(obj, "__path__") and importlib.util.find_spec(sub)):
                return False
            obj = importlib.import_module(sub)  # a submodule not imported yet (``from cute_py import testing``)
        except ImportError as e:  # an optional dependency (the JIT) missing: the name is declared
            if getattr(e, "name", None) and e.name.split(".")[0] == "cute_py":
                raise
            return part in dir(obj)
    return True


if __name__ == "__main__":
    sys.exit(main())
