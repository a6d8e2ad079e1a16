"""Golden tables computed by CuTe's C++ with static integers (see golden/README.md).

Each case is compared structurally: the printed result must be exactly CuTe's,
nesting, 1-tuples and size-1/stride-0 modes included; inputs the C++ rejects at
compile time must raise a CuteError here.

A few inputs pass the C++'s (weaker) preconditions but its result breaks the
documented law; cute_py rejects those (``LAW_BREAKING``), and the test shows by
evaluation that the printed C++ result is indeed not lawful.
"""

import json
import pathlib

import pytest

import cute_py as cute
from cute_py.errors import CuteError
from cute_py.core.coords import compact_col_major, compact_row_major
from cute_py.core.notation import fmt

from _laws import complement_counterexample, composition_counterexample

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
    for path in sorted((GOLDEN / "algebra").glob("*.json")):
        data = json.loads(path.read_text())
        for i, case in enumerate(data["cases"]):
            yield pytest.param(case, id=f"{path.stem}-{i}-{case['op']}")


def _divide_counterexample(args, cpp):
    # a divide is lhs o (tiler, complement(tiler, shape(coalesce(lhs)))), read by its 1-D index
    a, b = args
    t = cute.make_layout(b, cute.complement(b, cute.coalesce(a).shape))
    if cute.size(cpp) != cute.size(t):
        return f"{cpp} and {t} have different sizes"
    for i in range(cute.size(t)):
        if cpp(i) != a(t(i)):
            return f"result({i}) = {cpp(i)} but lhs(T({i})) = {a(t(i))} with T = {t}"
    return None


def _flat_result(layout):
    # the C++ result as a layout of its 1-D index (regrouping does not change it)
    return cute.flatten(layout)


LAW_BREAKING = {
    # composition: the rhs stride straddles a bounded lhs mode, leaves carry, or a negative stride wraps
    "composition-59": "composition", "composition-60": "composition", "composition-70": "composition",
    "composition-93": "composition", "composition-132": "composition",
    # complement: the sorted strides do not divide (gaps), or a shape cotarget folded too small
    "complement-37": "complement", "complement-38": "complement", "complement-50": "complement",
    "complement-60": "complement", "complement-83": "complement",
    # divides whose composition with (tiler, complement) is not a layout
    "divide-1": "divide", "divide-3": "divide", "divide-52": "divide", "divide-65": "divide",
    "divide-78": "divide",
    # left_inverse of a negative stride: C++ gives a negative extent; a negative offset is no index of an inverse
    "inverse-22": "left_inverse",
}


def _cpp_result_counterexample(kind, args, cpp):
    if kind == "composition":
        return composition_counterexample(args[0], args[1], cpp)
    if kind == "complement":
        return complement_counterexample(args[0], args[1] if len(args) > 1 else None, cpp)
    if kind == "left_inverse":   # the C++ result as text: cute_py refuses to build a negative extent
        flat = cute.flatten(cute.parse_int_tuple(cpp.split(":")[0]))
        negative = [x for x in (flat if isinstance(flat, tuple) else (flat,)) if x < 0]
        return f"{cpp} has the negative extent {negative[0]}" if negative else None
    return _divide_counterexample(args, _flat_result(cpp))


@pytest.mark.parametrize("case", list(_cases()))
def test_result_matches_cute_cpp(case, request):
    args = [_arg(a) for a in case["args"]]
    key = "-".join(request.node.callspec.id.split("-")[:2])
    if key in LAW_BREAKING:
        assert not case.get("rejected")
        kind = LAW_BREAKING[key]
        cpp = case["result"] if kind == "left_inverse" else _arg(case["result"])
        bad = _cpp_result_counterexample(kind, args, cpp)
        assert bad is not None, f"the C++ result {case['result']} of {case['op']}{tuple(case['args'])} is lawful"
        with pytest.raises(CuteError):
            _call(case["op"], args)
        return
    if case.get("rejected"):
        with pytest.raises(CuteError):
            _call(case["op"], args)
        return
    got = _call(case["op"], args)
    assert _show(got) == case["result"], f"{case['op']}{tuple(case['args'])} ({case.get('origin')})"


def test_law_breaking_cases_name_existing_cases():
    ids = {"-".join(p.id.split("-")[:2]) for p in _cases()}
    assert set(LAW_BREAKING) <= ids


def test_golden_tables_are_present_and_large():
    n = sum(len(json.loads(p.read_text())["cases"]) for p in (GOLDEN / "algebra").glob("*.json"))
    assert n >= 800
