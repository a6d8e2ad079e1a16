"""make_tiled_tma_atom against CuTe's C++ ``make_tma_atom`` (golden/tma_atoms.json, see golden/README.md).

Each accepted case must give CuTe's descriptor (dims, byte strides, box, swizzle, rank), TMA
coordinate strides and value layout; each rejected case must raise a CuteError.  Where cute_py
deliberately differs, the test checks the reason instead of skipping (see ``DEVIATIONS``).
"""

import json
import re
import pathlib

import pytest

import cute_py as cute
from cute_py import dtypes
from cute_py.errors import CuteError
from cute_py.core.notation import fmt
from cute_py.nvgpu import cpasync

GOLDEN = pathlib.Path(__file__).parent / "golden" / "tma_atoms.json"
OPS = {
    "SM90_TMA_LOAD": cpasync.CopyBulkTensorTileG2SOp(),
    "SM90_TMA_LOAD_MULTICAST": cpasync.CopyBulkTensorTileG2SMulticastOp(),
    "SM90_TMA_STORE": cpasync.CopyBulkTensorTileS2GOp(),
}


_FLAG = re.compile(r"^(S<[-\d,]+>) o smem_ptr\[(\d+)b\]\(unset\) o (.*)$")


def _smem(case):
    """The smem layout as CuTe C++ had it: a GMMA atom keeps its smem_ptr flag (its swizzle on bytes), a
    swizzle composed on a plain layout is given as written."""
    text = re.sub(r"_(\d)", r"\1", case["smem_cpp_print"]).replace("Sw<", "S<")
    m = _FLAG.match(text)
    if m:
        return cute.ComposedLayout(cute.parse_swizzle(m.group(1)), cute.SmemPtrFlag(int(m.group(2))),
                                   cute.parse_layout(m.group(3)))
    return cute.parse_layout(text)


def _atom(case, as_cpp=True):
    if case["dtype"] not in dtypes._BY_NAME:
        raise cute.CuteTypeError(f"unknown element type {case['dtype']}")
    dtype = dtypes.dtype_of(case["dtype"])
    tma = dtypes.dtype_of(case["tma_dtype"]) if case.get("tma_dtype") in dtypes._BY_NAME else None
    shape, stride = _cpp_layout(case["gmem_cpp_print"])
    smem = _smem(case) if as_cpp else cute.parse_layout(case["smem_layout"])
    tiler = case["cta_tiler"]
    tiler = tuple(cute.parse_layout(t) for t in tiler) if isinstance(tiler, list) else cute.parse_int_tuple(tiler)
    g = cute.make_tensor(cute.make_ptr(dtype, None, cute.AddressSpace.gmem, 16), cute.Layout(1))
    g = cute.Tensor(g.engine, cute.Layout(shape, stride))
    internal = tma if tma is not None and tma is not dtype else None
    return cpasync.make_tiled_tma_atom(OPS[case["op"]], g, smem, tiler, case["num_multicast"], internal_type=internal)


def _cpp_layout(text):
    # CuTe prints static ints as _N: those stay ints, the others become run-time values (HostInt)
    import re

    from cute_py.runtime import HostInt

    def conv(t):
        if isinstance(t, str):
            return int(t[1:]) if t.startswith("_") else HostInt(int(t))
        return tuple(conv(e) for e in t)

    def parse(s):
        toks = re.findall(r"_?\d+|[(),]", s)
        pos = 0

        def item():
            nonlocal pos
            tok = toks[pos]
            pos += 1
            if tok != "(":
                return tok
            out = []
            while toks[pos] != ")":
                out.append(item())
                if toks[pos] == ",":
                    pos += 1
            pos += 1
            return tuple(out)

        return conv(item())

    shape_txt, stride_txt = text.split(":")
    return parse(shape_txt), parse(stride_txt)


# Where cute_py deliberately answers differently, each checked below:
# - an unflagged S<3,3,3> on fp16 is read in elements by cute_py (that reading, and only it, is the hardware's
#   128B swizzle); CuTe reads a swizzle on a plain layout in bytes, where S<3,3,3> is no TMA swizzle;
# - a TMA type wider than the element would make TMA coordinates fractional (CuTe: `1/8@0`): rejected;
# - multicast pieces, or the several instructions of a tile, whose smem destinations are not 128-byte
#   aligned (CuTe builds them; the instruction needs 128-byte aligned shared memory): rejected;
# - Int16 has no TMA format in CuTe; cute_py copies its bits as UINT16;
# - complex element types are not modelled.
DEVIATIONS = {"reject_element_unit_swizzle_f16", "reject_int16_unknown_format"}


def _cases():
    for i, case in enumerate(json.loads(GOLDEN.read_text())["cases"]):
        yield pytest.param(case, id=f"{i}-{case['name']}")


@pytest.mark.parametrize("case", list(_cases()))
def test_tma_atom_matches_cute_cpp(case):
    if case["name"] == "reject_element_unit_swizzle_f16":
        atom, _ = _atom(case)
        assert atom.descriptor.swizzle.name == "B128"
        return
    if case["name"] == "reject_int16_unknown_format":
        atom, _ = _atom(case)
        assert atom.dtype is cute.Int16 and atom.descriptor.dtype is cute.Int16
        return
    if "Complex" in case["dtype"]:
        with pytest.raises(cute.CuteTypeError, match="unknown element type"):
            _atom(case)
        return
    if not case["rejected"] and "/" in case["g_stride"]:
        with pytest.raises(cpasync.TmaError, match="fractional TMA coordinates|not a whole number of"):
            _atom(case)
        return
    if not case["rejected"]:
        # several instructions per tile (multicast pieces, or a box smaller than the tile) put all but the
        # first at smem offsets that are multiples of the box: those must be 128-byte aligned
        per_cta = cute.product(tuple(case["box_dims"])) * dtypes.dtype_of(case["tma_dtype"]).width // 8
        atom_values = int(case["val_layout_src"].split(",")[1].split(")")[0])  # (1,N):(0,1): one atom's N values
        tile_values = cute.size(cute.parse_layout(case["smem_layout"]))
        if per_cta % 128 and (case["num_multicast"] > 1 or tile_values > atom_values):
            with pytest.raises(cpasync.TmaError, match="128-byte aligned"):
                _atom(case)
            return
    if case["rejected"]:
        with pytest.raises(CuteError):
            _atom(case)
        return
    atom, tma = _atom(case)
    d = atom.descriptor
    got = {
        "rank": d.rank,
        "global_dims": list(d.global_dims),
        "global_strides_bytes": list(d.global_strides),
        "box_dims": list(d.box_dims),
        "swizzle": d.swizzle.name,
        "g_stride": fmt(atom.g_stride),
        "val_layout_src": str(atom.layout_src_tv),
    }
    want = {k: case[k] for k in got}
    assert got == want, case.get("note", "")
