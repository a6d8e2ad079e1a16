"""TMA atoms from byte-swizzled smem layouts, flagged or not, against CuTe C++ (golden/tma_byte_swizzles.json), and
shared-memory tensors that see what the TMA puts there."""

import json
import pathlib
import re

import numpy as np
import pytest

import cute_py as cute
from cute_py import reference as ref
from cute_py.nvgpu import cpasync
from cute_py.nvgpu.tma import TmaError
from cute_py.runtime import make_fake_tensor
from cute_py.tensor.engines import ArrayEngine

GOLDEN = pathlib.Path(__file__).parent / "golden" / "tma_byte_swizzles.json"
CASES = json.loads(GOLDEN.read_text())["cases"]
_FLAG = re.compile(r"^(S<[-\d,]+>) o smem_ptr\[(\d+)b\]\(unset\) o (.*)$")
LOAD = cpasync.CopyBulkTensorTileG2SOp()


def smem_of(text):
    m = _FLAG.match(text)
    if m:
        return cute.ComposedLayout(cute.parse_swizzle(m.group(1)), cute.SmemPtrFlag(int(m.group(2))),
                                   cute.parse_layout(m.group(3)))
    return cute.parse_layout(text)


def atom_of(case, smem=None):
    g = cute.parse_layout(case["gmem"])
    dtype = cute.dtypes.dtype_of(case["dtype"])
    gmem = make_fake_tensor(dtype, g.shape, g.stride, assumed_align=128)
    return cpasync.make_tiled_tma_atom(LOAD, gmem, smem or smem_of(case["smem_layout"]),
                                       cute.parse_int_tuple(case["cta_tiler"]))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_byte_swizzled_tma_atoms_match_cute_cpp(case):
    atom, tma = atom_of(case)
    d = atom.descriptor
    got = dict(rank=d.rank, global_dims=list(d.global_dims), global_strides_bytes=list(d.global_strides),
               box_dims=list(d.box_dims), swizzle=d.swizzle.name, tma_tensor=str(tma.layout),
               val_layout_src=str(atom.layout_src_tv))
    assert got == {k: case[k] for k in got}


def test_the_dsl_way_of_writing_the_128b_swizzle_gives_cutes_atom():
    # S<3,4,3> o 0 o ((8,1),(64,1)):((64,0),(1,0)) over fp16: byte units, as C++ and the CuTe DSL read it for TMA
    case = next(c for c in CASES if c["name"] == "fp16_byte_swizzle_literal_8x64")
    atom, tma = atom_of(case)
    assert str(tma.layout) == "(32,64):(1@1,1@0)" and atom.descriptor.swizzle.name == "B128"
    assert str(atom.layout_src_tv) == "(1,512):(0,1)"


def test_the_element_form_and_the_byte_forms_of_one_tile_make_one_atom():
    flagged = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)
    elements = cute.as_position_independent_swizzle_layout(flagged)          # S<3,3,3> o 0 o (8,64):(64,1)
    literal = cute.ComposedLayout(cute.Swizzle(3, 4, 3), 0, flagged.outer)   # S<3,4,3> o 0 o (8,64):(64,1)
    case = next(c for c in CASES if c["name"] == "fp16_flagged_atom_8x64")
    descs = {str(atom_of(case, s)[0].descriptor) for s in (flagged, elements, literal)}
    assert len(descs) == 1


def _load_tile_through_the_reference(smem_layout, dtype, shape):
    g = make_fake_tensor(dtype, shape, (shape[1], 1), assumed_align=128)
    atom, tma = cpasync.make_tiled_tma_atom(LOAD, g, smem_layout, shape)
    src = np.arange(shape[0] * shape[1], dtype=np.float32).astype(dtype.numpy_dtype)
    buf = np.zeros(4096, dtype=np.uint8)
    view = buf.view(dtype.numpy_dtype)
    s = cute.Tensor(ArrayEngine(view, 0, dtype), smem_layout)  # a host array standing for smem
    s_part, g_part = cpasync.tma_partition(atom, 0, cute.Layout(1), cute.group_modes(s, 0, 2),
                                           cute.group_modes(cute.local_tile(tma, shape, (0, 0)), 0, 2))
    for crd, byte in ref.tma_instructions(atom, s_part, g_part):
        ref.tma_load(atom.descriptor, src, crd, buf, byte)
    return s, src.reshape(shape), buf


