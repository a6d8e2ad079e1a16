"""Golden tables computed by CuTe's C++ with static integers (see golden/README.md).

Each case is compared structurally: the printed result must be exactly CuTe's,
nesting, 1-tuples and size-1/stride-0 modes included; inputs the C++ rejects at
compile time must raise a CuteError here.
"""

import json
import pathlib

import pytest

import cute_py as cute
from cute_py.errors import CuteError
from cute_py.int_tuple import compact_col_major, compact_row_major, fmt

GOLDEN = pathlib.Path(__file__).parent / "golden"


def _arg(a):
    if isinstance(a, list):
        return tuple(_arg(x) for x in a)
    return cute.parse_layout(a) if ":" in a else cute.parse_int_tuple(a)


OPS = {
    "coalesce_profile": cute.coalesce,
    "compact_col_major": compact_col_major,
    "compact_row_major": compact_row_major,
    "make_layout": cute.make_layout,
}


def _call(op, args):
    fn = OPS.get(op) or getattr(cute, op)
    return fn(*args)


def _show(x):
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, cute.Layout):
        return str(x)
    return fmt(x)


def _cases():
    for path in sorted(GOLDEN.glob("cpp_*.json")):
        data = json.loads(path.read_text())
        for i, case in enumerate(data["cases"]):
            yield pytest.param(case, id=f"{path.stem}-{i}-{case['op']}")


@pytest.mark.parametrize("case", list(_cases()))
def test_result_matches_cute_cpp(case):
    args = [_arg(a) for a in case["args"]]
    if case.get("rejected"):
        with pytest.raises(CuteError):
            _call(case["op"], args)
        return
    got = _call(case["op"], args)
    assert _show(got) == case["result"], f"{case['op']}{tuple(case['args'])} ({case.get('origin')})"


def test_golden_tables_are_present_and_large():
    n = sum(len(json.loads(p.read_text())["cases"]) for p in GOLDEN.glob("cpp_*.json"))
    assert n >= 800
