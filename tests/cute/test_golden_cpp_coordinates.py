"""Golden tables for coordinates (idx2crd, crd2idx, get_*_coord, elem_less), CuTe's zip with a leaf first
(blocked/raked products, make_layout_tv, tile_to_shape), ``_`` tiler modes in zipped/tiled/flat divides and
products, max_alignment, local_tile with a projection, and upcast rounding -- computed by CuTe's C++ with
static integers (golden/coordinates/*.json, see golden/README.md).

Every accepted row must give C++'s printed result; every rejected row must raise a CuteError, except the
rows listed in ``DSL_OVER_CPP``, where cute_py follows the CuTe DSL on purpose (README: deliberate
differences) and the test checks the DSL's meaning instead.
"""

import json
import pathlib

import pytest

import cute_py as cute
from cute_py.errors import CuteError
from cute_py.core.notation import fmt

GOLDEN = pathlib.Path(__file__).parent / "golden"


def _value(text):
    if text.startswith("S<"):
        return cute.parse_layout(text)
    if ":" in text:
        return cute.parse_layout(text)
    if "None" in text:
        return eval(text, {"None": None})  # a coordinate or projection with `_` modes
    return cute.parse_int_tuple(text)


def _arg(a):
    if a is None:
        return None
    if isinstance(a, list):
        return tuple(_arg(x) for x in a)
    return _value(a)


def _show(x):
    if isinstance(x, bool):
        return "1" if x else "0"
    if isinstance(x, (cute.Layout, cute.ComposedLayout)):
        return str(x)
    return fmt(x)


def _local_tile_identity(shape, *rest):
    t = cute.local_tile(cute.make_identity_tensor(shape), *rest)
    return f"{t.layout} ; {fmt(tuple(t.engine.origin))}"


def _tv(thr, val):
    tiler, tv = cute.make_layout_tv(thr, val)
    return f"{fmt(tiler)} ; {tv}"


OPS = {
    "composed_eval": lambda layout, c: layout(c),
    "get_hier_coord": lambda layout, i: layout.get_hier_coord(i),
    "get_flat_coord": lambda layout, i: layout.get_flat_coord(i),
    "get_1d_coord": lambda layout, i: layout.get_1d_coord(i),
    "make_layout_tv": _tv,
    "local_tile_identity": _local_tile_identity,
    "recast_layout": lambda new, old, layout: cute.recast_layout(new, old, layout),
}

# Rows C++ does not compile (or computes something else) where cute_py gives the CuTe DSL's meaning:
# - crd2idx(coord, composed layout): C++ has no such overload (its crd2idx reads the composed layout as a
#   shape); the DSL evaluates the layout, as cute_py does -- checked equal to C++'s L(coord);
# - local_tile with a coordinate of more modes than the projected tiler: C++ asserts equal ranks; the DSL
#   keeps the extra modes (the line of every batched GEMM) -- checked equal to the same tile taken without
#   the projection.
# And one where cute_py raises because C++'s result breaks the documented law:
# - get_hier_coord / get_flat_coord of an index that is not an offset of the layout (C++ splits it anyway, into
#   a coordinate the layout maps elsewhere) -- checked that C++'s coordinate indeed maps elsewhere.
DSL_OVER_CPP = {"crd2idx_composed", "local_tile_extra_modes"}
LAW_OVER_CPP = {"coord_of_a_non_offset", "inexact_upcast"}


def _deviation(case):
    if case["op"] == "crd2idx" and case["args"][1].startswith("S<"):
        return "crd2idx_composed"
    if case["op"] in ("get_hier_coord", "get_flat_coord") and not case.get("rejected"):
        layout, idx = _arg(case["args"][0]), _arg(case["args"][1])
        if layout(_value(case["result"])) != idx:
            return "coord_of_a_non_offset"
    if case["op"] == "local_tile_identity" and len(case["args"]) == 4:
        coord, proj = _arg(case["args"][2]), _arg(case["args"][3])
        if len(coord) > len(proj):
            return "local_tile_extra_modes"
    if case["op"] in ("recast_layout", "upcast") and not case.get("rejected") and "-" in case["args"][-1]:
        return "inexact_upcast"
    return None


def _try_show(op, args):
    try:
        return _show(_call(op, args))
    except CuteError:
        return None


def _call(op, args):
    fn = OPS.get(op) or getattr(cute, op)
    return fn(*args)


def _cases():
    for path in sorted((GOLDEN / "coordinates").glob("*.json")):
        for i, case in enumerate(json.loads(path.read_text())["cases"]):
            yield pytest.param(case, id=f"{path.stem}-{i}-{case['op']}")


@pytest.mark.parametrize("case", list(_cases()))
def test_result_matches_cute_cpp(case):
    args = [_arg(a) for a in case["args"]]
    deviation = _deviation(case)
    if deviation == "crd2idx_composed":
        layout, coord = args[1], args[0]
        assert cute.crd2idx(coord, layout) == layout(coord)
        return
    if deviation == "local_tile_extra_modes":
        shape, tiler, coord, proj = args
        got = cute.local_tile(cute.make_identity_tensor(shape), tiler, coord, proj=proj)
        keep = [i for i, p in enumerate(proj) if p is not None]
        plain = cute.local_tile(cute.make_identity_tensor(shape), tuple(tiler[i] for i in keep),
                                tuple(coord[i] for i in keep) + tuple(coord[len(proj):]))
        assert got.layout == plain.layout and tuple(got.engine.origin) == tuple(plain.engine.origin)
        return
    if deviation == "coord_of_a_non_offset":
        with pytest.raises(cute.CuteValueError, match="is not an offset of the layout"):
            _call(case["op"], args)
        return
    if deviation == "inexact_upcast" and case["result"] != _try_show(case["op"], args):
        # a deliberate difference: where C++'s per-mode division of a reversed run misses wide elements of the
        # offsets, the upcast is a CuteValueError naming the law (see cute_py.core.recast)
        with pytest.raises(cute.CuteValueError, match="is not exact"):
            _call(case["op"], args)
        return
    if case.get("rejected"):
        with pytest.raises(CuteError):
            _call(case["op"], args)
        return
    assert _show(_call(case["op"], args)) == case["result"], case


def test_the_deviations_are_the_rows_cpp_rejects_or_misreads():
    seen = {}
    for p in _cases():
        case = p.values[0]
        d = _deviation(case)
        if d is not None:
            seen.setdefault(d, []).append(case)
    assert set(seen) == DSL_OVER_CPP | LAW_OVER_CPP
    assert all(c.get("rejected") for c in seen["local_tile_extra_modes"])