@pytest.mark.parametrize("dtype", [cute.Float16, cute.Float32, cute.Uint8])
def test_a_smem_tensor_of_a_flagged_layout_reads_what_the_tma_wrote(dtype):
    atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, dtype.width)
    shape = cute.product_each(atom.shape)
    s, src, buf = _load_tile_through_the_reference(atom, dtype, shape)
    assert all(s[(r, c)] == src[r, c] for r in range(shape[0]) for c in range(shape[1]))


def test_element_1_1_of_the_fp16_128b_tile_is_at_byte_146():
    atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)
    s, src, buf = _load_tile_through_the_reference(atom, cute.Float16, (8, 64))
    assert buf[146:148].view(np.float16)[0] == src[1, 1] == 65
    assert cute.ComposedLayout(cute.Swizzle(3, 4, 3), 0, atom.outer)((1, 1)) * 2 == 130  # the element reading


def test_flagged_layouts_refuse_bare_evaluation_and_keep_their_swizzle_under_recast():
    atom = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)
    with pytest.raises(cute.CuteValueError, match="swizzles byte addresses of 16-bit elements"):
        atom((1, 1))
    assert str(cute.recast_layout(32, 16, atom)) == "S<3,4,3> o smem_ptr[32b](unset) o (8,32):(32,1)"
    assert str(cute.recast_layout(8, 16, atom)) == "S<3,4,3> o smem_ptr[8b](unset) o (8,128):(128,1)"
    # the same bytes, whatever the units they are counted in
    fp32 = cute.as_position_independent_swizzle_layout(cute.recast_layout(32, 16, atom))
    fp16 = cute.as_position_independent_swizzle_layout(atom)
    assert all(fp32((r, c)) * 4 == fp16((r, 2 * c)) * 2 for r in range(8) for c in range(32))


def test_a_flagged_layout_of_other_elements_or_over_global_memory_is_rejected():
    atom32 = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 32)
    g = make_fake_tensor(cute.Float16, (64, 64), (64, 1), assumed_align=128)
    with pytest.raises(TmaError, match="32-bit elements, used for 16-bit ones"):
        cpasync.make_tiled_tma_atom(LOAD, g, atom32, (8, 32))
    with pytest.raises(cute.CuteValueError, match="swizzles shared-memory byte addresses"):
        cute.make_tensor(cute.make_ptr(cute.Float32, None, cute.AddressSpace.gmem, 128), atom32)


def test_a_smem_tensor_swizzled_unlike_the_descriptor_is_an_error():
    atom_layout = cute.make_smem_layout_atom(cute.SmemLayoutAtomKind.K_SW128, 16)
    g = make_fake_tensor(cute.Float16, (64, 64), (64, 1), assumed_align=128)
    atom, tma = cpasync.make_tiled_tma_atom(LOAD, g, atom_layout, (8, 64))
    other = cute.ComposedLayout(cute.Swizzle(2, 3, 3), 0, atom_layout.outer)  # 64B in fp16 elements
    s = cute.make_tensor(cute.make_ptr(cute.Float16, None, cute.AddressSpace.smem, 1024), other)
    with pytest.raises(TmaError, match="swizzles byte addresses with S<2,4,3>, the TMA descriptor with S<3,4,3>"):
        cpasync.tma_partition(atom, 0, cute.Layout(1), cute.group_modes(s, 0, 2),
                              cute.group_modes(cute.local_tile(tma, (8, 64), (0, 0)), 0, 2))


def test_every_identity_swizzle_is_equal_to_every_other():
    assert cute.Swizzle(0, 4, 3) == cute.Swizzle(0, 3, 3) == cute.Swizzle(0, 0, 0)
    assert hash(cute.Swizzle(0, 4, 3)) == hash(cute.Swizzle(0, 1, 2))
    assert cute.Swizzle(3, 4, 3) != cute.Swizzle(3, 3, 3) and cute.Swizzle(0, 4, 3) != cute.Swizzle(1, 4, 3)
    # and results are not shared between them through the memo (each prints its own)
    assert str(cute.upcast(cute.Swizzle(0, 4, 3), 2)) == "S<0,3,3>" and str(cute.upcast(cute.Swizzle(0, 3, 3), 2)) == "S<0,2,3>"
